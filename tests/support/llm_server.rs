//! A real HTTP/1.1 server on 127.0.0.1 (ephemeral port) that plays an LLM provider: it
//! records every request and answers each with the next scripted [`Reply`] — a recorded
//! response body written in seeded pseudo-random chunks (split anywhere, inside UTF-8
//! characters too), optionally dripped slowly; an error status with a JSON body and
//! `retry-after`; a body cut off mid-stream; or a stall after the headers.
//!
//! One request per connection (every response says `Connection: close`). The server stops
//! (its connections too) when the [`LlmServer`] is dropped.

use super::{recording, Rng};
use org_agent::llm::Wire;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 16 * 1024 * 1024;
/// No connection lives longer than this.
const CONNECTION_LIMIT: Duration = Duration::from_secs(30);

/// The response body of OpenAI recording `name`.
pub fn openai_fixture(name: &str) -> Vec<u8> {
    recording::body(&recording::raw("openai", name)).to_vec()
}

/// How the response body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`, one HTTP chunk per write.
    Chunked,
    /// No length: the body ends when the connection closes.
    Close,
}

/// How a response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The whole body, properly terminated.
    Complete,
    /// Only the first `n` bytes of the body, then the connection closes (no final chunk).
    CutAt(usize),
    /// The first `n` bytes of the body, then nothing until the client goes away.
    StallAt(usize),
}

/// One scripted response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub framing: Framing,
    /// Seed of the chunk sizes (1..=64 bytes); `None` writes the body at once.
    pub split_seed: Option<u64>,
    /// Pause before each chunk after the first.
    pub drip: Duration,
    pub end: End,
    /// Write each SSE event (up to its blank line) as its own chunk (overrides the split).
    pub per_event: bool,
}

impl Reply {
    /// A 200 response with `body`, whole, chunked.
    pub fn ok(content_type: &str, body: Vec<u8>) -> Self {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
            framing: Framing::Chunked,
            split_seed: None,
            drip: Duration::ZERO,
            end: End::Complete,
            per_event: false,
        }
    }

    /// A streamed Chat Completions answer: `text` (in word-sized deltas), then tool calls
    /// (name, arguments), each as the deltas a real server sends.
    pub fn chat_sse(text: &str, calls: &[(&str, Value)]) -> Self {
        let mut body = String::new();
        let mut chunk = |delta: Value, finish: Option<&str>| {
            let c = serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                                       "model": "test",
                                       "choices": [{"index": 0, "delta": delta,
                                                    "finish_reason": finish}]});
            body.push_str(&format!("data: {c}\n\n"));
        };
        chunk(
            serde_json::json!({"role": "assistant", "content": ""}),
            None,
        );
        for piece in text.split_inclusive(' ') {
            chunk(serde_json::json!({"content": piece}), None);
        }
        for (i, (name, args)) in calls.iter().enumerate() {
            chunk(
                serde_json::json!({"tool_calls": [{"index": i, "id": format!("call_{i}"),
                                                   "type": "function",
                                                   "function": {"name": name, "arguments": ""}}]}),
                None,
            );
            chunk(
                serde_json::json!({"tool_calls": [{"index": i,
                                                   "function": {"arguments": args.to_string()}}]}),
                None,
            );
        }
        chunk(
            serde_json::json!({}),
            Some(if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }),
        );
        body.push_str("data: [DONE]\n\n");
        Self::ok("text/event-stream", body.into_bytes())
    }

    /// A streamed answer in `wire`'s own format: `text` (in word-sized pieces), then tool
    /// calls (name, arguments), as that provider's server sends them.
    pub fn answer(wire: Wire, text: &str, calls: &[(&str, Value)]) -> Self {
        match wire {
            Wire::OpenAi => Self::chat_sse(text, calls),
            Wire::Anthropic => Self::anthropic_sse(text, calls),
            Wire::Gemini => Self::gemini_stream(text, calls, false),
            Wire::Ollama => Self::ollama_ndjson(text, calls),
        }
    }

    /// An Anthropic Messages stream (`event:` lines, `input_json_delta`, `message_stop`).
    pub fn anthropic_sse(text: &str, calls: &[(&str, Value)]) -> Self {
        let mut body = String::new();
        let mut event = |name: &str, data: Value| {
            body.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        };
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                   "role": "assistant", "model": "test", "content": [], "stop_reason": null,
                   "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        );
        let mut index = 0;
        if !text.is_empty() {
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                       "content_block": {"type": "text", "text": ""}}),
            );
            event("ping", json!({"type": "ping"}));
            for piece in text.split_inclusive(' ') {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "text_delta", "text": piece}}),
                );
            }
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            index = 1;
        }
        for (i, (name, args)) in calls.iter().enumerate() {
            let block = index + i;
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": block,
                       "content_block": {"type": "tool_use", "id": format!("toolu_{i}"),
                                         "name": name, "input": {}}}),
            );
            let args = args.to_string();
            let mut half = args.len() / 2;
            while !args.is_char_boundary(half) {
                half += 1;
            }
            let (a, b) = args.split_at(half);
            for part in [a, b] {
                event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": block,
                           "delta": {"type": "input_json_delta", "partial_json": part}}),
                );
            }
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": block}),
            );
        }
        event(
            "message_delta",
            json!({"type": "message_delta",
                   "delta": {"stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" }},
                   "usage": {"output_tokens": 7}}),
        );
        event("message_stop", json!({"type": "message_stop"}));
        Self::ok("text/event-stream", body.into_bytes())
    }

    /// A Gemini `streamGenerateContent` answer: a JSON array streamed element by element
    /// (no `alt`), or SSE `data:` lines (`alt=sse`). Each function call carries a
    /// `thoughtSignature` (`sig-<name>`), which the client must echo back.
    pub fn gemini_stream(text: &str, calls: &[(&str, Value)], sse: bool) -> Self {
        let mut chunks: Vec<Value> = text
            .split_inclusive(' ')
            .map(|piece| {
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]},
                                       "index": 0}],
                       "modelVersion": "test", "responseId": "resp-1"})
            })
            .collect();
        let parts: Vec<Value> = calls
            .iter()
            .map(|(name, args)| {
                json!({"functionCall": {"name": name, "args": args},
                       "thoughtSignature": format!("sig-{name}")})
            })
            .collect();
        chunks.push(json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 7,
                              "totalTokenCount": 19},
            "modelVersion": "test", "responseId": "resp-1"}));
        if sse {
            let body: String = chunks
                .iter()
                .map(|c| format!("data: {c}\r\n\r\n"))
                .collect();
            return Self::ok("text/event-stream", body.into_bytes());
        }
        let items: Vec<String> = chunks.iter().map(|c| c.to_string()).collect();
        let body = format!("[{}]", items.join(",\r\n"));
        Self::ok("application/json", body.into_bytes())
    }

    /// An Ollama `/api/chat` stream: one JSON object per line, `"done": true` last.
    pub fn ollama_ndjson(text: &str, calls: &[(&str, Value)]) -> Self {
        let mut body = String::new();
        let line = |v: Value, body: &mut String| {
            body.push_str(&v.to_string());
            body.push('\n');
        };
        for piece in text.split_inclusive(' ') {
            line(
                json!({"model": "test", "created_at": "2026-11-22T08:00:00Z",
                       "message": {"role": "assistant", "content": piece}, "done": false}),
                &mut body,
            );
        }
        if !calls.is_empty() {
            let calls: Vec<Value> = calls
                .iter()
                .map(|(name, args)| json!({"function": {"name": name, "arguments": args}}))
                .collect();
            line(
                json!({"model": "test", "message": {"role": "assistant", "content": "",
                                                    "tool_calls": calls}, "done": false}),
                &mut body,
            );
        }
        line(
            json!({"model": "test", "message": {"role": "assistant", "content": ""},
                   "done": true, "done_reason": "stop", "prompt_eval_count": 12,
                   "eval_count": 7}),
            &mut body,
        );
        Self::ok("application/x-ndjson", body.into_bytes())
    }

    /// An error response in `wire`'s own shape (Anthropic: `{"type": "error", ...}`, Gemini:
    /// `{"error": {"code", "message", "status"}}`, Ollama: `{"error": "..."}`).
    pub fn wire_error(wire: Wire, status: u16, message: &str) -> Self {
        let body = match wire {
            Wire::OpenAi => json!({"error": {"message": message, "type": "server_error",
                                              "param": null, "code": null}}),
            Wire::Anthropic => json!({"type": "error", "error": {"type": match status {
                401 => "authentication_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            }, "message": message}}),
            Wire::Gemini => {
                json!({"error": {"code": status, "message": message, "status": match status {
                    401 | 403 => "PERMISSION_DENIED",
                    429 => "RESOURCE_EXHAUSTED",
                    503 => "UNAVAILABLE",
                    _ => "INTERNAL",
                }}})
            }
            Wire::Ollama => json!({"error": message}),
        };
        Reply {
            status,
            framing: Framing::Close,
            ..Self::ok("application/json", body.to_string().into_bytes())
        }
    }

    /// A stream that starts with `text` and then fails under HTTP 200 in `wire`'s own way:
    /// OpenAI and Gemini an error object, Anthropic `event: error`, Ollama a line
    /// `{"error": ...}`.
    pub fn mid_stream_error(wire: Wire, text: &str, message: &str) -> Self {
        let mut reply = Self::answer(wire, text, &[]);
        let body = String::from_utf8(reply.body.clone()).unwrap_or_default();
        let body = match wire {
            Wire::OpenAi => {
                // Without the finishing chunk and `[DONE]`: the last two events.
                let events: Vec<&str> = body.split_inclusive("\n\n").collect();
                let kept = events[..events.len().saturating_sub(2)].concat();
                format!(
                    "{kept}data: {}\n\n",
                    json!({"error": {"message": message, "type": "server_error"}})
                )
            }
            Wire::Anthropic => {
                let cut = body.find("event: message_delta").unwrap_or(body.len());
                format!(
                    "{}event: error\ndata: {}\n\n",
                    &body[..cut],
                    json!({"type": "error", "error": {"type": "overloaded_error",
                                                           "message": message}})
                )
            }
            Wire::Gemini => {
                let cut = body.rfind(",\r\n").unwrap_or(body.len());
                format!(
                    "{},\r\n{}]",
                    &body[..cut],
                    json!({"error": {"code": 503, "message": message, "status": "UNAVAILABLE"}})
                )
            }
            Wire::Ollama => {
                // Without the `done` line.
                let lines: Vec<&str> = body.split_inclusive('\n').collect();
                let kept = lines[..lines.len().saturating_sub(1)].concat();
                format!("{kept}{}\n", json!({"error": message}))
            }
        };
        reply.body = body.into_bytes();
        reply
    }

    /// Send each SSE event as its own chunk.
    pub fn per_event(mut self) -> Self {
        self.per_event = true;
        self
    }

    /// An SSE response replaying fixture `name`.
    pub fn sse_fixture(name: &str) -> Self {
        Self::ok("text/event-stream", openai_fixture(name))
    }

    /// A JSON response replaying fixture `name`.
    pub fn json_fixture(name: &str) -> Self {
        Self::ok("application/json", openai_fixture(name))
    }

    /// An error status with an OpenAI-style JSON error body.
    pub fn error(status: u16, message: &str, kind: &str) -> Self {
        let body = serde_json::json!({
            "error": {"message": message, "type": kind, "param": null, "code": null}
        });
        Reply {
            status,
            framing: Framing::Close,
            ..Self::ok("application/json", body.to_string().into_bytes())
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Write the body in pseudo-random chunks from `seed`.
    pub fn split(mut self, seed: u64) -> Self {
        self.split_seed = Some(seed);
        self
    }

    /// Pause `delay` between chunks.
    pub fn drip(mut self, delay: Duration) -> Self {
        self.drip = delay;
        self
    }

    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    pub fn end(mut self, end: End) -> Self {
        self.end = end;
        self
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the whole request had arrived.
    // Read by the llm-test-server example (its `times` command), not by the suite.
    #[allow(dead_code)]
    pub received: std::time::SystemTime,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }
}

/// Answers a request from what the request holds: a scripted model whose next step is a
/// function of what it reads.
pub type Responder = Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Answers a request when no reply is queued.
    responder: Option<Responder>,
}

pub struct LlmServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        // Dropping the accept loop drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}

impl LlmServer {
    /// Starts a server on the current tokio runtime.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    break;
                };
                let state = shared.clone();
                connections.spawn(async move {
                    let _ = tokio::time::timeout(CONNECTION_LIMIT, serve(socket, state)).await;
                });
                // Reap finished connections so the set stays small.
                while connections.try_join_next().is_some() {}
            }
        });
        LlmServer { addr, state, task }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a reply for the next request.
    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().replies.push_back(reply);
    }

    /// The API root of `wire` on this server (it serves every path; the providers' roots
    /// differ).
    pub fn root_for(&self, wire: Wire) -> String {
        match wire {
            Wire::Ollama => self.base_url().trim_end_matches("/v1").to_owned(),
            Wire::Gemini => self.base_url().replace("/v1", "/v1beta"),
            _ => self.base_url(),
        }
    }

    /// Answer every request for which no reply is queued with `responder(request)`.
    pub fn respond_with(&self, responder: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) {
        self.state.lock().unwrap().responder = Some(Arc::new(responder));
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let (queued, responder) = {
        let mut state = state.lock().unwrap();
        state.requests.push(request.clone());
        (state.replies.pop_front(), state.responder.clone())
    };
    // The responder runs outside the lock: it may take its time reading the request.
    let reply = queued
        .or_else(|| responder.map(|answer| answer(&request)))
        .unwrap_or_else(|| {
            Reply::error(500, "test server: no scripted reply left", "server_error")
        });
    write_reply(&mut socket, &reply).await
}

/// Reads one request: head up to the blank line, then `Content-Length` bytes of body.
pub async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Recorded>> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Ok(None);
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return Ok(None);
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(64 * 1024)];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
        received: std::time::SystemTime::now(),
    }))
}

/// `body` cut into pieces as `seed` says (1..=64 bytes each), or whole.
/// The body cut after each blank line (one SSE event a piece).
fn events(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(end) = rest.windows(2).position(|w| w == b"\n\n") {
        let (piece, tail) = rest.split_at(end + 2);
        out.push(piece);
        rest = tail;
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

fn pieces(body: &[u8], seed: Option<u64>) -> Vec<&[u8]> {
    let Some(seed) = seed else {
        // (An empty piece would be the terminating chunk.)
        return if body.is_empty() { vec![] } else { vec![body] };
    };
    Rng::new(seed).chunks(body, 64)
}

async fn write_reply(socket: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!("HTTP/1.1 {} {reason}\r\n", reply.status);
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if reply.framing == Framing::Chunked {
        head.push_str("Transfer-Encoding: chunked\r\n");
    }
    head.push_str("Connection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;

    let sent = match reply.end {
        End::Complete => reply.body.len(),
        End::CutAt(n) | End::StallAt(n) => n.min(reply.body.len()),
    };
    let body = &reply.body[..sent];
    let pieces = if reply.per_event {
        events(body)
    } else {
        pieces(body, reply.split_seed)
    };
    for (i, piece) in pieces.into_iter().enumerate() {
        if i > 0 && !reply.drip.is_zero() {
            tokio::time::sleep(reply.drip).await;
        }
        match reply.framing {
            Framing::Chunked => {
                socket
                    .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
                    .await?;
                socket.write_all(piece).await?;
                socket.write_all(b"\r\n").await?;
            }
            Framing::Close => socket.write_all(piece).await?,
        }
        socket.flush().await?;
    }
    match reply.end {
        End::Complete => {
            if reply.framing == Framing::Chunked {
                socket.write_all(b"0\r\n\r\n").await?;
            }
        }
        End::CutAt(_) => {}
        End::StallAt(_) => {
            // Wait for the client to hang up (bounded by CONNECTION_LIMIT).
            let mut sink = [0u8; 1024];
            while socket.read(&mut sink).await? > 0 {}
        }
    }
    socket.shutdown().await
}
