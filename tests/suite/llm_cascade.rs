//! The cascade against real local servers: which backends are tried in which order (read from
//! each server's request log), retries on a short `retry-after`, cool-downs, a failure after
//! part of the answer streamed, errors that must not fail over, and tier routing.

use crate::support::llm_server::{End, LlmServer, Reply};
use crate::support::refused_url;
use org_agent::llm::cascade::{Cascade, CascadeEvent, Health, Policy, Routing, Tier};
use org_agent::llm::{Backend, CancelToken, ChatClient, ChatRequest, LlmError, Message};
use std::sync::Arc;
use std::time::Duration;

fn backend(name: &str, url: String) -> Backend {
    let mut b = Backend::new(url, "m");
    b.endpoint.name = name.to_owned();
    b.endpoint.timeouts.first_byte = Duration::from_secs(2);
    b.endpoint.timeouts.idle = Duration::from_millis(500);
    b
}

fn cascade(members: &[(&str, String)], health: &Arc<Health>, policy: Policy) -> Cascade {
    Cascade::new(
        members
            .iter()
            .map(|(name, url)| ChatClient::new(backend(name, url.clone())).unwrap())
            .collect(),
        health.clone(),
        policy,
    )
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::User("Hello?".into())],
        stream: true,
        ..ChatRequest::default()
    }
}

/// Runs the request; returns the answer's backend and text (or the error) and the events.
async fn ask(c: &Cascade) -> (Result<(String, String), LlmError>, Vec<CascadeEvent>) {
    let mut events = Vec::new();
    let result = c
        .chat(&request(), &CancelToken::new(), |e| events.push(e))
        .await
        .map(|a| (a.backend, a.completion.text));
    (result, events)
}

fn failovers(events: &[CascadeEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            CascadeEvent::Failover {
                backend, streamed, ..
            } => Some((backend.clone(), *streamed)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn fails_over_in_order_and_demotes_the_failed_backend() {
    let (a, b, c) = (
        LlmServer::start().await,
        LlmServer::start().await,
        LlmServer::start().await,
    );
    let health = Arc::new(Health::default());
    let policy = Policy {
        cooldown: Duration::from_millis(600),
        ..Policy::default()
    };
    let members = [
        ("a", a.base_url()),
        ("b", b.base_url()),
        ("c", c.base_url()),
    ];
    let cas = cascade(&members, &health, policy);

    a.push(Reply::error(503, "overloaded, try later", "server_error"));
    b.push(Reply::error(529, "Overloaded", "overloaded_error"));
    c.push(Reply::chat_sse("From c.", &[]));
    let (result, events) = ask(&cas).await;
    assert_eq!(result.unwrap(), ("c".into(), "From c.".into()));
    assert_eq!(
        failovers(&events),
        [("a".into(), false), ("b".into(), false)]
    );
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (1, 1, 1)
    );

    // While a and b cool down, c is asked first; they come after it, in their order.
    let order: Vec<&str> = cas
        .order()
        .iter()
        .map(|c| c.backend().endpoint.name.as_str())
        .collect();
    assert_eq!(order, ["c", "a", "b"]);
    c.push(Reply::chat_sse("c again.", &[]));
    let (result, _) = ask(&cas).await;
    assert_eq!(result.unwrap().0, "c");
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (1, 1, 2)
    );

    // After the cool-down a is first again.
    tokio::time::sleep(Duration::from_millis(700)).await;
    a.push(Reply::chat_sse("a is back.", &[]));
    let (result, _) = ask(&cas).await;
    assert_eq!(result.unwrap(), ("a".into(), "a is back.".into()));
    assert_eq!(a.requests().len(), 2);
}

#[tokio::test]
async fn a_dead_port_and_timeouts_fail_over() {
    let (stalled, good) = (LlmServer::start().await, LlmServer::start().await);
    let health = Arc::new(Health::default());
    let cas = cascade(
        &[
            ("dead", refused_url()),
            ("stalled", stalled.base_url()),
            ("good", good.base_url()),
        ],
        &health,
        Policy::default(),
    );
    // Headers and a little text, then nothing: the idle timeout ends it mid-answer.
    let partial = Reply::chat_sse("Half an answ", &[]);
    let cut = partial.body.len() / 2;
    stalled.push(partial.per_event().end(End::StallAt(cut)));
    good.push(Reply::chat_sse("Whole answer.", &[]));
    let (result, events) = ask(&cas).await;
    assert_eq!(result.unwrap(), ("good".into(), "Whole answer.".into()));
    let f = failovers(&events);
    assert_eq!(f[0], ("dead".into(), false));
    // The stalled backend had streamed part of its answer: the caller must drop it.
    assert_eq!(f[1], ("stalled".into(), true));
    let texts: Vec<&CascadeEvent> = events
        .iter()
        .filter(|e| matches!(e, CascadeEvent::Delta(_)))
        .collect();
    assert!(!texts.is_empty());
    assert!(health.is_demoted("dead") && health.is_demoted("stalled"));
    assert!(!health.is_demoted("good"));
}

#[tokio::test]
async fn a_cut_stream_and_garbage_fail_over_too() {
    let (cut, garbage, good) = (
        LlmServer::start().await,
        LlmServer::start().await,
        LlmServer::start().await,
    );
    let health = Arc::new(Health::default());
    let cas = cascade(
        &[
            ("cut", cut.base_url()),
            ("garbage", garbage.base_url()),
            ("good", good.base_url()),
        ],
        &health,
        Policy::default(),
    );
    let reply = Reply::chat_sse("This will be cut off somewhere", &[]);
    let at = reply.body.len() - 20;
    cut.push(reply.end(End::CutAt(at)));
    garbage.push(Reply::ok(
        "text/event-stream",
        b"data: {not json at all\n\n".to_vec(),
    ));
    good.push(Reply::chat_sse("Fine.", &[]));
    let (result, events) = ask(&cas).await;
    assert_eq!(result.unwrap().0, "good");
    assert_eq!(
        failovers(&events),
        [("cut".into(), true), ("garbage".into(), false)]
    );
}

#[tokio::test]
async fn a_short_retry_after_is_waited_for_a_long_one_is_not() {
    let (a, b) = (LlmServer::start().await, LlmServer::start().await);
    let health = Arc::new(Health::default());
    let policy = Policy {
        retry_cap: Duration::from_secs(2),
        ..Policy::default()
    };
    let cas = cascade(&[("a", a.base_url()), ("b", b.base_url())], &health, policy);

    a.push(Reply::error(429, "slow down", "rate_limit").header("retry-after-ms", "150"));
    a.push(Reply::chat_sse("a after waiting.", &[]));
    let started = std::time::Instant::now();
    let (result, events) = ask(&cas).await;
    assert_eq!(result.unwrap(), ("a".into(), "a after waiting.".into()));
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert!(matches!(
        &events[0],
        CascadeEvent::Retry { backend, after, .. }
            if backend == "a" && *after == Duration::from_millis(150)
    ));
    assert_eq!((a.requests().len(), b.requests().len()), (2, 0));
    assert!(!health.is_demoted("a"));

    // A long wait: b answers at once, a is not asked again.
    a.push(Reply::error(429, "quota", "rate_limit").header("retry-after", "30"));
    b.push(Reply::chat_sse("b answers.", &[]));
    let started = std::time::Instant::now();
    let (result, events) = ask(&cas).await;
    assert_eq!(result.unwrap().0, "b");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!events
        .iter()
        .any(|e| matches!(e, CascadeEvent::Retry { .. })));
    assert_eq!((a.requests().len(), b.requests().len()), (3, 1));

    // A second short wait in a row is not waited for again: the next backend is asked.
    tokio::time::sleep(Duration::from_millis(10)).await;
    health.restore("a");
    a.push(Reply::error(503, "busy", "server_error").header("retry-after", "0"));
    a.push(Reply::error(503, "still busy", "server_error").header("retry-after", "0"));
    b.push(Reply::chat_sse("b again.", &[]));
    let (result, _) = ask(&cas).await;
    assert_eq!(result.unwrap().0, "b");
    assert_eq!((a.requests().len(), b.requests().len()), (5, 2));
}

#[tokio::test]
async fn request_errors_do_not_fail_over_and_all_failures_are_listed() {
    let (a, b) = (LlmServer::start().await, LlmServer::start().await);
    let health = Arc::new(Health::default());
    let cas = cascade(
        &[("a", a.base_url()), ("b", b.base_url())],
        &health,
        Policy::default(),
    );
    // A bad request would be bad anywhere: reported as it is, b is never asked.
    a.push(Reply::error(
        400,
        "context too long",
        "invalid_request_error",
    ));
    let (result, _) = ask(&cas).await;
    match result {
        Err(LlmError::Http { status: 400, .. }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(b.requests().len(), 0);
    assert!(!health.is_demoted("a"));

    a.push(Reply::error(500, "boom", "server_error"));
    b.push(Reply::error(401, "bad key", "authentication_error"));
    let (result, _) = ask(&cas).await;
    match result {
        Err(LlmError::AllFailed(lines)) => {
            assert_eq!(lines.len(), 2);
            assert!(lines[0].starts_with("a: HTTP 500: boom"), "{lines:?}");
            assert!(lines[1].starts_with("b: HTTP 401: bad key"), "{lines:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_single_backend_reports_its_own_error() {
    let a = LlmServer::start().await;
    let cas = cascade(&[("a", a.base_url())], &Arc::default(), Policy::default());
    a.push(Reply::error(503, "down", "server_error"));
    let (result, events) = ask(&cas).await;
    assert!(
        matches!(result, Err(LlmError::Http { status: 503, .. })),
        "{result:?}"
    );
    assert_eq!(failovers(&events), [("a".into(), false)]);
}

#[tokio::test]
async fn cancelling_while_waiting_to_retry_ends_at_once() {
    let a = LlmServer::start().await;
    let cas = cascade(
        &[("a", a.base_url())],
        &Arc::default(),
        Policy {
            retry_cap: Duration::from_secs(60),
            ..Policy::default()
        },
    );
    a.push(Reply::error(429, "wait", "rate_limit").header("retry-after", "30"));
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let started = std::time::Instant::now();
    let result = cas.chat(&request(), &cancel, |_| {}).await;
    assert!(matches!(result, Err(LlmError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn tiers_route_to_named_backends_and_models() {
    let routing = Routing {
        backends: vec![
            backend("local", "http://127.0.0.1:1/v1".into()),
            backend("cloud", "http://127.0.0.1:2/v1".into()),
        ],
        pool: vec![backend("spare", "http://127.0.0.1:3/v1".into())],
        tiers: vec![
            (Tier::Reflex, vec![("local".into(), None)]),
            (
                Tier::Reasoning,
                vec![
                    ("cloud".into(), Some("big-model".into())),
                    ("local".into(), None),
                ],
            ),
        ],
    };
    let names = |t| -> Vec<(String, String)> {
        routing
            .backends_for(t)
            .unwrap()
            .into_iter()
            .map(|b| (b.endpoint.name, b.endpoint.model))
            .collect()
    };
    assert_eq!(names(Tier::Reflex), [("local".into(), "m".into())]);
    assert_eq!(
        names(Tier::Reasoning),
        [
            ("cloud/big-model".into(), "big-model".into()),
            ("local".into(), "m".into())
        ]
    );
    // A tier may name a configured backend left out of the cascade.
    let spare = Routing {
        tiers: vec![(Tier::Reflex, vec![("spare".into(), None)])],
        ..routing.clone()
    };
    assert_eq!(
        spare.backends_for(Tier::Reflex).unwrap()[0].endpoint.name,
        "spare"
    );
    // An unlisted tier uses the whole cascade.
    assert_eq!(
        names(Tier::Cognition),
        [("local".into(), "m".into()), ("cloud".into(), "m".into())]
    );
    let typo = Routing {
        tiers: vec![(Tier::Reflex, vec![("locl".into(), None)])],
        ..routing.clone()
    };
    let err = typo.backends_for(Tier::Reflex).unwrap_err().to_string();
    assert!(err.contains("\"locl\""), "{err}");
    assert_eq!(Tier::from_name(":reasoning"), Some(Tier::Reasoning));
}

#[tokio::test]
async fn consensus_takes_the_majority_and_reports_a_tie() {
    use serde_json::json;
    let (a, b, c) = (
        LlmServer::start().await,
        LlmServer::start().await,
        LlmServer::start().await,
    );
    let cas = cascade(
        &[
            ("a", a.base_url()),
            ("b", b.base_url()),
            ("c", c.base_url()),
        ],
        &Arc::default(),
        Policy::default(),
    );
    // a and c propose the same edit (keys in another order, other ids, stray blanks);
    // b proposes another.
    a.push(Reply::chat_sse(
        "",
        &[("set_todo", json!({"id": "n1", "state": "DONE"}))],
    ));
    b.push(Reply::chat_sse(
        "",
        &[("set_todo", json!({"id": "n2", "state": "DONE"}))],
    ));
    c.push(Reply::chat_sse(
        "I agree. ",
        &[("set_todo", json!({"state": "DONE ", "id": "n1"}))],
    ));
    let result = cas
        .consensus(&request(), 3, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!((result.agreed, result.answered, result.tie), (2, 3, false));
    assert_eq!(result.answer.backend, "a");
    assert_eq!(result.proposals.len(), 3);
    assert!(
        result.proposals[1].starts_with("b: set_todo("),
        "{:?}",
        result.proposals
    );
    // Every voter got the same request at once.
    assert_eq!(
        (a.requests().len(), b.requests().len(), c.requests().len()),
        (1, 1, 1)
    );

    // Two voters, two proposals: a tie, the first backend's proposal, marked.
    a.push(Reply::chat_sse(
        "",
        &[("query_notes", json!({"tag": "work"}))],
    ));
    b.push(Reply::chat_sse(
        "",
        &[("query_notes", json!({"tag": "home"}))],
    ));
    let result = cas
        .consensus(&request(), 2, &CancelToken::new())
        .await
        .unwrap();
    assert!(result.tie);
    assert_eq!(result.answer.backend, "a");
    assert_eq!(c.requests().len(), 1, "only two were asked");

    // A voter that fails does not vote; prose answers agree with each other.
    a.push(Reply::error(503, "down", "server_error"));
    b.push(Reply::chat_sse("Yes.", &[]));
    c.push(Reply::chat_sse("Indeed.", &[]));
    let result = cas
        .consensus(&request(), 3, &CancelToken::new())
        .await
        .unwrap();
    assert_eq!((result.agreed, result.answered, result.tie), (2, 2, false));
    assert!(
        result.proposals[0].starts_with("a: failed"),
        "{:?}",
        result.proposals
    );
}
