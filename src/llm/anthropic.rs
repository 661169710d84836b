//! The Anthropic Messages wire format (`POST /v1/messages`): the request body, the SSE stream
//! and the non-streaming JSON response.
//!
//! Where it differs from OpenAI Chat Completions, and what this file does about it:
//!
//! * **Request.** System text is a top-level `"system"` field, not a message. `max_tokens` is
//!   required. Prompt caching: the last tool and the stable start of the system text
//!   ([`ChatRequest::cache_prefix`]) carry `cache_control` (ephemeral), so the tools and the
//!   prompts are read from the cache by a turn's later steps; what follows (this request's
//!   spotlight boundary, the notes) changes with every request and is never cached. Tools are `{"name", "description", "input_schema"}`. Tool calls are `tool_use`
//!   content blocks of the assistant message, with their arguments as a JSON *object*
//!   (`input`), and tool results are `tool_result` blocks of a *user* message: all the results
//!   of one assistant turn must be in the next user message, and roles must alternate, so
//!   consecutive tool results (and a user text right after them) share one user message.
//! * **Stream.** SSE events with `event:` names, whose `data` repeats the name as `"type"`
//!   (the data's `type` is what we dispatch on): `message_start` (id, model, input usage),
//!   then per content block `content_block_start` / `content_block_delta`* /
//!   `content_block_stop`, then `message_delta` (stop reason, cumulative usage) and
//!   `message_stop` (the end marker; a body without it is [`LlmError::Truncated`]). `ping`s come
//!   anywhere. An `event: error` (e.g. `overloaded_error`) can arrive mid-stream under HTTP 200
//!   and is an [`LlmError::Provider`].
//! * **Content blocks.** `text` is the answer (through [`ContentRouter`], so `<think>` spans of
//!   a proxied open model are still separated); `thinking` is reasoning; `tool_use` is a tool
//!   call whose arguments stream as `input_json_delta.partial_json` pieces, parsed once
//!   complete. Tool calls are numbered among themselves (the block `index` counts every kind
//!   of block). `server_tool_use` and its results (`web_search_tool_result`, …) are run by
//!   Anthropic itself: they are not ours to run, so they are left out of
//!   [`Completion::tool_calls`]; so are `compaction` summaries, `fallback` markers, citations
//!   and any block type we do not know.
//! * **Thinking signatures.** With extended thinking and tools, the API wants the assistant's
//!   `thinking` / `redacted_thinking` blocks (with their `signature`s) echoed back verbatim in
//!   the next request. [`Completion`] has no place for them, so they ride, as an opaque JSON
//!   array, in the [`ToolCall::signature`] of the response's first tool call, and
//!   [`request_body`] puts them back at the start of that assistant message. A signature that
//!   is not such an array (another provider's) is ignored.
//! * **Refusals** are a `stop_reason` of `"refusal"` (with `stop_details.explanation`, often
//!   null), after whatever text had already streamed: that text stays (it was shown), and
//!   [`Completion::refusal`] gets the explanation or a short note.
//! * **Usage.** `input_tokens` excludes prompt-cache reads and writes, so the prompt is their
//!   sum; the `message_delta` counts are cumulative and win over `message_start`'s.
//! * A `max_tokens` stop inside a tool call's arguments leaves invalid JSON after a regular
//!   `message_stop`: that is [`LlmError::InvalidToolArguments`] saying so, never a call to run.
//!
//! As in [`crate::llm::openai`], [`AnthropicStream`] takes raw body bytes in any chunking
//! (and copes with a server that answers a streaming request with a plain JSON body), and
//! [`parse_response`] reads a non-streaming body; both give the same [`Completion`] for the same
//! answer. Nothing here panics or recurses on network input beyond serde_json's own nesting
//! limit, and sizes are capped ([`StreamOptions`]).

use crate::llm::body::Framing;
use crate::llm::collect::{call_id, finished_call, partial_call, Prose};
use crate::llm::completion::{Completion, Delta, FinishReason, StreamOptions, ToolCall, Usage};
use crate::llm::error::{bounded, invalid_json, provider_error, LlmError};
use crate::llm::format::{Payload, ResponseDecoder, ResponseStream, WireFormat};
use crate::llm::request::{ChatRequest, Message};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// `max_tokens` when the request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

/// Most content blocks open at once. The API opens one at a time; this only bounds the
/// bookkeeping of a server that starts blocks and never stops them.
const MAX_OPEN_BLOCKS: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Requests.

/// The Messages API request body for `model`; see the module documentation.
pub fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut system: Vec<&str> = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    // Whether the last message is a user message with a block array (made of tool results),
    // which the next tool results and user text join.
    let mut user_blocks = false;
    for message in &request.messages {
        match message {
            Message::System(text) => {
                if !text.is_empty() {
                    system.push(text);
                }
            }
            Message::User(text) => {
                if user_blocks {
                    if !text.is_empty() {
                        push_block(&mut messages, json!({"type": "text", "text": text}));
                    }
                } else {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = echoed_thinking(tool_calls);
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                for call in tool_calls {
                    let input = match &call.arguments {
                        Value::Object(_) => call.arguments.clone(),
                        _ => Value::Object(Map::new()),
                    };
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.name,
                        "input": input,
                    }));
                }
                // An empty assistant turn carries nothing, and the API rejects empty content.
                if !blocks.is_empty() {
                    messages.push(json!({"role": "assistant", "content": blocks}));
                }
                user_blocks = false;
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let result = json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": content,
                });
                if user_blocks {
                    push_block(&mut messages, result);
                } else {
                    messages.push(json!({"role": "user", "content": [result]}));
                    user_blocks = true;
                }
            }
        }
    }
    if let Some(at) =
        crate::llm::request::last_user(&messages).filter(|_| !request.images.is_empty())
    {
        let content = &mut messages[at]["content"];
        if let Value::String(text) = content {
            *content = json!([{"type": "text", "text": text}]);
        }
        if let Value::Array(blocks) = content {
            for image in &request.images {
                blocks.push(json!({"type": "image", "source": {
                    "type": "base64", "media_type": image.media_type, "data": image.base64}}));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert(
        "max_tokens".into(),
        request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
    );
    if !system.is_empty() {
        body.insert(
            "system".into(),
            system_json(&system.join("\n\n"), request.cache_prefix),
        );
    }
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request.tools.iter().map(tool_json).collect();
        // The tools come first in what the API caches: marking the last caches them all.
        if let Some(Value::Object(last)) = tools.last_mut() {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), request.stream.into());
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), t.into());
    }
    Value::Object(body)
}

/// The `"system"` field: plain text, or, when its first `cache_prefix` bytes stay the same
/// from one request to the next, two text blocks with the cache marked after the first, so a
/// turn's later steps (and the next turns) read the prompts from the cache.
fn system_json(text: &str, cache_prefix: Option<usize>) -> Value {
    match cache_prefix {
        Some(at) if at > 0 && at < text.len() && text.is_char_boundary(at) => json!([
            {"type": "text", "text": &text[..at], "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": &text[at..]},
        ]),
        Some(at) if at > 0 && at == text.len() => json!([
            {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}},
        ]),
        _ => text.into(),
    }
}

/// Adds `block` to the block array of the last message (a user message made of tool results).
/// Tool results go before any text, as the API requires.
fn push_block(messages: &mut [Value], block: Value) {
    let Some(Value::Array(blocks)) = messages.last_mut().and_then(|m| m.get_mut("content")) else {
        return;
    };
    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
        let at = blocks
            .iter()
            .position(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"))
            .unwrap_or(blocks.len());
        blocks.insert(at, block);
    } else {
        blocks.push(block);
    }
}

/// One tool declaration: `{"name", "description", "parameters"}`, possibly wrapped as
/// `{"type": "function", "function": …}`, becomes `{"name", "description", "input_schema"}`.
/// A declaration that is already in Anthropic's shape (`input_schema`) or is one of its server
/// tools (another `type`, e.g. `web_search_20250305`) is sent as is.
fn tool_json(tool: &Value) -> Value {
    let declared = match tool.get("type").and_then(Value::as_str) {
        Some("function") => match tool.get("function") {
            Some(f @ Value::Object(_)) => f,
            _ => tool,
        },
        Some(_) => return tool.clone(),
        None => tool,
    };
    if declared.get("input_schema").is_some() {
        return declared.clone();
    }
    let mut out = Map::new();
    out.insert(
        "name".into(),
        declared.get("name").cloned().unwrap_or_else(|| "".into()),
    );
    if let Some(d) = declared.get("description").filter(|d| !d.is_null()) {
        out.insert("description".into(), d.clone());
    }
    out.insert(
        "input_schema".into(),
        declared
            .get("parameters")
            .filter(|p| p.is_object())
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    );
    Value::Object(out)
}

/// The thinking blocks stashed in the first tool call's signature (see the module
/// documentation), or none.
fn echoed_thinking(calls: &[ToolCall]) -> Vec<Value> {
    let Some(signature) = calls.first().and_then(|c| c.signature.as_deref()) else {
        return Vec::new();
    };
    let Ok(Value::Array(blocks)) = serde_json::from_str::<Value>(signature) else {
        return Vec::new();
    };
    let is_thinking = |b: &Value| {
        matches!(
            b.get("type").and_then(Value::as_str),
            Some("thinking" | "redacted_thinking")
        )
    };
    if blocks.iter().all(is_thinking) {
        blocks
    } else {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Wire types. Every field is optional and unknown fields and types are ignored.

/// One SSE event's data (its `type` names the event).
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: Option<WireMessageHead>,
    },
    ContentBlockStart {
        index: Option<u64>,
        content_block: Option<WireBlock>,
    },
    ContentBlockDelta {
        index: Option<u64>,
        delta: Option<WireDelta>,
    },
    ContentBlockStop {
        index: Option<u64>,
    },
    MessageDelta {
        delta: Option<WireStop>,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error,
    /// `ping`, and event types newer than this file.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireMessageHead {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
}

/// A non-streaming response.
#[derive(Deserialize)]
struct WireResponse {
    id: Option<String>,
    model: Option<String>,
    content: Option<Vec<WireBlock>>,
    #[serde(flatten)]
    stop: WireStop,
    usage: Option<WireUsage>,
}

/// The stop reason, in a `message_delta`'s `delta` or a whole response.
#[derive(Deserialize)]
struct WireStop {
    stop_reason: Option<String>,
    /// `{"type": "refusal", "category", "explanation"}` after a refusal.
    stop_details: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        text: Option<String>,
    },
    Thinking {
        thinking: Option<String>,
        signature: Option<String>,
    },
    RedactedThinking {
        data: Option<String>,
    },
    ToolUse {
        id: Option<String>,
        name: Option<String>,
        input: Option<Value>,
    },
    /// `server_tool_use`, tool results, `compaction`, `fallback`, and newer types.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: Option<String>,
    },
    InputJsonDelta {
        partial_json: Option<String>,
    },
    ThinkingDelta {
        thinking: Option<String>,
    },
    SignatureDelta {
        signature: Option<String>,
    },
    /// `citations_delta`, `compaction_delta`, and newer types.
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Debug, Clone, Copy, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    output_tokens_details: Option<WireOutputDetails>,
}

#[derive(Deserialize, Debug, Clone, Copy, Default)]
struct WireOutputDetails {
    thinking_tokens: Option<u64>,
}

impl WireUsage {
    /// `later`'s counts where it has them (the `message_delta` counts are cumulative).
    fn merge(self, later: WireUsage) -> WireUsage {
        WireUsage {
            input_tokens: later.input_tokens.or(self.input_tokens),
            output_tokens: later.output_tokens.or(self.output_tokens),
            cache_creation_input_tokens: later
                .cache_creation_input_tokens
                .or(self.cache_creation_input_tokens),
            cache_read_input_tokens: later
                .cache_read_input_tokens
                .or(self.cache_read_input_tokens),
            output_tokens_details: match (later.output_tokens_details, self.output_tokens_details) {
                (Some(l), Some(s)) => Some(WireOutputDetails {
                    thinking_tokens: l.thinking_tokens.or(s.thinking_tokens),
                }),
                (l, s) => l.or(s),
            },
        }
    }

    fn to_usage(self) -> Usage {
        // `input_tokens` counts only the uncached part of the prompt.
        let prompt = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(self.cache_read_input_tokens.unwrap_or(0))
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        let completion = self.output_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt.saturating_add(completion),
            reasoning_tokens: self.output_tokens_details.and_then(|d| d.thinking_tokens),
            cached_tokens: self.cache_read_input_tokens,
        }
    }
}

/// The provider error in an error payload, `{"type": "error", "error": {"type", "message"}}`,
/// or the payload itself as the message when it has no recognisable shape.
fn error_payload(data: &str) -> LlmError {
    provider_error(data.as_bytes()).unwrap_or_else(|| LlmError::Provider {
        message: bounded(data.trim()),
        kind: None,
        code: None,
    })
}

/// What [`Completion::refusal`] says for a `refusal` stop: the provider's explanation, or a
/// note naming its category (the API often gives neither).
fn refusal_text(details: Option<&Value>) -> String {
    let field = |name: &str| {
        details
            .and_then(|d| d.get(name))
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    match (field("explanation"), field("category")) {
        (Some(explanation), _) => bounded(explanation),
        (None, Some(category)) => {
            format!(
                "The model declined to continue (category: {}).",
                bounded(category)
            )
        }
        (None, None) => "The model declined to continue.".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The accumulator shared by the streaming and non-streaming paths.

#[derive(Debug, Clone, Default)]
struct PartialCall {
    id: String,
    name: String,
    /// The `partial_json` pieces so far.
    arguments: String,
    /// A non-empty `input` given whole in `content_block_start` (the API sends `{}` there and
    /// streams the rest; a whole response has it all). Used only if no piece arrives.
    initial: Option<String>,
}

impl PartialCall {
    fn argument_text(&self) -> &str {
        match &self.initial {
            Some(initial) if self.arguments.is_empty() => initial,
            _ => &self.arguments,
        }
    }
}

/// An open content block.
#[derive(Debug)]
enum Block {
    Text,
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    /// A `tool_use` block: position of its call in `calls`.
    Tool(usize),
    /// A block that contributes nothing (server tools, compaction, unknown types).
    Ignored,
}

#[derive(Debug)]
struct Accumulator {
    opts: StreamOptions,
    /// Id, model, text, reasoning and the byte budget.
    prose: Prose,
    refusal: Option<String>,
    calls: Vec<PartialCall>,
    /// Open content blocks by wire index.
    blocks: BTreeMap<u64, Block>,
    /// The index of the latest block started, for events without an index.
    last_block: Option<u64>,
    /// Finished signed `thinking` / `redacted_thinking` blocks, to echo back.
    thinking_blocks: Vec<Value>,
    usage: Option<WireUsage>,
    finish_reason: Option<FinishReason>,
}

impl Accumulator {
    fn new(opts: StreamOptions) -> Self {
        Accumulator {
            opts,
            prose: Prose::new(opts),
            refusal: None,
            calls: Vec::new(),
            blocks: BTreeMap::new(),
            last_block: None,
            thinking_blocks: Vec::new(),
            usage: None,
            finish_reason: None,
        }
    }

    fn add_usage(&mut self, usage: Option<WireUsage>) {
        if let Some(u) = usage {
            self.usage = Some(self.usage.unwrap_or_default().merge(u));
        }
    }

    /// Reasoning text; also kept in its block when it is a `thinking` block, for the echo.
    fn thinking(&mut self, index: u64, text: &str, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if text.is_empty() {
            return Ok(());
        }
        if let Some(Block::Thinking { thinking, .. }) = self.blocks.get_mut(&index) {
            thinking.push_str(text);
        }
        self.prose.reasoning(text, out)
    }

    fn block_start(
        &mut self,
        index: Option<u64>,
        block: WireBlock,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        let index = index.unwrap_or_else(|| self.last_block.map_or(0, |i| i.saturating_add(1)));
        // A restarted index closes the block it had.
        self.block_stop(Some(index), out)?;
        if self.blocks.len() >= MAX_OPEN_BLOCKS {
            return Err(LlmError::Malformed(format!(
                "more than {MAX_OPEN_BLOCKS} content blocks open at once"
            )));
        }
        self.last_block = Some(index);
        match block {
            WireBlock::Text { text } => {
                self.blocks.insert(index, Block::Text);
                self.prose.text(text.as_deref().unwrap_or_default(), out)?;
            }
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                let signature = signature.unwrap_or_default();
                self.prose.count(signature.len())?;
                self.blocks.insert(
                    index,
                    Block::Thinking {
                        thinking: String::new(),
                        signature,
                    },
                );
                self.thinking(index, thinking.as_deref().unwrap_or_default(), out)?;
            }
            WireBlock::RedactedThinking { data } => {
                let data = data.unwrap_or_default();
                self.prose.count(data.len())?;
                self.blocks.insert(index, Block::Redacted { data });
            }
            WireBlock::ToolUse { id, name, input } => {
                if self.calls.len() >= self.opts.max_tool_calls {
                    return Err(LlmError::TooManyToolCalls {
                        limit: self.opts.max_tool_calls,
                    });
                }
                let initial = match input {
                    None | Some(Value::Null) => None,
                    Some(Value::Object(o)) if o.is_empty() => None,
                    Some(v) => Some(v.to_string()),
                };
                let call = PartialCall {
                    id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    arguments: String::new(),
                    initial,
                };
                self.prose.count(
                    call.id.len() + call.name.len() + call.initial.as_ref().map_or(0, String::len),
                )?;
                let position = self.calls.len();
                out.push(Delta::ToolCallStart {
                    index: position,
                    id: call_id(&call.id, position),
                    name: call.name.clone(),
                });
                self.calls.push(call);
                self.blocks.insert(index, Block::Tool(position));
            }
            WireBlock::Other => {
                self.blocks.insert(index, Block::Ignored);
            }
        }
        Ok(())
    }

    fn block_delta(
        &mut self,
        index: Option<u64>,
        delta: WireDelta,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        let Some(index) = index.or(self.last_block) else {
            // A delta before any block: only text and reasoning can be placed.
            return match delta {
                WireDelta::TextDelta { text } => {
                    self.prose.text(text.as_deref().unwrap_or(""), out)
                }
                WireDelta::ThinkingDelta { thinking } => {
                    self.thinking(u64::MAX, thinking.as_deref().unwrap_or(""), out)
                }
                _ => Ok(()),
            };
        };
        match delta {
            // Text and reasoning count whatever block they claim to be in.
            WireDelta::TextDelta { text } => {
                self.prose.text(text.as_deref().unwrap_or_default(), out)
            }
            WireDelta::ThinkingDelta { thinking } => {
                self.thinking(index, thinking.as_deref().unwrap_or_default(), out)
            }
            WireDelta::SignatureDelta { signature } => {
                let piece = signature.unwrap_or_default();
                self.prose.count(piece.len())?;
                if let Some(Block::Thinking { signature, .. }) = self.blocks.get_mut(&index) {
                    signature.push_str(&piece);
                }
                Ok(())
            }
            WireDelta::InputJsonDelta { partial_json } => {
                // Arguments of a server tool (or of no known block) are not ours.
                let Some(&Block::Tool(position)) = self.blocks.get(&index) else {
                    return Ok(());
                };
                let fragment = partial_json.unwrap_or_default();
                if fragment.is_empty() {
                    return Ok(());
                }
                self.prose.count(fragment.len())?;
                if let Some(call) = self.calls.get_mut(position) {
                    call.initial = None;
                    call.arguments.push_str(&fragment);
                }
                out.push(Delta::ToolCallArgs {
                    index: position,
                    fragment,
                });
                Ok(())
            }
            WireDelta::Other => Ok(()),
        }
    }

    /// Closes block `index` (if open): keeps a signed thinking block for the echo, and gives a
    /// tool call that got its input whole at the start its argument delta.
    fn block_stop(&mut self, index: Option<u64>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let Some(index) = index.or(self.last_block) else {
            return Ok(());
        };
        match self.blocks.remove(&index) {
            Some(Block::Thinking {
                thinking,
                signature,
            }) => {
                // An unsigned block (a proxy's) would be rejected if echoed.
                if !signature.is_empty() {
                    self.thinking_blocks.push(json!({
                        "type": "thinking",
                        "thinking": thinking,
                        "signature": signature,
                    }));
                }
            }
            Some(Block::Redacted { data }) => {
                if !data.is_empty() {
                    self.thinking_blocks
                        .push(json!({"type": "redacted_thinking", "data": data}));
                }
            }
            Some(Block::Tool(position)) => {
                if let Some(call) = self.calls.get_mut(position) {
                    if let Some(initial) = call.initial.take() {
                        call.arguments = initial.clone();
                        out.push(Delta::ToolCallArgs {
                            index: position,
                            fragment: initial,
                        });
                    }
                }
            }
            Some(Block::Text | Block::Ignored) | None => {}
        }
        Ok(())
    }

    /// Closes every open block, in index order.
    fn close_all(&mut self, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        while let Some(&index) = self.blocks.keys().next() {
            self.block_stop(Some(index), out)?;
        }
        Ok(())
    }

    fn stop(&mut self, stop: WireStop, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let Some(reason) = stop.stop_reason.filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        if reason == "refusal" && self.refusal.is_none() {
            let text = refusal_text(stop.stop_details.as_ref());
            self.prose.count(text.len())?;
            self.refusal = Some(text.clone());
            out.push(Delta::Refusal(text));
        }
        let reason = FinishReason::from_wire(&reason);
        if self.finish_reason.as_ref() != Some(&reason) {
            self.finish_reason = Some(reason.clone());
            out.push(Delta::Finish(reason));
        }
        Ok(())
    }

    /// The end of the message: closes blocks, releases held-back text, reports usage.
    fn end(&mut self, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        self.close_all(out)?;
        self.prose.flush(out);
        if let Some(u) = self.usage {
            out.push(Delta::Usage(u.to_usage()));
        }
        Ok(())
    }

    fn base(&self) -> Completion {
        Completion {
            id: self.prose.id.clone(),
            model: self.prose.model.clone(),
            text: self.prose.text.clone(),
            reasoning: self.prose.reasoning.clone(),
            refusal: self.refusal.clone(),
            tool_calls: Vec::new(),
            usage: self.usage.map(WireUsage::to_usage),
            finish_reason: self.finish_reason.clone(),
        }
    }

    /// The opaque echo of the thinking blocks, for the first tool call.
    fn signature(&self, position: usize) -> Option<String> {
        (position == 0 && !self.thinking_blocks.is_empty())
            .then(|| Value::Array(self.thinking_blocks.clone()).to_string())
    }

    /// The completion so far; arguments that do not parse are kept as a JSON string.
    fn partial(&self) -> Completion {
        let mut c = self.base();
        c.tool_calls = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                partial_call(
                    i,
                    &call.id,
                    &call.name,
                    call.argument_text(),
                    self.signature(i),
                )
            })
            .collect();
        c
    }

    /// The finished completion; arguments that do not parse are an error.
    fn complete(&self) -> Result<Completion, LlmError> {
        let mut c = self.base();
        let cut = if self.finish_reason == Some(FinishReason::Length) {
            "the response hit max_tokens inside the arguments: "
        } else {
            ""
        };
        for (i, call) in self.calls.iter().enumerate() {
            c.tool_calls.push(finished_call(
                i,
                &call.id,
                &call.name,
                call.argument_text(),
                self.signature(i),
                cut,
            )?);
        }
        Ok(c)
    }
}

// ---------------------------------------------------------------------------------------------
// The format.

/// The Anthropic Messages wire format.
pub struct Messages;

impl WireFormat for Messages {
    const NAME: &'static str = "anthropic";
    const FIXED_HEADERS: &'static [(&'static str, &'static str)] =
        &[("anthropic-version", "2023-06-01")];
    type Decoder = MessagesDecoder;

    fn chat_url(base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/messages")
    }

    fn auth_header(key: &str) -> (&'static str, String) {
        ("x-api-key", key.to_owned())
    }

    fn request_body(request: &ChatRequest, model: &str) -> Value {
        request_body(request, model)
    }
}

/// Reads one Messages response: SSE events, or a whole `message` body. See the module
/// documentation.
#[derive(Debug)]
pub struct MessagesDecoder {
    acc: Accumulator,
    /// `message_stop` was received; later events are ignored.
    done: bool,
}

impl ResponseDecoder for MessagesDecoder {
    const FRAMING: Framing = Framing::SseOrJson;

    fn new(opts: StreamOptions) -> Self {
        MessagesDecoder {
            acc: Accumulator::new(opts),
            done: false,
        }
    }

    /// One SSE event.
    fn payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        let data = String::from_utf8_lossy(payload.data);
        if payload.event == Some("error") {
            return Err(error_payload(&data));
        }
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let parsed: WireEvent = serde_json::from_str(data).map_err(|e| invalid_json(&e, data))?;
        let acc = &mut self.acc;
        match parsed {
            WireEvent::MessageStart { message } => {
                if let Some(m) = message {
                    acc.prose.identity(m.id, m.model);
                    acc.add_usage(m.usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                if let Some(block) = content_block {
                    acc.block_start(index, block, out)?;
                }
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                if let Some(delta) = delta {
                    acc.block_delta(index, delta, out)?;
                }
            }
            WireEvent::ContentBlockStop { index } => acc.block_stop(index, out)?,
            WireEvent::MessageDelta { delta, usage } => {
                acc.add_usage(usage);
                if let Some(stop) = delta {
                    acc.stop(stop, out)?;
                }
            }
            WireEvent::MessageStop => {
                self.done = true;
                acc.end(out)?;
            }
            WireEvent::Error => return Err(error_payload(data)),
            WireEvent::Other => {}
        }
        Ok(())
    }

    /// A non-streaming Messages response (`"type": "message"`). An error body
    /// (`{"type": "error", "error": {…}}`) is a [`LlmError::Provider`].
    fn whole_body(&mut self, body: &[u8], out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let value: Value = serde_json::from_str(text).map_err(|e| invalid_json(&e, text))?;
        let is_error = value.get("type").and_then(Value::as_str) == Some("error")
            || value.get("error").is_some_and(|e| !e.is_null());
        if is_error {
            return Err(error_payload(text));
        }
        let response: WireResponse =
            serde_json::from_value(value).map_err(|e| invalid_json(&e, text))?;
        let Some(content) = response.content else {
            return Err(LlmError::Malformed(
                "the response has no content".to_owned(),
            ));
        };
        let acc = &mut self.acc;
        acc.prose.identity(response.id, response.model);
        acc.add_usage(response.usage);
        // Each block is a start with everything in it, then its stop: the streaming path's code.
        for (index, block) in (0u64..).zip(content) {
            acc.block_start(Some(index), block, out)?;
            acc.block_stop(Some(index), out)?;
        }
        acc.stop(response.stop, out)?;
        acc.end(out)?;
        self.done = true;
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_early(&mut self) -> Result<(), LlmError> {
        let mut ignored = Vec::new();
        self.acc.close_all(&mut ignored)?;
        self.acc.prose.flush(&mut ignored);
        Ok(())
    }

    fn partial(&self) -> Completion {
        self.acc.partial()
    }

    fn complete(&mut self, _out: &mut Vec<Delta>) -> Result<Completion, LlmError> {
        self.acc.complete()
    }
}

/// A Messages API response body, fed as raw bytes in whatever chunks HTTP delivers: an SSE
/// stream or, told apart by its first non-blank byte (`{`), one JSON document, whose deltas
/// come at the end. See the module documentation.
pub type AnthropicStream = ResponseStream<MessagesDecoder>;

/// Parses a non-streaming Messages response body (`"type": "message"`). An error body
/// (`{"type": "error", "error": {…}}`) is a [`LlmError::Provider`]; a body whose JSON ends
/// early is [`LlmError::Truncated`] (with an empty partial completion).
pub fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
    Messages::parse_response(body, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
            signature: None,
        }
    }

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    /// An error event and, in the same chunk, a line over the limit: the error event came
    /// first, so it is the outcome, whether or not the body was cut between the two (the
    /// decoder used to drop the events of a chunk that ended in a decoding error).
    #[test]
    fn events_before_a_decoding_error_come_first() {
        let mut body = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\ndata: ".to_vec();
        body.extend(std::iter::repeat_n(b'x', 200));
        let opts = StreamOptions {
            max_line_len: 100,
            ..StreamOptions::default()
        };
        let run = |chunks: Vec<&[u8]>| {
            let mut p = AnthropicStream::with_options(opts);
            chunks
                .into_iter()
                .map(|c| p.feed(c))
                .find(Result::is_err)
                .unwrap_or(Ok(Vec::new()))
        };
        let whole = run(vec![&body[..]]);
        assert!(
            !matches!(whole, Err(LlmError::LineTooLong { .. }) | Ok(_)),
            "{whole:?}"
        );
        assert_eq!(whole, run(body.chunks(7).collect()));
    }

    #[test]
    fn anthropic_request_basics() {
        let body = request_body(
            &ChatRequest {
                messages: vec![
                    Message::System("Be brief.".into()),
                    Message::User("Hi".into()),
                    Message::System("Use org syntax.".into()),
                ],
                stream: true,
                temperature: Some(0.5),
                ..ChatRequest::default()
            },
            "claude-x",
        );
        assert_eq!(
            body,
            json!({
                "model": "claude-x",
                "max_tokens": DEFAULT_MAX_TOKENS,
                "system": "Be brief.\n\nUse org syntax.",
                "messages": [{"role": "user", "content": "Hi"}],
                "stream": true,
                "temperature": 0.5,
            })
        );
        let body = request_body(
            &ChatRequest {
                max_tokens: Some(100),
                ..request(vec![Message::User("Hi".into())])
            },
            "m",
        );
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["stream"], false);
        assert!(body.get("system").is_none());
        assert!(body.get("temperature").is_none());
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn anthropic_request_tool_turns() {
        let body = request_body(
            &request(vec![
                Message::User("Make two dirs".into()),
                Message::Assistant {
                    content: "Sure.".into(),
                    tool_calls: vec![
                        call("toolu_1", "mkdir", json!({"name": "a"})),
                        call("toolu_2", "mkdir", json!("not an object")),
                    ],
                },
                Message::Tool {
                    tool_call_id: "toolu_1".into(),
                    content: "ok".into(),
                },
                Message::Tool {
                    tool_call_id: "toolu_2".into(),
                    content: "failed".into(),
                },
                Message::User("Thanks; now list them".into()),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("toolu_3", "ls", json!({}))],
                },
                Message::Tool {
                    tool_call_id: "toolu_3".into(),
                    content: "a".into(),
                },
                Message::Assistant {
                    content: "Done.".into(),
                    tool_calls: vec![],
                },
            ]),
            "m",
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "Make two dirs"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Sure."},
                    {"type": "tool_use", "id": "toolu_1", "name": "mkdir", "input": {"name": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "mkdir", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "failed"},
                    {"type": "text", "text": "Thanks; now list them"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_3", "name": "ls", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_3", "content": "a"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            ])
        );
    }

    #[test]
    fn anthropic_request_odd_turns() {
        // An empty assistant turn is dropped; a tool result after text still goes first.
        let body = request_body(
            &request(vec![
                Message::User("a".into()),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![],
                },
                Message::User("b".into()),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("t1", "f", json!({})), call("t2", "f", json!({}))],
                },
                Message::Tool {
                    tool_call_id: "t1".into(),
                    content: "1".into(),
                },
                Message::User("".into()),
                Message::User("late".into()),
                Message::Tool {
                    tool_call_id: "t2".into(),
                    content: "2".into(),
                },
            ]),
            "m",
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "a"},
                {"role": "user", "content": "b"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "f", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "2"},
                    {"type": "text", "text": "late"},
                ]},
            ])
        );
    }

    #[test]
    fn anthropic_request_tools() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let body = request_body(
            &ChatRequest {
                tools: vec![
                    json!({"name": "read", "description": "Read a file", "parameters": schema}),
                    json!({"type": "function", "function":
                        {"name": "write", "description": "Write", "parameters": schema}}),
                    json!({"name": "now"}),
                    json!({"name": "raw", "input_schema": schema}),
                    json!({"type": "web_search_20250305", "name": "web_search"}),
                ],
                ..request(vec![Message::User("x".into())])
            },
            "m",
        );
        assert_eq!(
            body["tools"],
            json!([
                {"name": "read", "description": "Read a file", "input_schema": schema},
                {"name": "write", "description": "Write", "input_schema": schema},
                {"name": "now", "input_schema": {"type": "object", "properties": {}}},
                {"name": "raw", "input_schema": schema},
                {"type": "web_search_20250305", "name": "web_search",
                 "cache_control": {"type": "ephemeral"}},
            ])
        );
    }

    #[test]
    fn anthropic_request_caches_the_stable_start_of_the_system_text() {
        let with = |prefix| {
            request_body(
                &ChatRequest {
                    cache_prefix: prefix,
                    ..request(vec![
                        Message::System("Prompts. Boundary é".into()),
                        Message::User("x".into()),
                    ])
                },
                "m",
            )["system"]
                .clone()
        };
        assert_eq!(
            with(Some(9)),
            json!([
                {"type": "text", "text": "Prompts. ", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Boundary é"},
            ])
        );
        assert_eq!(with(None), json!("Prompts. Boundary é"));
        // Never inside a character, never an empty block.
        assert_eq!(with(Some(19)), json!("Prompts. Boundary é"));
        assert_eq!(with(Some(0)), json!("Prompts. Boundary é"));
        assert_eq!(
            with(Some(20)),
            json!([{"type": "text", "text": "Prompts. Boundary é",
                    "cache_control": {"type": "ephemeral"}}])
        );
    }

    #[test]
    fn anthropic_request_echoes_thinking_blocks() {
        let blocks = json!([
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xyz"},
        ]);
        let mut first = call("t1", "f", json!({"a": 1}));
        first.signature = Some(blocks.to_string());
        let body = request_body(
            &request(vec![
                Message::User("q".into()),
                Message::Assistant {
                    content: "Let me look.".into(),
                    tool_calls: vec![first.clone()],
                },
            ]),
            "m",
        );
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "xyz"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
            ])
        );
        // Another provider's opaque signature is not ours to send.
        first.signature = Some("CiQB0e2Kb-gemini-thought-signature".into());
        let body = request_body(
            &request(vec![Message::Assistant {
                content: String::new(),
                tool_calls: vec![first],
            }]),
            "m",
        );
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}])
        );
    }

    fn stream(body: &str) -> Result<(Vec<Delta>, Completion), LlmError> {
        let mut s = AnthropicStream::new();
        let mut deltas = s.feed(body.as_bytes())?;
        let (tail, c) = s.finish()?;
        deltas.extend(tail);
        Ok((deltas, c))
    }

    fn sse(events: &[&str]) -> String {
        events
            .iter()
            .map(|e| {
                let kind = serde_json::from_str::<Value>(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                format!("event: {kind}\ndata: {e}\n\n")
            })
            .collect()
    }

    #[test]
    fn anthropic_stream_thinking_signature_reaches_the_tool_call() {
        let body = sse(&[
            r#"{"type":"message_start","message":{"id":"m1","model":"c","usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":2}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" think."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"RED"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t2","name":"g","input":{}}}"#,
            r#"{"type":"content_block_stop","index":3}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7,"output_tokens_details":{"thinking_tokens":3}}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let (_, c) = stream(&body).unwrap();
        assert_eq!(c.reasoning, "Let me think.");
        assert_eq!(c.text, "");
        assert_eq!(c.tool_calls.len(), 2);
        assert_eq!(c.tool_calls[1].arguments, json!({}));
        assert_eq!(c.tool_calls[1].signature, None);
        let echoed: Value =
            serde_json::from_str(c.tool_calls[0].signature.as_deref().unwrap()).unwrap();
        assert_eq!(
            echoed,
            json!([
                {"type": "thinking", "thinking": "Let me think.", "signature": "SIG"},
                {"type": "redacted_thinking", "data": "RED"},
            ])
        );
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: 17,
                completion_tokens: 7,
                total_tokens: 24,
                reasoning_tokens: Some(3),
                cached_tokens: Some(5),
            })
        );
        // And the next request sends them back first.
        let next = request_body(
            &request(vec![Message::Assistant {
                content: c.text.clone(),
                tool_calls: c.tool_calls.clone(),
            }]),
            "m",
        );
        assert_eq!(next["messages"][0]["content"][0]["signature"], "SIG");
        assert_eq!(next["messages"][0]["content"][2]["type"], "tool_use");
    }

    #[test]
    fn anthropic_stream_input_given_whole_at_block_start() {
        // Some proxies put the whole input in `content_block_start` and stream nothing.
        let body = sse(&[
            r#"{"type":"message_start","message":{"id":"m1"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{"x":[1,2]}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let (deltas, c) = stream(&body).unwrap();
        assert_eq!(c.tool_calls[0].arguments, json!({"x": [1, 2]}));
        assert!(deltas.contains(&Delta::ToolCallArgs {
            index: 0,
            fragment: r#"{"x":[1,2]}"#.into()
        }));
        assert_eq!(c.usage, None);
    }

    #[test]
    fn anthropic_stream_error_payload_without_event_name() {
        let body = "data: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}\n\n";
        assert_eq!(
            stream(body).unwrap_err(),
            LlmError::Provider {
                message: "Internal".into(),
                kind: Some("api_error".into()),
                code: None
            }
        );
        let body = "event: error\ndata: not json\n\n";
        assert!(matches!(
            stream(body).unwrap_err(),
            LlmError::Provider { message, .. } if message == "not json"
        ));
    }

    #[test]
    fn anthropic_refusal_text() {
        assert_eq!(
            refusal_text(Some(&json!({"category": "cyber", "explanation": "No."}))),
            "No."
        );
        assert_eq!(
            refusal_text(Some(&json!({"category": "cyber", "explanation": null}))),
            "The model declined to continue (category: cyber)."
        );
        assert_eq!(refusal_text(None), "The model declined to continue.");
    }

    #[test]
    fn anthropic_parse_response_shapes() {
        let opts = StreamOptions::default();
        assert!(matches!(
            parse_response(br#"{"id":"m","type":"message","content":[{"type":"te"#, &opts),
            Err(LlmError::Truncated { partial }) if *partial == Completion::default()
        ));
        assert!(matches!(
            parse_response(br#"{"id":"m","type":"message"}"#, &opts),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse_response(b"]", &opts),
            Err(LlmError::InvalidJson { .. })
        ));
        let c = parse_response(
            br#"{"id":"m","type":"message","model":"c","content":[
                {"type":"text","text":"Hi"},
                {"type":"server_tool_use","id":"s","name":"web_search","input":{"query":"q"}},
                {"type":"tool_use","id":"t","name":"f","input":{"k":"v"}}],
               "stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#,
            &opts,
        )
        .unwrap();
        assert_eq!(c.text, "Hi");
        assert_eq!(c.tool_calls, vec![call("t", "f", json!({"k": "v"}))]);
        assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(c.usage.map(|u| u.total_tokens), Some(7));
    }
}
