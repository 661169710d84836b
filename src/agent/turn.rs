//! One turn of a conversation: think → decide → act, until the LLM answers in prose.
//!
//! The LLM sees the conversation and the tool belt; each tool call it proposes becomes an
//! [`Action`], passes the [gates](crate::gates), runs (on a blocking worker: tools read the
//! store) or is refused, and its result goes back to the LLM as the next step. Bounded:
//! `max_depth` steps, errors fed back to the LLM at most `max_error_feedback` times,
//! refusals at most `max_denials` times; then the turn ends with a clear error. Nothing here
//! panics the loop: a panicking tool is a tool error.

use super::message::{Action, Sensor, Stimulus};
use crate::gates::{self, Context, Outcome, Pipeline};
use crate::llm::completion::{Completion, Delta, ToolCall};
use crate::llm::error::LlmError;
use crate::llm::http::{CancelToken, ChatClient, ChatRequest, Message};
use crate::sexp::{self, Sexp};
use crate::store::Store;
use crate::tools::Registry;
use std::sync::Arc;
use thiserror::Error;

#[derive(Clone, Debug)]
pub struct TurnConfig {
    pub system_prompt: String,
    pub max_depth: u32,
    pub max_error_feedback: u32,
    pub max_denials: u32,
    pub temperature: Option<f64>,
    pub stream: bool,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            system_prompt: "You are org-agent, an assistant inside Emacs that works in the \
                            user's Org notes. Use the tools to look things up before you \
                            answer; answer briefly, in Org markup."
                .into(),
            max_depth: 10,
            max_error_feedback: 2,
            max_denials: 3,
            temperature: None,
            stream: true,
        }
    }
}

/// What the user decides about an action the gates asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Once,
    ForConversation,
    Deny,
}

/// What happens during a turn, for the chat buffer and the log.
#[derive(Debug)]
pub enum TurnEvent {
    Delta(Delta),
    /// A tool call the LLM proposed and what the gates decided.
    Proposed {
        call: ToolCall,
        decision: &'static str,
        reasons: Vec<String>,
    },
    /// A tool's result (or error, or refusal) as sent back to the LLM; `took` is how long
    /// the tool ran (zero when it did not).
    ToolResult {
        call_id: String,
        name: String,
        ok: bool,
        content: String,
        took: std::time::Duration,
    },
    /// One request to the LLM ended: how long it took, the tokens it used, its error.
    Request {
        took: std::time::Duration,
        prompt_tokens: u64,
        completion_tokens: u64,
        error: Option<String>,
    },
    /// An error fed back to the LLM so it can correct itself.
    ErrorFedBack(String),
}

#[derive(Debug, Error)]
pub enum TurnError {
    #[error("stopped after {0} steps without an answer (the depth limit)")]
    DepthLimit(u32),
    #[error("cancelled")]
    Cancelled,
    #[error("the LLM failed: {0}")]
    Llm(LlmError),
    #[error("gave up after {0} refused actions: {1}")]
    TooManyDenials(u32, String),
}

/// A conversation: its messages and what the user approved for it.
#[derive(Debug, Default)]
pub struct Conversation {
    pub messages: Vec<Message>,
    pub context: Context,
}

/// The agent's equipment for a turn.
pub struct Equipment {
    pub client: ChatClient,
    pub store: Arc<Store>,
    pub tools: Arc<Registry>,
    pub gates: Pipeline,
}

impl Equipment {
    /// The gate context for `conversation`: the registry's tools, all read-only (the
    /// built-ins only read), plus what the user approved.
    fn context(&self, conversation: &Conversation) -> Context {
        let mut ctx = conversation.context.clone();
        for name in self.tools.names() {
            ctx.tools.insert(name.to_string());
            ctx.read_only_tools.insert(name.to_string());
        }
        ctx
    }
}

fn tool_action(call: &ToolCall) -> Action {
    Action::Tool {
        name: call.name.clone(),
        args: Sexp::from(sexp::json::from_json(&call.arguments)),
    }
}

/// Run one turn for `user_text`. `ask` is called when the gates ask the user; `emit`
/// receives every event. Returns the final answer.
pub async fn run_turn(
    eq: &Equipment,
    conversation: &mut Conversation,
    user_text: &str,
    cfg: &TurnConfig,
    cancel: &CancelToken,
    mut ask: impl FnMut(&Action, &[String]) -> Approval,
    mut emit: impl FnMut(TurnEvent),
) -> Result<String, TurnError> {
    conversation
        .messages
        .push(Message::User(user_text.to_string()));
    let mut errors_fed_back = 0u32;
    let mut denials = 0u32;
    let mut sexp_calls = 0u32;
    for _step in 0..cfg.max_depth {
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        let mut messages = vec![Message::System(cfg.system_prompt.clone())];
        messages.extend(conversation.messages.iter().cloned());
        let request = ChatRequest {
            messages,
            tools: eq.tools.function_schemas(),
            stream: cfg.stream,
            temperature: cfg.temperature,
            max_tokens: None,
        };
        let started = std::time::Instant::now();
        let result = eq
            .client
            .chat(&request, cancel, |d| emit(TurnEvent::Delta(d)))
            .await;
        let usage = result
            .as_ref()
            .ok()
            .and_then(|c| c.usage.as_ref())
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .unwrap_or((0, 0));
        emit(TurnEvent::Request {
            took: started.elapsed(),
            prompt_tokens: usage.0,
            completion_tokens: usage.1,
            error: result.as_ref().err().map(|e| e.to_string()),
        });
        let completion: Completion = match result {
            Ok(c) => c,
            Err(LlmError::Cancelled) => return Err(TurnError::Cancelled),
            Err(e) if errors_fed_back < cfg.max_error_feedback && feedable(&e) => {
                errors_fed_back += 1;
                let note = format!(
                    "(:loop-error \"{}\") Your last reply could not be used; reply again.",
                    e.to_string().replace('"', "'")
                );
                emit(TurnEvent::ErrorFedBack(e.to_string()));
                conversation.messages.push(Message::User(note));
                continue;
            }
            Err(e) => return Err(TurnError::Llm(e)),
        };
        // What the LLM proposes: native tool calls, or (for models without tool calling) an
        // action written as an S-expression plist.
        let native = !completion.tool_calls.is_empty();
        let proposals: Vec<(ToolCall, Action)> = if native {
            completion
                .tool_calls
                .iter()
                .map(|c| (c.clone(), tool_action(c)))
                .collect()
        } else {
            match sexp_action(&completion.text) {
                None => {
                    conversation.messages.push(Message::Assistant {
                        content: completion.text.clone(),
                        tool_calls: vec![],
                    });
                    return Ok(completion.text);
                }
                Some(Err(problem)) => {
                    conversation.messages.push(Message::Assistant {
                        content: completion.text.clone(),
                        tool_calls: vec![],
                    });
                    if errors_fed_back >= cfg.max_error_feedback {
                        return Err(TurnError::Llm(LlmError::Malformed(problem)));
                    }
                    errors_fed_back += 1;
                    emit(TurnEvent::ErrorFedBack(problem.clone()));
                    conversation.messages.push(Message::User(format!(
                        "(:loop-error \"{}\") Write the action again as one plist.",
                        problem.replace('"', "'")
                    )));
                    continue;
                }
                Some(Ok(action)) => {
                    sexp_calls += 1;
                    vec![(sexp_call(&action, sexp_calls), action)]
                }
            }
        };
        conversation.messages.push(Message::Assistant {
            content: completion.text.clone(),
            tool_calls: if native {
                completion.tool_calls.clone()
            } else {
                vec![]
            },
        });
        let ctx = eq.context(conversation);
        for (call, action) in &proposals {
            let verdict = eq.gates.decide(action.clone(), &ctx);
            let (decision, reasons, run) = match verdict.outcome {
                Outcome::Allow(_) => ("allow", vec![], true),
                Outcome::Ask { action, reasons } => match ask(&action, &reasons) {
                    Approval::Once => ("ask: approved", reasons, true),
                    Approval::ForConversation => {
                        conversation
                            .context
                            .approved
                            .insert(gates::action_kind(&action));
                        ("ask: approved for the conversation", reasons, true)
                    }
                    Approval::Deny => ("ask: denied", reasons, false),
                },
                Outcome::Deny { reasons } => ("deny", reasons, false),
            };
            emit(TurnEvent::Proposed {
                call: call.clone(),
                decision,
                reasons: reasons.clone(),
            });
            let started = std::time::Instant::now();
            let (ok, content) = if run {
                match action {
                    Action::Tool { .. } => run_tool(eq, call).await,
                    // Only a policy that allows Emacs actions gets here; the actuator is not
                    // connected to chat turns yet, so say so instead of pretending.
                    Action::Emacs(_) => (
                        false,
                        "(:tool-error \"Emacs actions cannot run from this conversation yet\")"
                            .to_string(),
                    ),
                }
            } else {
                denials += 1;
                if denials > cfg.max_denials {
                    return Err(TurnError::TooManyDenials(
                        cfg.max_denials,
                        reasons.join("; "),
                    ));
                }
                (false, format!("denied: {}", reasons.join("; ")))
            };
            emit(TurnEvent::ToolResult {
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
            if native {
                conversation.messages.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content,
                });
            } else {
                let result = Stimulus {
                    sensor: Sensor::ToolResult {
                        call: call.id.clone(),
                        ok,
                        content,
                    },
                    session: None,
                    depth: 0,
                };
                conversation
                    .messages
                    .push(Message::User(sexp::print(result.to_sexp().value())));
            }
        }
    }
    Err(TurnError::DepthLimit(cfg.max_depth))
}

/// An action the LLM wrote as a plist (optionally in a code fence), if its reply is one:
/// `None` for prose, an error for a plist that does not read or is not an action.
fn sexp_action(text: &str) -> Option<Result<Action, String>> {
    let mut t = text.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '-');
        t = rest.trim().trim_end_matches("```").trim();
    }
    if !t.starts_with("(:type") {
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
        Action::Emacs(_) => (
            gates::action_kind(action),
            sexp::json::to_json(action.to_sexp().value()),
        ),
    };
    ToolCall {
        id: format!("sexp-{n}"),
        name,
        arguments,
    }
}

/// Errors of the LLM's own making, worth telling it about (as opposed to a dead server).
fn feedable(e: &LlmError) -> bool {
    matches!(
        e,
        LlmError::InvalidToolArguments { .. }
            | LlmError::InvalidJson { .. }
            | LlmError::Malformed(..)
            | LlmError::Provider { .. }
    ) || matches!(e, LlmError::Http { status, .. } if *status == 500 || *status == 400)
}

/// Run a tool on a blocking worker; a failure or panic is a result the LLM sees.
async fn run_tool(eq: &Equipment, call: &ToolCall) -> (bool, String) {
    let tools = eq.tools.clone();
    let store = eq.store.clone();
    let name = call.name.clone();
    let args = call.arguments.clone();
    match tokio::task::spawn_blocking(move || tools.call(&store, &name, &args)).await {
        Ok(Ok(text)) => (true, text),
        Ok(Err(e)) => (
            false,
            format!("(:tool-error \"{}\")", e.to_string().replace('"', "'")),
        ),
        Err(_) => (
            false,
            "(:tool-error \"the tool failed unexpectedly\")".to_string(),
        ),
    }
}
