//! When a skill runs: its `* Trigger` section, the events the runtime sees, and whether an
//! event fires a trigger. Pure functions: the runtime (background runs, the approvals queue)
//! calls them; nothing here waits, reads files or keeps time.
//!
//! # The `* Trigger` section
//!
//! ```org
//! * Trigger
//!   :PROPERTIES:
//!   :ON:       model todo-change cron
//!   :MATCH:    +project/DONE
//!   :PATHS:    *.org **/work/**
//!   :SCHEDULE: 0 16 * * FRI
//!   :EVERY:    2h
//!   :END:
//! ```
//!
//! - `:ON:` lists what runs the skill: `model` (the model chose it), `user` (`/NAME`),
//!   `save` (a save changed a node), `todo-change` (a node's TODO keyword changed),
//!   `capture` (a capture added nodes), `cron` (with `:SCHEDULE:`), `every` (with
//!   `:EVERY:`), `idle`, `startup`. Without `:ON:` only the model and the user can run it.
//! - `:MATCH:` (for save, todo-change and capture): at least one node the event concerns
//!   must match, in Org's tags/property/TODO syntax ([`OrgMatch`](super::OrgMatch):
//!   `+work-boss`, `TODO="DONE"`, `LEVEL>1`, `/NEXT|TODO`, `/!`; regexps in `{…}` are
//!   Rust's syntax).
//!   Checked when the skill loads: a bad match is an error naming its line.
//! - `:PATHS:` (for save, todo-change and capture): space-separated globs, one of which the
//!   event's file must match. A glob without `/` matches the file name (`*.org`,
//!   `journal-*.org`), one with `/` the whole absolute path; `*` stays within a directory,
//!   `**` crosses them (`**/work/**`). `~` is not expanded.
//! - `:SCHEDULE:`: a 5-field cron expression ([`Cron`](super::Cron): `minute hour
//!   day-of-month month day-of-week`, `*`, lists, ranges, steps, JAN-DEC, SUN-SAT,
//!   `@daily`…), in local time.
//! - `:EVERY:`: an interval, `30s`, `15m`, `1h`, `1d`.
//!
//! Which nodes a save concerns comes from [`changed_nodes`]: those whose own fields changed.
//!
//! # `:trigger:` tests
//!
//! A skill's `* Tests` may hold tests tagged `:trigger:`; they run when the skill loads,
//! beside its `:gate:` tests, and a failing one keeps the skill inactive.
//!
//! ```org
//! ** closing a project fires :trigger:
//!    :PROPERTIES:
//!    :EVENT:  todo-change
//!    :FILE:   /home/me/notes/work/plan.org
//!    :EXPECT: fires
//!    :END:
//!    #+begin_example
//!    ,* DONE Launch :project:
//!    #+end_example
//! ```
//!
//! - `:EVENT:` one of save, todo-change, capture, cron, every, idle, startup (model and user
//!   runs are for `:turn:` tests).
//! - `:EXPECT:` `fires` or `quiet`.
//! - `:FILE:` the note's file, for `:PATHS:` (default `/skill-test/fixture.org`).
//! - For save, todo-change and capture, the example block is the note after the event. With
//!   one block every node of it counts as changed, or only the headlines `:CHANGED:` names
//!   (titles separated by `|`). With two blocks the first is the note before the event and
//!   the nodes that count are the ones [`changed_nodes`] finds (`changed` for save and
//!   capture, `todo_changed` for todo-change).
//! - For cron, `:TIME:` is the minute of the tick: `2026-11-27 16:00`, `2026-11-27 Fri
//!   16:00` or `<2026-11-27 Fri 16:00>`.
//! - For every, `:ELAPSED:` is the time since the skill last ran (`90m`), or `never`.

use super::cron::Civil;
use super::org_match::MatchNode;
use super::{On, Trigger};
use crate::notes::privacy::Glob;
use crate::store::Node;
use rustc_hash::FxHashMap;
use std::time::Duration;

/// What may fire a skill. `model` and `user` runs are not events: the runtime starts them
/// when `on` names them.
#[derive(Clone, Debug)]
pub enum TriggerEvent<'a> {
    /// A save of `file`; `nodes` are the nodes it changed (see [`file_events`]).
    Save {
        file: &'a str,
        nodes: Vec<MatchNode<'a>>,
    },
    /// TODO keywords changed in `file`; `nodes` are the nodes whose keyword changed.
    TodoChange {
        file: &'a str,
        nodes: Vec<MatchNode<'a>>,
    },
    /// A capture into `file`; `nodes` are the captured ones.
    Capture {
        file: &'a str,
        nodes: Vec<MatchNode<'a>>,
    },
    /// The clock reached this local minute.
    Tick(Civil),
    /// Asking whether a skill with `every` is due: `elapsed` is the time since it last ran,
    /// `None` when it has not run yet (then it is due).
    Every { elapsed: Option<Duration> },
    /// The user has been idle.
    Idle,
    /// org-agent started.
    Startup,
}

impl TriggerEvent<'_> {
    /// The `:ON:` kind this event is.
    pub fn on(&self) -> On {
        match self {
            TriggerEvent::Save { .. } => On::Save,
            TriggerEvent::TodoChange { .. } => On::TodoChange,
            TriggerEvent::Capture { .. } => On::Capture,
            TriggerEvent::Tick(_) => On::Cron,
            TriggerEvent::Every { .. } => On::Every,
            TriggerEvent::Idle => On::Idle,
            TriggerEvent::Startup => On::Startup,
        }
    }
}

/// Whether `event` runs a skill with `trigger`: its kind is in `:ON:`; for events about a
/// file, the file matches one of `:PATHS:` (when given) and one of the event's nodes matches
/// `:MATCH:` (when given); a tick matches `:SCHEDULE:`; `every` is due when at least
/// `:EVERY:` has passed.
pub fn fires(trigger: &Trigger, event: &TriggerEvent) -> bool {
    if !trigger.on.contains(&event.on()) {
        return false;
    }
    match event {
        TriggerEvent::Save { file, nodes }
        | TriggerEvent::TodoChange { file, nodes }
        | TriggerEvent::Capture { file, nodes } => {
            let in_paths = trigger.paths.is_empty()
                || trigger.paths.iter().any(|p| Glob::new(p).matches(file));
            in_paths
                && trigger
                    .matcher
                    .as_ref()
                    .is_none_or(|m| nodes.iter().any(|n| m.matches(n)))
        }
        TriggerEvent::Tick(at) => trigger.schedule.as_ref().is_some_and(|c| c.matches(at)),
        TriggerEvent::Every { elapsed } => trigger
            .every
            .is_some_and(|every| elapsed.is_none_or(|e| e >= every)),
        TriggerEvent::Idle | TriggerEvent::Startup => true,
    }
}

impl Trigger {
    /// The first minute after `after` the skill's `:SCHEDULE:` names, if it has one.
    pub fn next_tick(&self, after: &Civil) -> Option<Civil> {
        self.schedule.as_ref()?.next_after(after)
    }
}

/// Which nodes of a file a save changed, as indexes into the file's new node list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// New nodes, and nodes whose own fields changed.
    pub changed: Vec<usize>,
    /// Nodes that were there before (same id) with another TODO keyword (or none).
    pub todo_changed: Vec<usize>,
}

/// What changed between two versions of a file's nodes (as the store parses them), nodes
/// paired by id (`:ID:`, else the store's id from the outline path; a repeated id pairs in
/// document order).
///
/// The store's [`Node::hash`] is a Merkle hash: it covers a node's own fields *and* its
/// children's hashes, so it differs for every ancestor of an edit. Equal hashes prove
/// nothing changed (the common case, decided without looking further); different hashes
/// are confirmed on the node's own fields — title, TODO, priority, tags, properties,
/// planning, body (the text before its first child), level — so a parent whose only
/// difference is a changed, added or removed child does not count. A node without `:ID:`
/// whose headline (or an ancestor's) is renamed gets a new id, so it counts as new.
/// Removed nodes are not reported.
pub fn changed_nodes(before: &[Node], after: &[Node]) -> Changes {
    // Reversed so that `pop` hands out a repeated id's versions in document order.
    let mut old: FxHashMap<&str, Vec<&Node>> = FxHashMap::default();
    for node in before.iter().rev() {
        old.entry(&*node.id).or_default().push(node);
    }
    let mut changes = Changes::default();
    for (i, node) in after.iter().enumerate() {
        match old.get_mut(&*node.id).and_then(Vec::pop) {
            None => changes.changed.push(i),
            Some(was) => {
                if was.hash() != node.hash() && !was.content.same_own_fields(&node.content) {
                    changes.changed.push(i);
                }
                if was.content.todo != node.content.todo {
                    changes.todo_changed.push(i);
                }
            }
        }
    }
    changes
}

/// The events a save of `file` makes, given its new nodes and what changed: `Save` with the
/// changed nodes, `TodoChange` with the nodes whose keyword changed; none when nothing did.
pub fn file_events<'a>(
    file: &'a str,
    after: &'a [Node],
    changes: &Changes,
) -> Vec<TriggerEvent<'a>> {
    let nodes = |indexes: &[usize]| -> Vec<MatchNode<'a>> {
        indexes
            .iter()
            .filter_map(|&i| MatchNode::in_file(after, i, file))
            .collect()
    };
    let mut events = Vec::new();
    if !changes.changed.is_empty() {
        events.push(TriggerEvent::Save {
            file,
            nodes: nodes(&changes.changed),
        });
    }
    if !changes.todo_changed.is_empty() {
        events.push(TriggerEvent::TodoChange {
            file,
            nodes: nodes(&changes.todo_changed),
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::parse::org_nodes;
    use crate::skills::{Cron, OrgMatch};

    fn nodes(text: &str) -> Vec<Node> {
        org_nodes("/n/work/plan.org", text).unwrap()
    }

    fn titles(nodes: &[Node], indexes: &[usize]) -> Vec<String> {
        indexes
            .iter()
            .map(|&i| nodes[i].content.title.to_string())
            .collect()
    }

    const BEFORE: &str = "#+TODO: TODO NEXT | DONE
* TODO Project :project:
Plan.
** TODO Child
** NEXT Other
* Unrelated
Text.
";

    #[test]
    fn a_changed_child_does_not_change_its_parent() {
        let before = nodes(BEFORE);
        let after = nodes(&BEFORE.replace("** TODO Child", "** DONE Child"));
        assert_ne!(
            before[1].hash(),
            after[1].hash(),
            "the Merkle hash of the parent moved"
        );
        let c = changed_nodes(&before, &after);
        assert_eq!(titles(&after, &c.changed), ["Child"]);
        assert_eq!(titles(&after, &c.todo_changed), ["Child"]);
        // The same text: nothing.
        assert_eq!(changed_nodes(&before, &nodes(BEFORE)), Changes::default());
    }

    #[test]
    fn own_fields_count_children_do_not() {
        let before = nodes(BEFORE);
        for (from, to, changed) in [
            ("Plan.", "Plan more.", vec!["Project"]),
            (":project:", ":project:big:", vec!["Project"]),
            ("* TODO Project", "* TODO [#A] Project", vec!["Project"]),
            ("Text.\n", "Text.\n** Added\n", vec!["Added"]),
            ("** NEXT Other\n", "", vec![]),
            (
                "* Unrelated\nText.",
                "* Unrelated\nSCHEDULED: <2026-11-27 Fri>\nText.",
                vec!["Unrelated"],
            ),
            (
                "#+TODO: TODO NEXT | DONE\n",
                "#+TODO: TODO NEXT | DONE\nPreamble.\n",
                vec!["plan"],
            ),
        ] {
            assert!(BEFORE.contains(from), "{from}");
            let after = nodes(&BEFORE.replacen(from, to, 1));
            let c = changed_nodes(&before, &after);
            assert_eq!(titles(&after, &c.changed), changed, "{from} → {to}");
            assert!(c.todo_changed.is_empty(), "{from} → {to}");
        }
        // Demoting a subtree changes the level of each of its nodes.
        let after = nodes(&BEFORE.replace("** TODO Child", "*** TODO Child"));
        let c = changed_nodes(&before, &after);
        assert_eq!(titles(&after, &c.changed), ["Child"]);
        // A node that gains a keyword has its keyword changed.
        let after = nodes(&BEFORE.replace("* Unrelated", "* TODO Unrelated"));
        let c = changed_nodes(&before, &after);
        assert_eq!(titles(&after, &c.todo_changed), ["Unrelated"]);
    }

    #[test]
    fn ids_pair_nodes_even_when_they_move_or_repeat() {
        let before = nodes("* A\n:PROPERTIES:\n:ID: a\n:END:\n* B\n:PROPERTIES:\n:ID: a\n:END:\n");
        let after =
            nodes("* A\n:PROPERTIES:\n:ID: a\n:END:\n* B changed\n:PROPERTIES:\n:ID: a\n:END:\n");
        let c = changed_nodes(&before, &after);
        assert_eq!(titles(&after, &c.changed), ["B changed"]);
        // A renamed headline with an :ID: is the same node.
        let before = nodes("* TODO Old\n:PROPERTIES:\n:ID: x\n:END:\n");
        let after = nodes("* DONE New\n:PROPERTIES:\n:ID: x\n:END:\n");
        let c = changed_nodes(&before, &after);
        assert_eq!((c.changed.len(), c.todo_changed.len()), (1, 1));
        // Without one, a renamed headline is a new node: changed, but not a keyword change.
        let c = changed_nodes(&nodes("* TODO Old\n"), &nodes("* DONE New\n"));
        assert_eq!((c.changed.len(), c.todo_changed.len()), (1, 0));
    }

    fn trigger(on: &[On]) -> Trigger {
        Trigger {
            on: on.to_vec(),
            ..Trigger::default()
        }
    }

    fn with_match(mut t: Trigger, m: &str) -> Trigger {
        t.matcher = Some(OrgMatch::parse(m).unwrap());
        t
    }

    #[test]
    fn file_events_fire_by_kind_paths_and_match() {
        let before = nodes(BEFORE);
        let after = nodes(&BEFORE.replace("** TODO Child", "** DONE Child"));
        let events = file_events("/n/work/plan.org", &after, &changed_nodes(&before, &after));
        let [save, todo] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!((save.on(), todo.on()), (On::Save, On::TodoChange));

        let on_save = trigger(&[On::Save]);
        assert!(fires(&on_save, save));
        assert!(!fires(&on_save, todo), "todo-change is not in :ON:");
        let on_todo = trigger(&[On::TodoChange]);
        assert!(fires(&on_todo, todo));
        assert!(!fires(&on_todo, save));

        // :MATCH: one of the nodes, with inherited tags.
        assert!(fires(&with_match(on_todo.clone(), "TODO=\"DONE\""), todo));
        assert!(fires(&with_match(on_todo.clone(), "project/DONE"), todo));
        assert!(!fires(&with_match(on_todo.clone(), "TODO=\"NEXT\""), todo));
        assert!(!fires(&with_match(on_todo.clone(), "-project"), todo));
        // The parent did not change, so a match only the parent meets stays quiet.
        assert!(!fires(&with_match(on_save.clone(), "LEVEL=1"), save));

        // :PATHS:
        let paths = |globs: &[&str]| Trigger {
            paths: globs.iter().map(|g| g.to_string()).collect(),
            ..on_save.clone()
        };
        assert!(fires(&paths(&["*.org"]), save));
        assert!(fires(&paths(&["plan.org"]), save));
        assert!(fires(&paths(&["**/work/**"]), save));
        assert!(fires(&paths(&["/n/*/plan.org"]), save));
        assert!(fires(&paths(&["journal.org", "/n/work/*"]), save));
        assert!(!fires(&paths(&["journal.org"]), save));
        assert!(
            !fires(&paths(&["/n/*.org"]), save),
            "* stays in one directory"
        );
        assert!(!fires(&paths(&["**/home/**"]), save));

        // Capture: the same rules.
        let capture = TriggerEvent::Capture {
            file: "/n/inbox.org",
            nodes: vec![MatchNode::in_file(&after, 3, "/n/inbox.org").unwrap()],
        };
        assert!(fires(&trigger(&[On::Capture]), &capture));
        assert!(!fires(&on_save, &capture));
        assert!(fires(
            &with_match(trigger(&[On::Capture]), "project"),
            &capture
        ));
        assert!(!fires(
            &with_match(trigger(&[On::Capture]), "+project+boss"),
            &capture
        ));
        // Nothing changed: no events.
        assert!(file_events("/n/x.org", &after, &Changes::default()).is_empty());
    }

    #[test]
    fn clock_events() {
        let mut t = trigger(&[On::Cron, On::Every, On::Idle, On::Startup]);
        t.schedule = Some(Cron::parse("0 16 * * FRI").unwrap());
        t.every = Some(Duration::from_secs(3600));
        let friday_4pm = Civil::new(2026, 11, 27, 16, 0).unwrap();
        let friday_5pm = Civil::new(2026, 11, 27, 17, 0).unwrap();
        assert!(fires(&t, &TriggerEvent::Tick(friday_4pm)));
        assert!(!fires(&t, &TriggerEvent::Tick(friday_5pm)));
        assert_eq!(
            t.next_tick(&friday_4pm),
            Civil::new(2026, 12, 4, 16, 0),
            "a week later"
        );
        let every = |secs| TriggerEvent::Every {
            elapsed: Some(Duration::from_secs(secs)),
        };
        assert!(fires(&t, &every(3600)));
        assert!(fires(&t, &every(7200)));
        assert!(!fires(&t, &every(3599)));
        assert!(
            fires(&t, &TriggerEvent::Every { elapsed: None }),
            "never ran"
        );
        assert!(fires(&t, &TriggerEvent::Idle));
        assert!(fires(&t, &TriggerEvent::Startup));

        let model_only = trigger(&[On::Model, On::User]);
        for event in [
            TriggerEvent::Tick(friday_4pm),
            every(7200),
            TriggerEvent::Idle,
            TriggerEvent::Startup,
        ] {
            assert!(!fires(&model_only, &event), "{event:?}");
        }
        assert_eq!(model_only.next_tick(&friday_4pm), None);
    }
}
