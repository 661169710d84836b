//! A skill's `:turn:` tests: a scripted turn — what the user says, what the model answers
//! step by step, the notes it works in — and the actions and decisions expected. They need
//! a model server, so they do not run at load (only their shape is checked there); the
//! test suite runs them against its scripted server (`tests/suite/skills_turns.rs`).
//!
//! ```org
//! ** closing a project with an open task is refused :turn:
//!    :PROPERTIES:
//!    :SAY:    Close the launch project.
//!    :EXPECT: set_todo=deny
//!    :END:
//!    #+begin_example
//!    ,* TODO Launch :project:
//!    ,** TODO Write the post
//!    #+end_example
//!    #+begin_src json
//!    [{"calls": [["set_todo", {"id": "@Launch", "state": "DONE"}]]},
//!     {"text": "It has an open task."}]
//!    #+end_src
//! ```
//!
//! - `:SAY:` the user's message.
//! - `:EXPECT:` the calls the turn proposes, in order, each `tool=decision` with decision
//!   `allow`, `ask` or `deny` (a question nobody answers in a test is denied, and still
//!   counts as `ask`).
//! - The example block: the notes (one file). The `json` block: the model's steps, each
//!   `{"text": …}` and/or `{"calls": [[tool, arguments]…]}`; a string argument `"@Title"`
//!   stands for the id of the fixture's headline `Title`.

use super::gate::Test;
use super::{Skill, SkillError};
use crate::store::text::unescape_org_code;

/// One step of the scripted model.
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptStep {
    pub text: String,
    /// (tool, arguments), `"@Title"` strings not yet replaced.
    pub calls: Vec<(String, serde_json::Value)>,
}

/// A `:turn:` test, read.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnScript {
    pub title: String,
    pub line: usize,
    pub say: String,
    /// The notes, as Org text.
    pub notes: String,
    pub steps: Vec<ScriptStep>,
    /// (tool, decision) in order.
    pub expect: Vec<(String, String)>,
}

/// The text of the first block of `body` whose opening line starts with `opening`.
fn block(body: &str, opening: &str) -> Option<String> {
    let mut out: Option<String> = None;
    for line in body.lines() {
        let l = line.trim_start().to_ascii_lowercase();
        match &mut out {
            None if l.starts_with(opening) => out = Some(String::new()),
            Some(text) if l.starts_with("#+end_") => return Some(std::mem::take(text)),
            Some(text) => {
                text.push_str(&unescape_org_code(line.trim_start()));
                text.push('\n');
            }
            None => {}
        }
    }
    out
}

fn read(test: &Test) -> Result<TurnScript, String> {
    let prop = |key: &str| {
        test.properties
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_owned())
    };
    let say = prop("SAY").ok_or("it has no :SAY:")?;
    let mut expect = Vec::new();
    for word in prop("EXPECT").unwrap_or_default().split_whitespace() {
        let (tool, decision) = word
            .split_once('=')
            .ok_or(format!(":EXPECT: is tool=decision words, not {word:?}"))?;
        if !matches!(decision, "allow" | "ask" | "deny") {
            return Err(format!(
                "{word:?}: a decision is allow, ask or deny, not {decision:?}"
            ));
        }
        expect.push((tool.to_owned(), decision.to_owned()));
    }
    let notes =
        block(&test.body, "#+begin_example").ok_or("it has no example block (the notes)")?;
    let json = block(&test.body, "#+begin_src json").ok_or("it has no json block (the steps)")?;
    let value: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("its steps are not JSON: {e}"))?;
    let items = value.as_array().ok_or("its steps are a JSON list")?;
    let mut steps = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let bad = |what: &str| format!("step {}: {what}", i + 1);
        let text = match item.get("text") {
            None => String::new(),
            Some(t) => t
                .as_str()
                .ok_or_else(|| bad("text is a string"))?
                .to_owned(),
        };
        let mut calls = Vec::new();
        if let Some(list) = item.get("calls") {
            for call in list.as_array().ok_or_else(|| bad("calls is a list"))? {
                match call.as_array().map(Vec::as_slice) {
                    Some(
                        [serde_json::Value::String(tool), args @ serde_json::Value::Object(_)],
                    ) => calls.push((tool.clone(), args.clone())),
                    _ => return Err(bad("each call is [tool, {arguments}]")),
                }
            }
        }
        if text.is_empty() && calls.is_empty() {
            return Err(bad("it has neither text nor calls"));
        }
        steps.push(ScriptStep { text, calls });
    }
    if steps.is_empty() {
        return Err("it has no steps".into());
    }
    Ok(TurnScript {
        title: test.title.clone(),
        line: test.line,
        say,
        notes,
        steps,
        expect,
    })
}

/// Every `:turn:` test of `skill`, read; the first that does not read, naming its line.
pub fn turn_scripts(skill: &Skill) -> Result<Vec<TurnScript>, SkillError> {
    skill
        .tests
        .iter()
        .filter(|t| t.kind == "turn")
        .map(|t| {
            read(t).map_err(|message| SkillError {
                file: skill.file.clone(),
                line: t.line,
                message: format!("turn test {:?}: {message}", t.title),
            })
        })
        .collect()
}

/// `args` with every `"@Title"` string replaced by `id_of(Title)`; a title the notes do not
/// have is an error.
pub fn resolve_titles(
    args: &serde_json::Value,
    id_of: &dyn Fn(&str) -> Option<String>,
) -> Result<serde_json::Value, String> {
    Ok(match args {
        serde_json::Value::String(s) => match s.strip_prefix('@') {
            Some(title) => serde_json::Value::String(
                id_of(title).ok_or(format!("the notes have no headline {title:?}"))?,
            ),
            None => args.clone(),
        },
        serde_json::Value::Array(items) => serde_json::Value::Array(
            items
                .iter()
                .map(|v| resolve_titles(v, id_of))
                .collect::<Result<_, _>>()?,
        ),
        serde_json::Value::Object(map) => serde_json::Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve_titles(v, id_of)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{parse_skill, Source};

    const SKILL: &str = "#+SKILL_NAME: closer
#+DESCRIPTION: Closes projects.
* Tests
** closing asks :turn:
:PROPERTIES:
:SAY: Close the launch project.
:EXPECT: set_todo=ask
:END:
#+begin_example
,* TODO Launch :project:
#+end_example
#+begin_src json
[{\"calls\": [[\"set_todo\", {\"id\": \"@Launch\", \"state\": \"DONE\"}]]},
 {\"text\": \"Asked.\"}]
#+end_src
";

    #[test]
    fn a_turn_test_reads_with_its_notes_steps_and_expectations() {
        let skill = parse_skill("/s/closer.org", SKILL, Source::User).unwrap();
        let scripts = turn_scripts(&skill).unwrap();
        assert_eq!(scripts.len(), 1);
        let s = &scripts[0];
        assert_eq!(s.say, "Close the launch project.");
        assert_eq!(s.notes, "* TODO Launch :project:\n");
        assert_eq!(s.expect, [("set_todo".to_string(), "ask".to_string())]);
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[0].calls[0].0, "set_todo");
        let resolved = resolve_titles(&s.steps[0].calls[0].1, &|t| {
            (t == "Launch").then(|| "id-1".to_string())
        })
        .unwrap();
        assert_eq!(resolved["id"], "id-1");
        assert!(resolve_titles(&serde_json::json!("@Nowhere"), &|_| None).is_err());
    }

    #[test]
    fn a_malformed_turn_test_names_its_line_and_what_is_wrong() {
        for (from, to, says) in [
            (
                "set_todo=ask",
                "set_todo=maybe",
                "a decision is allow, ask or deny",
            ),
            (":SAY: Close the launch project.\n", "", "no :SAY:"),
            ("{\"text\": \"Asked.\"}", "{}", "neither text nor calls"),
            ("#+begin_src json", "#+begin_src js", "no json block"),
        ] {
            let text = SKILL.replace(from, to);
            let skill = parse_skill("/s/closer.org", &text, Source::User).unwrap();
            let e = turn_scripts(&skill).unwrap_err();
            assert_eq!(e.line, 4, "{e}");
            assert!(e.message.contains(says), "{from:?}: {e}");
        }
    }
}
