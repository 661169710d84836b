//! Helpers of the store tests: ingest and look up, and comparable fingerprints of a state.

use org_agent::notes::Notes;
use org_agent::notes::Privacy;
use org_agent::store::{
    Archive, Config, Hash, IngestReport, NodeContent, NodeRef, Query, State, Store,
};
use std::path::Path;
use std::sync::Arc;

/// The configuration the store tests use unless they need another one.
pub fn config() -> Config {
    Config {
        snapshot_capacity: 20,
        ..Default::default()
    }
}

pub fn mem_store() -> Store {
    Store::in_memory(config())
}

/// A store in memory under `config` holding the demo notes `names` (of demo/notes).
pub fn demo_store(config: Config, names: &[&str]) -> Store {
    let store = Store::in_memory(config);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/notes");
    for name in names {
        let path = path_in(&dir, name);
        store
            .ingest_file(&path, true)
            .unwrap_or_else(|e| panic!("ingest {path}: {e}"));
    }
    store
}

/// `store` as the LLM sees it, under the default privacy rules.
pub fn notes(store: &Arc<Store>) -> Notes {
    Notes::new(store.clone(), Arc::new(Privacy::default()))
}

/// Ingest `text` as `file` with the file's own keywords, and return the report.
pub fn ingest(store: &Store, file: &str, text: &str) -> IngestReport {
    store
        .ingest_text(file, text, None, None, None)
        .unwrap_or_else(|e| panic!("ingest {file}: {e}"))
        .expect("an ingest without generation is never superseded")
}

/// Every node of `file`, in document order (the file node first).
pub fn nodes(store: &Store, file: &str) -> Vec<NodeRef> {
    store.query(&Query {
        file: Some(file.to_string()),
        ..Default::default()
    })
}

/// Titles of the headlines of `file`, in document order.
pub fn titles(store: &Store, file: &str) -> Vec<String> {
    nodes(store, file)
        .iter()
        .skip(1)
        .map(|r| r.node().content.title.to_string())
        .collect()
}

/// The node of `file` whose title is `title` (exactly one must exist).
pub fn by_title(store: &Store, file: &str, title: &str) -> NodeRef {
    let found: Vec<NodeRef> = nodes(store, file)
        .into_iter()
        .filter(|r| &*r.node().content.title == title)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one node titled {title:?} in {file}"
    );
    found.into_iter().next().expect("one node")
}

/// The id of the node titled `title`, in any file (the first one, in query order).
pub fn id_of(store: &Store, title: &str) -> String {
    store
        .query(&Query::default())
        .into_iter()
        .find(|r| &*r.node().content.title == title)
        .map(|r| r.node().id.to_string())
        .unwrap_or_else(|| panic!("no node titled {title:?}"))
}

/// Asserts that each of one file's nodes (all of them, in order) is addressed by the hash of
/// its content, and that the content lists the hashes of its children.
pub fn assert_hashes_follow_the_tree(all: &[NodeRef]) {
    for r in all {
        let n = r.node();
        assert_eq!(
            n.hash(),
            n.content.compute_hash().expect("every body reads"),
            "{:?}",
            n.content.title
        );
        let kids: Vec<Hash> = r
            .doc
            .children(r.index)
            .map(|c| all[c as usize].node().hash())
            .collect();
        assert_eq!(
            *n.content.children().expect("the children's hashes read"),
            *kids,
            "{:?}",
            n.content.title
        );
    }
}

pub fn ids(refs: &[NodeRef]) -> Vec<String> {
    refs.iter().map(|r| r.node().id.to_string()).collect()
}

pub fn hashes(refs: &[NodeRef]) -> Vec<Hash> {
    refs.iter().map(|r| r.node().hash()).collect()
}

/// Everything about one node, comparable.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeFp {
    pub id: String,
    pub hash: Hash,
    pub content: NodeContent,
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    pub begin: u32,
    pub end: u32,
    pub begin_pos: u32,
    pub end_pos: u32,
    pub inherited_tags: Vec<String>,
}

/// Everything about one file, comparable.
#[derive(Clone, Debug, PartialEq)]
pub struct FileFp {
    pub path: String,
    pub mtime: i64,
    pub size: u64,
    pub text_hash: Hash,
    pub file_tags: Vec<String>,
    pub nodes: Vec<NodeFp>,
    pub tag_index: Vec<(String, Vec<u32>)>,
    pub todo_index: Vec<(String, Vec<u32>)>,
}

/// Everything about a whole state, comparable.
#[derive(Clone, Debug, PartialEq)]
pub struct StateFp {
    pub files: Vec<FileFp>,
    pub ids: Vec<(String, Vec<(String, u32)>)>,
    pub versions: Vec<(Hash, NodeContent)>,
    pub history: Vec<(String, Vec<(Hash, i64)>)>,
}

pub fn file_fp(doc: &org_agent::store::FileDoc) -> FileFp {
    let mut tag_index: Vec<(String, Vec<u32>)> = doc
        .tag_index
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    tag_index.sort();
    let mut todo_index: Vec<(String, Vec<u32>)> = doc
        .todo_index
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    todo_index.sort();
    FileFp {
        path: doc.path.to_string(),
        mtime: doc.mtime,
        size: doc.size,
        text_hash: doc.text_hash,
        file_tags: doc.file_tags.clone(),
        nodes: doc
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeFp {
                id: n.id.to_string(),
                hash: n.hash(),
                content: (*n.content).clone(),
                parent: n.parent(),
                children: doc.children(i as u32).collect(),
                begin: n.begin,
                end: n.end,
                begin_pos: n.begin_pos,
                end_pos: n.end_pos,
                inherited_tags: n.inherited().iter().map(|t| t.to_string()).collect(),
            })
            .collect(),
        tag_index,
        todo_index,
    }
}

pub fn state_fp(state: &State, archive: &Archive) -> StateFp {
    let files = state.files.values().map(|d| file_fp(d)).collect();
    let mut ids: Vec<(String, Vec<(String, u32)>)> = state
        .ids_and_places()
        .map(|(id, locs)| {
            (
                id.to_string(),
                locs.iter().map(|l| (l.file.to_string(), l.index)).collect(),
            )
        })
        .collect();
    ids.sort();
    let mut versions: Vec<(Hash, NodeContent)> = archive
        .versions
        .iter()
        .map(|v| (v.0.hash, (*v.0).clone()))
        .collect();
    versions.sort_by_key(|(h, _)| *h);
    let mut history: Vec<(String, Vec<(Hash, i64)>)> = archive
        .history
        .iter()
        .map(|(id, h)| {
            let entries = h
                .iter()
                .map(|(c, t)| (c.compute_hash().expect("every body reads"), *t))
                .collect();
            (id.to_string(), entries)
        })
        .collect();
    history.sort();
    StateFp {
        files,
        ids,
        versions,
        history,
    }
}

/// Only the files (nodes, ids, hashes, positions): what re-ingesting the Org files rebuilds.
pub fn files_fp(state: &State) -> Vec<FileFp> {
    state.files.values().map(|d| file_fp(d)).collect()
}

pub fn store_fp(store: &Store) -> StateFp {
    let state = store.state();
    store.with_archive(|archive| state_fp(&state, archive))
}

/// Number of characters before byte `offset`, plus one: an Emacs buffer position.
pub fn char_pos(text: &str, offset: usize) -> u32 {
    text[..offset].chars().count() as u32 + 1
}

pub fn arc_contents(refs: &[NodeRef]) -> Vec<Arc<NodeContent>> {
    refs.iter().map(|r| r.node().content.clone()).collect()
}

/// The path of `name` inside `dir`, as the string the store keys files by.
pub fn path_in(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}
