//! One turn of a conversation as a state machine: think → decide → act, until the LLM
//! answers in prose.
//!
//! A [`Turn`] holds the turn's state (the conversation, the depth reached, the errors fed
//! back and the refusals so far, what was already asked or edited); each step is a function
//! of its own: [`think`] builds the request and asks the cascade (past the budget gate),
//! [`decide`] reads the proposals and passes each through the gates (audited, asking the user
//! when they say so), [`act`] runs what was approved — worker tools on blocking workers,
//! Emacs actions and Elisp tools through the [`Operator`](crate::agent::operator::Operator) —
//! and each result goes back to the LLM as the next step's input. Bounded: `max_depth` steps
//! (counted from the stimulus's depth), errors fed back at most `max_error_feedback` times,
//! refusals at most `max_denials` times; then the turn ends with a clear error. Nothing here
//! panics the loop: a panicking tool is a tool error.
//!
//! What attaches to a turn from outside — prompt fragments, tool sets, gate rules — lives in
//! the [`Equipment`].

mod act;
mod decide;
pub mod store_first;
mod think;

use crate::action::{Sensor, Stimulus};
use crate::agent::equipment::Equipment;
use crate::context::spotlight::{Source, Spotlight};
use crate::gates::Context;
use crate::llm::completion::{Delta, ToolCall};
use crate::llm::error::LlmError;
use crate::llm::http::{CancelToken, ChatRequest, Message};
use crate::sexp;
use crate::skills::prompt;
use std::collections::{HashMap, HashSet};
use thiserror::Error;

/// Most related notes shown in the context.
const MAX_RELATED: usize = 5;

#[derive(Clone, Debug)]
pub struct TurnConfig {
    pub max_depth: u32,
    /// The depth of the stimulus that started the turn: a chain of actions begun elsewhere
    /// goes on counting toward `max_depth` from there.
    pub start_depth: u32,
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
    /// Symbolic first: a question the store answers exactly (what is waiting, due, overdue…)
    /// is answered from the store and the model only phrases it
    /// ([`store_first`](store_first::answer_from_store)); for a small local model.
    pub store_first: bool,
    /// The user's inbox (`org-agent-inbox`) for the inbox scan; `None`: found in the notes.
    pub inbox: Option<String>,
    /// What the user added to the conversation's context, as the notes show it.
    pub added: Vec<crate::context::added::AddedItem>,
}

impl Default for TurnConfig {
    fn default() -> Self {
        TurnConfig {
            max_depth: 10,
            start_depth: 0,
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
            tool_rounds: None,
            store_first: false,
            inbox: None,
            added: Vec::new(),
        }
    }
}

/// What one answered request used and cost: the figures the budget counts and the chat shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    pub tokens: crate::llm::prices::Tokens,
    /// In USD; `None` when the backend's price is unknown.
    pub cost: Option<f64>,
    /// The provider did not count the tokens: they are estimated.
    pub estimated: bool,
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
    /// A backend failed in a way no other backend is asked about; the step ends with the
    /// error (fed back to the LLM, or the turn's).
    Failed {
        backend: String,
        error: String,
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
    /// One request to the LLM ended: who answered, how long it took, the tokens it used (as
    /// the provider counted them, 0 when it did not say), its error; what it used and cost
    /// as the budget counts it, when it was answered.
    Request {
        backend: Option<String>,
        took: std::time::Duration,
        prompt_tokens: u64,
        completion_tokens: u64,
        error: Option<String>,
        spent: Option<Spent>,
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
    /// The store could not answer what it was asked (a scan with nothing to work on).
    #[error("{0}")]
    Store(String),
}

/// A conversation: its messages and what the user approved for it.
#[derive(Debug, Default)]
pub struct Conversation {
    pub messages: Vec<Message>,
    pub context: Context,
    /// Tokens this conversation's requests used (for its budget).
    pub tokens_used: u64,
    /// The tool results among `messages` written as `:tool-result` plists (for a model
    /// without tool calling): each request prints them again with its own boundary.
    pub plist_results: Vec<PlistResult>,
}

impl Conversation {
    /// Drop the messages from index `len` on, and what refers to them.
    pub fn forget_from(&mut self, len: usize) {
        self.messages.truncate(len);
        self.plist_results.retain(|p| p.index < len);
    }
}

/// A tool result the LLM reads as a `:tool-result` plist: the message it is and its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct PlistResult {
    /// Its index in [`Conversation::messages`].
    pub index: usize,
    /// The tool (or action) whose result it is.
    pub tool: String,
    pub call: String,
    pub ok: bool,
    pub content: String,
    pub depth: u32,
}

impl PlistResult {
    /// The stimulus plist, its content as the LLM reads it (`content`).
    fn print(&self, content: String) -> String {
        let result = Stimulus {
            sensor: Sensor::ToolResult {
                call: self.call.clone(),
                ok: self.ok,
                content,
            },
            session: None,
            depth: self.depth,
        };
        sexp::print(result.to_sexp().value())
    }
}

/// Most boundaries drawn for one request before the texts that contain one lose it.
const MAX_BOUNDARY_DRAWS: usize = 4;

/// What changes from one step of a turn to the next in what the LLM is shown.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepView<'s> {
    /// Without a node the user was on, the node the last tool was about is the focus.
    pub tool_focus: Option<&'s str>,
    /// The tool rounds are used up: this step offers no tools.
    pub tools_off: bool,
}

/// The request of the next step of `conversation`: the system prompt (its fragments, then
/// what the tools offered allow, then the rule about data blocks) with the context as the
/// store is now, the conversation, every tool's declaration. What
/// `org-agent-context-preview` shows is exactly this, but for the boundary of the data
/// blocks, which each request draws afresh.
pub fn step_request(
    eq: &Equipment,
    conversation: &Conversation,
    cfg: &TurnConfig,
    step: StepView,
) -> ChatRequest {
    step_request_read(eq, conversation, cfg, step).0
}

/// [`step_request`], with where the untrusted notes its context shows come from.
pub fn step_request_read(
    eq: &Equipment,
    conversation: &Conversation,
    cfg: &TurnConfig,
    step: StepView,
) -> (ChatRequest, Vec<String>) {
    let mut draws = 0;
    loop {
        let spot = Spotlight::new();
        let built = spotlit_request(eq, conversation, cfg, step, &spot);
        draws += 1;
        // A text holding this very boundary (it cannot have known it: a leak, or chance)
        // has lost it already; a fresh boundary makes the request whole again.
        if !spot.collided() || draws >= MAX_BOUNDARY_DRAWS {
            return built;
        }
    }
}

/// The request of [`step_request`] with `spot`'s boundary around every text from the notes,
/// files and tools.
fn spotlit_request(
    eq: &Equipment,
    conversation: &Conversation,
    cfg: &TurnConfig,
    step: StepView,
    spot: &Spotlight,
) -> (ChatRequest, Vec<String>) {
    let mut system = prompt::join(&eq.prompts);
    // The tool-use conventions are the shipped agent skill's (skills/agent/SKILL.org).
    system.push_str(&prompt::agent().conventions(!step.tools_off, eq.edit_tools));
    // What comes after this changes from request to request (the boundary, the notes).
    let stable = system.len();
    system.push_str(&spot.rule());
    let focus = cfg.focus.as_deref().or(step.tool_focus);
    let context = crate::context::assemble_marked(
        &eq.notes,
        &crate::context::ContextSpec {
            focus,
            focus_is_users: cfg.focus.is_some() || step.tool_focus.is_none(),
            related: &cfg.related,
            done_since: cfg.done_since.as_deref(),
            today: cfg.today.as_deref(),
            due_before: cfg.due_before.as_deref(),
            budget_tokens: cfg.context_budget,
            // Ids are for calling tools; a model offered none would only spend tokens on them.
            brief: step.tools_off,
        },
        spot,
    );
    if !context.text.is_empty() {
        system.push_str("\n\n");
        system.push_str(&context.text);
    }
    let mut untrusted = context.untrusted;
    if !cfg.added.is_empty() {
        // The user chose these: they get a budget of their own, as large as the notes'.
        let added = crate::context::added::render(&cfg.added, spot, cfg.context_budget * 4);
        system.push_str("\n\n");
        system.push_str(&added);
        untrusted.extend(cfg.added.iter().filter_map(|i| i.untrusted.clone()));
    }
    let mut messages = vec![Message::System(system)];
    messages.extend(spotlit_messages(conversation, spot));
    let request = ChatRequest {
        messages,
        tools: if step.tools_off {
            Vec::new()
        } else {
            eq.schemas(&conversation.context)
        },
        stream: cfg.stream,
        temperature: cfg.temperature,
        max_tokens: None,
        cache_prefix: Some(stable),
        images: cfg.added.iter().filter_map(|i| i.image.clone()).collect(),
    };
    (request, untrusted)
}

/// The messages of `conversation` as the LLM reads them: every tool result in a block of
/// `spot`'s, labelled with its tool.
fn spotlit_messages(conversation: &Conversation, spot: &Spotlight) -> Vec<Message> {
    let mut tools: HashMap<&str, &str> = HashMap::new();
    let mut plists = conversation.plist_results.iter().peekable();
    let mut out = Vec::with_capacity(conversation.messages.len());
    for (index, message) in conversation.messages.iter().enumerate() {
        while plists.next_if(|p| p.index < index).is_some() {}
        out.push(match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    tools.insert(&call.id, &call.name);
                }
                message.clone()
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let tool = tools.get(tool_call_id.as_str()).copied().unwrap_or("tool");
                Message::Tool {
                    tool_call_id: tool_call_id.clone(),
                    content: spot.wrap(Source::Tool(tool), content),
                }
            }
            Message::User(_) if plists.peek().is_some_and(|p| p.index == index) => {
                let Some(p) = plists.next() else {
                    continue;
                };
                Message::User(p.print(spot.wrap(Source::Tool(&p.tool), &p.content)))
            }
            other => other.clone(),
        });
    }
    out
}

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
    let focus = cfg.focus.as_deref().and_then(|id| eq.notes.node(id).ok());
    let query = match &focus {
        Some(r) => format!("{}\n{text}", r.node().content.title),
        None => text.to_owned(),
    };
    let mut hits = semantic
        .search(
            &eq.notes,
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

/// Run one turn for `user_text`; `emit` receives every event. Returns the final answer.
pub async fn run_turn(
    eq: &Equipment,
    conversation: &mut Conversation,
    user_text: &str,
    cfg: &TurnConfig,
    cancel: &CancelToken,
    emit: impl FnMut(TurnEvent),
) -> Result<String, TurnError> {
    Turn::new(eq, conversation, cfg.clone(), cancel, emit)
        .run(user_text)
        .await
}

/// A turn in progress: its equipment, its conversation and its state.
pub struct Turn<'a, E: FnMut(TurnEvent)> {
    eq: &'a Equipment,
    conversation: &'a mut Conversation,
    cfg: TurnConfig,
    cancel: &'a CancelToken,
    emit: E,
    /// Steps taken, counted from the stimulus's depth.
    depth: u32,
    errors_fed_back: u32,
    denials: u32,
    /// Steps whose tools were offered and called.
    tool_rounds: u32,
    /// Actions the LLM wrote as plists so far (they get call ids of their own).
    sexp_calls: u32,
    /// The node the last successful tool call was about.
    tool_focus: Option<String>,
    /// Worker tool calls made since the last edit: small models repeat a call word for
    /// word; its answer would be the same, so they are told so instead of burning a step.
    asked_before: HashSet<(String, String)>,
    /// Emacs actions already settled in this turn (made, or denied by the user): a model that
    /// repeats one must not advance a repeating task again or ask the user twice, even when
    /// the user approved that kind of edit for the conversation.
    settled_edits: HashMap<String, &'static str>,
}

impl<'a, E: FnMut(TurnEvent)> Turn<'a, E> {
    pub fn new(
        eq: &'a Equipment,
        conversation: &'a mut Conversation,
        cfg: TurnConfig,
        cancel: &'a CancelToken,
        emit: E,
    ) -> Self {
        Turn {
            eq,
            conversation,
            depth: cfg.start_depth,
            cfg,
            cancel,
            emit,
            errors_fed_back: 0,
            denials: 0,
            tool_rounds: 0,
            sexp_calls: 0,
            tool_focus: None,
            asked_before: HashSet::new(),
            settled_edits: HashMap::new(),
        }
    }

    /// Perceive `user_text`, then think, decide and act until the LLM answers in prose (the
    /// answer), or a bound, a failure or cancellation ends the turn.
    pub async fn run(mut self, user_text: &str) -> Result<String, TurnError> {
        self.perceive(user_text).await?;
        while self.depth < self.cfg.max_depth {
            self.depth += 1;
            if self.cancel.is_cancelled() {
                return Err(TurnError::Cancelled);
            }
            let Some(thought) = self.think().await? else {
                continue;
            };
            let step = match self.proposals(&thought.completion)? {
                decide::Proposals::Answer(text) => return Ok(text),
                decide::Proposals::FedBack => continue,
                decide::Proposals::Calls(step) => step,
            };
            self.take_step(&thought.completion, step, thought.tie)
                .await?;
        }
        Err(TurnError::DepthLimit(self.cfg.max_depth))
    }

    /// The user's words join the conversation; the notes related to them by meaning are
    /// looked up once a turn, for the question as asked.
    async fn perceive(&mut self, user_text: &str) -> Result<(), TurnError> {
        self.conversation
            .messages
            .push(Message::User(user_text.to_string()));
        if !self.cfg.related.is_empty() || self.eq.semantic.is_none() {
            return Ok(());
        }
        match related_notes(self.eq, user_text, &self.cfg, self.cancel).await {
            Ok(related) => self.cfg.related = related,
            Err(LlmError::Cancelled) => return Err(TurnError::Cancelled),
            Err(e) => self.emit(TurnEvent::Warning(format!(
                "no related notes: semantic search failed: {e}"
            ))),
        }
        Ok(())
    }

    fn emit(&mut self, event: TurnEvent) {
        (self.emit)(event)
    }

    /// Tell the LLM about `problem` in a user message, so it replies again.
    fn feed_back(&mut self, problem: String, note: String) {
        self.errors_fed_back += 1;
        self.emit(TurnEvent::ErrorFedBack(problem));
        self.conversation.messages.push(Message::User(note));
    }

    /// Add a tool's result to the conversation: as a `tool` message for native calls, as a
    /// `:tool-result` stimulus plist for actions the LLM wrote as S-expressions. Either is
    /// kept as the tool gave it and put in a data block by each request
    /// ([`spotlit_messages`]).
    fn push_result(&mut self, native: bool, call: &ToolCall, ok: bool, content: String) {
        let message = if native {
            Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            }
        } else {
            let result = PlistResult {
                index: self.conversation.messages.len(),
                tool: call.name.clone(),
                call: call.id.clone(),
                ok,
                content,
                depth: self.depth,
            };
            let message = Message::User(result.print(result.content.clone()));
            self.conversation.plist_results.push(result);
            message
        };
        self.conversation.messages.push(message);
    }
}

/// A tool error as the LLM reads it.
fn tool_error(message: &str) -> String {
    format!("(:tool-error \"{}\")", message.replace('"', "'"))
}
