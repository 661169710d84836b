//! Every wire format over real HTTP against the local test server: the request each sends
//! (path, key header, body shape), a streamed answer and tool calls in each provider's own
//! format (split at random byte boundaries), tool results sent back in each format, the
//! recorded Anthropic and Gemini streams, and faults in each provider's own way.

use crate::support::llm_server::{End, LlmServer, Recorded, Reply};
use crate::support::recording;
use org_agent::llm::{
    Backend, CancelToken, ChatClient, ChatRequest, Delta, LlmError, Message, Wire,
};
use serde_json::{json, Value};

const KEY: &str = "secret-key-123";

fn client(server: &LlmServer, wire: Wire) -> ChatClient {
    let mut b = Backend::with_wire(wire, server.root_for(wire), "test-model");
    b.endpoint.api_key = Some(KEY.to_owned());
    ChatClient::new(b).unwrap()
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}})
}

async fn chat(
    c: &ChatClient,
    request: &ChatRequest,
) -> (Result<org_agent::llm::Completion, LlmError>, Vec<Delta>) {
    let mut deltas = Vec::new();
    let r = c
        .chat(request, &CancelToken::new(), |d| deltas.push(d))
        .await;
    (r, deltas)
}

fn key_header(wire: Wire, r: &Recorded) -> Option<String> {
    match wire {
        Wire::OpenAi | Wire::Ollama => r.header("authorization").map(str::to_owned),
        Wire::Anthropic => r.header("x-api-key").map(str::to_owned),
        Wire::Gemini => r.header("x-goog-api-key").map(str::to_owned),
    }
}

#[tokio::test]
async fn a_tool_call_conversation_in_every_format() {
    for wire in Wire::ALL {
        for seed in [1u64, 7, 99] {
            let server = LlmServer::start().await;
            let c = client(&server, wire);
            server.push(
                Reply::answer(
                    wire,
                    "Let me check the weather. ",
                    &[("get_weather", json!({"city": "Édinburgh"}))],
                )
                .split(seed),
            );
            let mut request = ChatRequest {
                messages: vec![
                    Message::System("Be brief.".into()),
                    Message::User("Weather in Edinburgh?".into()),
                ],
                tools: vec![weather_tool()],
                stream: true,
                temperature: Some(0.0),
                max_tokens: None,
                cache_prefix: None,
                images: Vec::new(),
            };
            let (result, deltas) = chat(&c, &request).await;
            let first = result.unwrap_or_else(|e| panic!("{wire:?}: {e}"));
            assert_eq!(first.text, "Let me check the weather. ", "{wire:?}");
            assert_eq!(first.tool_calls.len(), 1, "{wire:?}");
            let call = &first.tool_calls[0];
            assert_eq!(call.name, "get_weather");
            assert_eq!(call.arguments, json!({"city": "Édinburgh"}), "{wire:?}");
            let streamed: String = deltas
                .iter()
                .filter_map(|d| match d {
                    Delta::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(streamed, first.text, "{wire:?}");
            if wire == Wire::Gemini {
                assert_eq!(call.signature.as_deref(), Some("sig-get_weather"));
            }

            // The tool's result goes back in the provider's format.
            server.push(Reply::answer(wire, "8°C and rain.", &[]).split(seed));
            request.messages.push(Message::Assistant {
                content: first.text.clone(),
                tool_calls: first.tool_calls.clone(),
            });
            request.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content: "8°C, rain".into(),
            });
            let (result, _) = chat(&c, &request).await;
            assert_eq!(result.unwrap().text, "8°C and rain.", "{wire:?}");

            let requests = server.requests();
            for r in &requests {
                assert_eq!(r.method, "POST");
                assert_eq!(
                    key_header(wire, r).as_deref().map(|k| k.contains(KEY)),
                    Some(true)
                );
            }
            let (path, second) = (&requests[0].path, requests[1].json());
            match wire {
                Wire::OpenAi => {
                    assert_eq!(path, "/v1/chat/completions");
                    let m = &second["messages"];
                    assert_eq!(m[2]["tool_calls"][0]["function"]["name"], "get_weather");
                    assert_eq!(m[3]["role"], "tool");
                    assert_eq!(m[3]["tool_call_id"], call.id.as_str());
                }
                Wire::Anthropic => {
                    assert_eq!(path, "/v1/messages");
                    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
                    assert_eq!(second["system"], "Be brief.");
                    assert!(second["max_tokens"].as_u64().unwrap() > 0);
                    let m = &second["messages"];
                    assert_eq!(m[1]["role"], "assistant");
                    let tool_use = m[1]["content"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|b| b["type"] == "tool_use")
                        .unwrap()
                        .clone();
                    assert_eq!(tool_use["input"], json!({"city": "Édinburgh"}));
                    assert_eq!(m[2]["role"], "user");
                    assert_eq!(m[2]["content"][0]["type"], "tool_result");
                    assert_eq!(m[2]["content"][0]["tool_use_id"], tool_use["id"]);
                    assert_eq!(second["tools"][0]["input_schema"]["type"], "object");
                }
                Wire::Gemini => {
                    assert_eq!(
                        path,
                        "/v1beta/models/test-model:streamGenerateContent?alt=sse"
                    );
                    assert_eq!(second["systemInstruction"]["parts"][0]["text"], "Be brief.");
                    let c = &second["contents"];
                    assert_eq!(c[1]["role"], "model");
                    let part = c[1]["parts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|p| p.get("functionCall").is_some())
                        .unwrap()
                        .clone();
                    // The signature is echoed back beside the call.
                    assert_eq!(part["thoughtSignature"], "sig-get_weather");
                    assert_eq!(c[2]["parts"][0]["functionResponse"]["name"], "get_weather");
                    assert_eq!(
                        second["tools"][0]["functionDeclarations"][0]["name"],
                        "get_weather"
                    );
                }
                Wire::Ollama => {
                    assert_eq!(path, "/api/chat");
                    let m = &second["messages"];
                    // Ollama wants the arguments as an object, not a JSON string.
                    assert_eq!(
                        m[2]["tool_calls"][0]["function"]["arguments"],
                        json!({"city": "Édinburgh"})
                    );
                    assert_eq!(m[3]["role"], "tool");
                    assert_eq!(second["options"]["temperature"], 0.0);
                }
            }
        }
    }
}

#[tokio::test]
async fn gemini_also_reads_a_streamed_json_array() {
    let server = LlmServer::start().await;
    let c = client(&server, Wire::Gemini);
    server.push(Reply::gemini_stream("Array form. ", &[], false).split(5));
    let request = ChatRequest {
        messages: vec![Message::User("Hi".into())],
        stream: true,
        ..ChatRequest::default()
    };
    assert_eq!(chat(&c, &request).await.0.unwrap().text, "Array form. ");
}

#[tokio::test]
async fn recorded_streams_replay_over_http_split_anywhere() {
    if !recording::available("llm_providers::recorded_streams_replay_over_http_split_anywhere") {
        return;
    }
    let cases = [
        (Wire::Anthropic, "anthropic", "anthropic-tool-stream.txt"),
        (
            Wire::Anthropic,
            "anthropic",
            "anthropic-tool-stream-parallel.txt",
        ),
        (Wire::Anthropic, "anthropic", "thinking_stream_02.txt"),
        (Wire::Gemini, "gemini", "thinking_stream_01.txt"),
        (Wire::Gemini, "gemini", "thinking_stream_02.txt"),
    ];
    for (wire, dir, name) in cases {
        let body = recording::body(&recording::raw(dir, name)).to_vec();
        let server = LlmServer::start().await;
        let c = client(&server, wire);
        let request = ChatRequest {
            messages: vec![Message::User("Hi".into())],
            stream: true,
            ..ChatRequest::default()
        };
        let mut results = Vec::new();
        for seed in [3u64, 11, 42] {
            server.push(Reply::ok("text/event-stream", body.clone()).split(seed));
            let (r, _) = chat(&c, &request).await;
            results.push(r.unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        assert!(
            results.windows(2).all(|w| w[0] == w[1]),
            "{name}: splits differ"
        );
        let c = &results[0];
        assert!(
            !c.text.is_empty() || !c.tool_calls.is_empty(),
            "{name}: nothing parsed"
        );
        if name.contains("thinking") {
            assert!(!c.reasoning.is_empty(), "{name}: reasoning not separated");
            assert!(!c.text.contains(&c.reasoning[..c.reasoning.len().min(40)]));
        }
        if name.contains("parallel") {
            assert!(c.tool_calls.len() >= 2, "{name}: {:?}", c.tool_calls);
        }
    }
}

#[tokio::test]
async fn faults_in_each_providers_own_way() {
    let request = ChatRequest {
        messages: vec![Message::User("Hi".into())],
        stream: true,
        ..ChatRequest::default()
    };
    for wire in Wire::ALL {
        let server = LlmServer::start().await;
        let c = client(&server, wire);

        // Wrong key: the provider's own 401 body, its message kept, the key never shown.
        server.push(Reply::wire_error(
            wire,
            401,
            &format!("invalid x-api-key {KEY}"),
        ));
        match chat(&c, &request).await.0 {
            Err(LlmError::Http {
                status: 401,
                message,
                ..
            }) => {
                assert!(message.contains("invalid x-api-key"), "{wire:?}: {message}");
                assert!(!message.contains(KEY), "{wire:?}: key leaked");
            }
            other => panic!("{wire:?}: {other:?}"),
        }

        // Rate limited with retry-after; overloaded (529).
        server.push(Reply::wire_error(wire, 429, "slow down").header("retry-after", "7"));
        let err = chat(&c, &request).await.0.unwrap_err();
        assert_eq!(err.status(), Some(429), "{wire:?}");
        assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(7)));
        assert!(err.is_retryable());
        server.push(Reply::wire_error(wire, 529, "Overloaded"));
        let err = chat(&c, &request).await.0.unwrap_err();
        assert_eq!(err.status(), Some(529));
        assert!(err.is_retryable(), "{wire:?}");

        // An error under HTTP 200, after part of the answer.
        server.push(Reply::mid_stream_error(wire, "Partial answer ", "server melted").split(9));
        match chat(&c, &request).await.0 {
            Err(LlmError::Provider { message, .. }) => {
                assert_eq!(message, "server melted", "{wire:?}")
            }
            other => panic!("{wire:?}: {other:?}"),
        }

        // Cut off before the format's end.
        let reply = Reply::answer(wire, "This answer is cut off before its end", &[]);
        let at = reply.body.len() * 2 / 3;
        server.push(reply.end(End::CutAt(at)));
        match chat(&c, &request).await.0 {
            Err(LlmError::Truncated { partial }) => {
                assert!(partial.text.starts_with("This "), "{wire:?}: {partial:?}")
            }
            other => panic!("{wire:?}: {other:?}"),
        }

        // A slow drip still arrives whole.
        server.push(
            Reply::answer(wire, "Slowly but surely.", &[])
                .per_event()
                .drip(std::time::Duration::from_millis(15)),
        );
        assert_eq!(
            chat(&c, &request).await.0.unwrap().text,
            "Slowly but surely.",
            "{wire:?}"
        );
    }
}

/// An image goes with the last user message in each provider's own shape, to a backend
/// marked `:vision`; a backend that is not gets the request without it.
#[tokio::test]
async fn images_go_in_each_formats_shape_and_only_to_a_model_that_sees() {
    let image = org_agent::llm::Image {
        media_type: "image/png".into(),
        base64: "iVBORw0KGgo=".into(),
    };
    for wire in Wire::ALL {
        for vision in [true, false] {
            let server = LlmServer::start().await;
            let mut b = Backend::with_wire(wire, server.root_for(wire), "test-model");
            b.endpoint.api_key = Some(KEY.to_owned());
            b.vision = vision;
            let c = ChatClient::new(b).unwrap();
            server.push(Reply::answer(wire, "A red square.", &[]));
            let request = ChatRequest {
                messages: vec![
                    Message::System("Be brief.".into()),
                    Message::User("What is in it?".into()),
                ],
                stream: true,
                images: vec![image.clone()],
                ..ChatRequest::default()
            };
            let (result, _) = chat(&c, &request).await;
            assert_eq!(result.unwrap().text, "A red square.", "{wire:?}");
            let body = server.requests()[0].json();
            let sent = body.to_string();
            assert_eq!(
                sent.contains("iVBORw0KGgo="),
                vision,
                "{wire:?} vision={vision}: {sent}"
            );
            if !vision {
                continue;
            }
            match wire {
                Wire::OpenAi => {
                    let parts = &body["messages"][1]["content"];
                    assert_eq!(parts[0], json!({"type": "text", "text": "What is in it?"}));
                    assert_eq!(
                        parts[1]["image_url"]["url"],
                        "data:image/png;base64,iVBORw0KGgo="
                    );
                }
                Wire::Anthropic => {
                    let blocks = &body["messages"][0]["content"];
                    assert_eq!(blocks[0]["text"], "What is in it?");
                    assert_eq!(
                        blocks[1],
                        json!({"type": "image", "source": {"type": "base64",
                               "media_type": "image/png", "data": "iVBORw0KGgo="}})
                    );
                }
                Wire::Gemini => {
                    let parts = &body["contents"][0]["parts"];
                    assert_eq!(parts[0]["text"], "What is in it?");
                    assert_eq!(
                        parts[1],
                        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}})
                    );
                }
                Wire::Ollama => {
                    let m = &body["messages"][1];
                    assert_eq!(m["content"], "What is in it?");
                    assert_eq!(m["images"], json!(["iVBORw0KGgo="]));
                }
            }
        }
    }
}
