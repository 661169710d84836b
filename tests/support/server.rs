//! The scripted LLM test server as a process, for the ERT suites and the benchmark.
//!
//! Prints `port N` once it listens on 127.0.0.1. Then reads one JSON command per line on
//! standard input and answers each with one line:
//!
//! - `{"push": REPLY}` queues a reply for the next request, answers `ok`. REPLY is one of
//!   `{"text": "...", "calls": [["name", {ARGS}], ...]}` (a streamed answer),
//!   `{"tokens": N, "text": "word"}` (N deltas of the word, for the benchmark),
//!   `{"status": 401, "message": "...", "kind": "...", "retry_after": "2"}` (an error);
//!   `{"body": {...}}` (that JSON, as is: a model list, an embedding response);
//!   `"wire"` (`"openai"` by default, `"anthropic"`, `"gemini"`, `"ollama"`) picks the
//!   provider format of the answer or error;
//!   options: `"drip_ms"` (pause between chunks), `"per_event"` (one chunk per SSE event,
//!   the default for "tokens"), `"split"` (seed of random chunk sizes), `"cut_at"` /
//!   `"stall_at"` (byte offset where the body stops or stalls).
//! - `{"requests": true}` answers `requests JSON` with the bodies received so far.
//! - `{"times": true}` answers `times JSON`: when each request had arrived (Unix seconds).
//!
//! The server exits when standard input closes.

// The tests' helpers; this process drives only their scripted server, the rest is unused.
#[path = "mod.rs"]
#[allow(dead_code)]
mod support;

use org_agent::llm::Wire;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::time::Duration;
use support::llm_server::{End, LlmServer, Reply};

fn reply(spec: &Value) -> Result<Reply, String> {
    let text = spec["text"].as_str().unwrap_or_default();
    let wire = match spec["wire"].as_str() {
        None => None,
        Some(name) => Some(Wire::from_name(name).ok_or(format!("unknown wire {name}"))?),
    };
    let mut r = if let Some(body) = spec.get("body") {
        Reply::ok("application/json", body.to_string().into_bytes())
    } else if let (Some(status), Some(wire)) = (spec["status"].as_u64(), wire) {
        let mut r = Reply::wire_error(
            wire,
            status as u16,
            spec["message"].as_str().unwrap_or("test error"),
        );
        if let Some(after) = spec["retry_after"].as_str() {
            r = r.header("retry-after", after);
        }
        r
    } else if let Some(status) = spec["status"].as_u64() {
        let mut r = Reply::error(
            status as u16,
            spec["message"].as_str().unwrap_or("test error"),
            spec["kind"].as_str().unwrap_or("server_error"),
        );
        if let Some(after) = spec["retry_after"].as_str() {
            r = r.header("retry-after", after);
        }
        r
    } else if let Some(n) = spec["tokens"].as_u64() {
        let word = if text.is_empty() { "token " } else { text };
        Reply::chat_sse(&word.repeat(n as usize), &[]).per_event()
    } else {
        let mut calls = Vec::new();
        for c in spec["calls"].as_array().into_iter().flatten() {
            let name = c[0].as_str().ok_or("a call is [NAME, ARGS]")?;
            calls.push((name, c[1].clone()));
        }
        Reply::answer(wire.unwrap_or(Wire::OpenAi), text, &calls)
    };
    if let Some(ms) = spec["drip_ms"].as_u64() {
        r = r.drip(Duration::from_millis(ms));
    }
    if spec["per_event"].as_bool() == Some(true) {
        r = r.per_event();
    }
    if let Some(seed) = spec["split"].as_u64() {
        r = r.split(seed);
    }
    if let Some(n) = spec["cut_at"].as_u64() {
        r = r.end(End::CutAt(n as usize));
    }
    if let Some(n) = spec["stall_at"].as_u64() {
        r = r.end(End::StallAt(n as usize));
    }
    Ok(r)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = rt.block_on(LlmServer::start());
    let port = server
        .base_url()
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches("/v1").parse::<u16>().ok())
        .expect("port");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "port {port}");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => format!("error not JSON: {e}"),
            Ok(cmd) if cmd.get("push").is_some() => match reply(&cmd["push"]) {
                Ok(r) => {
                    server.push(r);
                    "ok".to_string()
                }
                Err(e) => format!("error {e}"),
            },
            Ok(cmd) if cmd.get("requests").is_some() => {
                let bodies: Vec<Value> = server
                    .requests()
                    .iter()
                    .map(|r| serde_json::from_slice(&r.body).unwrap_or(Value::Null))
                    .collect();
                format!("requests {}", Value::Array(bodies))
            }
            Ok(cmd) if cmd.get("times").is_some() => {
                let times: Vec<f64> = server
                    .requests()
                    .iter()
                    .map(|r| {
                        r.received
                            .duration_since(std::time::UNIX_EPOCH)
                            .map(|d| d.as_secs_f64())
                            .unwrap_or(0.0)
                    })
                    .collect();
                format!("times {}", serde_json::json!(times))
            }
            Ok(_) => "error unknown command".to_string(),
        };
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
}
