//! HTTP for every wire format ([`Wire`]): OpenAI-compatible `/v1/chat/completions` servers
//! (OpenAI, llama.cpp, vLLM, Ollama `/v1`, OpenRouter, Groq, DeepSeek, …) and the providers'
//! own formats.
//!
//! [`ChatClient::chat`] POSTs a [`ChatRequest`] as JSON in the backend's wire format and reads
//! the body chunk by chunk into that format's parser, passing each [`Delta`] to the caller as
//! it arrives, and returns the [`Completion`]. Everything that can go wrong is a typed
//! [`LlmError`]:
//!
//! * an HTTP error status is [`LlmError::Http`] with the status, the provider's own message
//!   (from `{"error": {"message": …}}`) and `retry-after-ms` / `retry-after`;
//! * timeouts ([`Backend`]): connecting, the first byte (response headers and the first body
//!   chunk, measured from the request), the gap between later chunks, and the whole request
//!   are [`LlmError::Timeout`] naming the [`TimeoutPhase`];
//! * a [`CancelToken`] stops the request at its next wait with [`LlmError::Cancelled`];
//! * a connection that drops mid-stream is [`LlmError::Truncated`] with what arrived.
//!
//! The API key is sent in the format's header (`Authorization: Bearer …`, `x-api-key`,
//! `x-goog-api-key`; marked sensitive for hyper), and never appears in `Debug` output or in an
//! error, even if a server echoes it back.

use crate::llm::completion::{Completion, Delta, StreamOptions, ToolCall};
use crate::llm::endpoint::{Endpoint, Timeouts};
use crate::llm::error::{bounded, provider_error, LlmError, TimeoutPhase};
// The request types lived here once; callers across the crate still name them by this path.
pub use crate::llm::request::{ChatRequest, Message};
use crate::llm::wire::Wire;
use crate::secrets::{describe_hits, merge_hits, Hits, SecretGate};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How much of an error response's body is read, in bytes.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Timeouts longer than this are treated as this (so deadlines never overflow).
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

// ---------------------------------------------------------------------------------------------
// Configuration.

/// One server and how to talk to it.
#[derive(Clone)]
pub struct Backend {
    /// Where the server is, the model, the key and headers, the waits. The format's chat
    /// path is appended to its `base_url` ([`Wire::chat_url`]); its key goes in the format's
    /// key header ([`Wire::auth_header`]).
    pub endpoint: Endpoint,
    /// The wire format the server speaks.
    pub wire: Wire,
    /// Parsing options and limits for the response.
    pub stream_options: StreamOptions,
    /// The model's context window in tokens, when the user said (sizes the context budget).
    pub context_window: Option<u64>,
    /// Price per million tokens (input, output), when the user said (cost budgets).
    pub price: Option<(f64, f64)>,
    /// The most tokens one answer may take, when the user said: a small local model on a
    /// CPU can otherwise ramble for minutes.
    pub max_tokens: Option<u64>,
    /// Whether the model sees images (`:vision t`): only then are a request's images sent.
    pub vision: bool,
}

impl Backend {
    /// An OpenAI-compatible backend with no key, no extra headers and default timeouts:
    /// connect 10 s, first byte 120 s, idle 60 s, total 10 min.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::with_wire(Wire::OpenAi, base_url, model)
    }

    /// [`Backend::new`] for another wire format.
    pub fn with_wire(wire: Wire, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Backend {
            endpoint: Endpoint::new(wire.name(), base_url, model),
            wire,
            stream_options: StreamOptions::default(),
            context_window: None,
            price: None,
            max_tokens: None,
            vision: false,
        }
    }

    /// `request` with this backend's `max_tokens` when it asks for more (or sets none).
    /// Without images when the model does not see them.
    fn capped<'r>(&self, request: &'r ChatRequest) -> std::borrow::Cow<'r, ChatRequest> {
        let cap = match self.max_tokens {
            Some(cap) if request.max_tokens.is_none_or(|n| n > cap) => Some(cap),
            _ => None,
        };
        let blind = !self.vision && !request.images.is_empty();
        if cap.is_none() && !blind {
            return std::borrow::Cow::Borrowed(request);
        }
        let mut owned = request.clone();
        if cap.is_some() {
            owned.max_tokens = cap;
        }
        if blind {
            owned.images.clear();
        }
        std::borrow::Cow::Owned(owned)
    }

    /// The body this backend sends for `request`: its wire format, its model, its cap on
    /// answer tokens.
    pub fn request_body(&self, request: &ChatRequest) -> serde_json::Value {
        self.wire
            .request_body(&self.capped(request), &self.endpoint.model)
    }

    /// The chat endpoint, for a streaming request or not.
    pub fn url(&self, stream: bool) -> String {
        self.wire
            .chat_url(&self.endpoint.base_url, &self.endpoint.model, stream)
    }

    fn parsed_url(&self, stream: bool) -> Result<reqwest::Url, LlmError> {
        reqwest::Url::parse(&self.url(stream))
            .map_err(|e| LlmError::Config(format!("the base URL does not parse: {e}")))
    }

    /// An HTTP client sending this backend's headers and key.
    pub(crate) fn http_client(&self) -> Result<reqwest::Client, LlmError> {
        http_client(
            &self.endpoint,
            |key| self.wire.auth_header(key),
            self.wire.fixed_headers(),
        )
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("endpoint", &self.endpoint)
            .field("wire", &self.wire)
            .field("stream_options", &self.stream_options)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Cancellation.

/// Cancels requests: clones share the state; [`CancelToken::cancel`] makes every request
/// using the token (now or later) return [`LlmError::Cancelled`] at its next wait.
#[derive(Clone, Debug)]
pub struct CancelToken(Arc<watch::Sender<bool>>);

impl Default for CancelToken {
    fn default() -> Self {
        Self::new()
    }
}

impl CancelToken {
    pub fn new() -> Self {
        CancelToken(Arc::new(watch::channel(false).0))
    }

    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the token is cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        // Only fails if the sender is gone, and `self` holds it.
        let _ = rx.wait_for(|cancelled| *cancelled).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The client.

/// An HTTP client for one [`Backend`] (cheap to clone; connections are pooled). Every
/// request passes its secret gate before its body is built ([`ChatClient::chat_gated`]).
#[derive(Clone)]
pub struct ChatClient {
    backend: Arc<Backend>,
    http: reqwest::Client,
    gate: Arc<SecretGate>,
}

impl fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatClient")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl ChatClient {
    /// A client for `backend`: fails with [`LlmError::Config`] on a bad URL or header.
    pub fn new(backend: Backend) -> Result<Self, LlmError> {
        backend.parsed_url(true)?;
        let http = backend.http_client()?;
        Ok(ChatClient {
            backend: Arc::new(backend),
            http,
            gate: SecretGate::shared(),
        })
    }

    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The same client behind another secret gate (the default is [`SecretGate::shared`]).
    pub fn with_gate(self, gate: Arc<SecretGate>) -> ChatClient {
        ChatClient { gate, ..self }
    }

    pub fn gate(&self) -> &Arc<SecretGate> {
        &self.gate
    }

    /// [`ChatClient::chat_gated`] when nobody needs the counts (they still go to the log).
    pub async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancelToken,
        on_delta: impl FnMut(Delta),
    ) -> Result<Completion, LlmError> {
        self.chat_gated(request, cancel, |_| {}, on_delta).await
    }

    /// Sends `request` and reads the response, passing each delta to `on_delta` as it
    /// arrives; returns the completion. A non-streaming request (`stream: false`) gives its
    /// deltas at the end. Before anything is sent, every text of the request passes the
    /// secret gate ([`redact_request`]); `on_redacted` gets what it withheld, when anything.
    pub async fn chat_gated(
        &self,
        request: &ChatRequest,
        cancel: &CancelToken,
        on_redacted: impl FnOnce(&Hits),
        mut on_delta: impl FnMut(Delta),
    ) -> Result<Completion, LlmError> {
        let (request, hits) = redact_request(&self.gate, request);
        if !hits.is_empty() {
            tracing::warn!(backend = %self.backend.endpoint.name, "secret gate: {}", describe_hits(&hits));
            on_redacted(&hits);
        }
        let request = &*request;
        let b = &*self.backend;
        // The server would refuse it (and llama.cpp says so only after reading it all).
        if let Some(window) = b.context_window.filter(|w| *w > 0) {
            let estimated = request.estimated_tokens();
            if estimated > window {
                return Err(LlmError::ContextExceeded { estimated, window });
            }
        }
        let wait = Waits::start(&b.endpoint, cancel);
        let first_byte = wait.first_byte_deadline();

        let url = b.parsed_url(request.stream)?;
        let send = self
            .http
            .post(url)
            .header(
                ACCEPT,
                if request.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .json(&b.request_body(request));
        let mut response = wait.send(send, first_byte).await?;

        let mut stream = b.wire.parser(b.stream_options);
        let mut first = true;
        loop {
            match wait
                .chunk(&mut response, first.then_some(first_byte))
                .await?
            {
                Ok(Some(bytes)) => {
                    first = false;
                    stream.feed(&bytes)?.into_iter().for_each(&mut on_delta);
                }
                Ok(None) => break,
                // The connection dropped mid-body: `finish` tells a stream that had already
                // ended from a truncated one.
                Err(e) => {
                    tracing::debug!(error = %wait.redact(describe(&e)), "response body cut off");
                    break;
                }
            }
        }
        let partial = stream.partial();
        match stream.finish() {
            Ok((tail, completion)) => {
                tail.into_iter().for_each(on_delta);
                Ok(completion)
            }
            // The body ended inside an SSE line (the connection dropped mid-event): the
            // parser dispatches the unterminated last event, whose JSON ends early. That is
            // a cut-off stream, not a malformed one.
            Err(LlmError::InvalidJson { message, .. }) if message.starts_with("EOF while") => {
                Err(LlmError::Truncated {
                    partial: Box::new(partial),
                })
            }
            Err(err) => Err(err),
        }
    }
}

/// `request` with every text that leaves passed through `gate`: the messages (system prompt,
/// context, user text, tool results, earlier answers and the arguments of their tool calls)
/// and the tool schemas; and what was withheld. Opaque provider tokens (a tool call's
/// signature) are echoed as they came. Borrowed when nothing was found.
pub fn redact_request<'r>(
    gate: &SecretGate,
    request: &'r ChatRequest,
) -> (std::borrow::Cow<'r, ChatRequest>, Hits) {
    let mut hits: Hits = Vec::new();
    let mut text = |t: &str| -> Option<String> {
        let r = gate.redact(t);
        if r.hits.is_empty() {
            return None;
        }
        merge_hits(&mut hits, &r.hits);
        Some(r.text.into_owned())
    };
    let messages: Vec<Option<Message>> = request
        .messages
        .iter()
        .map(|m| match m {
            Message::System(t) => text(t).map(Message::System),
            Message::User(t) => text(t).map(Message::User),
            Message::Tool {
                tool_call_id,
                content,
            } => text(content).map(|content| Message::Tool {
                tool_call_id: tool_call_id.clone(),
                content,
            }),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let new_content = text(content);
                let new_calls: Vec<Option<Value>> = tool_calls
                    .iter()
                    .map(|c| redact_value(&c.arguments, &mut text))
                    .collect();
                (new_content.is_some() || new_calls.iter().any(Option::is_some)).then(|| {
                    Message::Assistant {
                        content: new_content.unwrap_or_else(|| content.clone()),
                        tool_calls: tool_calls
                            .iter()
                            .zip(new_calls)
                            .map(|(c, args)| ToolCall {
                                arguments: args.unwrap_or_else(|| c.arguments.clone()),
                                ..c.clone()
                            })
                            .collect(),
                    }
                })
            }
        })
        .collect();
    let tools: Vec<Option<Value>> = request
        .tools
        .iter()
        .map(|t| redact_value(t, &mut text))
        .collect();
    if hits.is_empty() {
        return (std::borrow::Cow::Borrowed(request), hits);
    }
    let redacted = ChatRequest {
        messages: request
            .messages
            .iter()
            .zip(messages)
            .map(|(m, new)| new.unwrap_or_else(|| m.clone()))
            .collect(),
        tools: request
            .tools
            .iter()
            .zip(tools)
            .map(|(t, new)| new.unwrap_or_else(|| t.clone()))
            .collect(),
        ..request.clone_settings()
    };
    (std::borrow::Cow::Owned(redacted), hits)
}

/// `value` with every string (not the keys of objects) passed through `text`; `None` when
/// nothing changed.
fn redact_value(value: &Value, text: &mut impl FnMut(&str) -> Option<String>) -> Option<Value> {
    match value {
        Value::String(s) => text(s).map(Value::String),
        Value::Array(items) => {
            let new: Vec<Option<Value>> = items.iter().map(|v| redact_value(v, text)).collect();
            new.iter().any(Option::is_some).then(|| {
                Value::Array(
                    items
                        .iter()
                        .zip(new)
                        .map(|(v, n)| n.unwrap_or_else(|| v.clone()))
                        .collect(),
                )
            })
        }
        Value::Object(map) => {
            let new: Vec<Option<Value>> = map.values().map(|v| redact_value(v, text)).collect();
            new.iter().any(Option::is_some).then(|| {
                Value::Object(
                    map.iter()
                        .zip(new)
                        .map(|((k, v), n)| (k.clone(), n.unwrap_or_else(|| v.clone())))
                        .collect(),
                )
            })
        }
        _ => None,
    }
}

/// The waits of one request under its cancellation token and deadlines, and what every
/// request does the same way: sending (transport errors, HTTP error statuses with the
/// provider's message), reading body chunks (the first by the first-byte deadline, later
/// ones within the idle timeout), keeping the key out of every message.
pub(crate) struct Waits<'a> {
    t: Timeouts,
    cancel: &'a CancelToken,
    /// The end of the total timeout.
    total: Instant,
    /// The API key, redacted from every error text a server could echo it into.
    key: Option<&'a str>,
}

impl<'a> Waits<'a> {
    /// The waits of a request to `endpoint` starting now.
    pub(crate) fn start(endpoint: &'a Endpoint, cancel: &'a CancelToken) -> Self {
        let t = endpoint.timeouts;
        Waits {
            t,
            cancel,
            total: Instant::now() + t.total.min(MAX_TIMEOUT),
            key: endpoint.api_key.as_deref(),
        }
    }

    /// When the first byte of a response sent now must have arrived.
    pub(crate) fn first_byte_deadline(&self) -> Instant {
        Instant::now() + self.t.first_byte.min(MAX_TIMEOUT)
    }

    /// `text` without the API key.
    pub(crate) fn redact(&self, text: String) -> String {
        redact(self.key, text)
    }

    /// Sends `request` and waits for the response headers until `first_byte`; an error
    /// status is [`LlmError::Http`] with the provider's message.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        first_byte: Instant,
    ) -> Result<reqwest::Response, LlmError> {
        let response = self
            .run(request.send(), first_byte, TimeoutPhase::FirstByte)
            .await?
            .map_err(|e| self.transport(e))?;
        if !response.status().is_success() {
            return Err(self.http_error(response, first_byte).await);
        }
        Ok(response)
    }

    /// The next chunk of `response`'s body: by `first_byte` when given (the first chunk),
    /// else within the idle timeout.
    pub(crate) async fn chunk(
        &self,
        response: &mut reqwest::Response,
        first_byte: Option<Instant>,
    ) -> Result<reqwest::Result<Option<bytes::Bytes>>, LlmError> {
        match first_byte {
            Some(until) => {
                self.run(response.chunk(), until, TimeoutPhase::FirstByte)
                    .await
            }
            None => {
                let until = Instant::now() + self.t.idle.min(MAX_TIMEOUT);
                self.run(response.chunk(), until, TimeoutPhase::Idle).await
            }
        }
    }

    /// Sends `request` and reads the whole body of its (success) response, at most `limit`
    /// bytes: the JSON APIs (embeddings, model lists).
    pub(crate) async fn fetch(
        &self,
        request: reqwest::RequestBuilder,
        limit: usize,
    ) -> Result<Vec<u8>, LlmError> {
        let first_byte = self.first_byte_deadline();
        let mut response = self.send(request, first_byte).await?;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(LlmError::ResponseTooLarge { limit });
        }
        let mut body = Vec::new();
        let mut first = true;
        loop {
            match self
                .chunk(&mut response, first.then_some(first_byte))
                .await?
            {
                Ok(Some(bytes)) => {
                    if body.len() + bytes.len() > limit {
                        return Err(LlmError::ResponseTooLarge { limit });
                    }
                    body.extend_from_slice(&bytes);
                }
                Ok(None) => return Ok(body),
                // A body cut off mid-way would only fail as JSON; say what happened.
                Err(e) => {
                    return Err(LlmError::Transport(self.redact(format!(
                        "the response body was cut off: {}",
                        describe(&e)
                    ))))
                }
            }
            first = false;
        }
    }

    fn transport(&self, e: reqwest::Error) -> LlmError {
        if e.is_connect() && e.is_timeout() {
            return LlmError::Timeout {
                phase: TimeoutPhase::Connect,
                after: self.t.connect,
            };
        }
        LlmError::Transport(self.redact(describe(&e)))
    }

    /// The error for a non-success `response`, reading (the start of) its body.
    async fn http_error(&self, mut response: reqwest::Response, first_byte: Instant) -> LlmError {
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let mut body = Vec::new();
        let mut first = true;
        while body.len() < MAX_ERROR_BODY {
            match self.chunk(&mut response, first.then_some(first_byte)).await {
                Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
                Ok(Ok(None)) | Ok(Err(_)) => break,
                // A cancelled request stays cancelled; a slow error body is not worth waiting
                // for, the status says enough.
                Err(LlmError::Cancelled) => return LlmError::Cancelled,
                Err(_) => break,
            }
            first = false;
        }
        body.truncate(MAX_ERROR_BODY);
        http_error_from(status, retry_after, &body, |m| self.redact(m))
    }

    /// `fut`, unless the request is cancelled ([`LlmError::Cancelled`]) or `until` (or the
    /// total deadline, if sooner) passes first ([`LlmError::Timeout`] for `phase`).
    async fn run<F: Future>(
        &self,
        fut: F,
        until: Instant,
        phase: TimeoutPhase,
    ) -> Result<F::Output, LlmError> {
        if self.cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let (until, phase, after) = if self.total <= until {
            (self.total, TimeoutPhase::Total, self.t.total)
        } else {
            let after = match phase {
                TimeoutPhase::Connect => self.t.connect,
                TimeoutPhase::FirstByte => self.t.first_byte,
                TimeoutPhase::Idle => self.t.idle,
                TimeoutPhase::Total => self.t.total,
            };
            (until, phase, after)
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Err(LlmError::Cancelled),
            result = tokio::time::timeout_at(until, fut) => {
                result.map_err(|_| LlmError::Timeout { phase, after })
            }
        }
    }
}

/// `text` with `key` (if any) replaced.
pub(crate) fn redact(key: Option<&str>, text: String) -> String {
    match key {
        Some(key) if !key.is_empty() && text.contains(key) => text.replace(key, "[redacted]"),
        _ => text,
    }
}

/// `err` with `key` redacted from the texts a server could have echoed it into.
pub(crate) fn redact_error(key: Option<&str>, err: LlmError) -> LlmError {
    match err {
        LlmError::Provider {
            message,
            kind,
            code,
        } => LlmError::Provider {
            message: redact(key, message),
            kind,
            code,
        },
        LlmError::InvalidJson { message, excerpt } => LlmError::InvalidJson {
            message,
            excerpt: redact(key, excerpt),
        },
        LlmError::Malformed(message) => LlmError::Malformed(redact(key, message)),
        other => other,
    }
}

/// An HTTP client for `endpoint`: its headers (values marked sensitive: some carry secrets),
/// its key in the header `auth` makes of it, the format's `fixed` headers unless the user set
/// them; redirects within the origin only, no idle connection reused.
pub(crate) fn http_client(
    endpoint: &Endpoint,
    auth: impl FnOnce(&str) -> (&'static str, String),
    fixed: &[(&'static str, &'static str)],
) -> Result<reqwest::Client, LlmError> {
    let mut map = HeaderMap::new();
    for (name, value) in &endpoint.headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| LlmError::Config(format!("invalid header name {name:?}")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| LlmError::Config(format!("invalid value for header {name}")))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    if let Some((name, value)) = endpoint.api_key.as_deref().map(auth) {
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| LlmError::Config("the API key is not a valid header value".to_owned()))?;
        value.set_sensitive(true);
        map.insert(HeaderName::from_static(name), value);
    }
    for (name, value) in fixed {
        map.entry(HeaderName::from_static(name))
            .or_insert(HeaderValue::from_static(value));
    }
    reqwest::Client::builder()
        .default_headers(map)
        .redirect(same_origin_redirects())
        .connect_timeout(endpoint.timeouts.connect.min(MAX_TIMEOUT))
        // No idle connection is reused: local servers (llama.cpp) close them between
        // requests, and a request on a closed pooled connection fails with "connection
        // closed before message completed". A turn makes few requests; a fresh connection
        // each costs little.
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| LlmError::Transport(describe(&e)))
}

/// The [`LlmError::Http`] for an error `status` whose body (its start) is `body`: the
/// provider's own message, type and code when the body is one of their error shapes, else
/// the body's text, else the status's reason. `scrub` removes secrets from the message.
pub(crate) fn http_error_from(
    status: reqwest::StatusCode,
    retry_after: Option<Duration>,
    body: &[u8],
    scrub: impl Fn(String) -> String,
) -> LlmError {
    let (message, kind, code) = match provider_error(body) {
        Some(LlmError::Provider {
            message,
            kind,
            code,
        }) => (message, kind, code),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let message = if text.is_empty() {
                status.canonical_reason().unwrap_or("error").to_owned()
            } else {
                bounded(text)
            };
            (message, None, None)
        }
    };
    LlmError::Http {
        status: status.as_u16(),
        message: scrub(message),
        kind,
        code,
        retry_after,
    }
}

/// Redirects followed within the origin only. reqwest drops `Authorization` on a redirect to
/// another host, but not `x-api-key`, `x-goog-api-key` or the user's own headers, and a 307
/// or 308 would send the body (the notes) along: another origin's redirect is returned as
/// is, and becomes an HTTP error.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() > 5 {
            attempt.error("too many redirects")
        } else if same_origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// The wait the server asked for: `retry-after-ms` (milliseconds), else `retry-after`
/// (seconds; an HTTP-date is not understood and ignored).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let v: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then_some(v)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    Duration::try_from_secs_f64(number("retry-after")?).ok()
}

/// A reqwest error with its causes (reqwest's own message is often just "error sending
/// request"), without the URL.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut out = String::new();
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    let mut depth = 0;
    while let Some(err) = cause {
        if depth >= 8 {
            break;
        }
        let text = if depth == 0 {
            // Without the URL: a query string may hold a key.
            let mut plain = String::new();
            if e.is_connect() {
                plain.push_str("cannot connect");
            } else if e.is_body() || e.is_decode() {
                plain.push_str("error reading the response body");
            } else if e.is_request() {
                plain.push_str("error sending the request");
            } else {
                plain.push_str("HTTP error");
            }
            plain
        } else {
            err.to_string()
        };
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
        cause = err.source();
        depth += 1;
    }
    bounded(&out)
}
