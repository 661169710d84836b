//! A skill's own `:gate:` tests, run when it loads: each names an edit (`:ACTION:`, with
//! `:ARGS:` as `key=value` words), the headline of its fixture it is about (`:TARGET:`),
//! and what the skill's rules must decide (`:EXPECT:` deny, ask or allow). The fixture is
//! the Org text of the test's example block. A skill whose tests fail does not become
//! active.

use super::gate::Test;
use super::parse::unescape_org_code;
use super::rules::gate_rules;
use super::{Skill, SkillError};
use crate::action::Action;
use crate::gates::{Context, Outcome, Pipeline};
use crate::notes::{Notes, Privacy};
use crate::store::{Config, Query, Store};
use crate::tools::emacs::edit_action;
use std::sync::Arc;

/// Run every `:gate:` test of `skill`; the first failure, naming its line.
pub fn run_gate_tests(skill: &Skill) -> Result<usize, SkillError> {
    let mut passed = 0;
    for test in skill.tests.iter().filter(|t| t.kind == "gate") {
        gate_test(skill, test).map_err(|message| SkillError {
            file: skill.file.clone(),
            line: test.line,
            message: format!("gate test {:?}: {message}", test.title),
        })?;
        passed += 1;
    }
    Ok(passed)
}

fn property<'t>(test: &'t Test, key: &str) -> Option<&'t str> {
    test.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

fn gate_test(skill: &Skill, test: &Test) -> Result<(), String> {
    let need = |key: &str| property(test, key).ok_or(format!("it has no :{key}:"));
    let (tool, target, expect) = (need("ACTION")?, need("TARGET")?, need("EXPECT")?);
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text(
            "/skill-test/fixture.org",
            &fixture(&test.body),
            None,
            None,
            None,
        )
        .map_err(|e| format!("its fixture does not read: {e}"))?;
    let id = store
        .query(&Query::default())
        .into_iter()
        .find(|r| r.node().content.title == target)
        .map(|r| r.node().id.to_string())
        .ok_or(format!("its fixture has no headline {target:?}"))?;
    let mut args = serde_json::Map::new();
    args.insert("id".into(), id.into());
    for word in property(test, "ARGS")
        .unwrap_or_default()
        .split_whitespace()
    {
        let (k, v) = word
            .split_once('=')
            .ok_or(format!(":ARGS: are key=value words, not {word:?}"))?;
        args.insert(k.into(), v.into());
    }
    let action = match edit_action(tool, &serde_json::Value::Object(args)) {
        Some(Ok(edit)) => Action::Emacs(edit),
        Some(Err(e)) => return Err(e),
        None => return Err(format!("{tool} is not an edit")),
    };
    let notes = Notes::new(store, Arc::new(Privacy::none()));
    let pipeline = Pipeline::from_rules(vec![gate_rules(skill, notes)]);
    let got = match pipeline.decide(action, &Context::default()).outcome {
        Outcome::Allow(_) => "allow",
        Outcome::Ask { .. } => "ask",
        Outcome::Deny { .. } => "deny",
    };
    if got != expect {
        return Err(format!("expected {expect}, the rules decide {got}"));
    }
    Ok(())
}

/// The Org text of the test's example block, unescaped (`,*` → `*`, `,#+` → `#+`).
fn fixture(body: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in body.lines() {
        let l = line.trim_start().to_ascii_lowercase();
        if l.starts_with("#+begin_example") || l.starts_with("#+begin_src org") {
            inside = true;
        } else if l.starts_with("#+end_example") || l.starts_with("#+end_src") {
            inside = false;
        } else if inside {
            out.push_str(&unescape_org_code(line));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{parse_skill, Source};

    const SKILL: &str = "#+SKILL_NAME: gtd-integrity
#+DESCRIPTION: Keeps projects consistent.
* Gate
| action   | condition                    | decision | reason                   |
|----------+------------------------------+----------+--------------------------|
| set_todo | state=DONE & open-children>0 | deny     | close its children first |
* Tests
** a parent with an open child cannot be closed :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Parent
:ARGS: state=DONE
:EXPECT: deny
:END:
#+begin_example
,* TODO Parent
,** TODO Child
#+end_example
** a child can be closed :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Child
:ARGS: state=DONE
:EXPECT: allow
:END:
#+begin_example
,* TODO Parent
,** TODO Child
#+end_example
";

    #[test]
    fn a_skill_is_tested_by_its_own_fixtures() {
        let skill = parse_skill("/s/gtd.org", SKILL, Source::User).unwrap();
        assert_eq!(run_gate_tests(&skill), Ok(2));
        // A rule that no longer does what its test says fails, naming the test's line.
        let weak = SKILL.replace("open-children>0 | deny", "open-children>5 | deny");
        let skill = parse_skill("/s/gtd.org", &weak, Source::User).unwrap();
        let e = run_gate_tests(&skill).unwrap_err();
        assert_eq!(e.line, 8);
        assert!(
            e.message.contains("expected deny, the rules decide allow"),
            "{e}"
        );
        let no_target = SKILL.replacen(":TARGET: Parent", ":TARGET: Nobody", 1);
        let skill = parse_skill("/s/gtd.org", &no_target, Source::User).unwrap();
        assert!(run_gate_tests(&skill)
            .unwrap_err()
            .message
            .contains("no headline \"Nobody\""));
    }
}
