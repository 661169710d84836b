//! Identity, Merkle hashes, version history, snapshots and rollback of the in-memory store.

use crate::support::store::*;
use org_agent::store::{Config, Hash, NodeRef, Store, StoreError};
use std::collections::HashSet;
use std::sync::Arc;

const F: &str = "/notes/a.org";

const TREE: &str = "\
#+TITLE: Tree
* A
a body
** A1
*** A1a
deep body
** A2
*** A2a
* B
** B1
";

/// Node indexes in `TREE`.
const FILE: usize = 0;
const A: usize = 1;
const A1: usize = 2;
const A1A: usize = 3;
const A2: usize = 4;
const A2A: usize = 5;
const B: usize = 6;
const B1: usize = 7;

// ---- IDs ----

#[test]
fn id_property_wins() {
    let store = mem_store();
    ingest(
        &store,
        F,
        "* A\n:PROPERTIES:\n:ID:   1F2E3D  \n:END:\n* B\n:PROPERTIES:\n:ID:\n:END:\n* C\n",
    );
    let all = nodes(&store, F);
    assert_eq!(&*all[1].node().id, "1F2E3D");
    // An empty :ID: is no id: the node gets a synthetic one.
    assert!(all[2].node().id.starts_with("oa-"), "{}", all[2].node().id);
    assert!(all[3].node().id.starts_with("oa-"));
    assert_eq!(store.node("1F2E3D").map(|r| r.index), Some(1));
    assert_eq!(
        store
            .node(&all[3].node().id)
            .map(|r| r.node().content.title.to_string()),
        Some("C".to_string())
    );
    assert!(store.node("no-such-id").is_none());
}

#[test]
fn synthetic_ids_are_deterministic() {
    let s1 = mem_store();
    let s2 = mem_store();
    ingest(&s1, F, TREE);
    ingest(&s2, F, TREE);
    let ids1 = ids(&nodes(&s1, F));
    assert_eq!(ids1, ids(&nodes(&s2, F)));
    // Edit and come back: the same ids again.
    ingest(&s1, F, &TREE.replace("deep body", "other"));
    ingest(&s1, F, TREE);
    assert_eq!(ids1, ids(&nodes(&s1, F)));
    let unique: HashSet<&String> = ids1.iter().collect();
    assert_eq!(unique.len(), ids1.len());
    assert!(ids1.iter().all(|id| id.starts_with("oa-")));
}

#[test]
fn synthetic_ids_survive_unrelated_edits() {
    let store = mem_store();
    ingest(&store, F, TREE);
    let before = ids(&nodes(&store, F));

    // A body edit elsewhere.
    ingest(
        &store,
        F,
        &TREE.replace("a body", "a longer body\nwith two lines"),
    );
    assert_eq!(ids(&nodes(&store, F)), before);

    // Retitling B changes the ids of B and its subtree only.
    ingest(&store, F, &TREE.replace("* B\n", "* Bee\n"));
    let after = ids(&nodes(&store, F));
    assert_eq!(after[..B], before[..B]);
    assert_ne!(after[B], before[B]);
    assert_ne!(after[B1], before[B1]);

    // A new headline with a new title between A and B: old ids stay.
    ingest(&store, F, &TREE.replace("* B\n", "* New\nnew\n* B\n"));
    let after = nodes(&store, F);
    let by: std::collections::HashMap<String, String> = after
        .iter()
        .map(|r| (r.node().content.title.to_string(), r.node().id.to_string()))
        .collect();
    for (i, t) in ["Tree", "A", "A1", "A1a", "A2", "A2a", "B", "B1"]
        .iter()
        .enumerate()
    {
        assert_eq!(by[*t], before[i], "id of {t}");
    }
}

#[test]
fn synthetic_ids_unique_for_same_titled_siblings() {
    let store = mem_store();
    ingest(
        &store,
        F,
        "* Same\n* Same\n* Same\n** Same\n* Other\n** Same\n** Same\n",
    );
    let all = ids(&nodes(&store, F));
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), all.len(), "{all:?}");
    assert_eq!(store.stats().ids_with_duplicates, 0);
    for id in &all {
        assert!(store.node(id).is_some());
    }
}

#[test]
fn synthetic_ids_never_shared_across_files() {
    let store = mem_store();
    ingest(&store, "/n/a.org", TREE);
    ingest(&store, "/n/b.org", TREE);
    ingest(&store, "/m/a.org", TREE);
    let a: HashSet<String> = ids(&nodes(&store, "/n/a.org")).into_iter().collect();
    let b: HashSet<String> = ids(&nodes(&store, "/n/b.org")).into_iter().collect();
    let c: HashSet<String> = ids(&nodes(&store, "/m/a.org")).into_iter().collect();
    assert_eq!(a.len(), 8);
    assert!(a.is_disjoint(&b));
    assert!(a.is_disjoint(&c));
    assert!(b.is_disjoint(&c));
    assert_eq!(store.stats().ids_with_duplicates, 0);
    // Same content, same hashes, though.
    assert_eq!(
        hashes(&nodes(&store, "/n/a.org")),
        hashes(&nodes(&store, "/n/b.org"))
    );
}

#[test]
fn explicit_id_in_two_files_is_a_duplicate() {
    let store = mem_store();
    let text = "* X\n:PROPERTIES:\n:ID: shared\n:END:\n";
    ingest(&store, "/n/a.org", text);
    ingest(&store, "/n/b.org", text);
    assert_eq!(store.stats().ids_with_duplicates, 1);
    assert_eq!(&*store.node("shared").unwrap().doc.path, "/n/a.org");
    assert!(store.remove_file("/n/a.org"));
    assert_eq!(store.stats().ids_with_duplicates, 0);
    assert_eq!(&*store.node("shared").unwrap().doc.path, "/n/b.org");
}

// ---- Merkle hashes ----

fn assert_changed_exactly(before: &[Hash], after: &[Hash], changed: &[usize], what: &str) {
    assert_eq!(before.len(), after.len());
    for i in 0..before.len() {
        if changed.contains(&i) {
            assert_ne!(before[i], after[i], "{what}: node {i} must change");
        } else {
            assert_eq!(before[i], after[i], "{what}: node {i} must not change");
        }
    }
}

#[test]
fn any_change_rehashes_the_node_and_its_ancestors_only() {
    let store = mem_store();
    ingest(&store, F, TREE);
    let base = hashes(&nodes(&store, F));
    let edits: Vec<(&str, String)> = vec![
        ("body", TREE.replace("deep body", "deep body!")),
        ("title", TREE.replace("*** A1a", "*** A1a renamed")),
        ("todo", TREE.replace("*** A1a", "*** TODO A1a")),
        ("priority", TREE.replace("*** A1a", "*** [#B] A1a")),
        ("tag", TREE.replace("*** A1a", "*** A1a :t:")),
        (
            "property",
            TREE.replace("*** A1a\n", "*** A1a\n:PROPERTIES:\n:K: v\n:END:\n"),
        ),
        (
            "planning",
            TREE.replace("*** A1a\n", "*** A1a\nDEADLINE: <2024-05-01 Wed>\n"),
        ),
        ("whitespace", TREE.replace("deep body\n", "deep body \n")),
    ];
    for (what, text) in edits {
        let s = mem_store();
        ingest(&s, F, &text);
        let after = hashes(&nodes(&s, F));
        assert_changed_exactly(&base, &after, &[A1A, A1, A, FILE], what);
    }
    // A change high up leaves the subtrees below and beside alone.
    let s = mem_store();
    ingest(&s, F, &TREE.replace("a body", "changed"));
    assert_changed_exactly(&base, &hashes(&nodes(&s, F)), &[A, FILE], "A body");
    let s = mem_store();
    ingest(&s, F, &TREE.replace("** B1", "** B1 :x:"));
    assert_changed_exactly(&base, &hashes(&nodes(&s, F)), &[B1, B, FILE], "B1 tag");
    // The file preamble is the file node's own.
    let s = mem_store();
    ingest(
        &s,
        F,
        &TREE.replace("#+TITLE: Tree\n", "#+TITLE: Tree\nmore\n"),
    );
    assert_changed_exactly(&base, &hashes(&nodes(&s, F)), &[FILE], "preamble");
}

#[test]
fn hashes_are_content_addresses_of_whole_subtrees() {
    let store = mem_store();
    ingest(&store, F, TREE);
    let all = nodes(&store, F);
    assert_hashes_follow_the_tree(&all);
    // Adding a child changes the parent's hash through its children list.
    let s = mem_store();
    ingest(&s, F, &TREE.replace("** B1\n", "** B1\n** B2\n"));
    let h = hashes(&nodes(&s, F));
    assert_ne!(h[B], all[B].node().hash());
    assert_eq!(h[B1], all[B1].node().hash());
    for i in [A, A1, A1A, A2, A2A] {
        assert_eq!(h[i], all[i].node().hash(), "node {i} is outside the edit");
    }
    // Moving a subtree keeps its hash: position is not content.
    let swapped =
        "#+TITLE: Tree\n* B\n** B1\n* A\na body\n** A1\n*** A1a\ndeep body\n** A2\n*** A2a\n";
    let s = mem_store();
    ingest(&s, F, swapped);
    assert_eq!(by_title(&s, F, "A").node().hash(), all[A].node().hash());
    assert_eq!(by_title(&s, F, "B").node().hash(), all[B].node().hash());
    assert_ne!(nodes(&s, F)[0].node().hash(), all[FILE].node().hash());
    assert_eq!(
        Hash::from_hex(&all[A].node().hash().to_hex()),
        Some(all[A].node().hash())
    );
    assert_eq!(Hash::from_hex("zz"), None);
}

// ---- History ----

#[test]
fn unchanged_text_adds_no_versions() {
    let store = mem_store();
    let first = ingest(&store, F, TREE);
    assert!(first.changed);
    // Eight nodes, all with distinct contents.
    assert_eq!(first.new_versions, 8);
    let stats = store.stats();
    assert_eq!(stats.versions, 8);
    let again = ingest(&store, F, TREE);
    assert!(!again.changed);
    assert_eq!(again.new_versions, 0);
    assert_eq!(again.nodes, 8);
    assert_eq!(store.stats(), stats);
    for id in ids(&nodes(&store, F)) {
        assert_eq!(store.history(&id).len(), 1);
    }
}

#[test]
fn editing_one_headline_versions_it_and_its_ancestors() {
    let store = mem_store();
    ingest(&store, F, TREE);
    let before = nodes(&store, F);
    let v0 = store.stats().versions;
    let r = ingest(&store, F, &TREE.replace("deep body", "deeper body"));
    assert!(r.changed);
    assert_eq!(r.new_versions, 4);
    assert_eq!(store.stats().versions, v0 + 4);
    let after = nodes(&store, F);
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(b.node().id, a.node().id);
        let expect = if [FILE, A, A1, A1A].contains(&i) {
            2
        } else {
            1
        };
        let hist = store.history(&a.node().id);
        assert_eq!(hist.len(), expect, "history of node {i}");
        assert_eq!(hist.last().unwrap().hash, a.node().hash());
        assert_eq!(hist[0].hash, b.node().hash());
    }
}

#[test]
fn history_lists_versions_oldest_first() {
    let store = mem_store();
    let v = |body: &str| format!("* H\n:PROPERTIES:\n:ID: h\n:END:\n{body}\n");
    ingest(&store, F, &v("one"));
    ingest(&store, F, &v("two"));
    ingest(&store, F, &v("three"));
    let hist = store.history("h");
    let bodies: Vec<String> = hist
        .iter()
        .map(|x| x.content.body().expect("body").into_owned())
        .collect();
    assert_eq!(bodies, ["one\n", "two\n", "three\n"]);
    for x in &hist {
        assert_eq!(x.hash, x.content.compute_hash().expect("every body reads"));
        assert!(x.time > 0);
    }
    assert!(hist.windows(2).all(|w| w[0].time <= w[1].time));
    // Going back to an old text: a new history entry, but no new stored version.
    let versions = store.stats().versions;
    let r = ingest(&store, F, &v("one"));
    assert!(r.changed);
    assert_eq!(r.new_versions, 0);
    assert_eq!(store.stats().versions, versions);
    let hist = store.history("h");
    assert_eq!(hist.len(), 4);
    assert_eq!(hist[3].hash, hist[0].hash);
    assert!(
        Arc::ptr_eq(&hist[3].content, &hist[0].content),
        "versions are stored once"
    );
    assert!(store.history("nope").is_empty());
}

// ---- Snapshots and rollback ----

fn snapshot_view(
    store: &Store,
) -> (
    StateFpFiles,
    Vec<Arc<org_agent::store::NodeContent>>,
    Vec<NodeRef>,
) {
    let refs = store.query(&Default::default());
    (files_fp(&store.state()), arc_contents(&refs), refs)
}

type StateFpFiles = Vec<FileFp>;

#[test]
fn rollback_restores_the_snapshot_sharing_contents() {
    let store = mem_store();
    ingest(&store, "/n/a.org", TREE);
    ingest(&store, "/n/b.org", "* Bee\n:PROPERTIES:\n:ID: bee\n:END:\n");
    let (fp0, arcs0, refs0) = snapshot_view(&store);
    let ids0: Vec<String> = ids(&refs0);
    assert_eq!(store.snapshot("before"), 0);
    assert_eq!(store.stats().snapshots, 1);

    ingest(&store, "/n/a.org", &TREE.replace("deep body", "changed"));
    ingest(&store, "/n/c.org", "* Sea\n");
    assert!(store.remove_file("/n/b.org"));
    assert!(store.node("bee").is_none());
    assert_ne!(files_fp(&store.state()), fp0);

    store.rollback(0).unwrap();
    let (fp1, arcs1, refs1) = snapshot_view(&store);
    assert_eq!(fp1, fp0);
    assert_eq!(ids(&refs1), ids0);
    assert_eq!(arcs0.len(), arcs1.len());
    for (a, b) in arcs0.iter().zip(&arcs1) {
        assert!(
            Arc::ptr_eq(a, b),
            "rollback shares node contents with the snapshot"
        );
    }
    for (a, b) in refs0.iter().zip(&refs1) {
        assert!(Arc::ptr_eq(&a.doc, &b.doc));
    }
    assert!(store.node("bee").is_some());
    assert!(nodes(&store, "/n/c.org").is_empty());
    // The current version of every node is the newest entry of its history.
    for r in &refs1 {
        assert_eq!(
            store.history(&r.node().id).last().unwrap().hash,
            r.node().hash()
        );
    }
    let snaps = store.snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].label, "before");
}

#[test]
fn snapshots_are_newest_first_and_bounded() {
    let store = Store::in_memory(Config {
        snapshot_capacity: 3,
        ..Default::default()
    });
    let mut fps = Vec::new();
    for i in 0..5 {
        ingest(&store, F, &format!("* H{i}\n"));
        fps.push(files_fp(&store.state()));
        store.snapshot(&format!("s{i}"));
    }
    let labels: Vec<String> = store.snapshots().into_iter().map(|s| s.label).collect();
    assert_eq!(labels, ["s4", "s3", "s2"]);
    assert!(matches!(store.rollback(3), Err(StoreError::NoSnapshot(3))));
    store.rollback(2).unwrap();
    assert_eq!(files_fp(&store.state()), fps[2]);
    assert_eq!(titles(&store, F), ["H2"]);
    store.rollback(0).unwrap();
    assert_eq!(titles(&store, F), ["H4"]);
}

#[test]
fn snapshot_ring_holds_the_configured_capacity() {
    let store = mem_store();
    for i in 0..25 {
        ingest(&store, F, &format!("* H{i}\n"));
        store.snapshot(&format!("s{i}"));
    }
    let snaps = store.snapshots();
    assert_eq!(snaps.len(), 20);
    assert_eq!(store.stats().snapshots, 20);
    assert_eq!(snaps[0].label, "s24");
    assert_eq!(snaps[19].label, "s5");
    assert!(store.rollback(19).is_ok());
    assert_eq!(titles(&store, F), ["H5"]);
    assert!(store.rollback(20).is_err());
    // Capacity zero still keeps the newest snapshot.
    let store = Store::in_memory(Config::default());
    store.snapshot("a");
    store.snapshot("b");
    assert_eq!(store.snapshots().len(), 1);
    assert_eq!(store.snapshots()[0].label, "b");
}

#[test]
fn snapshots_are_not_affected_by_later_ingests() {
    let store = mem_store();
    ingest(&store, F, TREE);
    store.snapshot("t");
    let snap_state = store.snapshots()[0].state.clone();
    let before = files_fp(&snap_state);
    ingest(&store, F, &TREE.replace("a body", "new"));
    ingest(&store, "/n/other.org", "* O\n");
    assert_eq!(files_fp(&snap_state), before);
    assert_eq!(snap_state.files.len(), 1);
    assert!(Arc::ptr_eq(&snap_state, &store.snapshots()[0].state));
}

#[test]
fn duplicated_id_history_grows_only_on_change() {
    let store = mem_store();
    let text = |other: &str| {
        format!(
            "* A\n:PROPERTIES:\n:ID: dup\n:END:\na\n* B\n:PROPERTIES:\n:ID: dup\n:END:\nb\n* C\n{other}\n"
        )
    };
    ingest(&store, F, &text("1"));
    let first = store.history("dup").len();
    // Only C changes: neither node with the id "dup" did.
    ingest(&store, F, &text("2"));
    ingest(&store, F, &text("3"));
    assert_eq!(store.history("dup").len(), first);

    let store = mem_store();
    let a = "* A\n:PROPERTIES:\n:ID: dup\n:END:\na\n";
    ingest(&store, "/n/a.org", a);
    ingest(
        &store,
        "/n/b.org",
        "* B\n:PROPERTIES:\n:ID: dup\n:END:\nb\n",
    );
    let before = store.history("dup").len();
    ingest(&store, "/n/a.org", &format!("{a}* Unrelated\n"));
    assert_eq!(store.history("dup").len(), before);
}
