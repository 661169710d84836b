//! The OpenAI Chat Completions wire format: the request body ([`request_body`]), and the
//! response, streaming (SSE `data:` chunks ending with `data: [DONE]`) and non-streaming JSON.
//! Spoken by OpenAI and by every
//! OpenAI-compatible server (llama.cpp, vLLM, Ollama `/v1`, OpenRouter, DeepSeek, Groq, …), so
//! it tolerates their differences:
//!
//! * reasoning arrives as `reasoning_content` (DeepSeek, vLLM), `reasoning` (OpenRouter; when a
//!   server sends both, `reasoning_content` wins and the other is not added twice) or as
//!   `<think>…</think>` inside `content` (llama.cpp) — see [`crate::llm::think`];
//! * tool calls are keyed by `index`, with `id` and `name` only in the first delta of each and
//!   `arguments` a JSON *string* streamed in pieces, parsed once the response is complete. A
//!   delta without `index` continues the call with its `id` (or the last call); a delta whose
//!   `index` is taken by a call with a different `id` starts a new call (servers that number
//!   every call 0); `arguments` sent as a JSON object instead of a string is accepted;
//! * an `{"error": …}` payload (or vLLM's `{"object": "error", …}`) mid-stream, under HTTP 200,
//!   is a [`LlmError::Provider`] with the provider's own message;
//! * with several choices (`n > 1`) the answer is choice 0; the others are ignored;
//! * usage comes in a final chunk with no choices (OpenAI), alongside a choice (OpenRouter), or
//!   under `x_groq` (Groq).
//!
//! Layers: [`ChatDecoder`] decodes SSE `data` payloads and whole bodies; [`OpenAiStream`] is
//! the shared driver ([`crate::llm::format`]) running it over raw body bytes as HTTP delivers
//! them (and copes with a server that answers a streaming request with a plain JSON body);
//! [`ChatStream`] takes `data` payloads one by one; [`parse_response`] reads a non-streaming
//! response. All produce the same [`Completion`] for the same answer. Nothing
//! here panics or recurses on network input beyond serde_json's own nesting limit (128), and
//! sizes are capped ([`StreamOptions`]).

use crate::llm::body::Framing;
use crate::llm::collect::{call_id, finished_call, partial_call, Prose};
use crate::llm::completion::{Completion, Delta, FinishReason, StreamOptions, Usage};
use crate::llm::error::{error_from, invalid_json, provider_error_in, Failure, LlmError};
use crate::llm::format::{conclude, Payload, ResponseDecoder, ResponseStream, WireFormat};
use crate::llm::request::{function_tool, ChatRequest, Message};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Requests.

/// The JSON body of `request` for `model`.
pub fn request_body(request: &ChatRequest, model: &str) -> Value {
    let mut messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    if let Some(at) =
        crate::llm::request::last_user(&messages).filter(|_| !request.images.is_empty())
    {
        let text = messages[at]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut parts = vec![json!({"type": "text", "text": text})];
        for image in &request.images {
            let url = format!("data:{};base64,{}", image.media_type, image.base64);
            parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        messages[at]["content"] = Value::Array(parts);
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(function_tool).collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), request.stream.into());
    if request.stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(n) = request.max_tokens {
        body.insert("max_tokens".into(), n.into());
    }
    Value::Object(body)
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::System(content) => json!({"role": "system", "content": content}),
        Message::User(content) => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut obj = Map::new();
            obj.insert("role".into(), "assistant".into());
            // OpenAI wants `null`, not `""`, for an answer that is only tool calls.
            obj.insert(
                "content".into(),
                if content.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    content.as_str().into()
                },
            );
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                // A JSON *string* on the wire.
                                "arguments": call.arguments.to_string(),
                            },
                        })
                    })
                    .collect();
                obj.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(obj)
        }
        Message::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

// ---------------------------------------------------------------------------------------------
// Wire types. Every field is optional and unknown fields are ignored: servers differ.

#[derive(Deserialize)]
struct WireChunk {
    id: Option<String>,
    model: Option<String>,
    choices: Option<Vec<WireStreamChoice>>,
    usage: Option<WireUsage>,
    x_groq: Option<WireGroq>,
}

#[derive(Deserialize)]
struct WireStreamChoice {
    index: Option<u64>,
    delta: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireResponse {
    id: Option<String>,
    model: Option<String>,
    choices: Option<Vec<WireChoice>>,
    usage: Option<WireUsage>,
    x_groq: Option<WireGroq>,
}

#[derive(Deserialize)]
struct WireChoice {
    index: Option<u64>,
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

/// A streamed `delta` or a complete `message`: same fields.
#[derive(Deserialize)]
struct WireMessage {
    content: Option<WireContent>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    refusal: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

/// `content` is a string, or (some servers) an array of typed parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

#[derive(Deserialize)]
struct WirePart {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

#[derive(Deserialize)]
struct WireToolCall {
    index: Option<u64>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
    completion_tokens_details: Option<WireCompletionDetails>,
    prompt_tokens_details: Option<WirePromptDetails>,
}

#[derive(Deserialize)]
struct WireCompletionDetails {
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WirePromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireGroq {
    usage: Option<WireUsage>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens.unwrap_or(0);
        let completion = self.completion_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: self
                .total_tokens
                .unwrap_or_else(|| prompt.saturating_add(completion)),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens),
        }
    }
}

/// Parses `payload` as JSON, reporting a provider error payload as such.
fn parse_payload<T: serde::de::DeserializeOwned>(payload: &str) -> Result<T, LlmError> {
    let value: Value = serde_json::from_str(payload).map_err(|e| invalid_json(&e, payload))?;
    if let Some(err) = provider_error_in(&value) {
        return Err(err);
    }
    serde_json::from_value(value).map_err(|e| invalid_json(&e, payload))
}

// ---------------------------------------------------------------------------------------------
// The accumulator shared by the streaming and non-streaming paths.

#[derive(Debug, Clone, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug)]
struct Accumulator {
    opts: StreamOptions,
    /// Id, model, text, reasoning and the byte budget.
    prose: Prose,
    refusal: String,
    calls: Vec<PartialCall>,
    /// Wire `index` → position in `calls` of the latest call with that index.
    by_wire_index: BTreeMap<u64, usize>,
    usage: Option<Usage>,
    finish_reason: Option<FinishReason>,
}

impl Accumulator {
    fn new(opts: StreamOptions) -> Self {
        Accumulator {
            opts,
            prose: Prose::new(opts),
            refusal: String::new(),
            calls: Vec::new(),
            by_wire_index: BTreeMap::new(),
            usage: None,
            finish_reason: None,
        }
    }

    /// One `delta` (streaming) or `message` (non-streaming, `complete`) of choice 0.
    fn message(
        &mut self,
        msg: WireMessage,
        complete: bool,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        let reasoning = msg
            .reasoning_content
            .filter(|s| !s.is_empty())
            .or(msg.reasoning.filter(|s| !s.is_empty()));
        if let Some(r) = reasoning {
            self.prose.reasoning(&r, out)?;
        }
        let content = match msg.content {
            Some(WireContent::Text(t)) => t,
            Some(WireContent::Parts(parts)) => parts
                .into_iter()
                .filter(|p| p.kind.as_deref().is_none_or(|k| k == "text"))
                .filter_map(|p| p.text)
                .collect(),
            None => String::new(),
        };
        self.prose.text(&content, out)?;
        if let Some(r) = msg.refusal.filter(|s| !s.is_empty()) {
            self.prose.count(r.len())?;
            self.refusal.push_str(&r);
            out.push(Delta::Refusal(r));
        }
        for (position, call) in msg.tool_calls.into_iter().flatten().enumerate() {
            // In a complete message every entry is its own call, whatever its `index` says.
            let wire_index = if complete {
                Some(position as u64)
            } else {
                call.index
            };
            self.tool_call(wire_index, call, out)?;
        }
        Ok(())
    }

    fn tool_call(
        &mut self,
        wire_index: Option<u64>,
        call: WireToolCall,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        let id = call.id.filter(|s| !s.is_empty());
        let (name, arguments) = match call.function {
            Some(f) => (f.name.filter(|s| !s.is_empty()), f.arguments),
            None => (None, None),
        };
        let same_id = |c: &PartialCall| match &id {
            Some(id) => c.id.is_empty() || c.id == *id,
            None => true,
        };
        let existing = match wire_index {
            Some(i) => self
                .by_wire_index
                .get(&i)
                .copied()
                .filter(|&p| self.calls.get(p).is_some_and(same_id)),
            None => match &id {
                Some(id) => self.calls.iter().rposition(|c| c.id == *id),
                None => self.calls.len().checked_sub(1),
            },
        };
        let position = match existing {
            Some(p) => {
                if let Some(c) = self.calls.get_mut(p) {
                    if c.id.is_empty() {
                        if let Some(id) = id {
                            c.id = id;
                        }
                    }
                    if c.name.is_empty() {
                        if let Some(name) = name {
                            c.name = name;
                        }
                    }
                }
                p
            }
            None => {
                if self.calls.len() >= self.opts.max_tool_calls {
                    return Err(LlmError::TooManyToolCalls {
                        limit: self.opts.max_tool_calls,
                    });
                }
                let call = PartialCall {
                    id: id.unwrap_or_default(),
                    name: name.unwrap_or_default(),
                    arguments: String::new(),
                };
                self.prose.count(call.id.len() + call.name.len())?;
                let p = self.calls.len();
                out.push(Delta::ToolCallStart {
                    index: p,
                    id: call_id(&call.id, p),
                    name: call.name.clone(),
                });
                self.calls.push(call);
                if let Some(i) = wire_index {
                    self.by_wire_index.insert(i, p);
                }
                p
            }
        };
        let fragment = match arguments {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
        };
        if !fragment.is_empty() {
            self.prose.count(fragment.len())?;
            if let Some(c) = self.calls.get_mut(position) {
                c.arguments.push_str(&fragment);
            }
            out.push(Delta::ToolCallArgs {
                index: position,
                fragment,
            });
        }
        Ok(())
    }

    fn usage(&mut self, usage: Option<WireUsage>, groq: Option<WireGroq>, out: &mut Vec<Delta>) {
        if let Some(u) = usage.or_else(|| groq.and_then(|g| g.usage)) {
            let u = u.to_usage();
            self.usage = Some(u);
            out.push(Delta::Usage(u));
        }
    }

    fn finish_reason(&mut self, reason: Option<String>, out: &mut Vec<Delta>) {
        if let Some(r) = reason.filter(|s| !s.is_empty()) {
            let r = FinishReason::from_wire(&r);
            if self.finish_reason.as_ref() != Some(&r) {
                self.finish_reason = Some(r.clone());
                out.push(Delta::Finish(r));
            }
        }
    }

    fn base(&self) -> Completion {
        Completion {
            id: self.prose.id.clone(),
            model: self.prose.model.clone(),
            text: self.prose.text.clone(),
            reasoning: self.prose.reasoning.clone(),
            refusal: (!self.refusal.is_empty()).then(|| self.refusal.clone()),
            tool_calls: Vec::new(),
            usage: self.usage,
            finish_reason: self.finish_reason.clone(),
        }
    }

    /// The completion so far; arguments that do not parse are kept as a JSON string.
    fn partial(&self) -> Completion {
        let mut c = self.base();
        c.tool_calls = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| partial_call(i, &call.id, &call.name, &call.arguments, None))
            .collect();
        c
    }

    /// The finished completion; arguments that do not parse are an error.
    fn complete(&self) -> Result<Completion, LlmError> {
        let mut c = self.base();
        for (i, call) in self.calls.iter().enumerate() {
            c.tool_calls.push(finished_call(
                i,
                &call.id,
                &call.name,
                &call.arguments,
                None,
                "",
            )?);
        }
        Ok(c)
    }
}

// ---------------------------------------------------------------------------------------------
// The format.

/// The Chat Completions wire format.
pub struct ChatCompletions;

impl WireFormat for ChatCompletions {
    const NAME: &'static str = "openai";
    type Decoder = ChatDecoder;

    fn chat_url(base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/chat/completions")
    }

    fn request_body(request: &ChatRequest, model: &str) -> Value {
        request_body(request, model)
    }
}

/// Reads one Chat Completions response: SSE `data` payloads (a JSON chunk or `[DONE]`), or a
/// whole `chat.completion` body.
#[derive(Debug)]
pub struct ChatDecoder {
    acc: Accumulator,
    /// `[DONE]` came; later payloads are ignored.
    done: bool,
}

impl ChatDecoder {
    /// One SSE `data` payload. Empty payloads are ignored, and so is anything after `[DONE]`.
    fn data(&mut self, data: &str, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            self.acc.prose.flush(out);
            return Ok(());
        }
        let chunk: WireChunk = parse_payload(data)?;
        self.acc.prose.identity(chunk.id, chunk.model);
        for choice in chunk.choices.into_iter().flatten() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                self.acc.message(delta, false, out)?;
            }
            self.acc.finish_reason(choice.finish_reason, out);
        }
        self.acc.usage(chunk.usage, chunk.x_groq, out);
        Ok(())
    }
}

impl ResponseDecoder for ChatDecoder {
    const FRAMING: Framing = Framing::SseOrJson;

    fn new(opts: StreamOptions) -> Self {
        ChatDecoder {
            acc: Accumulator::new(opts),
            done: false,
        }
    }

    /// An `error` event is a provider error; anything else is a `data` payload.
    fn payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let data = String::from_utf8_lossy(payload.data);
        if payload.event == Some("error") && !self.done {
            return Err(match serde_json::from_str::<Value>(&data) {
                Ok(value) => provider_error_in(&value).unwrap_or_else(|| error_from(&value)),
                Err(_) => error_from(&Value::String(data.into_owned())),
            });
        }
        self.data(&data, out)
    }

    fn whole_body(&mut self, body: &[u8], out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let text = String::from_utf8_lossy(body);
        let response: WireResponse = parse_payload(text.trim())?;
        let acc = &mut self.acc;
        acc.prose.identity(response.id, response.model);
        let mut choices = response.choices.unwrap_or_default();
        let zero = choices
            .iter()
            .enumerate()
            .position(|(i, c)| c.index.unwrap_or(i as u64) == 0)
            .unwrap_or(0);
        if zero >= choices.len() {
            return Err(LlmError::Malformed(
                "the response has no choices".to_owned(),
            ));
        }
        let choice = choices.swap_remove(zero);
        if let Some(message) = choice.message {
            acc.message(message, true, out)?;
        }
        acc.prose.flush(out);
        acc.finish_reason(choice.finish_reason, out);
        acc.usage(response.usage, response.x_groq, out);
        self.done = true;
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_early(&mut self) -> Result<(), LlmError> {
        self.acc.prose.flush(&mut Vec::new());
        Ok(())
    }

    fn partial(&self) -> Completion {
        self.acc.partial()
    }

    fn complete(&mut self, _out: &mut Vec<Delta>) -> Result<Completion, LlmError> {
        self.acc.complete()
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.

/// A Chat Completions response body, fed as raw bytes in whatever chunks HTTP delivers.
/// The body may be an SSE stream or, from servers that ignore `"stream": true` or answer with
/// an error object, one JSON document (told apart by its first non-blank byte, `{`); a JSON
/// body yields its deltas at [`ResponseStream::finish`].
pub type OpenAiStream = ResponseStream<ChatDecoder>;

/// Accumulates a Chat Completions stream from its SSE `data` payloads, for callers that do
/// their own SSE decoding.
#[derive(Debug)]
pub struct ChatStream {
    decoder: ChatDecoder,
    failed: Failure,
}

impl Default for ChatStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ChatStream {
    pub fn new() -> Self {
        Self::with_options(StreamOptions::default())
    }

    pub fn with_options(opts: StreamOptions) -> Self {
        ChatStream {
            decoder: ChatDecoder::new(opts),
            failed: Failure::default(),
        }
    }

    /// Takes one SSE `data` payload (a JSON chunk or `[DONE]`) and returns the deltas it
    /// produces. Empty payloads are ignored, and so is anything after `[DONE]`. After an
    /// error the stream is over: it returns the same error again.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<Delta>, LlmError> {
        self.failed.check()?;
        let mut out = Vec::new();
        let result = self.decoder.data(data, &mut out);
        self.failed.keep(result)?;
        Ok(out)
    }

    /// Whether `[DONE]` was received.
    pub fn is_done(&self) -> bool {
        self.decoder.done
    }

    /// Everything received so far (tool arguments that do not parse yet are kept as a JSON
    /// string). Text held back for a possible `<think>` tag is not included.
    pub fn partial(&self) -> Completion {
        self.decoder.partial()
    }

    /// Ends the stream: the completion, or [`LlmError::Truncated`] (with the partial
    /// completion) if `[DONE]` never came, or the error that stopped the stream.
    pub fn finish(mut self) -> Result<Completion, LlmError> {
        if let Some(err) = self.failed.take() {
            return Err(err);
        }
        let done = self.decoder.done;
        conclude(self.decoder, done, &mut Vec::new())
    }
}

/// Reads a whole streamed body delivered as `chunks`, passing each delta to `on_delta`.
/// A stream that ends without `[DONE]` is [`LlmError::Truncated`], carrying the partial
/// completion.
pub fn read_stream<I, B>(
    chunks: I,
    opts: StreamOptions,
    mut on_delta: impl FnMut(Delta),
) -> Result<Completion, LlmError>
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    let mut stream = OpenAiStream::with_options(opts);
    for chunk in chunks {
        stream
            .feed(chunk.as_ref())?
            .into_iter()
            .for_each(&mut on_delta);
    }
    let (tail, completion) = stream.finish()?;
    tail.into_iter().for_each(on_delta);
    Ok(completion)
}

/// Parses a non-streaming Chat Completions response body (`"object": "chat.completion"`).
/// An `{"error": …}` body is a [`LlmError::Provider`]; a body whose JSON ends early is
/// [`LlmError::Truncated`] (with an empty partial completion).
pub fn parse_response(body: &[u8]) -> Result<Completion, LlmError> {
    parse_response_with(body, &StreamOptions::default())
}

/// [`parse_response`] with explicit options.
pub fn parse_response_with(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
    ChatCompletions::parse_response(body, opts)
}
