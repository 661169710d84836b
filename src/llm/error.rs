//! Errors of the LLM layer: wire-format decoding, provider-reported errors, truncation.
//!
//! One enum for the whole `llm` module, so the agent loop handles every provider the same way.
//! Everything in it comes from (or is about) untrusted network input, so every variant is data
//! (`Clone`, `PartialEq`): messages are copied out as bounded strings instead of keeping
//! `serde_json::Error` values, and an error can be sent across threads, compared in tests and
//! shown to the user.

use crate::llm::completion::Completion;
use serde_json::Value;
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// The longest provider message or JSON excerpt kept in an error, in bytes (cut on a character
/// boundary). A provider's error text is for a human; a 16 MiB one would only hurt Emacs.
pub const MAX_ERROR_TEXT: usize = 4096;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum LlmError {
    /// An SSE line grew past the decoder's limit without a line ending.
    #[error("server-sent event line longer than {limit} bytes")]
    LineTooLong { limit: usize },

    /// The `data:` lines of one SSE event add up to more than the limit.
    #[error("server-sent event data longer than {limit} bytes")]
    EventTooLarge { limit: usize },

    /// The response (accumulated text, reasoning and tool arguments, or a JSON body) is larger
    /// than the limit.
    #[error("response larger than {limit} bytes")]
    ResponseTooLarge { limit: usize },

    /// The model started more tool calls than the limit.
    #[error("more than {limit} tool calls in one response")]
    TooManyToolCalls { limit: usize },

    /// A payload that should be JSON is not (or does not have the expected shape).
    #[error("invalid JSON from the provider: {message} (payload starts: {excerpt:?})")]
    InvalidJson { message: String, excerpt: String },

    /// The response is valid JSON but not a usable response (e.g. no choices).
    #[error("malformed response: {0}")]
    Malformed(String),

    /// The provider reported an error (an `{"error": …}` payload, possibly mid-stream under
    /// HTTP 200). `message` is the provider's own text.
    #[error("provider error: {message}")]
    Provider {
        message: String,
        /// The provider's error type (`"invalid_request_error"`, …), if given.
        kind: Option<String>,
        /// The provider's error code (a string or a number on the wire), if given.
        code: Option<String>,
    },

    /// A tool call's `arguments` did not parse as JSON once the response was complete.
    #[error("tool call {name:?} (id {id:?}) has invalid JSON arguments: {message}")]
    InvalidToolArguments {
        /// Position of the tool call in the response (0-based).
        index: usize,
        id: String,
        name: String,
        message: String,
    },

    /// The stream ended without its end marker (`data: [DONE]`): the connection dropped or
    /// the server gave up. `partial` is everything received until then; a tool call whose
    /// arguments did not finish keeps its raw argument text as a JSON string there, and must
    /// not be run.
    #[error("the response stream was cut off before its end marker")]
    Truncated { partial: Box<Completion> },

    /// The server answered with an HTTP error status. `message` is the provider's own text
    /// (from an `{"error": {"message": …}}` body), else the start of the body, else the
    /// status's reason phrase.
    #[error("HTTP {status}: {message}{}", retry_note(retry_after))]
    Http {
        status: u16,
        message: String,
        /// The provider's error type, if its body gave one.
        kind: Option<String>,
        /// The provider's error code, if its body gave one.
        code: Option<String>,
        /// How long the server asked to wait (`retry-after-ms`, else `retry-after` in
        /// seconds; an HTTP-date is ignored).
        retry_after: Option<Duration>,
    },

    /// A timeout ran out (see [`TimeoutPhase`]); `after` is the configured limit.
    #[error("timed out waiting for the {phase} after {after:?}")]
    Timeout {
        phase: TimeoutPhase,
        after: Duration,
    },

    /// The request was cancelled by the caller.
    #[error("the request was cancelled")]
    Cancelled,

    /// The connection could not be made or failed before a response (DNS, refused, TLS, …).
    #[error("HTTP transport error: {0}")]
    Transport(String),

    /// Every backend of a cascade failed; one line per backend, in the order tried.
    #[error("every backend failed: {}", .0.join("; "))]
    AllFailed(Vec<String>),

    /// The client configuration is unusable (a bad URL or header name). Never contains a
    /// header value, which may be a secret.
    #[error("invalid client configuration: {0}")]
    Config(String),

    /// The request is larger than the backend's context window, by its configured
    /// `:context-window`: it was not sent, since the server would refuse it.
    #[error(
        "the request is about {estimated} tokens, more than the {window}-token context window \
         of this backend; nothing was sent"
    )]
    ContextExceeded { estimated: u64, window: u64 },
}

/// Which wait of an HTTP request timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Opening the connection (TCP and TLS).
    Connect,
    /// The response: its headers and the first byte of its body.
    FirstByte,
    /// The next chunk of the body, after the first.
    Idle,
    /// The whole request.
    Total,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connection",
            TimeoutPhase::FirstByte => "first byte of the response",
            TimeoutPhase::Idle => "next chunk of the response",
            TimeoutPhase::Total => "whole response",
        })
    }
}

impl LlmError {
    /// The HTTP status, for [`LlmError::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            LlmError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How long the server asked to wait before retrying, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// What the error says about what to do next: the one classification the cascade (try
    /// another backend?) and the turn (tell the model?) both follow.
    pub fn class(&self) -> ErrorClass {
        match self {
            LlmError::Cancelled => ErrorClass::Cancelled,
            LlmError::ContextExceeded { .. } => ErrorClass::TooLarge,
            LlmError::Http {
                status: 400 | 413,
                message,
                code,
                ..
            } if exceeds_context(message, code.as_deref()) => ErrorClass::TooLarge,
            LlmError::InvalidToolArguments { .. } => ErrorClass::ModelMistake,
            LlmError::Http { status: 400, .. } => ErrorClass::ModelMistake,
            LlmError::Http {
                status: 413 | 422, ..
            } => ErrorClass::Refused,
            LlmError::Http {
                status: 408 | 409 | 429 | 500..=599,
                ..
            }
            | LlmError::Timeout { .. }
            | LlmError::Transport(_)
            | LlmError::Truncated { .. } => ErrorClass::Transient,
            LlmError::InvalidJson { .. } | LlmError::Malformed(_) | LlmError::Provider { .. } => {
                ErrorClass::Unusable
            }
            LlmError::Http { .. }
            | LlmError::LineTooLong { .. }
            | LlmError::EventTooLarge { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::TooManyToolCalls { .. }
            | LlmError::AllFailed(_)
            | LlmError::Config(_) => ErrorClass::Backend,
        }
    }

    /// Whether trying again (later, or another backend) may help: HTTP 408, 409, 429, 5xx
    /// (and Anthropic's 529), timeouts, transport failures and cut-off streams.
    pub fn is_retryable(&self) -> bool {
        self.class() == ErrorClass::Transient
    }

    /// Whether another backend (or the same one later) may succeed where this one failed:
    /// not when the caller cancelled, nor when the request or the model's own output is at
    /// fault (every backend would refuse it alike).
    pub fn worth_another_backend(&self) -> bool {
        !matches!(
            self.class(),
            ErrorClass::Cancelled | ErrorClass::ModelMistake | ErrorClass::Refused
        )
    }

    /// Whether the model should be told, so it can correct itself: its own mistakes and
    /// replies that could not be used. HTTP 500 too: llama.cpp answers 500 when the model's
    /// output does not fit the tool-call template.
    pub fn worth_telling_the_model(&self) -> bool {
        matches!(
            self.class(),
            ErrorClass::ModelMistake | ErrorClass::Unusable
        ) || self.status() == Some(500)
    }
}

/// What kind of failure an [`LlmError`] is (see [`LlmError::class`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The caller cancelled.
    Cancelled,
    /// The model's output (tool arguments that are not JSON) or the request it shaped (HTTP
    /// 400) is wrong: another backend would refuse it alike; the model may fix it if told.
    ModelMistake,
    /// The request cannot be served as it is (HTTP 413 too large, 422 unprocessable).
    Refused,
    /// The backend failed for now (408, 409, 429, 5xx, timeouts, transport, a cut stream):
    /// the same one later, or another one, may answer.
    Transient,
    /// The reply came but cannot be used (not JSON, no choices, a provider error payload).
    Unusable,
    /// This backend cannot serve the request (401, 403, 404, limits, configuration).
    Backend,
    /// The request is larger than the backend's context window: sending it again, or
    /// telling the model, cannot help; a backend with a larger window may serve it.
    TooLarge,
}

/// Whether a provider's error message (or code) says the request overflowed the model's
/// context: llama.cpp ("exceeds the available context size"), OpenAI
/// (`context_length_exceeded`, "maximum context length"), Anthropic ("prompt is too long"),
/// Gemini ("input token count … exceeds the maximum"), vLLM and others alike.
pub fn exceeds_context(message: &str, code: Option<&str>) -> bool {
    let m = message.to_ascii_lowercase();
    code.is_some_and(|c| c.contains("context_length") || c.contains("exceed_context"))
        || [
            "context size",
            "context length",
            "context window",
            "maximum context",
            "prompt is too long",
            "too many tokens",
            "input token count",
            "exceed_context",
        ]
        .iter()
        .any(|p| m.contains(p))
}

/// The first error of a stream decoder: once it failed the stream is over, and every later
/// call returns the same error again.
#[derive(Debug, Default)]
pub(crate) struct Failure(Option<LlmError>);

impl Failure {
    /// `Err` with the error, once there is one.
    pub(crate) fn check(&self) -> Result<(), LlmError> {
        match &self.0 {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    /// `result`, whose error (if any) is kept.
    pub(crate) fn keep<T>(&mut self, result: Result<T, LlmError>) -> Result<T, LlmError> {
        if let Err(err) = &result {
            self.0 = Some(err.clone());
        }
        result
    }

    /// The error, if there was one (for a decoder's last call).
    pub(crate) fn take(&mut self) -> Option<LlmError> {
        self.0.take()
    }
}

/// `s` cut to at most [`MAX_ERROR_TEXT`] bytes on a character boundary.
pub(crate) fn bounded(s: &str) -> String {
    if s.len() <= MAX_ERROR_TEXT {
        return s.to_owned();
    }
    let mut end = MAX_ERROR_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = s.get(..end).unwrap_or_default().to_owned();
    out.push('…');
    out
}

/// An [`LlmError::InvalidJson`] for `payload` failing with `err`.
pub(crate) fn invalid_json(err: &serde_json::Error, payload: &str) -> LlmError {
    const EXCERPT: usize = 200;
    let mut end = payload.len().min(EXCERPT);
    while !payload.is_char_boundary(end) {
        end -= 1;
    }
    LlmError::InvalidJson {
        message: err.to_string(),
        excerpt: payload.get(..end).unwrap_or_default().to_owned(),
    }
}

/// " (retry after 20 s)" when the server said when to come back.
fn retry_note(after: &Option<Duration>) -> String {
    match after {
        Some(d) if d.subsec_millis() == 0 => format!(" (retry after {} s)", d.as_secs()),
        Some(d) => format!(" (retry after {:.1} s)", d.as_secs_f64()),
        None => String::new(),
    }
}

/// The provider's own error in an error response body, in any provider's shape (see
/// [`provider_error_in`]). `None` when the body is none of these.
pub fn provider_error(body: &[u8]) -> Option<LlmError> {
    provider_error_in(&serde_json::from_slice(body).ok()?)
}

/// The provider error a JSON payload (a body, or a chunk mid-stream) is, in any provider's
/// shape: `{"error": {"message", "type", "code"}}` (OpenAI), `{"type": "error", "error":
/// {"type", "message"}}` (Anthropic), `{"error": {"code", "message", "status"}}` (Gemini, also
/// inside a one-element array), `{"error": "…"}` (Ollama), `{"object": "error", "message", …}`
/// (vLLM). `None` when it is none of these.
pub fn provider_error_in(value: &Value) -> Option<LlmError> {
    let value = match value {
        Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    };
    let obj = value.as_object()?;
    if let Some(err) = obj.get("error").filter(|e| !e.is_null()) {
        return Some(error_from(err));
    }
    if obj.get("object").and_then(Value::as_str) == Some("error") {
        return Some(error_from(value));
    }
    None
}

/// The [`LlmError::Provider`] for an error value: a string, or an object with `message`,
/// `type` (else `status`) and `code`; anything else as its JSON text.
pub(crate) fn error_from(err: &Value) -> LlmError {
    let scalar = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(bounded(s)),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    match err {
        Value::String(s) => LlmError::Provider {
            message: bounded(s),
            kind: None,
            code: None,
        },
        Value::Object(obj) => LlmError::Provider {
            message: match obj.get("message") {
                Some(Value::String(s)) => bounded(s),
                Some(other) if !other.is_null() => bounded(&other.to_string()),
                _ => bounded(&err.to_string()),
            },
            kind: scalar(obj.get("type")).or_else(|| scalar(obj.get("status"))),
            code: scalar(obj.get("code")),
        },
        other => LlmError::Provider {
            message: bounded(&other.to_string()),
            kind: None,
            code: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(e: Option<LlmError>) -> (String, Option<String>, Option<String>) {
        match e {
            Some(LlmError::Provider {
                message,
                kind,
                code,
            }) => (message, kind, code),
            other => panic!("not a provider error: {other:?}"),
        }
    }

    #[test]
    fn provider_errors_in_every_shape() {
        let openai = br#"{"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}}"#;
        assert_eq!(
            parts(provider_error(openai)),
            (
                "bad key".into(),
                Some("invalid_request_error".into()),
                Some("invalid_api_key".into())
            )
        );
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            parts(provider_error(anthropic)),
            ("Overloaded".into(), Some("overloaded_error".into()), None)
        );
        let gemini = br#"[{"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}]"#;
        assert_eq!(
            parts(provider_error(gemini)),
            (
                "Quota exceeded".into(),
                Some("RESOURCE_EXHAUSTED".into()),
                Some("429".into())
            )
        );
        let ollama = br#"{"error": "model \"x\" not found, try pulling it first"}"#;
        assert_eq!(
            parts(provider_error(ollama)).0,
            "model \"x\" not found, try pulling it first"
        );
        assert!(provider_error(b"<html>502</html>").is_none());
        assert!(provider_error(br#"{"choices": []}"#).is_none());
    }

    #[test]
    fn a_request_too_large_for_the_window_is_neither_retried_nor_told_to_the_model() {
        let said = |status: u16, message: &str, code: Option<&str>| LlmError::Http {
            status,
            message: message.into(),
            kind: None,
            code: code.map(Into::into),
            retry_after: None,
        };
        for e in [
            // llama.cpp's server, as the local model answered a 200 KB paste.
            said(
                400,
                "the request exceeds the available context size, try increasing it",
                None,
            ),
            said(
                400,
                "This model's maximum context length is 8192 tokens.",
                Some("context_length_exceeded"),
            ),
            said(
                400,
                "prompt is too long: 210000 tokens > 200000 maximum",
                None,
            ),
            said(
                400,
                "The input token count (1200000) exceeds the maximum number of tokens allowed",
                None,
            ),
            said(413, "Request Entity Too Large: too many tokens", None),
            LlmError::ContextExceeded {
                estimated: 50_000,
                window: 4096,
            },
        ] {
            assert_eq!(e.class(), ErrorClass::TooLarge, "{e}");
            assert!(!e.is_retryable(), "{e}");
            assert!(!e.worth_telling_the_model(), "{e}");
            // Another backend's window may be larger.
            assert!(e.worth_another_backend(), "{e}");
        }
        // Any other 400 is still the model's mistake, told to it.
        assert_eq!(
            said(400, "invalid tool name", None).class(),
            ErrorClass::ModelMistake
        );
    }

    fn http(status: u16) -> LlmError {
        LlmError::Http {
            status,
            message: String::new(),
            kind: None,
            code: None,
            retry_after: None,
        }
    }

    /// (error, retry it later?, another backend?, tell the model?): the one table the
    /// cascade and the turn follow.
    #[test]
    fn one_classification_decides_retry_failover_and_feedback() {
        let tool_args = LlmError::InvalidToolArguments {
            index: 0,
            id: "c1".into(),
            name: "read_node".into(),
            message: "expected value".into(),
        };
        let timeout = LlmError::Timeout {
            phase: TimeoutPhase::FirstByte,
            after: Duration::from_secs(1),
        };
        for (e, retryable, another, tell) in [
            (LlmError::Cancelled, false, false, false),
            (tool_args, false, false, true),
            (http(400), false, false, true),
            (http(413), false, false, false),
            (http(422), false, false, false),
            (http(429), true, true, false),
            (http(500), true, true, true),
            (http(503), true, true, false),
            (http(401), false, true, false),
            (timeout, true, true, false),
            (LlmError::Transport("refused".into()), true, true, false),
            (LlmError::Malformed("no choices".into()), false, true, true),
            (LlmError::Config("bad header".into()), false, true, false),
        ] {
            assert_eq!(e.is_retryable(), retryable, "{e}");
            assert_eq!(e.worth_another_backend(), another, "{e}");
            assert_eq!(e.worth_telling_the_model(), tell, "{e}");
        }
    }
}
