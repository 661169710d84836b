//! A skill's gate table as gate rules: each row a predicate over the action and the notes it
//! targets, attached to a turn's pipeline after the user's policy. Rows only deny or ask, so
//! a skill tightens the policy and never loosens it. A skill's `#+ALLOWED_TOOLS:` is a
//! ceiling of the same kind: it denies, while the skill is in use, what the list leaves out.

use super::disclosure::USE_SKILL;
use super::gate::{Decision as RowDecision, GateRow, Op, Subject, Term};
use super::tools::SkillTools;
use super::{Skill, Source};
use crate::action::{Action, EmacsAction};
use crate::gates::{Context, Decision, Gate, GateRules};
use crate::notes::privacy::Glob;
use crate::notes::Notes;
use crate::store::{NodeRef, TodoType};

/// The gate rules of `skill`, judging targets as `notes` show them.
pub fn gate_rules(skill: &Skill, notes: Notes) -> GateRules {
    GateRules {
        source: format!("skill {}", skill.name),
        gates: vec![Box::new(SkillGate {
            name: format!("skill {}", skill.name),
            rows: skill.gate.clone(),
            notes,
        })],
    }
}

/// The ceiling of `skill` (`#+ALLOWED_TOOLS:`), `None` when it has none: while the skill is
/// in use, every action but its own tools, `use_skill` and the tools the list names (as gate
/// rows name them: `_` and `-` alike, globs allowed) is denied. An imported skill has none:
/// its `allowed-tools` name another ecosystem's tools, which it pre-approved there.
pub fn ceiling_rules(skill: &Skill) -> Option<GateRules> {
    if skill.allowed_tools.is_empty() || skill.source == Source::Imported {
        return None;
    }
    // A call of an alias of an MCP tool reaches the gates as a call of that tool.
    let own = SkillTools::of(skill)
        .map(|t| {
            let mut own: Vec<String> = t.names().into_iter().map(str::to_owned).collect();
            own.extend(t.mcp_pending.iter().map(|a| a.target.clone()));
            own
        })
        .unwrap_or_default();
    Some(GateRules {
        source: format!("skill {} allowed tools", skill.name),
        gates: vec![Box::new(Ceiling {
            name: format!("skill {} allowed tools", skill.name),
            skill: skill.name.clone(),
            allowed: skill.allowed_tools.clone(),
            own,
        })],
    })
}

struct Ceiling {
    name: String,
    skill: String,
    allowed: Vec<String>,
    /// The skill's own tools, by the names the model calls them.
    own: Vec<String>,
}

impl Gate for Ceiling {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        if !ctx.skills_in_use.contains(&self.skill) {
            return Ok(Decision::Allow);
        }
        if let Action::Tool { name, .. } = action {
            if name == USE_SKILL || self.own.contains(name) {
                return Ok(Decision::Allow);
            }
        }
        if self
            .allowed
            .iter()
            .any(|pattern| names_match(pattern, action))
        {
            return Ok(Decision::Allow);
        }
        let name = match action {
            Action::Tool { name, .. } => name.clone(),
            Action::Emacs(e) => e.name().to_owned(),
        };
        Ok(Decision::Deny(format!(
            "the skill {} in use allows only {} (#+ALLOWED_TOOLS), not {name}",
            self.skill,
            self.allowed.join(", ")
        )))
    }
}

struct SkillGate {
    name: String,
    rows: Vec<GateRow>,
    notes: Notes,
}

impl Gate for SkillGate {
    fn name(&self) -> &str {
        &self.name
    }

    /// The first row whose action and condition match decides; none: allow (the other
    /// gates decide).
    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        let facts = Facts::of(action, ctx, &self.notes);
        for row in &self.rows {
            if names_match(&row.action, action) && row.condition.0.iter().all(|t| facts.holds(t)) {
                let reason = format!("{} (line {}): {}", self.name, row.line, row.reason);
                return Ok(match row.decision {
                    RowDecision::Deny => Decision::Deny(reason),
                    RowDecision::Ask => Decision::Ask(reason),
                });
            }
        }
        Ok(Decision::Allow)
    }
}

/// Whether the row's action pattern names `action`: the actuator verb (`set-todo`) or the
/// tool name, `_` and `-` alike, globs allowed.
fn names_match(pattern: &str, action: &Action) -> bool {
    let name = match action {
        Action::Emacs(e) => e.name().to_owned(),
        Action::Tool { name, .. } => name.clone(),
    };
    Glob::new(&pattern.replace('_', "-")).matches(&name.replace('_', "-"))
}

/// What a condition can ask about one action.
struct Facts {
    target: Option<NodeRef>,
    state: Option<String>,
    key: Option<String>,
    edit: bool,
    approved: bool,
}

impl Facts {
    fn of(action: &Action, ctx: &Context, notes: &Notes) -> Facts {
        let approved = ctx.approved.contains(&action.kind());
        let Action::Emacs(e) = action else {
            return Facts {
                target: None,
                state: None,
                key: None,
                edit: false,
                approved,
            };
        };
        let (id, _) = e.target();
        Facts {
            edit: e.edits_org(),
            approved,
            target: id.and_then(|id| notes.node(id).ok()),
            state: match e {
                EmacsAction::SetTodo { state, .. } => state.clone(),
                _ => None,
            },
            key: match e {
                EmacsAction::SetProperty { key, .. } | EmacsAction::DeleteProperty { key, .. } => {
                    Some(key.clone())
                }
                _ => None,
            },
        }
    }

    /// Whether `term` holds; a term about something the action does not have is false.
    fn holds(&self, term: &Term) -> bool {
        let node = self.target.as_ref().map(|r| r.node());
        match &term.subject {
            Subject::State => text(self.state.as_deref(), term),
            Subject::Key => text(self.key.as_deref(), term),
            Subject::Edit => yes_no(self.edit, term),
            Subject::Approved => yes_no(self.approved, term),
            Subject::Todo => text(node.and_then(|n| n.content.todo.as_deref()), term),
            Subject::Property(p) => text(node.and_then(|n| n.content.property(p)), term),
            Subject::PropertyName => match node {
                // `prop!=X` holds when the node has no property X.
                Some(n) => (term.op == Op::IsNot) != n.content.property(&term.value).is_some(),
                None => false,
            },
            Subject::File => match &self.target {
                Some(r) => text(Some(&r.doc.path), term),
                None => false,
            },
            Subject::Tag => match node {
                // `tag!=x` holds when the node has no tag x.
                Some(n) => (term.op == Op::IsNot) != n.has_tag(&term.value),
                None => false,
            },
            Subject::Level => number(node.map(|n| u32::from(n.content.level)), term),
            Subject::OpenChildren => number(
                self.target.as_ref().map(|r| {
                    r.doc
                        .children(r.index)
                        .filter(|&i| {
                            r.doc.nodes[i as usize].content.todo_type == Some(TodoType::Todo)
                        })
                        .count() as u32
                }),
                term,
            ),
        }
    }
}

fn text(value: Option<&str>, term: &Term) -> bool {
    let Some(v) = value else {
        return false;
    };
    match term.op {
        Op::Is => v == term.value,
        Op::IsNot => v != term.value,
        Op::Like => {
            // A relative file pattern matches at any depth (`*/archive/*`).
            let pattern = if term.value.starts_with('/') || term.value.starts_with("**") {
                term.value.clone()
            } else if term.value.contains('/') {
                format!("**/{}", term.value.trim_start_matches("*/"))
            } else {
                term.value.clone()
            };
            Glob::new(&pattern).matches(v)
        }
        Op::Above | Op::Below => false,
    }
}

fn yes_no(fact: bool, term: &Term) -> bool {
    text(Some(if fact { "yes" } else { "no" }), term)
}

fn number(value: Option<u32>, term: &Term) -> bool {
    let (Some(v), Ok(n)) = (value, term.value.parse::<u32>()) else {
        return false;
    };
    match term.op {
        Op::Is => v == n,
        Op::Above => v > n,
        Op::Below => v < n,
        Op::IsNot | Op::Like => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::{Outcome, Pipeline};
    use crate::notes::Privacy;
    use crate::skills::{parse_skill, Source};
    use crate::store::{Config, Store};
    use std::sync::Arc;

    const SKILL: &str = "#+SKILL_NAME: gtd-integrity
#+DESCRIPTION: Keeps projects consistent.
* Gate
| action   | condition                    | decision | reason                   |
|----------+------------------------------+----------+--------------------------|
| set_todo | state=DONE & open-children>0 | deny     | close its children first |
| set-*    | file~*/archive/*             | ask      | archived notes           |
| *        | tag=frozen                   | deny     | frozen                   |
";

    fn notes() -> (Notes, Arc<Store>) {
        let store = Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_text(
                "/n/work.org",
                "* TODO Parent\n:PROPERTIES:\n:ID: parent\n:END:\n** TODO Child\n:PROPERTIES:\n:ID: child\n:END:\n** DONE Old\n* Ice :frozen:\n:PROPERTIES:\n:ID: ice\n:END:\n",
                None,
                None,
                None,
            )
            .unwrap();
        store
            .ingest_text(
                "/n/archive/2025.org",
                "* TODO Gone\n:PROPERTIES:\n:ID: gone\n:END:\n",
                None,
                None,
                None,
            )
            .unwrap();
        (Notes::new(store.clone(), Arc::new(Privacy::none())), store)
    }

    fn set_todo(id: &str, state: &str) -> Action {
        Action::Emacs(EmacsAction::SetTodo {
            id: id.into(),
            state: Some(state.into()),
        })
    }

    #[test]
    fn rows_tighten_the_policy_by_what_the_notes_say() {
        let (notes, _store) = notes();
        let skill = parse_skill("/s/gtd.org", SKILL, Source::User).unwrap();
        let mut pipeline = Pipeline::default_policy();
        pipeline.attach(gate_rules(&skill, notes));
        assert_eq!(
            pipeline.sources(),
            ["default policy", "skill gtd-integrity"]
        );
        let mut ctx = Context::default();
        // The user approved edits for the conversation: the default policy allows them now.
        ctx.approved.insert("set-todo".into());
        let decide = |a: Action| pipeline.decide(a, &ctx).outcome;
        match decide(set_todo("parent", "DONE")) {
            Outcome::Deny { reasons } => {
                assert!(
                    reasons[0].contains("close its children first"),
                    "{reasons:?}"
                );
                assert!(
                    reasons[0].contains("skill gtd-integrity (line 6)"),
                    "{reasons:?}"
                );
            }
            other => panic!("{other:?}"),
        }
        // No open child, or not DONE: the skill has nothing to say.
        assert!(matches!(
            decide(set_todo("child", "DONE")),
            Outcome::Allow(_)
        ));
        assert!(matches!(
            decide(set_todo("parent", "WAITING")),
            Outcome::Allow(_)
        ));
        // A relative file pattern matches at any depth; tags are checked on the target.
        assert!(matches!(
            decide(set_todo("gone", "DONE")),
            Outcome::Ask { .. }
        ));
        assert!(matches!(
            decide(set_todo("ice", "TODO")),
            Outcome::Deny { .. }
        ));
        // An action the rows do not name passes.
        let tool = Action::Tool {
            name: "query_notes".into(),
            args: crate::sexp::Sexp::from(crate::sexp::Value::Nil),
        };
        let mut ctx2 = Context::default();
        ctx2.tools.insert("query_notes".into());
        ctx2.read_only_tools.insert("query_notes".into());
        assert!(matches!(
            pipeline.decide(tool, &ctx2).outcome,
            Outcome::Allow(_)
        ));
    }

    /// "No DONE without a RATING", with the skill's own gate tests both ways.
    const RATED: &str = "#+SKILL_NAME: rated
#+DESCRIPTION: Books are rated before they are done.
* Gate
| action   | condition                 | decision | reason        |
|----------+---------------------------+----------+---------------|
| set_todo | state=DONE & prop!=RATING | deny     | rate it first |
* Tests
** a book without a rating cannot be closed :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Dune
:ARGS:   state=DONE
:EXPECT: deny
:END:
#+begin_example
,* TODO Dune
#+end_example
** a rated book can :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Dune
:ARGS:   state=DONE
:EXPECT: allow
:END:
#+begin_example
,* TODO Dune
:PROPERTIES:
:rating:   4
:END:
#+end_example
";

    #[test]
    fn a_rule_can_say_a_property_is_absent() {
        let skill = parse_skill("/s/rated.org", RATED, Source::User).unwrap();
        assert_eq!(crate::skills::run_gate_tests(&skill).ok(), Some(2));
        // Absent: not a value that is empty or different.
        let (notes, _store) = notes();
        let pipeline = Pipeline::from_rules(vec![gate_rules(&skill, notes)]);
        let ctx = Context::default();
        assert!(matches!(
            pipeline.decide(set_todo("parent", "DONE"), &ctx).outcome,
            Outcome::Deny { .. }
        ));
        // `prop=NAME` is the other way: the note has it (its ID here).
        let has = RATED.replace("prop!=RATING", "prop=id     ");
        let has = parse_skill("/s/rated.org", &has, Source::User).unwrap();
        let (notes, _store) = self::notes();
        let pipeline = Pipeline::from_rules(vec![gate_rules(&has, notes)]);
        assert!(matches!(
            pipeline.decide(set_todo("parent", "DONE"), &ctx).outcome,
            Outcome::Deny { .. }
        ));
        // A tool call has no target: the term does not hold.
        let tool = Action::Tool {
            name: "set_todo".into(),
            args: crate::sexp::Sexp::from(crate::sexp::Value::Nil),
        };
        let mut ctx = Context::default();
        ctx.tools.insert("set_todo".into());
        ctx.read_only_tools.insert("set_todo".into());
        assert!(!matches!(
            pipeline.decide(tool, &ctx).outcome,
            Outcome::Deny { .. }
        ));
    }

    #[test]
    fn a_rule_can_ask_about_edits_until_the_user_approved_them() {
        let (notes, _store) = notes();
        let skill = parse_skill(
            "/s/safety.org",
            "#+SKILL_NAME: safety\n#+DESCRIPTION: Edits ask.\n* Gate\n\
             | action | condition              | decision | reason     |\n\
             | *      | edit=yes & approved=no | ask      | it edits   |\n",
            Source::Shipped,
        )
        .unwrap();
        let pipeline = Pipeline::from_rules(vec![gate_rules(&skill, notes)]);
        let mut ctx = Context::default();
        let decide = |a: Action, ctx: &Context| pipeline.decide(a, ctx).outcome;
        assert!(matches!(
            decide(set_todo("child", "DONE"), &ctx),
            Outcome::Ask { .. }
        ));
        let visit = Action::Emacs(EmacsAction::VisitNode { id: "child".into() });
        assert!(matches!(decide(visit, &ctx), Outcome::Allow(_)));
        let tool = Action::Tool {
            name: "query_notes".into(),
            args: crate::sexp::Sexp::from(crate::sexp::Value::Nil),
        };
        assert!(matches!(decide(tool, &ctx), Outcome::Allow(_)));
        // Approved for the conversation: that kind passes, another kind still asks.
        ctx.approved.insert("set-todo".into());
        assert!(matches!(
            decide(set_todo("child", "DONE"), &ctx),
            Outcome::Allow(_)
        ));
        let tags = Action::Emacs(EmacsAction::SetTags {
            id: "child".into(),
            tags: vec!["x".into()],
        });
        assert!(matches!(decide(tags, &ctx), Outcome::Ask { .. }));
    }

    #[test]
    fn a_ceiling_holds_while_its_skill_is_in_use() {
        let text = "#+SKILL_NAME: gtd\n#+DESCRIPTION: d\n#+ALLOWED_TOOLS: query_notes, set-*\n\
                    * Tools\n** stale\n:PROPERTIES:\n:ALIAS: query_notes\n:TODO: WAITING\n:END:\n";
        let skill = parse_skill("/s/gtd.org", text, Source::User).unwrap();
        let pipeline = Pipeline::from_rules(vec![ceiling_rules(&skill).unwrap()]);
        let tool = |name: &str| Action::Tool {
            name: name.into(),
            args: crate::sexp::Sexp::from(crate::sexp::Value::Nil),
        };
        let mut ctx = Context::default();
        let allowed = |a: Action, ctx: &Context| match pipeline.decide(a, ctx).outcome {
            Outcome::Allow(_) => Ok(()),
            Outcome::Deny { reasons } => Err(reasons.join("; ")),
            Outcome::Ask { .. } => Err("ask".into()),
        };
        assert_eq!(
            allowed(tool("read_node"), &ctx),
            Ok(()),
            "not in use: no ceiling"
        );
        ctx.skills_in_use.insert("gtd".into());
        assert_eq!(
            allowed(tool("read_node"), &ctx),
            Err(
                "the skill gtd in use allows only query_notes, set-* (#+ALLOWED_TOOLS), not \
                 read_node"
                    .into()
            )
        );
        for within in ["query_notes", "gtd__stale", USE_SKILL] {
            assert_eq!(allowed(tool(within), &ctx), Ok(()), "{within}");
        }
        assert_eq!(allowed(set_todo("child", "DONE"), &ctx), Ok(()));
        let visit = Action::Emacs(EmacsAction::VisitNode { id: "child".into() });
        assert!(allowed(visit, &ctx).unwrap_err().contains("not visit-node"));
        // Another skill's tools are outside it.
        assert!(allowed(tool("other__stale"), &ctx).is_err());
        let imported = Skill {
            source: Source::Imported,
            ..skill.clone()
        };
        assert!(ceiling_rules(&imported).is_none());
        let open = Skill {
            allowed_tools: vec![],
            ..skill
        };
        assert!(ceiling_rules(&open).is_none());
    }
}
