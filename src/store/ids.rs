//! Where each node id sits: the id index of a state ([`IdMap`]), built from scratch on a
//! thread of its own after an open, then changed by what each commit changes
//! ([`IdChanges`]) rather than rebuilt. An id's places are kept in (file, position) order,
//! so which copy of a duplicated id is "the" node does not depend on ingest order.

use super::file_doc::{FileDoc, Files};
use super::memory::release_freed_memory;
use parking_lot::Mutex;
use std::sync::Arc;

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

/// An id as the id map's key: a 64-bit hash of its text, keyed with a random key drawn
/// once per process (SipHash), so notes cannot be written to make ids share keys.
///
/// A plain integer is what a B-tree of a million ids wants: comparing two keys follows no
/// pointer to the text, and copying or freeing a leaf counts no references. Keyed by the
/// text itself (an `Arc<str>` and its first eight bytes), an entry was 40 bytes where it is
/// now 24, and inserting a million ids one file at a time took 40% longer.
///
/// Two ids may share a key (with a million ids, about one chance in thirty million that
/// any two do): a key's places are then those of both, and readers keep only the places whose
/// node carries the id they asked for ([`super::State::id_places`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdKey(u64);

impl IdKey {
    pub fn of(id: &str) -> IdKey {
        use std::hash::BuildHasher;
        // Unit tests make ids share a key at will: no two ids of 64-bit hashes are known to.
        #[cfg(test)]
        if id.starts_with(SHARED_KEY_PREFIX) {
            return IdKey(42);
        }
        static KEY: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        IdKey(KEY.get_or_init(Default::default).hash_one(id))
    }

    /// A key given outright, for tests.
    #[cfg(test)]
    pub(super) fn raw(key: u64) -> IdKey {
        IdKey(key)
    }
}

/// In unit tests, every id starting with this has one key.
#[cfg(test)]
pub(super) const SHARED_KEY_PREFIX: &str = "same-key-";

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

/// Where each id sits, by its key: the places of every node whose id has that key, in
/// (file, position) order. A B-tree rather than a hash trie: at 100,000 ids the trie took
/// about 500 bytes per entry, the tree takes about 30.
pub type IdMap = imbl::OrdMap<IdKey, IdLocs>;

/// A state's [`IdMap`], ready or still being built. Building it for every id after loading
/// was a quarter of opening the store (about 50 ms at 100,000 ids, mostly B-tree inserts), so
/// opening hands it to a thread of its own and returns; the first reader waits for the rest.
/// A first directory ingest leaves it to be built by the first reader instead (see
/// [`super::state::IdUpdates`]); every other commit makes a state with it ready.
#[derive(Clone)]
pub(super) struct IdIndex(Arc<IdIndexInner>);

struct IdIndexInner {
    ready: std::sync::OnceLock<IdMap>,
    /// The build under way (none: the first reader builds it), and the files it reads, to
    /// build them there when the thread failed.
    building: Mutex<Option<(Option<std::thread::JoinHandle<IdMap>>, Files)>>,
}

impl Default for IdIndex {
    fn default() -> IdIndex {
        IdIndex::ready(IdMap::new())
    }
}

impl IdIndex {
    pub(super) fn ready(map: IdMap) -> IdIndex {
        IdIndex(Arc::new(IdIndexInner {
            ready: std::sync::OnceLock::from(map),
            building: Mutex::new(None),
        }))
    }

    /// The index of `files`, built on a thread of its own (by the first reader, if none can
    /// start).
    pub(super) fn build_in_background(files: Files) -> IdIndex {
        let handle = spawn_build(files.clone());
        IdIndex(Arc::new(IdIndexInner {
            ready: std::sync::OnceLock::new(),
            building: Mutex::new(Some((handle, files))),
        }))
    }

    /// Start the build an index left to its first reader ([`IdIndex::on_demand`]) waits for,
    /// on a thread of its own, so that no reader pays for it. Does nothing to an index that
    /// is ready or being built.
    pub(super) fn build_now_in_background(&self) {
        let mut building = self.0.building.lock();
        if let Some((handle @ None, files)) = building.as_mut() {
            *handle = spawn_build(files.clone());
        }
    }

    /// The index of `files`, built by the first reader that asks for it.
    pub(super) fn on_demand(files: Files) -> IdIndex {
        IdIndex(Arc::new(IdIndexInner {
            ready: std::sync::OnceLock::new(),
            building: Mutex::new(Some((None, files))),
        }))
    }

    /// Whether the map waits for its first reader to build it: no build is under way.
    #[cfg(test)]
    pub(super) fn left_to_first_reader(&self) -> bool {
        matches!(*self.0.building.lock(), Some((None, _)))
    }

    /// Whether the map is there without waiting for, or doing, a build.
    pub(super) fn is_ready(&self) -> bool {
        self.0.ready.get().is_some()
    }

    pub(super) fn get(&self) -> &IdMap {
        if let Some(map) = self.0.ready.get() {
            return map;
        }
        let mut building = self.0.building.lock();
        if let Some((handle, files)) = building.take() {
            let map = handle
                .and_then(|h| h.join().ok())
                .unwrap_or_else(|| build_id_map(&files));
            let _ = self.0.ready.set(map);
        }
        drop(building);
        // Set above, or by the reader that held the lock before us.
        self.0.ready.get_or_init(IdMap::new)
    }

    /// The map, to change: this index's own copy (an O(1) clone of a shared one), ready.
    pub(super) fn get_mut(&mut self) -> &mut IdMap {
        if Arc::get_mut(&mut self.0).is_none() || self.0.ready.get().is_none() {
            *self = IdIndex::ready(self.get().clone());
        }
        let inner = Arc::get_mut(&mut self.0).expect("a fresh index is not shared");
        inner.ready.get_mut().expect("a fresh index is ready")
    }
}

/// A thread building the index of `files`; none when no thread can start (the first reader
/// then builds it).
fn spawn_build(files: Files) -> Option<std::thread::JoinHandle<IdMap>> {
    std::thread::Builder::new()
        .name("org-agent-ids".into())
        .spawn(move || {
            crate::block_sigpipe();
            let map = build_id_map(&files);
            // The sort's scratch space is this thread's to hand back, as `open` does with
            // what loading freed.
            release_freed_memory();
            map
        })
        .ok()
}

/// Index every node's id from scratch (sorted once, then built in key order).
fn build_id_map(files: &Files) -> IdMap {
    let mut all: Vec<(IdKey, Loc)> =
        Vec::with_capacity(files.values().map(|f| f.nodes.len()).sum());
    for (path, doc) in files.iter() {
        let file = FileKey::new(path);
        for (i, n) in doc.nodes.iter().enumerate() {
            let loc = Loc {
                file: file.clone(),
                index: i as u32,
            };
            all.push((IdKey::of(&n.id), loc));
        }
    }
    // Stable: a key's places stay in (file, position) order, as `add_loc` keeps them.
    all.sort_by_key(|(key, _)| *key);
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
/// fixed-size block (~1.5 KB), so at 100k ids half the index was empty slots. Here the first
/// pass inserts, of each run of `ID_MAP_LEAF + 1` keys, every other one of the first
/// `ID_MAP_LEAF` and then the last: the splits leave leaves of `ID_MAP_LEAF / 2` keys with
/// that last key between them. The second pass inserts the keys skipped, each into a leaf
/// with room for it, so leaves end full. Only the layout depends on how `imbl` splits; the
/// map is the same either way.
fn fill_in_two_passes(entries: impl Iterator<Item = (IdKey, IdLocs)>) -> IdMap {
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
pub(super) struct IdChanges {
    pub(super) gone: Vec<(Arc<str>, u32)>,
    pub(super) new: Vec<(Arc<str>, u32)>,
}

impl IdChanges {
    pub(super) fn between(old: Option<&FileDoc>, doc: &FileDoc) -> IdChanges {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_map_filled_in_two_passes_is_the_map_of_its_entries() {
        // Key and value, 24 bytes: an 8-byte key and a place.
        assert_eq!(std::mem::size_of::<(IdKey, IdLocs)>(), 24);
        for n in [0, 1, 2, 63, 64, 65, 66, 129, 130, 131, 1000, 4161] {
            let entries: Vec<(IdKey, IdLocs)> = (0..n)
                .map(|i| {
                    let loc = Loc {
                        file: FileKey::new(&Arc::from(format!("/f{}.org", i % 7).as_str())),
                        index: i as u32,
                    };
                    (IdKey::raw(i as u64 * 3), IdLocs::One(loc))
                })
                .collect();
            let map = fill_in_two_passes(entries.clone().into_iter());
            assert_eq!(map.len(), n, "{n} entries");
            let got: Vec<(IdKey, u32)> = map
                .iter()
                .map(|(key, locs)| (*key, locs.first().index))
                .collect();
            let want: Vec<(IdKey, u32)> = entries
                .iter()
                .map(|(key, locs)| (*key, locs.first().index))
                .collect();
            assert_eq!(got, want, "{n} entries");
        }
    }

    #[test]
    fn an_id_has_one_key_and_ids_that_differ_keys_that_differ() {
        let texts = [
            "",
            "a",
            "a\u{0}",
            "a\u{0}b",
            "abcdefgh",
            "abcdefghi",
            "é",
            "ée",
            "72ae438b-5b2a-cfcb-0927-20c66cd8ec3f",
            "72ae438b-5b2a-cfcb-0927-20c66cd8ec3e",
        ];
        for x in texts {
            assert_eq!(IdKey::of(x), IdKey::of(&String::from(x)), "{x:?}");
            for y in texts {
                assert_eq!(IdKey::of(x) == IdKey::of(y), x == y, "{x:?} {y:?}");
            }
        }
        let keys: std::collections::HashSet<IdKey> = (0..100_000)
            .map(|i| IdKey::of(&format!("id-{i}")))
            .collect();
        assert_eq!(keys.len(), 100_000);
    }
}
