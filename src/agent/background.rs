//! Skill runs with no user waiting: a trigger fired (a save, a schedule…) or a script called
//! `org-agent-skill-run`. The run is a turn whose operator queues what it would ask (the
//! approvals queue) and runs in Emacs only what the user's policy allows outright. At most
//! one run per skill at a time — what arrives meanwhile coalesces into one more run — each
//! bounded in depth and wall-clock time; a skill that fails several times in a row is
//! suspended until it is reloaded.

use super::approvals::{Approvals, Proposal, State};
use super::event::{Event, RunUpdate};
use super::operator::{Approval, BoxFuture, Operator};
use super::options::{RunLimits, TurnSetup};
use super::runs::{now_secs, Admission, Waiting};
use super::runtime::{panic_message, Runtime};
use super::turn::{run_turn, Conversation, TurnEvent};
use crate::action::{Action, EmacsAction};
use crate::llm::completion::ToolCall;
use crate::llm::http::CancelToken;
use crate::sexp::Sexp;
use futures_util::FutureExt;
use parking_lot::Mutex;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The operator of a background run: what the gates would ask the user about goes to the
/// approvals queue; what they allow runs in Emacs through the actuator, as in a chat.
struct Background {
    rt: &'static Runtime,
    request: u64,
    skill: String,
    provenance: String,
    approvals: Arc<Approvals>,
    /// The proposals this run queued.
    queued: Arc<Mutex<Vec<u64>>>,
}

impl Operator for Background {
    fn ask(&self, call: &ToolCall, action: &Action, reasons: &[String]) -> BoxFuture<Approval> {
        let id = self.approvals.push(Proposal {
            id: 0,
            state: State::Pending,
            skill: self.skill.clone(),
            tool: call.name.clone(),
            action: crate::sexp::print(action.to_sexp().value()),
            reasons: reasons.to_vec(),
            provenance: self.provenance.clone(),
            created: now_secs(),
            diff: None,
            outcome: None,
        });
        self.queued.lock().push(id);
        let approvals = self.approvals.clone();
        let rt = self.rt;
        let update = RunUpdate::Queued {
            proposal: id,
            tool: call.name.clone(),
            action: action.to_sexp(),
        };
        let (request, skill) = (self.request, self.skill.clone());
        Box::pin(async move {
            let saved = tokio::task::spawn_blocking(move || approvals.save())
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
            if let Err(warning) = saved {
                rt.with_telemetry(|t| t.log("warning", warning));
            }
            rt.push(Event::SkillRun {
                request,
                skill,
                update,
            });
            Approval::Queued(id)
        })
    }

    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        // The file it edits, so that the save it makes does not start the skill again.
        let edited = self.rt.edited_file(action);
        let result = self.rt.actuate_in_emacs(self.request, action);
        let (rt, skill) = (self.rt, self.skill.clone());
        Box::pin(async move {
            if let Some(file) = &edited {
                rt.trigger_state().note_own_edit(&skill, file);
            }
            result.await
        })
    }
}

impl Runtime {
    /// The file `action` edits, as the store names it (the file its saves are ingested as).
    fn edited_file(&self, action: &EmacsAction) -> Option<String> {
        match action.target() {
            (_, Some(file)) => Some(file.to_owned()),
            (Some(id), None) => self.store().node(id).map(|n| n.doc.path.to_string()),
            (None, None) => None,
        }
    }

    /// The user approved pending proposal `id` and Emacs is about to run it: what it edits
    /// is the edit of the skill that proposed it, so its save (now, or the user's a little
    /// later) does not fire that skill's save triggers, as the skill's own direct edits do
    /// not. Called before the edit runs, since the save is ingested on a worker that may
    /// judge its triggers before Emacs could settle the proposal. Returns the file noted.
    pub fn approval_applying(&self, id: u64) -> Result<Option<String>, String> {
        let proposal = self
            .approvals()
            .get(id)
            .ok_or_else(|| format!("no proposal #{id}"))?;
        if proposal.state != State::Pending {
            return Err(format!(
                "proposal #{id} is already {}",
                proposal.state.keyword().to_lowercase()
            ));
        }
        let action = super::approvals::action_of(&proposal)
            .and_then(|a| Action::from_sexp(a.value()).map_err(|e| e.to_string()))?;
        let file = match &action {
            Action::Emacs(e) => self.edited_file(e),
            Action::Tool { .. } => None,
        };
        if let Some(file) = &file {
            self.trigger_state().note_own_edit(&proposal.skill, file);
        }
        Ok(file)
    }

    /// Record the diff Emacs previewed for pending proposal `id`; the queue is saved on a
    /// worker.
    pub fn approval_diff(&'static self, id: u64, diff: String) -> Result<(), String> {
        let approvals = self.approvals();
        approvals.set_diff(id, diff).map_err(|e| e.to_string())?;
        self.save_approvals(approvals, None);
        Ok(())
    }

    /// Settle pending proposal `id`: approved (Emacs ran it; `outcome` is what came of it)
    /// or denied. The queue is saved, and the answer audited to `audit`, on a worker.
    pub fn settle_approval(
        &'static self,
        id: u64,
        state: State,
        outcome: String,
        audit: Option<std::path::PathBuf>,
    ) -> Result<(), String> {
        let approvals = self.approvals();
        let proposal = approvals
            .get(id)
            .ok_or_else(|| format!("no proposal #{id}"))?;
        approvals
            .settle(id, state, outcome)
            .map_err(|e| e.to_string())?;
        let answer = audit.map(|path| {
            let label = format!(
                "{} in the approvals queue (proposal #{id} of the skill {})",
                if state == State::Approved {
                    "approved"
                } else {
                    "denied"
                },
                proposal.skill
            );
            (path, proposal, label)
        });
        self.save_approvals(approvals, answer);
        Ok(())
    }

    /// Write the queue, and append an answer to the audit log, on a blocking worker.
    fn save_approvals(
        &'static self,
        approvals: Arc<Approvals>,
        answer: Option<(std::path::PathBuf, Proposal, String)>,
    ) {
        self.spawn_blocking(move || {
            let mut warnings = Vec::new();
            if let Err(w) = approvals.save() {
                warnings.push(w);
            }
            if let Some((path, proposal, label)) = answer {
                let action = super::approvals::action_of(&proposal)
                    .and_then(|a| Action::from_sexp(a.value()).map_err(|e| e.to_string()));
                let written = match action {
                    Ok(action) => crate::gates::audit::AuditLog::new(&path)
                        .append_answer(&action, &label, now_secs())
                        .map_err(|e| format!("could not write the audit log: {e}")),
                    Err(e) => Err(format!("proposal #{} is not an action: {e}", proposal.id)),
                };
                if let Err(w) = written {
                    warnings.push(w);
                }
            }
            for w in warnings {
                self.with_telemetry(|t| t.log("warning", w));
            }
        });
    }
}

/// The message a background run starts with.
fn opening(skill: &str, provenance: &[String], texts: &[String]) -> String {
    let mut text = format!(
        "You are running the skill {skill} in the background because of: {}. No user is \
         waiting: edits that need the user's approval are queued for them, so propose each \
         edit once and end with a short report of what you did and proposed.",
        provenance.join("; ")
    );
    for t in texts.iter().filter(|t| !t.trim().is_empty()) {
        text.push_str("\n\n");
        text.push_str(t);
    }
    text
}

impl Runtime {
    /// Run skill `name` in the background for `text`, because of `provenance`, with the
    /// backends and options of `setup`. Returns the request id at once; updates arrive as
    /// [`Event::SkillRun`]. When the skill is already running, the request joins the one
    /// run that follows it (its id is returned). Fails when the skill is not active or is
    /// suspended.
    pub fn skill_run_async(
        &'static self,
        name: &str,
        text: String,
        provenance: String,
        setup: TurnSetup,
        limits: RunLimits,
    ) -> Result<u64, String> {
        if !self.skills().iter().any(|s| s.name == name) {
            return Err(format!("no active skill is named {name}"));
        }
        let admitted = self
            .runs()
            .admit(name, text, provenance, setup, limits, || self.next_id())?;
        match admitted {
            Admission::Joined(request) => Ok(request),
            Admission::StartNow(run) => {
                let request = run.request;
                self.start_run(name.to_owned(), *run);
                Ok(request)
            }
        }
    }

    fn start_run(&'static self, skill: String, run: Waiting) {
        let Waiting {
            request,
            texts,
            provenance,
            setup,
            limits,
        } = run;
        let cancel = CancelToken::new();
        self.register_chat(request, cancel.clone());
        let provenance_text = provenance.join("; ");
        self.with_telemetry(|t| {
            t.log("skill", format!("{skill}: run started ({provenance_text})"))
        });
        self.push(Event::SkillRun {
            request,
            skill: skill.clone(),
            update: RunUpdate::Started {
                provenance: provenance_text.clone(),
            },
        });
        let queued = Arc::new(Mutex::new(Vec::new()));
        let operator = Arc::new(Background {
            rt: self,
            request,
            skill: skill.clone(),
            provenance: provenance_text,
            approvals: self.approvals(),
            queued: queued.clone(),
        });
        let message = opening(&skill, &provenance, &texts);
        self.spawn_future(async move {
            let started = Instant::now();
            let outcome = AssertUnwindSafe(self.run_skill_turn(
                &skill,
                message,
                setup,
                operator,
                limits.timeout,
                &cancel,
            ))
            .catch_unwind()
            .await
            .unwrap_or_else(|p| Err(format!("internal error (panic): {}", panic_message(&*p))));
            self.end_chat(request);
            let queued = queued.lock().clone();
            self.finish_run(&skill, request, outcome, queued, started.elapsed(), limits);
        });
    }

    /// The turn of one background run: the chat's equipment with `operator` and the skill
    /// in use, a fresh conversation, cancelled after `timeout`.
    async fn run_skill_turn(
        &'static self,
        skill: &str,
        message: String,
        setup: TurnSetup,
        operator: Arc<Background>,
        timeout: Duration,
        cancel: &CancelToken,
    ) -> Result<String, String> {
        let TurnSetup {
            backends,
            policy,
            cfg,
            setup,
        } = setup;
        let mut eq = self.chat_equipment(backends, policy, setup, operator)?;
        eq.background = true;
        let skills = self.skills();
        let Some(active) = skills.iter().find(|s| s.name == skill) else {
            return Err(format!("the skill {skill} is no longer active"));
        };
        eq.use_skill_from_start(active);
        eq.audit = eq.audit.take().map(|log| log.for_skill(skill));
        let mut conversation = Conversation::default();
        let turn = run_turn(&eq, &mut conversation, &message, &cfg, cancel, |e| {
            if let TurnEvent::Proposed { call, decision, .. } = &e {
                self.with_telemetry(|t| {
                    t.log("skill", format!("{skill}: {} — {decision}", call.name))
                });
            }
            self.count_run_event(&e);
        });
        match tokio::time::timeout(timeout, turn).await {
            Ok(result) => result.map_err(|e| {
                if cancel.is_cancelled() {
                    "interrupted".to_string()
                } else {
                    e.to_string()
                }
            }),
            Err(_) => {
                cancel.cancel();
                Err(format!(
                    "it ran out of time ({} s) and was stopped",
                    timeout.as_secs()
                ))
            }
        }
    }

    fn count_run_event(&self, e: &TurnEvent) {
        self.with_telemetry(|t| match e {
            TurnEvent::ToolResult { name, ok, took, .. } => t.tool_call(name, *ok, *took),
            TurnEvent::Warning(m) => t.log("warning", m.clone()),
            _ => {}
        });
    }

    /// Record how run `request` of `skill` ended, tell Emacs, suspend the skill after too
    /// many failures in a row, and start the run that waited for this one.
    fn finish_run(
        &'static self,
        skill: &str,
        request: u64,
        outcome: Result<String, String>,
        queued: Vec<u64>,
        took: Duration,
        limits: RunLimits,
    ) {
        let next = self.runs().finish(skill, &outcome, took, limits);
        let (ok, message) = match outcome {
            Ok(answer) => (true, answer),
            Err(why) => (false, why),
        };
        self.with_telemetry(|t| {
            t.log(
                "skill",
                format!(
                    "{skill}: run {} in {:.1} s{}",
                    if ok { "done" } else { "failed" },
                    took.as_secs_f64(),
                    if queued.is_empty() {
                        String::new()
                    } else {
                        format!(", {} proposal(s) queued", queued.len())
                    }
                ),
            )
        });
        self.push(Event::SkillRun {
            request,
            skill: skill.to_owned(),
            update: RunUpdate::Finished {
                ok,
                message,
                queued,
                took,
            },
        });
        match next {
            Some(Ok(waiting)) => self.start_run(skill.to_owned(), waiting),
            Some(Err(dropped)) => self.push(Event::SkillRun {
                request: dropped.request,
                skill: skill.to_owned(),
                update: RunUpdate::Finished {
                    ok: false,
                    message: format!("the skill {skill} was suspended before this run began"),
                    queued: Vec::new(),
                    took: Duration::ZERO,
                },
            }),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_says_why_and_keeps_every_coalesced_text() {
        let text = opening(
            "inbox",
            &["save of a.org".into(), "save of b.org".into()],
            &["first".into(), " ".into(), "second".into()],
        );
        assert!(text.contains("save of a.org; save of b.org"));
        assert!(text.ends_with("first\n\nsecond"));
    }
}
