//! Decide: what the LLM proposed (native tool calls, or an action written as a plist by a
//! model without tool calling), each proposal through the gates — audited, the user asked
//! when a gate says so — and whether it runs.

use super::{Turn, TurnError, TurnEvent};
use crate::action::Action;
use crate::agent::operator::{Approval, Question};
use crate::gates::{Context, Outcome};
use crate::llm::completion::{Completion, ToolCall};
use crate::llm::error::LlmError;
use crate::llm::http::Message;
use crate::sexp;

/// What one reply of the LLM amounts to.
pub(super) enum Proposals {
    /// Prose: the turn's answer.
    Answer(String),
    /// An action plist that did not read, told to the LLM: ask again.
    FedBack,
    /// Calls to gate and run.
    Calls(Step),
}

/// The calls of one step, each with the action it stands for or why it is invalid.
pub(super) struct Step {
    /// Native tool calls (results go back as `tool` messages), or a plist action (its
    /// result goes back as a `:tool-result` stimulus).
    pub native: bool,
    pub calls: Vec<(ToolCall, Result<Action, String>)>,
}

/// What the gates and the user decided about one action.
pub(super) struct Decided {
    /// For the chat and the log: allow, deny, ask: approved…
    pub label: &'static str,
    pub reasons: Vec<String>,
    /// The action to run (as the gates transformed it); `None`: refused.
    pub approved: Option<Action>,
}

impl<E: FnMut(TurnEvent)> Turn<'_, E> {
    /// What `completion` proposes: native tool calls, an action written as a plist, or prose.
    /// A plist that does not read is fed back to the LLM (an error once the feedback is used
    /// up).
    pub(super) fn proposals(&mut self, completion: &Completion) -> Result<Proposals, TurnError> {
        if !completion.tool_calls.is_empty() {
            let calls = completion
                .tool_calls
                .iter()
                .map(|c| (c.clone(), self.eq.action(c, &self.conversation.context)))
                .collect();
            return Ok(Proposals::Calls(Step {
                native: true,
                calls,
            }));
        }
        let read = sexp_action(&completion.text);
        if !matches!(read, Some(Ok(_))) {
            self.conversation.messages.push(Message::Assistant {
                content: completion.text.clone(),
                tool_calls: vec![],
            });
        }
        match read {
            None => Ok(Proposals::Answer(completion.text.clone())),
            Some(Err(problem)) => {
                if self.errors_fed_back >= self.cfg.max_error_feedback {
                    return Err(TurnError::Llm(LlmError::Malformed(problem)));
                }
                let note = format!(
                    "(:loop-error \"{}\") Answer in prose, or write the action again as one \
                     plist.",
                    problem.replace('"', "'")
                );
                self.feed_back(problem, note);
                Ok(Proposals::FedBack)
            }
            Some(Ok(action)) => {
                let action = action.as_proposed();
                self.sexp_calls += 1;
                let call = sexp_call(&action, self.sexp_calls);
                let ctx = &self.conversation.context;
                let checked = match &action {
                    Action::Emacs(e) => self.eq.may_touch(e).map(|()| action),
                    Action::Tool { name, .. } => {
                        match self.eq.expand_mcp_alias(name, &call.arguments, ctx) {
                            Some(expanded) => expanded,
                            None => self
                                .eq
                                .check_skill_call(name, &call.arguments, ctx)
                                .map(|()| action),
                        }
                    }
                };
                Ok(Proposals::Calls(Step {
                    native: false,
                    calls: vec![(call, checked)],
                }))
            }
        }
    }

    /// Pass `action` (the LLM's `call`) through the gates with `ctx`, audited; ask the user
    /// when they say so. `tie`: the backends were split, so what the gates would allow is
    /// asked instead — the user breaks the tie.
    pub(super) async fn decide(
        &mut self,
        call: &ToolCall,
        action: Action,
        ctx: &Context,
        tie: Option<&str>,
    ) -> Result<Decided, TurnError> {
        let mut verdict = self.eq.gates.decide(action.clone(), ctx);
        if let (Some(why), Outcome::Allow(a)) = (tie, &verdict.outcome) {
            verdict.outcome = Outcome::Ask {
                action: a.clone(),
                reasons: vec![why.to_owned()],
            };
        }
        self.audit(|log, now| log.append(&action, &verdict, now));
        Ok(match verdict.outcome {
            Outcome::Allow(a) => Decided {
                label: "allow",
                reasons: vec![],
                approved: Some(a),
            },
            Outcome::Ask { action, reasons } => {
                let once_only = self.asks_whatever_was_approved(&action, ctx);
                self.ask(call, action, reasons, once_only).await?
            }
            Outcome::Deny { reasons } => Decided {
                label: "deny",
                reasons,
                approved: None,
            },
        })
    }

    /// Ask the user about `action`; the answer is audited, and an approval for the
    /// conversation is remembered.
    async fn ask(
        &mut self,
        call: &ToolCall,
        action: Action,
        reasons: Vec<String>,
        once_only: bool,
    ) -> Result<Decided, TurnError> {
        let question = Question {
            call,
            action: &action,
            reasons: &reasons,
            once_only,
        };
        let answer = tokio::select! {
            a = self.eq.operator.ask_about(question) => a,
            _ = self.cancel.cancelled() => return Err(TurnError::Cancelled),
        };
        let label = match answer {
            Approval::Once => "approved once",
            Approval::ForConversation => "approved for the conversation",
            Approval::Deny => "denied",
            Approval::Queued(_) => "queued for the user's approval",
        };
        self.audit(|log, now| log.append_answer(&action, label, now));
        Ok(match answer {
            Approval::Once => Decided {
                label: "ask: approved",
                reasons,
                approved: Some(action),
            },
            Approval::ForConversation => {
                self.conversation.context.approved.insert(action.kind());
                Decided {
                    label: "ask: approved for the conversation",
                    reasons,
                    approved: Some(action),
                }
            }
            Approval::Queued(id) => Decided {
                label: "ask: queued",
                reasons: vec![format!(
                    "no user is waiting: it was queued as proposal #{id} and runs if the \
                     user approves it; do not propose it again ({})",
                    reasons.join("; ")
                )],
                approved: None,
            },
            Approval::Deny => Decided {
                label: "ask: denied",
                reasons: vec![format!("the user denied it ({})", reasons.join("; "))],
                approved: None,
            },
        })
    }

    /// Whether the gates would still ask about `action` had the user approved its kind for
    /// the conversation (a wall asks: a new skill, Elisp to evaluate, an edit after
    /// untrusted content, an edit through a link).
    fn asks_whatever_was_approved(&self, action: &Action, ctx: &Context) -> bool {
        let mut lasting = ctx.clone();
        lasting.approved.insert(action.kind());
        matches!(
            self.eq.gates.decide(action.clone(), &lasting).outcome,
            Outcome::Ask { .. }
        )
    }

    fn audit(
        &mut self,
        write: impl FnOnce(&crate::gates::audit::AuditLog, i64) -> std::io::Result<()>,
    ) {
        if let Err(warning) = self.eq.audit(write) {
            self.emit(TurnEvent::Warning(warning));
        }
    }
}

/// An action the LLM wrote as a plist (optionally in a code fence), if its reply is one:
/// `None` for prose, an error for a plist that does not read or is not an action. A reply
/// that is nothing but a plist is never an answer for the user: small models echo plists
/// they were shown (a tool result, an error) instead of answering.
fn sexp_action(text: &str) -> Option<Result<Action, String>> {
    let mut t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '-');
        t = rest.trim().trim_end_matches("```").trim();
    }
    if !t.starts_with("(:") {
        return None;
    }
    Some(
        sexp::read(t)
            .map_err(|e| format!("the action does not read: {e}"))
            .and_then(|v| Action::from_sexp(v.value()).map_err(|e| format!("not an action: {e}"))),
    )
}

/// The tool call standing for an S-expression action (tools get JSON arguments).
fn sexp_call(action: &Action, n: u32) -> ToolCall {
    let (name, arguments) = match action {
        Action::Tool { name, args } => (name.clone(), sexp::json::to_json(args.value())),
        Action::Emacs(_) => (action.kind(), sexp::json::to_json(action.to_sexp().value())),
    };
    ToolCall {
        id: format!("sexp-{n}"),
        name,
        arguments,
        signature: None,
    }
}
