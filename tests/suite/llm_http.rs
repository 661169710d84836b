//! The OpenAI-compatible HTTP client against a real local server (tests/support): every
//! recorded stream split at random byte boundaries, the request it sends, HTTP errors,
//! truncation, timeouts and cancellation.

use crate::support::llm_server::{openai_fixture, End, Framing, LlmServer, Reply};
use crate::support::{recording, refused_url};
use org_agent::llm::openai::{read_stream, OpenAiStream};
use org_agent::llm::StreamOptions;
use org_agent::llm::{
    Backend, CancelToken, ChatClient, ChatRequest, Completion, Delta, LlmError, Message,
    TimeoutPhase, ToolCall,
};
use serde_json::json;
use std::time::Duration;

const KEY: &str = "test-key";

fn client(server: &LlmServer, configure: impl FnOnce(&mut Backend)) -> ChatClient {
    let mut backend = Backend::new(server.base_url(), "test-model");
    backend.endpoint.api_key = Some(KEY.to_owned());
    backend.endpoint.timeouts.first_byte = Duration::from_secs(10);
    backend.endpoint.timeouts.idle = Duration::from_secs(10);
    backend.endpoint.timeouts.total = Duration::from_secs(30);
    configure(&mut backend);
    ChatClient::new(backend).expect("client")
}

fn hello(stream: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::System("You are terse.".into()),
            Message::User("Hi!".into()),
        ],
        stream,
        ..Default::default()
    }
}

async fn chat(
    client: &ChatClient,
    request: &ChatRequest,
) -> (Vec<Delta>, Result<Completion, LlmError>) {
    let mut deltas = Vec::new();
    let result = client
        .chat(request, &CancelToken::new(), |d| deltas.push(d))
        .await;
    (deltas, result)
}

/// What the parser makes of `body` given whole, without HTTP.
fn direct(body: &[u8]) -> (Vec<Delta>, Result<Completion, LlmError>) {
    let mut deltas = Vec::new();
    let result = read_stream([body], StreamOptions::default(), |d| deltas.push(d));
    (deltas, result)
}

/// The text of `deltas`, concatenated.
fn text(deltas: &[Delta]) -> String {
    deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_stream_fixture_over_http_split_randomly() {
    if !recording::available("llm_http::every_stream_fixture_over_http_split_randomly") {
        return;
    }
    let names: Vec<String> = recording::names("openai")
        .into_iter()
        .filter(|n| n.ends_with(".sse") || n.starts_with("thinking_stream_"))
        .collect();
    assert_eq!(names.len(), 17, "{names:?}");
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    let mut tool_calls = 0;
    for name in &names {
        let (want_deltas, want) = direct(&openai_fixture(name));
        let want = want.unwrap_or_else(|e| panic!("{name} parses directly: {e}"));
        for seed in [1, 0x9e37_79b9_7f4a_7c15, 42] {
            server.push(Reply::sse_fixture(name).split(seed));
            let (deltas, got) = chat(&client, &hello(true)).await;
            let got = got.unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            assert_eq!(got, want, "{name} seed {seed}");
            // Deltas may be cut differently, but carry the same text.
            assert_eq!(text(&deltas), text(&want_deltas), "{name} seed {seed}");
            assert_eq!(text(&deltas), got.text, "{name} seed {seed}");
        }
        tool_calls += want.tool_calls.len();
    }
    assert!(tool_calls >= 4, "the fixtures include tool calls");
    assert_eq!(server.requests().len(), names.len() * 3);

    // One tool call, checked by hand.
    server.push(Reply::sse_fixture("tool-call.sse").split(7));
    let (deltas, got) = chat(&client, &hello(true)).await;
    let got = got.unwrap();
    assert_eq!(got.tool_calls.len(), 1);
    assert_eq!(got.tool_calls[0].id, "call_c91SqDXlYFuETYv8mUHzz6pp");
    assert_eq!(got.tool_calls[0].name, "GetWeatherArgs");
    assert_eq!(
        got.tool_calls[0].arguments,
        json!({"city": "Edinburgh", "country": "UK", "units": "c"})
    );
    assert!(deltas.iter().any(
        |d| matches!(d, Delta::ToolCallStart { index: 0, name, .. } if name == "GetWeatherArgs")
    ));
}

#[tokio::test]
async fn the_request_is_a_chat_completions_post() {
    if !recording::available("llm_http::the_request_is_a_chat_completions_post") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |b| {
        b.endpoint
            .headers
            .push(("X-Title".into(), "org-agent tests".into()));
    });
    let weather = json!({
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    });
    let request = ChatRequest {
        messages: vec![
            Message::System("sys".into()),
            Message::User("Weather in Edinburgh?".into()),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Edinburgh"}),
                    signature: None,
                }],
            },
            Message::Tool {
                tool_call_id: "call_1".into(),
                content: "8°C, rain".into(),
            },
        ],
        tools: vec![weather.clone()],
        stream: true,
        temperature: Some(0.5),
        max_tokens: None,
        cache_prefix: None,
        images: Vec::new(),
    };
    server.push(Reply::sse_fixture("text-short.sse"));
    let (_, got) = chat(&client, &request).await;
    got.unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
    assert_eq!(r.header("x-title"), Some("org-agent tests"));
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(
        r.json(),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "Weather in Edinburgh?"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Edinburgh\"}"},
                }]},
                {"role": "tool", "tool_call_id": "call_1", "content": "8°C, rain"},
            ],
            "tools": [{"type": "function", "function": weather}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.5,
        })
    );
}

#[tokio::test]
async fn non_streaming_json_response() {
    if !recording::available("llm_http::non_streaming_json_response") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    let name = "thinking_nostream_llamacpp_glm4.5_01.txt";
    server.push(Reply::json_fixture(name).split(3).framing(Framing::Close));
    let (deltas, got) = chat(&client, &hello(false)).await;
    let got = got.unwrap();
    assert_eq!(
        got.text,
        "Hello! I'm here to help you with any questions or tasks you might have. \
         How can I assist you today?"
    );
    assert!(got
        .reasoning
        .starts_with("The user has simply greeted me with \"Hi!\"."));
    assert_eq!(text(&deltas), got.text);
    assert_eq!(Ok(got), direct(&openai_fixture(name)).1);

    let body = server.requests()[0].json();
    assert_eq!(body["stream"], json!(false));
    assert!(body.get("stream_options").is_none());
}

#[tokio::test]
async fn http_401_is_typed_with_the_providers_message_and_no_key() {
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    let message = "Incorrect API key provided: sk-proj-****abcd. You can find your API key at \
                   https://platform.openai.com/account/api-keys.";
    server.push(Reply::error(401, message, "invalid_request_error"));
    let (_, got) = chat(&client, &hello(true)).await;
    let err = got.unwrap_err();
    match &err {
        LlmError::Http {
            status,
            message: m,
            kind,
            retry_after,
            ..
        } => {
            assert_eq!(*status, 401);
            assert_eq!(m, message);
            assert_eq!(kind.as_deref(), Some("invalid_request_error"));
            assert_eq!(*retry_after, None);
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert_eq!(err.status(), Some(401));
    assert!(!err.is_retryable());
    for shown in [format!("{err:?}"), err.to_string(), format!("{client:?}")] {
        assert!(!shown.contains(KEY), "{shown}");
    }
    assert!(format!("{client:?}").contains("[redacted]"));
}

#[tokio::test]
async fn a_server_echoing_the_key_does_not_leak_it() {
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    server.push(Reply::error(403, "key test-key is revoked", "auth"));
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert!(!format!("{err:?}").contains(KEY), "{err:?}");
}

#[tokio::test]
async fn http_429_exposes_retry_after() {
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    server.push(Reply::error(429, "Rate limit reached", "requests").header("retry-after", "2"));
    server.push(
        Reply::error(429, "Slow down", "requests")
            .header("retry-after", "2")
            .header("retry-after-ms", "1500"),
    );
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
    assert!(err.is_retryable());
    assert!(err.to_string().contains("Rate limit reached"), "{err}");
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_millis(1500)));
}

#[tokio::test]
async fn http_500_is_typed_even_without_a_json_body() {
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    server.push(Reply::error(500, "The server had an error", "server_error"));
    let mut plain = Reply::ok("text/plain", b"upstream exploded".to_vec());
    plain.status = 500;
    server.push(plain);
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert!(
        matches!(&err, LlmError::Http { status: 500, message, .. } if message == "The server had an error"),
        "{err:?}"
    );
    assert!(err.is_retryable());
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert!(
        matches!(&err, LlmError::Http { status: 500, message, .. } if message == "upstream exploded"),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_cut_stream_is_truncated_with_the_partial_text() {
    if !recording::available("llm_http::a_cut_stream_is_truncated_with_the_partial_text") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    let name = "text-medium.sse";
    let body = openai_fixture(name);
    // Mid-line: the last event's JSON is cut short.
    let cut = body.len() / 2;
    assert_ne!(body[cut - 1], b'\n');
    let mut expected = OpenAiStream::new();
    expected.feed(&body[..cut]).unwrap();
    let partial = expected.partial();
    assert!(!partial.text.is_empty());
    let expected = LlmError::Truncated {
        partial: Box::new(partial.clone()),
    };

    for framing in [Framing::Chunked, Framing::Close] {
        server.push(
            Reply::sse_fixture(name)
                .split(5)
                .framing(framing)
                .end(End::CutAt(cut)),
        );
        let (deltas, got) = chat(&client, &hello(true)).await;
        let err = got.unwrap_err();
        assert_eq!(err, expected, "{framing:?}");
        assert!(partial.text.starts_with(&text(&deltas)), "{framing:?}");
        assert!(err.is_retryable());
    }

    // Between events, just before `data: [DONE]`.
    let done = body
        .windows(12)
        .rposition(|w| w == b"data: [DONE]")
        .unwrap();
    server.push(Reply::sse_fixture(name).split(6).end(End::CutAt(done)));
    let (deltas, got) = chat(&client, &hello(true)).await;
    let Err(LlmError::Truncated { partial }) = got else {
        panic!("{got:?}")
    };
    assert_eq!(partial.text, text(&deltas));
    assert_eq!(partial.text, direct(&body).1.unwrap().text);
}

#[tokio::test]
async fn a_stall_hits_the_idle_timeout() {
    if !recording::available("llm_http::a_stall_hits_the_idle_timeout") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |b| {
        b.endpoint.timeouts.idle = Duration::from_millis(300)
    });
    server.push(Reply::sse_fixture("text-medium.sse").end(End::StallAt(600)));
    let (deltas, got) = chat(&client, &hello(true)).await;
    assert_eq!(
        got.unwrap_err(),
        LlmError::Timeout {
            phase: TimeoutPhase::Idle,
            after: Duration::from_millis(300)
        }
    );
    assert!(!deltas.is_empty(), "the bytes before the stall were parsed");
}

#[tokio::test]
async fn headers_then_nothing_hits_the_first_byte_timeout() {
    if !recording::available("llm_http::headers_then_nothing_hits_the_first_byte_timeout") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |b| {
        b.endpoint.timeouts.first_byte = Duration::from_millis(300)
    });
    server.push(Reply::sse_fixture("text-medium.sse").end(End::StallAt(0)));
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_slow_drip_hits_the_total_timeout() {
    if !recording::available("llm_http::a_slow_drip_hits_the_total_timeout") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |b| {
        b.endpoint.timeouts.total = Duration::from_millis(300)
    });
    server.push(
        Reply::sse_fixture("text-medium.sse")
            .split(9)
            .drip(Duration::from_millis(20)),
    );
    let err = chat(&client, &hello(true)).await.1.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Timeout {
                phase: TimeoutPhase::Total,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn cancellation_mid_stream() {
    if !recording::available("llm_http::cancellation_mid_stream") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    server.push(
        Reply::sse_fixture("text-long.sse")
            .split(11)
            .drip(Duration::from_millis(5)),
    );
    let cancel = CancelToken::new();
    let mut texts = 0;
    let got = client
        .chat(&hello(true), &cancel, |d| {
            if matches!(d, Delta::Text(_)) {
                texts += 1;
                if texts == 3 {
                    cancel.cancel();
                }
            }
        })
        .await;
    assert_eq!(got, Err(LlmError::Cancelled));
    assert!(texts >= 3);

    // A token cancelled beforehand stops the request before it is sent.
    let before = server.requests().len();
    let got = client.chat(&hello(true), &cancel, |_| {}).await;
    assert_eq!(got, Err(LlmError::Cancelled));
    assert_eq!(server.requests().len(), before);
}

#[tokio::test]
async fn cancellation_from_another_task() {
    if !recording::available("llm_http::cancellation_from_another_task") {
        return;
    }
    let server = LlmServer::start().await;
    let client = client(&server, |_| {});
    server.push(Reply::sse_fixture("text-medium.sse").end(End::StallAt(300)));
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let got = client.chat(&hello(true), &cancel, |_| {}).await;
    assert_eq!(got, Err(LlmError::Cancelled));
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let mut backend = Backend::new(refused_url(), "m");
    backend.endpoint.api_key = Some(KEY.into());
    let client = ChatClient::new(backend).unwrap();
    let err = client
        .chat(&hello(true), &CancelToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err:?}");
    assert!(err.is_retryable());
    assert!(!format!("{err:?}").contains(KEY));
}

#[test]
fn bad_configuration_is_typed() {
    let err = ChatClient::new(Backend::new("not a url", "m")).unwrap_err();
    assert!(matches!(err, LlmError::Config(_)), "{err:?}");
    let mut backend = Backend::new("http://127.0.0.1:1/v1", "m");
    backend
        .endpoint
        .headers
        .push(("X-Secret".into(), "bad\nvalue".into()));
    let err = ChatClient::new(backend).unwrap_err();
    assert!(
        matches!(&err, LlmError::Config(m) if !m.contains("bad")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backends_max_tokens_bounds_every_request() {
    let server = LlmServer::start().await;
    let capped = client(&server, |b| b.max_tokens = Some(64));
    for (asked, sent) in [(None, 64), (Some(500), 64), (Some(10), 10)] {
        server.push(Reply::chat_sse("Hi.", &[]));
        let request = ChatRequest {
            max_tokens: asked,
            ..hello(true)
        };
        chat(&capped, &request).await.1.unwrap();
        let body = server.requests().last().unwrap().json();
        assert_eq!(body["max_tokens"], sent, "asked {asked:?}");
    }
    // Without a bound the request says nothing and the server decides.
    server.push(Reply::chat_sse("Hi.", &[]));
    chat(&client(&server, |_| {}), &hello(true))
        .await
        .1
        .unwrap();
    assert!(server
        .requests()
        .last()
        .unwrap()
        .json()
        .get("max_tokens")
        .is_none());
}

#[tokio::test]
async fn a_request_larger_than_the_window_is_not_sent() {
    let server = LlmServer::start().await;
    let client = client(&server, |b| b.context_window = Some(100));
    let request = ChatRequest {
        messages: vec![Message::User("word ".repeat(200))],
        stream: true,
        ..Default::default()
    };
    match chat(&client, &request).await.1 {
        Err(LlmError::ContextExceeded { estimated, window }) => {
            assert_eq!((estimated, window), (250, 100));
        }
        other => panic!("expected ContextExceeded, got {other:?}"),
    }
    assert!(server.requests().is_empty(), "nothing reaches the server");
    // Within the window, it is sent.
    server.push(Reply::chat_sse("Fine.", &[]));
    let small = ChatRequest {
        messages: vec![Message::User("word ".repeat(20))],
        stream: true,
        ..Default::default()
    };
    assert!(chat(&client, &small).await.1.is_ok());
    assert_eq!(server.requests().len(), 1);
}
