//! Act: one step's calls, each decided and, when approved, run — worker tools on blocking
//! workers, semantic search awaited, Emacs actions and Elisp tools through the operator —
//! with every result sent back to the LLM.

use super::decide::Step;
use super::{tool_error, Turn, TurnError, TurnEvent};
use crate::action::{Action, EmacsAction};
use crate::llm::completion::{Completion, ToolCall};
use crate::llm::http::Message;
use crate::sexp::{self, Sexp, Value};
use crate::skills::disclosure::USE_SKILL;

impl<E: FnMut(TurnEvent)> Turn<'_, E> {
    /// Decide about each call of `step` and run what was approved. `tie`: the backends asked
    /// in consensus were split (the user decides).
    pub(super) async fn take_step(
        &mut self,
        completion: &Completion,
        step: Step,
        tie: Option<String>,
    ) -> Result<(), TurnError> {
        self.tool_rounds += 1;
        self.conversation.messages.push(Message::Assistant {
            content: completion.text.clone(),
            tool_calls: if step.native {
                completion.tool_calls.clone()
            } else {
                vec![]
            },
        });
        // The gates see what the user approved before this step.
        let ctx = self.eq.gate_context(&self.conversation.context);
        for (call, proposed) in step.calls {
            let action = match proposed {
                Ok(a) => a,
                Err(problem) => {
                    // Wrong arguments: nothing to gate or run; the LLM sees why.
                    self.refuse_unrun(step.native, &call, "invalid", &problem);
                    continue;
                }
            };
            let edit_key = match &action {
                Action::Emacs(_) => Some(sexp::print(action.to_sexp().value())),
                Action::Tool { .. } => None,
            };
            if let Some(before) = edit_key.as_ref().and_then(|k| self.settled_edits.get(k)) {
                let why = format!(
                    "{} with these arguments {before} in this turn; its result is above: \
                     do not repeat it, go on or answer",
                    call.name
                );
                self.refuse_unrun(step.native, &call, "repeated", &why);
                continue;
            }
            let decided = self.decide(&call, action, &ctx, tie.as_deref()).await?;
            self.emit(TurnEvent::Proposed {
                call: call.clone(),
                decision: decided.label,
                reasons: decided.reasons.clone(),
            });
            let started = std::time::Instant::now();
            let run = decided.approved.is_some();
            let (ok, content) = match decided.approved {
                Some(action) => {
                    // What the action reads through the notes is noted from here on.
                    self.eq.notes.take_untrusted_reads();
                    let source = self.eq.untrusted_source(&action);
                    let outcome = self.act(action).await?;
                    let mut read = self.eq.notes.take_untrusted_reads();
                    read.extend(source);
                    self.conversation.context.read_untrusted(read);
                    outcome
                }
                // A proposal queued for the user is not a refusal: a background run may
                // queue a whole batch (the inbox, the gardener) without giving up.
                None if decided.label == "ask: queued" => {
                    (false, format!("queued: {}", decided.reasons.join("; ")))
                }
                None => self.refused(&decided.reasons)?,
            };
            if let Some(key) = edit_key {
                if ok {
                    self.settled_edits.insert(key, "was already made");
                } else if decided.label == "ask: denied" {
                    self.settled_edits
                        .insert(key, "was already denied by the user");
                }
            }
            if ok {
                if let Some(id) = call.arguments.get("id").and_then(|v| v.as_str()) {
                    if self.eq.notes.node(id).is_ok() {
                        self.tool_focus = Some(id.to_owned());
                    }
                }
            }
            self.emit(TurnEvent::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                ok,
                content: content.clone(),
                took: if run {
                    started.elapsed()
                } else {
                    std::time::Duration::ZERO
                },
            });
            self.push_result(step.native, &call, ok, content);
        }
        Ok(())
    }

    /// A refusal, as the LLM reads it; the turn ends once there were too many.
    fn refused(&mut self, reasons: &[String]) -> Result<(bool, String), TurnError> {
        self.denials += 1;
        if self.denials > self.cfg.max_denials {
            return Err(TurnError::TooManyDenials(
                self.cfg.max_denials,
                reasons.join("; "),
            ));
        }
        Ok((false, format!("denied: {}", reasons.join("; "))))
    }

    /// Run an approved action: `(ok, what the LLM reads)`.
    async fn act(&mut self, action: Action) -> Result<(bool, String), TurnError> {
        let eq = self.eq;
        let outcome = match &action {
            Action::Tool { name, args } if eq.elisp_tool(name).is_some() => {
                let call = EmacsAction::CallTool {
                    name: name.clone(),
                    args: Sexp::from(sexp::clone_value(args.value())),
                };
                self.actuate(&call).await
            }
            Action::Tool { name, args } => {
                let args = sexp::json::to_json(args.value());
                if !self.asked_before.insert((name.clone(), args.to_string())) {
                    Some((
                        false,
                        tool_error(&format!(
                            "{name} was already called with these arguments in this turn and \
                             its result is above; use it, or answer"
                        )),
                    ))
                } else if eq.semantic_tool(name) {
                    Some(self.run_semantic(&args).await)
                } else if eq.mcp.get(name).is_some() {
                    match eq.mcp.call(name, args, self.cancel).await {
                        Ok((ok, text)) if ok => Some((true, text)),
                        Ok((_, text)) => Some((false, tool_error(&text))),
                        Err(crate::mcp::client::CallError::Cancelled) => None,
                        Err(e) => Some((false, tool_error(&e.to_string()))),
                    }
                } else {
                    let loading = match name.as_str() {
                        USE_SKILL => args["name"].as_str().map(str::to_owned),
                        _ => None,
                    };
                    let outcome = self.run_worker_tool(name, args).await;
                    if let (true, Some(skill)) = (outcome.0, loading) {
                        // In use from the next step on: its tools offered, its ceiling kept.
                        self.conversation.context.skills_in_use.insert(skill);
                    }
                    Some(outcome)
                }
            }
            Action::Emacs(e) => {
                self.asked_before.clear();
                self.actuate(e).await
            }
        };
        outcome.ok_or(TurnError::Cancelled)
    }

    /// Answer `call` with an error the LLM sees, without gating or running it (`decision` says
    /// why: invalid arguments, a repeat).
    fn refuse_unrun(&mut self, native: bool, call: &ToolCall, decision: &'static str, why: &str) {
        self.emit(TurnEvent::Proposed {
            call: call.clone(),
            decision,
            reasons: vec![why.to_owned()],
        });
        let content = tool_error(why);
        self.emit(TurnEvent::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            ok: false,
            content: content.clone(),
            took: std::time::Duration::ZERO,
        });
        self.push_result(native, call, false, content);
    }

    /// Run the semantic search tool: the query is embedded over HTTP (awaited, never blocking
    /// a worker), the hits listed like the other tools list headlines.
    async fn run_semantic(&self, args: &serde_json::Value) -> (bool, String) {
        let Some(semantic) = &self.eq.semantic else {
            return (false, tool_error("semantic search is not set up"));
        };
        match semantic.tool_call(&self.eq.notes, args, self.cancel).await {
            Ok(text) => (true, text),
            Err(e) => (false, tool_error(&e)),
        }
    }

    /// Run a worker tool on a blocking worker; a failure or panic is a result the LLM sees.
    /// The body gets the turn's cancellation: one that runs long (`run_command`) stops, and
    /// kills what it started, when the turn is cancelled.
    async fn run_worker_tool(&self, name: &str, args: serde_json::Value) -> (bool, String) {
        let Some((set, _)) = self.eq.worker_tool(name) else {
            return (false, tool_error(&format!("no tool named {name}")));
        };
        let set = set.clone();
        let notes = self.eq.notes.clone();
        let name = name.to_string();
        let cancel = self.cancel.clone();
        let run = move || {
            set.registry
                .call_cancellable(&notes, &name, &args, Some(cancel))
        };
        match tokio::task::spawn_blocking(run).await {
            Ok(Ok(text)) => (true, text),
            Ok(Err(e)) => (false, tool_error(&e.to_string())),
            Err(_) => (false, tool_error("the tool failed unexpectedly")),
        }
    }

    /// Run an Emacs action through the operator: `(ok, the result plist as text)`, or `None`
    /// when the turn was cancelled while it waited.
    async fn actuate(&self, action: &EmacsAction) -> Option<(bool, String)> {
        let result = tokio::select! {
            r = self.eq.operator.actuate(action) => r,
            _ = self.cancel.cancelled() => return None,
        };
        Some(match result {
            Ok(plist) => {
                let ok = matches!(
                    sexp::plist_get(plist.value(), "status"),
                    Some(Value::Keyword(k)) if &**k == "ok"
                );
                (ok, sexp::print(plist.value()))
            }
            Err(message) => (false, tool_error(&message)),
        })
    }
}
