//! Ollama's native chat API (`POST /api/chat`), request and response. (Ollama also speaks
//! the OpenAI format under `/v1`; the native API is the one that reports `thinking`
//! separately and takes `options` such as `num_predict`.)
//!
//! Response quirks this parser handles:
//!
//! * **NDJSON.** A streamed response is one JSON object per line, each
//!   `{"model", "created_at", "message": {"role", "content", "thinking"?, "tool_calls"?},
//!   "done": false}`; lines may be cut anywhere across HTTP chunks, so they are buffered (up
//!   to `max_line_len`, else [`LlmError::LineTooLong`]) and parsed whole. A non-streaming
//!   response is a single such object.
//! * **End of stream.** The last line has `"done": true` with `done_reason` (`"stop"`,
//!   `"length"`, `"load"`, …), `prompt_eval_count` and `eval_count`. Without it the body was
//!   cut off: [`LlmError::Truncated`] with what arrived. Lines after it are ignored.
//! * **Reasoning** comes in `message.thinking` (when the request enables `think`), or inside
//!   `content` as `<think>…</think>` (models whose template Ollama does not parse); both go
//!   through [`crate::llm::think`].
//! * **Tool calls** arrive whole: `{"function": {"name", "arguments", "index"?}, "id"?}` with
//!   `arguments` an *object* (older servers and proxies may send a JSON string: accepted).
//!   Every entry is a new call (Ollama does not stream a call in pieces). Calls without an
//!   `id` get `call_<index>`. Ollama reports `done_reason: "stop"` after tool calls; that is
//!   [`FinishReason::ToolCalls`] here, as from every other format.
//! * **Errors.** A line `{"error": "…"}` (Ollama sends one mid-stream under HTTP 200 when
//!   generation fails) is [`LlmError::Provider`].
//!
//! Request quirks ([`request_body`]): tool call `arguments` are objects, not strings; a tool
//! result names its tool (`tool_name`, looked up from the call with that id) instead of
//! carrying an id; sampling settings go under `options` (`num_predict` is the token limit).

use crate::llm::body::Framing;
use crate::llm::collect::{cut_short, Collector};
use crate::llm::completion::{Completion, Delta, FinishReason, StreamOptions, Usage};
use crate::llm::error::{invalid_json, provider_error_in, LlmError};
use crate::llm::format::{
    check_size, conclude, parse_body, Payload, ResponseDecoder, ResponseStream, WireFormat,
};
use crate::llm::request::{arguments_object, function_tool, tool_name_for, ChatRequest, Message};
use serde::Deserialize;
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// Requests.

/// The `/api/chat` JSON body for `request` and `model`.
pub fn request_body(request: &ChatRequest, model: &str) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(position, message)| match message {
            Message::System(content) => json!({"role": "system", "content": content}),
            Message::User(content) => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut obj = Map::new();
                obj.insert("role".into(), "assistant".into());
                obj.insert("content".into(), content.as_str().into());
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|call| {
                            json!({"function": {
                                "name": call.name,
                                // An object on this wire, not a JSON string.
                                "arguments": arguments_object(&call.arguments),
                            }})
                        })
                        .collect();
                    obj.insert("tool_calls".into(), Value::Array(calls));
                }
                Value::Object(obj)
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                // Ollama matches results to calls by tool name; without the call (a trimmed
                // history) the id is the best name there is.
                let name = tool_name_for(&request.messages, position, tool_call_id)
                    .unwrap_or(tool_call_id);
                json!({"role": "tool", "content": content, "tool_name": name})
            }
        })
        .collect();
    let mut messages = messages;
    if let Some(at) =
        crate::llm::request::last_user(&messages).filter(|_| !request.images.is_empty())
    {
        let images: Vec<Value> = request
            .images
            .iter()
            .map(|i| i.base64.as_str().into())
            .collect();
        messages[at]["images"] = Value::Array(images);
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), request.stream.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(function_tool).collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut options = Map::new();
    if let Some(t) = request.temperature {
        options.insert("temperature".into(), t.into());
    }
    if let Some(n) = request.max_tokens {
        options.insert("num_predict".into(), n.into());
    }
    if !options.is_empty() {
        body.insert("options".into(), Value::Object(options));
    }
    Value::Object(body)
}

// ---------------------------------------------------------------------------------------------
// Wire types of a response line. Every field is optional and unknown fields are ignored.

#[derive(Deserialize)]
struct WireChunk {
    model: Option<String>,
    message: Option<WireMessage>,
    done: Option<bool>,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<String>,
    thinking: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

// ---------------------------------------------------------------------------------------------
// The format.

/// Ollama's native `/api/chat` wire format.
pub struct ApiChat;

impl WireFormat for ApiChat {
    const NAME: &'static str = "ollama";
    type Decoder = OllamaDecoder;

    fn chat_url(base: &str, _model: &str, _stream: bool) -> String {
        format!("{base}/api/chat")
    }

    // Ollama has no keys, but a proxy in front of it may want a bearer token: the default.

    fn request_body(request: &ChatRequest, model: &str) -> Value {
        request_body(request, model)
    }

    /// A non-streaming response (one object, however it is laid out) or a whole NDJSON
    /// stream.
    fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
        check_size(body, opts)?;
        // One object (possibly pretty-printed by a proxy) is not cut into lines.
        match serde_json::from_slice::<Value>(body) {
            Ok(value) => {
                let mut decoder = OllamaDecoder::new(*opts);
                let mut ignored = Vec::new();
                decoder.value(value, &mut ignored)?;
                let done = decoder.done;
                conclude(decoder, done, &mut ignored)
            }
            Err(_) => parse_body::<OllamaDecoder>(body, opts),
        }
    }
}

/// Reads one `/api/chat` response, line by line; see the module documentation.
#[derive(Debug)]
pub struct OllamaDecoder {
    collector: Collector,
    /// The `done: true` line arrived.
    done: bool,
}

impl OllamaDecoder {
    /// One response object.
    fn value(&mut self, value: Value, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if self.done {
            return Ok(());
        }
        if let Some(err) = provider_error_in(&value) {
            return Err(err);
        }
        let chunk: WireChunk = serde_json::from_value(value)
            .map_err(|e| invalid_json(&e, "an Ollama response line"))?;
        self.collector.prose.identity(None, chunk.model);
        if let Some(message) = chunk.message {
            if let Some(thinking) = &message.thinking {
                self.collector.prose.reasoning(thinking, out)?;
            }
            if let Some(content) = &message.content {
                self.collector.prose.text(content, out)?;
            }
            for call in message.tool_calls.into_iter().flatten() {
                let (name, arguments) = match call.function {
                    Some(f) => (f.name.unwrap_or_default(), f.arguments),
                    None => (String::new(), None),
                };
                let arguments = match arguments {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                };
                self.collector
                    .tool_call(call.id, name, arguments, None, out)?;
            }
        }
        if chunk.done == Some(true) {
            self.done = true;
            if chunk.prompt_eval_count.is_some() || chunk.eval_count.is_some() {
                let prompt = chunk.prompt_eval_count.unwrap_or(0);
                let completion = chunk.eval_count.unwrap_or(0);
                self.collector.set_usage(Usage {
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    total_tokens: prompt.saturating_add(completion),
                    reasoning_tokens: None,
                    cached_tokens: None,
                });
            }
            // Servers before `done_reason` existed only ever stopped naturally.
            let reason = chunk.done_reason.filter(|r| !r.is_empty());
            self.collector.set_finish(
                reason
                    .as_deref()
                    .map_or(FinishReason::Stop, FinishReason::from_wire),
            );
            self.collector.settle(out);
        }
        Ok(())
    }
}

impl ResponseDecoder for OllamaDecoder {
    const FRAMING: Framing = Framing::Ndjson;

    fn new(opts: StreamOptions) -> Self {
        OllamaDecoder {
            collector: Collector::new(opts),
            done: false,
        }
    }

    /// One complete line (without its `\n`; a `\r` before it is whitespace to JSON).
    fn payload(&mut self, line: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let line = line.data;
        if self.done || line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| invalid_json(&e, &String::from_utf8_lossy(line)))?;
        self.value(value, out)
    }

    /// The last line, without its `\n`: one cut short is the cut, not garbage.
    fn last_payload(&mut self, line: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if cut_short(line.data) {
            return Ok(());
        }
        self.payload(line, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_early(&mut self) -> Result<(), LlmError> {
        self.collector.settle(&mut Vec::new());
        Ok(())
    }

    fn partial(&self) -> Completion {
        self.collector.partial()
    }

    fn complete(&mut self, _out: &mut Vec<Delta>) -> Result<Completion, LlmError> {
        self.collector.complete()
    }
}

/// An `/api/chat` response body, fed as raw bytes in whatever chunks HTTP delivers; see the
/// module documentation.
pub type OllamaStream = ResponseStream<OllamaDecoder>;

/// Parses a complete `/api/chat` body: a non-streaming response (one object, however it is
/// laid out) or a whole NDJSON stream. `{"error": …}` is [`LlmError::Provider`]; a body
/// without `done: true` is [`LlmError::Truncated`].
pub fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
    ApiChat::parse_response(body, opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::completion::ToolCall;

    #[test]
    fn request_shape() {
        let request = ChatRequest {
            messages: vec![
                Message::System("Be brief.".into()),
                Message::User("Weather?".into()),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_0".into(),
                        name: "weather".into(),
                        arguments: json!({"city": "Oslo"}),
                        signature: None,
                    }],
                },
                Message::Tool {
                    tool_call_id: "call_0".into(),
                    content: "snow".into(),
                },
                Message::Tool {
                    tool_call_id: "gone".into(),
                    content: "?".into(),
                },
            ],
            tools: vec![
                json!({"name": "weather", "parameters": {"type": "object"}}),
                json!({"type": "function", "function": {"name": "x"}}),
            ],
            stream: true,
            temperature: Some(0.2),
            max_tokens: Some(64),
            cache_prefix: None,
            images: Vec::new(),
        };
        assert_eq!(
            request_body(&request, "qwen3"),
            json!({
                "model": "qwen3",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": "",
                     "tool_calls": [{"function": {"name": "weather",
                                                  "arguments": {"city": "Oslo"}}}]},
                    {"role": "tool", "content": "snow", "tool_name": "weather"},
                    {"role": "tool", "content": "?", "tool_name": "gone"},
                ],
                "stream": true,
                "tools": [
                    {"type": "function", "function": {"name": "weather",
                                                      "parameters": {"type": "object"}}},
                    {"type": "function", "function": {"name": "x"}},
                ],
                "options": {"temperature": 0.2, "num_predict": 64},
            })
        );
        let bare = request_body(
            &ChatRequest {
                messages: vec![Message::User("x".into())],
                ..ChatRequest::default()
            },
            "m",
        );
        assert_eq!(
            bare,
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
                   "stream": false})
        );
    }

    #[test]
    fn line_limit_is_enforced_across_chunks() {
        let opts = StreamOptions {
            max_line_len: 16,
            ..StreamOptions::default()
        };
        let mut s = OllamaStream::with_options(opts);
        assert!(s.feed(b"{\"message\":").is_ok());
        assert_eq!(
            s.feed(b"{\"content\":"),
            Err(LlmError::LineTooLong { limit: 16 })
        );
        // The error sticks.
        assert_eq!(s.feed(b"\n"), Err(LlmError::LineTooLong { limit: 16 }));
    }
}
