//! The object store: Org headlines as content-addressed nodes, with history, snapshots,
//! persistence and queries. Plain Rust; the Emacs skin lives in `src/emacs/`.
//!
//! Concurrency: the current [`State`] is an immutable value behind an `Arc`. Readers clone the
//! `Arc` (a pointer copy under a lock) and query without locks. Writers are serialised by
//! `commit_lock`. An ingest links its parsed documents into the current state in place when
//! no reader holds it, holding the readers' lock only for that (see
//! `Store::change_in_place`); a held state is copied first (`imbl` maps, `Arc`ed file
//! documents and node contents share structure) and stays as it was. Disk writes go to the
//! log writer thread, so no lock is ever held across I/O.

pub mod body;
pub mod date;
pub mod error;
pub mod filename;
pub mod links;
pub mod node;
pub mod parse;
pub mod persist;
pub mod query;
pub mod text;
pub mod todo;
pub mod vectors;

pub use error::{Result, StoreError};
pub use node::{Hash, Node, NodeContent, NodeKind, Planning, PlanningTimes, Property, TodoType};
pub use parse::Dialect;
pub use query::{NodeRef, Query};
pub use todo::TodoKeywords;

use parking_lot::Mutex;
use persist::{FileEntry, FileRecord, LogWriter, Record};
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// One ingested file: its nodes in document order (index 0 is the file node) and indexes.
#[derive(Debug)]
pub struct FileDoc {
    pub path: Arc<str>,
    pub mtime: i64,
    pub size: u64,
    pub text_hash: Hash,
    /// Digest of the settings the text was parsed with.
    pub settings: Hash,
    pub file_tags: Vec<String>,
    pub nodes: Vec<Node>,
    /// Tag (own or inherited) → node indexes, in document order.
    pub tag_index: HashMap<String, Vec<u32>>,
    /// TODO keyword → node indexes, in document order.
    pub todo_index: HashMap<String, Vec<u32>>,
    /// The `id:` and `file:` links written in the file, in document order.
    pub links: Vec<links::Link>,
}

impl FileDoc {
    /// Whether `text` is exactly the text this version of the file was parsed from (with
    /// the same settings): a copy of the file under another name.
    pub fn is_text(&self, text: &str) -> bool {
        self.size == text.len() as u64 && text_digest(text, &self.settings) == self.text_hash
    }

    fn new(
        path: Arc<str>,
        mtime: i64,
        size: u64,
        text_hash: Hash,
        settings: Hash,
        file_tags: Vec<String>,
        nodes: Vec<Node>,
    ) -> FileDoc {
        let mut tag_index: HashMap<String, Vec<u32>> = HashMap::default();
        let mut todo_index: HashMap<String, Vec<u32>> = HashMap::default();
        for (i, n) in nodes.iter().enumerate() {
            for t in node::distinct_tags(n.content.tags.iter().chain(n.inherited_tags.iter())) {
                match tag_index.get_mut(t) {
                    Some(at) => at.push(i as u32),
                    None => {
                        tag_index.insert(t.to_string(), vec![i as u32]);
                    }
                }
            }
            if let Some(k) = &n.content.todo {
                todo_index.entry(k.to_string()).or_default().push(i as u32);
            }
        }
        let links = links::index(&nodes);
        FileDoc {
            path,
            mtime,
            size,
            text_hash,
            settings,
            file_tags,
            nodes,
            tag_index,
            todo_index,
            links,
        }
    }

    /// The indexes of the children of node `index`, in document order.
    pub fn children(&self, index: u32) -> node::Children<'_> {
        node::children(&self.nodes, index)
    }

    /// Whether node `index` has children.
    pub fn has_children(&self, index: u32) -> bool {
        node::has_children(&self.nodes, index)
    }

    /// One past the last index of node `index`'s subtree.
    pub fn subtree_end(&self, index: u32) -> u32 {
        node::subtree_end(&self.nodes, index)
    }

    /// The record of this document, owned: what reading the log gives back.
    #[cfg(test)]
    fn record(&self) -> FileRecord {
        FileRecord {
            path: self.path.to_string(),
            mtime: self.mtime,
            size: self.size,
            text_hash: self.text_hash,
            settings: self.settings,
            file_tags: self.file_tags.clone(),
            nodes: self
                .nodes
                .iter()
                .map(|n| persist::Placement {
                    id: n.id.to_string(),
                    hash: n.hash(),
                    parent: n.parent(),
                    begin: n.begin,
                    end: n.end,
                    begin_pos: n.begin_pos,
                    end_pos: n.end_pos,
                    inherited_tags: n.inherited_tags.to_vec(),
                })
                .collect(),
        }
    }

    /// Rebuild a document from its record and the stored versions.
    fn from_record(rec: FileRecord, archive: &Archive) -> Result<FileDoc, String> {
        let mut nodes: Vec<Node> = Vec::with_capacity(rec.nodes.len());
        // The log repeats each node's inherited tags; in memory, nodes with the same ones
        // share one slice.
        let mut tag_sets: rustc_hash::FxHashSet<node::TagSet> = Default::default();
        for p in rec.nodes {
            let content = match archive.versions.get(&p.hash) {
                Some(StoredVersion(content)) => content.clone(),
                None => {
                    return Err(format!(
                        "file record for {} names an unknown node version",
                        rec.path
                    ))
                }
            };
            let inherited_tags = match tag_sets.get(&p.inherited_tags) {
                Some(shared) => shared.clone(),
                None => {
                    let shared = Arc::new(p.inherited_tags);
                    tag_sets.insert(shared.clone());
                    shared
                }
            };
            nodes.push(Node {
                id: archive.intern(&p.id),
                content,
                parent: p.parent.unwrap_or(node::NO_PARENT),
                subtree_end: 0,
                begin: p.begin,
                end: p.end,
                begin_pos: p.begin_pos,
                end_pos: p.end_pos,
                inherited_tags,
            });
        }
        if !node::link_subtrees(&mut nodes) {
            return Err(format!(
                "file record for {}: its nodes are not an outline in document order",
                rec.path
            ));
        }
        Ok(FileDoc::new(
            Arc::from(rec.path.as_str()),
            rec.mtime,
            rec.size,
            rec.text_hash,
            rec.settings,
            rec.file_tags,
            nodes,
        ))
    }
}

/// Where a node with a given id sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: FileKey,
    pub index: u32,
}

/// A file's path as the id map holds it: a thin pointer to the path's `Arc`, made once per
/// file when the map is built or a commit links the file. In every location it is 8 bytes
/// where the path's own `Arc<str>` was 16, so a place fits the map's 16-byte value and, at
/// 100k ids, the map's leaves a smaller block. Reads, compares and orders as the path.
#[derive(Clone)]
pub struct FileKey(Arc<Arc<str>>);

impl FileKey {
    pub fn new(path: &Arc<str>) -> FileKey {
        FileKey(Arc::new(path.clone()))
    }
}

impl std::ops::Deref for FileKey {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq for FileKey {
    fn eq(&self, other: &FileKey) -> bool {
        **self == **other
    }
}

impl Eq for FileKey {}

impl PartialEq<Arc<str>> for FileKey {
    fn eq(&self, other: &Arc<str>) -> bool {
        **self == **other
    }
}

impl PartialOrd for FileKey {
    fn partial_cmp(&self, other: &FileKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FileKey {
    fn cmp(&self, other: &FileKey) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl std::fmt::Debug for FileKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// One version of a node in its history.
#[derive(Clone, Debug)]
pub struct Version {
    pub hash: Hash,
    /// Seconds since the epoch when this version was first seen.
    pub time: i64,
    pub content: Arc<NodeContent>,
}

/// Where the nodes with one id sit: almost always one place.
#[derive(Clone, Debug)]
pub enum IdLocs {
    One(Loc),
    Many(Arc<Vec<Loc>>),
}

impl IdLocs {
    pub fn first(&self) -> &Loc {
        match self {
            IdLocs::One(l) => l,
            IdLocs::Many(v) => &v[0],
        }
    }

    pub fn len(&self) -> usize {
        match self {
            IdLocs::One(_) => 1,
            IdLocs::Many(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn iter(&self) -> impl Iterator<Item = &Loc> {
        match self {
            IdLocs::One(l) => std::slice::from_ref(l).iter(),
            IdLocs::Many(v) => v.iter(),
        }
    }
}

/// Every node version ever seen and each id's history. Append-only, so it is shared by all
/// states and snapshots instead of being part of them.
#[derive(Default)]
pub struct Archive {
    pub versions: Versions,
    /// Each id's versions, oldest first, with the time each was first seen. The key is the
    /// same `Arc` as the nodes' ids, and each version the same `Arc` as in `versions`: an
    /// entry is 16 bytes where a hash and a time were 40.
    pub history: HashMap<Arc<str>, History>,
}

/// One id's versions, oldest first, each with the time it was first seen. Almost always
/// one: held in the table then (16 bytes, like the boxed slice it was, but with no
/// allocation: 1.6 MB at 100k ids); more are boxed, which costs a second indirection only
/// to the few ids that changed.
#[derive(Clone, Debug)]
pub enum History {
    One((Arc<NodeContent>, i64)),
    Many(Box<Vec<(Arc<NodeContent>, i64)>>),
}

impl History {
    fn new(version: Arc<NodeContent>, time: i64) -> History {
        History::One((version, time))
    }

    fn as_slice(&self) -> &[(Arc<NodeContent>, i64)] {
        match self {
            History::One(entry) => std::slice::from_ref(entry),
            History::Many(entries) => entries,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, (Arc<NodeContent>, i64)> {
        self.as_slice().iter()
    }

    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn last(&self) -> Option<&(Arc<NodeContent>, i64)> {
        self.as_slice().last()
    }

    fn push(&mut self, entry: (Arc<NodeContent>, i64)) {
        match self {
            History::Many(entries) => entries.push(entry),
            History::One(first) => {
                let first = first.clone();
                *self = History::Many(Box::new(vec![first, entry]));
            }
        }
    }
}

impl Archive {
    /// `id` as the `Arc` the history already holds, so each id is in memory once.
    fn intern(&self, id: &str) -> Arc<str> {
        match self.history.get_key_value(id) {
            Some((k, _)) => k.clone(),
            None => Arc::from(id),
        }
    }

    /// Make `nodes` share what the archive already holds (a fresh parse allocates its own):
    /// the versions, so the unchanged headlines of a re-ingested file are not in memory
    /// twice, and the ids, which an `:ID:` property's value shares too.
    fn share_with(&self, nodes: &mut [Node]) {
        for n in nodes {
            let stored = self.versions.get(&n.hash());
            if let Some(StoredVersion(version)) = stored {
                if !Arc::ptr_eq(version, &n.content) {
                    n.content = version.clone();
                }
            }
            if let Some((k, _)) = self.history.get_key_value(&*n.id) {
                if !Arc::ptr_eq(k, &n.id) {
                    if stored.is_none() {
                        if let Some(content) = Arc::get_mut(&mut n.content) {
                            content.share_id_value(k);
                        }
                    }
                    n.id = k.clone();
                }
            }
        }
    }

    /// The `Arc` to key a first history entry of `id` by: the `:ID:` value of `version` when
    /// it is that id, so the two are one allocation.
    fn history_key(id: &str, version: &NodeContent) -> Arc<str> {
        match version.id_value() {
            Some(value) if **value == *id => value.clone(),
            _ => Arc::from(id),
        }
    }

    /// Record the versions and history of `doc`, given the file's previous document.
    fn add(&mut self, doc: &FileDoc, old: Option<&FileDoc>, time: i64, records: &mut Vec<Record>) {
        // What each (id, occurrence) was in this file before: a node's history grows only
        // when it changed here, so headlines sharing an :ID: do not push each other's
        // versions on every ingest.
        let mut before: HashMap<(&str, u32), Hash> = HashMap::default();
        if let Some(old) = old {
            let mut seen: HashMap<&str, u32> = HashMap::default();
            for n in &old.nodes {
                let k = seen.entry(&n.id).or_insert(0);
                before.insert((&n.id, *k), n.hash());
                *k += 1;
            }
        }
        let mut seen: HashMap<&str, u32> = HashMap::default();
        let first_time = old.is_none();
        for n in &doc.nodes {
            let version = match self.versions.get(&n.hash()) {
                Some(stored) => stored.0.clone(),
                None => {
                    records.push(Record::Version(n.hash(), n.content.clone()));
                    self.versions.insert(StoredVersion(n.content.clone()));
                    n.content.clone()
                }
            };
            let changed_here = first_time || {
                let k = seen.entry(&n.id).or_insert(0);
                *k += 1;
                before.get(&(&*n.id, *k - 1)) != Some(&n.hash())
            };
            if !changed_here {
                continue;
            }
            // `versions` holds one `Arc` per hash, so the same version is the same pointer.
            let pushed = match self.history.get_mut(&*n.id) {
                Some(hist) if hist.last().is_some_and(|(c, _)| Arc::ptr_eq(c, &version)) => false,
                Some(hist) => {
                    hist.push((version, time));
                    true
                }
                None => {
                    self.history
                        .insert(n.id.clone(), History::new(version, time));
                    true
                }
            };
            if pushed {
                records.push(Record::History {
                    id: n.id.to_string(),
                    hash: n.hash(),
                    time,
                });
            }
        }
    }

    fn records(&self, out: &mut Vec<Record>) {
        out.extend(
            self.versions
                .iter()
                .map(|StoredVersion(c)| Record::Version(c.hash, c.clone())),
        );
        for (id, hist) in self.history.iter() {
            for (content, time) in hist.iter() {
                let stored = self.versions.get(&content.hash);
                if stored.is_some_and(|StoredVersion(c)| Arc::ptr_eq(c, content)) {
                    out.push(Record::History {
                        id: id.to_string(),
                        hash: content.hash,
                        time: *time,
                    });
                }
            }
        }
    }
}

/// A version in the archive's table, found by its hash: the table needs no key beside the
/// content, which holds its hash (32 bytes a version less than a map from hash).
#[derive(Clone, Debug)]
pub struct StoredVersion(pub Arc<NodeContent>);

impl std::hash::Hash for StoredVersion {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As `Hash` hashes itself, so that lookups by `&Hash` (`Borrow`) agree.
        self.0.hash.hash(state);
    }
}

impl PartialEq for StoredVersion {
    fn eq(&self, other: &StoredVersion) -> bool {
        self.0.hash == other.0.hash
    }
}

impl Eq for StoredVersion {}

impl std::borrow::Borrow<Hash> for StoredVersion {
    fn borrow(&self) -> &Hash {
        &self.0.hash
    }
}

/// Every version the store has seen, by hash.
pub type Versions = rustc_hash::FxHashSet<StoredVersion>;

/// The files of the store at one moment. Cloning is O(1) and shares everything.
#[derive(Clone, Default)]
pub struct State {
    pub files: Files,
    /// Where each id sits: read it with [`State::ids`].
    ids: IdIndex,
}

/// The files of a state, by path.
pub type Files = imbl::OrdMap<Arc<str>, Arc<FileDoc>>;

/// Where each id sits. A B-tree rather than a hash trie: at 100,000 ids the trie took about
/// 500 bytes per entry, the tree takes about a tenth of that.
pub type IdMap = imbl::OrdMap<Arc<str>, IdLocs>;

/// A state's [`IdMap`], ready or still being built. Building it for every id after loading
/// was a quarter of opening the store (about 50 ms at 100,000 ids, mostly B-tree inserts), so
/// opening hands it to a thread of its own and returns; the first reader waits for the rest.
/// Every state a commit makes has it ready.
#[derive(Clone)]
struct IdIndex(Arc<IdIndexInner>);

struct IdIndexInner {
    ready: std::sync::OnceLock<IdMap>,
    /// The build under way, and the files it reads, to build them here if the thread failed.
    building: Mutex<Option<(std::thread::JoinHandle<IdMap>, Files)>>,
}

impl Default for IdIndex {
    fn default() -> IdIndex {
        IdIndex::ready(IdMap::new())
    }
}

impl IdIndex {
    fn ready(map: IdMap) -> IdIndex {
        IdIndex(Arc::new(IdIndexInner {
            ready: std::sync::OnceLock::from(map),
            building: Mutex::new(None),
        }))
    }

    /// The index of `files`, built on a thread of its own (here, if none can start).
    fn build_in_background(files: Files) -> IdIndex {
        let reading = files.clone();
        let spawned = std::thread::Builder::new()
            .name("org-agent-ids".into())
            .spawn(move || {
                crate::block_sigpipe();
                let map = build_id_map(&reading);
                // The sort's scratch space is this thread's to hand back, as `open` does
                // with what loading freed.
                Store::release_freed_memory();
                map
            });
        match spawned {
            Ok(handle) => IdIndex(Arc::new(IdIndexInner {
                ready: std::sync::OnceLock::new(),
                building: Mutex::new(Some((handle, files))),
            })),
            Err(_) => IdIndex::ready(build_id_map(&files)),
        }
    }

    fn get(&self) -> &IdMap {
        if let Some(map) = self.0.ready.get() {
            return map;
        }
        let mut building = self.0.building.lock();
        if let Some((handle, files)) = building.take() {
            let map = handle.join().unwrap_or_else(|_| build_id_map(&files));
            let _ = self.0.ready.set(map);
        }
        drop(building);
        // Set above, or by the reader that held the lock before us.
        self.0.ready.get_or_init(IdMap::new)
    }
}

/// Index every node's id from scratch (sorted once, then built in key order).
fn build_id_map(files: &Files) -> IdMap {
    let mut all: Vec<(Arc<str>, Loc)> =
        Vec::with_capacity(files.values().map(|f| f.nodes.len()).sum());
    for (path, doc) in files.iter() {
        let file = FileKey::new(path);
        for (i, n) in doc.nodes.iter().enumerate() {
            let loc = Loc {
                file: file.clone(),
                index: i as u32,
            };
            all.push((n.id.clone(), loc));
        }
    }
    // Stable: an id's places stay in (file, position) order, as `add_loc` keeps them.
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let mut rest = all.into_iter().peekable();
    let entries = std::iter::from_fn(|| {
        let (id, loc) = rest.next()?;
        if rest.peek().is_some_and(|(next, _)| *next == id) {
            let mut locs = vec![loc];
            while let Some((_, l)) = rest.next_if(|(next, _)| *next == id) {
                locs.push(l);
            }
            Some((id, IdLocs::Many(Arc::new(locs))))
        } else {
            Some((id, IdLocs::One(loc)))
        }
    });
    fill_in_two_passes(entries)
}

/// Keys a B-tree leaf of `imbl` holds at most; a leaf that gets one more splits at its middle.
const ID_MAP_LEAF: usize = 64;

/// `entries`, sorted by key, as a map whose leaves are full rather than half full.
///
/// Inserted in order, each leaf of `imbl`'s B-tree splits in two halves when it overflows,
/// and the left half never gets another key: every leaf ends half full, and each leaf is a
/// fixed-size block (~3 KB), so at 100k ids half the index was empty slots. Here the first
/// pass inserts, of each run of `ID_MAP_LEAF + 1` keys, every other one of the first
/// `ID_MAP_LEAF` and then the last: the splits leave leaves of `ID_MAP_LEAF / 2` keys with
/// that last key between them. The second pass inserts the keys skipped, each into a leaf
/// with room for it, so leaves end full. Only the layout depends on how `imbl` splits; the
/// map is the same either way.
fn fill_in_two_passes(entries: impl Iterator<Item = (Arc<str>, IdLocs)>) -> IdMap {
    let in_first_pass = |i: usize| {
        let at = i % (ID_MAP_LEAF + 1);
        at == ID_MAP_LEAF || at.is_multiple_of(2)
    };
    let mut ids = IdMap::new();
    let mut skipped = Vec::with_capacity(entries.size_hint().0 / 2);
    for (i, entry) in entries.into_iter().enumerate() {
        if in_first_pass(i) {
            ids.insert(entry.0, entry.1);
        } else {
            skipped.push(entry);
        }
    }
    for (id, locs) in skipped {
        ids.insert(id, locs);
    }
    ids
}

/// What making a document its file's current one changes in the id index: the (id,
/// position) pairs the file's previous document had and the new one lacks, and the reverse.
/// So re-ingesting an edited file costs what changed, not the file's size; and a commit
/// works this out before it holds up readers (see `Store::commit_parsed`).
struct IdChanges {
    gone: Vec<(Arc<str>, u32)>,
    new: Vec<(Arc<str>, u32)>,
}

impl IdChanges {
    fn between(old: Option<&FileDoc>, doc: &FileDoc) -> IdChanges {
        let pairs = |d: &FileDoc| -> std::collections::HashSet<(Arc<str>, u32)> {
            d.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.clone(), i as u32))
                .collect()
        };
        let Some(old) = old else {
            // A file seen for the first time: nothing to diff.
            let new = doc.nodes.iter().enumerate();
            return IdChanges {
                gone: Vec::new(),
                new: new.map(|(i, n)| (n.id.clone(), i as u32)).collect(),
            };
        };
        let (old_pairs, new_pairs) = (pairs(old), pairs(doc));
        IdChanges {
            gone: old_pairs.difference(&new_pairs).cloned().collect(),
            new: new_pairs.difference(&old_pairs).cloned().collect(),
        }
    }
}

impl State {
    /// Where each id sits (waiting, just after the store opened, for the index to be built).
    pub fn ids(&self) -> &IdMap {
        self.ids.get()
    }

    /// The id index, to change: this state's own copy (an O(1) clone of a shared one).
    fn ids_mut(&mut self) -> &mut IdMap {
        if Arc::get_mut(&mut self.ids.0).is_none() || self.ids.0.ready.get().is_none() {
            self.ids = IdIndex::ready(self.ids.get().clone());
        }
        let inner = Arc::get_mut(&mut self.ids.0).expect("a fresh index is not shared");
        inner.ready.get_mut().expect("a fresh index is ready")
    }

    pub fn node_count(&self) -> usize {
        self.files.values().map(|f| f.nodes.len()).sum()
    }

    /// The node `id`: the first (in store order) of those carrying it, or with `ID#N` the
    /// N-th of several sharing the `:ID:` `ID` (how a duplicated id's copies are addressed;
    /// an id really written with a `#` is found as written first).
    pub fn node(&self, id: &str) -> Option<NodeRef> {
        let ids = self.ids();
        let loc = match ids.get(id) {
            Some(locs) => locs.first().clone(),
            None => {
                let (base, n) = id.rsplit_once('#')?;
                let n: usize = n.parse().ok().filter(|&n| n >= 2)?;
                ids.get(base)?.iter().nth(n - 1)?.clone()
            }
        };
        let doc = self.files.get(&*loc.file)?.clone();
        ((loc.index as usize) < doc.nodes.len()).then_some(NodeRef {
            doc,
            index: loc.index,
        })
    }

    fn set_file(
        &mut self,
        doc: Arc<FileDoc>,
        time: i64,
        archive: &mut Archive,
        records: &mut Vec<Record>,
    ) {
        let old = self.files.get(&doc.path).cloned();
        archive.add(&doc, old.as_deref(), time, records);
        let changes = IdChanges::between(old.as_deref(), &doc);
        self.link_file(doc, changes);
    }

    /// Make `doc` the file's current document, with `changes` (worked out against the
    /// document it replaces) applied to the id index. Returns the document replaced.
    fn link_file(&mut self, doc: Arc<FileDoc>, changes: IdChanges) -> Option<Arc<FileDoc>> {
        let file = FileKey::new(&doc.path);
        for (id, index) in &changes.gone {
            self.remove_loc(id, |l| l.file == doc.path && l.index == *index);
        }
        for (id, index) in changes.new {
            let loc = Loc {
                file: file.clone(),
                index,
            };
            self.add_loc(id, loc);
        }
        self.files.insert(doc.path.clone(), doc)
    }

    fn add_loc(&mut self, id: Arc<str>, loc: Loc) {
        let ids = self.ids_mut();
        match ids.get_mut(&id) {
            None => {
                ids.insert(id, IdLocs::One(loc));
            }
            Some(entry) => {
                let mut all: Vec<Loc> = entry.iter().cloned().collect();
                all.push(loc);
                // Keep a stable order (file, position) so `node` does not depend on the order
                // files were ingested in.
                all.sort_by(|a, b| (&a.file, a.index).cmp(&(&b.file, b.index)));
                *entry = IdLocs::Many(Arc::new(all));
            }
        }
    }

    fn remove_loc(&mut self, id: &Arc<str>, gone: impl Fn(&Loc) -> bool) {
        let ids = self.ids_mut();
        let Some(entry) = ids.get(id) else {
            return;
        };
        let mut rest: Vec<Loc> = entry.iter().filter(|l| !gone(l)).cloned().collect();
        match rest.len() {
            0 => {
                ids.remove(id);
            }
            1 => {
                if let Some(l) = rest.pop() {
                    ids.insert(id.clone(), IdLocs::One(l));
                }
            }
            n if n == entry.len() => {}
            _ => {
                ids.insert(id.clone(), IdLocs::Many(Arc::new(rest)));
            }
        }
    }

    fn unlink_ids(&mut self, path: &Arc<str>) {
        let Some(old) = self.files.get(path).cloned() else {
            return;
        };
        for n in &old.nodes {
            self.remove_loc(&n.id, |l| l.file == *path);
        }
    }

    fn remove_file(&mut self, path: &Arc<str>) -> bool {
        self.unlink_ids(path);
        self.files.remove(path).is_some()
    }

    /// Index every node's id once all records are loaded (not file by file as they are
    /// replayed), on a thread of its own.
    fn index_ids_in_background(&mut self) {
        self.ids = IdIndex::build_in_background(self.files.clone());
    }

    /// Apply one persisted record while loading. Ids are not indexed here: call
    /// [`State::index_ids_in_background`] once all records are in.
    fn replay(&mut self, rec: Record, archive: &mut Archive) -> std::result::Result<(), String> {
        match rec {
            Record::Version(hash, mut content) => {
                // A later version of an id: its `:ID:` value becomes the id's allocation.
                if let Some(id) = content.id_value() {
                    if let Some((k, _)) = archive.history.get_key_value(&**id) {
                        let k = k.clone();
                        if let Some(c) = Arc::get_mut(&mut content) {
                            c.share_id_value(&k);
                        }
                    }
                }
                debug_assert_eq!(content.hash, hash, "a version record is read with its hash");
                // A version written twice keeps the `Arc` histories already hold.
                archive.versions.insert(StoredVersion(content));
            }
            Record::History { id, hash, time } => {
                // A version the log never wrote cannot be shown; such an entry is dropped, as
                // reading the history always did.
                let Some(version) = archive.versions.get(&hash).map(|v| v.0.clone()) else {
                    return Ok(());
                };
                match archive.history.get_mut(id.as_str()) {
                    Some(hist) => hist.push((version, time)),
                    None => {
                        let key = Archive::history_key(&id, &version);
                        archive.history.insert(key, History::new(version, time));
                    }
                }
            }
            Record::RemoveFile(path) => {
                self.files.remove(path.as_str());
            }
            Record::File(FileEntry::Read(rec)) => {
                let doc = FileDoc::from_record(rec, archive)?;
                self.files.insert(doc.path.clone(), Arc::new(doc));
            }
            // Not what decoding makes, but the same file.
            Record::File(FileEntry::Doc(doc)) => {
                self.files.insert(doc.path.clone(), doc);
            }
        }
        Ok(())
    }

    /// Every live record, for compaction.
    fn records(&self, archive: &Archive) -> Vec<Record> {
        let mut out = Vec::new();
        archive.records(&mut out);
        for doc in self.files.values() {
            out.push(Record::File(FileEntry::Doc(doc.clone())));
        }
        out
    }
}

/// A published state's records, waiting to be encoded and handed to the log writer.
#[must_use = "a commit that is not written leaves its changes out of the log"]
struct Commit<'s> {
    ticket: Option<(&'s LogWriter, persist::Ticket<'s>)>,
    records: Vec<Record>,
}

impl Commit<'_> {
    fn write(self) {
        if let Some((writer, ticket)) = self.ticket {
            let bytes = if self.records.is_empty() {
                Vec::new()
            } else {
                let mut bytes = writer.batch_buffer();
                if let Err(e) = persist::append_batch(&self.records, &mut bytes) {
                    writer.report_error(format!(
                        "writing {}: a commit's records cannot be encoded, so it is not in \
                         the log: {e}",
                        writer.path.display()
                    ));
                }
                bytes
            };
            writer.append(ticket, bytes);
        }
    }
}

/// A saved state, for rollback.
#[derive(Clone)]
pub struct Snapshot {
    pub time: i64,
    pub label: String,
    pub state: Arc<State>,
}

/// Settings that shape how text becomes nodes.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub default_todo: TodoKeywords,
    pub dialect: Dialect,
    pub no_inherit_tags: Vec<String>,
    pub snapshot_capacity: usize,
    /// `org-inlinetask-min-level` while org-inlinetask is loaded (see `ParseOptions`).
    pub inlinetask_min_level: Option<u32>,
}

/// What one ingest did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestReport {
    pub file: String,
    pub nodes: usize,
    /// False when the text was the same as what the store had (nothing written).
    pub changed: bool,
    pub new_versions: usize,
}

impl IngestReport {
    fn unchanged(file: &str, nodes: usize) -> IngestReport {
        IngestReport {
            file: file.to_string(),
            nodes,
            changed: false,
            new_versions: 0,
        }
    }

    /// The report of an ingest not stored: a newer ingest or a removal of the file was
    /// requested while it was read, and that one decides what the store holds.
    fn superseded(file: &str) -> IngestReport {
        IngestReport::unchanged(file, 0)
    }
}

/// A directory ingest commits the files a worker parsed once they hold this many nodes
/// (or [`COMMIT_GROUP_FILES`] files): few enough that a group's documents wait in memory
/// only briefly, and that the last group, committed after all parsing, adds little. At
/// 16,384 the memex's directory ingest took a fifth longer.
const COMMIT_GROUP_NODES: usize = 4096;
const COMMIT_GROUP_FILES: usize = 256;

/// An ingest read and parsed, before its commit.
enum Prepared {
    /// The store has this text (or file) already.
    Unchanged(IngestReport),
    Parsed(Parsed),
}

/// A file's new document, to commit unless a newer ingest of the file was requested since
/// `generation` was taken.
struct Parsed {
    doc: Arc<FileDoc>,
    generation: Option<u64>,
}

/// What opening the store found.
#[derive(Clone, Debug, Default)]
pub struct OpenReport {
    pub files: usize,
    pub nodes: usize,
    /// Set when the on-disk store could not be used and was set aside; the caller should
    /// re-ingest the Org files.
    pub rebuilt: Option<String>,
    /// Where the unusable log was moved.
    pub set_aside: Option<PathBuf>,
    /// The log in use; `None` when none could be opened and the store is in memory only.
    pub log: Option<PathBuf>,
    /// A torn last write (from a crash) was dropped.
    pub torn_tail: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub files: usize,
    pub nodes: usize,
    pub headlines: usize,
    pub versions: usize,
    pub ids_with_duplicates: usize,
    pub bytes_on_disk: u64,
    pub snapshots: usize,
    pub path: Option<String>,
    pub write_error: Option<String>,
}

pub struct Store {
    current: Mutex<Arc<State>>,
    archive: Mutex<Archive>,
    /// Serialises every change of `current` (and of the archive, beside it). Taken before
    /// any other lock of the store; `current`, `archive` and `generations` are never held
    /// together, so a reader that holds one may take another.
    commit_lock: Mutex<()>,
    snapshots: Mutex<VecDeque<Snapshot>>,
    writer: Option<LogWriter>,
    config: Mutex<Config>,
    /// The newest ingest generation requested per file: older results are dropped.
    generations: Mutex<HashMap<String, u64>>,
    next_generation: std::sync::atomic::AtomicU64,
    /// Held by a directory ingest for its whole run (see [`Store::ingest_directories`]).
    directory_ingest: Mutex<()>,
    /// Set when the store is being closed ([`Store::mark_closed`]).
    closed: std::sync::atomic::AtomicBool,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Digest of the settings text is parsed with: the same text parses differently under other
/// keywords or another Org dialect.
fn settings_digest(todo: Option<&TodoKeywords>, config: &Config) -> Hash {
    let mut h = Sha256::new();
    h.update(b"org-agent/settings/1\0");
    h.update([todo.is_some() as u8]);
    let kw = todo.unwrap_or(&config.default_todo);
    for k in kw
        .todo
        .iter()
        .chain(std::iter::once(&"|".to_string()))
        .chain(kw.done.iter())
    {
        h.update(k.as_bytes());
        h.update([0]);
    }
    h.update([config.dialect as u8]);
    if let Some(level) = config.inlinetask_min_level {
        h.update(b"inlinetask");
        h.update(level.to_le_bytes());
    }
    for t in &config.no_inherit_tags {
        h.update(t.as_bytes());
        h.update([1]);
    }
    Hash(h.finalize().into())
}

fn text_digest(text: &str, settings: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(b"org-agent/text/1\0");
    h.update(settings.0);
    h.update((text.len() as u64).to_le_bytes());
    h.update(text.as_bytes());
    Hash(h.finalize().into())
}

fn file_meta(path: &Path) -> std::io::Result<(i64, u64)> {
    let md = std::fs::metadata(path)?;
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    Ok((mtime, md.len()))
}

/// A name beside `path` for setting it aside that no earlier one has, e.g.
/// `store.corrupt-1700000000` or `store.unusable-1700000000-2`.
fn set_aside_name(path: &Path, label: &str) -> PathBuf {
    let stamp = now();
    (0u32..)
        .map(|n| match n {
            0 => path.with_extension(format!("{label}-{stamp}")),
            n => path.with_extension(format!("{label}-{stamp}-{n}")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| path.with_extension(label))
}

/// Move the unusable log at `path` (a file, a directory, anything) aside, never deleting it.
/// Returns where it went, or `None` when there is nothing there (or no way to look).
fn set_aside(path: &Path, label: &str) -> std::io::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let aside = set_aside_name(path, label);
    std::fs::rename(path, &aside)?;
    Ok(Some(aside))
}

/// A log, replayed.
struct Replayed {
    state: State,
    archive: Archive,
    valid_len: u64,
    torn_tail: bool,
    /// File records read: when they far outnumber the live files, the log is compacted.
    file_records: usize,
}

/// Load the log at `path` batch by batch into a state (a missing log is an empty one).
fn replay_log(path: &Path) -> Result<Replayed> {
    let mut state = State::default();
    let mut archive = Archive::default();
    let mut file_records = 0usize;
    let loaded = persist::load(path, |batch| {
        for rec in batch {
            if matches!(rec, Record::File(_) | Record::RemoveFile(_)) {
                file_records += 1;
            }
            state.replay(rec, &mut archive)?;
        }
        Ok(())
    })?;
    state.index_ids_in_background();
    Ok(Replayed {
        state,
        archive,
        valid_len: loaded.valid_len,
        torn_tail: loaded.torn_tail,
        file_records,
    })
}

/// A reload from the log under way ([`Store::begin_reload`]): it holds the commit lock.
pub struct Reload<'s> {
    store: &'s Store,
    writer: &'s LogWriter,
    _guard: parking_lot::MutexGuard<'s, ()>,
}

impl Reload<'_> {
    /// Replay the log and make what it holds current. Commits wait meanwhile (about as long
    /// as an open takes); readers keep the state they hold. When the log may lack something
    /// the store holds (a write error), or reads back as other files than the store's, the
    /// store stays as it is. Returns whether it reloaded.
    pub fn run(self) -> bool {
        let store = self.store;
        if self.writer.flush().is_err() || self.writer.last_error().is_some() {
            return false;
        }
        let replayed = match replay_log(&self.writer.path) {
            Ok(r) if !r.torn_tail => r,
            _ => return false,
        };
        if !same_files(&replayed.state, &store.state())
            || replayed.archive.versions.len() != store.archive.lock().versions.len()
        {
            return false;
        }
        let replaced = store.install(replayed);
        // Freed, and handed back, before the lock is: a flush after the reload then finds
        // the memory it frees gone too (a state a reader still holds goes with the reader).
        drop(replaced);
        Store::release_freed_memory();
        drop(self);
        true
    }
}

/// Whether `a` and `b` hold the same files, each read from the same text with the same
/// settings into as many nodes.
fn same_files(a: &State, b: &State) -> bool {
    a.files.len() == b.files.len()
        && a.files.iter().all(|(path, doc)| {
            b.files.get(path).is_some_and(|other| {
                doc.text_hash == other.text_hash
                    && doc.settings == other.settings
                    && doc.nodes.len() == other.nodes.len()
            })
        })
}

/// The fewest new versions for which [`Store::reload_from_log`] is worth its cost.
pub const RELOAD_MIN_VERSIONS: usize = 10_000;

/// File name of the log inside the state directory.
pub const LOG_NAME: &str = "store.log";
/// The log used instead when `store.log` is unusable and cannot even be moved aside.
pub const FALLBACK_LOG_NAME: &str = "store.fallback.log";

impl Store {
    /// A store that lives in memory only.
    pub fn in_memory(config: Config) -> Store {
        Store::with(Arc::new(State::default()), Archive::default(), None, config)
    }

    fn with(
        state: Arc<State>,
        archive: Archive,
        writer: Option<LogWriter>,
        config: Config,
    ) -> Store {
        Store {
            current: Mutex::new(state),
            archive: Mutex::new(archive),
            commit_lock: Mutex::new(()),
            snapshots: Mutex::new(VecDeque::new()),
            writer,
            config: Mutex::new(config),
            generations: Mutex::new(HashMap::default()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
            directory_ingest: Mutex::new(()),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Open the store persisted in `dir`, loading it. A log that cannot be used (corrupt,
    /// unreadable, a directory…) never stops the store: it is moved aside (never deleted) and
    /// an empty store returned, with the reason in the report, for the caller to rebuild from
    /// the Org files. When it cannot even be moved, [`FALLBACK_LOG_NAME`] beside it is used;
    /// when no log can be written at all, the store lives in memory only.
    pub fn open(dir: &Path, config: Config) -> Result<(Store, OpenReport)> {
        let mut report = OpenReport::default();
        for name in [LOG_NAME, FALLBACK_LOG_NAME] {
            let path = dir.join(name);
            let failure = match replay_log(&path) {
                Ok(replayed) => match LogWriter::open(&path, replayed.valid_len) {
                    Ok(writer) => return Ok(Store::opened(replayed, writer, config, report)),
                    Err(e) => e,
                },
                Err(e) => e,
            };
            let label = match failure {
                StoreError::Corrupt { .. } => "corrupt",
                _ => "unusable",
            };
            let mut reason = failure.to_string();
            match set_aside(&path, label) {
                Ok(Some(aside)) => {
                    report.set_aside = Some(aside);
                    if let Ok(writer) = LogWriter::open(&path, 0) {
                        report.rebuilt.get_or_insert(reason);
                        let empty = Replayed {
                            state: State::default(),
                            archive: Archive::default(),
                            valid_len: 0,
                            torn_tail: false,
                            file_records: 0,
                        };
                        return Ok(Store::opened(empty, writer, config, report));
                    }
                }
                Ok(None) => {}
                Err(e) => reason.push_str(&format!(" (it cannot be moved aside either: {e})")),
            }
            report.rebuilt.get_or_insert(reason);
        }
        Ok((
            Store::with(Arc::new(State::default()), Archive::default(), None, config),
            report,
        ))
    }

    /// Hand back to the system the memory this thread, and threads that have ended, freed.
    /// Loading frees as much as it keeps (decoded batches, file records), and a directory
    /// ingest about as much (parse trees, texts), spread over pages the allocator would
    /// otherwise hold: at 100,000 headlines, 70 MB of resident memory nothing uses each.
    fn release_freed_memory() {
        extern "C" {
            // mimalloc's, linked as the global allocator (src/lib.rs).
            fn mi_collect(force: bool);
        }
        // SAFETY: takes no pointers; mimalloc collects the calling thread's heap and the
        // abandoned ones, which is always allowed.
        unsafe { mi_collect(true) }
    }

    fn opened(
        replayed: Replayed,
        writer: LogWriter,
        config: Config,
        mut report: OpenReport,
    ) -> (Store, OpenReport) {
        let Replayed {
            state,
            archive,
            torn_tail,
            file_records,
            ..
        } = replayed;
        report.files = state.files.len();
        report.nodes = state.node_count();
        report.torn_tail = torn_tail;
        report.log = Some(writer.path.clone());
        let compact = file_records > 2 * state.files.len() + 64;
        let store = Store::with(Arc::new(state), archive, Some(writer), config);
        if compact {
            store.compact_and_reload();
        }
        Store::release_freed_memory();
        (store, report)
    }

    pub fn state(&self) -> Arc<State> {
        self.current.lock().clone()
    }

    pub fn config(&self) -> Config {
        self.config.lock().clone()
    }

    pub fn set_config(&self, config: Config) {
        *self.config.lock() = config;
    }

    /// Make `state` current and reserve its place in the log. Call with the commit lock
    /// held; write the returned commit after releasing it, so encoding does not serialise
    /// concurrent ingests.
    fn publish(&self, state: State, records: Vec<Record>) -> Commit<'_> {
        *self.current.lock() = Arc::new(state);
        self.commit(records)
    }

    /// Reserve the place in the log of `records`, a change made to the current state. Call
    /// with the commit lock held, as the change was made.
    fn commit(&self, records: Vec<Record>) -> Commit<'_> {
        Commit {
            ticket: self.writer.as_ref().map(|w| (w, w.ticket())),
            records,
        }
    }

    /// Change the current state with `change`, with the commit lock held.
    ///
    /// Where [`Store::publish`] builds the next state on a copy, this changes the state in
    /// place when no reader holds it, the usual case. A change on a copy copied the id
    /// index's B-tree path (a 64-key leaf) for each id it added, and freed it with the old
    /// state: 8–25% of ingesting the corpus one file at a time. A reader that holds the state
    /// keeps it as it was (`Arc::make_mut` changes a copy then).
    ///
    /// Readers wait for `change`: it should only apply what was worked out before, and
    /// must not panic, since the state it changes is the one readers find.
    fn change_in_place<R>(&self, change: impl FnOnce(&mut State) -> R) -> R {
        // An id index still being built after the open is waited for here, not while
        // readers wait.
        self.state().ids();
        change(Arc::make_mut(&mut self.current.lock()))
    }

    /// Rewrite the log with only the live records. Not done, and the error says why (the
    /// statistics' write error too), when a stored version cannot be read back to be
    /// written: the log changed underneath.
    pub fn compact(&self) -> Result<(), String> {
        let _guard = self.commit_lock.lock();
        let Some(w) = &self.writer else {
            return Ok(());
        };
        let recs = self.state().records(&self.archive.lock());
        let ticket = w.ticket();
        // Many moderate batches rather than one huge one: loading decodes batches in
        // parallel, and no batch comes near the size limit.
        let mut bytes = Vec::new();
        for chunk in recs.chunks(4096) {
            if let Err(e) = persist::append_batch(chunk, &mut bytes) {
                // The new log would lack what cannot be written: keep the old one whole.
                let message = format!(
                    "compacting {}: not done, a stored version cannot be written: {e}",
                    w.path.display()
                );
                w.report_error(message.clone());
                return Err(message);
            }
        }
        w.rewrite(ticket, bytes);
        Ok(())
    }

    /// [`Store::compact`], then load the compacted log: the bodies loaded from the old one
    /// are read from it (see `body`), which would keep its disk space until the store
    /// closes. Should the new log not load, the store stays as it was, on the old file.
    fn compact_and_reload(&self) {
        let Some(writer) = &self.writer else {
            return;
        };
        if self.compact().is_err() || self.flush().is_err() {
            return;
        }
        if let Ok(replayed) = replay_log(&writer.path) {
            let _guard = self.commit_lock.lock();
            drop(self.install(replayed));
        }
    }

    /// Make a state and archive read from the log current, under the commit lock the
    /// caller holds; return the ones they replace, for the caller to free.
    fn install(&self, replayed: Replayed) -> (Arc<State>, Archive) {
        let old_state = std::mem::replace(&mut *self.current.lock(), Arc::new(replayed.state));
        let old_archive = std::mem::replace(&mut *self.archive.lock(), replayed.archive);
        (old_state, old_archive)
    }

    /// Whether a directory ingest that added `new_versions` versions left enough bodies in
    /// memory for [`Store::reload_from_log`] to be worth decoding the whole log again: at
    /// least [`RELOAD_MIN_VERSIONS`], and half the store's nodes (a first ingest, or every
    /// file parsed again under another Org).
    pub fn worth_reloading(&self, new_versions: usize) -> bool {
        self.writer.is_some()
            && new_versions >= RELOAD_MIN_VERSIONS
            && new_versions.saturating_mul(2) >= self.state().node_count()
    }

    /// Load the state again from the log, so that the bodies committed since the store was
    /// opened are read from the log when asked, as after an open, rather than held in memory
    /// until the next one. At 100k headlines a first directory ingest left Emacs about 25 MB
    /// larger than opening the same store. Returns whether it reloaded; see
    /// [`Store::begin_reload`].
    pub fn reload_from_log(&self) -> bool {
        self.begin_reload().is_some_and(Reload::run)
    }

    /// Take the commit lock for [`Store::reload_from_log`] now, so that a flush or commit
    /// asked for from here on waits for it: the caller may answer the user in between. None
    /// when there is nothing to gain or it cannot be done safely: a store without a log or
    /// closed, or one with snapshots (they keep the state before alive, and a rollback would
    /// find every file changed).
    pub fn begin_reload(&self) -> Option<Reload<'_>> {
        let writer = self.writer.as_ref()?;
        let guard = self.commit_lock.lock();
        if self.closed.load(std::sync::atomic::Ordering::SeqCst)
            || !self.snapshots.lock().is_empty()
        {
            return None;
        }
        Some(Reload {
            store: self,
            writer,
            _guard: guard,
        })
    }

    /// Say that the store is being closed: a reload not yet begun is not done.
    pub fn mark_closed(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Reserve a generation for an ingest of `file`; a later reservation supersedes it.
    pub fn reserve_generation(&self, file: &str) -> u64 {
        let g = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.generations.lock().insert(file.to_string(), g);
        g
    }

    fn is_latest(&self, file: &str, generation: Option<u64>) -> bool {
        match generation {
            None => true,
            Some(g) => self
                .generations
                .lock()
                .get(file)
                .is_none_or(|&latest| latest == g),
        }
    }

    /// Ingest `text` as the contents of `file`. `todo` is the keyword set Org computed for the
    /// buffer, if the text comes from one. With a `generation`, the result is dropped (and
    /// `None` returned) when a newer ingest of the same file was requested meanwhile.
    pub fn ingest_text(
        &self,
        file: &str,
        text: &str,
        todo: Option<&TodoKeywords>,
        meta: Option<(i64, u64)>,
        generation: Option<u64>,
    ) -> Result<Option<IngestReport>> {
        match self.prepare_text(file, text, todo, meta, generation)? {
            Prepared::Unchanged(report) => Ok(Some(report)),
            Prepared::Parsed(parsed) => Ok(self.commit_parsed(vec![parsed]).pop().flatten()),
        }
    }

    /// `text` parsed as the new contents of `file`, to commit; or the report of a file whose
    /// text and settings are what the store has.
    fn prepare_text(
        &self,
        file: &str,
        text: &str,
        todo: Option<&TodoKeywords>,
        meta: Option<(i64, u64)>,
        generation: Option<u64>,
    ) -> Result<Prepared> {
        let config = self.config();
        let settings = settings_digest(todo, &config);
        let digest = text_digest(text, &settings);
        let path: Arc<str> = Arc::from(file);
        if let Some(old) = self.state().files.get(&path) {
            if old.text_hash == digest && meta.is_none_or(|m| (old.mtime, old.size) == m) {
                return Ok(Prepared::Unchanged(IngestReport::unchanged(
                    file,
                    old.nodes.len(),
                )));
            }
        }
        let opts = parse::ParseOptions {
            todo,
            default_todo: &config.default_todo,
            dialect: config.dialect,
            no_inherit_tags: &config.no_inherit_tags,
            inlinetask_min_level: config.inlinetask_min_level,
        };
        let mut parsed = parse::parse(text, &filename::to_path(file), &opts)?;
        self.archive.lock().share_with(&mut parsed.nodes);
        let (mtime, size) = meta.unwrap_or((0, text.len() as u64));
        let doc = Arc::new(FileDoc::new(
            path,
            mtime,
            size,
            digest,
            settings,
            parsed.file_tags,
            parsed.nodes,
        ));
        Ok(Prepared::Parsed(Parsed { doc, generation }))
    }

    /// Store parsed files in one commit: one change of the state and one log batch for all
    /// of them. Each gets its report, or `None` when a newer ingest (or removal) of its file
    /// was requested since it was read. Each file is in `parsed` at most once.
    ///
    /// The current state changes only under the commit lock, held here. So the versions,
    /// the history and what each document changes in the id index are worked out against
    /// it first, with no lock readers take; readers then wait only for the changes to be
    /// applied, and the documents replaced are freed after.
    fn commit_parsed(&self, parsed: Vec<Parsed>) -> Vec<Option<IngestReport>> {
        let guard = self.commit_lock.lock();
        let time = now();
        let mut reports = Vec::with_capacity(parsed.len());
        let mut records = Vec::new();
        let mut links = Vec::with_capacity(parsed.len());
        let current = self.state();
        for Parsed { doc, generation } in parsed {
            if !self.is_latest(&doc.path, generation) {
                reports.push(None);
                continue;
            }
            if generation.is_none() {
                // Stored now, so an ingest of the file read before is superseded by it.
                self.reserve_generation(&doc.path);
            }
            debug_assert!(
                links
                    .iter()
                    .all(|(_, d): &(IdChanges, Arc<FileDoc>)| d.path != doc.path),
                "{} twice in one commit",
                doc.path
            );
            let old = current.files.get(&doc.path).map(|d| &**d);
            let new_versions = {
                let mut archive = self.archive.lock();
                let before = archive.versions.len();
                archive.add(&doc, old, time, &mut records);
                archive.versions.len() - before
            };
            reports.push(Some(IngestReport {
                file: doc.path.to_string(),
                nodes: doc.nodes.len(),
                changed: true,
                new_versions,
            }));
            records.push(Record::File(FileEntry::Doc(doc.clone())));
            links.push((IdChanges::between(old, &doc), doc));
        }
        // Held here, the state would be copied rather than changed in place.
        drop(current);
        if links.is_empty() {
            return reports;
        }
        let replaced: Vec<Option<Arc<FileDoc>>> = self.change_in_place(|state| {
            let links = links.into_iter();
            links
                .map(|(changes, doc)| state.link_file(doc, changes))
                .collect()
        });
        let commit = self.commit(records);
        drop(guard);
        commit.write();
        drop(replaced);
        reports
    }

    /// `text` parsed as the contents of `file` with the store's settings, without storing it
    /// (to look at a buffer's nodes, e.g. to leave out its private subtrees).
    pub fn parse_unstored(&self, file: &str, text: &str) -> Result<Arc<FileDoc>> {
        let config = self.config();
        let settings = settings_digest(None, &config);
        let opts = parse::ParseOptions {
            todo: None,
            default_todo: &config.default_todo,
            dialect: config.dialect,
            no_inherit_tags: &config.no_inherit_tags,
            inlinetask_min_level: config.inlinetask_min_level,
        };
        let parsed = parse::parse(text, &filename::to_path(file), &opts)?;
        Ok(Arc::new(FileDoc::new(
            Arc::from(file),
            0,
            text.len() as u64,
            text_digest(text, &settings),
            settings,
            parsed.file_tags,
            parsed.nodes,
        )))
    }

    /// Ingest a file from disk. Unchanged files (same mtime and size as stored) are not read
    /// again unless `force`. A file that no longer exists leaves the store.
    pub fn ingest_file(&self, file: &str, force: bool) -> Result<IngestReport> {
        Ok(match self.prepare_file(file, force)? {
            Prepared::Unchanged(report) => report,
            Prepared::Parsed(parsed) => self
                .commit_parsed(vec![parsed])
                .pop()
                .flatten()
                .unwrap_or_else(|| IngestReport::superseded(file)),
        })
    }

    /// A file from disk, read and parsed to commit (see [`Store::ingest_file`]).
    fn prepare_file(&self, file: &str, force: bool) -> Result<Prepared> {
        let path = &filename::to_path(file);
        let meta = match file_meta(path) {
            Ok(m) => m,
            Err(source) => {
                if source.kind() == std::io::ErrorKind::NotFound {
                    self.remove_file(file);
                }
                return Err(StoreError::Read {
                    file: path.to_path_buf(),
                    source,
                });
            }
        };
        if !force {
            let settings = settings_digest(None, &self.config());
            if let Some(old) = self.state().files.get(file) {
                if (old.mtime, old.size) == meta && old.settings == settings {
                    return Ok(Prepared::Unchanged(IngestReport::unchanged(
                        file,
                        old.nodes.len(),
                    )));
                }
            }
        }
        let bytes = std::fs::read(path).map_err(|source| StoreError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        let text = text::decode_owned(bytes);
        let gen = self.reserve_generation(file);
        self.prepare_text(file, &text, None, Some(meta), Some(gen))
    }

    /// Drop a file from the store. Returns whether it was there. An ingest of the file read
    /// before is superseded: its result is not stored.
    pub fn remove_file(&self, file: &str) -> bool {
        let guard = self.commit_lock.lock();
        self.reserve_generation(file);
        let mut state = (*self.state()).clone();
        let removed = state.remove_file(&Arc::from(file));
        if removed {
            let commit = self.publish(state, vec![Record::RemoveFile(file.to_string())]);
            drop(guard);
            commit.write();
        }
        removed
    }

    /// The `.org` files under `dirs` (hidden directories and Emacs lock/backup files skipped),
    /// sorted.
    pub fn org_files_under(dirs: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = dirs.to_vec();
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || name.starts_with('#') {
                    continue;
                }
                let Ok(ft) = entry.file_type() else { continue };
                let path = entry.path();
                if ft.is_dir() {
                    stack.push(path);
                } else if name.ends_with(".org") && (ft.is_file() || path.is_file()) {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Ingest every Org file under `dirs`, skipping unchanged ones, and drop files under
    /// those directories that are gone. `progress` is called after each file.
    ///
    /// Directory ingests run one after the other. Side by side, both read and parsed each
    /// file, the first to start on it was superseded by the other's newer generation, and
    /// could report the file done before the other had stored it. One after the other, the
    /// second finds what the first stored unchanged, so done means every file is stored.
    pub fn ingest_directories(
        &self,
        dirs: &[PathBuf],
        progress: impl FnMut(usize, usize, &str) + Send,
        cancelled: impl Fn() -> bool + Sync,
    ) -> DirReport {
        let _one_at_a_time = self.directory_ingest.lock();
        let files = Store::org_files_under(dirs);
        let report = DirReport {
            files: files.len(),
            ..DirReport::default()
        };
        // Files are parsed in parallel (commits stay serialised by `commit_lock`), one
        // thread per core: reading and parsing dominate a first ingest.
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 4)
            .min(files.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let shared = Mutex::new((report, 0usize, progress));
        let tally = |results: Vec<(String, Result<IngestReport>)>| {
            let mut guard = shared.lock();
            let (report, done, progress) = &mut *guard;
            for (name, result) in results {
                match result {
                    Ok(r) if r.changed => {
                        report.ingested += 1;
                        report.nodes += r.nodes;
                        report.new_versions += r.new_versions;
                    }
                    Ok(r) => {
                        report.unchanged += 1;
                        report.nodes += r.nodes;
                    }
                    Err(e) => report.errors.push(e.to_string()),
                }
                *done += 1;
                progress(*done, files.len(), &name);
            }
        };
        // Each worker commits the files it parsed in groups: one log batch, one wake-up of
        // the writer and one fdatasync per group, not per file. For a directory of small
        // files that was a third of the ingest.
        let commit_group = |group: &mut Vec<Parsed>| {
            if group.is_empty() {
                return;
            }
            let names: Vec<String> = group.iter().map(|p| p.doc.path.to_string()).collect();
            let stored = self.commit_parsed(std::mem::take(group));
            let results = names
                .into_iter()
                .zip(stored)
                .map(|(name, stored)| {
                    let report = stored.unwrap_or_else(|| IngestReport::superseded(&name));
                    (name, Ok(report))
                })
                .collect();
            tally(results);
        };
        std::thread::scope(|scope| {
            let work = || {
                crate::block_sigpipe();
                let mut group: Vec<Parsed> = Vec::new();
                let mut group_nodes = 0;
                loop {
                    if cancelled() {
                        shared.lock().0.cancelled = true;
                        break;
                    }
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    let name = filename::key(f);
                    match self.prepare_file(&name, false) {
                        Ok(Prepared::Parsed(parsed)) => {
                            group_nodes += parsed.doc.nodes.len();
                            group.push(parsed);
                            if group_nodes >= COMMIT_GROUP_NODES
                                || group.len() >= COMMIT_GROUP_FILES
                            {
                                commit_group(&mut group);
                                group_nodes = 0;
                            }
                        }
                        Ok(Prepared::Unchanged(r)) => tally(vec![(name.into_owned(), Ok(r))]),
                        Err(e) => tally(vec![(name.into_owned(), Err(e))]),
                    }
                }
                // What was parsed is stored, cancelled or not.
                commit_group(&mut group);
            };
            for _ in 1..workers {
                // Parsing recurses per headline level: the same stack as the runtime's workers.
                let spawned = std::thread::Builder::new()
                    .name("org-agent-ingest".into())
                    .stack_size(16 << 20)
                    .spawn_scoped(scope, work);
                if spawned.is_err() {
                    break;
                }
            }
            work();
        });
        // What parsing freed sits in the workers' pages, and the allocator hands pages back
        // only when their thread allocates again: the ingest threads are gone, and this one
        // may idle for hours. At 100k headlines that was 70 MB of resident memory nothing
        // used (+158 MB after a first ingest, +88 MB with this; `reload_from_log` then
        // leaves the bodies parsed in the log).
        Store::release_freed_memory();
        let (mut report, _, _) = shared.into_inner();
        if !report.cancelled {
            let found: std::collections::HashSet<String> = files
                .iter()
                .map(|f| filename::key(f).into_owned())
                .collect();
            let gone: Vec<String> = self
                .state()
                .files
                .keys()
                .filter(|p| {
                    let path = filename::to_path(p);
                    dirs.iter().any(|d| path.starts_with(d))
                })
                .filter(|p| !found.contains(&***p))
                .map(|p| p.to_string())
                .collect();
            for p in gone {
                if self.remove_file(&p) {
                    report.removed += 1;
                }
            }
        }
        report
    }

    pub fn node(&self, id: &str) -> Option<NodeRef> {
        self.state().node(id)
    }

    /// The innermost node of `file` whose subtree holds buffer position `pos` (as of the
    /// file's last ingest): the headline at or above point, or the file node before the
    /// first headline.
    pub fn node_at(&self, file: &str, pos: u32) -> Option<NodeRef> {
        let doc = self.state().files.get(file)?.clone();
        // Nodes are in document order, so the last one starting at or before `pos` whose
        // subtree reaches past it is the innermost.
        let index = doc
            .nodes
            .iter()
            .rposition(|n| n.begin_pos <= pos && pos <= n.end_pos)
            .or_else(|| (!doc.nodes.is_empty()).then_some(0))?;
        Some(NodeRef {
            doc,
            index: index as u32,
        })
    }

    /// Every version a node id has had, oldest first.
    pub fn history(&self, id: &str) -> Vec<Version> {
        let archive = self.archive.lock();
        let Some(hist) = archive.history.get(id) else {
            return Vec::new();
        };
        hist.iter()
            .map(|(content, time)| Version {
                hash: content.hash,
                time: *time,
                content: content.clone(),
            })
            .collect()
    }

    /// Run `f` on the archive of every version and each id's history.
    pub fn with_archive<R>(&self, f: impl FnOnce(&Archive) -> R) -> R {
        f(&self.archive.lock())
    }

    pub fn query(&self, q: &Query) -> Vec<NodeRef> {
        q.run(&self.state())
    }

    /// Take a snapshot; returns its number (0 is the newest).
    pub fn snapshot(&self, label: &str) -> usize {
        let cap = self.config().snapshot_capacity.max(1);
        // Not during a reload from the log (see `begin_reload`), which would leave the
        // snapshot sharing no document with the state after it.
        let _no_reload = self.commit_lock.lock();
        let mut snaps = self.snapshots.lock();
        snaps.push_front(Snapshot {
            time: now(),
            label: label.to_string(),
            state: self.state(),
        });
        snaps.truncate(cap);
        0
    }

    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.snapshots.lock().iter().cloned().collect()
    }

    /// Make snapshot `n` (0 = newest) the current state, and persist that.
    pub fn rollback(&self, n: usize) -> Result<()> {
        let snap = self
            .snapshots
            .lock()
            .get(n)
            .cloned()
            .ok_or(StoreError::NoSnapshot(n))?;
        let guard = self.commit_lock.lock();
        let mut state = (*self.state()).clone();
        let mut records = Vec::new();
        let time = now();
        let gone: Vec<Arc<str>> = state
            .files
            .keys()
            .filter(|p| !snap.state.files.contains_key(*p))
            .cloned()
            .collect();
        // Ingests of these files read before are superseded, as by a removal.
        for p in gone {
            self.reserve_generation(&p);
            state.remove_file(&p);
            records.push(Record::RemoveFile(p.to_string()));
        }
        for (p, doc) in snap.state.files.iter() {
            let same = state.files.get(p).is_some_and(|cur| Arc::ptr_eq(cur, doc));
            if !same {
                self.reserve_generation(p);
                state.set_file(doc.clone(), time, &mut self.archive.lock(), &mut records);
                records.push(Record::File(FileEntry::Doc(doc.clone())));
            }
        }
        let commit = self.publish(state, records);
        drop(guard);
        commit.write();
        Ok(())
    }

    /// Wait until every commit so far is on disk: one under way (or a reload from the log)
    /// first. Not to be called with the commit lock held.
    pub fn flush(&self) -> Result<(), String> {
        drop(self.commit_lock.lock());
        match &self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    pub fn stats(&self) -> Stats {
        let state = self.state();
        let nodes = state.node_count();
        Stats {
            files: state.files.len(),
            nodes,
            headlines: nodes - state.files.len(),
            versions: self.archive.lock().versions.len(),
            ids_with_duplicates: state.ids().values().filter(|l| l.len() > 1).count(),
            bytes_on_disk: self
                .writer
                .as_ref()
                .and_then(|w| std::fs::metadata(&w.path).ok())
                .map(|m| m.len())
                .unwrap_or(0),
            snapshots: self.snapshots.lock().len(),
            path: self.writer.as_ref().map(|w| w.path.display().to_string()),
            write_error: self.writer.as_ref().and_then(|w| w.last_error()),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirReport {
    pub files: usize,
    pub ingested: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub nodes: usize,
    /// Versions the ingest added to the store: their bodies are in memory (see
    /// [`Store::reload_from_log`]).
    pub new_versions: usize,
    pub errors: Vec<String>,
    pub cancelled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` parsed for `file` under a generation of its own, as a directory ingest holds it.
    fn parsed(store: &Store, file: &str, text: &str) -> Parsed {
        let generation = store.reserve_generation(file);
        match store.prepare_text(file, text, None, None, Some(generation)) {
            Ok(Prepared::Parsed(p)) => p,
            Ok(Prepared::Unchanged(_)) => panic!("{file} is unchanged"),
            Err(e) => panic!("{file}: {e}"),
        }
    }

    fn titles(store: &Store, file: &str) -> Vec<String> {
        let state = store.state();
        let doc = state.files.get(file);
        let nodes = doc.map(|d| &d.nodes[1..]).unwrap_or_default();
        nodes.iter().map(|n| n.content.title.to_string()).collect()
    }

    #[test]
    fn a_group_stores_its_files_but_those_read_again_or_removed_since() {
        let store = Store::in_memory(Config::default());
        let kept = parsed(&store, "/a.org", "* A\n");
        let read_again = parsed(&store, "/b.org", "* B old\n");
        let removed = parsed(&store, "/c.org", "* C\n");
        store
            .ingest_text("/b.org", "* B new\n", None, None, None)
            .expect("ingest");
        store.remove_file("/c.org");
        let reports = store.commit_parsed(vec![kept, read_again, removed]);
        let stored: Vec<Option<&str>> = reports
            .iter()
            .map(|r| r.as_ref().map(|r| r.file.as_str()))
            .collect();
        assert_eq!(stored, [Some("/a.org"), None, None]);
        assert_eq!(titles(&store, "/a.org"), ["A"]);
        assert_eq!(titles(&store, "/b.org"), ["B new"]);
        assert!(titles(&store, "/c.org").is_empty());
        // The id index agrees with the files.
        let state = store.state();
        for (path, doc) in state.files.iter() {
            for (i, n) in doc.nodes.iter().enumerate() {
                let node = state.node(&n.id).expect("indexed");
                assert_eq!((&*node.doc.path, node.index), (&**path, i as u32));
            }
        }
        assert_eq!(state.ids().len(), 4, "two file nodes and two headlines");
    }

    #[test]
    fn a_removal_supersedes_an_ingest_of_the_file_read_before_it() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/a.org", "* Stored\n", None, None, None)
            .expect("ingest");
        let stale = parsed(&store, "/a.org", "* Read before the removal\n");
        assert!(store.remove_file("/a.org"));
        assert_eq!(store.commit_parsed(vec![stale]).pop(), Some(None));
        assert!(store.state().files.get("/a.org").is_none());
    }

    #[test]
    fn a_rollback_supersedes_an_ingest_of_a_file_it_restores() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/a.org", "* First\n", None, None, None)
            .expect("ingest");
        store.snapshot("first");
        store
            .ingest_text("/a.org", "* Second\n", None, None, None)
            .expect("ingest");
        let stale = parsed(&store, "/a.org", "* Read before the rollback\n");
        store.rollback(0).expect("rollback");
        assert_eq!(store.commit_parsed(vec![stale]).pop(), Some(None));
        assert_eq!(titles(&store, "/a.org"), ["First"]);
    }

    #[test]
    fn a_history_of_one_is_held_in_the_table_and_grows_in_order() {
        // As small as the boxed slice it replaced: the one-version case, almost every id,
        // must cost no allocation and no more table space.
        assert_eq!(std::mem::size_of::<History>(), 16);
        let parsed =
            parse::parse_with_defaults("* a\n* b\n* c\n", Path::new("/h.org")).expect("parses");
        let versions: Vec<Arc<NodeContent>> =
            parsed.nodes.iter().map(|n| n.content.clone()).collect();
        let mut h = History::new(versions[1].clone(), 10);
        assert!(matches!(h, History::One(_)));
        assert_eq!(h.len(), 1);
        h.push((versions[2].clone(), 20));
        h.push((versions[3].clone(), 30));
        let got: Vec<(Hash, i64)> = h.iter().map(|(c, t)| (c.hash, *t)).collect();
        let want: Vec<(Hash, i64)> = versions[1..]
            .iter()
            .zip([10, 20, 30])
            .map(|(c, t)| (c.hash, t))
            .collect();
        assert_eq!(got, want);
        assert!(h
            .last()
            .is_some_and(|(c, t)| Arc::ptr_eq(c, &versions[3]) && *t == 30));
    }

    #[test]
    fn the_id_map_filled_in_two_passes_is_the_map_of_its_entries() {
        // Key and value, 32 bytes: a full leaf of 64 fits mimalloc's 3 KiB class, not 3.5.
        assert_eq!(std::mem::size_of::<(Arc<str>, IdLocs)>(), 32);
        for n in [0, 1, 2, 63, 64, 65, 66, 129, 130, 131, 1000, 4161] {
            let entries: Vec<(Arc<str>, IdLocs)> = (0..n)
                .map(|i| {
                    let loc = Loc {
                        file: FileKey::new(&Arc::from(format!("/f{}.org", i % 7).as_str())),
                        index: i as u32,
                    };
                    (Arc::from(format!("id-{i:06}").as_str()), IdLocs::One(loc))
                })
                .collect();
            let map = fill_in_two_passes(entries.clone().into_iter());
            assert_eq!(map.len(), n, "{n} entries");
            let got: Vec<(String, u32)> = map
                .iter()
                .map(|(id, locs)| (id.to_string(), locs.first().index))
                .collect();
            let want: Vec<(String, u32)> = entries
                .iter()
                .map(|(id, locs)| (id.to_string(), locs.first().index))
                .collect();
            assert_eq!(got, want, "{n} entries");
        }
    }

    #[test]
    fn a_file_record_written_from_its_document_is_the_owned_record_s_bytes() {
        let store = Store::in_memory(Config::default());
        let text = "#+FILETAGS: :ft:\n* TODO A :a:\n:PROPERTIES:\n:ID: same\n:END:\n** B\nbody\n\
                    * C\n:PROPERTIES:\n:ID: same\n:END:\n*** é deep :x:y:\n";
        store
            .ingest_text("/n/f.org", text, None, Some((42, 7)), None)
            .expect("ingest");
        let doc = store
            .state()
            .files
            .get("/n/f.org")
            .expect("the file")
            .clone();
        assert!(doc.nodes.iter().any(|n| !n.inherited_tags.is_empty()));
        let owned = persist::encode_batch(&[Record::File(FileEntry::Read(doc.record()))]);
        let borrowed = persist::encode_batch(&[Record::File(FileEntry::Doc(doc.clone()))]);
        assert_eq!(owned, borrowed);
        // And it reads back as the owned record.
        let payload = &borrowed[persist::HEADER_LEN..borrowed.len() - 4];
        let read: Vec<Record> = postcard::from_bytes(payload).expect("decode");
        match &read[..] {
            [Record::File(FileEntry::Read(rec))] => assert_eq!(*rec, doc.record()),
            other => panic!("{other:?}"),
        }
    }
}
