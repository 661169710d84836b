//! LLM providers: wire formats and their streaming parsers.
//!
//! Each provider's wire format gets one file that builds its request body and turns response
//! bytes into the provider-neutral [`Delta`]s (for the UI, as they stream) and a final
//! [`Completion`] (for the agent loop). Shared pieces: [`sse`] (Server-Sent Events decoding),
//! [`think`] (separating reasoning from answer text), [`error`] (one error type for the
//! module). HTTP ([`http`]) lives on top of these parsers, so they are tested on recorded
//! responses without a network. A server is an [`Endpoint`] (URL, model, key, headers,
//! [`Timeouts`]), chat and embedding backends alike; [`config`] reads backends from the
//! S-expressions users configure them with.

pub mod anthropic;
pub mod cascade;
mod collect;
pub mod completion;
pub mod config;
pub mod embeddings;
pub mod endpoint;
pub mod error;
pub mod gemini;
pub mod http;
pub mod models;
pub mod ollama;
pub mod openai;
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
pub use http::{Backend, CancelToken, ChatClient};
pub use request::{ChatRequest, Message};
pub use sse::{SseDecoder, SseEvent};
pub use think::ThinkTags;
pub use wire::{ResponseParser, Wire};
