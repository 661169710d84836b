//! LLM providers: wire formats and their streaming parsers.
//!
//! Each provider's wire format gets one file ([`openai`], [`anthropic`], [`gemini`],
//! [`ollama`]) that builds its request body and decodes one payload of its response into the
//! provider-neutral [`Delta`]s (for the UI, as they stream) and a final [`Completion`] (for
//! the agent loop). [`format`] says what a format provides and runs any of them over a body
//! cut into payloads by `body` (SSE via [`sse`], NDJSON, streamed JSON arrays); [`wire`]
//! registers them. Below them: [`request`] (what is sent), [`completion`] (what comes back),
//! [`think`] (separating reasoning from answer text), [`error`] (one error type for the
//! module). HTTP ([`http`]) lives on top of these parsers, so they are tested on recorded
//! responses without a network. A server is an [`Endpoint`] (URL, model, key, headers,
//! [`Timeouts`]), chat and embedding backends alike; [`config`] reads backends from the
//! S-expressions users configure them with.
//!
//! Files use only files before them in this list: think, completion, request, error, sse, body,
//! collect, format, the four formats, wire, endpoint, http, embeddings, models, cascade, prices,
//! config. [`prices`] says what a request costs.

pub mod anthropic;
mod body;
pub mod cascade;
mod collect;
pub mod completion;
pub mod config;
pub mod embeddings;
pub mod endpoint;
pub mod error;
pub mod format;
pub mod gemini;
pub mod http;
pub mod models;
pub mod ollama;
pub mod openai;
pub mod prices;
pub mod request;
pub mod sse;
pub mod think;
pub mod wire;

pub use completion::{
    estimate_tokens, Completion, Delta, FinishReason, StreamOptions, ToolCall, Usage,
};
pub use config::ConfigError;
pub use endpoint::{Endpoint, Timeouts};
pub use error::{ErrorClass, LlmError, TimeoutPhase};
pub use format::ResponseParser;
pub use http::{Backend, CancelToken, ChatClient};
pub use request::{ChatRequest, Image, Message};
pub use sse::{SseDecoder, SseEvent};
pub use think::ThinkTags;
pub use wire::Wire;
