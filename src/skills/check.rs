//! A skill's own tests, run when it loads; a skill whose tests fail does not become active.
//!
//! `:gate:` tests name an edit (`:ACTION:`, with `:ARGS:` as `key=value` words), the
//! headline of their fixture it is about (`:TARGET:`: the edit's `id`, or the `parent` of
//! `add_headline`), the kinds of action the user approved for the conversation
//! (`:APPROVED:`, optional), and what the skill's rules must decide (`:EXPECT:` deny, ask or
//! allow). The fixture is the Org text of the test's example block, read as the file
//! `:FILE:` names (optional: for rows about files).
//!
//! `:trigger:` tests describe an event and whether the skill's trigger fires on it; their
//! format is in the [`trigger`](super::trigger) module's documentation.

use super::cron::Civil;
use super::gate::Test;
use super::org_match::MatchNode;
use super::parse::{interval, org_nodes};
use super::rules::gate_rules;
use super::trigger::{changed_nodes, fires, TriggerEvent};
use super::{On, Skill, SkillError};
use crate::action::Action;
use crate::gates::{Context, Outcome, Pipeline};
use crate::notes::{Notes, Privacy};
use crate::store::text::unescape_org_code;
use crate::store::{Config, Node, NodeKind, Query, Store};
use crate::tools::emacs::edit_action;
use std::sync::Arc;

/// How many of a skill's tests of each kind passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Passed {
    pub gate: usize,
    pub trigger: usize,
}

/// Run every `:gate:` and `:trigger:` test of `skill` (what loading a skill does); the
/// first failure, naming its line.
pub fn run_tests(skill: &Skill) -> Result<Passed, SkillError> {
    // `:turn:` tests need a model server: the test suite runs them; here they must read.
    super::turns::turn_scripts(skill)?;
    Ok(Passed {
        gate: run_gate_tests(skill)?,
        trigger: run_trigger_tests(skill)?,
    })
}

/// Run every `:gate:` test of `skill`; the first failure, naming its line.
pub fn run_gate_tests(skill: &Skill) -> Result<usize, SkillError> {
    run_kind(skill, "gate", gate_test)
}

/// Run `skill`'s tests of `kind` with `run`: how many passed, or the first failure, naming
/// its line.
fn run_kind(
    skill: &Skill,
    kind: &str,
    run: fn(&Skill, &Test) -> Result<(), String>,
) -> Result<usize, SkillError> {
    let mut passed = 0;
    for test in skill.tests.iter().filter(|t| t.kind == kind) {
        run(skill, test).map_err(|message| SkillError {
            file: skill.file.clone(),
            line: test.line,
            message: format!("{kind} test {:?}: {message}", test.title),
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
    // A row about where a note is (`file~inbox.org`) is tested with the fixture there.
    let file = property(test, "FILE").unwrap_or(FIXTURE_FILE);
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text(file, &example_blocks(&test.body).concat(), None, None, None)
        .map_err(|e| format!("its fixture does not read: {e}"))?;
    let id = store
        .query(&Query::default())
        .into_iter()
        .find(|r| &*r.node().content.title == target)
        .map(|r| r.node().id.to_string())
        .ok_or(format!("its fixture has no headline {target:?}"))?;
    let mut args = serde_json::Map::new();
    // A new headline goes under the target; every other edit is of the target.
    let target_key = if tool == "add_headline" {
        "parent"
    } else {
        "id"
    };
    args.insert(target_key.into(), id.into());
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
    let mut ctx = Context::default();
    // As the gates name an edit's kind: `set-todo`, whichever way the test writes it.
    ctx.approved.extend(
        property(test, "APPROVED")
            .unwrap_or_default()
            .split_whitespace()
            .map(|kind| match kind.strip_prefix("tool:") {
                Some(_) => kind.to_owned(),
                None => kind.replace('_', "-"),
            }),
    );
    let pipeline = Pipeline::from_rules(vec![gate_rules(skill, notes)]);
    let got = match pipeline.decide(action, &ctx).outcome {
        Outcome::Allow(_) => "allow",
        Outcome::Ask { .. } => "ask",
        Outcome::Deny { .. } => "deny",
    };
    if got != expect {
        return Err(format!("expected {expect}, the rules decide {got}"));
    }
    Ok(())
}

/// The file a test's fixture is read as, unless a `:trigger:` test names one.
const FIXTURE_FILE: &str = "/skill-test/fixture.org";

/// The Org text of each of the test's example blocks, unescaped (`,*` → `*`, `,#+` → `#+`).
fn example_blocks(body: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in body.lines() {
        let l = line.trim_start().to_ascii_lowercase();
        if l.starts_with("#+begin_example") || l.starts_with("#+begin_src org") {
            current = Some(String::new());
        } else if l.starts_with("#+end_example") || l.starts_with("#+end_src") {
            blocks.extend(current.take());
        } else if let Some(out) = current.as_mut() {
            out.push_str(&unescape_org_code(line));
            out.push('\n');
        }
    }
    blocks.extend(current);
    blocks
}

/// Run every `:trigger:` test of `skill` (format: the [`trigger`](super::trigger) module);
/// the first failure, naming its line.
pub fn run_trigger_tests(skill: &Skill) -> Result<usize, SkillError> {
    run_kind(skill, "trigger", trigger_test)
}

fn trigger_test(skill: &Skill, test: &Test) -> Result<(), String> {
    let need = |key: &str| property(test, key).ok_or(format!("it has no :{key}:"));
    let (event, expect) = (need("EVENT")?, need("EXPECT")?);
    let expect_fires = match expect {
        "fires" => true,
        "quiet" => false,
        other => return Err(format!(":EXPECT: is fires or quiet, not {other:?}")),
    };
    let on = On::from_name(event).ok_or(format!(
        ":EVENT: is one of save, todo-change, capture, cron, every, idle, startup, \
         not {event:?}"
    ))?;
    let file = property(test, "FILE").unwrap_or(FIXTURE_FILE);
    let after;
    let event = match on {
        On::Save | On::TodoChange | On::Capture => {
            after = org_nodes(file, &note_after(test)?)
                .map_err(|e| format!("its note does not read: {e}"))?;
            let nodes = event_nodes(test, on, file, &after)?
                .into_iter()
                .filter_map(|i| MatchNode::in_file(&after, i, file))
                .collect();
            match on {
                On::Save => TriggerEvent::Save { file, nodes },
                On::TodoChange => TriggerEvent::TodoChange { file, nodes },
                _ => TriggerEvent::Capture { file, nodes },
            }
        }
        On::Cron => {
            TriggerEvent::Tick(Civil::parse(need("TIME")?).map_err(|e| format!(":TIME: {e}"))?)
        }
        On::Every => TriggerEvent::Every {
            elapsed: match need("ELAPSED")? {
                "never" => None,
                e => Some(interval(e).map_err(|m| format!(":ELAPSED: {m}, or never"))?),
            },
        },
        On::Idle => TriggerEvent::Idle,
        On::Startup => TriggerEvent::Startup,
        On::Model | On::User => {
            return Err(format!(
                ":EVENT: {event} is no event: model and user runs are tested by :turn: tests"
            ))
        }
    };
    let got = fires(&skill.trigger, &event);
    if got != expect_fires {
        let said = if got { "fires" } else { "stays quiet" };
        return Err(format!("expected {expect}, the trigger {said}"));
    }
    Ok(())
}

/// The note after the event: the test's last example block.
fn note_after(test: &Test) -> Result<String, String> {
    let mut blocks = example_blocks(&test.body);
    if blocks.len() > 2 {
        return Err("it has more than two example blocks (the note before and after)".into());
    }
    blocks
        .pop()
        .ok_or("it has no example block (the note after the event)".into())
}

/// The indexes of the nodes of `after` the event concerns: by diff against the note before
/// (a first example block), else those `:CHANGED:` names, else all.
fn event_nodes(test: &Test, on: On, file: &str, after: &[Node]) -> Result<Vec<usize>, String> {
    let blocks = example_blocks(&test.body);
    let named = property(test, "CHANGED");
    if blocks.len() == 2 {
        if named.is_some() {
            return Err("a note before and :CHANGED: say the same thing: keep one".into());
        }
        let before = org_nodes(file, &blocks[0])
            .map_err(|e| format!("its note before does not read: {e}"))?;
        let changes = changed_nodes(&before, after);
        return Ok(if on == On::TodoChange {
            changes.todo_changed
        } else {
            changes.changed
        });
    }
    let Some(named) = named else {
        return Ok((0..after.len()).collect());
    };
    named
        .split('|')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|title| {
            after
                .iter()
                .position(|n| n.content.kind == NodeKind::Headline && &*n.content.title == title)
                .ok_or(format!(
                    ":CHANGED: names {title:?}, which its note does not have"
                ))
        })
        .collect()
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

    const TRIGGERED: &str = "#+SKILL_NAME: weekly-review
#+DESCRIPTION: Reviews closed projects.
* Trigger
:PROPERTIES:
:ON:       todo-change save capture cron every idle
:MATCH:    +project/DONE
:PATHS:    **/work/*.org
:SCHEDULE: 0 16 * * FRI
:EVERY:    1d
:END:
* Tests
** closing a project fires :trigger:
:PROPERTIES:
:EVENT:  todo-change
:FILE:   /home/me/work/plan.org
:EXPECT: fires
:END:
#+begin_example
,* DONE Launch :project:
#+end_example
** closing a task that is no project is quiet :trigger:
:PROPERTIES:
:EVENT:  todo-change
:FILE:   /home/me/work/plan.org
:EXPECT: quiet
:END:
#+begin_example
,* DONE Errand
#+end_example
** notes outside work are quiet :trigger:
:PROPERTIES:
:EVENT:  save
:FILE:   /home/me/journal.org
:EXPECT: quiet
:END:
#+begin_example
,* DONE Launch :project:
#+end_example
** only the headlines named changed :trigger:
:PROPERTIES:
:EVENT:   save
:FILE:    /home/me/work/plan.org
:CHANGED: Errand | Other
:EXPECT:  quiet
:END:
#+begin_example
,* DONE Launch :project:
,* DONE Errand
,* Other
#+end_example
** a save that closes a project's task, diffed :trigger:
:PROPERTIES:
:EVENT:  todo-change
:FILE:   /home/me/work/plan.org
:EXPECT: fires
:END:
#+begin_example
,* TODO Launch :project:
,** DONE Write
#+end_example
#+begin_example
,* DONE Launch :project:
,** DONE Write
#+end_example
** a save that only edits a closed project's child, diffed :trigger:
:PROPERTIES:
:EVENT:  save
:FILE:   /home/me/work/plan.org
:EXPECT: quiet
:END:
#+begin_example
,* DONE Launch :project:
,** TODO Write
#+end_example
#+begin_example
,* DONE Launch :project:
,** TODO Write more
#+end_example
** a capture of a closed project :trigger:
:PROPERTIES:
:EVENT:  capture
:FILE:   /home/me/work/inbox.org
:EXPECT: fires
:END:
#+begin_example
,* DONE Old launch :project:
#+end_example
** Friday at four :trigger:
:PROPERTIES:
:EVENT:  cron
:TIME:   2026-11-27 Fri 16:00
:EXPECT: fires
:END:
** Thursday at four :trigger:
:PROPERTIES:
:EVENT:  cron
:TIME:   2026-11-26 16:00
:EXPECT: quiet
:END:
** a day after the last run :trigger:
:PROPERTIES:
:EVENT:   every
:ELAPSED: 25h
:EXPECT:  fires
:END:
** an hour after the last run :trigger:
:PROPERTIES:
:EVENT:   every
:ELAPSED: 1h
:EXPECT:  quiet
:END:
** idle :trigger:
:PROPERTIES:
:EVENT:  idle
:EXPECT: fires
:END:
** not at startup :trigger:
:PROPERTIES:
:EVENT:  startup
:EXPECT: quiet
:END:
";

    #[test]
    fn a_skill_tests_its_own_trigger() {
        let skill = parse_skill("/s/review.org", TRIGGERED, Source::User).unwrap();
        assert_eq!(
            run_tests(&skill),
            Ok(Passed {
                gate: 0,
                trigger: 13
            })
        );
        // Each expectation, turned around, fails naming the test's line.
        let lines: Vec<usize> = skill.tests.iter().map(|t| t.line).collect();
        for (n, line) in lines.iter().enumerate() {
            let mut flipped = skill.clone();
            let props = &mut flipped.tests[n].properties;
            let expect = props.iter_mut().find(|(k, _)| k == "EXPECT").unwrap();
            expect.1 = if expect.1 == "fires" {
                "quiet"
            } else {
                "fires"
            }
            .into();
            let e = run_trigger_tests(&flipped).unwrap_err();
            assert_eq!(e.line, *line, "{e}");
            assert!(e.message.starts_with("trigger test"), "{e}");
        }
    }

    #[test]
    fn a_broken_trigger_test_says_why() {
        for (from, to, says) in [
            (":EVENT:  idle", ":EVENT:  model", "tested by :turn: tests"),
            (":EVENT:  idle", ":EVENT:  lunch", "not \"lunch\""),
            (":EVENT:  idle\n", "", "it has no :EVENT:"),
            (
                ":EXPECT: fires\n:END:\n** not",
                ":EXPECT: maybe\n:END:\n** not",
                "fires or quiet",
            ),
            (
                ":TIME:   2026-11-27 Fri 16:00",
                ":TIME:   2026-11-27 Mon 16:00",
                ":TIME: ",
            ),
            (":TIME:   2026-11-27 Fri 16:00\n", "", "it has no :TIME:"),
            (":ELAPSED: 25h", ":ELAPSED: a while", "or never"),
            (
                ":CHANGED: Errand | Other",
                ":CHANGED: Errand | Nobody",
                "names \"Nobody\"",
            ),
            (
                "#+begin_example\n,* DONE Old launch :project:\n#+end_example\n",
                "",
                "no example block",
            ),
            (
                ":EXPECT: fires\n:END:\n#+begin_example\n,* TODO Launch",
                ":CHANGED: Launch\n:EXPECT: fires\n:END:\n#+begin_example\n,* TODO Launch",
                "keep one",
            ),
        ] {
            assert!(TRIGGERED.contains(from), "{from}");
            let skill = parse_skill(
                "/s/review.org",
                &TRIGGERED.replacen(from, to, 1),
                Source::User,
            )
            .unwrap();
            let e = run_tests(&skill).unwrap_err();
            assert!(e.message.contains(says), "{from}: {e}");
        }
        // Every never-run skill with `every` is due.
        let never = TRIGGERED.replace(
            ":ELAPSED: 1h\n:EXPECT:  quiet",
            ":ELAPSED: never\n:EXPECT:  fires",
        );
        let skill = parse_skill("/s/review.org", &never, Source::User).unwrap();
        assert_eq!(run_trigger_tests(&skill), Ok(13));
    }

    #[test]
    fn tests_say_what_the_user_approved_and_where_a_headline_goes() {
        let edits_ask = "#+SKILL_NAME: edits-ask
#+DESCRIPTION: Edits ask until approved.
* Gate
| action | condition              | decision | reason   |
| *      | edit=yes & approved=no | ask      | it edits |
* Tests
** a new headline asks :gate:
:PROPERTIES:
:ACTION: add_headline
:TARGET: Parent
:ARGS: title=Child
:EXPECT: ask
:END:
#+begin_example
,* Parent
#+end_example
** approved, it does not :gate:
:PROPERTIES:
:ACTION: add_headline
:TARGET: Parent
:ARGS: title=Child
:APPROVED: add_headline
:EXPECT: allow
:END:
#+begin_example
,* Parent
#+end_example
";
        let skill = parse_skill("/s/e.org", edits_ask, Source::User).unwrap();
        assert_eq!(run_gate_tests(&skill), Ok(2));
        // Approving another kind does not count.
        let other = edits_ask.replace(":APPROVED: add_headline", ":APPROVED: set_todo");
        let skill = parse_skill("/s/e.org", &other, Source::User).unwrap();
        let e = run_gate_tests(&skill).unwrap_err();
        assert!(
            e.message.contains("expected allow, the rules decide ask"),
            "{e}"
        );
    }

    #[test]
    fn a_gate_test_may_put_its_fixture_in_a_file_of_its_own() {
        let inbox = "#+SKILL_NAME: inbox-rows
#+DESCRIPTION: Inbox items are refiled with care.
* Gate
| action | condition      | decision | reason    |
| refile | file~inbox.org | ask      | item-wise |
* Tests
** in the inbox it asks :gate:
:PROPERTIES:
:ACTION: refile
:TARGET: Call mum
:ARGS: target_file=/n/home.org
:FILE: /n/inbox.org
:EXPECT: ask
:END:
#+begin_example
,* Call mum
#+end_example
** elsewhere it does not :gate:
:PROPERTIES:
:ACTION: refile
:TARGET: Call mum
:ARGS: target_file=/n/home.org
:EXPECT: allow
:END:
#+begin_example
,* Call mum
#+end_example
";
        let skill = parse_skill("/s/i.org", inbox, Source::User).unwrap();
        assert_eq!(run_gate_tests(&skill), Ok(2));
        let moved = inbox.replace(":FILE: /n/inbox.org", ":FILE: /n/home.org");
        let skill = parse_skill("/s/i.org", &moved, Source::User).unwrap();
        assert!(run_gate_tests(&skill)
            .unwrap_err()
            .message
            .contains("expected ask, the rules decide allow"));
    }
}
