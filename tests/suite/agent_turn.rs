//! The turn loop over real HTTP against the scripted test server: tool calls gated and run
//! against the store with their results sent back, refusals fed back, the depth limit, LLM
//! errors fed back at most twice, cancellation.

use crate::support::llm_server::{LlmServer, Reply};
use crate::support::store::{demo_store, id_of};
use org_agent::action::{Action, EmacsAction};
use org_agent::agent::equipment::Equipment;
use org_agent::agent::operator::{Approval, BoxFuture, Operator};
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig, TurnError, TurnEvent};
use org_agent::gates::Pipeline;
use org_agent::llm::completion::ToolCall;
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::notes::{NOT_A_NOTE_FILE, NO_SUCH_NODE};
use org_agent::sexp::Sexp;
use org_agent::skills::{parse_skill, Skill, Source};
use org_agent::store::{Config, Store};
use org_agent::tools::emacs::ElispTool;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// A streamed answer in the OpenAI format, written in pseudo-random chunks.
fn sse(text: &str, calls: &[(&str, serde_json::Value)]) -> Reply {
    Reply::chat_sse(text, calls).split(7)
}

/// The demo projects and tasks the turn tests' equipment holds (ids are the same in every
/// store of the same files, private nodes' too).
fn turn_notes() -> Store {
    demo_store(Config::default(), &["projects.org", "tasks.org"])
}

fn equipment(server: &LlmServer) -> Equipment {
    let store = turn_notes();
    Equipment::new(
        ChatClient::new(Backend::new(server.base_url(), "test")).unwrap(),
        Arc::new(store),
    )
}

/// One turn of `conv` for `text` under `cfg`, never cancelled: its result and every event.
async fn turn(
    eq: &Equipment,
    conv: &mut Conversation,
    text: &str,
    cfg: &TurnConfig,
) -> (Result<String, TurnError>, Vec<TurnEvent>) {
    let mut events = Vec::new();
    let result = run_turn(eq, conv, text, cfg, &CancelToken::new(), |e| events.push(e)).await;
    (result, events)
}

/// The answer to `text` in a new conversation under `cfg`: the turn must succeed.
async fn answer(eq: &Equipment, text: &str, cfg: &TurnConfig) -> String {
    let (result, _) = turn(eq, &mut Conversation::default(), text, cfg).await;
    result.unwrap_or_else(|e| panic!("the turn for {text:?} failed: {e}"))
}

/// How many errors the turn fed back to the LLM.
fn errors_fed_back(events: &[TurnEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, TurnEvent::ErrorFedBack(_)))
        .count()
}

/// The headline of demo/notes/tasks.org most tests edit.
const PLUMBER: &str = "Call the plumber about the leak";

/// A user who answers from a script and an Emacs that records the actions it is given
/// and answers each with `(:status :ok :message "done")` or the scripted result.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Approval>>,
    asked: Mutex<Vec<Vec<String>>>,
    actuated: Mutex<Vec<String>>,
    results: Mutex<VecDeque<Result<&'static str, &'static str>>>,
    /// Never answer (to test cancellation while waiting).
    silent: bool,
}

impl Scripted {
    /// The user and Emacs of `eq` from now on; the user answers `answers` in turn, then no.
    fn operate(eq: &mut Equipment, answers: &[Approval]) -> Arc<Scripted> {
        let operator = Arc::new(Scripted {
            answers: Mutex::new(answers.iter().copied().collect()),
            ..Scripted::default()
        });
        eq.operator = operator.clone();
        operator
    }

    /// Emacs answers the next action with `result` instead of the default.
    fn next_result(&self, result: &'static str) {
        self.results.lock().unwrap().push_back(Ok(result));
    }

    /// The reasons of every question the user was asked, a list per question.
    fn asked(&self) -> Vec<Vec<String>> {
        self.asked.lock().unwrap().clone()
    }

    /// Every action Emacs was given, printed.
    fn actuated(&self) -> Vec<String> {
        self.actuated.lock().unwrap().clone()
    }
}

impl Operator for Scripted {
    fn ask(&self, _: &ToolCall, _: &Action, reasons: &[String]) -> BoxFuture<Approval> {
        self.asked.lock().unwrap().push(reasons.to_vec());
        if self.silent {
            return Box::pin(std::future::pending());
        }
        let a = self
            .answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Approval::Deny);
        Box::pin(async move { a })
    }

    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        self.actuated
            .lock()
            .unwrap()
            .push(org_agent::sexp::print(action.to_sexp().value()));
        let r = self
            .results
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Ok("(:status :ok :message \"done\")"));
        Box::pin(async move {
            match r {
                Ok(text) => Ok(org_agent::sexp::read(text).unwrap()),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}

/// The content of the last message of a recorded request body.
fn last_message(body: &serde_json::Value) -> String {
    let messages = body["messages"].as_array().expect("messages");
    let last = messages.last().expect("a message");
    last["content"].as_str().expect("text content").to_string()
}

/// The system prompt of a recorded request body.
fn system_prompt(body: &serde_json::Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .expect("a system prompt")
        .to_string()
}

/// The `role: tool` messages of a recorded request body, each out of the data block it
/// stands in (tests/suite/spotlight.rs checks the blocks).
fn tool_messages(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| unblock(m["content"].as_str().unwrap_or_default()))
        .collect()
}

/// The text inside a data block `<<data-… tool="…">>` … `<</data-…>>`.
pub(crate) fn unblock(block: &str) -> String {
    let inner = block
        .strip_prefix("<<data-")
        .and_then(|b| b.split_once(">>\n"))
        .and_then(|(_, rest)| rest.strip_suffix(">>\n"))
        .and_then(|rest| rest.rsplit_once("\n<</data-"))
        .map(|(inner, _)| inner);
    match inner {
        Some(inner) => inner.to_owned(),
        None => panic!("not a data block: {block}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_call_runs_and_its_result_reaches_the_llm() {
    let server = LlmServer::start().await;
    server.push(sse(
        "Let me look. ",
        &[("query_notes", json!({"todo": "WAITING"}))],
    ));
    server.push(sse("One thing waits: the domain name transfer.", &[]));
    let eq = equipment(&server);
    let mut conv = Conversation::default();
    let (answer, events) = turn(&eq, &mut conv, "What is waiting?", &TurnConfig::default()).await;
    let answer = answer.unwrap();
    assert_eq!(answer, "One thing waits: the domain name transfer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = requests[0].json();
    assert_eq!(first["messages"][1]["content"], "What is waiting?");
    assert_eq!(
        offered_tools(&first),
        ["list_files", "query_notes", "read_node", "search_notes"]
    );
    let results = tool_messages(&requests[1].json());
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("WAITING Domain name transfer"),
        "{results:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::Proposed {
            decision: "allow",
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_failing_calls_are_fed_back() {
    let server = LlmServer::start().await;
    server.push(sse(
        "",
        &[
            ("shell", json!({"cmd": "rm -rf ~"})),
            ("read_node", json!({"id": "no-such-id"})),
        ],
    ));
    server.push(sse("I cannot do that.", &[]));
    let eq = equipment(&server);
    let answer = answer(&eq, "Clean up.", &TurnConfig::default()).await;
    assert_eq!(answer, "I cannot do that.");
    let results = tool_messages(&server.requests()[1].json());
    assert!(
        results[0].starts_with("denied: there is no tool named \"shell\""),
        "{results:?}"
    );
    assert!(
        results[1].contains("tool-error") && results[1].contains(NO_SUCH_NODE),
        "{results:?}"
    );
}

/// A model that calls a tool at every step, in a turn of at most three steps starting
/// `start_depth` deep: the turn's error and how many requests reached the server.
async fn runaway(start_depth: u32) -> (TurnError, usize) {
    let server = LlmServer::start().await;
    for _ in 0..3 {
        server.push(sse("", &[("list_files", json!({}))]));
    }
    let eq = equipment(&server);
    let cfg = TurnConfig {
        max_depth: 3,
        start_depth,
        ..TurnConfig::default()
    };
    let err = turn(&eq, &mut Conversation::default(), "Loop.", &cfg)
        .await
        .0
        .unwrap_err();
    (err, server.requests().len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_depth_limit_ends_a_runaway_turn() {
    let (err, requests) = runaway(0).await;
    assert!(matches!(err, TurnError::DepthLimit(3)), "{err}");
    assert!(err.to_string().contains("depth limit"));
    assert_eq!(requests, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stimulus_deep_in_a_chain_has_only_the_steps_left() {
    // Two steps deep already: one step is left of three.
    let (err, requests) = runaway(2).await;
    assert!(matches!(err, TurnError::DepthLimit(3)), "{err}");
    assert_eq!(requests, 1);
    // At the limit already: nothing is asked.
    let (err, requests) = runaway(3).await;
    assert!(matches!(err, TurnError::DepthLimit(3)), "{err}");
    assert_eq!(requests, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_errors_are_fed_back_twice_then_reported() {
    let server = LlmServer::start().await;
    for _ in 0..3 {
        server.push(Reply::error(
            500,
            "The model produced output that does not match the expected format",
            "server_error",
        ));
    }
    let eq = equipment(&server);
    let (err, events) = turn(
        &eq,
        &mut Conversation::default(),
        "Hi",
        &TurnConfig::default(),
    )
    .await;
    let err = err.unwrap_err();
    assert!(
        err.to_string()
            .contains("does not match the expected format"),
        "{err}"
    );
    assert_eq!(errors_fed_back(&events), 2);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The error reached the LLM in the next request.
    let last = requests[2].json();
    let fed = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains(":loop-error"))
        })
        .count();
    assert_eq!(fed, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_turn() {
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = run_turn(
        &eq,
        &mut Conversation::default(),
        "Hi",
        &TurnConfig::default(),
        &cancel,
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TurnError::Cancelled));
    assert!(server.requests().is_empty());
}

struct AskForSearch;

impl org_agent::gates::Gate for AskForSearch {
    fn name(&self) -> &str {
        "ask-for-search"
    }
    fn check(
        &self,
        action: &org_agent::action::Action,
        ctx: &org_agent::gates::Context,
    ) -> Result<org_agent::gates::Decision, String> {
        let kind = action.kind();
        Ok(
            if kind == "tool:search_notes" && !ctx.approved.contains(&kind) {
                org_agent::gates::Decision::Ask("searching needs a yes".into())
            } else {
                org_agent::gates::Decision::Allow
            },
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_the_user_and_approving_for_the_conversation() {
    let server = LlmServer::start().await;
    server.push(sse("", &[("search_notes", json!({"text": "kettle"}))]));
    server.push(sse("", &[("search_notes", json!({"text": "plumber"}))]));
    server.push(sse("Found both.", &[]));
    let mut eq = equipment(&server);
    eq.gates = Pipeline::new(vec![Box::new(AskForSearch)]);
    let mut conv = Conversation::default();
    let operator = Scripted::operate(&mut eq, &[Approval::ForConversation]);
    let (answer, _) = turn(&eq, &mut conv, "Find things.", &TurnConfig::default()).await;
    assert_eq!(answer.unwrap(), "Found both.");
    // Asked once; the second search ran on the approval for the conversation.
    assert_eq!(
        operator.asked(),
        [vec!["searching needs a yes".to_string()]]
    );
    assert!(conv.context.approved.contains("tool:search_notes"));
    let requests = server.requests();
    assert!(tool_messages(&requests[1].json())[0].contains("Buy a new kettle"));
    assert!(tool_messages(&requests[2].json())[1].contains("Call the plumber"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_tool_calling_can_act_with_a_plist() {
    let server = LlmServer::start().await;
    server.push(sse(
        "```lisp\n(:type :request :target :tool :name \"query_notes\" :args (:todo \"WAITING\"))\n```",
        &[],
    ));
    // A plist that does not read is fed back, not taken as the answer.
    server.push(sse(
        "(:type :request :target :tool :name \"read_node\" :args (:id \"x\"",
        &[],
    ));
    server.push(sse("The domain name transfer is waiting.", &[]));
    let eq = equipment(&server);
    let (answer, events) = turn(
        &eq,
        &mut Conversation::default(),
        "What is waiting?",
        &TurnConfig::default(),
    )
    .await;
    assert_eq!(answer.unwrap(), "The domain name transfer is waiting.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The result went back as a tool-result stimulus plist, read by the same reader.
    let second = requests[1].json();
    assert_eq!(
        second["messages"].as_array().unwrap().last().unwrap()["role"],
        "user"
    );
    let text = last_message(&second);
    let stimulus =
        org_agent::action::Stimulus::from_sexp(org_agent::sexp::read(&text).unwrap().value())
            .unwrap();
    // The result of the first step's action: one deep in the turn's chain.
    assert_eq!(stimulus.depth, 1);
    match stimulus.sensor {
        org_agent::action::Sensor::ToolResult { call, ok, content } => {
            assert_eq!(call, "sexp-1");
            assert!(ok);
            assert!(
                content.contains("WAITING Domain name transfer"),
                "{content}"
            );
        }
        other => panic!("not a tool result: {other:?}"),
    }
    let fed = last_message(&requests[2].json());
    assert!(
        fed.contains(":loop-error") && fed.contains("does not read"),
        "{fed}"
    );
    assert!(events.iter().any(|e| matches!(e, TurnEvent::Proposed { call, decision: "allow", .. } if call.name == "query_notes")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plist_edits_of_org_files_pass_the_gates_too() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    eq.edit_tools = true;
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse(
        &format!(
            "(:type :request :target :emacs :action :set-todo :id \"{plumber}\" :state \"DONE\")"
        ),
        &[],
    ));
    server.push(sse("I may not change it without you.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Deny]);
    let answer = answer(&eq, "Mark x done.", &TurnConfig::default()).await;
    assert_eq!(answer, "I may not change it without you.");
    assert_eq!(operator.asked().len(), 1, "an Org edit asks the user");
    assert!(operator.actuated().is_empty());
    let last = last_message(&server.requests()[1].json());
    assert!(
        last.contains("denied: the user denied it (set-todo edits an Org file)"),
        "{last}"
    );
}

/// The tool names offered in a recorded request.
fn offered_tools(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_tool_asks_runs_in_emacs_and_its_result_reaches_the_llm() {
    let server = LlmServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse(
        "I will mark it done. ",
        &[("set_todo", json!({"id": plumber, "state": "DONE"}))],
    ));
    server.push(sse("Done.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once]);
    operator.next_result("(:status :ok :message \"set-todo done\" :todo \"DONE\")");
    eq.edit_tools = true;
    eq.audit = Some(org_agent::gates::audit::AuditLog::new(
        dir.path().join("audit.org"),
    ));
    let (answer, events) = turn(
        &eq,
        &mut Conversation::default(),
        "The plumber came.",
        &TurnConfig::default(),
    )
    .await;
    let answer = answer.unwrap();
    assert_eq!(answer, "Done.");
    let requests = server.requests();
    let tools = offered_tools(&requests[0].json());
    for edit in ["set_todo", "add_headline", "replace_body", "schedule"] {
        assert!(
            tools.iter().any(|t| t == edit),
            "{edit} not offered: {tools:?}"
        );
    }
    assert_eq!(
        operator.asked(),
        [vec!["set-todo edits an Org file".to_string()]]
    );
    assert_eq!(
        operator.actuated(),
        [format!(
            "(:type :request :target :emacs :action :set-todo :id \"{plumber}\" :state \"DONE\")"
        )]
    );
    let results = tool_messages(&requests[1].json());
    assert_eq!(
        results,
        ["(:status :ok :message \"set-todo done\" :todo \"DONE\")"]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::Proposed {
            decision: "ask: approved",
            ..
        }
    )));
    let audit = std::fs::read_to_string(dir.path().join("audit.org")).unwrap();
    assert!(audit.contains(" ask set-todo\n"), "{audit}");
    assert!(audit.contains(" user approved once set-todo\n"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_actuator_error_and_bad_edit_arguments_reach_the_llm() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse("", &[("set_todo", json!({"state": "DONE"}))]));
    server.push(sse(
        "",
        &[("set_todo", json!({"id": plumber, "state": "MAYBE"}))],
    ));
    server.push(sse("It cannot be done.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once]);
    operator.next_result("(:status :error :message \"\\\"MAYBE\\\" is not a TODO keyword\")");
    eq.edit_tools = true;
    let answer = answer(&eq, "Mark it.", &TurnConfig::default()).await;
    assert_eq!(answer, "It cannot be done.");
    let requests = server.requests();
    let first = tool_messages(&requests[1].json());
    assert_eq!(
        first,
        ["(:tool-error \"set_todo: argument 'id' is required\")"]
    );
    // The bad call was not asked about; the second was, and Emacs said no.
    assert_eq!(operator.asked().len(), 1);
    let second = tool_messages(&requests[2].json());
    assert!(
        second[1].contains(":status :error") && second[1].contains("MAYBE"),
        "{second:?}"
    );
}

/// Two Elisp tools taking a city: `weather` runs unasked, `send_mail` confirms.
fn weather_and_mail() -> Vec<ElispTool> {
    let params = json!({"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]});
    vec![
        ElispTool {
            name: "weather".into(),
            description: "The weather in a city.".into(),
            parameters: params.clone(),
            confirm: false,
        },
        ElispTool {
            name: "send_mail".into(),
            description: "Send a mail.".into(),
            parameters: params,
            confirm: true,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elisp_tools_run_in_emacs_and_confirm_when_they_say_so() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    eq.elisp_tools = weather_and_mail();
    // A name taken by a built-in stays the built-in's.
    eq.elisp_tools.push(ElispTool {
        name: "list_files".into(),
        description: "Shadow.".into(),
        parameters: json!({"type": "object"}),
        confirm: false,
    });
    server.push(sse(
        "",
        &[
            ("weather", json!({"city": "Oslo"})),
            ("send_mail", json!({"city": "Oslo"})),
        ],
    ));
    server.push(sse("Rainy; mail not sent.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Deny]);
    operator.next_result("(:status :ok :message \"weather done\" :result \"rain\")");
    let answer = answer(&eq, "Weather?", &TurnConfig::default()).await;
    assert_eq!(answer, "Rainy; mail not sent.");
    let requests = server.requests();
    let tools = offered_tools(&requests[0].json());
    assert!(tools.contains(&"weather".to_string()) && tools.contains(&"send_mail".to_string()));
    assert_eq!(tools.iter().filter(|t| *t == "list_files").count(), 1);
    assert_eq!(
        operator.actuated(),
        ["(:type :request :target :emacs :action :call-tool :name \"weather\" :args (:city \"Oslo\"))"]
    );
    assert_eq!(operator.asked().len(), 1, "only send_mail asks");
    let results = tool_messages(&requests[1].json());
    assert!(results[0].contains("rain"), "{results:?}");
    assert!(results[1].contains("the user denied it"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_tool_plist_is_gated_as_the_tool_call_it_names() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    eq.elisp_tools = weather_and_mail();
    let plist = |tool: &str| {
        format!(
            "(:type :request :target :emacs :action :call-tool :name \"{tool}\" \
             :args (:city \"Oslo\"))"
        )
    };
    server.push(sse(&plist("weather"), &[]));
    server.push(sse(&plist("send_mail"), &[]));
    server.push(sse(&plist("launch"), &[]));
    server.push(sse("Rainy.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Deny]);
    operator.next_result("(:status :ok :message \"weather done\" :result \"rain\")");
    assert_eq!(
        answer(&eq, "Weather?", &TurnConfig::default()).await,
        "Rainy."
    );
    // The harmless tool runs unasked, the one that confirms asks, as tool calls do.
    assert_eq!(operator.actuated(), [plist("weather")]);
    let asked = operator.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let texts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).to_string())
        .collect();
    assert!(
        texts.iter().all(|t| !t.contains("edits an Org file")),
        "{texts:?}"
    );
    assert!(texts[1].contains("rain"), "{}", texts[1]);
    assert!(texts[2].contains("the user denied it"), "{}", texts[2]);
    assert!(texts[3].contains("there is no tool named"), "{}", texts[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_while_the_user_is_asked_ends_the_turn() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse(
        "",
        &[("set_todo", json!({"id": plumber, "state": "DONE"}))],
    ));
    eq.operator = Arc::new(Scripted {
        silent: true,
        ..Scripted::default()
    });
    eq.edit_tools = true;
    let cancel = CancelToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        later.cancel();
    });
    let result = run_turn(
        &eq,
        &mut Conversation::default(),
        "Mark it.",
        &TurnConfig::default(),
        &cancel,
        |_| {},
    )
    .await;
    assert!(matches!(result, Err(TurnError::Cancelled)), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_focus_node_and_active_projects_are_in_the_prompt() {
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse("Noted.", &[]));
    let cfg = TurnConfig {
        focus: Some(plumber.clone()),
        ..TurnConfig::default()
    };
    answer(&eq, "What about this one?", &cfg).await;
    let system = system_prompt(&server.requests()[0].json());
    assert!(system.contains("* The node the user is on"), "{system}");
    assert!(system.contains(&format!("Id: {plumber}")), "{system}");
    assert!(system.contains("Outline path: Errands"), "{system}");
    assert!(system.contains(":PHONE: 555-0142"), "{system}");
    assert!(system.contains("* Active projects (2)"), "{system}");
    assert!(
        system.contains("TODO Launch the field-notes website"),
        "{system}"
    );
    assert!(!system.contains("DONE Office move"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_repeated_word_for_word_is_answered_without_running_again() {
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    server.push(sse("", &[("query_notes", json!({"todo": "WAITING"}))]));
    server.push(sse("", &[("query_notes", json!({"todo": "WAITING"}))]));
    server.push(sse("", &[("query_notes", json!({"todo": "TODO"}))]));
    server.push(sse("Done looking.", &[]));
    let answer = answer(&eq, "What waits?", &TurnConfig::default()).await;
    assert_eq!(answer, "Done looking.");
    let results = tool_messages(&server.requests()[3].json());
    assert!(results[0].contains("Domain name transfer"), "{results:?}");
    assert!(
        results[1].contains("already called with these arguments"),
        "{results:?}"
    );
    assert!(results[2].contains("matching headlines"), "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_notes_never_reach_the_llm_and_cannot_be_edited() {
    // demo/notes/tasks.org has "* Private :private:" with "A note that never leaves this
    // machine" under it.
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let private = id_of(&turn_notes(), "Private");
    let child = id_of(&turn_notes(), "A note that never leaves this machine");
    server.push(sse(
        "Looking.",
        &[
            ("read_node", json!({"id": private})),
            ("search_notes", json!({"text": "never leaves"})),
            ("query_notes", json!({"tag": "private"})),
            ("set_todo", json!({"id": child, "state": "DONE"})),
            (
                "add_headline",
                json!({"parent": private, "title": "Leaked"}),
            ),
        ],
    ));
    server.push(sse("Nothing to see.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once, Approval::Once]);
    eq.edit_tools = true;
    let cfg = TurnConfig {
        // Even as the focus, the private node is not shown.
        focus: Some(child.clone()),
        ..TurnConfig::default()
    };
    answer(&eq, "What is private?", &cfg).await;
    assert!(operator.asked().is_empty(), "nothing is asked");
    assert!(operator.actuated().is_empty(), "nothing runs");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let body = String::from_utf8_lossy(&r.body).to_string();
        assert!(!body.contains("never leaves this machine"), "{body}");
    }
    let results = tool_messages(&requests[1].json());
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(
        results[1].starts_with("No headlines mention it"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("No matching headlines"),
        "{results:?}"
    );
    // The refusals say which rule refused, as for an unknown node, and name nothing private:
    // the model cannot learn from them that the node exists.
    for refused in [&results[0], &results[3], &results[4]] {
        assert!(refused.contains(NO_SUCH_NODE), "{results:?}");
    }
    assert_eq!(
        eq.notes.node("no-such-id").unwrap_err(),
        eq.notes.node(&private).unwrap_err(),
        "a private node is refused as an unknown one is"
    );
    for refused in [&results[0], &results[3], &results[4]] {
        assert!(
            !refused.contains(&private)
                && !refused.contains(&child)
                && !refused.contains("tasks.org"),
            "{refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_budget_is_refused_or_goes_to_the_cheaper_tier() {
    use org_agent::gates::budget::{Budget, Ledger, Limits};
    use org_agent::llm::cascade::Cascade;
    let (main, cheap) = (LlmServer::start().await, LlmServer::start().await);
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::at(dir.path().join("usage.json")));
    let mut eq = equipment(&main);
    // The first turn fits; the conversation's budget is then spent.
    eq.budget = Some(Budget {
        limits: Limits {
            conversation_tokens: Some(1_200),
            ..Limits::default()
        },
        ledger: ledger.clone(),
        fallback: None,
    });
    let mut conv = Conversation::default();
    main.push(sse("First answer.", &[]));
    let cfg = TurnConfig::default();
    run_turn(&eq, &mut conv, "Hi", &cfg, &CancelToken::new(), |_| {})
        .await
        .unwrap();
    assert!(conv.tokens_used > 500, "{}", conv.tokens_used);
    let spent = ledger.used(&org_agent::gates::budget::today());
    assert_eq!(spent.tokens, conv.tokens_used);
    let err = run_turn(&eq, &mut conv, "Again", &cfg, &CancelToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&err, TurnError::OverBudget(r) if r.contains(":conversation-tokens")),
        "{err}"
    );
    assert_eq!(main.requests().len(), 1, "nothing was sent");

    // With a cheaper tier, the request goes there instead, and says so.
    eq.budget = Some(Budget {
        limits: Limits {
            day_tokens: Some(spent.tokens + 100),
            ..Limits::default()
        },
        ledger: ledger.clone(),
        fallback: Some(Cascade::single(
            ChatClient::new(Backend::new(cheap.base_url(), "small")).unwrap(),
        )),
    });
    cheap.push(sse("Cheap answer.", &[]));
    let mut warned = Vec::new();
    let answer = run_turn(
        &eq,
        &mut Conversation::default(),
        "Once more",
        &cfg,
        &CancelToken::new(),
        |e| {
            if let TurnEvent::Warning(w) = e {
                warned.push(w)
            }
        },
    )
    .await
    .unwrap();
    assert_eq!(answer, "Cheap answer.");
    assert_eq!((main.requests().len(), cheap.requests().len()), (1, 1));
    assert!(
        warned
            .iter()
            .any(|w| w.contains(":day-tokens") && w.contains("cheaper tier")),
        "{warned:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consensus_tie_is_the_users_to_break() {
    use org_agent::llm::cascade::{Cascade, Policy};
    let (a, b) = (LlmServer::start().await, LlmServer::start().await);
    let mut eq = equipment(&a);
    let client = |s: &LlmServer, name: &str| {
        let mut backend = Backend::new(s.base_url(), "m");
        backend.endpoint.name = name.into();
        ChatClient::new(backend).unwrap()
    };
    eq.llm = Cascade::new(
        vec![client(&a, "a"), client(&b, "b")],
        Arc::default(),
        Policy::default(),
    );
    let operator = Scripted::operate(&mut eq, &[Approval::Deny]);
    a.push(sse("", &[("query_notes", json!({"tag": "work"}))]));
    b.push(sse("", &[("query_notes", json!({"tag": "home"}))]));
    a.push(sse("Fine.", &[]));
    b.push(sse("Fine.", &[]));
    let cfg = TurnConfig {
        consensus: 2,
        ..TurnConfig::default()
    };
    let (answer, events) = turn(&eq, &mut Conversation::default(), "What is tagged?", &cfg).await;
    let answer = answer.unwrap();
    assert_eq!(answer, "Fine.");
    // A read-only call the gates allow is asked about, because the backends disagreed.
    let asked = operator.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0][0].starts_with("the backends disagreed (a: query_notes("),
        "{asked:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::Consensus {
            agreed: 1,
            answered: 2,
            tie: true,
            ..
        }
    )));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_user_focus_the_node_a_tool_read_becomes_the_focus() {
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    server.push(sse("", &[("read_node", json!({"id": plumber}))]));
    server.push(sse("It is about a leak.", &[]));
    answer(&eq, "What is the plumber task?", &TurnConfig::default()).await;
    let system = |i: usize| system_prompt(&server.requests()[i].json());
    assert!(!system(0).contains("* The node"), "{}", system(0));
    let second = system(1);
    assert!(
        second.contains("* The node in focus (the last tool was about it)"),
        "{second}"
    );
    assert!(second.contains(&format!("Id: {plumber}")), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plist_actions_cannot_reach_private_nodes_or_edit_when_edits_are_off() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let private = id_of(&turn_notes(), "A note that never leaves this machine");
    let plumber = id_of(&turn_notes(), PLUMBER);
    // Edits are not offered: a plist edit is refused before anyone is asked.
    server.push(sse(
        &format!(
            "(:type :request :target :emacs :action :set-todo :id \"{plumber}\" :state \"DONE\")"
        ),
        &[],
    ));
    server.push(sse("Fine.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once, Approval::Once]);
    answer(&eq, "Go.", &TurnConfig::default()).await;
    // With edits on, a private node and a file outside the notes are refused too.
    eq.edit_tools = true;
    server.push(sse(
        &format!("(:type :request :target :emacs :action :visit-node :id \"{private}\")"),
        &[],
    ));
    server.push(sse(
        "(:type :request :target :emacs :action :add-headline :file \"~/../etc/x.org\" :title \"T\")",
        &[],
    ));
    server.push(sse("Fine.", &[]));
    answer(&eq, "Go.", &TurnConfig::default()).await;
    assert!(operator.asked().is_empty(), "nothing was asked");
    assert!(operator.actuated().is_empty(), "nothing ran");
    let texts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).to_string())
        .collect();
    assert!(
        texts[1].contains("editing the notes is not offered"),
        "{}",
        texts[1]
    );
    assert!(texts[3].contains(NO_SUCH_NODE), "{}", texts[3]);
    assert!(texts[4].contains(NOT_A_NOTE_FILE), "{}", texts[4]);
    assert!(texts
        .iter()
        .all(|t| !t.contains("never leaves this machine")));
}

/// A turn in which the model proposes the same `set_todo` `times` times, then answers
/// `answer`; the user answers the questions with `approvals`. Returns the answer, the events,
/// the operator (what was asked and run) and the tool results the LLM finally saw.
async fn the_same_edit(
    times: usize,
    answer: &str,
    approvals: &[Approval],
) -> (String, Vec<TurnEvent>, Arc<Scripted>, Vec<String>) {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let plumber = id_of(&turn_notes(), PLUMBER);
    let edit = ("set_todo", json!({"id": plumber, "state": "DONE"}));
    for _ in 0..times {
        server.push(sse("", std::slice::from_ref(&edit)));
    }
    server.push(sse(answer, &[]));
    let operator = Scripted::operate(&mut eq, approvals);
    eq.edit_tools = true;
    let (result, events) = turn(
        &eq,
        &mut Conversation::default(),
        "The plumber came.",
        &TurnConfig::default(),
    )
    .await;
    let results = tool_messages(&server.requests()[times].json());
    (result.unwrap(), events, operator, results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_repeated_word_for_word_runs_once_even_when_approved_for_the_conversation() {
    // Seen with a small local model: approved for the conversation, the same set_todo ran
    // eight more times (each advancing a repeating task again).
    let (answer, events, operator, results) =
        the_same_edit(3, "Marked.", &[Approval::ForConversation]).await;
    assert_eq!(answer, "Marked.");
    assert_eq!(operator.asked().len(), 1);
    assert_eq!(operator.actuated().len(), 1, "the edit ran again");
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].contains(":status :ok"), "{results:?}");
    for repeat in &results[1..] {
        assert!(
            repeat.contains("set_todo with these arguments was already made in this turn"),
            "{results:?}"
        );
    }
    let repeats = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                TurnEvent::Proposed {
                    decision: "repeated",
                    ..
                }
            )
        })
        .count();
    assert_eq!(repeats, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_edit_repeated_is_not_asked_again() {
    let (answer, _, operator, results) =
        the_same_edit(2, "Left as it is.", &[Approval::Deny, Approval::Once]).await;
    assert_eq!(answer, "Left as it is.");
    assert_eq!(operator.asked().len(), 1);
    assert!(operator.actuated().is_empty());
    assert!(
        results[1].contains("was already denied by the user"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_that_only_echoes_a_plist_is_never_the_answer() {
    // Seen with a small local model: it answered with the (:loop-error …) plist it had been
    // sent, and the chat showed that as the answer.
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    server.push(sse(
        "(:loop-error \"HTTP 500\") Your last reply could not be used; reply again.",
        &[],
    ));
    server.push(sse("(:status :ok :message \"done\")", &[]));
    server.push(sse("(:loop-error \"again\")", &[]));
    let (result, events) = turn(
        &eq,
        &mut Conversation::default(),
        "What waits?",
        &TurnConfig::default(),
    )
    .await;
    let err = result.unwrap_err();
    assert!(err.to_string().contains("not an action"), "{err}");
    assert_eq!(errors_fed_back(&events), 2);
    // A plist-only reply followed by prose still ends in the prose answer.
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    server.push(sse("(:status :ok)", &[]));
    server.push(sse("Nothing waits.", &[]));
    let answer = answer(&eq, "What waits?", &TurnConfig::default()).await;
    assert_eq!(answer, "Nothing waits.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_tool_rounds_the_model_is_asked_without_tools() {
    // A small local model calls tools until the depth limit, and llama.cpp's tool template
    // refuses its prose while tools are offered: after one round it must answer.
    let server = LlmServer::start().await;
    let eq = equipment(&server);
    server.push(sse("", &[("query_notes", json!({"todo": "WAITING"}))]));
    server.push(sse("The domain name transfer waits.", &[]));
    let cfg = TurnConfig {
        tool_rounds: Some(1),
        ..TurnConfig::default()
    };
    let answer = answer(&eq, "What waits?", &cfg).await;
    assert_eq!(answer, "The domain name transfer waits.");
    let requests = server.requests();
    assert!(!offered_tools(&requests[0].json()).is_empty());
    assert!(
        requests[1].json().get("tools").is_none(),
        "tools were offered again: {}",
        requests[1].json()
    );
    assert!(tool_messages(&requests[1].json())[0].contains("Domain name transfer"));
}

/// A user skill that brings an alias of query_notes with the TODO state fixed to WAITING, and
/// an Elisp tool; `extra` goes among its keywords.
fn waiting_skill(extra: &str) -> Skill {
    let text = format!(
        "#+SKILL_NAME: waiting\n#+DESCRIPTION: Use when the user asks what waits on others.\n\
         {extra}* Prompt\nList what waits.\n* Tools\n** stale\n:PROPERTIES:\n\
         :ALIAS: query_notes\n:TODO: WAITING\n:END:\nWhat waits on someone else.\n\
         ** nudge\n:PROPERTIES:\n:WHO: string whom to nudge\n:END:\nSend a reminder.\n\
         #+begin_src emacs-lisp\n(format \"nudged %s\" who)\n#+end_src\n"
    );
    parse_skill("/s/waiting.org", &text, Source::User).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_in_use_offers_its_tools_and_an_alias_runs_with_its_fixed_arguments() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let skill = waiting_skill("");
    eq.attach_skills(vec![skill.clone()].into()).unwrap();
    eq.use_skill_from_start(&skill);
    let operator = Scripted::operate(&mut eq, &[]);
    operator.next_result("(:status :ok :message \"call-tool done\" :result \"nudged Ann\")");
    server.push(sse(
        "",
        &[
            ("waiting__stale", json!({})),
            ("waiting__stale", json!({"todo": "TODO"})),
            ("waiting__nudge", json!({"who": 3})),
            ("waiting__nudge", json!({"who": "Ann"})),
        ],
    ));
    server.push(sse("The domain name transfer waits.", &[]));
    let answer = answer(&eq, "What waits?", &TurnConfig::default()).await;
    assert_eq!(answer, "The domain name transfer waits.");
    let requests = server.requests();
    let first = requests[0].json();
    let tools = offered_tools(&first);
    assert!(
        tools.contains(&"waiting__stale".to_string())
            && tools.contains(&"waiting__nudge".to_string()),
        "{tools:?}"
    );
    let stale = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "waiting__stale")
        .unwrap();
    let params = &stale["function"]["parameters"]["properties"];
    assert!(
        params.get("todo").is_none() && params.get("tag").is_some(),
        "{params}"
    );
    assert!(system_prompt(&first).contains("Its tools: waiting__stale, waiting__nudge"));
    let results = tool_messages(&requests[1].json());
    // The fixed state, not what the model would have liked.
    assert!(
        results[0].contains("WAITING Domain name transfer"),
        "{results:?}"
    );
    assert!(!results[0].contains("TODO "), "{results:?}");
    assert!(
        results[1].contains("unknown argument") && results[1].contains("todo"),
        "{results:?}"
    );
    // The Elisp tool's arguments are checked before Emacs sees the call.
    assert!(results[2].contains("must be a String"), "{results:?}");
    assert!(results[3].contains("nudged Ann"), "{results:?}");
    assert_eq!(
        operator.actuated(),
        [
            "(:type :request :target :emacs :action :call-tool :name \"waiting__nudge\" \
          :args (:who \"Ann\"))"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skills_tools_are_offered_from_the_step_after_use_skill() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    eq.attach_skills(vec![waiting_skill("")].into()).unwrap();
    server.push(sse(
        "",
        &[
            ("waiting__stale", json!({})),
            ("use_skill", json!({"name": "waiting"})),
        ],
    ));
    server.push(sse("", &[("waiting__stale", json!({}))]));
    server.push(sse("The domain name transfer waits.", &[]));
    server.push(sse("Still the transfer.", &[]));
    let mut conv = Conversation::default();
    let (result, _) = turn(&eq, &mut conv, "What waits?", &TurnConfig::default()).await;
    assert_eq!(result.unwrap(), "The domain name transfer waits.");
    let requests = server.requests();
    let offered = |i: usize| offered_tools(&requests[i].json());
    assert!(
        !offered(0).iter().any(|t| t.starts_with("waiting__")),
        "{:?}",
        offered(0)
    );
    assert!(offered(0).contains(&"use_skill".to_string()));
    let first = tool_messages(&requests[1].json());
    assert!(
        first[0].starts_with("denied: there is no tool named \"waiting__stale\""),
        "not offered, not run: {first:?}"
    );
    assert!(first[1].contains("List what waits."), "{first:?}");
    assert!(
        offered(1).contains(&"waiting__stale".to_string()),
        "{:?}",
        offered(1)
    );
    let second = tool_messages(&requests[2].json());
    assert!(
        second[2].contains("WAITING Domain name transfer"),
        "{second:?}"
    );
    // The conversation keeps the skill in use: its next turn offers the tools at once.
    assert!(conv.context.skills_in_use.contains("waiting"));
    let (result, _) = turn(&eq, &mut conv, "And now?", &TurnConfig::default()).await;
    assert_eq!(result.unwrap(), "Still the transfer.");
    assert!(offered_tools(&server.requests()[3].json()).contains(&"waiting__stale".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_in_use_keeps_the_model_under_its_allowed_tools() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let skill = waiting_skill("#+ALLOWED_TOOLS: query_notes\n");
    eq.attach_skills(vec![skill.clone()].into()).unwrap();
    eq.use_skill_from_start(&skill);
    server.push(sse(
        "",
        &[
            ("list_files", json!({})),
            ("query_notes", json!({"todo": "WAITING"})),
            ("waiting__stale", json!({})),
        ],
    ));
    server.push(sse("Done.", &[]));
    assert_eq!(
        answer(&eq, "What waits?", &TurnConfig::default()).await,
        "Done."
    );
    let results = tool_messages(&server.requests()[1].json());
    assert!(
        results[0].contains("the skill waiting in use allows only query_notes"),
        "{results:?}"
    );
    assert!(results[1].contains("Domain name transfer"), "{results:?}");
    assert!(
        results[2].contains("Domain name transfer"),
        "its own tools: {results:?}"
    );
}

/// A skill draft as the model would write one (`create_skill`), named `name`: one deny rule
/// and the tests that hold it to what it says.
fn skill_draft(name: &str) -> String {
    format!(
        "#+SKILL_NAME: {name}
#+DESCRIPTION: Keeps finished projects finished. Use when editing projects.
* Prompt
Do not reopen a project marked DONE.
* Gate
| action   | condition              | decision | reason                      |
|----------+------------------------+----------+-----------------------------|
| set_todo | todo=DONE & state=TODO | deny     | a closed project stays done |
* Tests
** a done project cannot be reopened :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Launch
:ARGS: state=TODO
:EXPECT: deny
:END:
#+begin_example
,* DONE Launch
#+end_example
"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_draft_that_fails_its_tests_goes_back_to_the_model_unasked() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let good = skill_draft("closed-projects");
    // The rule no longer does what its test says.
    let broken = good.replace("state=TODO |", "state=NEXT |");
    server.push(sse(
        "",
        &[(
            "create_skill",
            json!({"name": "closed-projects", "text": broken}),
        )],
    ));
    server.push(sse(
        "",
        &[(
            "create_skill",
            json!({"name": "closed-projects", "text": good}),
        )],
    ));
    server.push(sse("Drafted.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once]);
    operator.next_result("(:status :ok :message \"create-skill done\")");
    eq.edit_tools = true;
    let (answer, events) = turn(
        &eq,
        &mut Conversation::default(),
        "Keep closed projects closed.",
        &TurnConfig::default(),
    )
    .await;
    assert_eq!(answer.unwrap(), "Drafted.");
    let requests = server.requests();
    assert!(offered_tools(&requests[0].json()).contains(&"create_skill".to_string()));
    // The broken draft came back to the model with its failure, and nobody was asked.
    let first = tool_messages(&requests[1].json());
    assert!(
        first[0].contains("the skill draft was not shown to the user")
            && first[0].contains(
                "drafts/closed-projects/SKILL.org:10: gate test 'a done project cannot be \
                 reopened': expected deny, the rules decide allow"
            ),
        "{first:?}"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        TurnEvent::Proposed {
            decision: "invalid",
            call,
            ..
        } if call.name == "create_skill"
    )));
    // The fixed one was asked about, with its tests' results, and then written.
    assert_eq!(
        operator.asked(),
        [vec![
            "create-skill edits an Org file".to_string(),
            "create-skill adds the skill closed-projects: each new skill is approved on its own"
                .to_string(),
            "its own tests pass: 1 :gate: (\"a done project cannot be reopened\")".to_string(),
        ]]
    );
    let written = operator.actuated();
    assert_eq!(written.len(), 1);
    assert!(
        written[0].starts_with(
            "(:type :request :target :emacs :action :create-skill :name \"closed-projects\" \
             :text \"#+SKILL_NAME: closed-projects\\n"
        ),
        "{written:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_skill_draft_asks_even_after_one_was_approved_for_the_conversation() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    for name in ["closed-projects", "closed-areas"] {
        server.push(sse(
            "",
            &[(
                "create_skill",
                json!({"name": name, "text": skill_draft(name)}),
            )],
        ));
    }
    server.push(sse("One drafted.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::ForConversation, Approval::Deny]);
    eq.edit_tools = true;
    let mut conv = Conversation::default();
    let (answer, _) = turn(&eq, &mut conv, "Draft two skills.", &TurnConfig::default()).await;
    assert_eq!(answer.unwrap(), "One drafted.");
    let asked = operator.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    // The second question no longer says it edits (that kind was approved), but it asks.
    assert_eq!(
        asked[1],
        [
            "create-skill adds the skill closed-areas: each new skill is approved on its own",
            "its own tests pass: 1 :gate: (\"a done project cannot be reopened\")",
        ]
    );
    assert_eq!(operator.actuated().len(), 1);
    let results = tool_messages(&server.requests()[2].json());
    assert!(
        results[1].contains("denied: the user denied it"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_draft_as_a_plist_is_checked_too() {
    let server = LlmServer::start().await;
    let mut eq = equipment(&server);
    let broken = skill_draft("closed-projects").replace(":gate:", ":trigger:");
    let plist = format!(
        "(:type :request :target :emacs :action :create-skill :name \"closed-projects\" :text {})",
        org_agent::sexp::print(&org_agent::sexp::Value::string(broken.as_str()))
    );
    server.push(sse(&plist, &[]));
    server.push(sse("It does not load.", &[]));
    let operator = Scripted::operate(&mut eq, &[Approval::Once]);
    eq.edit_tools = true;
    let answer = answer(&eq, "Draft it.", &TurnConfig::default()).await;
    assert_eq!(answer, "It does not load.");
    assert!(operator.asked().is_empty());
    assert!(operator.actuated().is_empty());
    let fed_back = last_message(&server.requests()[1].json());
    assert!(
        fed_back.contains("needs at least one :gate: test"),
        "{fed_back}"
    );
}

/// A streamed OpenAI answer `text` whose last chunk counts `prompt` tokens (`cached` of them
/// from the provider's cache) and `completion` tokens.
fn sse_with_usage(text: &str, prompt: u64, completion: u64, cached: u64) -> Reply {
    let chunk = |v: serde_json::Value| format!("data: {v}\n\n");
    let body = [
        chunk(
            json!({"id": "c", "object": "chat.completion.chunk", "model": "test",
                     "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                  "finish_reason": null}]}),
        ),
        chunk(
            json!({"id": "c", "object": "chat.completion.chunk", "model": "test",
                     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ),
        chunk(
            json!({"id": "c", "object": "chat.completion.chunk", "model": "test", "choices": [],
                     "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion,
                               "prompt_tokens_details": {"cached_tokens": cached}}}),
        ),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    Reply::ok("text/event-stream", body.into_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_cost_is_reported_and_the_budget_refuses_by_the_same_figures() {
    use org_agent::gates::budget::{today, Budget, Ledger, Limits};
    use org_agent::llm::prices::{Price, Prices, Tokens};
    let server = LlmServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(Ledger::at(dir.path().join("usage.json")));
    let mut eq = equipment(&server);
    // The test server is on this machine (free); the user's table prices its model.
    eq.prices = Prices::new(vec![(
        "test".into(),
        Price {
            input: 2.0,
            output: 10.0,
            cached: Some(0.5),
        },
    )]);
    eq.budget = Some(Budget {
        limits: Limits {
            day_cost: Some(0.025),
            ..Limits::default()
        },
        ledger: ledger.clone(),
        fallback: None,
    });
    server.push(sse_with_usage("Priced.", 10_000, 1_000, 4_000));
    let mut conv = Conversation::default();
    let cfg = TurnConfig::default();
    let (answer, events) = turn(&eq, &mut conv, "Hi", &cfg).await;
    assert_eq!(answer.unwrap(), "Priced.");
    let spent = events
        .iter()
        .find_map(|e| match e {
            TurnEvent::Request {
                spent: Some(s),
                error: None,
                ..
            } => Some(*s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no priced request in {events:?}"));
    assert_eq!(
        spent.tokens,
        Tokens {
            prompt: 10_000,
            completion: 1_000,
            cached: 4_000
        }
    );
    assert!(!spent.estimated);
    // 6000 fresh at 2, 4000 cached at 0.5, 1000 out at 10, per million.
    let cost = spent.cost.unwrap();
    assert!((cost - 0.024).abs() < 1e-12, "{cost}");
    let day = ledger.used(&today());
    assert_eq!(day.cost, cost, "the budget counted what the chat shows");
    assert_eq!((day.tokens, day.unpriced_tokens), (11_000, 0));

    // The next request, estimated at the same price, would go over the day's 0.025.
    let (err, _) = turn(&eq, &mut conv, "Again", &cfg).await;
    let err = err.unwrap_err();
    assert!(
        matches!(&err, TurnError::OverBudget(r) if r.contains(":day-cost")),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "nothing more was sent");
}

/// The chat's answer as Org: the events of a turn whose model writes Markdown, in chunks
/// split anywhere, carry Org text; each step's text is complete before its tool call shows;
/// the final answer is the Org shown; the conversation keeps the model's Markdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_answers_reach_the_chat_as_org() {
    use org_agent::agent::answer::AnswerText;
    use org_agent::agent::options::AnswerFormat;
    use org_agent::llm::completion::Delta;
    use org_agent::llm::http::Message;
    let server = LlmServer::start().await;
    server.push(sse(
        "Let me **look**",
        &[("query_notes", json!({"todo": "WAITING"}))],
    ));
    let markdown = "## Waiting\n* the **domain name** transfer\n```sh\n# check\nwhois x.org\n```\nSee [it](id:abc)";
    server.push(sse(markdown, &[]));
    let eq = equipment(&server);
    let mut conv = Conversation::default();
    let (answer, events) = turn(&eq, &mut conv, "What is waiting?", &TurnConfig::default()).await;
    let mut shown = AnswerText::new(AnswerFormat::Org);
    let mut seen = String::new();
    for e in events.into_iter().flat_map(|e| shown.events(e)) {
        match e {
            TurnEvent::Delta(Delta::Text(t)) => seen.push_str(&t),
            TurnEvent::Proposed { .. } => seen.push_str("<tool>"),
            _ => {}
        }
    }
    seen.extend(shown.finish());
    let org = "**** Waiting\n- the *domain name* transfer\n#+begin_src sh\n# check\nwhois x.org\n#+end_src\nSee [[id:abc][it]]";
    assert_eq!(seen, format!("Let me *look*<tool>{org}"));
    assert_eq!(shown.answer(answer.unwrap()), org);
    let said: Vec<&str> = conv
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said.last(), Some(&markdown));
}
