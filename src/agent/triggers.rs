//! Firing skills' triggers. Saves are judged on the worker that ingested them (the Merkle
//! diff of the file's nodes says what changed); schedules by a task that wakes each minute;
//! idle, start-up and capture come from Emacs. A trigger that fires becomes an
//! [`Event::SkillTriggered`]: Emacs starts the run, since the backends' keys live there.
//! A shipped skill's triggers fire only when the user named it ([`ShippedTriggers`]); a
//! skill's own edits — its run's, and its proposals' the user approved — do not fire its
//! save triggers.

use super::event::Event;
use super::runtime::Runtime;
use crate::skills::{
    changed_nodes, file_events, fires, Civil, MatchNode, On, Skill, Source, TriggerEvent,
};
use crate::store::FileDoc;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long after its run a skill's own edits of a file do not fire its save triggers: the
/// actuator saves what it edits, and that save must not start the skill again.
const OWN_EDIT_GRACE: Duration = Duration::from_secs(30);

/// Which shipped skills' triggers fire (`org-agent-shipped-skill-triggers`): a shipped
/// skill's background runs cost model calls the user did not ask for, so none fires until
/// the user names it. The user's own skills' triggers always fire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShippedTriggers {
    /// Those of the skills named (none by default).
    Named(Vec<String>),
    All,
}

impl Default for ShippedTriggers {
    fn default() -> Self {
        ShippedTriggers::Named(Vec::new())
    }
}

impl ShippedTriggers {
    /// Whether `skill`'s triggers fire.
    pub fn fire(&self, skill: &Skill) -> bool {
        skill.source != Source::Shipped
            || match self {
                ShippedTriggers::All => true,
                ShippedTriggers::Named(names) => names.contains(&skill.name),
            }
    }
}

/// What the trigger machinery remembers between events.
#[derive(Default)]
pub struct TriggerState {
    /// Files each skill's runs edited, and when: their saves are the skill's own.
    own_edits: Mutex<HashMap<(String, String), Instant>>,
    /// When each `every` skill last fired (or when the schedule first saw it).
    every: Mutex<HashMap<String, Instant>>,
    scheduler: AtomicBool,
    /// The shipped skills whose triggers fire.
    shipped: Mutex<ShippedTriggers>,
}

impl TriggerState {
    /// A run of `skill` edited `file`.
    pub fn note_own_edit(&self, skill: &str, file: &str) {
        self.own_edits
            .lock()
            .insert((skill.to_owned(), file.to_owned()), Instant::now());
    }

    /// Whether a change of `file` now is `skill`'s own (its run edited it lately).
    fn is_own_edit(&self, skill: &str, file: &str, running: bool) -> bool {
        let mut edits = self.own_edits.lock();
        edits.retain(|_, at| at.elapsed() < OWN_EDIT_GRACE * 4);
        edits
            .get(&(skill.to_owned(), file.to_owned()))
            .is_some_and(|at| running || at.elapsed() < OWN_EDIT_GRACE)
    }
}

/// The skills of `skills` whose triggers fire on `event`, of those `shipped` lets fire.
fn firing<'s>(
    skills: &'s [Skill],
    shipped: &ShippedTriggers,
    event: &TriggerEvent,
) -> Vec<&'s Skill> {
    skills
        .iter()
        .filter(|s| shipped.fire(s) && fires(&s.trigger, event))
        .collect()
}

/// The skills due at the minute `now` (cron), or whose interval has passed since `last`
/// (every; a skill the schedule had not seen starts its interval at `seen`), of those
/// `shipped` lets fire.
pub fn due<'s>(
    skills: &'s [Skill],
    shipped: &ShippedTriggers,
    now: &Civil,
    last: &mut HashMap<String, Instant>,
    seen: Instant,
) -> Vec<(&'s Skill, On)> {
    let mut out = Vec::new();
    for skill in skills.iter().filter(|s| shipped.fire(s)) {
        if fires(&skill.trigger, &TriggerEvent::Tick(*now)) {
            out.push((skill, On::Cron));
        }
        if skill.trigger.on.contains(&On::Every) {
            let since = *last.entry(skill.name.clone()).or_insert(seen);
            let elapsed = seen.saturating_duration_since(since);
            if fires(
                &skill.trigger,
                &TriggerEvent::Every {
                    elapsed: Some(elapsed),
                },
            ) {
                last.insert(skill.name.clone(), seen);
                out.push((skill, On::Every));
            }
        }
    }
    out
}

impl Runtime {
    /// Which shipped skills' triggers fire from now on. A trigger that does not fire is not
    /// an event, nor a line of the log: nothing ran.
    pub fn set_shipped_triggers(&self, shipped: ShippedTriggers) {
        *self.trigger_state().shipped.lock() = shipped;
    }

    /// The shipped skills whose triggers fire.
    pub fn shipped_triggers(&self) -> ShippedTriggers {
        self.trigger_state().shipped.lock().clone()
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
        if self.trigger_state().scheduler.swap(true, Ordering::SeqCst) {
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
                let shipped = self.shipped_triggers();
                let due = {
                    let mut last = self.trigger_state().every.lock();
                    due(&skills, &shipped, &civil, &mut last, Instant::now())
                        .into_iter()
                        .map(|(s, on)| (s.clone(), on))
                        .collect::<Vec<_>>()
                };
                for (skill, on) in due {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::parse_skill;

    fn skill(name: &str, trigger: &str) -> Skill {
        skill_of(name, trigger, Source::User)
    }

    fn skill_of(name: &str, trigger: &str, source: Source) -> Skill {
        let text = format!(
            "#+SKILL_NAME: {name}\n#+DESCRIPTION: d\n* Trigger\n:PROPERTIES:\n{trigger}:END:\n"
        );
        parse_skill("/s/x.org", &text, source).unwrap()
    }

    #[test]
    fn the_schedule_fires_cron_at_its_minute_and_every_after_its_interval() {
        let skills = [
            skill("weekly", ":ON: cron\n:SCHEDULE: 0 16 * * FRI\n"),
            skill("hourly", ":ON: every\n:EVERY: 1h\n"),
            skill("on-save", ":ON: save\n"),
        ];
        let friday = Civil::new(2026, 11, 27, 16, 0).unwrap();
        let thursday = Civil::new(2026, 11, 26, 16, 0).unwrap();
        let mut last = HashMap::new();
        let all = ShippedTriggers::default();
        let start = Instant::now();
        let names = |v: Vec<(&Skill, On)>| -> Vec<(String, On)> {
            v.into_iter().map(|(s, on)| (s.name.clone(), on)).collect()
        };
        // The interval starts when the schedule first sees the skill.
        assert_eq!(
            names(due(&skills, &all, &friday, &mut last, start)),
            [("weekly".to_string(), On::Cron)]
        );
        assert!(due(
            &skills,
            &all,
            &thursday,
            &mut last,
            start + Duration::from_secs(1800)
        )
        .is_empty());
        let later = start + Duration::from_secs(3600);
        assert_eq!(
            names(due(&skills, &all, &thursday, &mut last, later)),
            [("hourly".to_string(), On::Every)]
        );
        // And begins again from the firing.
        assert!(due(
            &skills,
            &all,
            &thursday,
            &mut last,
            later + Duration::from_secs(60)
        )
        .is_empty());
    }

    #[test]
    fn a_shipped_skills_triggers_fire_only_when_the_user_names_it() {
        let skills = [
            skill_of("gardener", ":ON: every\n:EVERY: 1h\n", Source::Shipped),
            skill_of(
                "ids",
                ":ON: cron\n:SCHEDULE: 0 9 * * MON\n",
                Source::Shipped,
            ),
            skill_of("secret-sentinel", ":ON: save\n", Source::Shipped),
            skill("mine", ":ON: save cron\n:SCHEDULE: 0 9 * * MON\n"),
        ];
        let monday = Civil::new(2026, 11, 30, 9, 0).unwrap();
        let after = crate::store::parse::parse_with_defaults("* TODO a\n", "/n/a.org".as_ref())
            .unwrap()
            .nodes;
        let saved = file_events("/n/a.org", &after, &changed_nodes(&[], &after));
        let save = |shipped: &ShippedTriggers| -> Vec<String> {
            firing(&skills, shipped, &saved[0])
                .iter()
                .map(|s| s.name.clone())
                .collect()
        };
        let scheduled = |shipped: &ShippedTriggers| -> Vec<String> {
            let start = Instant::now();
            let mut last = HashMap::new();
            due(&skills, shipped, &monday, &mut last, start);
            due(
                &skills,
                shipped,
                &monday,
                &mut last,
                start + Duration::from_secs(3600),
            )
            .into_iter()
            .map(|(s, _)| s.name.clone())
            .collect()
        };
        // By default only the user's own skill fires.
        let none = ShippedTriggers::default();
        assert_eq!(save(&none), ["mine"]);
        assert_eq!(scheduled(&none), ["mine"]);
        let some = ShippedTriggers::Named(vec!["gardener".into(), "secret-sentinel".into()]);
        assert_eq!(save(&some), ["secret-sentinel", "mine"]);
        assert_eq!(scheduled(&some), ["gardener", "mine"]);
        let all = ShippedTriggers::All;
        assert_eq!(save(&all), ["secret-sentinel", "mine"]);
        assert_eq!(scheduled(&all), ["gardener", "ids", "mine"]);
    }

    #[test]
    fn a_skills_own_edit_does_not_fire_it_but_anothers_does() {
        let state = TriggerState::default();
        state.note_own_edit("inbox", "/n/inbox.org");
        assert!(state.is_own_edit("inbox", "/n/inbox.org", false));
        assert!(!state.is_own_edit("inbox", "/n/other.org", false));
        assert!(!state.is_own_edit("gardener", "/n/inbox.org", false));
    }
}
