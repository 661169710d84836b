//! Firing skills' triggers. Saves are judged on the worker that ingested them (the Merkle
//! diff of the file's nodes says what changed); schedules by a task that wakes each minute;
//! idle, start-up and capture come from Emacs. A trigger that fires becomes an
//! [`Event::SkillTriggered`]: Emacs starts the run, since the backends' keys live there.
//! A shipped skill's triggers fire only when the user named it ([`ShippedTriggers`]); a
//! skill's own edits — its run's, and its proposals' the user approved — do not fire its
//! save triggers.

use super::event::Event;
use super::runtime::Runtime;
use super::trigger_state::{firing, ShippedTriggers};
use crate::skills::{changed_nodes, file_events, Civil, MatchNode, On, Skill, TriggerEvent};
use crate::store::FileDoc;
use std::sync::Arc;
use std::time::Duration;

impl Runtime {
    /// Which shipped skills' triggers fire from now on. A trigger that does not fire is not
    /// an event, nor a line of the log: nothing ran.
    pub fn set_shipped_triggers(&self, shipped: ShippedTriggers) {
        self.trigger_state().set_shipped(shipped);
    }

    /// The shipped skills whose triggers fire.
    pub fn shipped_triggers(&self) -> ShippedTriggers {
        self.trigger_state().shipped()
    }

    fn trigger(&self, skill: &Skill, provenance: String) {
        self.push(Event::SkillTriggered {
            skill: skill.name.clone(),
            provenance,
        });
    }

    /// `file` was ingested, `before` → `after`: fire the save and TODO-change triggers of
    /// what changed. A skill's own edits do not fire it.
    pub(super) fn fire_file_triggers(
        &self,
        file: &str,
        before: Option<&Arc<FileDoc>>,
        after: Option<&Arc<FileDoc>>,
    ) {
        let skills = self.skills();
        if !skills
            .iter()
            .any(|s| s.trigger.on.contains(&On::Save) || s.trigger.on.contains(&On::TodoChange))
        {
            return;
        }
        let Some(after) = after else { return };
        let old = before.map(|d| d.nodes.as_slice()).unwrap_or(&[]);
        let changes = changed_nodes(old, &after.nodes);
        let shipped = self.shipped_triggers();
        let mut fired: Vec<(&Skill, String)> = Vec::new();
        for event in file_events(file, &after.nodes, &changes) {
            let what = match event.on() {
                On::TodoChange => "a TODO change",
                _ => "a save",
            };
            for skill in firing(&skills, &shipped, &event) {
                if !fired.iter().any(|(s, _)| s.name == skill.name) {
                    fired.push((skill, format!("{what} of {file}")));
                }
            }
        }
        for (skill, provenance) in fired {
            let running = self.runs().is_running(&skill.name);
            if self.trigger_state().is_own_edit(&skill.name, file, running) {
                self.with_telemetry(|t| {
                    t.log(
                        "trigger",
                        format!("{}: not fired by its own edit of {file}", skill.name),
                    )
                });
                continue;
            }
            self.trigger(skill, provenance);
        }
    }

    /// An event of Emacs's: `idle`, `startup`, or `capture` of the node at `pos` in `file`
    /// (as the store has it). Returns the names of the skills it fired.
    pub fn fire_emacs_trigger(&self, on: On, capture: Option<(&str, u32)>) -> Vec<String> {
        let skills = self.skills();
        let store = self.store();
        let state = store.state();
        let (event, provenance) = match (on, capture) {
            (On::Idle, _) => (TriggerEvent::Idle, "Emacs being idle".to_string()),
            (On::Startup, _) => (TriggerEvent::Startup, "org-agent starting".to_string()),
            (On::Capture, Some((file, pos))) => {
                let Some(doc) = state.files.get(file) else {
                    return Vec::new();
                };
                let Some(node) = store.node_at(file, pos) else {
                    return Vec::new();
                };
                // The node as `doc` (this state of the file) has it.
                let index = doc.nodes.iter().position(|n| n.id == node.node().id);
                let Some(captured) = index.and_then(|i| MatchNode::in_file(&doc.nodes, i, file))
                else {
                    return Vec::new();
                };
                (
                    TriggerEvent::Capture {
                        file,
                        nodes: vec![captured],
                    },
                    format!("a capture into {file}"),
                )
            }
            _ => return Vec::new(),
        };
        let fired = firing(&skills, &self.shipped_triggers(), &event);
        for skill in &fired {
            self.trigger(skill, provenance.clone());
        }
        fired.iter().map(|s| s.name.clone()).collect()
    }

    /// Start the task that fires `cron` and `every` triggers, once: it wakes at each minute
    /// and asks the active skills.
    pub(super) fn ensure_scheduler(&'static self) {
        if !self.trigger_state().claim_scheduler() {
            return;
        }
        self.spawn_future(async move {
            loop {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                // Just past the next minute, so the tick reads the minute it woke for.
                let wait = 60 - now.as_secs() % 60;
                tokio::time::sleep(Duration::from_millis(wait * 1000 + 50)).await;
                let secs = now.as_secs() as i64 + wait as i64;
                let Some(civil) = Civil::from_unix_local(secs) else {
                    continue;
                };
                let skills = self.skills();
                for (skill, on) in self.trigger_state().due_now(&skills, &civil) {
                    let provenance = match on {
                        On::Cron => format!(
                            "its schedule ({}) at {civil}",
                            skill
                                .trigger
                                .schedule
                                .as_ref()
                                .map(|c| c.source())
                                .unwrap_or_default()
                        ),
                        _ => "its interval".to_string(),
                    };
                    self.trigger(&skill, provenance);
                }
            }
        });
    }
}
