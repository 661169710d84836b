//! Skills' `:turn:` tests (src/skills/turns.rs): each skill under `skills/` in use, the
//! scripted model server answering with the test's steps, and the calls the turn proposed
//! compared with what the test expects — which the gates decided, in order.

use crate::support::llm_server::{LlmServer, Reply};
use org_agent::agent::equipment::Equipment;
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig, TurnEvent};
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::skills::load::load_dirs;
use org_agent::skills::turns::{resolve_titles, turn_scripts, TurnScript};
use org_agent::skills::{parse_skill, Skill, Source};
use org_agent::store::{Config, Query, Store};
use std::path::PathBuf;
use std::sync::Arc;

/// Run `script` with `skill` in use: the proposed calls as (tool, decision), decision the
/// gates' word (`allow`, `ask`, `deny`).
async fn run(skill: &Skill, script: &TurnScript) -> Result<Vec<(String, String)>, String> {
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text("/skill-test/notes.org", &script.notes, None, None, None)
        .map_err(|e| format!("the notes do not read: {e}"))?;
    let id_of = |title: &str| {
        store
            .query(&Query::default())
            .into_iter()
            .find(|r| &*r.node().content.title == title)
            .map(|r| r.node().id.to_string())
    };
    let server = LlmServer::start().await;
    for step in &script.steps {
        let mut calls = Vec::new();
        for (tool, args) in &step.calls {
            calls.push((tool.as_str(), resolve_titles(args, &id_of)?));
        }
        server.push(Reply::chat_sse(&step.text, &calls));
    }
    let client =
        ChatClient::new(Backend::new(server.base_url(), "test")).map_err(|e| e.to_string())?;
    let mut eq = Equipment::new(client, store);
    eq.edit_tools = true;
    // As a run of the skill has it: its rules, its ceiling, its tools, in use from the start.
    eq.attach_skills(Arc::from(vec![skill.clone()]))?;
    eq.use_skill_from_start(skill);
    let cfg = TurnConfig {
        max_depth: script.steps.len() as u32 + 1,
        ..TurnConfig::default()
    };
    let mut events = Vec::new();
    let _ = run_turn(
        &eq,
        &mut Conversation::default(),
        &script.say,
        &cfg,
        &CancelToken::new(),
        |e| events.push(e),
    )
    .await;
    Ok(events
        .into_iter()
        .filter_map(|e| match e {
            TurnEvent::Proposed { call, decision, .. } => Some((
                call.name,
                decision.split(':').next().unwrap_or(decision).to_string(),
            )),
            _ => None,
        })
        .collect())
}

/// Run every `:turn:` test of `skill`; the failures, each naming its line.
fn run_all(skill: &Skill) -> Vec<String> {
    let scripts = match turn_scripts(skill) {
        Ok(s) => s,
        Err(e) => return vec![e.to_string()],
    };
    let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let mut failures = Vec::new();
    for script in &scripts {
        match rt.block_on(run(skill, script)) {
            Ok(got) if got == script.expect => {}
            Ok(got) => failures.push(format!(
                "{}:{}: turn test {:?}: expected {:?}, the turn proposed {got:?}",
                skill.file, script.line, script.title, script.expect
            )),
            Err(e) => failures.push(format!(
                "{}:{}: turn test {:?}: {e}",
                skill.file, script.line, script.title
            )),
        }
    }
    failures
}

#[test]
fn every_shipped_skills_turn_tests_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let loaded = load_dirs(&[(dir, Source::Shipped)], &[]);
    assert!(loaded.inactive.is_empty(), "{:?}", loaded.inactive);
    let with_turns: Vec<&Skill> = loaded
        .active
        .iter()
        .filter(|s| s.tests.iter().any(|t| t.kind == "turn"))
        .collect();
    assert!(!with_turns.is_empty(), "no shipped skill has a :turn: test");
    let failures: Vec<String> = with_turns.iter().flat_map(|s| run_all(s)).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_turn_test_whose_decisions_differ_fails_and_says_how() {
    let text = "#+SKILL_NAME: no-closing
#+DESCRIPTION: Projects are closed by hand.
* Gate
| action   | condition  | decision | reason          |
| set_todo | state=DONE | deny     | closed by hand  |
* Tests
** closing is refused :turn:
:PROPERTIES:
:SAY: Close it.
:EXPECT: set_todo=deny
:END:
#+begin_example
,* TODO Launch :project:
#+end_example
#+begin_src json
[{\"calls\": [[\"set_todo\", {\"id\": \"@Launch\", \"state\": \"DONE\"}]]},
 {\"text\": \"I may not.\"}]
#+end_src
";
    let skill = parse_skill("/s/no-closing.org", text, Source::User).unwrap();
    assert_eq!(run_all(&skill), Vec::<String>::new());
    let wrong = parse_skill(
        "/s/no-closing.org",
        &text.replace("set_todo=deny", "set_todo=allow"),
        Source::User,
    )
    .unwrap();
    let failures = run_all(&wrong);
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].contains("/s/no-closing.org:7: turn test \"closing is refused\": expected [(\"set_todo\", \"allow\")], the turn proposed [(\"set_todo\", \"deny\")]"),
        "{}",
        failures[0]
    );
    let missing = parse_skill(
        "/s/no-closing.org",
        &text.replace("@Launch", "@Nowhere"),
        Source::User,
    )
    .unwrap();
    assert!(run_all(&missing)[0].contains("the notes have no headline \"Nowhere\""));
}
