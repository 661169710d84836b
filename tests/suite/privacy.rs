//! Private notes never reach the LLM: not through the context, any built-in tool, or a
//! redacted buffer. Every check below searches the produced text for words that only occur in
//! private subtrees, so a leak through any field (title, body, property, child line) fails.

use crate::support::store::{id_of, notes};
use org_agent::context::render;
use org_agent::notes::Privacy;
use org_agent::notes::{Notes, NO_SUCH_NODE};
use org_agent::store::{Config, Store};
use org_agent::tools::Registry;
use serde_json::json;
use std::sync::Arc;

const NOTES: &str = "\
#+TITLE: Mixed
* Work                                                            :project:
** TODO Ship the release
** TODO Plan the offsite                                         :private:
The offsite is at KESTREL-LODGE.
*** TODO Book the KESTREL rooms
* Health
:PROPERTIES:
:PRIVATE: t
:END:
Blood pressure notes, ZEPHYR-DIARY.
** TODO See the doctor about ZEPHYR
* Family                                                        :@personal:
** Birthday present for OSPREY-SISTER
* Garden
:PROPERTIES:
:PRIVATE: nil
:END:
Plant the tulips.
";

const JOURNAL: &str = "\
#+TITLE: Journal
* 2026-11-20
Felt MARMOT-TIRED today.
";

const SHARED: &str = "\
#+TITLE: Shared
#+FILETAGS: private
* Team lunch at HERON-CAFE
";

/// Words that only occur in private places.
const SECRETS: [&str; 5] = ["KESTREL", "ZEPHYR", "OSPREY", "MARMOT", "HERON"];

fn store() -> Arc<Store> {
    let store = Store::in_memory(Config::default());
    for (file, text) in [
        ("/notes/mixed.org", NOTES),
        ("/notes/journal/2026.org", JOURNAL),
        ("/notes/shared.org", SHARED),
    ] {
        store.ingest_text(file, text, None, None, None).unwrap();
    }
    Arc::new(store)
}

fn privacy() -> Privacy {
    Privacy::new(
        ["@personal".to_string(), "private".to_string()],
        ["/notes/journal/**".to_string()],
    )
}

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows private {s}:\n{text}");
    }
}

#[test]
fn tools_never_show_private_notes() {
    let store = store();
    let privacy = privacy();
    let notes = Notes::new(store.clone(), Arc::new(privacy.clone()));
    let tools = Registry::with_builtins();
    let mut shown = String::new();
    for (name, args) in [
        ("query_notes", json!({})),
        ("query_notes", json!({"todo_type": "todo", "limit": 200})),
        ("query_notes", json!({"tag": "private"})),
        ("query_notes", json!({"property": "PRIVATE"})),
        ("query_notes", json!({"projects": true})),
        ("search_notes", json!({"text": "kestrel"})),
        ("search_notes", json!({"text": "e"})),
        ("list_files", json!({})),
        ("read_node", json!({"id": id_of(&store, "Work")})),
        ("read_node", json!({"id": id_of(&store, "Mixed")})),
    ] {
        let out = tools.call(&notes, name, &args).unwrap();
        assert_no_secret(&format!("{name} {args}"), &out);
        shown.push_str(&out);
    }
    // The visible notes are still there: privacy hides, it does not blind.
    for visible in ["Ship the release", "Garden"] {
        assert!(shown.contains(visible), "{visible} missing:\n{shown}");
    }
    assert!(shown.contains("1 Org files"), "{shown}");

    // Reading a private node by id (an id the LLM may have from elsewhere) is refused.
    for title in [
        "Plan the offsite",
        "Book the KESTREL rooms",
        "Health",
        "See the doctor about ZEPHYR",
        "Birthday present for OSPREY-SISTER",
        "2026-11-20",
        "Team lunch at HERON-CAFE",
    ] {
        let id = id_of(&store, title);
        let err = tools
            .call(&notes, "read_node", &json!({"id": id}))
            .unwrap_err()
            .to_string();
        // Refused as an unknown node is, naming neither the node nor its file.
        assert!(err.contains(NO_SUCH_NODE), "{title}: {err}");
        assert!(
            !err.contains(&id) && !err.contains("/notes/"),
            "{title}: {err}"
        );
        assert_no_secret(title, &err);
    }
}

#[test]
fn without_rules_the_same_notes_are_visible() {
    // The check above would pass trivially if the notes never showed at all.
    let store = store();
    let none = Privacy::none();
    let notes = Notes::new(store.clone(), Arc::new(none.clone()));
    let out = Registry::with_builtins()
        .call(&notes, "search_notes", &json!({"text": "e", "limit": 200}))
        .unwrap();
    for s in ["KESTREL", "ZEPHYR", "OSPREY", "HERON"] {
        assert!(out.contains(s), "{s} missing:\n{out}");
    }
}

#[test]
fn the_context_leaves_private_nodes_out() {
    let store = store();
    let privacy = privacy();
    let notes = Notes::new(store.clone(), Arc::new(privacy.clone()));
    // A private focus is not shown at all; a public one is shown without its private child.
    let focus = id_of(&store, "Plan the offsite");
    let ctx = render(&notes, Some(&focus));
    assert_no_secret("context with a private focus", &ctx);
    assert!(!ctx.contains("The node the user is on"), "{ctx}");
    let ctx = render(&notes, Some(&id_of(&store, "Work")));
    assert_no_secret("context", &ctx);
    assert!(ctx.contains("Ship the release"), "{ctx}");
    assert!(!ctx.contains("Plan the offsite"), "{ctx}");
}

#[test]
fn redaction_cuts_private_subtrees_out_of_buffer_text() {
    let store = store();
    let privacy = privacy();
    let doc = store.parse_unstored("/notes/mixed.org", NOTES).unwrap();
    let out = privacy.redact(&doc, NOTES).unwrap();
    assert_no_secret("redacted buffer", &out);
    assert!(out.contains("** TODO Ship the release\n"), "{out}");
    assert!(out.contains("Plant the tulips."), "{out}");
    assert_eq!(
        out.matches("[a private subtree is left out]").count(),
        3,
        "{out}"
    );
    // A private file as a whole gives nothing.
    let doc = store
        .parse_unstored("/notes/journal/2026.org", JOURNAL)
        .unwrap();
    assert!(privacy.redact(&doc, JOURNAL).is_none());
    let doc = store.parse_unstored("/notes/shared.org", SHARED).unwrap();
    assert!(privacy.redact(&doc, SHARED).is_none());
    // Text with nothing private comes back unchanged.
    let plain = "* A\nbody\n** B\n";
    let doc = store.parse_unstored("/notes/plain.org", plain).unwrap();
    assert_eq!(privacy.redact(&doc, plain).as_deref(), Some(plain));
}

#[test]
fn private_tags_count_even_when_not_inherited() {
    // A user may exclude `private` from tag inheritance for agenda reasons; the children of a
    // private headline stay private all the same.
    let store = Store::in_memory(Config {
        no_inherit_tags: vec!["private".to_string()],
        ..Config::default()
    });
    store
        .ingest_text("/n/a.org", NOTES, None, None, None)
        .unwrap();
    let store = Arc::new(store);
    let err = Registry::with_builtins()
        .call(
            &notes(&store),
            "read_node",
            &json!({"id": id_of(&store, "Book the KESTREL rooms")}),
        )
        .unwrap_err();
    assert!(err.to_string().contains(NO_SUCH_NODE), "{err}");
}
