//! org-agent's MCP client against real MCP servers: the test server written with the official
//! TypeScript SDK (tests/mcp/test-server.mjs, over stdio and Streamable HTTP) and the
//! reference filesystem server, both from npm (scripts/mcp-peers, pinned by the lockfile).
//! Faults — a server that hangs, dies mid-call, writes garbage or floods its output — end the
//! call with a clear error in bounded time, and the next use starts the server again.

use org_agent::llm::http::CancelToken;
use org_agent::mcp::client::{CallError, McpClients, State};
use org_agent::mcp::config::parse_servers;
use serde_json::json;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory whose node_modules holds the peers (installed on first use).
fn peers() -> String {
    let out = std::process::Command::new(root().join("scripts/mcp-peers"))
        .arg("path")
        .output()
        .expect("scripts/mcp-peers runs");
    assert!(
        out.status.success(),
        "scripts/mcp-peers path failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// The server list with the test server over stdio as `test` (each call `call_timeout` s).
fn stdio_servers(call_timeout: u32, hostile: bool) -> McpClients {
    let dir = peers();
    let server = root().join("tests/mcp/test-server.mjs");
    let env = if hostile {
        format!(
            ":env ((\"ORG_AGENT_MCP_PEERS_DIR\" . {}) (\"MCP_TEST_HOSTILE\" . \"1\"))",
            quote(&dir)
        )
    } else {
        format!(":env ((\"ORG_AGENT_MCP_PEERS_DIR\" . {}))", quote(&dir))
    };
    let text = format!(
        "((\"test\" :command \"node\" :args ({} \"stdio\") {env} :call-timeout {call_timeout} :timeout 30))",
        quote(&server.to_string_lossy())
    );
    let clients = McpClients::default();
    let value = org_agent::sexp::read(&text).expect("reads");
    clients.configure(parse_servers(value.value()).expect("parses"));
    clients
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_tools_are_offered_checked_and_called() {
    let clients = stdio_servers(20, false);
    let (offered, notices) = clients.offered().await;
    assert!(notices.is_empty(), "{notices:?}");
    let names: Vec<&str> = offered.names().collect();
    for want in ["test__echo", "test__add", "test__hang", "test__die"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let schemas = offered.function_schemas();
    let echo = schemas
        .iter()
        .find(|s| s["function"]["name"] == "test__echo")
        .expect("echo declared");
    assert_eq!(echo["function"]["parameters"]["type"], "object");
    assert!(echo["function"]["description"]
        .as_str()
        .unwrap()
        .contains("MCP server test"));
    let cancel = CancelToken::new();
    assert_eq!(
        offered
            .call("test__echo", json!({"text": "hi"}), &cancel)
            .await,
        Ok((true, "hi".to_string()))
    );
    assert_eq!(
        offered
            .call("test__add", json!({"a": 1, "b": 2}), &cancel)
            .await,
        Ok((true, "3".to_string()))
    );
    // Wrong arguments never reach the server.
    let wrong = offered.check("test__add", &json!({"a": "one", "b": 2}));
    assert!(
        matches!(wrong, Some(Err(ref e)) if e.contains("must be a number")),
        "{wrong:?}"
    );
    assert!(matches!(
        offered
            .call("test__add", json!({"a": "one", "b": 2}), &cancel)
            .await,
        Err(CallError::Refused(_))
    ));
    let status = &clients.statuses()[0];
    assert_eq!(status.state, State::Running);
    assert!(status.calls >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_or_dead_server_is_an_error_and_starts_again() {
    let clients = stdio_servers(3, false);
    let (offered, _) = clients.offered().await;
    let cancel = CancelToken::new();
    let started = Instant::now();
    let hung = offered.call("test__hang", json!({}), &cancel).await;
    assert!(
        matches!(hung, Err(CallError::Timeout { seconds: 3, .. })),
        "{hung:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(hung
        .unwrap_err()
        .to_string()
        .contains("starts again on the next use"));
    assert_eq!(clients.statuses()[0].state, State::Failed);
    // The next use starts it again.
    assert_eq!(
        offered
            .call("test__echo", json!({"text": "again"}), &cancel)
            .await,
        Ok((true, "again".to_string()))
    );
    let died = offered.call("test__die", json!({}), &cancel).await;
    assert!(matches!(died, Err(CallError::Broken { .. })), "{died:?}");
    assert_eq!(
        offered
            .call("test__echo", json!({"text": "back"}), &cancel)
            .await,
        Ok((true, "back".to_string()))
    );
    // Garbage on stdout, then silence: bounded by the call timeout.
    let started = Instant::now();
    let garbage = offered.call("test__garbage", json!({}), &cancel).await;
    assert!(garbage.is_err(), "{garbage:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // A flood of one endless line: bounded in memory (the line is dropped past 16 MiB) and
    // in time.
    let started = Instant::now();
    let flood = offered
        .call("test__flood", json!({"megabytes": 40}), &cancel)
        .await;
    assert!(flood.is_err(), "{flood:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        offered
            .call("test__echo", json!({"text": "still"}), &cancel)
            .await,
        Ok((true, "still".to_string()))
    );
    // A cancelled turn stops waiting at once.
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let slow = offered
        .call("test__slow", json!({"seconds": 2.5}), &cancel)
        .await;
    assert_eq!(slow, Err(CallError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_start_is_left_out_with_the_reason() {
    let clients = McpClients::default();
    let value =
        org_agent::sexp::read(r#"(("missing" :command "/nonexistent/mcp-server" :timeout 5))"#)
            .expect("reads");
    clients.configure(parse_servers(value.value()).expect("parses"));
    let (offered, notices) = clients.offered().await;
    assert!(offered.is_empty());
    assert_eq!(notices.len(), 1);
    assert!(
        notices[0].contains("missing") && notices[0].contains("did not start"),
        "{notices:?}"
    );
    // Not tried again by every turn for a while.
    let started = Instant::now();
    let (_, again) = clients.offered().await;
    assert!(started.elapsed() < Duration::from_millis(500));
    assert_eq!(again.len(), 1);
}

/// The test server over Streamable HTTP: its URL, and the process.
fn http_server() -> (String, std::process::Child) {
    let dir = peers();
    let mut child = std::process::Command::new("node")
        .arg(root().join("tests/mcp/test-server.mjs"))
        .args(["http", "0"])
        .env("ORG_AGENT_MCP_PEERS_DIR", &dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node runs");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads");
    let url = line
        .trim()
        .strip_prefix("listening ")
        .expect("the server says where it listens")
        .to_string();
    (url, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_resources_and_prompts() {
    let (url, mut child) = http_server();
    let clients = McpClients::default();
    let value = org_agent::sexp::read(&format!(
        "((\"web\" :url {} :headers (:X-Test \"1\") :call-timeout 5))",
        quote(&url)
    ))
    .expect("reads");
    clients.configure(parse_servers(value.value()).expect("parses"));
    let (offered, notices) = clients.offered().await;
    assert!(notices.is_empty(), "{notices:?}");
    let cancel = CancelToken::new();
    assert_eq!(
        offered
            .call("web__echo", json!({"text": "over http"}), &cancel)
            .await,
        Ok((true, "over http".to_string()))
    );
    let (ok, big) = offered
        .call("web__big", json!({"megabytes": 1}), &cancel)
        .await
        .expect("answers");
    assert!(ok);
    assert!(big.ends_with("more characters cut]"), "bounded");
    let resources = clients.resources("web").await.expect("lists");
    assert!(
        resources.iter().any(|r| r[0] == "test://greeting"),
        "{resources:?}"
    );
    assert_eq!(
        clients
            .read_resource("web", "test://greeting")
            .await
            .as_deref(),
        Ok("Hello from the test server")
    );
    let prompts = clients.prompts("web").await.expect("lists");
    assert!(prompts
        .iter()
        .any(|p| p.0 == "summarize" && p.2 == vec!["topic".to_string()]));
    let mut args = serde_json::Map::new();
    args.insert("topic".into(), json!("routers"));
    let prompt = clients
        .prompt("web", "summarize", args)
        .await
        .expect("gets");
    assert!(prompt.contains("routers"), "{prompt}");
    // The server dies mid-call: an error, in bounded time.
    let started = Instant::now();
    let died = offered.call("web__die", json!({}), &cancel).await;
    assert!(died.is_err(), "{died:?}");
    assert!(started.elapsed() < Duration::from_secs(15));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_filesystem_server_works_as_listed_for_mcp_el() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("hello.txt"), "hello from a file").expect("writes");
    let clients = McpClients::default();
    let value = org_agent::sexp::read(&format!(
        "((\"filesystem\" . (:command {} :args (\"filesystem\" {}))))",
        quote(&root().join("scripts/mcp-peers").to_string_lossy()),
        quote(&dir.path().to_string_lossy())
    ))
    .expect("reads");
    clients.configure(parse_servers(value.value()).expect("parses"));
    let (offered, notices) = clients.offered().await;
    assert!(notices.is_empty(), "{notices:?}");
    let cancel = CancelToken::new();
    let path = dir.path().join("hello.txt");
    let read = offered
        .call(
            "filesystem__read_text_file",
            json!({"path": path.to_string_lossy()}),
            &cancel,
        )
        .await;
    assert_eq!(read, Ok((true, "hello from a file".to_string())));
    let outside = offered
        .call(
            "filesystem__read_text_file",
            json!({"path": "/etc/passwd"}),
            &cancel,
        )
        .await
        .expect("answers");
    assert!(
        !outside.0,
        "the server refuses; the result says it is an error"
    );
}

/// A skill that aliases the test server's `add` with `a` fixed and `b` defaulted, and whose
/// gate table denies the server's `echo`; two more aliases cannot be offered.
const ADDER_SKILL: &str = "#+SKILL_NAME: adder\n\
#+DESCRIPTION: Use when the user wants forty added to something.\n\
* Prompt\nAdd forty.\n\
* Gate\n| action | condition | decision | reason |\n|---+---+---+---|\n\
| test__echo | - | deny | no echoes while adding |\n\
* Tools\n** plus-forty\n:PROPERTIES:\n:ALIAS: test__add\n:A: 40\n:B: default: 2\n:END:\n\
Add forty to a number.\n\
** odd\n:PROPERTIES:\n:ALIAS: test__add\n:C: 1\n:END:\nTakes what add does not.\n\
** gone\n:PROPERTIES:\n:ALIAS: elsewhere__add\n:END:\nA server not configured.\n";

/// The `role: tool` messages of a recorded request body.
fn tool_results(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_aliases_an_mcp_tool_and_its_gate_table_tightens_the_server() {
    use crate::support::llm_server::{LlmServer, Reply};
    use crate::support::store::demo_store;
    use org_agent::agent::equipment::Equipment;
    use org_agent::agent::turn::{run_turn, Conversation, TurnConfig, TurnEvent};
    use org_agent::gates::permissions::Permissions;
    use org_agent::llm::http::{Backend, ChatClient};
    use org_agent::skills::{parse_skill, Source};
    use org_agent::store::Config;
    use std::sync::Arc;

    let llm = LlmServer::start().await;
    let mut eq = Equipment::new(
        ChatClient::new(Backend::new(llm.base_url(), "test")).unwrap(),
        Arc::new(demo_store(Config::default(), &["tasks.org"])),
    );
    // The user allows every tool of the server: the skill's table must still deny echo.
    let rules = org_agent::sexp::read("((allow mcp \"test__*\"))").unwrap();
    eq.set_permissions(Arc::new(Permissions::from_sexp(rules.value()).unwrap()));
    let skill = parse_skill("/skills/adder.org", ADDER_SKILL, Source::User).unwrap();
    eq.attach_skills(vec![skill.clone()].into()).unwrap();
    eq.use_skill_from_start(&skill);
    let clients = stdio_servers(20, false);
    let (offered, left_out) = clients.offered().await;
    assert!(left_out.is_empty(), "{left_out:?}");
    let notices = eq.offer_mcp(offered);
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].contains("adder__odd") && notices[0].contains("takes no argument C"));
    assert!(notices[1].contains("adder__gone") && notices[1].contains("no MCP server offers"));

    llm.push(Reply::chat_sse(
        "",
        &[
            ("test__echo", json!({"text": "hi"})),
            ("adder__plus-forty", json!({"a": 1, "b": 1})),
            ("adder__plus-forty", json!({"b": "two"})),
            ("adder__plus-forty", json!({})),
        ],
    ));
    llm.push(Reply::chat_sse("Forty-two.", &[]));
    let mut ran = Vec::new();
    let mut conversation = Conversation::default();
    let result = run_turn(
        &eq,
        &mut conversation,
        "Add forty to two.",
        &TurnConfig::default(),
        &CancelToken::new(),
        |e| {
            if let TurnEvent::Proposed { call, decision, .. } = e {
                ran.push((call.name, decision));
            }
        },
    )
    .await;
    assert_eq!(result.expect("the turn ends"), "Forty-two.");

    let requests = llm.requests();
    let first = requests[0].json();
    let alias = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "adder__plus-forty")
        .unwrap_or_else(|| panic!("the alias is offered: {first}"));
    let offered = first["tools"].to_string();
    assert!(!offered.contains("adder__odd") && !offered.contains("adder__gone"));
    let params = &alias["function"]["parameters"];
    // `a` is fixed: not offered, and refused if given; `b` has a default: optional.
    assert!(params["properties"].get("a").is_none(), "{params}");
    assert!(params["properties"].get("b").is_some(), "{params}");
    assert!(!params["required"]
        .as_array()
        .is_some_and(|r| r.iter().any(|n| n == "b")));
    assert!(alias["function"]["description"]
        .as_str()
        .unwrap()
        .contains("test__add with a=40"));

    let results = tool_results(&requests[1].json());
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].contains("no echoes while adding"),
        "the skill's row denied echo, whatever the user allows: {}",
        results[0]
    );
    assert!(
        results[1].contains("a is not an argument of this tool"),
        "a fixed argument is refused: {}",
        results[1]
    );
    assert!(results[2].contains("must be a number"), "{}", results[2]);
    assert!(
        results[3].contains("42"),
        "40 + the default 2: {}",
        results[3]
    );
    // Only the last call reached the server, and as its own tool.
    assert_eq!(clients.statuses()[0].calls, 1);
    assert!(
        ran.contains(&("adder__plus-forty".to_string(), "allow")),
        "{ran:?}"
    );
}
