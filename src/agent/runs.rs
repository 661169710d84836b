//! The bookkeeping of skills' background runs, kept by the runtime: each skill's statistics,
//! whether it runs, the one run that waits for it (what arrives meanwhile coalesces into it),
//! and its suspension after too many failures in a row. Plain state under a lock: it starts
//! nothing itself — `background` drives the runs and asks this what to do next.

use super::options::{RunLimits, TurnSetup};
use crate::sexp::Value;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

/// What a skill's runs came to, for `M-x org-agent-skills`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    pub runs: u32,
    pub failures: u32,
    /// Failures since the last run that succeeded.
    pub failures_in_a_row: u32,
    /// When the last run ended, in seconds since the epoch.
    pub last_run: Option<i64>,
    /// All runs' wall-clock time.
    pub time: Duration,
    /// Why the skill no longer runs (too many failures in a row).
    pub suspended: Option<String>,
    pub running: bool,
}

/// A run that waits for the skill's current run to end.
pub(super) struct Waiting {
    pub(super) request: u64,
    pub(super) texts: Vec<String>,
    pub(super) provenance: Vec<String>,
    pub(super) setup: TurnSetup,
    pub(super) limits: RunLimits,
}

#[derive(Default)]
struct SkillState {
    stats: RunStats,
    waiting: Option<Waiting>,
}

/// The runs of every skill, kept by the runtime.
#[derive(Default)]
pub struct SkillRuns {
    skills: Mutex<HashMap<String, SkillState>>,
}

impl SkillRuns {
    /// Each skill's run statistics, by name.
    pub fn stats(&self) -> Vec<(String, RunStats)> {
        let mut out: Vec<_> = self
            .skills
            .lock()
            .iter()
            .map(|(name, s)| (name.clone(), s.stats.clone()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Whether a run of `skill` is under way.
    pub fn is_running(&self, skill: &str) -> bool {
        self.skills
            .lock()
            .get(skill)
            .is_some_and(|s| s.stats.running)
    }

    /// Lift every suspension (the skills were loaded again: their authors may have fixed
    /// them).
    pub fn resume_all(&self) {
        for s in self.skills.lock().values_mut() {
            s.stats.suspended = None;
            s.stats.failures_in_a_row = 0;
        }
    }
}

impl RunStats {
    /// `(:runs N :failures N :failures-in-a-row N :last-run SECS-or-nil :seconds S
    /// :suspended WHY-or-nil :running BOOL)`.
    pub fn to_sexp(&self) -> Vec<Value> {
        vec![
            Value::keyword("runs"),
            Value::from(u64::from(self.runs)),
            Value::keyword("failures"),
            Value::from(u64::from(self.failures)),
            Value::keyword("failures-in-a-row"),
            Value::from(u64::from(self.failures_in_a_row)),
            Value::keyword("last-run"),
            self.last_run.map(Value::from).unwrap_or(Value::Nil),
            Value::keyword("seconds"),
            Value::from(self.time.as_secs_f64()),
            Value::keyword("suspended"),
            self.suspended
                .as_deref()
                .map(Value::string)
                .unwrap_or(Value::Nil),
            Value::keyword("running"),
            Value::Bool(self.running),
        ]
    }
}

/// Now, in seconds since the epoch.
pub(super) fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// What a run asked for becomes ([`SkillRuns::admit`]).
pub(super) enum Admission {
    /// The skill was running: the text joined the run that waits for it, this request.
    Joined(u64),
    /// The skill was idle and is now marked running: start this run.
    StartNow(Box<Waiting>),
}

impl SkillRuns {
    /// Admit a run of `skill` for `text` because of `provenance`: it starts now, or joins
    /// the one run that waits for the current one (made with `setup`, `limits` and a
    /// request id from `new_request` when there is none). Fails when the skill is
    /// suspended.
    pub(super) fn admit(
        &self,
        skill: &str,
        text: String,
        provenance: String,
        setup: TurnSetup,
        limits: RunLimits,
        new_request: impl FnOnce() -> u64,
    ) -> Result<Admission, String> {
        let mut skills = self.skills.lock();
        let state = skills.entry(skill.to_owned()).or_default();
        if let Some(why) = &state.stats.suspended {
            return Err(format!(
                "the skill {skill} is suspended ({why}); reload the skills to resume it"
            ));
        }
        if state.stats.running {
            let waiting = state.waiting.get_or_insert_with(|| Waiting {
                request: new_request(),
                texts: Vec::new(),
                provenance: Vec::new(),
                setup,
                limits,
            });
            waiting.texts.push(text);
            if !waiting.provenance.contains(&provenance) {
                waiting.provenance.push(provenance);
            }
            return Ok(Admission::Joined(waiting.request));
        }
        state.stats.running = true;
        Ok(Admission::StartNow(Box::new(Waiting {
            request: new_request(),
            texts: vec![text],
            provenance: vec![provenance],
            setup,
            limits,
        })))
    }

    /// Record how a run of `skill` ended (`outcome`, after `took`), suspending the skill
    /// after `limits.max_failures` failures in a row. Returns the run that waited for this
    /// one: to start (`Ok`, the skill stays marked running), or to drop because the skill
    /// is now suspended (`Err`).
    pub(super) fn finish(
        &self,
        skill: &str,
        outcome: &Result<String, String>,
        took: Duration,
        limits: RunLimits,
    ) -> Option<Result<Waiting, Waiting>> {
        let mut skills = self.skills.lock();
        let state = skills.entry(skill.to_owned()).or_default();
        let s = &mut state.stats;
        s.runs += 1;
        s.time += took;
        s.last_run = Some(now_secs());
        s.running = false;
        match outcome {
            Ok(_) => s.failures_in_a_row = 0,
            Err(why) => {
                s.failures += 1;
                s.failures_in_a_row += 1;
                if s.failures_in_a_row >= limits.max_failures {
                    s.suspended = Some(format!(
                        "{} failures in a row, the last: {why}",
                        s.failures_in_a_row
                    ));
                }
            }
        }
        if s.suspended.is_some() {
            // What waited would fail the same way; it is dropped, and the caller says so.
            state.waiting.take().map(Err)
        } else {
            state
                .waiting
                .take()
                .map(Ok)
                .inspect(|_| state.stats.running = true)
        }
    }
}
