//! The Google Gemini wire format: `models/{model}:generateContent` and
//! `:streamGenerateContent`, request and response.
//!
//! Response quirks this parser handles:
//!
//! * **Two stream framings.** With `?alt=sse` the stream is Server-Sent Events, one
//!   `data: {…}` per chunk. Without it the body is *one JSON array* sent incrementally
//!   (`[{…}\r\n,{…}\r\n]`), so nothing can be parsed until an element is complete.
//!   [`GeminiStream`] tells them apart by the first non-blank byte (`[` array, `{` a single
//!   JSON object — a non-streaming `generateContent` body or an error — anything else SSE) and
//!   cuts the array into elements as bytes arrive by tracking string, escape and bracket depth
//!   (a loop, not recursion; an element is capped at `max_response_bytes`). Every chunk has the
//!   shape of a whole non-streaming response.
//! * **End of stream.** The array ends with `]`; SSE has no end marker at all, so an SSE
//!   stream is complete only if a chunk carried a `finishReason` (or reported a blocked
//!   prompt). Otherwise the body was cut off: [`LlmError::Truncated`] with what arrived.
//! * **Parts.** `candidates[0].content.parts[]` holds `text` parts (`"thought": true` marks
//!   reasoning; other text is the answer, still routed through [`crate::llm::think`] for
//!   `<think>` tags) and `functionCall {name, args, id?}` parts, each call whole in one part
//!   with `args` an object. A `thoughtSignature` next to a `functionCall` in its part must be
//!   echoed back in the next request ([`ToolCall::signature`](crate::llm::ToolCall), sent by
//!   [`request_body`]); one on a text part is not needed for the conversation and is dropped.
//!   Calls without an `id` get `call_<index>`.
//! * **Finish reasons.** `STOP` → Stop (ToolCalls when the answer made tool calls: Gemini
//!   has no reason of its own for that), `MAX_TOKENS` → Length, the safety family (`SAFETY`,
//!   `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`) → ContentFilter,
//!   anything else verbatim.
//! * **Usage** comes in every chunk as running totals; the last one wins and is sent as a
//!   delta once, when the answer finishes. Gemini counts thinking (`thoughtsTokenCount`)
//!   apart from `candidatesTokenCount`; [`Usage`] counts reasoning *within* completion
//!   tokens, so `completion_tokens` is their sum (and prompt + completion = total, as Gemini
//!   reports it).
//! * **Errors.** An `{"error": {code, message, status}}` element (a quota error can arrive
//!   mid-stream under HTTP 200) is [`LlmError::Provider`] with `kind` = status. A chunk with no
//!   candidates whose `promptFeedback.blockReason` is set means the prompt itself was refused;
//!   that is a [`LlmError::Provider`] too (kind = the block reason), because there is no answer
//!   to show and retrying the same prompt cannot help.
//!
//! Request quirks ([`request_body`]): roles are `user` and `model`; system messages go to
//! `systemInstruction`; tool results are `functionResponse` parts in a user turn and are
//! matched by *function name*, not id, so the name is looked up from the assistant call with
//! that id; Gemini's schema dialect (an OpenAPI subset) rejects many JSON-Schema keys, so tool
//! parameters are filtered to what it accepts.

use crate::llm::body::Framing;
use crate::llm::collect::{cut_short, Collector};
use crate::llm::completion::{Completion, Delta, FinishReason, StreamOptions, Usage};
use crate::llm::error::{bounded, invalid_json, provider_error_in, LlmError};
use crate::llm::format::{parse_body, Payload, ResponseDecoder, ResponseStream, WireFormat};
use crate::llm::request::{arguments_object, tool_name_for, tool_parts, ChatRequest, Message};
use serde::Deserialize;
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// Requests.

/// The `generateContent` / `streamGenerateContent` JSON body for `request`. The model is part
/// of the URL, not the body, so `_model` is unused (it is taken for the common signature of
/// the wire formats).
pub fn request_body(request: &ChatRequest, _model: &str) -> Value {
    let mut system: Vec<Value> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    // The previous message was a tool result: Gemini wants the results of one round of
    // calls together in one user turn.
    let mut after_tool_result = false;
    for (position, message) in request.messages.iter().enumerate() {
        let mut tool_result = false;
        match message {
            // Gemini has one system instruction: every system message is a part of it, in
            // order. Empty text parts are rejected by the API.
            Message::System(text) => {
                if !text.is_empty() {
                    system.push(json!({ "text": text }));
                }
            }
            Message::User(text) => {
                contents.push(json!({"role": "user", "parts": [{"text": text}]}));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts = Vec::new();
                if !content.is_empty() {
                    parts.push(json!({ "text": content }));
                }
                for call in tool_calls {
                    let mut part = Map::new();
                    part.insert(
                        "functionCall".into(),
                        json!({"name": call.name, "args": arguments_object(&call.arguments)}),
                    );
                    if let Some(signature) = &call.signature {
                        part.insert("thoughtSignature".into(), signature.as_str().into());
                    }
                    parts.push(Value::Object(part));
                }
                // A turn without parts is rejected ("contents.parts must not be empty"); an
                // empty answer carries nothing anyway.
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                tool_result = true;
                // Without the call (a trimmed history), the id is the best name there is.
                let name = tool_name_for(&request.messages, position, tool_call_id)
                    .unwrap_or(tool_call_id);
                let part = json!({
                    "functionResponse": {"name": name, "response": {"content": content}}
                });
                let merged = after_tool_result
                    && contents
                        .last_mut()
                        .and_then(|c| c.get_mut("parts"))
                        .and_then(Value::as_array_mut)
                        .map(|parts| parts.push(part.clone()))
                        .is_some();
                if !merged {
                    contents.push(json!({"role": "user", "parts": [part]}));
                }
            }
        }
        after_tool_result = tool_result;
    }

    if let Some(at) =
        crate::llm::request::last_user(&contents).filter(|_| !request.images.is_empty())
    {
        if let Some(Value::Array(parts)) = contents[at].get_mut("parts") {
            for image in &request.images {
                parts.push(
                    json!({"inlineData": {"mimeType": image.media_type, "data": image.base64}}),
                );
            }
        }
    }
    let mut body = Map::new();
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({ "parts": system }));
    }
    body.insert("contents".into(), Value::Array(contents));
    let declarations: Vec<Value> = request.tools.iter().filter_map(declaration).collect();
    if !declarations.is_empty() {
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
    }
    let mut config = Map::new();
    if let Some(t) = request.temperature {
        config.insert("temperature".into(), t.into());
    }
    if let Some(n) = request.max_tokens {
        config.insert("maxOutputTokens".into(), n.into());
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    Value::Object(body)
}

/// A `functionDeclarations` entry for a tool schema (plain or OpenAI-wrapped).
fn declaration(tool: &Value) -> Option<Value> {
    let (name, description, parameters) = tool_parts(tool)?;
    let mut decl = Map::new();
    decl.insert("name".into(), name.into());
    if let Some(d) = description.filter(|d| d.is_string()) {
        decl.insert("description".into(), d.clone());
    }
    if let Some(p) = parameters {
        let schema = gemini_schema(p, 0);
        // A tool without parameters must omit them: an object schema with no properties is
        // rejected ("properties: should be non-empty for OBJECT type").
        let has_properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|props| !props.is_empty());
        if has_properties {
            decl.insert("parameters".into(), schema);
        }
    }
    Some(Value::Object(decl))
}

/// Schema keys Gemini accepts and that hold plain values (no sub-schemas).
const PLAIN_SCHEMA_KEYS: &[&str] = &[
    "description",
    "title",
    "nullable",
    "enum",
    "required",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "pattern",
    "default",
    "example",
    "propertyOrdering",
];

/// The only `format` values Gemini accepts (others are a 400).
const FORMATS: &[&str] = &["enum", "date-time", "float", "double", "int32", "int64"];

/// Nesting beyond this is cut (to an unconstrained `{}`). Our schemas are a few levels
/// deep; the cap only keeps a pathological one from exhausting the stack.
const MAX_SCHEMA_DEPTH: usize = 32;

/// `schema` in Gemini's dialect: unsupported keys (`additionalProperties`, `$schema`,
/// `$ref`, `const`, …) dropped, `oneOf` read as `anyOf`, a type list `["string", "null"]`
/// turned into `"string"` + `nullable`, `properties` / `required` kept only on objects and
/// `required` limited to declared properties (Gemini rejects both mistakes).
fn gemini_schema(schema: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        // `true` (anything) or garbage: no constraint.
        return json!({});
    };
    if depth >= MAX_SCHEMA_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    let mut nullable = false;
    for (key, value) in obj {
        match key.as_str() {
            "type" => match value {
                Value::String(_) => {
                    out.insert("type".into(), value.clone());
                }
                Value::Array(types) => {
                    nullable |= types.iter().any(|t| t == "null");
                    if let Some(t) = types.iter().find(|t| t.is_string() && *t != "null") {
                        out.insert("type".into(), t.clone());
                    }
                }
                _ => {}
            },
            "properties" => {
                if let Some(props) = value.as_object() {
                    let props: Map<String, Value> = props
                        .iter()
                        .map(|(name, s)| (name.clone(), gemini_schema(s, depth + 1)))
                        .collect();
                    out.insert("properties".into(), Value::Object(props));
                }
            }
            "items" => {
                out.insert("items".into(), gemini_schema(value, depth + 1));
            }
            "anyOf" | "oneOf" => {
                if let Some(options) = value.as_array() {
                    let options = options.iter().map(|s| gemini_schema(s, depth + 1));
                    match out.get_mut("anyOf").and_then(Value::as_array_mut) {
                        Some(existing) => existing.extend(options),
                        None => {
                            out.insert("anyOf".into(), options.collect());
                        }
                    }
                }
            }
            "format" if value.as_str().is_some_and(|f| FORMATS.contains(&f)) => {
                out.insert(key.clone(), value.clone());
            }
            k if PLAIN_SCHEMA_KEYS.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    if nullable {
        out.insert("nullable".into(), true.into());
    }
    if !out.contains_key("type") && out.contains_key("properties") {
        out.insert("type".into(), "object".into());
    }
    let is_object = out
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("object"));
    if !is_object {
        out.remove("properties");
        out.remove("required");
    }
    let declared: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| r.as_str().is_some_and(|r| declared.iter().any(|d| d == r)));
    }
    if out
        .get("required")
        .is_some_and(|r| r.as_array().is_none_or(Vec::is_empty))
    {
        out.remove("required");
    }
    Value::Object(out)
}

// ---------------------------------------------------------------------------------------------
// Wire types of a response chunk. Every field is optional and unknown fields are ignored.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    candidates: Option<Vec<WireCandidate>>,
    usage_metadata: Option<WireUsage>,
    model_version: Option<String>,
    response_id: Option<String>,
    prompt_feedback: Option<WireFeedback>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCandidate {
    index: Option<u64>,
    content: Option<WireContent>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireContent {
    parts: Option<Vec<WirePart>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    text: Option<String>,
    thought: Option<bool>,
    function_call: Option<WireFunctionCall>,
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct WireFunctionCall {
    id: Option<String>,
    name: Option<String>,
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    total_token_count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFeedback {
    block_reason: Option<String>,
    block_reason_message: Option<String>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        let prompt = self.prompt_token_count.unwrap_or(0);
        let completion = self
            .candidates_token_count
            .unwrap_or(0)
            .saturating_add(self.thoughts_token_count.unwrap_or(0));
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: self
                .total_token_count
                .unwrap_or_else(|| prompt.saturating_add(completion)),
            reasoning_tokens: self.thoughts_token_count,
            cached_tokens: self.cached_content_token_count,
        }
    }
}

/// A Gemini `finishReason` as a [`FinishReason`].
fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

// ---------------------------------------------------------------------------------------------
// The format.

/// The Gemini `generateContent` wire format.
pub struct GenerateContent;

impl WireFormat for GenerateContent {
    const NAME: &'static str = "gemini";
    type Decoder = GeminiDecoder;

    fn chat_url(base: &str, model: &str, stream: bool) -> String {
        // `models/` may be part of the configured model name already.
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }

    fn auth_header(key: &str) -> (&'static str, String) {
        ("x-goog-api-key", key.to_owned())
    }

    fn request_body(request: &ChatRequest, model: &str) -> Value {
        request_body(request, model)
    }

    /// A complete body, also a whole streamed one in either framing.
    fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
        parse_body::<GeminiDecoder>(body, opts)
    }
}

/// Reads one Gemini response: every payload (SSE event, array element or whole body) is a
/// `GenerateContentResponse` chunk.
#[derive(Debug)]
pub struct GeminiDecoder {
    collector: Collector,
    /// A chunk carried a `finishReason`: the only sign that an SSE stream is complete.
    finished: bool,
}

impl ResponseDecoder for GeminiDecoder {
    const FRAMING: Framing = Framing::SseArrayOrJson;

    fn new(opts: StreamOptions) -> Self {
        GeminiDecoder {
            collector: Collector::new(opts),
            finished: false,
        }
    }

    /// One chunk: a whole `GenerateContentResponse` (or an error).
    fn payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let payload = payload.data;
        if payload.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let json_error = |e: serde_json::Error| invalid_json(&e, &String::from_utf8_lossy(payload));
        let value: Value = serde_json::from_slice(payload).map_err(json_error)?;
        if let Some(err) = provider_error_in(&value) {
            return Err(err);
        }
        let response: WireResponse = serde_json::from_value(value).map_err(json_error)?;
        self.collector
            .prose
            .identity(response.response_id, response.model_version);
        if let Some(usage) = &response.usage_metadata {
            self.collector.set_usage(usage.to_usage());
        }
        let mut candidates = response.candidates.unwrap_or_default();
        // The answer is candidate 0; with `candidateCount` > 1 the others are ignored.
        let zero = candidates
            .iter()
            .enumerate()
            .position(|(i, c)| c.index.unwrap_or(i as u64) == 0);
        let Some(zero) = zero else {
            if let Some(feedback) = response.prompt_feedback {
                if let Some(reason) = feedback.block_reason.filter(|r| !r.is_empty()) {
                    return Err(blocked(&reason, feedback.block_reason_message.as_deref()));
                }
            }
            // A chunk with only usage or metadata.
            return Ok(());
        };
        let candidate = candidates.swap_remove(zero);
        let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
        for part in parts {
            if let Some(call) = part.function_call {
                let arguments = match call.args {
                    None | Some(Value::Null) => String::new(),
                    Some(args) => args.to_string(),
                };
                self.collector.tool_call(
                    call.id,
                    call.name.unwrap_or_default(),
                    arguments,
                    part.thought_signature.filter(|s| !s.is_empty()),
                    out,
                )?;
            }
            if let Some(text) = part.text {
                if part.thought == Some(true) {
                    self.collector.prose.reasoning(&text, out)?;
                } else {
                    self.collector.prose.text(&text, out)?;
                }
            }
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.collector.set_finish(finish_reason(&reason));
            self.finished = true;
            self.collector.settle(out);
        }
        Ok(())
    }

    /// An SSE stream has no end marker: a last event cut short is the cut, not garbage.
    fn last_payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if cut_short(payload.data) {
            return Ok(());
        }
        self.payload(payload, out)
    }

    fn framing_closed(&mut self, out: &mut Vec<Delta>) {
        self.collector.settle(out);
    }

    fn is_done(&self) -> bool {
        self.finished
    }

    fn end_early(&mut self) -> Result<(), LlmError> {
        self.collector.settle(&mut Vec::new());
        Ok(())
    }

    fn partial(&self) -> Completion {
        self.collector.partial()
    }

    fn complete(&mut self, out: &mut Vec<Delta>) -> Result<Completion, LlmError> {
        self.collector.settle(out);
        self.collector.complete()
    }
}

/// A Gemini response body, fed as raw bytes in whatever chunks HTTP delivers: SSE, a streamed
/// JSON array or a single JSON object (see the module documentation). A single object yields
/// its deltas at the end.
pub type GeminiStream = ResponseStream<GeminiDecoder>;

/// The error for a prompt Gemini refused to answer at all.
fn blocked(reason: &str, message: Option<&str>) -> LlmError {
    let mut text = format!("Gemini blocked the prompt ({reason})");
    if let Some(m) = message.filter(|m| !m.is_empty()) {
        text.push_str(": ");
        text.push_str(m);
    }
    LlmError::Provider {
        message: bounded(&text),
        kind: Some(bounded(reason)),
        code: None,
    }
}

/// Parses a complete `generateContent` body (also a whole streamed body, in either framing).
/// An `{"error": …}` body is [`LlmError::Provider`]; a body cut short is
/// [`LlmError::Truncated`].
pub fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
    GenerateContent::parse_response(body, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::completion::ToolCall;

    fn call(id: &str, name: &str, args: Value, signature: Option<&str>) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args,
            signature: signature.map(Into::into),
        }
    }

    #[test]
    fn request_roles_system_and_generation_config() {
        let request = ChatRequest {
            messages: vec![
                Message::System("Be brief.".into()),
                Message::User("Hi".into()),
                Message::Assistant {
                    content: "Hello!".into(),
                    tool_calls: vec![],
                },
                Message::System("Use org syntax.".into()),
                Message::User("Again".into()),
            ],
            temperature: Some(0.5),
            max_tokens: Some(100),
            stream: true,
            ..ChatRequest::default()
        };
        let body = request_body(&request, "gemini-2.5-flash");
        assert_eq!(
            body,
            json!({
                "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Use org syntax."}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "Hi"}]},
                    {"role": "model", "parts": [{"text": "Hello!"}]},
                    {"role": "user", "parts": [{"text": "Again"}]},
                ],
                "generationConfig": {"temperature": 0.5, "maxOutputTokens": 100},
            })
        );
        // Nothing optional when nothing is set.
        let bare = request_body(
            &ChatRequest {
                messages: vec![Message::User("x".into())],
                ..ChatRequest::default()
            },
            "m",
        );
        assert_eq!(
            bare,
            json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]})
        );
    }

    #[test]
    fn request_tool_calls_signatures_and_results() {
        let request = ChatRequest {
            messages: vec![
                Message::User("Weather in Paris and Rome?".into()),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![
                        call("call_0", "weather", json!({"city": "Paris"}), Some("sig-A")),
                        call("abc", "forecast", json!({"city": "Rome"}), None),
                    ],
                },
                Message::Tool {
                    tool_call_id: "call_0".into(),
                    content: "sunny".into(),
                },
                Message::Tool {
                    tool_call_id: "abc".into(),
                    content: "rain".into(),
                },
                Message::Tool {
                    tool_call_id: "unknown".into(),
                    content: "?".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![],
                },
                Message::User("Thanks".into()),
            ],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m");
        assert_eq!(
            body["contents"],
            json!([
                {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "weather", "args": {"city": "Paris"}},
                     "thoughtSignature": "sig-A"},
                    {"functionCall": {"name": "forecast", "args": {"city": "Rome"}}},
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "weather", "response": {"content": "sunny"}}},
                    {"functionResponse": {"name": "forecast", "response": {"content": "rain"}}},
                    {"functionResponse": {"name": "unknown", "response": {"content": "?"}}},
                ]},
                {"role": "user", "parts": [{"text": "Thanks"}]},
            ])
        );
    }

    #[test]
    fn request_arguments_are_always_objects() {
        let request = ChatRequest {
            messages: vec![Message::Assistant {
                content: "ok".into(),
                tool_calls: vec![
                    call("a", "f", Value::Null, None),
                    call("b", "g", json!("{\"x\": 1}"), None),
                    call("c", "h", json!([1]), None),
                ],
            }],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m");
        let parts = &body["contents"][0]["parts"];
        assert_eq!(parts[0], json!({"text": "ok"}));
        assert_eq!(parts[1]["functionCall"]["args"], json!({}));
        assert_eq!(parts[2]["functionCall"]["args"], json!({"x": 1}));
        assert_eq!(parts[3]["functionCall"]["args"], json!({"value": [1]}));
    }

    #[test]
    fn tools_become_function_declarations_in_gemini_schema() {
        let wrapped = json!({"type": "function", "function": {
            "name": "search",
            "description": "Search notes",
            "parameters": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "query": {"type": "string", "description": "words", "format": "uri"},
                    "limit": {"type": ["integer", "null"], "minimum": 1},
                    "when": {"type": "string", "format": "date-time"},
                    "tags": {"type": "array", "items": {"type": "string", "const": "x"}},
                    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
                    "mode": {"oneOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "integer"}]},
                    "odd": {"type": "string", "properties": {"x": {}}, "required": ["x"]},
                },
                "required": ["query", "missing"],
            },
        }});
        let plain = json!({"name": "now", "description": "The time",
                           "parameters": {"type": "object", "properties": {},
                                          "additionalProperties": false}});
        let bare = json!({"name": "ping"});
        let nameless = json!({"description": "no name"});
        let request = ChatRequest {
            messages: vec![Message::User("x".into())],
            tools: vec![wrapped, plain, bare, nameless],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "m");
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [
                {"name": "search", "description": "Search notes", "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "words"},
                        "limit": {"type": "integer", "nullable": true, "minimum": 1},
                        "when": {"type": "string", "format": "date-time"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "meta": {"type": "object"},
                        "mode": {"anyOf": [{"type": "string", "enum": ["a", "b"]},
                                           {"type": "integer"}]},
                        "odd": {"type": "string"},
                    },
                    "required": ["query"],
                }},
                {"name": "now", "description": "The time"},
                {"name": "ping"},
            ]}])
        );
    }

    #[test]
    fn schema_depth_is_capped() {
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({"type": "array", "items": schema});
        }
        let out = gemini_schema(&schema, 0);
        let mut depth = 0;
        let mut node = &out;
        while let Some(next) = node.get("items") {
            node = next;
            depth += 1;
        }
        assert_eq!(depth, MAX_SCHEMA_DEPTH);
        assert_eq!(node, &json!({}));
    }

    /// Found by the fuzz suite: a bad element followed by a bad byte in the same chunk
    /// reported the later error, and only when the body came in one piece.
    #[test]
    fn errors_come_in_stream_order_however_the_body_is_cut() {
        let body = br#"[{"candidates":[{"content":{"parts":[{"text":"\ud83d"}]}}]},
0]"#;
        let run = |chunks: Vec<&[u8]>| {
            let mut p = GeminiStream::with_options(StreamOptions::default());
            let mut result = Ok(Vec::new());
            for c in chunks {
                result = p.feed(c);
                if result.is_err() {
                    break;
                }
            }
            result
        };
        let whole = run(vec![&body[..]]);
        assert!(
            matches!(whole, Err(LlmError::InvalidJson { .. })),
            "{whole:?}"
        );
        assert_eq!(whole, run(body.chunks(1).collect()));
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("STOP"), FinishReason::Stop);
        assert_eq!(finish_reason("MAX_TOKENS"), FinishReason::Length);
        for r in ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT"] {
            assert_eq!(finish_reason(r), FinishReason::ContentFilter);
        }
        assert_eq!(
            finish_reason("MALFORMED_FUNCTION_CALL"),
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into())
        );
    }

    #[test]
    fn usage_counts_thinking_as_completion() {
        let u: WireUsage = serde_json::from_value(json!({
            "promptTokenCount": 10, "candidatesTokenCount": 5, "thoughtsTokenCount": 7,
            "cachedContentTokenCount": 4, "totalTokenCount": 22
        }))
        .unwrap();
        assert_eq!(
            u.to_usage(),
            Usage {
                prompt_tokens: 10,
                completion_tokens: 12,
                total_tokens: 22,
                reasoning_tokens: Some(7),
                cached_tokens: Some(4),
            }
        );
    }
}
