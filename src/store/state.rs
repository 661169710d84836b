//! The files of the store at one moment ([`State`]): an immutable value that readers share
//! and query without locks, and that a commit changes in place only when no reader holds
//! it. Also how a state is rebuilt from the log's records, and written back as records for
//! compaction. Keeps the id index in step with the files on every change.

use super::archive::{Archive, HistoryEntry, StoredVersion};
use super::file_doc::{FileDoc, Files, NodeRef};
use super::ids::{FileKey, IdChanges, IdIndex, IdKey, IdLocs, IdMap, Loc};
use super::inherit;
use super::node::{self, Node, NodeContent};
use super::persist::{FileEntry, FileRecord, Record};
use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

/// The files of the store at one moment. Cloning is O(1) and shares everything.
#[derive(Clone, Default)]
pub struct State {
    pub files: Files,
    /// Where each id sits: read it with [`State::ids`].
    ids: IdIndex,
}

/// How a commit brings the id index up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IdUpdates {
    /// Each id the commit adds or removes, as it commits.
    Apply,
    /// None while no reader has asked for the index: the first reader builds it from every
    /// file, and commits keep it up to date from then on. For a first directory ingest,
    /// which adds most of the ids the store will hold: inserting each into the index as
    /// its file is committed costs a cache miss or more per id, where one build sorts them
    /// all first.
    WhenRead,
}

impl State {
    /// Where each id sits (waiting, just after the store opened, for the index to be built).
    pub(super) fn ids(&self) -> &IdMap {
        self.ids.get()
    }

    /// Whether the id index is there without a wait or a build.
    pub(super) fn ids_ready(&self) -> bool {
        self.ids.is_ready()
    }

    /// Whether the id index waits for its first reader to build it.
    #[cfg(test)]
    pub(super) fn ids_left_to_first_reader(&self) -> bool {
        self.ids.left_to_first_reader()
    }

    /// The id index resized for a change that takes out up to `gone` places and adds up to
    /// `new` ([`IdMap::resized_for`]), to resize before the change rather than during it;
    /// none when it needs no resizing or is not built yet.
    pub(super) fn ids_resized_for(&self, gone: usize, new: usize) -> Option<IdMap> {
        if !self.ids_ready() {
            return None;
        }
        let ids = self.ids();
        ids.resized_for(ids.len().saturating_sub(gone), ids.len() + new)
    }

    /// Make `ids`, which [`State::ids_resized_for`] made from this state's id index, the
    /// index. Returns the index it replaces, for the caller to free once readers no longer
    /// wait (a million entries take milliseconds to free).
    #[must_use]
    pub(super) fn set_ids(&mut self, ids: IdMap) -> IdIndex {
        debug_assert_eq!(ids.len(), self.ids().len(), "the same index, resized");
        std::mem::replace(&mut self.ids, IdIndex::ready(ids))
    }

    /// The id index, to change: this state's own copy (an O(1) clone of a shared one).
    fn ids_mut(&mut self) -> &mut IdMap {
        self.ids.get_mut()
    }

    pub fn node_count(&self) -> usize {
        self.files.values().map(|f| f.nodes.len()).sum()
    }

    /// The node `id`: the first (in store order) of those carrying it, or with `ID#N` the
    /// N-th of several sharing the `:ID:` `ID` (how a duplicated id's copies are addressed;
    /// an id really written with a `#` is found as written first).
    pub fn node(&self, id: &str) -> Option<NodeRef> {
        self.nodes_with_id(id).next().or_else(|| {
            let (base, n) = id.rsplit_once('#')?;
            let n: usize = n.parse().ok().filter(|&n| n >= 2)?;
            self.nodes_with_id(base).nth(n - 1)
        })
    }

    /// The nodes carrying `id`, in store order (file, then position).
    fn nodes_with_id<'a>(&'a self, id: &'a str) -> impl Iterator<Item = NodeRef> + 'a {
        self.carrying(id).map(|(loc, doc)| NodeRef {
            doc: doc.clone(),
            index: loc.index,
        })
    }

    /// Where the nodes carrying `id` sit, in store order (file, then position).
    pub fn id_places<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a Loc> + 'a {
        self.carrying(id).map(|(loc, _)| loc)
    }

    /// The places under `id`'s key whose node carries `id`, each with its document.
    fn carrying<'a>(
        &'a self,
        id: &'a str,
    ) -> impl Iterator<Item = (&'a Loc, &'a Arc<FileDoc>)> + 'a {
        self.ids()
            .get(&IdKey::of(id))
            .into_iter()
            .flat_map(IdLocs::iter)
            .filter_map(move |loc| {
                let (doc, node) = self.at(loc)?;
                (&*node.id == id).then_some((loc, doc))
            })
    }

    /// Whether a node carries `id`.
    pub fn has_id(&self, id: &str) -> bool {
        self.id_places(id).next().is_some()
    }

    /// The document and node at `loc`.
    fn at(&self, loc: &Loc) -> Option<(&Arc<FileDoc>, &Node)> {
        let doc = self.files.get(&*loc.file)?;
        Some((doc, doc.nodes.get(loc.index as usize)?))
    }

    /// The id of the node at `loc`.
    fn id_at(&self, loc: &Loc) -> Option<&Arc<str>> {
        self.at(loc).map(|(_, node)| &node.id)
    }

    /// Every id the nodes carry, with the places of the nodes carrying it in store order;
    /// the ids in no particular order.
    pub fn ids_and_places(&self) -> impl Iterator<Item = (&Arc<str>, Vec<&Loc>)> + '_ {
        self.ids().values().flat_map(|locs| self.by_id(locs))
    }

    /// The ids more than one node carries, each with their places in store order; the ids
    /// in no particular order.
    pub fn duplicated_ids(&self) -> impl Iterator<Item = (&Arc<str>, Vec<&Loc>)> + '_ {
        self.ids()
            .values()
            .filter(|locs| locs.len() > 1)
            .flat_map(|locs| self.by_id(locs))
            .filter(|(_, places)| places.len() > 1)
    }

    /// The places under one key of the id index, grouped by the id their node carries
    /// (almost always one: ids share a key by chance only).
    fn by_id<'a>(&'a self, locs: &'a IdLocs) -> Vec<(&'a Arc<str>, Vec<&'a Loc>)> {
        let mut out: Vec<(&Arc<str>, Vec<&Loc>)> = Vec::with_capacity(1);
        for loc in locs.iter() {
            let Some(id) = self.id_at(loc) else { continue };
            match out.iter_mut().find(|(other, _)| *other == id) {
                Some((_, places)) => places.push(loc),
                None => out.push((id, vec![loc])),
            }
        }
        out
    }

    /// Whether the id index says exactly where each node is: every place in it is a node
    /// whose id has the place's key, every node is in it once, and each key's places are in
    /// store order. The first disagreement found, if any.
    pub fn check_id_index(&self) -> std::result::Result<(), String> {
        let mut indexed = 0usize;
        for (key, locs) in self.ids().iter() {
            let mut previous: Option<&Loc> = None;
            for loc in locs.iter() {
                let id = self
                    .id_at(loc)
                    .ok_or_else(|| format!("{}:{} is no node", &*loc.file, loc.index))?;
                if IdKey::of(id) != *key {
                    return Err(format!(
                        "{}:{} ({id}) under another id's key",
                        &*loc.file, loc.index
                    ));
                }
                if previous.is_some_and(|p| (&p.file, p.index) >= (&loc.file, loc.index)) {
                    return Err(format!("the places of {id} are out of order"));
                }
                previous = Some(loc);
                indexed += 1;
            }
        }
        let nodes = self.node_count();
        if indexed != nodes {
            return Err(format!("{indexed} places indexed for {nodes} nodes"));
        }
        Ok(())
    }

    pub(super) fn set_file(
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

    /// [`State::link_file`], or with [`IdUpdates::WhenRead`] and an index no reader has
    /// asked for yet (or an empty one), `doc` alone: the index is then built from every file
    /// when one does.
    pub(super) fn link_file_updating(
        &mut self,
        doc: Arc<FileDoc>,
        changes: IdChanges,
        ids: IdUpdates,
    ) -> Option<Arc<FileDoc>> {
        if ids == IdUpdates::Apply || (self.ids_ready() && !self.ids().is_empty()) {
            return self.link_file(doc, changes);
        }
        let replaced = self.files.insert(doc.path.clone(), doc);
        self.ids = IdIndex::on_demand(self.files.clone());
        replaced
    }

    /// Make `doc` the file's current document, with `changes` (worked out against the
    /// document it replaces) applied to the id index. Returns the document replaced.
    pub(super) fn link_file(
        &mut self,
        doc: Arc<FileDoc>,
        changes: IdChanges,
    ) -> Option<Arc<FileDoc>> {
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
        let key = IdKey::of(&id);
        let ids = self.ids_mut();
        // One lookup for a new id, the usual case; a second for a duplicate.
        let Some(was) = ids.insert(key, IdLocs::One(loc.clone())) else {
            return;
        };
        let mut all: Vec<Loc> = was.iter().cloned().collect();
        all.push(loc);
        // Keep a stable order (file, position) so `node` does not depend on the order
        // files were ingested in.
        all.sort_by(|a, b| (&a.file, a.index).cmp(&(&b.file, b.index)));
        ids.insert(key, IdLocs::Many(Arc::new(all)));
    }

    fn remove_loc(&mut self, id: &Arc<str>, gone: impl Fn(&Loc) -> bool) {
        let key = &IdKey::of(id);
        let ids = self.ids_mut();
        let Some(entry) = ids.get(key) else {
            return;
        };
        let mut rest: Vec<Loc> = entry.iter().filter(|l| !gone(l)).cloned().collect();
        match rest.len() {
            0 => {
                ids.remove(key);
            }
            1 => {
                if let Some(l) = rest.pop() {
                    ids.insert(*key, IdLocs::One(l));
                }
            }
            n if n == entry.len() => {}
            _ => {
                ids.insert(*key, IdLocs::Many(Arc::new(rest)));
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

    pub(super) fn remove_file(&mut self, path: &Arc<str>) -> bool {
        self.unlink_ids(path);
        self.files.remove(path).is_some()
    }

    /// Start building an id index left to its first reader ([`IdUpdates::WhenRead`]) on a
    /// thread of its own; nothing when it is ready or being built.
    pub(super) fn build_ids_now_in_background(&self) {
        self.ids.build_now_in_background();
    }

    /// Index every node's id once all records are loaded (not file by file as they are
    /// replayed), on a thread of its own.
    pub(super) fn index_ids_in_background(&mut self) {
        self.ids = IdIndex::build_in_background(self.files.clone());
    }

    /// Apply one persisted record while loading, in log order, with what `replaying` kept
    /// from the records before it. Ids are not indexed here: call
    /// [`State::index_ids_in_background`] once all records are in, and
    /// [`Replaying::finish`] before the archive is read.
    pub(super) fn replay(
        &mut self,
        rec: Record,
        archive: &mut Archive,
        replaying: &mut Replaying,
    ) -> std::result::Result<(), String> {
        // The version read last waits for the history entry that names it; any other record
        // puts it in the archive first.
        let pending = match &rec {
            Record::History { hash, .. } => replaying.pending.take_if(|c| c.hash == *hash),
            _ => None,
        };
        replaying.settle(archive);
        match rec {
            Record::Version(hash, content) => {
                debug_assert_eq!(content.hash, hash, "a version record is read with its hash");
                replaying.pending = Some(content);
            }
            Record::History { id, hash, time } => {
                // The history is built once every entry is read (see `Replaying::finish`):
                // its key is the first entry's. Compaction writes an id's entries together,
                // so a later one mostly follows that first.
                let key = replaying
                    .entries
                    .last()
                    .map(|(key, _, _)| key)
                    .filter(|key| Arc::ptr_eq(key, &id) || ***key == *id)
                    .cloned();
                let version = match pending {
                    Some(mut content) => {
                        // A later version of an id: its `:ID:` value becomes the id's
                        // allocation (a first one's becomes the key below).
                        if let (Some(key), Some(c)) = (&key, Arc::get_mut(&mut content)) {
                            c.share_id_value(key);
                        }
                        archive.keep_version(content)
                    }
                    // Every commit, and compaction, writes a version before the records
                    // that name it: one the log never wrote is damage.
                    None => match archive.versions.get(&hash) {
                        Some(stored) => stored.0.clone(),
                        None => {
                            return Err(format!(
                                "the history of {id} names a node version the log never wrote"
                            ))
                        }
                    },
                };
                let key = key.unwrap_or_else(|| Archive::history_key(id, &version));
                replaying.entries.push((key.clone(), version.clone(), time));
                replaying.recent.push((version, key));
            }
            Record::RemoveFile(path) => {
                replaying.recent.clear();
                self.files.remove(path.as_str());
            }
            Record::File(FileEntry::Read(rec)) => {
                let doc =
                    doc_from_record(*rec, archive, &replaying.recent, &mut replaying.unplaced)?;
                replaying.recent.clear();
                self.files.insert(doc.path.clone(), Arc::new(doc));
            }
            // Not what decoding makes, but the same file.
            Record::File(FileEntry::Doc(doc)) => {
                replaying.recent.clear();
                self.files.insert(doc.path.clone(), doc);
            }
        }
        Ok(())
    }

    /// Every live record, for compaction: file by file, the histories of its nodes' ids and
    /// its nodes' versions, then its own record (see [`super::archive::ArchiveRecords`]);
    /// then what no live file names.
    pub(super) fn records(&self, archive: &Archive) -> Vec<Record> {
        let mut records = archive.records();
        for doc in self.files.values() {
            for node in &doc.nodes {
                records.history(&node.id);
                records.version(&node.hash());
            }
            records.push(Record::File(FileEntry::Doc(doc.clone())));
        }
        records.finish()
    }
}

/// What replaying the log keeps from one record to the next ([`State::replay`]).
///
/// Every commit, and compaction, writes a node's new version just before its history entry,
/// and a file's new versions and entries just before the file's record. So the records that
/// name a version mostly come right after it, and they find it here. In the archive's
/// tables, each lookup at a million entries is a cache miss or two.
#[derive(Default)]
pub(super) struct Replaying {
    /// The version just read, not yet in the archive: the history entry after it names its
    /// id, whose allocation its `:ID:` value then shares, with no lookup of its own.
    pending: Option<Arc<NodeContent>>,
    /// The versions named by history entries since the last file record, each with its id
    /// as the history's key, in log order.
    recent: Vec<(Arc<NodeContent>, Arc<str>)>,
    /// Every history entry read, in log order: the history is built from them once all are
    /// read ([`Replaying::finish`]).
    entries: Vec<HistoryEntry>,
    /// The nodes whose id no entry just before their file's record gave, by file and index:
    /// each is given its history's key once all entries are read.
    unplaced: Vec<(Arc<str>, u32)>,
}

impl Replaying {
    /// Room for the entries of about `ids` ids.
    pub(super) fn with_room(ids: usize) -> Replaying {
        Replaying {
            entries: Vec::with_capacity(ids),
            ..Replaying::default()
        }
    }

    /// Put a version that no history entry followed into the archive.
    fn settle(&mut self, archive: &mut Archive) {
        if let Some(mut content) = self.pending.take() {
            // A later version of the id just read: its `:ID:` value becomes the id's
            // allocation.
            if let (Some(id), Some((key, _, _))) = (content.id_value(), self.entries.last()) {
                if **id == **key && !Arc::ptr_eq(id, key) {
                    let key = key.clone();
                    if let Some(c) = Arc::get_mut(&mut content) {
                        c.share_id_value(&key);
                    }
                }
            }
            archive.keep_version(content);
        }
    }

    /// Once every record is replayed into `state`: the archive then holds every version
    /// read, each node the `Arc` of its history's key, and the history is being built on a
    /// thread of its own, its table sized for `ids` ([`Archive::build_history`], which
    /// calls `built`).
    pub(super) fn finish(
        mut self,
        state: &mut State,
        archive: &mut Archive,
        ids: usize,
        built: impl FnOnce(usize) + Send + 'static,
    ) {
        self.settle(archive);
        self.place(state);
        archive.build_history(self.entries, ids, built);
    }

    /// Give each unplaced node its history's key: the first entry of its id, as the history
    /// is built. Its document is still the state's alone, so it changes in place.
    fn place(&mut self, state: &mut State) {
        if self.unplaced.is_empty() {
            return;
        }
        let mut keys: HashMap<Arc<str>, Option<Arc<str>>> = HashMap::default();
        for (path, i) in &self.unplaced {
            if let Some(n) = state.files.get(path).and_then(|d| d.nodes.get(*i as usize)) {
                keys.entry(n.id.clone()).or_insert(None);
            }
        }
        let mut left = keys.len();
        for (key, _, _) in &self.entries {
            if left == 0 {
                break;
            }
            if let Some(slot @ None) = keys.get_mut(&**key) {
                *slot = Some(key.clone());
                left -= 1;
            }
        }
        for (path, i) in self.unplaced.drain(..) {
            // A later record of the file replaced its document: its own nodes are listed.
            let Some(doc) = state.files.get_mut(&path).and_then(Arc::get_mut) else {
                continue;
            };
            if let Some(n) = doc.nodes.get_mut(i as usize) {
                if let Some(Some(key)) = keys.get(&*n.id) {
                    n.id = key.clone();
                }
            }
        }
    }
}

/// How far ahead of the last one used a file record's node looks among the recent history
/// entries. Compaction writes all of an id's entries together, and a node's version is
/// mostly the last of them.
const RECENT_LOOKAHEAD: usize = 8;

/// Rebuild a document from its record and the stored versions. Inherited tags are derived
/// again, as parsing did (see `inherit`).
/// Its nodes' versions and ids are looked for first among the `recent` history entries (see
/// [`Replaying`]), in order.
/// The nodes whose id is not their entry's key are added to `unplaced`, by file and index
/// (see [`Replaying::place`]).
fn doc_from_record(
    rec: FileRecord,
    archive: &Archive,
    recent: &[(Arc<NodeContent>, Arc<str>)],
    unplaced: &mut Vec<(Arc<str>, u32)>,
) -> Result<FileDoc, String> {
    let path: Arc<str> = Arc::from(rec.path.as_str());
    let mut nodes: Vec<Node> = Vec::with_capacity(rec.nodes.len());
    let mut logged: Vec<Vec<String>> = Vec::with_capacity(rec.nodes.len());
    let mut next = 0;
    for p in rec.nodes {
        let mut ahead = recent[next..].iter().take(RECENT_LOOKAHEAD);
        let (content, id) = match ahead.position(|(c, _)| c.hash == p.hash) {
            Some(skipped) => {
                let (content, key) = &recent[next + skipped];
                next += skipped + 1;
                let id = if **key == *p.id {
                    key.clone()
                } else {
                    unplaced.push((path.clone(), nodes.len() as u32));
                    Arc::from(p.id.as_str())
                };
                (content.clone(), id)
            }
            None => match archive.versions.get(&p.hash) {
                Some(StoredVersion(content)) => {
                    unplaced.push((path.clone(), nodes.len() as u32));
                    (content.clone(), Arc::from(p.id.as_str()))
                }
                None => {
                    return Err(format!(
                        "file record for {} names an unknown node version",
                        rec.path
                    ))
                }
            },
        };
        logged.push(p.inherited_tags);
        nodes.push(Node {
            id,
            content,
            parent: p.parent.unwrap_or(node::NO_PARENT),
            subtree_end: 0,
            begin: p.begin,
            end: p.end,
            begin_pos: p.begin_pos,
            end_pos: p.end_pos,
            inherited_tags: node::InheritedTags::default(),
        });
    }
    if !node::link_subtrees(&mut nodes) {
        return Err(format!(
            "file record for {}: its nodes are not an outline in document order",
            rec.path
        ));
    }
    if let Some(i) = (0..nodes.len()).find(|&i| !children_as_hashed(&nodes, i as u32)) {
        return Err(format!(
            "file record for {}: node {i} has other children than its version was hashed with",
            rec.path
        ));
    }
    let excluded: Vec<String> =
        inherit::excluded_in_log(&logged, |i| &nodes[i].content.tags, |i| nodes[i].parent())
            .into_iter()
            .map(str::to_string)
            .collect();
    drop(logged);
    inherit::derive(&mut nodes, |t| excluded.iter().any(|e| e == t));
    Ok(FileDoc::new(
        path,
        rec.mtime,
        rec.size,
        rec.text_hash,
        rec.settings,
        rec.file_tags,
        nodes,
    ))
}

/// Whether node `index`'s children in the outline are the ones its version was hashed with:
/// the same hashes in order where the version holds them in memory, as many where they
/// stayed in the log (read only when asked). Each version was checked against its hash as
/// it was decoded, so this makes the outline a Merkle tree of what it places.
fn children_as_hashed(nodes: &[Node], index: u32) -> bool {
    let content = &nodes[index as usize].content;
    let mut placed = node::children(nodes, index).map(|c| nodes[c as usize].hash());
    match content.body.logged() {
        Some(logged) => placed.count() == logged.children() as usize,
        None => placed.by_ref().eq(content.children.iter().copied()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::archive::History;
    use crate::store::hash::Hash;
    use crate::store::persist;
    use crate::store::{Config, Store};

    /// The record of this document, owned: what reading the log gives back.
    fn record(doc: &FileDoc) -> FileRecord {
        FileRecord {
            path: doc.path.to_string(),
            mtime: doc.mtime,
            size: doc.size,
            text_hash: doc.text_hash,
            settings: doc.settings,
            file_tags: doc.file_tags.clone(),
            nodes: doc
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

    /// A headline with an `:ID:` property.
    fn with_id(title: &str, id: &str) -> String {
        format!("* {title}\n:PROPERTIES:\n:ID: {id}\n:END:\n")
    }

    /// Ingest `parts`, one after the other, as the text of `file`.
    fn ingest_parts(store: &Store, file: &str, parts: &[String]) {
        store
            .ingest_text(file, &parts.concat(), None, None, None)
            .expect("ingest");
    }

    #[test]
    fn a_file_record_whose_outline_is_not_its_versions_children_is_damage() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/f.org", "* A\n** B\n* C\n", None, None, None)
            .expect("ingest");
        let doc = store.state().files["/n/f.org"].clone();
        let mut archive = std::mem::take(&mut *store.archive.lock());
        let mut rec = record(&doc);
        assert_eq!(rec.nodes[2].parent, Some(1));
        let replayed = State::default().replay(
            Record::File(FileEntry::Read(Box::new(rec.clone()))),
            &mut archive,
            &mut Replaying::default(),
        );
        assert_eq!(replayed, Ok(()));
        // B under the file node instead of A: still an outline, but not the one hashed.
        rec.nodes[2].parent = Some(0);
        let e = State::default()
            .replay(
                Record::File(FileEntry::Read(Box::new(rec))),
                &mut archive,
                &mut Replaying::default(),
            )
            .expect_err("the file node has two children, not three");
        assert!(e.contains("node 0 has other children"), "{e}");
    }

    /// Compaction writes each version once, before every record that names it, and as many
    /// records as the archive and the files hold, whatever order it picks.
    #[test]
    fn compaction_writes_each_version_before_the_records_that_name_it() {
        let store = Store::in_memory(Config::default());
        let ingest = |file: &str, parts: &[String]| ingest_parts(&store, file, parts);
        let plain = "* Plain\n** Child\n** Child\n".to_string();
        ingest(
            "/n/a.org",
            &[with_id("A", "a"), with_id("D", "dup"), plain.clone()],
        );
        ingest(
            "/n/b.org",
            &[with_id("B", "b"), with_id("D", "dup"), plain.clone()],
        );
        // Histories of several versions, one going back to where it was.
        ingest(
            "/n/a.org",
            &[with_id("A2", "a"), with_id("D", "dup"), plain.clone()],
        );
        ingest(
            "/n/a.org",
            &[with_id("A", "a"), with_id("D2", "dup"), plain],
        );
        // Histories no live file names any more.
        ingest("/n/c.org", &[with_id("C", "c")]);
        assert!(store.remove_file("/n/c.org"));
        let state = store.state();
        let archive = store.archive.lock();
        let records = state.records(&archive);
        let mut written: std::collections::HashSet<Hash> = Default::default();
        let (mut entries, mut files) = (0, 0);
        for record in &records {
            match record {
                Record::Version(hash, _) => assert!(written.insert(*hash), "written twice"),
                Record::History { id, hash, .. } => {
                    assert!(written.contains(hash), "a version of {id} after its entry");
                    entries += 1;
                }
                Record::File(FileEntry::Doc(doc)) => {
                    for n in &doc.nodes {
                        assert!(written.contains(&n.hash()), "{} before its nodes", doc.path);
                    }
                    files += 1;
                }
                other => panic!("compaction wrote {other:?}"),
            }
        }
        assert_eq!(written.len(), archive.versions.len());
        let histories: usize = archive.history.values().map(History::len).sum();
        assert_eq!(entries, histories);
        assert!(archive.history["a"].len() == 3 && archive.history.contains_key("c"));
        assert_eq!(files, state.files.len());
    }

    /// A replay finds most versions and ids among the records just before the file record
    /// that names them (see `Replaying`), and the rest in the archive. Either way, each node
    /// holds the archive's version and its history's id, and an `:ID:` value is that id.
    #[test]
    fn a_replayed_node_holds_the_archive_s_version_and_id_however_far_back_they_were_written() {
        let store = Store::in_memory(Config::default());
        let ingest = |file: &str, parts: &[String]| ingest_parts(&store, file, parts);
        // More versions of `long` than a file record looks ahead; `dup` on two nodes of one
        // version; two headlines of one version and no id.
        for v in 0..RECENT_LOOKAHEAD + 3 {
            ingest(
                "/n/a.org",
                &[
                    with_id(&format!("Long {v}"), "long"),
                    with_id("D", "dup"),
                    with_id("D", "dup"),
                    "* Same\n* Same\n".to_string(),
                    with_id("After", "after"),
                ],
            );
        }
        ingest("/n/b.org", &[with_id("B", "b"), with_id("D", "dup")]);
        let state = store.state();
        let archive = store.archive.lock();
        // As compaction writes them, read back as an open reads them.
        let records: Vec<Record> = state
            .records(&archive)
            .into_iter()
            .map(|r| match r {
                Record::File(FileEntry::Doc(doc)) => {
                    Record::File(FileEntry::Read(Box::new(record(&doc))))
                }
                other => other,
            })
            .collect();
        let bytes = postcard::to_allocvec(&records).expect("encodes");
        // As decoded alone, and as an open's decoding threads hand them on.
        for shared in [false, true] {
            let mut read: Vec<Record> = postcard::from_bytes(&bytes).expect("decodes");
            if shared {
                read = crate::store::persist::share_ids(read);
            }
            check_replayed(&state, &archive, read);
        }
    }

    /// `read` replayed holds what `state` and `archive` hold, and each node the archive's
    /// version and its history's id (see the test above).
    fn check_replayed(state: &State, archive: &Archive, read: Vec<Record>) {
        let mut replayed = State::default();
        let mut replayed_archive = Archive::default();
        let mut replaying = Replaying::default();
        for rec in read {
            replayed
                .replay(rec, &mut replayed_archive, &mut replaying)
                .expect("replays");
        }
        replaying.finish(&mut replayed, &mut replayed_archive, 0, |_| ());
        replayed_archive.complete_history();
        assert_eq!(replayed_archive.versions.len(), archive.versions.len());
        assert_eq!(replayed_archive.history.len(), archive.history.len());
        assert_eq!(replayed_archive.history["long"].len(), RECENT_LOOKAHEAD + 3);
        let held = |hash: &Hash| replayed_archive.versions.get(hash).expect("held").0.clone();
        for (path, doc) in &state.files {
            let again = &replayed.files[path];
            let placed = |d: &FileDoc| -> Vec<(Hash, String)> {
                d.nodes
                    .iter()
                    .map(|n| (n.hash(), n.id.to_string()))
                    .collect()
            };
            assert_eq!(placed(again), placed(doc), "{path}");
            for n in &again.nodes {
                assert!(
                    Arc::ptr_eq(&n.content, &held(&n.hash())),
                    "{path}: {}",
                    n.id
                );
                let (key, _) = replayed_archive
                    .history
                    .get_key_value(&*n.id)
                    .expect("a history");
                assert!(Arc::ptr_eq(key, &n.id), "{path}: {}", n.id);
                if let Some(value) = n.content.id_value() {
                    assert!(Arc::ptr_eq(value, &n.id), "{path}: {}", n.id);
                }
            }
        }
        for (id, history) in &replayed_archive.history {
            assert_eq!(history.len(), archive.history[id].len(), "{id}");
            for (content, _) in history.iter() {
                assert!(Arc::ptr_eq(content, &held(&content.hash)), "{id}");
                if let Some(value) = content.id_value() {
                    assert!(Arc::ptr_eq(value, id), "{id}");
                }
            }
        }
    }

    /// A history entry right after its version holds the version's `:ID:` value itself when
    /// it is that text, and a copy of its own otherwise.
    #[test]
    fn decoding_shares_an_entry_s_id_with_the_version_just_before_it() {
        let store = Store::in_memory(Config::default());
        ingest_parts(&store, "/n/a.org", &[with_id("A", "a"), with_id("B", "b")]);
        let state = store.state();
        let archive = store.archive.lock();
        let records = state.records(&archive);
        let bytes = postcard::to_allocvec(&records).expect("encodes");
        let decoded: Vec<Record> = postcard::from_bytes(&bytes).expect("decodes");
        // The entry of `b` follows `a`'s version in this copy, so it must not take its value.
        let mut moved: Vec<Record> = postcard::from_bytes(&bytes).expect("decodes");
        let b_entry = moved
            .iter()
            .position(|r| matches!(r, Record::History { id, .. } if &**id == "b"))
            .expect("b's entry");
        let b_entry = moved.remove(b_entry);
        let a_version = moved
            .iter()
            .position(|r| matches!(r, Record::Version(_, c) if c.title.as_ref() == "A"))
            .expect("a's version");
        moved.insert(a_version + 1, b_entry);
        for (records, of_its_own, pairs) in [(decoded, None, 2), (moved, Some("b"), 1)] {
            let records = crate::store::persist::share_ids(records);
            let mut entries = 0;
            for pair in records.windows(2) {
                if let [Record::Version(_, content), Record::History { id, .. }] = pair {
                    // The file node has no `:ID:`.
                    let Some(value) = content.id_value() else {
                        continue;
                    };
                    let shared = Arc::ptr_eq(value, id);
                    assert_eq!(shared, of_its_own != Some(&**id), "{id}");
                    entries += 1;
                }
            }
            assert_eq!(entries, pairs, "entries right after a version with an :ID:");
        }
    }

    /// Ids that share a key (see `ids::SHARED_KEY_PREFIX`) are each found where they are,
    /// and only there, as files come, change and go.
    #[test]
    fn ids_that_share_a_key_are_told_apart_by_their_nodes() {
        let store = Store::in_memory(Config::default());
        let ingest = |file: &str, text: &str| {
            store
                .ingest_text(file, text, None, None, None)
                .expect("ingest");
            let state = store.state();
            state
                .check_id_index()
                .expect("the index agrees with the files");
            state
        };
        let title =
            |state: &State, id: &str| state.node(id).map(|n| n.node().content.title.to_string());
        let a = [
            with_id("A", "same-key-a"),
            with_id("A2", "same-key-a"),
            with_id("P", "plain"),
        ];
        ingest("/n/a.org", &a.concat());
        let state = ingest("/n/b.org", &with_id("B", "same-key-b"));
        assert_eq!(title(&state, "same-key-a").as_deref(), Some("A"));
        assert_eq!(title(&state, "same-key-a#2").as_deref(), Some("A2"));
        assert_eq!(title(&state, "same-key-b").as_deref(), Some("B"));
        assert_eq!(title(&state, "same-key-b#2"), None);
        assert_eq!(title(&state, "plain").as_deref(), Some("P"));
        assert!(!state.has_id("same-key-c"), "a key no node's id is");
        assert_eq!(state.id_places("same-key-a").count(), 2);
        assert_eq!(state.id_places("same-key-b").count(), 1);
        let duplicated: Vec<(String, usize)> = state
            .duplicated_ids()
            .map(|(id, places)| (id.to_string(), places.len()))
            .collect();
        assert_eq!(duplicated, [("same-key-a".to_string(), 2)]);
        let mut ids: Vec<String> = state
            .ids_and_places()
            // The file nodes' ids, made up by the store.
            .filter(|(id, _)| !id.starts_with("oa-"))
            .map(|(id, _)| id.to_string())
            .collect();
        ids.sort();
        assert_eq!(ids, ["plain", "same-key-a", "same-key-b"]);
        let places: usize = state.ids_and_places().map(|(_, p)| p.len()).sum();
        assert_eq!(places, state.node_count());
        // A2 takes B's id: the place under the key stays, its id changes.
        let a = [with_id("A", "same-key-a"), with_id("A2", "same-key-b")];
        let state = ingest("/n/a.org", &a.concat());
        assert_eq!(state.id_places("same-key-a").count(), 1);
        assert_eq!(title(&state, "same-key-b").as_deref(), Some("A2"));
        assert_eq!(title(&state, "same-key-b#2").as_deref(), Some("B"));
        assert_eq!(title(&state, "plain"), None);
        assert!(store.remove_file("/n/a.org"));
        let state = store.state();
        state
            .check_id_index()
            .expect("the index agrees with the files");
        assert_eq!(title(&state, "same-key-a"), None);
        assert_eq!(title(&state, "same-key-b").as_deref(), Some("B"));
    }

    /// Every record of a batch is as big as the largest kind, and an open moves each one
    /// from the decoder to the replay: the file record stays boxed.
    #[test]
    fn a_log_record_is_no_bigger_than_a_history_entry() {
        assert!(
            std::mem::size_of::<Record>() <= 64,
            "{}",
            std::mem::size_of::<Record>()
        );
    }

    #[test]
    fn a_history_entry_of_a_version_never_written_is_damage() {
        let mut state = State::default();
        let mut archive = Archive::default();
        let e = state
            .replay(
                Record::History {
                    id: "x".into(),
                    hash: crate::store::Hash([9; 32]),
                    time: 1,
                },
                &mut archive,
                &mut Replaying::default(),
            )
            .expect_err("no such version");
        assert!(
            e.contains("history of x") && e.contains("never wrote"),
            "{e}"
        );
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
        let owned = persist::encode_batch(&[Record::File(FileEntry::Read(Box::new(record(&doc))))]);
        let borrowed = persist::encode_batch(&[Record::File(FileEntry::Doc(doc.clone()))]);
        assert_eq!(owned, borrowed);
        // And it reads back as the owned record.
        let payload = &borrowed[persist::HEADER_LEN..borrowed.len() - 4];
        let read: Vec<Record> = postcard::from_bytes(payload).expect("decode");
        match &read[..] {
            [Record::File(FileEntry::Read(rec))] => assert_eq!(**rec, record(&doc)),
            other => panic!("{other:?}"),
        }
    }

    /// Inherited tags read back from the log are those parsing gave, from a log written as
    /// now (derived, the excluded tags in the file node's list) and from one written before
    /// (each node's whole list), with a tag excluded from inheritance.
    #[test]
    fn inherited_tags_read_back_from_either_log() {
        let store = Store::in_memory(Config {
            no_inherit_tags: vec!["x".into(), "ft2".into()],
            ..Config::default()
        });
        let text = "#+FILETAGS: :ft:ft2:\n* A :a:x:\n** B :b:a:\n*** C\n** D :x:\n*** E\n* F\n";
        store
            .ingest_text("/n/f.org", text, None, None, None)
            .expect("ingest");
        let doc = store
            .state()
            .files
            .get("/n/f.org")
            .expect("the file")
            .clone();
        let inherited = |d: &FileDoc| -> Vec<String> {
            d.nodes.iter().map(|n| n.inherited().join(" ")).collect()
        };
        let parsed = inherited(&doc);
        assert_eq!(parsed, ["", "ft", "ft", "ft b a", "ft a", "ft a", "ft"]);
        let now = record(&doc);
        assert_eq!(now.nodes[0].inherited_tags, [inherit::DERIVED, "ft2", "x"]);
        assert!(now.nodes[1..].iter().all(|p| p.inherited_tags.is_empty()));
        let mut before = now.clone();
        // Then every tag of the ancestors that was inherited, once, the node's own too.
        for (p, n) in before.nodes.iter_mut().zip(&doc.nodes) {
            let all: Vec<&str> = n.inherited_tags.iter().collect();
            p.inherited_tags = node::keep_last(all.into_iter().rev())
                .iter()
                .map(|t| t.to_string())
                .collect();
        }
        let archive = store.archive.lock();
        for rec in [now, before] {
            let read = doc_from_record(rec, &archive, &[], &mut Vec::new()).expect("reads");
            assert_eq!(inherited(&read), parsed);
        }
    }
}
