//! What every provider's parser produces: incremental [`Delta`]s for the UI while a response
//! streams, and one [`Completion`] when it is done; and the limits every parser takes
//! ([`StreamOptions`]).
//!
//! These types are provider-neutral on purpose: OpenAI Chat Completions, Anthropic Messages,
//! Gemini and Ollama all stream text, reasoning and tool calls, and the agent loop and the chat
//! buffer should not care which wire format carried them.

use crate::llm::think::ThinkTags;
use serde_json::Value;

/// One increment of a streaming response, in arrival order. Concatenating the `Text`
/// (`Reasoning`, `Refusal`) fragments gives exactly [`Completion::text`] (`reasoning`,
/// `refusal`); concatenating a tool call's `ToolCallArgs` fragments gives its raw argument text.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// A fragment of the answer text.
    Text(String),
    /// A fragment of the model's reasoning ("thinking"), never part of the answer.
    Reasoning(String),
    /// A fragment of a refusal (OpenAI's `refusal` field).
    Refusal(String),
    /// A tool call begins. `index` is its position among the response's tool calls (0-based);
    /// later `ToolCallArgs` refer to it. `id` is synthesised as in [`ToolCall::id`] when the
    /// server sent none; `name` may be empty if a server sends it late (the final
    /// [`ToolCall`] has it).
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of the JSON text of tool call `index`'s arguments.
    ToolCallArgs { index: usize, fragment: String },
    /// Token counts (sent once, near the end, by servers that report usage).
    Usage(Usage),
    /// Why the model stopped.
    Finish(FinishReason),
}

/// A complete (or, inside [`crate::llm::LlmError::Truncated`], partial) response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The provider's response id, if it sent one.
    pub id: Option<String>,
    /// The model that answered, as the server names it.
    pub model: Option<String>,
    /// The answer.
    pub text: String,
    /// The reasoning, from whichever field or `<think>` span the server used.
    pub reasoning: String,
    /// A refusal, when the model declined (OpenAI); `None` when there was none.
    pub refusal: Option<String>,
    /// Tool calls in the order the model started them.
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<FinishReason>,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The id to echo back with the tool's result. Servers that send none get `call_<index>`.
    pub id: String,
    pub name: String,
    /// The parsed arguments (an object, for any sane tool schema). Empty argument text
    /// becomes `{}`.
    pub arguments: Value,
    /// An opaque token the provider wants echoed back with this call in the next request
    /// (Gemini's `thoughtSignature`); `None` for providers that have none.
    pub signature: Option<String>,
}

/// Token counts for one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Of `completion_tokens`, those spent reasoning, when the server says.
    pub reasoning_tokens: Option<u64>,
    /// Of `prompt_tokens`, those served from the provider's prompt cache, when the server says.
    pub cached_tokens: Option<u64>,
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural stop or a stop sequence.
    Stop,
    /// The token limit was hit: the answer is cut short.
    Length,
    /// The model wants tool calls run.
    ToolCalls,
    /// The provider's content filter removed output.
    ContentFilter,
    /// Anything else, verbatim (`"function_call"`, `"error"`, provider-specific values).
    Other(String),
}

impl FinishReason {
    /// The reason for a wire value (`"stop"`, `"length"`, `"tool_calls"`, …).
    pub fn from_wire(s: &str) -> Self {
        match s {
            "stop" | "end_turn" | "stop_sequence" | "eos" => Self::Stop,
            "length" | "max_tokens" => Self::Length,
            "tool_calls" | "tool_use" => Self::ToolCalls,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// A rough token count for `text`: one token per four bytes, the usual rule of thumb for
/// English with BPE tokenizers. Budgets and context sizes only need to be right within tens
/// of percent, and no provider's tokenizer is at hand.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Default cap on a whole response (text, reasoning, refusal and tool arguments together, or a
/// JSON body): 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Default cap on one SSE or NDJSON line and on one SSE event's data: 16 MiB.
pub const DEFAULT_MAX_LINE_LEN: usize = 16 * 1024 * 1024;

/// Default cap on the number of tool calls in one response.
pub const DEFAULT_MAX_TOOL_CALLS: usize = 1024;

/// Parsing options and limits, for every wire format's parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Where `<think>` spans in `content` are recognised.
    pub think_tags: ThinkTags,
    /// Longest SSE line (and SSE event data), in bytes.
    pub max_line_len: usize,
    /// Largest response, in bytes (see [`DEFAULT_MAX_RESPONSE_BYTES`]).
    pub max_response_bytes: usize,
    /// Most tool calls in one response.
    pub max_tool_calls: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            think_tags: ThinkTags::default(),
            max_line_len: DEFAULT_MAX_LINE_LEN,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
        }
    }
}
