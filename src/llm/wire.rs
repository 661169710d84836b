//! The wire formats a backend can speak, and what each one provides to the HTTP client.
//!
//! A wire format is a request body builder, a response parser (streamed bytes → [`Delta`]s →
//! [`Completion`]), a non-streaming response parser, an endpoint and an authentication header.
//! Everything else (timeouts, cancellation, HTTP errors, retry-after) is shared in
//! [`crate::llm::http`], so adding a provider is adding one file.

use crate::llm::anthropic::{self, AnthropicStream};
use crate::llm::completion::{Completion, Delta, StreamOptions};
use crate::llm::error::LlmError;
use crate::llm::gemini::{self, GeminiStream};
use crate::llm::ollama::{self, OllamaStream};
use crate::llm::openai::{self, OpenAiStream};
use crate::llm::request::ChatRequest;
use serde_json::Value;

/// A response body parser: takes the body as HTTP delivers it, chunk by chunk.
pub trait ResponseParser: Send {
    /// Takes the next chunk and returns the deltas it completes. After an error the parser
    /// is over and returns the same error again.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, LlmError>;
    /// Everything received so far (tool arguments that do not parse yet kept as a JSON
    /// string), for [`LlmError::Truncated`].
    fn partial(&self) -> Completion;
    /// Ends the body: the last deltas and the completion, or [`LlmError::Truncated`] when the
    /// body ended before the format's end marker.
    fn finish(self: Box<Self>) -> Result<(Vec<Delta>, Completion), LlmError>;
}

impl ResponseParser for OpenAiStream {
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, LlmError> {
        OpenAiStream::feed(self, bytes)
    }
    fn partial(&self) -> Completion {
        OpenAiStream::partial(self)
    }
    fn finish(self: Box<Self>) -> Result<(Vec<Delta>, Completion), LlmError> {
        OpenAiStream::finish(*self)
    }
}

/// The wire format of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// OpenAI Chat Completions and every compatible server.
    OpenAi,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Google Gemini `generateContent` / `streamGenerateContent` (SSE with `alt=sse`).
    Gemini,
    /// Ollama's native `/api/chat` (NDJSON).
    Ollama,
}

impl Wire {
    /// Every wire format, for listings and tests.
    pub const ALL: [Wire; 4] = [Wire::OpenAi, Wire::Anthropic, Wire::Gemini, Wire::Ollama];

    /// The format named `name` (`"openai"`, …), as users write it in their configuration.
    pub fn from_name(name: &str) -> Option<Wire> {
        Wire::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            Wire::OpenAi => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Gemini => "gemini",
            Wire::Ollama => "ollama",
        }
    }

    /// The chat endpoint under the API root `base`.
    pub fn chat_url(self, base: &str, model: &str, stream: bool) -> String {
        let base = base.trim_end_matches('/');
        match self {
            Wire::OpenAi => format!("{base}/chat/completions"),
            Wire::Anthropic => format!("{base}/messages"),
            // `models/` may be part of the configured model name already.
            Wire::Gemini => {
                let model = model.strip_prefix("models/").unwrap_or(model);
                if stream {
                    format!("{base}/models/{model}:streamGenerateContent?alt=sse")
                } else {
                    format!("{base}/models/{model}:generateContent")
                }
            }
            Wire::Ollama => format!("{base}/api/chat"),
        }
    }

    /// The JSON request body.
    pub fn request_body(self, request: &ChatRequest, model: &str) -> Value {
        match self {
            Wire::OpenAi => openai::request_body(request, model),
            Wire::Anthropic => anthropic::request_body(request, model),
            Wire::Gemini => gemini::request_body(request, model),
            Wire::Ollama => ollama::request_body(request, model),
        }
    }

    /// A parser for a response body.
    pub fn parser(self, opts: StreamOptions) -> Box<dyn ResponseParser> {
        match self {
            Wire::OpenAi => Box::new(OpenAiStream::with_options(opts)),
            Wire::Anthropic => Box::new(AnthropicStream::with_options(opts)),
            Wire::Gemini => Box::new(GeminiStream::with_options(opts)),
            Wire::Ollama => Box::new(OllamaStream::with_options(opts)),
        }
    }

    /// The header that carries the API key, and its value.
    pub fn auth_header(self, key: &str) -> (&'static str, String) {
        match self {
            Wire::OpenAi => ("authorization", format!("Bearer {key}")),
            Wire::Anthropic => ("x-api-key", key.to_owned()),
            Wire::Gemini => ("x-goog-api-key", key.to_owned()),
            // Ollama has no keys, but a proxy in front of it may want a bearer token.
            Wire::Ollama => ("authorization", format!("Bearer {key}")),
        }
    }

    /// Headers the format always sends (`anthropic-version`); a backend's own headers win.
    pub fn fixed_headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Wire::OpenAi => &[],
            Wire::Anthropic => &[("anthropic-version", "2023-06-01")],
            Wire::Gemini | Wire::Ollama => &[],
        }
    }

    /// Parses a complete non-streaming response body.
    pub fn parse_response(self, body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
        match self {
            Wire::OpenAi => openai::parse_response_with(body, opts),
            Wire::Anthropic => anthropic::parse_response(body, opts),
            Wire::Gemini => gemini::parse_response(body, opts),
            Wire::Ollama => ollama::parse_response(body, opts),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for wire in Wire::ALL {
            assert_eq!(Wire::from_name(wire.name()), Some(wire));
        }
        assert_eq!(Wire::from_name("OpenAI"), Some(Wire::OpenAi));
        assert_eq!(Wire::from_name("nonsense"), None);
    }
}
