//! What the skills' triggers remember and decide, apart from the runtime that fires them:
//! which shipped skills may fire ([`ShippedTriggers`]), the files each skill's runs edited
//! lately (their saves are the skill's own and do not fire it), the intervals of `every`
//! skills, and which skills an event or the clock fires. Pure decisions under small locks;
//! it pushes no event and starts no task — `triggers` does.

use crate::skills::{fires, Civil, On, Skill, Source, TriggerEvent};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
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
    pub(super) fn is_own_edit(&self, skill: &str, file: &str, running: bool) -> bool {
        let mut edits = self.own_edits.lock();
        edits.retain(|_, at| at.elapsed() < OWN_EDIT_GRACE * 4);
        edits
            .get(&(skill.to_owned(), file.to_owned()))
            .is_some_and(|at| running || at.elapsed() < OWN_EDIT_GRACE)
    }

    /// Which shipped skills' triggers fire from now on.
    pub fn set_shipped(&self, shipped: ShippedTriggers) {
        *self.shipped.lock() = shipped;
    }

    /// The shipped skills whose triggers fire.
    pub fn shipped(&self) -> ShippedTriggers {
        self.shipped.lock().clone()
    }

    /// Whether this is the first call: the one scheduler task is to be started.
    pub(super) fn claim_scheduler(&self) -> bool {
        !self.scheduler.swap(true, Ordering::SeqCst)
    }

    /// The skills of `skills` due at `now` ([`due`]), with the intervals remembered here.
    pub(super) fn due_now(&self, skills: &[Skill], now: &Civil) -> Vec<(Skill, On)> {
        let mut last = self.every.lock();
        due(skills, &self.shipped(), now, &mut last, Instant::now())
            .into_iter()
            .map(|(s, on)| (s.clone(), on))
            .collect()
    }
}

/// The skills of `skills` whose triggers fire on `event`, of those `shipped` lets fire.
pub(super) fn firing<'s>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::parse_skill;
    use crate::skills::{changed_nodes, file_events};

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
