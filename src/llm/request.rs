//! A chat request as every wire format receives it: the conversation ([`Message`]s), the
//! tool schemas and the sampling settings ([`ChatRequest`]), and the helpers several formats
//! use to put them on their wire. Nothing here knows a wire format; they all build on it.

use crate::llm::completion::ToolCall;
use serde_json::{json, Value};

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    /// An earlier answer, with the tool calls it made (echoed back with their ids).
    Assistant {
        content: String,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of the tool call `tool_call_id`.
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A Chat Completions request (the model comes from the [`Backend`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// Function schemas, `{"name", "description", "parameters"}` (wrapped as
    /// `{"type": "function", "function": …}`); a value that already has a `type` is sent as
    /// is.
    pub tools: Vec<Value>,
    /// Ask for an SSE stream (with usage in the last chunk) instead of one JSON body.
    pub stream: bool,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u64>,
    /// How many bytes at the start of the system text stay the same from one request of a
    /// conversation to the next (the prompts, not the notes or this request's boundary):
    /// a wire format with prompt caching marks the cache there. `None`: nothing to mark.
    pub cache_prefix: Option<usize>,
    /// Images that go with the last user message, for a model that sees them (a backend
    /// with `:vision t`); another backend gets the request without them.
    pub images: Vec<Image>,
}

/// An image sent with a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The image's bytes, base64-encoded (standard alphabet, padded).
    pub base64: String,
}

impl Image {
    /// The media type of an image file named `name`, by its extension, if it is one the
    /// providers take.
    pub fn media_type_of(name: &str) -> Option<&'static str> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "gif" => "image/gif",
            "webp" => "image/webp",
            _ => return None,
        })
    }
}

/// The index of the last user message among `messages` (JSON, with a `"role"`), if any.
pub(crate) fn last_user(messages: &[serde_json::Value]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| m.get("role").and_then(serde_json::Value::as_str) == Some("user"))
}

impl ChatRequest {
    /// The request's settings with no messages and no tools.
    pub(crate) fn clone_settings(&self) -> ChatRequest {
        ChatRequest {
            messages: Vec::new(),
            tools: Vec::new(),
            stream: self.stream,
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            cache_prefix: None,
            images: Vec::new(),
        }
    }

    /// The estimated prompt tokens of the request: its messages and tool schemas.
    pub fn estimated_tokens(&self) -> u64 {
        let messages: usize = self
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
        let tools: usize = self.tools.iter().map(|t| t.to_string().len()).sum();
        (messages + tools).div_ceil(4) as u64
    }
}

/// A tool declaration in the `{"type": "function", "function": …}` shape OpenAI and Ollama
/// want; a declaration that already has a `type` is taken as it is.
pub(crate) fn function_tool(tool: &Value) -> Value {
    if tool.get("type").is_some() {
        tool.clone()
    } else {
        json!({"type": "function", "function": tool})
    }
}

/// Tool arguments as an object for a request: both Gemini (`args`, a `Struct`) and Ollama
/// (`arguments`) reject anything else. `null` (no arguments) is `{}`; a JSON string holding an
/// object (arguments kept raw from a cut-off response) is that object; anything else is
/// wrapped as `{"value": …}` so the request stays valid.
pub(crate) fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => Value::Object(serde_json::Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => serde_json::json!({ "value": arguments }),
        },
        other => serde_json::json!({ "value": other }),
    }
}

/// The name of the tool call `id` among the assistant messages before position `upto`.
pub(crate) fn tool_name_for<'a>(messages: &'a [Message], upto: usize, id: &str) -> Option<&'a str> {
    messages
        .get(..upto)
        .unwrap_or_default()
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls
                .iter()
                .find(|c| c.id == id)
                .map(|c| c.name.as_str()),
            _ => None,
        })
}

/// A tool schema as `(name, description, parameters)`, from a plain
/// `{"name", "description", "parameters"}` or an OpenAI-style
/// `{"type": "function", "function": {…}}`. `None` when it has no name.
pub(crate) fn tool_parts(tool: &Value) -> Option<(&str, Option<&Value>, Option<&Value>)> {
    let function = tool
        .get("function")
        .filter(|f| f.is_object())
        .unwrap_or(tool);
    let name = function.get("name")?.as_str()?;
    Some((
        name,
        function.get("description"),
        function.get("parameters"),
    ))
}
