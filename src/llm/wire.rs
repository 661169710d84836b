//! The registry of wire formats: which formats a backend can speak, and the one place that
//! turns a configured [`Wire`] into its format's functions.
//!
//! A wire format is one file implementing [`WireFormat`] and its [`ResponseDecoder`] (see
//! [`crate::llm::format`]): its name, chat URL, key header, request body, how its response
//! body is framed, and how one payload of it becomes [`Delta`](crate::llm::Delta)s. The rest
//! (framing, buffering, limits, the first error sticking, telling a complete answer from a
//! truncated one, timeouts, cancellation, HTTP errors, retry-after) is shared. Adding a wire
//! format takes:
//!
//! 1. a file `llm/<format>.rs` with a type implementing [`WireFormat`] and a decoder
//!    implementing [`ResponseDecoder`];
//! 2. its `pub mod <format>;` line in `llm/mod.rs`;
//! 3. here, a variant of [`Wire`], its entry in [`Wire::ALL`], and its arm in
//!    [`Wire::format`];
//! 4. if the provider lists its models (backend set-up offers them), its arms in the three
//!    matches of `llm/models.rs` (path, paging, page shape); the compiler points at them.
//!
//! Configuration (`:wire "<name>"`), the HTTP client and the cascade then know it by its
//! [`WireFormat::NAME`].

use crate::llm::anthropic::Messages;
use crate::llm::completion::{Completion, StreamOptions};
use crate::llm::error::LlmError;
use crate::llm::format::{ResponseDecoder, ResponseStream, WireFormat};
use crate::llm::gemini::GenerateContent;
use crate::llm::ollama::ApiChat;
use crate::llm::openai::ChatCompletions;
use crate::llm::request::ChatRequest;
use serde_json::Value;

pub use crate::llm::format::ResponseParser;

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

/// A wire format's functions, picked at run time by [`Wire::format`].
struct Functions {
    name: &'static str,
    fixed_headers: &'static [(&'static str, &'static str)],
    chat_url: fn(&str, &str, bool) -> String,
    auth_header: fn(&str) -> (&'static str, String),
    request_body: fn(&ChatRequest, &str) -> Value,
    parser: fn(StreamOptions) -> Box<dyn ResponseParser>,
    parse_response: fn(&[u8], &StreamOptions) -> Result<Completion, LlmError>,
}

impl Functions {
    const fn of<F: WireFormat>() -> Functions {
        Functions {
            name: F::NAME,
            fixed_headers: F::FIXED_HEADERS,
            chat_url: F::chat_url,
            auth_header: F::auth_header,
            request_body: F::request_body,
            parser: boxed_parser::<F::Decoder>,
            parse_response: F::parse_response,
        }
    }
}

fn boxed_parser<D: ResponseDecoder + 'static>(opts: StreamOptions) -> Box<dyn ResponseParser> {
    Box::new(ResponseStream::<D>::with_options(opts))
}

impl Wire {
    /// Every wire format, for listings and tests.
    pub const ALL: [Wire; 4] = [Wire::OpenAi, Wire::Anthropic, Wire::Gemini, Wire::Ollama];

    /// The format's functions: the registration of every format.
    fn format(self) -> &'static Functions {
        static OPENAI: Functions = Functions::of::<ChatCompletions>();
        static ANTHROPIC: Functions = Functions::of::<Messages>();
        static GEMINI: Functions = Functions::of::<GenerateContent>();
        static OLLAMA: Functions = Functions::of::<ApiChat>();
        match self {
            Wire::OpenAi => &OPENAI,
            Wire::Anthropic => &ANTHROPIC,
            Wire::Gemini => &GEMINI,
            Wire::Ollama => &OLLAMA,
        }
    }

    /// The format named `name` (`"openai"`, …), as users write it in their configuration.
    pub fn from_name(name: &str) -> Option<Wire> {
        Wire::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        self.format().name
    }

    /// The chat endpoint under the API root `base`.
    pub fn chat_url(self, base: &str, model: &str, stream: bool) -> String {
        (self.format().chat_url)(base.trim_end_matches('/'), model, stream)
    }

    /// The JSON request body.
    pub fn request_body(self, request: &ChatRequest, model: &str) -> Value {
        (self.format().request_body)(request, model)
    }

    /// A parser for a response body.
    pub fn parser(self, opts: StreamOptions) -> Box<dyn ResponseParser> {
        (self.format().parser)(opts)
    }

    /// The header that carries the API key, and its value.
    pub fn auth_header(self, key: &str) -> (&'static str, String) {
        (self.format().auth_header)(key)
    }

    /// Headers the format always sends (`anthropic-version`); a backend's own headers win.
    pub fn fixed_headers(self) -> &'static [(&'static str, &'static str)] {
        self.format().fixed_headers
    }

    /// Parses a complete non-streaming response body.
    pub fn parse_response(self, body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
        (self.format().parse_response)(body, opts)
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
