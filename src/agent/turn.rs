//! One turn of a conversation: think → decide → act, until the LLM answers in prose.
//!
//! The LLM sees the conversation and the tool belt; each tool call it proposes becomes an
//! [`Action`], passes the [gates](crate::gates), runs (on a blocking worker: tools read the
//! store) or is refused, and its result goes back to the LLM as the next step. Bounded:
//! `max_depth` steps, errors fed back to the LLM at most `max_error_feedback` times,
//! refusals at most `max_denials` times; then the turn ends with a clear error. Nothing here
//! panics the loop: a panicking tool is a tool error.

use super::message::{Action, EmacsAction, Sensor, Stimulus};
use crate::agent::semantic::{self, Semantic};
use crate::context::privacy::Privacy;
use crate::gates::audit::AuditLog;
use crate::gates::budget;
use crate::gates::{self, Context, Outcome, Pipeline};
use crate::llm::cascade::{Cascade, CascadeEvent};
use crate::llm::completion::{Completion, Delta, ToolCall};
use crate::llm::error::LlmError;
use crate::llm::http::{CancelToken, ChatClient, ChatRequest, Message};
use crate::sexp::{self, Sexp, Value};
use crate::store::Store;
use crate::tools::emacs::{self as emacs_tools, ElispTool};
use crate::tools::Notes;
use crate::tools::Registry;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use thiserror::Error;

/// Added to the system prompt when tools are offered.
const TOOLS_NOTE: &str = " Use the tools to look things up before you answer.";

/// Added to the system prompt when no tools are offered (a small local model; the tool
/// rounds are used up): the answer must come from what the request shows.
const NO_TOOLS_NOTE: &str = " Answer from the notes below: name the headlines that answer \
                              the question, with their dates.";

/// Added to the system prompt when the edit tools are offered.
const EDITING_NOTE: &str = " To change the notes, call the edit tools with node ids from \
                            the tools or the context below; the user approves each edit.";

#[derive(Clone, Debug)]
pub struct TurnConfig {
    pub system_prompt: String,
    pub max_depth: u32,
    pub max_error_feedback: u32,
    pub max_denials: u32,
    pub temperature: Option<f64>,
    pub stream: bool,
    /// The node the user was on when they invoked the agent (shown in full each step).
    pub focus: Option<String>,
    /// Notes related to the focus or the question by meaning, best first, with scores.
    pub related: Vec<(String, f32)>,
    /// Tasks closed on or after this date (YYYY-MM-DD) are shown as recently completed.
    pub done_since: Option<String>,
    /// Today as the user's calendar has it ("2026-11-23 Mon"), told to the model.
    pub today: Option<String>,
    /// Open tasks scheduled or due before this date (YYYY-MM-DD) are shown.
    pub due_before: Option<String>,
    /// The most tokens the notes in the system prompt may take (estimated).
    pub context_budget: usize,
    /// The focus is the node the last tool was about, not the user's.
    pub focus_from_tool: bool,
    /// Consensus mode: ask this many backends of the cascade in parallel and take the
    /// majority's proposal (0 or 1: off, the cascade as usual).
    pub consensus: usize,
    /// Notes at least this similar to the question are shown as related (when the
    /// equipment has semantic search and `related` is empty).
    pub related_threshold: f32,
    /// After this many steps with tool calls, the next request offers no tools, so the model
    /// must answer (small local models otherwise call tools until the depth limit, and some
    /// servers' tool templates refuse a prose answer while tools are offered). `None`: no
    /// bound but the depth limit.
    pub tool_rounds: Option<u32>,
    /// This step offers no tools (set by the turn once `tool_rounds` are used up).
    pub tools_off: bool,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            system_prompt: "You are org-agent, an assistant inside Emacs that works in the \
                            user's Org notes. Answer briefly, in Org markup."
                .into(),
            max_depth: 10,
            max_error_feedback: 2,
            max_denials: 3,
            temperature: None,
            stream: true,
            focus: None,
            related: Vec::new(),
            done_since: None,
            today: None,
            due_before: None,
            context_budget: crate::context::DEFAULT_BUDGET_TOKENS,
            related_threshold: 0.75,
            consensus: 0,
            focus_from_tool: false,
            tool_rounds: None,
            tools_off: false,
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
    /// A backend failed and the next one is tried; `streamed`: the text streamed so far
    /// in this step came from the failed backend and is void.
    Failover {
        backend: String,
        error: String,
        streamed: bool,
        next: Option<String>,
    },
    /// Several backends were asked the same (consensus mode): how many agreed, and what
    /// each proposed.
    Consensus {
        agreed: usize,
        answered: usize,
        tie: bool,
        proposals: Vec<String>,
    },
    /// The same backend is asked again after the wait it asked for.
    Retry {
        backend: String,
        after: std::time::Duration,
        error: String,
    },
    /// One request to the LLM ended: who answered, how long it took, the tokens it used, its
    /// error.
    Request {
        backend: Option<String>,
        took: std::time::Duration,
        prompt_tokens: u64,
        completion_tokens: u64,
        error: Option<String>,
    },
    /// An error fed back to the LLM so it can correct itself.
    ErrorFedBack(String),
    /// Something went wrong beside the turn (the audit log could not be written).
    Warning(String),
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
    #[error("over budget, nothing was sent: {0}")]
    OverBudget(String),
}

/// A conversation: its messages and what the user approved for it.
#[derive(Debug, Default)]
pub struct Conversation {
    pub messages: Vec<Message>,
    pub context: Context,
    /// Tokens this conversation's requests used (for its budget).
    pub tokens_used: u64,
}

/// A future the [`Operator`] hands back.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The user and Emacs, as the loop sees them: both live on the main thread, so the loop
/// asks and waits (without blocking a worker).
pub trait Operator: Send + Sync {
    /// Ask the user about `action` (the LLM's `call`), which the gates asked about for
    /// `reasons`.
    fn ask(&self, call: &ToolCall, action: &Action, reasons: &[String]) -> BoxFuture<Approval>;
    /// Run `action` through the Elisp actuator: its result plist, or why it did not run.
    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>>;
}

/// No user and no Emacs (scripts, tests): asking means deny, Emacs actions do not run.
pub struct Unattended;

impl Operator for Unattended {
    fn ask(&self, _: &ToolCall, _: &Action, _: &[String]) -> BoxFuture<Approval> {
        Box::pin(async { Approval::Deny })
    }

    fn actuate(&self, _: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        Box::pin(async { Err("there is no Emacs to run this action".to_string()) })
    }
}

/// The agent's equipment for a turn.
pub struct Equipment {
    /// The backends to ask, in order.
    pub llm: Cascade,
    pub store: Arc<Store>,
    /// What the LLM must never see (context, tool results, edit targets).
    pub privacy: Arc<Privacy>,
    pub tools: Arc<Registry>,
    pub gates: Pipeline,
    pub operator: Arc<dyn Operator>,
    /// Offer the edit tools (the actuator's vocabulary); needs an operator that actuates.
    pub edit_tools: bool,
    /// Tools defined in Elisp, run by the operator.
    pub elisp_tools: Vec<ElispTool>,
    /// Where every gate decision and user answer is appended.
    pub audit: Option<AuditLog>,
    /// Semantic search over the notes (the `semantic_search` tool, related notes in the
    /// context), when an embedding server is configured.
    pub semantic: Option<Semantic>,
    /// Token and cost limits, checked before every request.
    pub budget: Option<Budget>,
}

/// The budget gate of a turn.
pub struct Budget {
    pub limits: budget::Limits,
    pub ledger: Arc<budget::Ledger>,
    /// Where a request over budget goes instead (a cheaper tier); `None`: it is refused.
    pub fallback: Option<Cascade>,
}

impl Equipment {
    /// The built-in tools under the default policy, with no Emacs and no audit log.
    pub fn new(client: ChatClient, store: Arc<Store>) -> Equipment {
        Equipment {
            llm: Cascade::single(client),
            store,
            privacy: Arc::new(Privacy::default()),
            tools: Arc::new(Registry::with_builtins()),
            gates: Pipeline::default_policy(),
            operator: Arc::new(Unattended),
            edit_tools: false,
            elisp_tools: Vec::new(),
            audit: None,
            semantic: None,
            budget: None,
        }
    }

    /// The Elisp tool called `name`, unless a built-in or edit tool has that name.
    fn elisp_tool(&self, name: &str) -> Option<&ElispTool> {
        if self.tools.get(name).is_some()
            || (self.edit_tools && emacs_tools::is_edit(name))
            || self.semantic_tool(name)
        {
            return None;
        }
        self.elisp_tools.iter().find(|t| t.name == name)
    }

    /// Whether `name` is the semantic search tool and it is available.
    fn semantic_tool(&self, name: &str) -> bool {
        self.semantic.is_some() && name == semantic::SEMANTIC_TOOL
    }

    /// Every tool's declaration, for the request.
    fn schemas(&self) -> Vec<serde_json::Value> {
        let mut all = self.tools.function_schemas();
        if self.semantic.is_some() {
            all.push(semantic::tool_declaration());
        }
        if self.edit_tools {
            all.extend(emacs_tools::edit_schemas());
        }
        for t in &self.elisp_tools {
            if self.elisp_tool(&t.name).is_some() {
                all.push(t.function_schema());
            }
        }
        all
    }

    /// The gate context for `conversation`: the registry's tools, all read-only (the
    /// built-ins only read), Elisp tools (read-only unless they ask to confirm), plus what
    /// the user approved.
    fn context(&self, conversation: &Conversation) -> Context {
        let mut ctx = conversation.context.clone();
        for name in self.tools.names() {
            ctx.tools.insert(name.to_string());
            ctx.read_only_tools.insert(name.to_string());
        }
        if self.semantic.is_some() {
            ctx.tools.insert(semantic::SEMANTIC_TOOL.to_string());
            ctx.read_only_tools
                .insert(semantic::SEMANTIC_TOOL.to_string());
        }
        for t in &self.elisp_tools {
            if self.elisp_tool(&t.name).is_some() {
                ctx.tools.insert(t.name.clone());
                if !t.confirm {
                    ctx.read_only_tools.insert(t.name.clone());
                }
            }
        }
        ctx
    }

    /// The action the LLM's `call` stands for, or why its arguments are wrong. An edit of a
    /// private node (or in a private file) is refused here, before anyone is asked: the LLM
    /// should not even learn what is there.
    fn action(&self, call: &ToolCall) -> Result<Action, String> {
        if self.edit_tools {
            if let Some(edit) = emacs_tools::edit_action(&call.name, &call.arguments) {
                let edit = edit?;
                self.may_touch(&edit)?;
                return Ok(Action::Emacs(edit));
            }
        }
        Ok(tool_action(call))
    }

    /// Whether an Emacs action may run at all: only when edits are offered, and never on a
    /// private node or in a private file. Every way an action arrives (a native tool call, an
    /// action plist) passes here. A file must be one of the notes, named as the store names
    /// it (absolute, expanded), so a pattern cannot be dodged with `~`, `..` or a relative
    /// path, and a file private by `#+FILETAGS` is caught too.
    fn may_touch(&self, action: &EmacsAction) -> Result<(), String> {
        let (id, file) = action.target();
        if id.is_none() && file.is_none() {
            // Messages and tool calls: not about the notes.
            return Ok(());
        }
        if !self.edit_tools {
            return Err("editing the notes is not offered in this conversation".to_string());
        }
        let notes = self.notes();
        if let Some(id) = id {
            notes.node(id)?;
        }
        if let Some(file) = file {
            let state = self.store.state();
            let Some(doc) = state.files.get(file) else {
                return Err(format!(
                    "{file} is not one of the notes (give the absolute file name list_files                      shows)"
                ));
            };
            let file_node = crate::store::NodeRef {
                doc: doc.clone(),
                index: 0,
            };
            if self.privacy.hides(&file_node) {
                return Err(format!(
                    "{file} is private: the user keeps it out of the agent's view"
                ));
            }
        }
        Ok(())
    }

    /// The notes as the LLM may see them.
    pub fn notes(&self) -> Notes<'_> {
        Notes {
            store: &self.store,
            privacy: &self.privacy,
        }
    }

    fn audit(
        &self,
        emit: &mut impl FnMut(TurnEvent),
        write: impl FnOnce(&AuditLog, i64) -> std::io::Result<()>,
    ) {
        if let Some(log) = &self.audit {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            if let Err(e) = write(log, now) {
                emit(TurnEvent::Warning(format!(
                    "could not write the audit log {}: {e}",
                    log.path().display()
                )));
            }
        }
    }
}

fn tool_action(call: &ToolCall) -> Action {
    Action::Tool {
        name: call.name.clone(),
        args: Sexp::from(sexp::json::from_json(&call.arguments)),
    }
}

/// The request of the next step of `conversation`: the system prompt with the context as the
/// store is now, the conversation, every tool's declaration. What
/// `org-agent-context-preview` shows is exactly this.
pub fn step_request(eq: &Equipment, conversation: &Conversation, cfg: &TurnConfig) -> ChatRequest {
    let mut system = cfg.system_prompt.clone();
    if cfg.tools_off {
        system.push_str(NO_TOOLS_NOTE);
    } else {
        system.push_str(TOOLS_NOTE);
        if eq.edit_tools {
            system.push_str(EDITING_NOTE);
        }
    }
    let context = crate::context::assemble(
        &eq.notes(),
        &crate::context::ContextSpec {
            focus: cfg.focus.as_deref(),
            focus_is_users: !cfg.focus_from_tool,
            related: &cfg.related,
            done_since: cfg.done_since.as_deref(),
            today: cfg.today.as_deref(),
            due_before: cfg.due_before.as_deref(),
            budget_tokens: cfg.context_budget,
        },
    );
    if !context.is_empty() {
        system.push_str("\n\n");
        system.push_str(&context);
    }
    let mut messages = vec![Message::System(system)];
    messages.extend(conversation.messages.iter().cloned());
    ChatRequest {
        messages,
        tools: if cfg.tools_off {
            Vec::new()
        } else {
            eq.schemas()
        },
        stream: cfg.stream,
        temperature: cfg.temperature,
        max_tokens: None,
    }
}

/// The estimated prompt tokens of `request`: its messages and tool schemas.
fn estimate_request(request: &ChatRequest) -> u64 {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| match m {
            Message::System(t) | Message::User(t) => t.len(),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        })
        .sum();
    let tools: usize = request.tools.iter().map(|t| t.to_string().len()).sum();
    (messages + tools).div_ceil(4) as u64
}

/// Most related notes shown in the context.
const MAX_RELATED: usize = 5;

/// The notes closest in meaning to `text` (and the focus node's title), above the
/// threshold, excluding the focus itself; empty without semantic search.
pub async fn related_notes(
    eq: &Equipment,
    text: &str,
    cfg: &TurnConfig,
    cancel: &CancelToken,
) -> Result<Vec<(String, f32)>, LlmError> {
    let Some(semantic) = &eq.semantic else {
        return Ok(Vec::new());
    };
    let focus = cfg.focus.as_deref().and_then(|id| eq.notes().node(id).ok());
    let query = match &focus {
        Some(r) => format!("{}\n{text}", r.node().content.title),
        None => text.to_owned(),
    };
    let mut hits = semantic
        .search(
            &eq.store,
            &eq.privacy,
            &query,
            MAX_RELATED + 1,
            cfg.related_threshold,
            cancel,
        )
        .await?;
    hits.retain(|(id, _)| cfg.focus.as_deref() != Some(id.as_str()));
    hits.truncate(MAX_RELATED);
    Ok(hits)
}

/// Run one turn for `user_text`. `ask` is called when the gates ask the user; `emit`
/// receives every event. Returns the final answer.
pub async fn run_turn(
    eq: &Equipment,
    conversation: &mut Conversation,
    user_text: &str,
    cfg: &TurnConfig,
    cancel: &CancelToken,
    mut emit: impl FnMut(TurnEvent),
) -> Result<String, TurnError> {
    conversation
        .messages
        .push(Message::User(user_text.to_string()));
    // Notes related by meaning are looked up once a turn, for the question as asked.
    let with_related;
    let cfg = if cfg.related.is_empty() && eq.semantic.is_some() {
        let related = match related_notes(eq, user_text, cfg, cancel).await {
            Ok(r) => r,
            Err(LlmError::Cancelled) => return Err(TurnError::Cancelled),
            Err(e) => {
                emit(TurnEvent::Warning(format!(
                    "no related notes: semantic search failed: {e}"
                )));
                Vec::new()
            }
        };
        with_related = TurnConfig {
            related,
            ..cfg.clone()
        };
        &with_related
    } else {
        cfg
    };
    let mut tool_focus: Option<String> = None;
    let mut errors_fed_back = 0u32;
    let mut denials = 0u32;
    let mut sexp_calls = 0u32;
    // Built-in tool calls made since the last edit: small models repeat a call word for
    // word; its answer would be the same, so they are told so instead of burning a step.
    let mut asked_before: std::collections::HashSet<(String, String)> = Default::default();
    // Emacs actions already settled in this turn (made, or denied by the user): a model that
    // repeats one must not advance a repeating task again or ask the user twice, even when
    // the user approved that kind of edit for the conversation.
    let mut settled_edits: std::collections::HashMap<String, &'static str> = Default::default();
    let mut tool_rounds = 0u32;
    for _step in 0..cfg.max_depth {
        if cancel.is_cancelled() {
            return Err(TurnError::Cancelled);
        }
        // Without a node the user was on, the node the last tool was about is the focus.
        let tools_off = cfg.tool_rounds.is_some_and(|n| tool_rounds >= n);
        let adjusted;
        let step_cfg = match (&cfg.focus, &tool_focus) {
            (None, Some(id)) => {
                adjusted = TurnConfig {
                    focus: Some(id.clone()),
                    focus_from_tool: true,
                    tools_off,
                    ..cfg.clone()
                };
                &adjusted
            }
            _ if tools_off => {
                adjusted = TurnConfig {
                    tools_off,
                    ..cfg.clone()
                };
                &adjusted
            }
            _ => cfg,
        };
        let request = step_request(eq, conversation, step_cfg);
        // In consensus mode every voter gets the request.
        let copies = cfg.consensus.clamp(1, eq.llm.members().len().max(1)) as u64;
        let estimate = estimate_request(&request) * copies;
        let day = budget::today();
        let llm = match &eq.budget {
            None => &eq.llm,
            Some(b) => {
                let est_cost = budget::cost(eq.llm.first_price(), estimate, 0);
                match budget::over(
                    &b.limits,
                    conversation.tokens_used,
                    b.ledger.used(&day),
                    estimate,
                    est_cost,
                ) {
                    None => &eq.llm,
                    Some(reason) => match &b.fallback {
                        Some(cheaper) => {
                            emit(TurnEvent::Warning(format!(
                                "{reason}; asking the cheaper tier instead"
                            )));
                            cheaper
                        }
                        None => return Err(TurnError::OverBudget(reason)),
                    },
                }
            }
        };
        let started = std::time::Instant::now();
        let voters = cfg.consensus.min(llm.members().len());
        let mut tie = None;
        let result = if voters > 1 {
            match llm.consensus(&request, voters, cancel).await {
                Ok(c) => {
                    emit(TurnEvent::Consensus {
                        agreed: c.agreed,
                        answered: c.answered,
                        tie: c.tie,
                        proposals: c.proposals.clone(),
                    });
                    if c.tie {
                        tie = Some(format!(
                            "the backends disagreed ({})",
                            c.proposals.join("; ")
                        ));
                    }
                    // The winner's answer, shown as if it had streamed.
                    if !c.answer.completion.reasoning.is_empty() {
                        emit(TurnEvent::Delta(Delta::Reasoning(
                            c.answer.completion.reasoning.clone(),
                        )));
                    }
                    if !c.answer.completion.text.is_empty() {
                        emit(TurnEvent::Delta(Delta::Text(
                            c.answer.completion.text.clone(),
                        )));
                    }
                    Ok(c.answer)
                }
                Err(e) => Err(e),
            }
        } else {
            llm.chat(&request, cancel, |e| match e {
                CascadeEvent::Delta(d) => emit(TurnEvent::Delta(d)),
                CascadeEvent::Retry {
                    backend,
                    after,
                    error,
                } => emit(TurnEvent::Retry {
                    backend,
                    after,
                    error: error.to_string(),
                }),
                CascadeEvent::Failover {
                    backend,
                    error,
                    streamed,
                    next,
                } => emit(TurnEvent::Failover {
                    backend,
                    error: error.to_string(),
                    streamed,
                    next,
                }),
            })
            .await
        };
        let usage = result
            .as_ref()
            .ok()
            .and_then(|a| a.completion.usage.as_ref())
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .unwrap_or((0, 0));
        if let Ok(a) = &result {
            // What the provider counted, else our estimate of prompt and answer.
            let (prompt, completion) = match a.completion.usage {
                Some(u) => (u.prompt_tokens, u.completion_tokens),
                None => (
                    estimate,
                    crate::context::estimate_tokens(&a.completion.text) as u64
                        + a.completion
                            .tool_calls
                            .iter()
                            .map(|c| {
                                crate::context::estimate_tokens(&c.arguments.to_string()) as u64
                            })
                            .sum::<u64>(),
                ),
            };
            // In consensus mode every voter was asked: count the winner's use once per voter
            // (their own figures did not come back), at the winner's price.
            let (prompt, completion) = (prompt * copies, completion * copies);
            conversation.tokens_used += prompt + completion;
            if let Some(b) = &eq.budget {
                let price = llm.price_of(&a.backend);
                b.ledger.add(
                    &day,
                    prompt + completion,
                    budget::cost(price, prompt, completion),
                );
            }
        }
        emit(TurnEvent::Request {
            backend: result.as_ref().ok().map(|a| a.backend.clone()),
            took: started.elapsed(),
            prompt_tokens: usage.0,
            completion_tokens: usage.1,
            error: result.as_ref().err().map(|e| e.to_string()),
        });
        let completion: Completion = match result {
            Ok(a) => a.completion,
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
        let proposals: Vec<(ToolCall, Result<Action, String>)> = if native {
            completion
                .tool_calls
                .iter()
                .map(|c| (c.clone(), eq.action(c)))
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
                        "(:loop-error \"{}\") Answer in prose, or write the action again as \
                         one plist.",
                        problem.replace('"', "'")
                    )));
                    continue;
                }
                Some(Ok(action)) => {
                    sexp_calls += 1;
                    let checked = match &action {
                        Action::Emacs(e) => eq.may_touch(e).map(|()| action.clone()),
                        Action::Tool { .. } => Ok(action.clone()),
                    };
                    vec![(sexp_call(&action, sexp_calls), checked)]
                }
            }
        };
        tool_rounds += 1;
        conversation.messages.push(Message::Assistant {
            content: completion.text.clone(),
            tool_calls: if native {
                completion.tool_calls.clone()
            } else {
                vec![]
            },
        });
        let ctx = eq.context(conversation);
        for (call, proposed) in &proposals {
            let action = match proposed {
                Ok(a) => a.clone(),
                Err(problem) => {
                    // Wrong arguments: nothing to gate or run; the LLM sees why.
                    refuse_unrun(&mut emit, conversation, native, call, "invalid", problem);
                    continue;
                }
            };
            let edit_key = match &action {
                Action::Emacs(_) => Some(sexp::print(action.to_sexp().value())),
                Action::Tool { .. } => None,
            };
            if let Some(before) = edit_key.as_ref().and_then(|k| settled_edits.get(k)) {
                let why = format!(
                    "{} with these arguments {before} in this turn; its result is above: \
                     do not repeat it, go on or answer",
                    call.name
                );
                refuse_unrun(&mut emit, conversation, native, call, "repeated", &why);
                continue;
            }
            let mut verdict = eq.gates.decide(action.clone(), &ctx);
            // A tie between backends is the user's to break: what the gates would allow
            // is asked instead.
            if let (Some(why), Outcome::Allow(a)) = (&tie, &verdict.outcome) {
                verdict.outcome = Outcome::Ask {
                    action: a.clone(),
                    reasons: vec![why.clone()],
                };
            }
            eq.audit(&mut emit, |log, now| log.append(&action, &verdict, now));
            let (decision, reasons, approved) = match verdict.outcome {
                Outcome::Allow(a) => ("allow", vec![], Some(a)),
                Outcome::Ask { action, reasons } => {
                    let answer = tokio::select! {
                        a = eq.operator.ask(call, &action, &reasons) => a,
                        _ = cancel.cancelled() => return Err(TurnError::Cancelled),
                    };
                    let label = match answer {
                        Approval::Once => "approved once",
                        Approval::ForConversation => "approved for the conversation",
                        Approval::Deny => "denied",
                    };
                    eq.audit(&mut emit, |log, now| log.append_answer(&action, label, now));
                    match answer {
                        Approval::Once => ("ask: approved", reasons, Some(action)),
                        Approval::ForConversation => {
                            conversation
                                .context
                                .approved
                                .insert(gates::action_kind(&action));
                            ("ask: approved for the conversation", reasons, Some(action))
                        }
                        Approval::Deny => (
                            "ask: denied",
                            vec![format!("the user denied it ({})", reasons.join("; "))],
                            None,
                        ),
                    }
                }
                Outcome::Deny { reasons } => ("deny", reasons, None),
            };
            emit(TurnEvent::Proposed {
                call: call.clone(),
                decision,
                reasons: reasons.clone(),
            });
            let started = std::time::Instant::now();
            let run = approved.is_some();
            let (ok, content) = if let Some(action) = approved {
                let outcome = match &action {
                    Action::Tool { name, args } if eq.elisp_tool(name).is_some() => {
                        actuate(
                            eq,
                            &EmacsAction::CallTool {
                                name: name.clone(),
                                args: Sexp::from(sexp::clone_value(args.value())),
                            },
                            cancel,
                        )
                        .await
                    }
                    Action::Tool { name, args } => {
                        let args = sexp::json::to_json(args.value());
                        if asked_before.insert((name.clone(), args.to_string())) {
                            if eq.semantic_tool(name) {
                                Some(run_semantic(eq, &args, cancel).await)
                            } else {
                                Some(run_tool(eq, name, args).await)
                            }
                        } else {
                            Some((
                                false,
                                tool_error(&format!(
                                    "{name} was already called with these arguments in this \
                                     turn and its result is above; use it, or answer"
                                )),
                            ))
                        }
                    }
                    Action::Emacs(e) => {
                        asked_before.clear();
                        actuate(eq, e, cancel).await
                    }
                };
                outcome.ok_or(TurnError::Cancelled)?
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
            if let Some(key) = edit_key {
                if ok {
                    settled_edits.insert(key, "was already made");
                } else if decision == "ask: denied" {
                    settled_edits.insert(key, "was already denied by the user");
                }
            }
            if ok {
                if let Some(id) = call.arguments.get("id").and_then(|v| v.as_str()) {
                    if eq.notes().node(id).is_ok() {
                        tool_focus = Some(id.to_owned());
                    }
                }
            }
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
            push_result(conversation, native, call, ok, content);
        }
    }
    Err(TurnError::DepthLimit(cfg.max_depth))
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
        Action::Emacs(_) => (
            gates::action_kind(action),
            sexp::json::to_json(action.to_sexp().value()),
        ),
    };
    ToolCall {
        id: format!("sexp-{n}"),
        name,
        arguments,
        signature: None,
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

/// Answer `call` with an error the LLM sees, without gating or running it (`decision` says
/// why: invalid arguments, a repeat).
fn refuse_unrun(
    emit: &mut impl FnMut(TurnEvent),
    conversation: &mut Conversation,
    native: bool,
    call: &ToolCall,
    decision: &'static str,
    why: &str,
) {
    emit(TurnEvent::Proposed {
        call: call.clone(),
        decision,
        reasons: vec![why.to_owned()],
    });
    let content = tool_error(why);
    emit(TurnEvent::ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        ok: false,
        content: content.clone(),
        took: std::time::Duration::ZERO,
    });
    push_result(conversation, native, call, false, content);
}

/// Add a tool's result to the conversation: as a `tool` message for native calls, as a
/// `:tool-result` stimulus plist for actions the LLM wrote as S-expressions.
fn push_result(
    conversation: &mut Conversation,
    native: bool,
    call: &ToolCall,
    ok: bool,
    content: String,
) {
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

/// Run the semantic search tool: the query is embedded over HTTP (awaited, never blocking
/// a worker), the hits listed like the other tools list headlines.
async fn run_semantic(
    eq: &Equipment,
    args: &serde_json::Value,
    cancel: &CancelToken,
) -> (bool, String) {
    let Some(semantic) = &eq.semantic else {
        return (false, tool_error("semantic search is not set up"));
    };
    let text = args["text"].as_str().unwrap_or_default().trim();
    if text.is_empty() {
        return (false, tool_error("text must not be empty"));
    }
    let k = args["limit"].as_i64().unwrap_or(10).clamp(1, 50) as usize;
    match semantic
        .search(&eq.store, &eq.privacy, text, k, 0.0, cancel)
        .await
    {
        Ok(hits) if hits.is_empty() => (true, "No embedded headlines are close to it.".into()),
        Ok(hits) => {
            let mut out = format!("{} headlines closest in meaning:\n", hits.len());
            for (id, score) in hits {
                if let Some(r) = eq.store.node(&id) {
                    out.push_str(&crate::tools::builtin::summary(&r));
                    out.push_str(&format!(" (similarity {score:.2})\n"));
                }
            }
            (true, out)
        }
        Err(e) => (false, tool_error(&format!("semantic search failed: {e}"))),
    }
}

/// Run a built-in tool on a blocking worker; a failure or panic is a result the LLM sees.
async fn run_tool(eq: &Equipment, name: &str, args: serde_json::Value) -> (bool, String) {
    let tools = eq.tools.clone();
    let store = eq.store.clone();
    let privacy = eq.privacy.clone();
    let name = name.to_string();
    let run = move || {
        let notes = Notes {
            store: &store,
            privacy: &privacy,
        };
        tools.call(&notes, &name, &args)
    };
    match tokio::task::spawn_blocking(run).await {
        Ok(Ok(text)) => (true, text),
        Ok(Err(e)) => (false, tool_error(&e.to_string())),
        Err(_) => (false, tool_error("the tool failed unexpectedly")),
    }
}

/// Run an Emacs action through the operator: `(ok, the result plist as text)`, or `None`
/// when the turn was cancelled while it waited.
async fn actuate(
    eq: &Equipment,
    action: &EmacsAction,
    cancel: &CancelToken,
) -> Option<(bool, String)> {
    let result = tokio::select! {
        r = eq.operator.actuate(action) => r,
        _ = cancel.cancelled() => return None,
    };
    Some(match result {
        Ok(plist) => {
            let ok = matches!(sexp::plist_get(plist.value(), "status"), Some(Value::Keyword(k)) if &**k == "ok");
            (ok, sexp::print(plist.value()))
        }
        Err(message) => (false, tool_error(&message)),
    })
}

fn tool_error(message: &str) -> String {
    format!("(:tool-error \"{}\")", message.replace('"', "'"))
}
