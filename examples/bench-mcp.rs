//! MCP round trips, both ways, on a 100,000-headline store:
//! - the client: one call of the SDK's test server's `echo` tool over stdio (a real Node
//!   process, tests/mcp/test-server.mjs; needs `scripts/mcp-peers install`);
//! - the server: one `read_node` and one `query_notes` (10 hits) of org-agent's own MCP
//!   server over Streamable HTTP, from the SDK's client (tests/mcp/client.mjs `timing`), so
//!   the figure includes the protocol, the token check and the secret gate.
//!
//! Prints the median, p95 and max of 200 calls each (the server's: Node's timing).
//!
//!   cargo run --release --example bench-mcp [HEADLINES]

use org_agent::agent::mcp_server::ServerSettings;
use org_agent::agent::Runtime;
use org_agent::llm::http::CancelToken;
use org_agent::mcp::client::McpClients;
use org_agent::store::{NodeKind, Query};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn summary(mut ms: Vec<f64>) -> String {
    ms.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    format!(
        "median {:.2} ms, p95 {:.2} ms, max {:.2} ms ({} calls)",
        at(0.5),
        at(0.95),
        ms[ms.len() - 1],
        ms.len()
    )
}

fn peers() -> String {
    let out = std::process::Command::new(root().join("scripts/mcp-peers"))
        .arg("path")
        .output()
        .expect("scripts/mcp-peers runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn main() {
    let headlines: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let dir = peers();
    let rt = Runtime::global().expect("the workers start");
    let state = tempfile::tempdir().expect("a temporary directory");
    rt.open_store(state.path()).expect("the store opens");
    let store = rt.store();
    let per_file = 100;
    for f in 0..headlines.div_ceil(per_file) {
        let mut text = format!("#+TITLE: File {f}\n");
        for n in 0..per_file {
            if n % 10 == 0 {
                text.push_str(&format!("* TODO Task {f}-{n} :work:\nA body about {n}.\n"));
            } else {
                text.push_str(&format!(
                    "* Note {f}-{n} :tag{}:\nA body of a few words.\n",
                    n % 13
                ));
            }
        }
        store
            .ingest_text(&format!("/bench/f{f}.org"), &text, None, None, None)
            .expect("ingest");
    }
    let count = store
        .query(&Query {
            kind: Some(NodeKind::Headline),
            ..Query::default()
        })
        .len();
    let id = store
        .query(&Query {
            kind: Some(NodeKind::Headline),
            ..Query::default()
        })
        .into_iter()
        .nth(count / 2)
        .map(|r| r.node().id.to_string())
        .expect("a headline");
    println!("store: {count} headlines");

    // The client.
    let clients = McpClients::default();
    let text = format!(
        "((\"test\" :command \"node\" :args ({:?} \"stdio\") :env ((\"ORG_AGENT_MCP_PEERS_DIR\" . {:?}))))",
        root().join("tests/mcp/test-server.mjs").to_string_lossy(),
        dir
    );
    let value = org_agent::sexp::read(&text).expect("reads");
    clients.configure(org_agent::mcp::config::parse_servers(value.value()).expect("parses"));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let started = Instant::now();
    let (offered, _) = tokio.block_on(clients.offered());
    println!(
        "client: the server started and listed its tools in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let cancel = CancelToken::new();
    let mut times = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        let out =
            tokio.block_on(offered.call("test__echo", json!({"text": format!("hi {i}")}), &cancel));
        assert!(matches!(out, Ok((true, _))), "{out:?}");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "client: one MCP tool call (echo over stdio): {}",
        summary(times)
    );
    tokio.block_on(clients.stop_all());

    // The server.
    let settings = ServerSettings {
        permissions: Default::default(),
        audit_file: None,
        embedding: None,
        ask: Default::default(),
        ask_wait: std::time::Duration::ZERO,
    };
    let (url, file) = rt
        .mcp_serve(0, state.path().to_path_buf(), settings)
        .expect("serves");
    let token = serde_json::from_str::<serde_json::Value>(
        &std::fs::read_to_string(&file).expect("the token file"),
    )
    .expect("JSON")["token"]
        .as_str()
        .expect("a token")
        .to_string();
    for (tool, args) in [
        ("read_node", json!({"id": id}).to_string()),
        (
            "query_notes",
            json!({"tag": "work", "limit": 10}).to_string(),
        ),
    ] {
        let out = std::process::Command::new("node")
            .arg(root().join("tests/mcp/client.mjs"))
            .args(["http", &url, &token, "timing", tool, &args, "200"])
            .env("ORG_AGENT_MCP_PEERS_DIR", &dir)
            .output()
            .expect("node runs");
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("the client prints JSON");
        let ms: Vec<f64> = v["ms"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        assert!(!ms.is_empty(), "{v}");
        println!(
            "server: one {tool} from the SDK's client over HTTP: {}",
            summary(ms)
        );
    }
    rt.mcp_stop_serving();
    std::thread::sleep(Duration::from_millis(50));
}
