//! The embedding client against a real HTTP server on 127.0.0.1 (written below): the three
//! wire formats (OpenAI floats and base64, Ollama, Gemini), the requests they send (path,
//! body, key header), provider errors, wrong counts, timeouts and cancellation, and
//! `embed_pending` filling a vector index batch by batch.

use crate::support::llm_server::{read_request, Recorded};
use crate::support::refused_url;
use base64::Engine as _;
use org_agent::agent::embedding::{embed_pending, EmbedReport};
use org_agent::llm::embeddings::{
    EmbeddingBackend, EmbeddingClient, EmbeddingWire, EncodingFormat,
};
use org_agent::llm::{CancelToken, LlmError, TimeoutPhase};
use org_agent::store::vectors::{Candidate, VectorIndex};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

const KEY: &str = "sk-test-key-1234";

// ---------------------------------------------------------------------------------------------
// The server: answers each request with the next scripted reply and records the request.

#[derive(Clone)]
enum Reply {
    /// A status and a JSON body (`Content-Length` framing), with extra headers.
    Json(u16, Value, Vec<(&'static str, &'static str)>),
    /// Never answers (until the client goes away).
    Stall,
}

fn ok(body: Value) -> Reply {
    Reply::Json(200, body, vec![])
}

#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Recorded>,
}

struct Server {
    addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection.
        self.task.abort();
    }
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            requests: Vec::new(),
        }));
        let shared = script.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((socket, _)) = listener.accept().await {
                let script = shared.clone();
                connections.spawn(async move {
                    let limit = Duration::from_secs(30);
                    let _ = tokio::time::timeout(limit, serve(socket, script)).await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Server { addr, script, task }
    }

    fn url(&self, root: &str) -> String {
        format!("http://{}{root}", self.addr)
    }

    fn requests(&self) -> Vec<Recorded> {
        self.script.lock().requests.clone()
    }
}

async fn serve(mut socket: TcpStream, script: Arc<Mutex<Script>>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let reply = {
        let mut s = script.lock();
        s.requests.push(request);
        s.replies.pop_front()
    }
    .unwrap_or_else(|| {
        Reply::Json(
            500,
            json!({"error": {"message": "no scripted reply left"}}),
            vec![],
        )
    });
    match reply {
        Reply::Json(status, body, extra) => {
            let body = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} Status\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in extra {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
            socket.shutdown().await
        }
        Reply::Stall => {
            let mut sink = [0u8; 1024];
            while socket.read(&mut sink).await? > 0 {}
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn client(
    wire: EmbeddingWire,
    base: String,
    model: &str,
    configure: impl FnOnce(&mut EmbeddingBackend),
) -> EmbeddingClient {
    let mut backend = EmbeddingBackend::new(wire, base, model);
    backend.endpoint.api_key = Some(KEY.to_owned());
    backend.endpoint.timeouts.first_byte = Duration::from_secs(10);
    backend.endpoint.timeouts.total = Duration::from_secs(30);
    configure(&mut backend);
    EmbeddingClient::new(backend).expect("client")
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn b64(values: &[f32]) -> String {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

// ---------------------------------------------------------------------------------------------
// Wire formats.

#[tokio::test]
async fn openai_floats_in_index_order() {
    let server = Server::start(vec![ok(json!({
        "object": "list", "model": "text-embedding-3-small",
        // Out of order, as the API allows.
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.5, -0.25, 1.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 2.0, 3.0]},
        ],
        "usage": {"prompt_tokens": 4, "total_tokens": 4}
    }))])
    .await;
    let c = client(
        EmbeddingWire::OpenAi,
        server.url("/v1"),
        "text-embedding-3-small",
        |b| {
            b.endpoint
                .headers
                .push(("OpenAI-Organization".into(), "org-1".into()))
        },
    );
    let got = c
        .embed(&texts(&["first", "second"]), &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(got, vec![vec![1.0, 2.0, 3.0], vec![0.5, -0.25, 1.0]]);
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/embeddings");
    assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(req.header("openai-organization"), Some("org-1"));
    assert_eq!(
        req.json(),
        json!({"model": "text-embedding-3-small", "input": ["first", "second"],
               "encoding_format": "float"})
    );
}

#[tokio::test]
async fn openai_base64_is_exact() {
    let a = [0.1f32, -3.5e-5, 7.0, f32::MIN_POSITIVE];
    let b = [1.0f32, 0.0, -1.0, 0.333_333_34];
    let server = Server::start(vec![ok(json!({"data": [
        {"index": 0, "embedding": b64(&a)},
        {"index": 1, "embedding": b64(&b)},
    ]}))])
    .await;
    let c = client(EmbeddingWire::OpenAi, server.url("/v1"), "local", |b| {
        b.encoding = EncodingFormat::Base64;
    });
    let got = c
        .embed(&texts(&["a", "b"]), &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(got, vec![a.to_vec(), b.to_vec()]);
    assert_eq!(server.requests()[0].json()["encoding_format"], "base64");
}

#[tokio::test]
async fn ollama_api_embed() {
    let server = Server::start(vec![ok(json!({
        "model": "all-minilm",
        "embeddings": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]],
        "total_duration": 14143917, "load_duration": 1019500, "prompt_eval_count": 8
    }))])
    .await;
    let c = client(EmbeddingWire::Ollama, server.url(""), "all-minilm", |_| {});
    let got = c
        .embed(&texts(&["x", "y", "z"]), &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(got, vec![vec![0.1, 0.2], vec![0.3, 0.4], vec![0.5, 0.6]]);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/api/embed");
    assert_eq!(
        req.json(),
        json!({"model": "all-minilm", "input": ["x", "y", "z"]})
    );
    assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
}

#[tokio::test]
async fn gemini_batch_embed_contents() {
    let server = Server::start(vec![ok(json!({"embeddings": [
        {"values": [0.25, 0.5, 0.75]},
        {"values": [-1.0, 0.0, 1.0]},
    ]}))])
    .await;
    // Users copy the "models/" prefix along; it is not doubled.
    let c = client(
        EmbeddingWire::Gemini,
        server.url("/v1beta"),
        "models/text-embedding-004",
        |_| {},
    );
    let got = c
        .embed(&texts(&["one", "two"]), &CancelToken::new())
        .await
        .unwrap();
    assert_eq!(got, vec![vec![0.25, 0.5, 0.75], vec![-1.0, 0.0, 1.0]]);
    let req = &server.requests()[0];
    assert_eq!(
        req.path,
        "/v1beta/models/text-embedding-004:batchEmbedContents"
    );
    assert_eq!(req.header("x-goog-api-key"), Some(KEY));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(
        req.json(),
        json!({"requests": [
            {"model": "models/text-embedding-004", "content": {"parts": [{"text": "one"}]}},
            {"model": "models/text-embedding-004", "content": {"parts": [{"text": "two"}]}},
        ]})
    );
}

#[tokio::test]
async fn an_empty_batch_sends_nothing() {
    let server = Server::start(vec![]).await;
    let c = client(EmbeddingWire::OpenAi, server.url("/v1"), "m", |_| {});
    assert!(c.embed(&[], &CancelToken::new()).await.unwrap().is_empty());
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Errors.

#[tokio::test]
async fn provider_errors_keep_the_providers_message() {
    let server = Server::start(vec![
        Reply::Json(
            401,
            json!({"error": {"message": format!("Incorrect API key provided: {KEY}"),
                             "type": "invalid_request_error", "param": null,
                             "code": "invalid_api_key"}}),
            vec![],
        ),
        Reply::Json(
            429,
            json!([{"error": {"code": 429, "message": "Resource has been exhausted",
                              "status": "RESOURCE_EXHAUSTED"}}]),
            vec![("Retry-After", "7")],
        ),
        Reply::Json(
            404,
            json!({"error": "model \"nomic\" not found, try pulling it first"}),
            vec![],
        ),
    ])
    .await;
    let cancel = CancelToken::new();
    let one = texts(&["x"]);

    let openai = client(EmbeddingWire::OpenAi, server.url("/v1"), "m", |_| {});
    match openai.embed(&one, &cancel).await {
        Err(LlmError::Http {
            status: 401,
            message,
            kind,
            code,
            ..
        }) => {
            // The server echoed the key: the error does not.
            assert_eq!(message, "Incorrect API key provided: [redacted]");
            assert_eq!(kind.as_deref(), Some("invalid_request_error"));
            assert_eq!(code.as_deref(), Some("invalid_api_key"));
        }
        other => panic!("{other:?}"),
    }

    let gemini = client(EmbeddingWire::Gemini, server.url("/v1beta"), "e", |_| {});
    let err = gemini.embed(&one, &cancel).await.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
    assert!(err.is_retryable());
    assert!(
        err.to_string().contains("Resource has been exhausted"),
        "{err}"
    );

    let ollama = client(EmbeddingWire::Ollama, server.url(""), "nomic", |_| {});
    match ollama.embed(&one, &cancel).await {
        Err(LlmError::Http {
            status: 404,
            message,
            ..
        }) => assert!(message.contains("not found, try pulling"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn wrong_counts_and_shapes_are_malformed() {
    let server = Server::start(vec![
        ok(json!({"data": [{"index": 0, "embedding": [1.0, 2.0]}]})),
        ok(json!({"embeddings": [[1.0, 2.0], [1.0]]})),
        ok(json!({"embeddings": [{"values": [1.0]}, {"values": [2.0]}, {"values": [3.0]}]})),
        ok(json!({"data": [{"index": 0, "embedding": "AAAA!"}]})),
    ])
    .await;
    let cancel = CancelToken::new();
    let two = texts(&["a", "b"]);
    let malformed = |r: Result<Vec<Vec<f32>>, LlmError>| match r {
        Err(LlmError::Malformed(why)) => why,
        other => panic!("{other:?}"),
    };
    let openai = client(EmbeddingWire::OpenAi, server.url("/v1"), "m", |_| {});
    assert!(malformed(openai.embed(&two, &cancel).await).contains("asked for 2 embeddings, got 1"));
    let ollama = client(EmbeddingWire::Ollama, server.url(""), "m", |_| {});
    assert!(malformed(ollama.embed(&two, &cancel).await).contains("dimensions"));
    let gemini = client(EmbeddingWire::Gemini, server.url("/v1beta"), "m", |_| {});
    assert!(malformed(gemini.embed(&two, &cancel).await).contains("got 3"));
    assert!(malformed(openai.embed(&texts(&["a"]), &cancel).await).contains("base64"));
}

#[tokio::test]
async fn timeouts_and_cancellation() {
    let server = Server::start(vec![Reply::Stall, Reply::Stall]).await;
    let slow = client(EmbeddingWire::OpenAi, server.url("/v1"), "m", |b| {
        b.endpoint.timeouts.first_byte = Duration::from_millis(300);
    });
    match slow.embed(&texts(&["a"]), &CancelToken::new()).await {
        Err(LlmError::Timeout {
            phase: TimeoutPhase::FirstByte,
            after,
        }) => assert_eq!(after, Duration::from_millis(300)),
        other => panic!("{other:?}"),
    }
    let c = client(EmbeddingWire::OpenAi, server.url("/v1"), "m", |_| {});
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let started = std::time::Instant::now();
    assert_eq!(
        c.embed(&texts(&["a"]), &cancel).await,
        Err(LlmError::Cancelled)
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // A cancelled token stops the next request before it is sent.
    assert_eq!(
        c.embed(&texts(&["a"]), &cancel).await,
        Err(LlmError::Cancelled)
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let c = client(EmbeddingWire::OpenAi, refused_url(), "m", |_| {});
    match c.embed(&texts(&["a"]), &CancelToken::new()).await {
        Err(LlmError::Transport(why)) => assert!(!why.contains(KEY)),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// embed_pending.

#[tokio::test]
async fn embed_pending_keeps_each_batch_and_embeds_a_text_once() {
    let server = Server::start(vec![
        ok(json!({"data": [{"index": 0, "embedding": [1.0, 0.0]},
                           {"index": 1, "embedding": [0.0, 2.0]}]})),
        Reply::Json(503, json!({"error": {"message": "overloaded"}}), vec![]),
        ok(json!({"data": [{"index": 0, "embedding": [1.0, 1.0]},
                           {"index": 1, "embedding": [3.0, 0.0]}]})),
    ])
    .await;
    let c = client(EmbeddingWire::OpenAi, server.url("/v1"), "mini", |_| {});
    let index = Mutex::new(VectorIndex::new("mini"));
    let all = vec![
        Candidate::new("a", "apples"),
        Candidate::new("b", "bees"),
        Candidate::new("c", "apples"),
        Candidate::new("d", "dahlias"),
        Candidate::new("e", "eels"),
    ];
    let cancel = CancelToken::new();
    let pending = index.lock().pending(&all);
    let err = embed_pending(&index, &c, pending, 2, &cancel)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    {
        // The first batch survived the failure of the second; "apples" went once for a and c.
        let ix = index.lock();
        assert_eq!(ix.len(), 3);
        assert_eq!(ix.vector("a"), Some(&[1.0, 0.0][..]));
        assert_eq!(ix.vector("c"), Some(&[1.0, 0.0][..]));
        assert_eq!(ix.vector("b"), Some(&[0.0, 1.0][..]));
    }
    let pending = index.lock().pending(&all);
    let ids: Vec<&str> = pending.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["d", "e"]);
    let report = embed_pending(&index, &c, pending, 2, &cancel)
        .await
        .unwrap();
    assert_eq!(
        report,
        EmbedReport {
            requests: 1,
            texts: 2,
            stored: 2,
            ..EmbedReport::default()
        }
    );
    let inputs: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.json()["input"].clone())
        .collect();
    assert_eq!(
        inputs,
        [
            json!(["apples", "bees"]),
            json!(["dahlias", "eels"]),
            json!(["dahlias", "eels"])
        ]
    );
    assert!(index.lock().pending(&all).is_empty());
    let hits = index.lock().top_k(&[1.0, 1.0], 2, 0.0, &|_| true);
    // d is [1, 1]; a, b, c and e tie at cos 45°, and the smallest id comes first.
    assert_eq!(hits[0].0, "d");
    assert_eq!(hits[1].0, "a");
}

#[tokio::test]
async fn embed_pending_starts_fresh_for_another_model_or_dimension() {
    let server = Server::start(vec![
        ok(json!({"data": [{"embedding": [1.0, 0.0, 0.0]}]})),
        ok(json!({"data": [{"embedding": [0.0, 1.0, 0.0]}]})),
    ])
    .await;
    let mut old = VectorIndex::new("old-model");
    old.insert("a", Candidate::new("a", "x").hash, &[1.0, 0.0])
        .unwrap();
    let index = Mutex::new(old);
    let cancel = CancelToken::new();
    let c = client(
        EmbeddingWire::OpenAi,
        server.url("/v1"),
        "new-model",
        |_| {},
    );
    let report = embed_pending(&index, &c, vec![Candidate::new("b", "y")], 8, &cancel)
        .await
        .unwrap();
    assert!(report.reset);
    {
        let ix = index.lock();
        assert_eq!((ix.model(), ix.dim(), ix.len()), ("new-model", 3, 1));
        assert!(!ix.contains("a"));
    }
    // Same model name, vectors of another dimension: fresh again.
    let mut two = VectorIndex::new("new-model");
    two.insert("a", Candidate::new("a", "x").hash, &[1.0, 0.0])
        .unwrap();
    *index.lock() = two;
    let report = embed_pending(&index, &c, vec![Candidate::new("b", "y")], 8, &cancel)
        .await
        .unwrap();
    assert!(report.reset);
    assert_eq!(index.lock().dim(), 3);
    assert_eq!(index.lock().len(), 1);
}
