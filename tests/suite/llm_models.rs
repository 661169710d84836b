//! Model listing over real HTTP against the local test server, in every wire format: the
//! request (method, path, key header), the providers' list shapes (as their documentation
//! shows them), Anthropic's and Gemini's pagination, Gemini's `generateContent` filter, and
//! failures: each provider's 401 (the key never shown), a body that is not JSON, a list
//! without its array, a body over the limit, redirects to another host, cancellation.

use crate::support::llm_server::{End, LlmServer, Recorded, Reply};
use org_agent::llm::models::{list_models, ModelInfo, MAX_BODY, MAX_PAGES};
use org_agent::llm::{Backend, CancelToken, LlmError, Wire};
use serde_json::json;
use std::time::Duration;

const KEY: &str = "secret-key-123";

/// A backend for `wire` on `server`, with the API root each provider uses.
fn backend(server: &LlmServer, wire: Wire) -> Backend {
    let mut b = Backend::with_wire(wire, server.root_for(wire), "unused");
    b.endpoint.api_key = Some(KEY.to_owned());
    b
}

async fn list(b: &Backend) -> Result<Vec<ModelInfo>, LlmError> {
    list_models(b, &CancelToken::new()).await
}

fn json_reply(body: serde_json::Value) -> Reply {
    Reply::ok("application/json", body.to_string().into_bytes())
}

fn ids(models: &[ModelInfo]) -> Vec<&str> {
    models.iter().map(|m| m.id.as_str()).collect()
}

fn description<'m>(models: &'m [ModelInfo], id: &str) -> Option<&'m str> {
    models
        .iter()
        .find(|m| m.id == id)
        .and_then(|m| m.description.as_deref())
}

fn key_header(wire: Wire, r: &Recorded) -> Option<String> {
    match wire {
        Wire::OpenAi | Wire::Ollama => r.header("authorization").map(str::to_owned),
        Wire::Anthropic => r.header("x-api-key").map(str::to_owned),
        Wire::Gemini => r.header("x-goog-api-key").map(str::to_owned),
    }
}

fn expected_key(wire: Wire) -> String {
    match wire {
        Wire::OpenAi | Wire::Ollama => format!("Bearer {KEY}"),
        Wire::Anthropic | Wire::Gemini => KEY.to_owned(),
    }
}

/// Every request was a GET with the key in `wire`'s header; their paths.
fn paths(server: &LlmServer, wire: Wire) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| {
            assert_eq!(r.method, "GET", "{wire:?}");
            assert_eq!(key_header(wire, r), Some(expected_key(wire)), "{wire:?}");
            assert!(r.body.is_empty(), "{wire:?}");
            r.path.clone()
        })
        .collect()
}

fn anthropic_model(id: &str, name: &str) -> serde_json::Value {
    json!({"type": "model", "id": id, "display_name": name,
           "created_at": "2025-05-22T00:00:00Z"})
}

fn gemini_model(name: &str, display: &str, methods: &[&str]) -> serde_json::Value {
    json!({"name": format!("models/{name}"), "version": "001", "displayName": display,
           "description": format!("{display}, for tests."), "inputTokenLimit": 1048576,
           "outputTokenLimit": 65536, "supportedGenerationMethods": methods,
           "temperature": 1, "topP": 0.95, "topK": 64, "maxTemperature": 2})
}

#[tokio::test]
async fn openai_lists_data_ids_sorted_and_deduplicated() {
    let server = LlmServer::start().await;
    let mut b = backend(&server, Wire::OpenAi);
    b.endpoint
        .headers
        .push(("X-Title".into(), "org-agent tests".into()));
    server.push(
        json_reply(json!({"object": "list", "data": [
            {"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"},
            {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
            {"id": "anthropic/claude-sonnet-4", "name": "Anthropic: Claude Sonnet 4",
             "context_length": 200000, "created": 1747930371},
            {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
            {"object": "model", "owned_by": "nobody"}
        ]}))
        .split(5),
    );
    let models = list(&b).await.unwrap();
    assert_eq!(
        ids(&models),
        ["anthropic/claude-sonnet-4", "gpt-4o", "gpt-4o-mini"]
    );
    assert_eq!(
        description(&models, "anthropic/claude-sonnet-4"),
        Some("Anthropic: Claude Sonnet 4, 200k context")
    );
    assert_eq!(description(&models, "gpt-4o"), None);
    assert_eq!(paths(&server, Wire::OpenAi), ["/v1/models"]);
    let request = &server.requests()[0];
    assert_eq!(request.header("x-title"), Some("org-agent tests"));
    assert_eq!(request.header("accept"), Some("application/json"));
}

#[tokio::test]
async fn anthropic_follows_after_id_across_two_pages() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::Anthropic);
    server.push(json_reply(json!({
        "data": [anthropic_model("claude-sonnet-4-20250514", "Claude Sonnet 4"),
                 anthropic_model("claude-opus-4-20250514", "Claude Opus 4")],
        "has_more": true, "first_id": "claude-sonnet-4-20250514",
        "last_id": "claude-opus-4-20250514"})));
    server.push(json_reply(json!({
        "data": [anthropic_model("claude-3-5-haiku-20241022", "Claude Haiku 3.5")],
        "has_more": false, "first_id": "claude-3-5-haiku-20241022",
        "last_id": "claude-3-5-haiku-20241022"})));
    let models = list(&b).await.unwrap();
    assert_eq!(
        ids(&models),
        [
            "claude-3-5-haiku-20241022",
            "claude-opus-4-20250514",
            "claude-sonnet-4-20250514"
        ]
    );
    assert_eq!(
        description(&models, "claude-opus-4-20250514"),
        Some("Claude Opus 4")
    );
    assert_eq!(
        paths(&server, Wire::Anthropic),
        [
            "/v1/models?limit=1000",
            "/v1/models?limit=1000&after_id=claude-opus-4-20250514"
        ]
    );
    for r in server.requests() {
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    }
}

#[tokio::test]
async fn anthropic_pagination_stops_after_the_page_limit() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::Anthropic);
    for i in 0..MAX_PAGES + 2 {
        let id = format!("claude-{i:02}");
        server.push(json_reply(json!({"data": [anthropic_model(&id, "Claude")],
                                      "has_more": true, "first_id": id, "last_id": id})));
    }
    let models = list(&b).await.unwrap();
    assert_eq!(models.len(), MAX_PAGES);
    assert_eq!(server.requests().len(), MAX_PAGES);
}

#[tokio::test]
async fn gemini_follows_page_tokens_and_keeps_generate_content_models() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::Gemini);
    // Page tokens are opaque base64: sent back URL-encoded.
    let token = "Ch5tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA+/==";
    server.push(json_reply(json!({
        "models": [
            gemini_model("gemini-2.5-flash", "Gemini 2.5 Flash",
                         &["generateContent", "countTokens", "createCachedContent",
                           "batchGenerateContent"]),
            gemini_model("embedding-001", "Embedding 001", &["embedContent"]),
            gemini_model("imagen-4.0-generate-001", "Imagen 4", &["predict"]),
        ],
        "nextPageToken": token})));
    server.push(json_reply(json!({
    "models": [
        gemini_model("gemini-2.5-pro", "Gemini 2.5 Pro",
                     &["generateContent", "countTokens"]),
        gemini_model("aqa", "Model that performs Attributed Question Answering.",
                     &["generateAnswer"]),
        gemini_model("gemini-embedding-001", "Gemini Embedding 001",
                     &["embedContent", "countTextTokens", "countTokens"]),
    ]})));
    let models = list(&b).await.unwrap();
    assert_eq!(ids(&models), ["gemini-2.5-flash", "gemini-2.5-pro"]);
    assert_eq!(
        description(&models, "gemini-2.5-pro"),
        Some("Gemini 2.5 Pro, 1M context")
    );
    assert_eq!(
        paths(&server, Wire::Gemini),
        [
            "/v1beta/models?pageSize=1000",
            "/v1beta/models?pageSize=1000&pageToken=Ch5tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA%2B%2F%3D%3D"
        ]
    );
    // The key only in its header, never in the URL.
    assert!(server.requests().iter().all(|r| !r.path.contains(KEY)));
}

#[tokio::test]
async fn ollama_lists_tags_from_the_server_root() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::Ollama);
    server.push(json_reply(json!({"models": [
        {"name": "qwen3:8b", "model": "qwen3:8b",
         "modified_at": "2025-05-10T08:06:48.639712648-07:00", "size": 5225388164u64,
         "digest": "500a1f067a9f782620b40bee6f7b0c89e17ae61f686b92c24933e4ca4b2b8b41",
         "details": {"parent_model": "", "format": "gguf", "family": "qwen3",
                     "families": ["qwen3"], "parameter_size": "8.2B",
                     "quantization_level": "Q4_K_M"}},
        {"name": "llama3.2:latest", "model": "llama3.2:latest",
         "modified_at": "2025-05-04T17:37:44.706015396-07:00", "size": 2019393189u64,
         "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
         "details": {"parent_model": "", "format": "gguf", "family": "llama",
                     "families": ["llama"], "parameter_size": "3.2B",
                     "quantization_level": "Q4_K_M"}}
    ]})));
    let models = list(&b).await.unwrap();
    assert_eq!(ids(&models), ["llama3.2:latest", "qwen3:8b"]);
    assert_eq!(
        description(&models, "qwen3:8b"),
        Some("8.2B qwen3 Q4_K_M, 5.2 GB")
    );
    assert_eq!(paths(&server, Wire::Ollama), ["/api/tags"]);
}

#[tokio::test]
async fn a_401_in_each_providers_shape_keeps_the_message_and_hides_the_key() {
    for wire in Wire::ALL {
        let server = LlmServer::start().await;
        let b = backend(&server, wire);
        server.push(
            Reply::wire_error(wire, 401, &format!("invalid x-api-key {KEY}"))
                .header("retry-after", "3"),
        );
        match list(&b).await {
            Err(err @ LlmError::Http { status: 401, .. }) => {
                let LlmError::Http { message, kind, .. } = &err else {
                    unreachable!()
                };
                assert!(message.contains("invalid x-api-key"), "{wire:?}: {message}");
                assert!(!err.to_string().contains(KEY), "{wire:?}: key leaked");
                assert!(!format!("{err:?}").contains(KEY), "{wire:?}: key leaked");
                match wire {
                    Wire::Anthropic => assert_eq!(kind.as_deref(), Some("authentication_error")),
                    Wire::Gemini => assert_eq!(kind.as_deref(), Some("PERMISSION_DENIED")),
                    _ => {}
                }
                assert_eq!(err.retry_after(), Some(Duration::from_secs(3)), "{wire:?}");
            }
            other => panic!("{wire:?}: {other:?}"),
        }
        assert_eq!(paths(&server, wire).len(), 1);
    }
}

#[tokio::test]
async fn garbage_and_shapeless_bodies_are_typed_errors() {
    for wire in Wire::ALL {
        let server = LlmServer::start().await;
        let b = backend(&server, wire);
        server.push(Reply::ok(
            "application/json",
            format!("<html>{KEY} not json").into_bytes(),
        ));
        match list(&b).await {
            Err(err @ LlmError::InvalidJson { .. }) => {
                assert!(!format!("{err:?}").contains(KEY), "{wire:?}: key leaked")
            }
            other => panic!("{wire:?}: {other:?}"),
        }
        // Valid JSON without the list (Gemini leaves an empty list out: no models).
        server.push(json_reply(json!({"object": "list"})));
        match (wire, list(&b).await) {
            (Wire::Gemini, Ok(models)) => assert!(models.is_empty()),
            (_, Err(LlmError::Malformed(_))) => {}
            (_, other) => panic!("{wire:?}: {other:?}"),
        }
        // An error body under HTTP 200.
        server.push(json_reply(
            json!({"error": {"message": "no listing today"}}),
        ));
        match list(&b).await {
            Err(LlmError::Provider { message, .. }) => assert_eq!(message, "no listing today"),
            other => panic!("{wire:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::OpenAi);
    server.push(Reply::ok("application/json", vec![b' '; MAX_BODY + 1]));
    assert_eq!(
        list(&b).await,
        Err(LlmError::ResponseTooLarge { limit: MAX_BODY })
    );
}

#[tokio::test]
async fn a_redirect_to_another_host_is_not_followed() {
    let server = LlmServer::start().await;
    let elsewhere = LlmServer::start().await;
    let b = backend(&server, Wire::Anthropic);
    server.push(Reply {
        status: 302,
        ..Reply::ok("text/plain", Vec::new())
            .header("Location", &format!("{}/models", elsewhere.base_url()))
    });
    assert_eq!(list(&b).await.unwrap_err().status(), Some(302));
    assert!(
        elsewhere.requests().is_empty(),
        "the key went to another host"
    );
}

#[tokio::test]
async fn cancellation_stops_the_listing() {
    let server = LlmServer::start().await;
    let b = backend(&server, Wire::OpenAi);
    let cancel = CancelToken::new();
    cancel.cancel();
    assert_eq!(list_models(&b, &cancel).await, Err(LlmError::Cancelled));
    assert!(server.requests().is_empty());

    // Mid-request: the server stalls after the headers.
    server.push(json_reply(json!({"data": []})).end(End::StallAt(0)));
    let cancel = CancelToken::new();
    let later = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        later.cancel();
    });
    assert_eq!(list_models(&b, &cancel).await, Err(LlmError::Cancelled));
}
