//! Semantic search as the runtime uses it, against the local test server playing an
//! OpenAI-compatible embedding server: private notes are never sent to be embedded nor
//! found, a batch the server refuses is retried note by note, changed notes are embedded
//! again and unchanged ones never, and the related notes reach the request's context.

use crate::support::llm_server::{LlmServer, Reply};
use crate::support::store::id_of;
use org_agent::agent::equipment::Equipment;
use org_agent::agent::semantic::Semantic;
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig};
use org_agent::llm::embeddings::{EmbeddingBackend, EmbeddingClient, EmbeddingWire};
use org_agent::llm::{Backend, CancelToken, ChatClient};
use org_agent::notes::{Notes, Privacy};
use org_agent::store::vectors::VectorIndex;
use org_agent::store::{Config, Store};
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::sync::Arc;

const NOTES: &str = "\
* Garden
:PROPERTIES:
:EMBED: t
:END:
Tulips and roses.
* Boat
:PROPERTIES:
:EMBED: t
:END:
Sails and ropes.
* Diary :private:
:PROPERTIES:
:EMBED: t
:END:
SECRET-FEELINGS
* Not embedded
Nothing.
";

fn vectors(vs: &[[f32; 3]]) -> Reply {
    let data: Vec<Value> = vs
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Reply::ok(
        "application/json",
        json!({"object": "list", "data": data, "model": "e"})
            .to_string()
            .into_bytes(),
    )
}

fn semantic(server: &LlmServer) -> Semantic {
    Semantic {
        client: EmbeddingClient::new(EmbeddingBackend::new(
            EmbeddingWire::OpenAi,
            server.base_url(),
            "e",
        ))
        .unwrap(),
        index: Arc::new(Mutex::new(VectorIndex::new(""))),
    }
}

fn inputs(server: &LlmServer) -> Vec<Vec<String>> {
    server
        .requests()
        .iter()
        .map(|r| {
            r.json()["input"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The store as the agent may see it under `privacy`.
fn notes_of(store: &Arc<Store>, privacy: impl Into<Arc<Privacy>>) -> Notes {
    Notes::new(store.clone(), privacy.into())
}

#[tokio::test]
async fn private_notes_are_never_embedded_and_refused_batches_go_one_by_one() {
    let server = LlmServer::start().await;
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text("/n/a.org", NOTES, None, None, None)
        .unwrap();
    let privacy = Privacy::default();
    let s = semantic(&server);
    let cancel = CancelToken::new();

    // The server refuses the batch (a text too long for it, say), then takes each alone.
    server.push(Reply::error(500, "input is too large", "server_error"));
    server.push(vectors(&[[1.0, 0.0, 0.0]]));
    server.push(vectors(&[[0.0, 1.0, 0.0]]));
    let report = s
        .update(&notes_of(&store, privacy.clone()), false, &cancel)
        .await
        .unwrap();
    assert_eq!(
        (report.candidates, report.embedded, report.refused),
        (2, 2, 0)
    );
    let sent = inputs(&server);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].len(), 2);
    assert!(sent[0][0].starts_with("Garden") && sent[0][1].starts_with("Boat"));
    assert!(
        sent.concat().iter().all(|t| !t.contains("SECRET")),
        "{sent:?}"
    );

    // Nothing changed: nothing is sent.
    let report = s
        .update(&notes_of(&store, privacy.clone()), false, &cancel)
        .await
        .unwrap();
    assert_eq!((report.embedded, report.indexed), (0, 2));
    assert_eq!(server.requests().len(), 3);

    // One note changes: only it is embedded again.
    let changed = NOTES.replace("Sails and ropes.", "Sails, ropes and a keel.");
    store
        .ingest_text("/n/a.org", &changed, None, None, None)
        .unwrap();
    server.push(vectors(&[[0.0, 1.0, 0.1]]));
    let report = s
        .update(&notes_of(&store, privacy.clone()), false, &cancel)
        .await
        .unwrap();
    assert_eq!((report.embedded, report.dropped), (1, 1));
    let sent = inputs(&server);
    assert_eq!(sent[3].len(), 1);
    assert!(sent[3][0].contains("keel"));

    // Search: best first, and a note that became private since is not found.
    server.push(vectors(&[[0.9, 0.1, 0.0]]));
    let hits = s
        .search(
            &notes_of(&store, privacy.clone()),
            "flowers",
            5,
            0.0,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(hits[0].0, id_of(&store, "Garden"));
    assert!(hits[0].1 > 0.9);
    // Another model's vectors are not compared with this one's, even of one dimension.
    let other = Semantic {
        client: EmbeddingClient::new(EmbeddingBackend::new(
            EmbeddingWire::OpenAi,
            server.base_url(),
            "other-model",
        ))
        .unwrap(),
        index: s.index.clone(),
    };
    let err = other
        .search(
            &notes_of(&store, privacy.clone()),
            "flowers",
            5,
            0.0,
            &cancel,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("embedded with e, not other-model"), "{err}");
    let stricter = Privacy::new(["private".to_string()], ["/n/*.org".to_string()]);
    server.push(vectors(&[[0.9, 0.1, 0.0]]));
    let hits = s
        .search(
            &notes_of(&store, stricter.clone()),
            "flowers",
            5,
            0.0,
            &cancel,
        )
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn related_notes_and_the_tool_reach_the_llm() {
    let (llm, emb) = (LlmServer::start().await, LlmServer::start().await);
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text("/n/a.org", NOTES, None, None, None)
        .unwrap();
    let s = semantic(&emb);
    emb.push(vectors(&[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]));
    s.update(
        &notes_of(&store, Privacy::default()),
        false,
        &CancelToken::new(),
    )
    .await
    .unwrap();
    let mut eq = Equipment::new(
        ChatClient::new(Backend::new(llm.base_url(), "m")).unwrap(),
        store.clone(),
    );
    eq.semantic = Some(s);
    // The question's embedding (close to Garden), then the tool's query (close to Boat).
    emb.push(vectors(&[[0.95, 0.05, 0.0]]));
    emb.push(vectors(&[[0.0, 1.0, 0.0]]));
    llm.push(Reply::chat_sse(
        "",
        &[("semantic_search", json!({"text": "sailing"}))],
    ));
    llm.push(Reply::chat_sse("Done.", &[]));
    run_turn(
        &eq,
        &mut Conversation::default(),
        "What grows in my garden?",
        &TurnConfig::default(),
        &CancelToken::new(),
        |_| {},
    )
    .await
    .unwrap();
    let requests = llm.requests();
    let first = requests[0].json();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("* Related notes (by meaning)"), "{system}");
    assert!(system.contains("- Garden (id:"), "{system}");
    assert!(system.contains("Tulips and roses."), "{system}");
    assert!(
        !system.contains("- Boat (id:"),
        "below the threshold: {system}"
    );
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"semantic_search"), "{tools:?}");
    let second = requests[1].json();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let result = crate::agent_turn::unblock(&result);
    assert!(
        result.starts_with("2 headlines closest in meaning:\n- Boat"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nothing_embedded_no_query_is_sent() {
    let (llm, emb) = (LlmServer::start().await, LlmServer::start().await);
    let store = Arc::new(Store::in_memory(Config::default()));
    let unmarked = "* Garden\nTulips and roses.\n";
    store
        .ingest_text("/n/a.org", unmarked, None, None, None)
        .unwrap();
    let s = semantic(&emb);
    let cancel = CancelToken::new();
    // Nothing is marked EMBED t: nothing is embedded, nothing asked of the server.
    let report = s
        .update(&notes_of(&store, Privacy::default()), false, &cancel)
        .await
        .unwrap();
    assert_eq!((report.candidates, report.indexed), (0, 0));
    let hits = s
        .search(
            &notes_of(&store, Privacy::default()),
            "flowers",
            5,
            0.0,
            &cancel,
        )
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    // A chat turn looks for related notes without asking the embedding server either.
    let mut eq = Equipment::new(
        ChatClient::new(Backend::new(llm.base_url(), "m")).unwrap(),
        store.clone(),
    );
    eq.semantic = Some(s);
    llm.push(Reply::chat_sse("Tulips.", &[]));
    let answer = run_turn(
        &eq,
        &mut Conversation::default(),
        "What grows in my garden?",
        &TurnConfig::default(),
        &cancel,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(answer, "Tulips.");
    assert_eq!(emb.requests().len(), 0);
    let system = llm.requests()[0].json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!system.contains("Related notes"), "{system}");
}
