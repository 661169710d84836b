//! Every node version the store has seen, and each id's history of versions. Append-only
//! and shared by every state and snapshot rather than part of them; each version is held
//! once (one `Arc` per hash), and ids share the allocation of their history's key.

use super::file_doc::FileDoc;
use super::hash::Hash;
use super::node::{Node, NodeContent};
use super::persist::Record;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
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
    /// `id` as the `Arc` the history already holds, so each id is in memory once.
    pub(super) fn intern(&self, id: &str) -> Arc<str> {
        match self.history.get_key_value(id) {
            Some((k, _)) => k.clone(),
            None => Arc::from(id),
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
