//! Every node version the store has seen, and each id's history of versions. Append-only
//! and shared by every state and snapshot rather than part of them; each version is held
//! once (one `Arc` per hash), and ids share the allocation of their history's key.

use super::file_doc::FileDoc;
use super::hash::Hash;
use super::node::{Node, NodeContent};
use super::persist::Record;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// One version of a node in its history.
#[derive(Clone, Debug)]
pub struct Version {
    pub hash: Hash,
    /// Seconds since the epoch when this version was first seen.
    pub time: i64,
    pub content: Arc<NodeContent>,
}

/// Every node version ever seen and each id's history. Append-only, so it is shared by all
/// states and snapshots instead of being part of them.
#[derive(Default)]
pub struct Archive {
    pub versions: Versions,
    /// Each id's versions, oldest first, with the time each was first seen. The key is the
    /// same `Arc` as the nodes' ids, and each version the same `Arc` as in `versions`: an
    /// entry is 16 bytes where a hash and a time were 40. Complete only once
    /// [`Archive::complete_history`] has waited for a history still being built
    /// ([`ArchiveLock::lock`] does).
    pub history: HistoryTable,
    /// The history a replay left building on a thread of its own (see
    /// [`Archive::build_history`]).
    building: Option<std::thread::JoinHandle<HistoryTable>>,
}

/// Each id's history, by id.
pub type HistoryTable = HashMap<Arc<str>, History>;

/// One history entry as a replay reads it, in log order: the id (the key its history gets
/// when it is the id's first), the version and the time it was first seen.
pub(super) type HistoryEntry = (Arc<str>, Arc<NodeContent>, i64);

impl Drop for Archive {
    /// A history still being built is waited for, so that what its thread does last (the
    /// size hint beside the log) is done before the next open of the same log.
    fn drop(&mut self) {
        if let Some(building) = self.building.take() {
            // Dropped either way: a panic there has nothing more to tell here.
            let _ = building.join();
        }
    }
}

/// The archive behind the store's lock. Taking it waits first for a history that an open
/// left building, so no caller ever sees part of one.
pub(super) struct ArchiveLock(parking_lot::Mutex<Archive>);

impl ArchiveLock {
    pub(super) fn new(archive: Archive) -> ArchiveLock {
        ArchiveLock(parking_lot::Mutex::new(archive))
    }

    pub(super) fn lock(&self) -> parking_lot::MutexGuard<'_, Archive> {
        let mut archive = self.0.lock();
        archive.complete_history();
        archive
    }

    pub(super) fn into_inner(self) -> Archive {
        let mut archive = self.0.into_inner();
        archive.complete_history();
        archive
    }
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
    pub(super) fn new(version: Arc<NodeContent>, time: i64) -> History {
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

    pub(super) fn push(&mut self, entry: (Arc<NodeContent>, i64)) {
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
    /// Build the history from a replay's `entries` (in log order) on a thread of its own,
    /// its table sized for `ids`; `built` is then called there with how many ids it holds.
    /// At a million ids, each entry's insert is a cache miss or two: building the table
    /// during the open took about a tenth of the open's time, and nothing an open returns
    /// for (the files, their nodes, queries) reads it. Ingests, compaction and a node's
    /// history wait for it ([`ArchiveLock::lock`]). When no thread can start, it is built
    /// on the caller's.
    pub(super) fn build_history(
        &mut self,
        entries: Vec<HistoryEntry>,
        ids: usize,
        built: impl FnOnce(usize) + Send + 'static,
    ) {
        self.complete_history();
        let mut table = std::mem::take(&mut self.history);
        let build = move || {
            table.reserve(ids);
            for (key, version, time) in entries {
                match table.entry(key) {
                    Entry::Occupied(mut held) => held.get_mut().push((version, time)),
                    Entry::Vacant(slot) => {
                        slot.insert(History::new(version, time));
                    }
                }
            }
            built(table.len());
            table
        };
        // Handed to the thread once it runs, so that it is still here when none can start.
        type Build = Box<dyn FnOnce() -> HistoryTable + Send>;
        let build: Build = Box::new(build);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Build>(1);
        let spawned = std::thread::Builder::new()
            .name("org-agent-history".into())
            .spawn(move || {
                crate::start_module_thread();
                rx.recv().map(|build| build()).unwrap_or_default()
            });
        match spawned {
            Ok(handle) => match tx.send(build) {
                Ok(()) => self.building = Some(handle),
                Err(std::sync::mpsc::SendError(build)) => self.history = build(),
            },
            Err(_) => self.history = build(),
        }
    }

    /// Wait for a history still being built ([`Archive::build_history`]) and hold it.
    pub(super) fn complete_history(&mut self) {
        if let Some(building) = self.building.take() {
            // The thread only inserts into a table it owns. Should it have panicked, going
            // on with an empty history would lose every id's history at the next
            // compaction: the panic goes on to the caller, as if it had built it itself.
            match building.join() {
                Ok(table) => self.history = table,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }

    /// `content` as the archive's version of its hash: the one already held when the log
    /// wrote it twice (histories hold that `Arc`), else `content`, now held.
    pub(super) fn keep_version(&mut self, content: Arc<NodeContent>) -> Arc<NodeContent> {
        if let Some(StoredVersion(held)) = self.versions.get(&content.hash) {
            return held.clone();
        }
        self.versions.insert(StoredVersion(content.clone()));
        content
    }

    /// Make `nodes` share what the archive already holds (a fresh parse allocates its own):
    /// the versions, so the unchanged headlines of a re-ingested file are not in memory
    /// twice, and the ids, which an `:ID:` property's value shares too.
    pub(super) fn share_with(&self, nodes: &mut [Node]) {
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
    pub(super) fn history_key(id: Arc<str>, version: &NodeContent) -> Arc<str> {
        match version.id_value() {
            Some(value) if !Arc::ptr_eq(value, &id) && **value == *id => value.clone(),
            _ => id,
        }
    }

    /// Record the versions and history of `doc`, given the file's previous document.
    pub(super) fn add(
        &mut self,
        doc: &FileDoc,
        old: Option<&FileDoc>,
        time: i64,
        records: &mut Vec<Record>,
    ) {
        // What each (id, occurrence) was in this file before: a node's history grows only
        // when it changed here, so headlines sharing an :ID: do not push each other's
        // versions on every ingest.
        let old_len = old.map_or(0, |o| o.nodes.len());
        let mut before: HashMap<(&str, u32), Hash> =
            HashMap::with_capacity_and_hasher(old_len, Default::default());
        if let Some(old) = old {
            let mut seen: HashMap<&str, u32> =
                HashMap::with_capacity_and_hasher(old_len, Default::default());
            for n in &old.nodes {
                let k = seen.entry(&n.id).or_insert(0);
                before.insert((&n.id, *k), n.hash());
                *k += 1;
            }
        }
        let first_time = old.is_none();
        // Only read when the file was stored before.
        let seen_len = if first_time { 0 } else { doc.nodes.len() };
        let mut seen: HashMap<&str, u32> =
            HashMap::with_capacity_and_hasher(seen_len, Default::default());
        // A version and a history entry a node at most, and the file's own record.
        records.reserve(2 * doc.nodes.len() + 1);
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
                    id: n.id.clone(),
                    hash: n.hash(),
                    time,
                });
            }
        }
    }

    /// Start writing the archive out as records, for compaction ([`ArchiveRecords`]).
    pub(super) fn records(&self) -> ArchiveRecords<'_> {
        ArchiveRecords {
            archive: self,
            versions: HashSet::default(),
            ids: HashSet::default(),
            out: Vec::new(),
        }
    }
}

/// The archive written out as records, for compaction, in the order a replay finds
/// cheapest: a history's versions just before its entries, asked for id by id as the files
/// hold them, so that each version a replay looks up (for a history entry, for a file's
/// node) is among those it has just read and still in the cache. Written all versions
/// first, then all histories, in the tables' own order, every lookup was a cache miss, and
/// the replay of a million headlines spent a third of its time waiting on them.
///
/// Each version is written once, before the first record that names it, and each history
/// entry once: the same records as any order.
pub(super) struct ArchiveRecords<'a> {
    archive: &'a Archive,
    /// The versions written, by their `Arc` (one per hash in the table).
    versions: HashSet<usize>,
    /// The ids whose history is written, by the history's key.
    ids: HashSet<usize>,
    out: Vec<Record>,
}

impl ArchiveRecords<'_> {
    /// The history of `id`, each version it names first, unless written already.
    pub(super) fn history(&mut self, id: &str) {
        let archive = self.archive;
        let Some((key, hist)) = archive.history.get_key_value(id) else {
            return;
        };
        if !self.ids.insert(Arc::as_ptr(key) as *const u8 as usize) {
            return;
        }
        for (content, time) in hist.iter() {
            // Only entries whose version the table holds (as the same `Arc`) are written.
            if self
                .version(&content.hash)
                .is_some_and(|c| Arc::ptr_eq(c, content))
            {
                self.out.push(Record::History {
                    id: key.clone(),
                    hash: content.hash,
                    time: *time,
                });
            }
        }
    }

    /// The version `hash`, unless written already; the table's version, if it holds one.
    pub(super) fn version(&mut self, hash: &Hash) -> Option<&Arc<NodeContent>> {
        let StoredVersion(content) = self.archive.versions.get(hash)?;
        if self.versions.insert(Arc::as_ptr(content) as usize) {
            self.out
                .push(Record::Version(content.hash, content.clone()));
        }
        Some(content)
    }

    /// A record of the caller's, in its place among these.
    pub(super) fn push(&mut self, record: Record) {
        self.out.push(record);
    }

    /// The records, with every history and version not asked for after them.
    pub(super) fn finish(mut self) -> Vec<Record> {
        let archive = self.archive;
        for id in archive.history.keys() {
            self.history(id);
        }
        for StoredVersion(content) in archive.versions.iter() {
            self.version(&content.hash);
        }
        self.out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::parse;
    use std::path::Path;
    /// The history a replay leaves building holds every entry in log order, each id keyed
    /// by its first entry's `Arc`, whoever reads it first.
    #[test]
    fn a_history_built_after_a_replay_keeps_log_order_and_each_first_key() {
        let parsed =
            parse::parse_with_defaults("* a\n* b\n* c\n", Path::new("/h.org")).expect("parses");
        let v: Vec<Arc<NodeContent>> = parsed.nodes.iter().map(|n| n.content.clone()).collect();
        let first: Arc<str> = Arc::from("x");
        let entries = vec![
            (first.clone(), v[1].clone(), 10),
            (Arc::from("y"), v[2].clone(), 20),
            // A later entry of `x` read a commit later, with an `Arc` of its own.
            (Arc::from("x"), v[3].clone(), 30),
        ];
        let mut archive = Archive::default();
        let (told, counted) = std::sync::mpsc::channel();
        archive.build_history(entries, 2, move |ids| {
            let _ = told.send(ids);
        });
        let archive = ArchiveLock::new(archive);
        let archive = archive.lock();
        assert_eq!(
            counted.recv().ok(),
            Some(2),
            "told how many ids, once built"
        );
        let (key, x) = archive.history.get_key_value("x").expect("x");
        assert!(Arc::ptr_eq(key, &first));
        let got: Vec<(bool, i64)> = x.iter().map(|(c, t)| (Arc::ptr_eq(c, &v[1]), *t)).collect();
        assert_eq!(got, [(true, 10), (false, 30)]);
        assert!(x.last().is_some_and(|(c, _)| Arc::ptr_eq(c, &v[3])));
        assert_eq!(archive.history["y"].len(), 1);
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
}
