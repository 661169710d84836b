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
/// where the path's own `Arc<str>` was 16, so a place fits the map's 16-byte value and an
/// entry of the map is 24 bytes. Reads, compares and orders as the path.
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
/// A plain integer compares without following a pointer to the text and copies without
/// counting a reference, and its top bits, uniform, say which bucket of an [`IdMap`] holds
/// it. Keyed by the text itself (an `Arc<str>` and its first eight bytes), an entry was 40
/// bytes where it is now 24, and inserting a million ids one file at a time took 40% longer.
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

    /// Which of `1 << bits` buckets of an [`IdMap`] holds this key: its top `bits` bits.
    fn bucket(self, bits: u32) -> usize {
        (self.0 >> (64 - bits)) as usize
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

/// One key of an [`IdMap`] and the places under it.
type Entry = (IdKey, IdLocs);

/// The entries of an [`IdMap`] whose keys start with the same bits, in key order; none when
/// there are none. Shared between the maps that hold it, copied by the one that changes it.
type Bucket = Option<Arc<[Entry]>>;

/// Where each id sits, by its key: the places of every node whose id has that key, in
/// (file, position) order.
///
/// Keys are uniform 64-bit hashes, so the map indexes an array of buckets by a key's top
/// bits, and each bucket holds its entries sorted: 16 to 32 on average as a store grows,
/// fewer (down to 4) as one shrinks. Finding a key costs a
/// load from the array and one run of adjacent cache lines in a bucket. The B-tree this
/// replaces walked about four levels for each of a million keys, and a binary search in each
/// 64-key node touched six cold cache lines; one file at a time into a million headlines,
/// its inserts were a sixth of the work.
///
/// Cloning is O(1) and shares every bucket. A change copies the array (16 bytes a bucket)
/// when another map shares it, and rebuilds the one bucket it changes. Readers of a state a
/// commit is changing keep the map as it was, as with the rest of the state.
#[derive(Clone)]
pub struct IdMap {
    buckets: Arc<[Bucket]>,
    /// How many top bits of a key choose its bucket: there are `1 << bits` buckets.
    bits: u32,
    len: usize,
}

/// The fewest top bits an [`IdMap`] indexes by: 16 buckets.
const MIN_BITS: u32 = 4;
/// Entries a bucket holds on average before the map doubles its buckets (and, built at
/// once, at most): 768 bytes, twelve adjacent cache lines, of which a lookup reads one or
/// two around where the key should be.
const GROW_ABOVE: usize = 32;
/// Entries a bucket holds on average below which the map halves its buckets.
const SHRINK_BELOW: usize = 4;

impl Default for IdMap {
    fn default() -> IdMap {
        IdMap::new()
    }
}

impl IdMap {
    pub fn new() -> IdMap {
        IdMap::with_bits(MIN_BITS)
    }

    fn with_bits(bits: u32) -> IdMap {
        IdMap {
            buckets: std::iter::repeat_n(None, 1 << bits).collect(),
            bits,
            len: 0,
        }
    }

    /// The bits a map of `len` entries built at once indexes by: the fewest that leave a
    /// bucket at most [`GROW_ABOVE`] entries on average.
    fn bits_for(len: usize) -> u32 {
        let mut bits = MIN_BITS;
        while len > GROW_ABOVE << bits {
            bits += 1;
        }
        bits
    }

    /// `entries`, sorted by key with each key once, as a map.
    pub(super) fn from_sorted(entries: Vec<Entry>) -> IdMap {
        let bits = IdMap::bits_for(entries.len());
        IdMap::from_sorted_in(entries, bits)
    }

    /// `entries`, sorted by key with each key once, as a map of `1 << bits` buckets.
    fn from_sorted_in(entries: Vec<Entry>, bits: u32) -> IdMap {
        debug_assert!(
            entries.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "entries not sorted by key, each key once"
        );
        let len = entries.len();
        let mut entries = entries.into_iter().peekable();
        let mut run = Vec::new();
        let buckets = (0..1usize << bits)
            .map(|at| {
                run.extend(std::iter::from_fn(|| {
                    entries.next_if(|(key, _)| key.bucket(bits) == at)
                }));
                (!run.is_empty()).then(|| run.drain(..).collect())
            })
            .collect();
        IdMap { buckets, bits, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, key: &IdKey) -> Option<&IdLocs> {
        let bucket = self.buckets[key.bucket(self.bits)].as_deref()?;
        let at = position(bucket, *key, self.bits).ok()?;
        Some(&bucket[at].1)
    }

    /// Every key and its places, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&IdKey, &IdLocs)> + '_ {
        self.buckets
            .iter()
            .flatten()
            .flat_map(|bucket| bucket.iter().map(|(key, locs)| (key, locs)))
    }

    pub fn values(&self) -> impl Iterator<Item = &IdLocs> + '_ {
        self.iter().map(|(_, locs)| locs)
    }

    /// Put `locs` under `key`; what was there before, if anything.
    pub fn insert(&mut self, key: IdKey, locs: IdLocs) -> Option<IdLocs> {
        if self.len >= GROW_ABOVE << self.bits {
            *self = self.rebuilt(self.bits + 1);
        }
        let bits = self.bits;
        let slot = &mut self.buckets_mut()[key.bucket(bits)];
        let Some(bucket) = slot else {
            *slot = Some(Arc::new([(key, locs)]));
            self.len += 1;
            return None;
        };
        match position(bucket, key, bits) {
            Ok(i) => Some(std::mem::replace(&mut Arc::make_mut(bucket)[i].1, locs)),
            Err(i) => {
                let (before, after) = bucket.split_at(i);
                *bucket = before
                    .iter()
                    .cloned()
                    .chain(std::iter::once((key, locs)))
                    .chain(after.iter().cloned())
                    .collect();
                self.len += 1;
                None
            }
        }
    }

    /// Take `key` and its places out; whether it was there.
    pub fn remove(&mut self, key: &IdKey) -> bool {
        let at = key.bucket(self.bits);
        let Some(bucket) = self.buckets[at].as_deref() else {
            return false;
        };
        let Ok(i) = position(bucket, *key, self.bits) else {
            return false;
        };
        let rest: Bucket = (bucket.len() > 1).then(|| {
            let (before, after) = bucket.split_at(i);
            before.iter().chain(&after[1..]).cloned().collect()
        });
        self.buckets_mut()[at] = rest;
        self.len -= 1;
        if self.bits > MIN_BITS && self.len < SHRINK_BELOW << self.bits {
            *self = self.rebuilt(self.bits - 1);
        }
        true
    }

    /// A copy of this map with as many buckets as keep it from resizing while its length
    /// goes down to `low` and up to `high`, by changes in any order; none when it would not
    /// resize, or when no number of buckets keeps it from resizing (a change that takes out
    /// most of a large map).
    ///
    /// A resize copies every entry (tens of milliseconds at a million ids), and a commit
    /// changes the map while readers wait: the commit resizes a copy first, before it holds
    /// them up.
    pub(super) fn resized_for(&self, low: usize, high: usize) -> Option<IdMap> {
        // `insert` grows a map holding `GROW_ABOVE << bits` keys, even to replace one;
        // `remove` shrinks one left with fewer than `SHRINK_BELOW << bits`.
        let removes = low < self.len;
        let steady = |bits: u32| {
            high < GROW_ABOVE << bits
                && (!removes || bits == MIN_BITS || low >= SHRINK_BELOW << bits)
        };
        if steady(self.bits) {
            return None;
        }
        let bits = IdMap::bits_for(high + 1);
        if !steady(bits) {
            return None;
        }
        Some(self.rebuilt(bits))
    }

    /// The buckets, this map's own (copied, if another map shares them).
    fn buckets_mut(&mut self) -> &mut [Bucket] {
        Arc::make_mut(&mut self.buckets)
    }

    /// The same entries, indexed by `bits` top bits of their keys.
    fn rebuilt(&self, bits: u32) -> IdMap {
        let entries = self.iter().map(|(key, locs)| (*key, locs.clone()));
        IdMap::from_sorted_in(entries.collect(), bits)
    }
}

/// Where `key` sits in `bucket` of a map indexed by `bits` top bits (`Ok`), or where it
/// would go (`Err`), as a binary search says.
///
/// Keys are uniform, so a key's place in its bucket is about where its bits below the
/// bucket's fall in their range: the search starts there and gallops, about two entries and
/// one or two cache lines away, where a binary search over a bucket touched five lines in
/// turn, each a miss. Keys bunched together (only tests make them) cost a binary search.
fn position(bucket: &[Entry], key: IdKey, bits: u32) -> Result<usize, usize> {
    let len = bucket.len();
    if len == 0 {
        return Err(0);
    }
    let below = (key.0 << bits) >> 32;
    let guess = ((below * len as u64) >> 32) as usize;
    // The answer is in lo..hi.
    let (lo, hi) = if bucket[guess].0 < key {
        let (mut lo, mut step) = (guess + 1, 1);
        loop {
            let probe = guess + step;
            if probe >= len || bucket[probe].0 >= key {
                break (lo, len.min(probe + 1));
            }
            lo = probe + 1;
            step *= 2;
        }
    } else {
        let (mut hi, mut step) = (guess, 1);
        loop {
            let Some(probe) = guess.checked_sub(step) else {
                break (0, hi + 1);
            };
            if bucket[probe].0 < key {
                break (probe + 1, hi + 1);
            }
            hi = probe;
            step *= 2;
        }
    };
    match bucket[lo..hi].binary_search_by_key(&key, |(k, _)| *k) {
        Ok(at) => Ok(lo + at),
        Err(at) => Err(lo + at),
    }
}

/// A state's [`IdMap`], ready or still being built. Building it for every id after loading
/// was a quarter of opening the store (about 50 ms at 100,000 ids, when it was a B-tree), so
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
            crate::start_module_thread();
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
    IdMap::from_sorted(entries.collect())
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

    fn place(i: u64) -> IdLocs {
        IdLocs::One(Loc {
            file: FileKey::new(&Arc::from(format!("/f{}.org", i % 7).as_str())),
            index: i as u32,
        })
    }

    /// Pseudo-random numbers from `seed` (xorshift): a test reads the same every run.
    fn numbers(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// What `map` holds, as (key, first place's index) pairs in its order.
    fn contents(map: &IdMap) -> Vec<(IdKey, u32)> {
        map.iter().map(|(k, l)| (*k, l.first().index)).collect()
    }

    #[test]
    fn an_id_map_built_at_once_holds_its_entries_in_key_order() {
        // Key and value, 24 bytes: an 8-byte key and a place.
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        for n in [0, 1, 2, 31, 32, 33, 512, 513, 1000, 40_000] {
            // Spread over the whole key space, as hashes are, and some bunched at one end.
            let mut keys: Vec<u64> = (0..n as u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | u64::from(i % 5 == 0))
                .chain((0..n as u64 / 10).map(|i| i * 3))
                .collect();
            keys.sort();
            keys.dedup();
            let entries: Vec<Entry> = keys.iter().map(|&k| (IdKey::raw(k), place(k))).collect();
            let map = IdMap::from_sorted(entries.clone());
            assert_eq!(map.len(), entries.len(), "{n} entries");
            assert!(
                map.len() <= GROW_ABOVE << map.bits,
                "{n}: {} bits",
                map.bits
            );
            let want: Vec<(IdKey, u32)> =
                entries.iter().map(|(k, l)| (*k, l.first().index)).collect();
            assert_eq!(contents(&map), want, "{n} entries");
            for (key, index) in &want {
                assert_eq!(map.get(key).map(|l| l.first().index), Some(*index));
            }
            for key in keys.iter().map(|k| k.wrapping_add(1)) {
                if keys.binary_search(&key).is_err() {
                    assert!(map.get(&IdKey::raw(key)).is_none(), "{key} is no key");
                }
            }
        }
    }

    #[test]
    fn an_id_map_changed_key_by_key_agrees_with_a_sorted_map_and_its_copies_keep_still() {
        use std::collections::BTreeMap;
        let mut next = numbers(0x2545_F491_4F6C_DD1D);
        let mut map = IdMap::new();
        let mut model: BTreeMap<IdKey, u32> = BTreeMap::new();
        let mut copies: Vec<(IdMap, BTreeMap<IdKey, u32>)> = Vec::new();
        let mut grew_to = MIN_BITS;
        // Grow past several doublings, then shrink back down to the fewest buckets.
        for (steps, add_one_in) in [(30_000, 10), (40_000, 1)] {
            for step in 0..steps {
                let r = next();
                // Keys from a small range too, so inserts hit keys already there.
                let key = IdKey::raw(if r.is_multiple_of(3) {
                    (r >> 8) % 2000
                } else {
                    r
                });
                if r % 11 < add_one_in {
                    let value = (r >> 40) as u32;
                    let was = map.insert(key, place(u64::from(value)));
                    let model_was = model.insert(key, value);
                    assert_eq!(was.map(|l| l.first().index), model_was, "insert {key:?}");
                } else {
                    // Remove a key that is there, mostly, or one that is not.
                    let there = model.range(key..).next().or_else(|| model.iter().next());
                    let gone = match there {
                        Some((k, _)) if !r.is_multiple_of(4) => *k,
                        _ => key,
                    };
                    assert_eq!(map.remove(&gone), model.remove(&gone).is_some(), "remove");
                }
                assert_eq!(map.len(), model.len());
                grew_to = grew_to.max(map.bits);
                if step % 5_000 == 0 {
                    copies.push((map.clone(), model.clone()));
                    let want: Vec<(IdKey, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
                    assert_eq!(contents(&map), want);
                }
            }
        }
        assert!(grew_to >= MIN_BITS + 3, "grew to {grew_to} bits only");
        assert!(
            model.len() < SHRINK_BELOW << MIN_BITS,
            "{} left",
            model.len()
        );
        assert_eq!(map.bits, MIN_BITS, "shrank back");
        let want: Vec<(IdKey, u32)> = model.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(contents(&map), want);
        // Every copy still holds what it held when it was taken.
        for (copy, then) in &copies {
            let want: Vec<(IdKey, u32)> = then.iter().map(|(k, v)| (*k, *v)).collect();
            assert_eq!(contents(copy), want);
        }
    }

    #[test]
    fn a_map_resized_for_a_change_keeps_its_buckets_through_the_change() {
        let mut next = numbers(0x0123_4567_89AB_CDEF);
        // (keys, buckets' bits, places taken out, places added, resized before?)
        let cases = [
            (0, MIN_BITS, 0, 1000, true),
            (GROW_ABOVE << 6, 6, 0, 100, true),
            (1029, 8, 200, 0, true),
            (5000, 8, 10, 10, false),
            // Most of the map goes: no number of buckets holds through that.
            (2000, 6, 1990, 0, false),
        ];
        for (len, bits, gone, new, resized_before) in cases {
            let mut keys: Vec<u64> = (0..len).map(|_| next()).collect();
            keys.sort();
            keys.dedup();
            let entries = keys.iter().map(|&k| (IdKey::raw(k), place(k))).collect();
            let map = IdMap::from_sorted_in(entries, bits);
            let resized = map.resized_for(map.len() - gone, map.len() + new);
            assert_eq!(
                resized.is_some(),
                resized_before,
                "{len} keys, -{gone} +{new}"
            );
            let mut model: std::collections::BTreeMap<IdKey, u32> =
                map.iter().map(|(k, l)| (*k, l.first().index)).collect();
            let mut changing = resized.unwrap_or_else(|| map.clone());
            assert_eq!(contents(&changing), contents(&map), "the same entries");
            let steady = changing.bits;
            let mut bits_seen = vec![steady];
            for &key in keys.iter().take(gone) {
                assert!(changing.remove(&IdKey::raw(key)));
                model.remove(&IdKey::raw(key));
                bits_seen.push(changing.bits);
            }
            for _ in 0..new {
                let key = next();
                changing.insert(IdKey::raw(key), place(key));
                model.insert(IdKey::raw(key), key as u32);
                bits_seen.push(changing.bits);
            }
            let want: Vec<(IdKey, u32)> = model.into_iter().collect();
            assert_eq!(contents(&changing), want);
            let kept = bits_seen.iter().all(|&b| b == steady);
            assert_eq!(kept, len != 2000, "{len} keys: bits {bits_seen:?}");
        }
    }

    #[test]
    fn a_key_is_found_where_a_binary_search_finds_it_however_the_keys_fall() {
        let mut next = numbers(0x9E37_79B9_7F4A_7C15);
        let bits = 6;
        let bucket_of = |low: u64| (5u64 << (64 - bits)) | (low >> bits);
        for len in [1usize, 2, 3, 5, 17, 32, 100] {
            for spread in ["uniform", "bunched low", "bunched high", "one run"] {
                let mut keys: Vec<u64> = (0..len)
                    .map(|i| match spread {
                        "uniform" => bucket_of(next()),
                        "bunched low" => bucket_of(next() % 1000),
                        "bunched high" => bucket_of(u64::MAX - next() % 1000),
                        _ => bucket_of(1 << 40) + i as u64 * 2,
                    })
                    .collect();
                keys.sort();
                keys.dedup();
                let bucket: Vec<Entry> = keys.iter().map(|&k| (IdKey::raw(k), place(k))).collect();
                let mut probes: Vec<u64> = keys.iter().flat_map(|&k| [k - 1, k, k + 1]).collect();
                probes.extend([bucket_of(0), bucket_of(u64::MAX)]);
                for probe in probes {
                    let key = IdKey::raw(probe);
                    assert_eq!(
                        position(&bucket, key, bits),
                        bucket.binary_search_by_key(&key, |(k, _)| *k),
                        "{len} keys {spread}, probe {probe:#x}"
                    );
                }
            }
        }
        assert_eq!(position(&[], IdKey::raw(7), bits), Err(0));
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
