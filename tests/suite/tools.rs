//! The built-in tools against a store holding the demo notes.

use crate::support::store::{self, notes};
use org_agent::store::Store;
use org_agent::tools::{Registry, ToolError};
use serde_json::{json, Value};
use std::sync::Arc;

fn demo_store() -> Arc<Store> {
    Arc::new(store::demo_store(
        store::config(),
        &["projects.org", "tasks.org", "journal.org"],
    ))
}

/// Built-in `tool` called with `args` on `store` as the LLM sees it.
fn call(store: &Arc<Store>, tool: &str, args: Value) -> Result<String, ToolError> {
    Registry::with_builtins().call(&notes(store), tool, &args)
}

#[test]
fn schemas_are_json_schema_functions() {
    let r = Registry::with_builtins();
    assert_eq!(
        r.names(),
        ["list_files", "query_notes", "read_node", "search_notes"]
    );
    for s in r.function_schemas() {
        assert_eq!(s["type"], "function");
        let f = &s["function"];
        assert!(f["name"].is_string() && f["description"].as_str().unwrap().len() > 20);
        assert_eq!(f["parameters"]["type"], "object");
        assert!(f["parameters"]["properties"].is_object());
        assert!(f["parameters"]["required"].is_array());
    }
    let read = &r.get("read_node").unwrap().schema();
    assert_eq!(read["required"], json!(["id"]));
    assert_eq!(read["properties"]["id"]["type"], "string");
}

#[test]
fn query_notes_finds_headlines() {
    let store = demo_store();
    let out = call(&store, "query_notes", json!({"todo": "WAITING"})).unwrap();
    assert!(out.starts_with("1 matching headlines:"), "{out}");
    assert!(
        out.contains("WAITING Domain name transfer :admin: DEADLINE: <2026-12-01 Tue -3d>"),
        "{out}"
    );
    let out = call(&store, "query_notes", json!({"projects": true})).unwrap();
    assert!(out.contains("Launch the field-notes website") && out.contains("Quarterly report"));
    assert!(
        !out.contains("Office move"),
        "done projects are not active: {out}"
    );
    let out = call(&store, "query_notes", json!({"tag": "work", "limit": 2})).unwrap();
    assert!(out.starts_with("8 matching headlines, first 2:"), "{out}");
    let out = call(
        &store,
        "query_notes",
        json!({"property": "PHONE", "property_value": "555-0142"}),
    )
    .unwrap();
    assert!(out.contains("Call the plumber"), "{out}");
    let out = call(&store, "query_notes", json!({"tag": "nonexistent"})).unwrap();
    assert_eq!(out, "No matching headlines.");
}

#[test]
fn read_node_renders_the_node_as_org() {
    let store = demo_store();
    let out = call(
        &store,
        "read_node",
        json!({"id": "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a02"}),
    )
    .unwrap();
    assert!(
        out.starts_with("Outline path: Launch the field-notes website\n"),
        "{out}"
    );
    assert!(out.contains("** NEXT Write the export pipeline :code:\nSCHEDULED: <2026-11-24 Tue>\n:PROPERTIES:\n:ID: 6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a02\n:END:\n- [ ] export on save"), "{out}");
    let parent = call(
        &store,
        "read_node",
        json!({"id": "6f0c2f5e-1d3b-4c1e-9a1e-2b7c0b8f0a01"}),
    )
    .unwrap();
    assert!(
        parent.contains("Children:\n- DONE Pick a static site generator"),
        "{parent}"
    );
    let err = call(&store, "read_node", json!({"id": "nope"})).unwrap_err();
    assert_eq!(
        err,
        ToolError::Failed {
            tool: "read_node".into(),
            message: org_agent::notes::NO_SUCH_NODE.into()
        }
    );
}

#[test]
fn read_node_on_a_file_prints_its_title_once() {
    let store = demo_store();
    let state = store.state();
    let doc = state
        .files
        .values()
        .find(|d| d.path.ends_with("projects.org"))
        .expect("the demo notes have projects.org");
    let file_id = doc.nodes[0].id.clone();
    drop(state);
    let out = call(&store, "read_node", json!({"id": file_id})).unwrap();
    assert_eq!(out.matches("#+TITLE:").count(), 1, "{out}");
    assert!(out.contains("#+TITLE: Projects\n"), "{out}");
    // A file without #+TITLE is named after itself, once.
    store
        .ingest_text(
            "/notes/errands.org",
            "Some preamble.\n* TODO Buy milk\n",
            None,
            None,
            None,
        )
        .unwrap();
    let state = store.state();
    let doc = state
        .files
        .values()
        .find(|d| d.path.ends_with("errands.org"))
        .expect("errands.org is ingested");
    let id = doc.nodes[0].id.clone();
    drop(state);
    let out = call(&store, "read_node", json!({"id": id})).unwrap();
    assert_eq!(out.matches("#+TITLE:").count(), 1, "{out}");
    assert!(out.contains("#+TITLE: errands\nSome preamble."), "{out}");
}

#[test]
fn search_and_list() {
    let store = demo_store();
    let out = call(&store, "search_notes", json!({"text": "EXPORT PIPELINE"})).unwrap();
    assert!(out.contains("Write the export pipeline"), "{out}");
    // Bodies are searched too.
    assert!(out.contains("2026-11-20 Friday"), "{out}");
    let out = call(&store, "list_files", json!({})).unwrap();
    assert!(out.starts_with("3 Org files:"), "{out}");
    assert!(
        out.contains("projects.org (8 headlines, title: Projects)"),
        "{out}"
    );
}

#[test]
fn bad_arguments_are_refused_before_the_body_runs() {
    let store = demo_store();
    let cases = [
        ("read_node", json!({}), "argument \"id\" is required"),
        ("read_node", json!({"id": 5}), "must be a String"),
        (
            "query_notes",
            json!({"colour": "red"}),
            "unknown argument \"colour\"",
        ),
        ("query_notes", json!([1, 2]), "arguments must be an object"),
        (
            "query_notes",
            json!({"scheduled_before": "soon"}),
            "must be a date",
        ),
        (
            "query_notes",
            json!({"todo_type": "maybe"}),
            "\"todo\" or \"done\"",
        ),
        ("search_notes", json!({"text": "  "}), "must not be empty"),
    ];
    for (tool, args, want) in cases {
        let err = call(&store, tool, args.clone()).unwrap_err();
        assert!(err.to_string().contains(want), "{tool} {args}: {err}");
    }
    assert_eq!(
        call(&store, "rm_rf", json!({})).unwrap_err(),
        ToolError::Unknown("rm_rf".into())
    );
}
