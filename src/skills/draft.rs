//! Skills the agent drafts with `create_skill`. A draft is checked before anyone is asked:
//! it must read as a skill of source `agent` (no Elisp tools, deny and ask rules only, at
//! least one `:gate:` test), carry the name the call gives it, and pass its own tests. A
//! draft that fails goes back to the model with the reason; one that passes is asked about,
//! and [`draft_rules`] puts its tests' results in the question.

use super::check::{run_tests, Passed};
use super::parse::{check_name, parse_skill};
use super::{Skill, SkillError, Source};
use crate::action::{Action, EmacsAction};
use crate::gates::{Context, Decision, Gate, GateRules};

/// The folder of the user's first skill directory that drafts are written to; it loads
/// with source `agent`.
pub const DRAFTS_DIRECTORY: &str = "drafts";

/// Where the draft `name` goes, relative to the user's first skill directory (the name its
/// errors give the file).
pub fn draft_file(name: &str) -> String {
    format!("{DRAFTS_DIRECTORY}/{name}/SKILL.org")
}

/// A draft that passed: the skill and its tests.
#[derive(Clone, Debug, PartialEq)]
pub struct Draft {
    pub skill: Skill,
    pub passed: Passed,
}

impl Draft {
    /// The tests' results, for the user's question: how many of each kind passed, by title.
    pub fn report(&self) -> String {
        let titles = |kind: &str| -> String {
            self.skill
                .tests
                .iter()
                .filter(|t| t.kind == kind)
                .map(|t| format!("{:?}", t.title))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut report = format!(
            "its own tests pass: {} :gate: ({})",
            self.passed.gate,
            titles("gate")
        );
        if self.passed.trigger > 0 {
            report.push_str(&format!(
                ", {} :trigger: ({})",
                self.passed.trigger,
                titles("trigger")
            ));
        }
        report
    }
}

/// Check the draft `text` of the skill `name` as loading it would (source `agent`), its
/// tests included; the first problem, naming the draft's file and line.
pub fn check_draft(name: &str, text: &str) -> Result<Draft, SkillError> {
    let error = |line: usize, message: String| SkillError {
        file: draft_file(name),
        line,
        message,
    };
    check_name(name).map_err(|m| error(0, m))?;
    let skill = parse_skill(&draft_file(name), text, Source::Agent)?;
    if skill.name != name {
        let line = text
            .lines()
            .position(|l| {
                l.trim_start()
                    .to_ascii_uppercase()
                    .starts_with("#+SKILL_NAME:")
            })
            .map_or(0, |i| i + 1);
        return Err(error(
            line,
            format!(
                "#+SKILL_NAME: says {:?}, but the draft is named {name:?}",
                skill.name
            ),
        ));
    }
    let passed = run_tests(&skill)?;
    Ok(Draft { skill, passed })
}

/// The gate rules of drafts: a `create-skill` asks with its tests' results, or is denied
/// when it does not pass (the turn refuses such a draft before the gates; this is the
/// floor for any other way one arrives). It never allows: the default policy asks too.
pub fn draft_rules() -> GateRules {
    GateRules {
        source: "skill drafts".into(),
        gates: vec![Box::new(DraftTests)],
    }
}

struct DraftTests;

impl Gate for DraftTests {
    fn name(&self) -> &str {
        "draft-tests"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        let Action::Emacs(EmacsAction::CreateSkill { name, text }) = action else {
            return Ok(Decision::Allow);
        };
        Ok(match check_draft(name, text) {
            Ok(draft) => Decision::Ask(draft.report()),
            Err(e) => Decision::Deny(format!("the draft does not load: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::{Outcome, Pipeline};

    /// A draft the way the agent would write one: a prompt, one deny rule, its tests.
    const DRAFT: &str = "#+TITLE: Closed projects stay closed
#+SKILL_NAME: closed-projects
#+DESCRIPTION: Keeps finished projects finished. Use when editing projects.
* Prompt
Do not reopen a project marked DONE.
* Gate
| action   | condition              | decision | reason                      |
|----------+------------------------+----------+-----------------------------|
| set_todo | todo=DONE & state=TODO | deny     | a closed project stays done |
* Tests
** a done project cannot be reopened :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Launch
:ARGS: state=TODO
:EXPECT: deny
:END:
#+begin_example
,* DONE Launch
#+end_example
** an open task can still be closed :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Errand
:ARGS: state=DONE
:EXPECT: allow
:END:
#+begin_example
,* TODO Errand
#+end_example
";

    #[test]
    fn a_draft_that_passes_reports_its_tests() {
        let draft = check_draft("closed-projects", DRAFT).unwrap();
        assert_eq!(draft.skill.source, Source::Agent);
        assert_eq!(draft.skill.file, "drafts/closed-projects/SKILL.org");
        assert_eq!(
            draft.report(),
            "its own tests pass: 2 :gate: (\"a done project cannot be reopened\", \
             \"an open task can still be closed\")"
        );
    }

    #[test]
    fn a_draft_that_does_not_load_says_why_and_where() {
        let cases = [
            // Its own test fails: the rule does not do what the test says.
            (
                DRAFT.replace("todo=DONE & state=TODO", "todo=DONE & state=NEXT"),
                "closed-projects",
                "drafts/closed-projects/SKILL.org:11: gate test \"a done project cannot be \
                 reopened\": expected deny, the rules decide allow",
            ),
            (
                DRAFT.to_string(),
                "other-name",
                "drafts/other-name/SKILL.org:2: #+SKILL_NAME: says \"closed-projects\", but \
                 the draft is named \"other-name\"",
            ),
            (
                DRAFT.to_string(),
                "../escape",
                "drafts/../escape/SKILL.org: the skill name \"../escape\" is not kebab-case",
            ),
            (
                DRAFT.replace("| deny     |", "| allow    |"),
                "closed-projects",
                "a skill cannot allow",
            ),
            (
                DRAFT.replace(":gate:", ":trigger:"),
                "closed-projects",
                "needs at least one :gate: test",
            ),
            (
                format!(
                    "{DRAFT}* Tools\n** shout\n#+begin_src emacs-lisp\n(shell-command \"rm\")\n\
                     #+end_src\n"
                ),
                "closed-projects",
                "only shipped and user skills may run Elisp",
            ),
        ];
        for (text, name, says) in cases {
            let e = check_draft(name, &text).unwrap_err().to_string();
            assert!(e.contains(says), "{name}: {e}");
        }
    }

    #[test]
    fn the_draft_gate_asks_with_the_results_or_denies() {
        let pipeline = Pipeline::from_rules(vec![draft_rules()]);
        let create = |text: &str| {
            Action::Emacs(EmacsAction::CreateSkill {
                name: "closed-projects".into(),
                text: text.into(),
            })
        };
        let mut ctx = Context::default();
        // Approved for the conversation or not, a draft is asked about.
        ctx.approved.insert("create-skill".into());
        match pipeline.decide(create(DRAFT), &ctx).outcome {
            Outcome::Ask { reasons, .. } => {
                assert_eq!(reasons.len(), 1);
                assert!(reasons[0].starts_with("its own tests pass: 2 :gate:"));
            }
            other => panic!("{other:?}"),
        }
        let broken = DRAFT.replace("state=TODO |", "state=NEXT |");
        match pipeline.decide(create(&broken), &ctx).outcome {
            Outcome::Deny { reasons } => {
                assert!(reasons[0].starts_with("the draft does not load: "));
                assert!(reasons[0].contains("expected deny, the rules decide allow"));
            }
            other => panic!("{other:?}"),
        }
        let other = Action::Emacs(EmacsAction::VisitNode { id: "x".into() });
        assert!(matches!(
            pipeline.decide(other, &ctx).outcome,
            Outcome::Allow(_)
        ));
    }
}
