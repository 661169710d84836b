//! End to end against a REAL model server (llama.cpp's server with small models, from PyPI;
//! see scripts/local-llm): a streamed answer, and a real tool call that is gated, runs
//! against the store and whose result goes back to the model; the Anthropic provider
//! against the server's own /v1/messages (a streamed answer, a real tool_use); a cascade
//! whose first backend is a dead port. Temperature 0, generous timeouts, assertions on
//! structure, never on wording.

use org_agent::agent::equipment::Equipment;
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig, TurnError, TurnEvent};
use org_agent::llm::completion::Delta;
use org_agent::llm::error::LlmError;
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::store::Config;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::support::local_llm::start;
use crate::support::refused_url;
use crate::support::store::demo_store;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const DEMO_NOTES: [&str; 3] = ["projects.org", "tasks.org", "journal.org"];

/// `backend` with timeouts for a real model on a shared machine.
fn patient(mut backend: Backend) -> Backend {
    // Shared 2-core machines: a request that takes 2 s idle can take 100 s under load.
    backend.endpoint.timeouts.first_byte = Duration::from_secs(240);
    backend.endpoint.timeouts.idle = Duration::from_secs(120);
    backend.endpoint.timeouts.total = Duration::from_secs(600);
    backend
}

fn equipment(base_url: String) -> Equipment {
    let backend = patient(Backend::new(base_url, "local"));
    let store = demo_store(Config::default(), &DEMO_NOTES);
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
    let eq = equipment(server.base_url());
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
    let eq = equipment(server.base_url());
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

/// What a newcomer gets with no backend configured, with the chat's settings for the local
/// model: no tools (llama.cpp's tool grammar made its answers 100 times slower, and its
/// template refused prose while tools were offered), an answer bounded to 384 tokens, the
/// notes fitted to the server's 4096-token window with today's date and what is due. Before,
/// it looped on tool calls until the depth limit, minutes per answer; now one request
/// answers in prose from the context.
#[test]
fn the_zero_config_local_model_answers_from_the_context_in_one_request() {
    let server = start("qwen");
    let mut backend = patient(Backend::new(server.base_url(), "local"));
    backend.max_tokens = Some(384);
    let store = demo_store(Config::default(), &DEMO_NOTES);
    let eq = Equipment::new(ChatClient::new(backend).unwrap(), Arc::new(store));
    let cfg = TurnConfig {
        temperature: Some(0.0),
        tool_rounds: Some(0),
        context_budget: 1024,
        today: Some("2026-11-23 Mon".into()),
        due_before: Some("2026-12-01".into()),
        ..TurnConfig::default()
    };
    let mut events = Vec::new();
    let answer = runtime()
        .block_on(run_turn(
            &eq,
            &mut Conversation::default(),
            "What is waiting?",
            &cfg,
            &CancelToken::new(),
            |e| events.push(e),
        ))
        .unwrap_or_else(|e| panic!("the turn failed: {e}; events {events:?}"));
    let requests: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::Request {
                took,
                completion_tokens,
                ..
            } => Some((*took, *completion_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(requests.len(), 1, "{events:?}");
    assert!(
        requests[0].1 <= 384,
        "the answer was not bounded: {requests:?}"
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, TurnEvent::Proposed { .. })));
    let answer = answer.trim();
    assert!(!answer.is_empty());
    assert!(
        !answer.starts_with('(') && !answer.starts_with('{'),
        "not prose: {answer}"
    );
}

#[test]
fn real_server_speaks_anthropic_messages_and_serves_a_cascade() {
    use org_agent::llm::cascade::{Cascade, CascadeEvent, Health, Policy};
    use org_agent::llm::{ChatRequest, Message, Wire};
    let server = start("qwen");
    let base = server.base_url();
    let anthropic = ChatClient::new(patient(Backend::with_wire(
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
        cache_prefix: None,
        images: Vec::new(),
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
    let mut dead = Backend::new(refused_url(), "none");
    dead.endpoint.name = "dead".into();
    let mut real = patient(Backend::new(base, "local"));
    real.endpoint.name = "real".into();
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

/// Several suites start servers at once, and on a fresh machine each is the first to install:
/// two installs into the same empty directory must both succeed and leave one working install.
/// Without the lock both assembled the Qwen model into the same temporary file and both
/// failed its checksum.
#[test]
fn concurrent_installs_into_an_empty_directory_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let install = || {
        std::process::Command::new(root().join("scripts/local-llm"))
            .args(["install", "qwen"])
            .env("ORG_AGENT_LOCAL_LLM", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("scripts/local-llm runs")
    };
    let (first, second) = (install(), install());
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let model = std::process::Command::new(root().join("scripts/local-llm"))
        .args(["model", "qwen"])
        .env("ORG_AGENT_LOCAL_LLM", dir.path())
        .output()
        .unwrap();
    let path = String::from_utf8(model.stdout).unwrap();
    let len = std::fs::metadata(path.trim()).map(|m| m.len()).unwrap_or(0);
    assert!(len > 400_000_000, "no model file at {path}");
}

/// With a handful of skills active, the real model loads the one that fits with use_skill:
/// it sees only their names and descriptions, and asks for the matching one by name.
#[test]
fn real_model_loads_the_matching_skill_with_use_skill() {
    use org_agent::skills::disclosure::{catalog, use_skill_tools, USE_SKILL};
    use org_agent::skills::{parse_skill, Skill, Source};
    let server = start("qwen");
    let mut eq = equipment(server.base_url());
    let skill = |name: &str, description: &str| -> Skill {
        let text = format!(
            "#+SKILL_NAME: {name}\n#+DESCRIPTION: {description}\n* Prompt\nFollow the {name} steps.\n"
        );
        parse_skill(&format!("/skills/{name}.skill.org"), &text, Source::User).unwrap()
    };
    let skills: Arc<[Skill]> = Arc::from(vec![
        skill(
            "inbox-triage",
            "Use to sort the items of the inbox into projects.",
        ),
        skill(
            "weekly-review",
            "Use for the weekly review: stuck projects, waiting items, the week ahead.",
        ),
        skill(
            "daily-briefing",
            "Use to tell the user what is scheduled today.",
        ),
        skill("link-gardener", "Use to find broken links between notes."),
    ]);
    eq.prompts.extend(catalog(&skills, &eq.notes));
    eq.tools.push(Arc::new(use_skill_tools(skills.clone())));
    let cfg = TurnConfig {
        temperature: Some(0.0),
        max_depth: 2,
        ..TurnConfig::default()
    };
    let uses = |events: &[TurnEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::Proposed { call, .. } if call.name == USE_SKILL => Some(
                    call.arguments["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
                _ => None,
            })
            .collect()
    };
    // llama.cpp sometimes fails to parse the small model's tool-call output under load
    // (HTTP 500 "does not match the expected … format") before any call: ask once more.
    let mut attempt = 0;
    let (result, events) = loop {
        attempt += 1;
        let mut events = Vec::new();
        let result = runtime().block_on(run_turn(
            &eq,
            &mut Conversation::default(),
            "Let's do my weekly review. Load the skill for it with use_skill first.",
            &cfg,
            &CancelToken::new(),
            |e| events.push(e),
        ));
        if !uses(&events).is_empty() || attempt == 2 {
            break (result, events);
        }
    };
    let loads = uses(&events);
    assert_eq!(
        loads.first().map(String::as_str),
        Some("weekly-review"),
        "use_skill calls {loads:?}; result {result:?}; events {events:?}"
    );
    // The skill's prompt went back to the model as the tool's result.
    assert!(
        events.iter().any(
            |e| matches!(e, TurnEvent::ToolResult { name, ok: true, content, .. }
            if name == USE_SKILL && content.contains("Follow the weekly-review steps"))
        ),
        "{events:?}"
    );
}
