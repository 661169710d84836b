//! End to end against a REAL model server (llama.cpp's server with small models, from PyPI;
//! see scripts/local-llm): a streamed answer, and a real tool call that is gated, runs
//! against the store and whose result goes back to the model; the Anthropic provider
//! against the server's own /v1/messages (a streamed answer, a real tool_use); a cascade
//! whose first backend is a dead port. Temperature 0, generous timeouts, assertions on
//! structure, never on wording.

use org_agent::agent::turn::{run_turn, Conversation, Equipment, TurnConfig, TurnError, TurnEvent};
use org_agent::llm::completion::Delta;
use org_agent::llm::error::LlmError;
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::store::{Config, Store};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A model server that is killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn healthy(port: u16) -> bool {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = String::new();
    let _ = s.read_to_string(&mut buf);
    buf.starts_with("HTTP/1.1 200")
}

fn start(model: &str) -> Server {
    let script = root().join("scripts/local-llm");
    let status = Command::new(&script)
        .args(["install", model])
        .status()
        .expect("scripts/local-llm runs");
    assert!(status.success(), "installing the {model} model failed");
    let path = Command::new(&script)
        .args(["model", model])
        .output()
        .unwrap();
    let model_path = String::from_utf8(path.stdout).unwrap().trim().to_string();
    let dir = std::env::var("ORG_AGENT_LOCAL_LLM").unwrap_or_else(|_| {
        format!(
            "{}/.cache/org-agent/local-llm",
            std::env::var("HOME").unwrap()
        )
    });
    let python = Path::new(&dir).join("venv/bin/python");
    let port = free_port();
    let mut cmd = Command::new(python);
    cmd.arg(root().join("scripts/local_llm_server.py"))
        .args(["--model", &model_path, "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if model == "qwen" {
        cmd.args([
            "--template",
            root()
                .join("../shared/local-llm/qwen2.5-bare-json-tools.jinja")
                .to_str()
                .unwrap(),
        ]);
    }
    let child = cmd.spawn().expect("the model server starts");
    let server = Server { child, port };
    let deadline = Instant::now() + Duration::from_secs(300);
    while !healthy(port) {
        assert!(
            Instant::now() < deadline,
            "the model server did not become healthy"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    server
}

fn equipment(port: u16) -> Equipment {
    let mut backend = Backend::new(format!("http://127.0.0.1:{port}/v1"), "local");
    // Shared 2-core machines: a request that takes 2 s idle can take 100 s under load.
    backend.first_byte_timeout = Duration::from_secs(240);
    backend.idle_timeout = Duration::from_secs(120);
    backend.total_timeout = Duration::from_secs(600);
    let store = Store::in_memory(Config::default());
    for name in ["projects.org", "tasks.org", "journal.org"] {
        let p = root().join("demo/notes").join(name);
        store.ingest_file(p.to_str().unwrap(), true).unwrap();
    }
    Equipment::new(ChatClient::new(backend).unwrap(), Arc::new(store))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn real_model_streams_an_answer() {
    let server = start("smollm2");
    let eq = equipment(server.port);
    let cfg = TurnConfig {
        temperature: Some(0.0),
        ..TurnConfig::default()
    };
    let mut conv = Conversation::default();
    let mut pieces = 0;
    let answer = runtime()
        .block_on(run_turn(
            &eq,
            &mut conv,
            "Say hello in one short sentence.",
            &cfg,
            &CancelToken::new(),
            |e| {
                if let TurnEvent::Delta(Delta::Text(_)) = e {
                    pieces += 1;
                }
            },
        ))
        .unwrap();
    assert!(!answer.trim().is_empty());
    assert!(
        pieces > 1,
        "the answer arrived in {pieces} piece(s), not streamed"
    );
}

#[test]
fn real_model_tool_call_is_gated_run_and_sent_back() {
    let server = start("qwen");
    let eq = equipment(server.port);
    let cfg = TurnConfig {
        temperature: Some(0.0),
        max_depth: 3,
        ..TurnConfig::default()
    };
    let mut conv = Conversation::default();
    let mut events = Vec::new();
    let result = runtime().block_on(run_turn(
        &eq,
        &mut conv,
        "Which of my notes are tagged work? Call query_notes with the tag work.",
        &cfg,
        &CancelToken::new(),
        |e| events.push(e),
    ));
    let proposed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Proposed { call, decision, .. } => Some((call.name.clone(), *decision)),
            _ => None,
        })
        .collect();
    assert!(
        proposed
            .iter()
            .any(|(name, d)| name == "query_notes" && *d == "allow"),
        "no allowed query_notes call: {proposed:?}; result {result:?}; events {events:?}"
    );
    let ran = events.iter().any(|e| {
        matches!(e, TurnEvent::ToolResult { name, ok: true, content, .. }
                 if name == "query_notes" && content.contains("matching headlines"))
    });
    assert!(ran, "the tool did not run: {events:?}");
    // The result went back to the model: the conversation holds it, and the turn went on
    // to another request, which ended in an answer or in the model's own error (this
    // template makes the server answer HTTP 500 to prose while tools are offered).
    assert!(conv
        .messages
        .iter()
        .any(|m| matches!(m, org_agent::llm::http::Message::Tool { .. })));
    match result {
        Ok(answer) => assert!(!answer.trim().is_empty()),
        Err(TurnError::Llm(LlmError::Http {
            status, message, ..
        })) => {
            assert_eq!(status, 500);
            assert!(!message.is_empty(), "the server's own message is kept");
        }
        Err(TurnError::DepthLimit(_)) => {}
        Err(other) => panic!("unexpected end of turn: {other}"),
    }
}

#[test]
fn real_server_speaks_anthropic_messages_and_serves_a_cascade() {
    use org_agent::llm::cascade::{Cascade, CascadeEvent, Health, Policy};
    use org_agent::llm::{ChatRequest, Message, Wire};
    let server = start("qwen");
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let slow = |mut b: Backend| {
        b.first_byte_timeout = Duration::from_secs(240);
        b.idle_timeout = Duration::from_secs(120);
        b.total_timeout = Duration::from_secs(600);
        b
    };
    let anthropic = ChatClient::new(slow(Backend::with_wire(
        Wire::Anthropic,
        base.clone(),
        "local",
    )))
    .unwrap();
    let rt = runtime();

    // A streamed answer from llama.cpp's /v1/messages.
    let mut pieces = 0;
    let plain = ChatRequest {
        messages: vec![Message::User("Say hello in one short sentence.".into())],
        stream: true,
        temperature: Some(0.0),
        max_tokens: Some(64),
        ..ChatRequest::default()
    };
    let answer = rt
        .block_on(anthropic.chat(&plain, &CancelToken::new(), |d| {
            if let Delta::Text(_) = d {
                pieces += 1;
            }
        }))
        .unwrap();
    assert!(!answer.text.trim().is_empty());
    assert!(pieces > 1, "not streamed: {pieces} piece(s)");

    // A real tool_use, its input streamed as input_json_delta.
    let tools = org_agent::tools::Registry::with_builtins().function_schemas();
    let with_tools = ChatRequest {
        messages: vec![Message::User(
            "Which of my notes are tagged work? Call query_notes with the tag work.".into(),
        )],
        tools,
        stream: true,
        temperature: Some(0.0),
        max_tokens: Some(200),
    };
    let called = rt
        .block_on(anthropic.chat(&with_tools, &CancelToken::new(), |_| {}))
        .unwrap();
    let call = called
        .tool_calls
        .first()
        .unwrap_or_else(|| panic!("no tool_use: {called:?}"));
    assert_eq!(call.name, "query_notes");
    assert!(call.arguments.is_object(), "{:?}", call.arguments);

    // A cascade whose first backend is a dead port: the real server answers.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let mut b = Backend::new(format!("http://127.0.0.1:{port}/v1"), "none");
        b.name = "dead".into();
        b
    };
    let mut real = slow(Backend::new(base, "local"));
    real.name = "real".into();
    let cascade = Cascade::new(
        vec![
            ChatClient::new(dead).unwrap(),
            ChatClient::new(real).unwrap(),
        ],
        Arc::new(Health::default()),
        Policy::default(),
    );
    let mut failed = Vec::new();
    let answer = rt
        .block_on(cascade.chat(&plain, &CancelToken::new(), |e| {
            if let CascadeEvent::Failover { backend, .. } = e {
                failed.push(backend);
            }
        }))
        .unwrap();
    assert_eq!(answer.backend, "real");
    assert!(!answer.completion.text.trim().is_empty());
    assert_eq!(failed, ["dead"]);
}
