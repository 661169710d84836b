//! The vector index of semantic search: one unit-length embedding per headline, keyed by node
//! id, each with the SHA-256 of the text it was computed from, for one model.
//!
//! Rows live in one contiguous `Vec<f32>` (row-major, one fixed dimension per index); cosine
//! similarity is the dot product because every row is normalised on insert. A different
//! model or dimension means a fresh index: vectors of two models are not comparable.
//!
//! A query does not read the f32 rows (1.5 GB at 1,000,000 × 384: a scan is bound by memory
//! bandwidth) but their i8 copy (a quarter of that, [`super::quantized`]), kept in step on
//! every change and built again on load, never saved. Each row's score from its codes comes
//! with a proven error bound; only rows whose bound can reach the k-th best exact score so
//! far are scored exactly from their f32 row. The results are those of an exact scan: same
//! ids, same f32 scores, same order.
//!
//! What gets embedded ([`candidates`]): headlines with `:EMBED: t` (or every headline), minus
//! whatever the caller's privacy filter excludes; the text is [`embedding_text`]. A node is
//! embedded again only when that text changes ([`VectorIndex::pending`]), and
//! [`VectorIndex::retain_current`] drops the vectors of nodes that changed, vanished or are
//! now excluded.
//!
//! On disk ([`VectorIndex::save`], [`VectorIndex::load`]): one file, [`FILE_NAME`] beside the
//! store log, written to a temporary file, synced and renamed over the old one, so a crash
//! leaves the old file or the new one. Layout (little-endian):
//!
//! ```text
//! magic "OAVECS\r\n" | version u32 | payload length u64 | CRC-32 of the payload u32 | payload
//! payload: model length u32, model | dim u32 | rows u64
//!          | rows × (id length u32, id, text hash [32]) | rows × dim × f32
//! ```
//!
//! A file that fails any check is [`VectorError::Corrupt`]: the caller starts empty and
//! embeds again; nothing here panics on file contents.

use super::file_doc::NodeRef;
use super::hash::Hash;
use super::node::NodeKind;
use super::quantized::Quantized;
use super::Store;
use rustc_hash::{FxHashMap, FxHashSet};
use sha2::{Digest, Sha256};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use thiserror::Error;

/// The index file's name inside the state directory (beside `store.log`).
pub const FILE_NAME: &str = "vectors.bin";

/// The property that marks a headline for embedding (value `t`).
pub const EMBED_PROPERTY: &str = "EMBED";

/// The longest embedding text, in bytes (cut on a character boundary). About 450 tokens of
/// English prose: small embedding models (all-MiniLM: 512 tokens) refuse or truncate longer
/// input, and the start of a note says most about what it is.
pub const MAX_TEXT_BYTES: usize = 2000;

const MAGIC: &[u8; 8] = b"OAVECS\r\n";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 8 + 4;

/// What can go wrong with a vector index.
#[derive(Debug, Error)]
pub enum VectorError {
    /// There is no index file yet.
    #[error("no vector index at {}", path.display())]
    Missing { path: PathBuf },
    #[error("vector index I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is truncated, altered or of an unknown version: start empty.
    #[error("the vector index {} is unusable: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    /// A vector whose dimension differs from the index's.
    #[error("a vector of {got} dimensions does not fit an index of {expected}")]
    Dimension { expected: usize, got: usize },
    /// A vector that is zero or has a non-finite component cannot be normalised.
    #[error("the vector is zero or has a non-finite component")]
    Invalid,
}

/// A headline to embed: its id, the text to embed and that text's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    pub text: String,
    pub hash: Hash,
}

impl Candidate {
    /// A candidate for `text` (its hash computed).
    pub fn new(id: impl Into<String>, text: impl Into<String>) -> Candidate {
        let text = text.into();
        Candidate {
            id: id.into(),
            hash: text_hash(&text),
            text,
        }
    }
}

/// The SHA-256 of an embedding text.
pub fn text_hash(text: &str) -> Hash {
    Hash(Sha256::digest(text.as_bytes()).into())
}

/// The text embedded for a headline: its outline path and title on the first line, its
/// tags (own and inherited) on the second, then its body; at most [`MAX_TEXT_BYTES`].
/// The path places a short note in context ("Projects / Garden / Tomatoes").
pub fn embedding_text(node: &NodeRef) -> String {
    let n = node.node();
    let c = &n.content;
    let mut out = String::new();
    for part in node.outline_path() {
        out.push_str(part.trim());
        out.push_str(" / ");
    }
    out.push_str(c.title.trim());
    let tags = n.all_tags();
    if !tags.is_empty() {
        out.push_str("\nTags: ");
        out.push_str(&tags.join(", "));
    }
    let body = c.body_or_notice();
    let body = body.trim();
    if !body.is_empty() {
        out.push('\n');
        out.push_str(body);
    }
    truncate_on_char_boundary(&mut out, MAX_TEXT_BYTES);
    out
}

fn truncate_on_char_boundary(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// The headlines to embed, in document order: those with `:EMBED: t`, or every headline
/// when `embed_all`; never one that `exclude` (the privacy filter) returns true for. A
/// duplicated id is taken where the store resolves it (its first location), so a search hit
/// opens the node that was embedded.
pub fn candidates(
    store: &Store,
    embed_all: bool,
    exclude: &dyn Fn(&NodeRef) -> bool,
) -> Vec<Candidate> {
    let state = store.state();
    let mut out = Vec::new();
    for doc in state.files.values() {
        for (i, n) in doc.nodes.iter().enumerate() {
            if n.content.kind != NodeKind::Headline {
                continue;
            }
            if !embed_all && n.content.property(EMBED_PROPERTY).map(str::trim) != Some("t") {
                continue;
            }
            let first = state
                .id_places(&n.id)
                .next()
                .is_some_and(|loc| loc.file == doc.path && loc.index == i as u32);
            if !first {
                continue;
            }
            let node = NodeRef {
                doc: doc.clone(),
                index: i as u32,
            };
            if exclude(&node) {
                continue;
            }
            out.push(Candidate::new(n.id.to_string(), embedding_text(&node)));
        }
    }
    out
}

/// Scales `v` to unit length; false (and `v` unchanged) when it is zero or not finite.
pub fn normalize(v: &mut [f32]) -> bool {
    if v.iter().any(|x| !x.is_finite()) {
        return false;
    }
    // In f64: 3,072 squares of f32 can lose precision, and this runs once per vector.
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for x in v.iter_mut() {
        *x = (f64::from(*x) / norm) as f32;
    }
    true
}

/// The dot product, in 16 independent lanes the compiler turns into SIMD multiply-adds (a
/// single running sum would have to be added in order, which stops vectorisation).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

/// A search hit while the best `k` are collected. Ordered worst first (lower score, then
/// the later id), so the heap's top is the one to drop.
struct Hit<'a> {
    score: f32,
    id: &'a str,
}

impl Hit<'_> {
    /// Whether `self` ranks above `other`: higher score, ties by smaller id.
    fn beats(&self, score: f32, id: &str) -> bool {
        match self.score.total_cmp(&score) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.id < id,
        }
    }
}

impl PartialEq for Hit<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit<'_> {}
impl PartialOrd for Hit<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.id.cmp(other.id))
    }
}

/// What [`VectorIndex::retain_current`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RetainReport {
    /// Vectors kept as they were.
    pub kept: usize,
    /// Vectors of nodes whose text changed, that vanished or are now excluded.
    pub dropped: usize,
    /// Nodes given the vector of another node with the very same text (no embedding
    /// needed).
    pub reused: usize,
}

/// Unit-length vectors of one model, keyed by node id, in one row-major matrix.
#[derive(Clone, Debug, Default)]
pub struct VectorIndex {
    model: String,
    /// 0 until the first vector sets it.
    dim: usize,
    /// Row → node id.
    ids: Vec<Arc<str>>,
    /// Row → SHA-256 of the embedded text.
    hashes: Vec<Hash>,
    /// Node id → row.
    rows: FxHashMap<Arc<str>, u32>,
    /// `ids.len() × dim` floats.
    data: Vec<f32>,
    /// The rows' i8 copy that queries scan (same rows, same order).
    quantized: Quantized,
}

impl VectorIndex {
    /// An empty index for `model`; its dimension is set by the first vector.
    pub fn new(model: impl Into<String>) -> VectorIndex {
        VectorIndex {
            model: model.into(),
            ..VectorIndex::default()
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// The dimension of the vectors (0 while empty and never filled).
    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// The hash of the text `id`'s vector was computed from.
    pub fn hash_of(&self, id: &str) -> Option<Hash> {
        self.rows.get(id).map(|&r| self.hashes[r as usize])
    }

    /// `id`'s (unit-length) vector.
    pub fn vector(&self, id: &str) -> Option<&[f32]> {
        let r = *self.rows.get(id)? as usize;
        self.data.get(r * self.dim..(r + 1) * self.dim)
    }

    /// Makes this an index of `model`: a different model empties it (its vectors mean
    /// nothing next to the new model's). Returns whether it was emptied.
    pub fn use_model(&mut self, model: &str) -> bool {
        if self.model == model {
            return false;
        }
        *self = VectorIndex::new(model);
        true
    }

    /// Removes every vector (the model stays; the next vector sets the dimension).
    pub fn clear(&mut self) {
        *self = VectorIndex::new(std::mem::take(&mut self.model));
    }

    /// Stores `vector` (normalised) for `id`, computed from text with hash `hash`, replacing
    /// any earlier one. The first vector of an empty index sets its dimension.
    pub fn insert(&mut self, id: &str, hash: Hash, vector: &[f32]) -> Result<(), VectorError> {
        if self.is_empty() {
            self.dim = vector.len();
            self.quantized = Quantized::new(self.dim);
        } else if vector.len() != self.dim {
            return Err(VectorError::Dimension {
                expected: self.dim,
                got: vector.len(),
            });
        }
        let mut unit = vector.to_vec();
        if unit.is_empty() || !normalize(&mut unit) {
            return Err(VectorError::Invalid);
        }
        match self.rows.get(id) {
            Some(&r) => {
                let r = r as usize;
                self.hashes[r] = hash;
                self.data[r * self.dim..(r + 1) * self.dim].copy_from_slice(&unit);
                self.quantized.set(r, &unit);
            }
            None => {
                let id: Arc<str> = Arc::from(id);
                self.rows.insert(id.clone(), self.ids.len() as u32);
                self.ids.push(id);
                self.hashes.push(hash);
                self.data.extend_from_slice(&unit);
                self.quantized.push(&unit);
            }
        }
        Ok(())
    }

    /// Removes `id`'s vector; the last row takes its place. Returns whether it was there.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(r) = self.rows.remove(id) else {
            return false;
        };
        let r = r as usize;
        let last = self.ids.len() - 1;
        if r != last {
            let (dim, moved) = (self.dim, self.ids[last].clone());
            self.data.copy_within(last * dim..(last + 1) * dim, r * dim);
            self.rows.insert(moved, r as u32);
        }
        self.ids.swap_remove(r);
        self.hashes.swap_remove(r);
        self.data.truncate(last * self.dim);
        self.quantized.swap_remove(r);
        true
    }

    /// The candidates that need embedding: those whose text differs from what their stored
    /// vector was computed from (or that have none), except when the same text is stored
    /// under another id (call [`VectorIndex::retain_current`] first: it copies that vector).
    pub fn pending(&self, candidates: &[Candidate]) -> Vec<Candidate> {
        let stored: FxHashSet<Hash> = self.hashes.iter().copied().collect();
        candidates
            .iter()
            .filter(|c| self.hash_of(&c.id) != Some(c.hash) && !stored.contains(&c.hash))
            .cloned()
            .collect()
    }

    /// Keeps exactly the vectors of `candidates` whose text is unchanged; drops the rest
    /// (changed, vanished or now excluded nodes). A candidate without a current vector
    /// whose text some stored vector was computed from gets a copy of it.
    pub fn retain_current(&mut self, candidates: &[Candidate]) -> RetainReport {
        let mut report = RetainReport::default();
        let mut by_hash: FxHashMap<Hash, u32> = FxHashMap::default();
        for (r, h) in self.hashes.iter().enumerate() {
            by_hash.entry(*h).or_insert(r as u32);
        }
        // The row each candidate takes its vector from.
        let mut plan: Vec<(&Candidate, u32)> = Vec::with_capacity(candidates.len());
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for c in candidates {
            if !seen.insert(c.id.as_str()) {
                continue;
            }
            match self.rows.get(c.id.as_str()) {
                Some(&r) if self.hashes[r as usize] == c.hash => {
                    report.kept += 1;
                    plan.push((c, r));
                }
                _ => {
                    if let Some(&r) = by_hash.get(&c.hash) {
                        report.reused += 1;
                        plan.push((c, r));
                    }
                }
            }
        }
        report.dropped = self.len() - report.kept;
        if report.dropped == 0 && report.reused == 0 {
            return report;
        }
        let dim = self.dim;
        let mut next = VectorIndex {
            model: std::mem::take(&mut self.model),
            dim,
            ids: Vec::with_capacity(plan.len()),
            hashes: Vec::with_capacity(plan.len()),
            rows: FxHashMap::default(),
            data: Vec::with_capacity(plan.len() * dim),
            quantized: Quantized::new(dim),
        };
        next.rows.reserve(plan.len());
        for (c, r) in plan {
            let r = r as usize;
            let id: Arc<str> = match self.rows.get(c.id.as_str()) {
                Some(&own) if own as usize == r => self.ids[r].clone(),
                _ => Arc::from(c.id.as_str()),
            };
            next.rows.insert(id.clone(), next.ids.len() as u32);
            next.ids.push(id);
            next.hashes.push(c.hash);
            next.data
                .extend_from_slice(&self.data[r * dim..(r + 1) * dim]);
            next.quantized.push_row_of(&self.quantized, r);
        }
        *self = next;
        report
    }

    /// The `k` ids most similar to `query` (cosine similarity), best first, ties by id; only
    /// scores ≥ `min_score` and ids `filter` accepts. A query of another dimension, or a
    /// zero or non-finite one, matches nothing.
    pub fn top_k(
        &self,
        query: &[f32],
        k: usize,
        min_score: f32,
        filter: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, f32)> {
        if k == 0 || self.is_empty() || query.len() != self.dim {
            return Vec::new();
        }
        let mut q = query.to_vec();
        if !normalize(&mut q) {
            return Vec::new();
        }
        let mut heap: BinaryHeap<Hit<'_>> = BinaryHeap::with_capacity(k + 1);
        // The scan skips the rows whose exact score is certainly below the threshold: the
        // k-th best score once there are k, `min_score` before. The others get their exact
        // score here, and what follows is the exact scan's, row by row.
        let dim = self.dim;
        self.quantized.scan(&q, min_score, &mut |row| {
            let score = dot(&q, &self.data[row * dim..(row + 1) * dim]);
            // A NaN `min_score` excludes nothing, as a plain scan's `score < min_score` does.
            if score >= min_score || min_score.is_nan() {
                self.consider(&mut heap, k, row, score, filter);
            }
            match heap.peek() {
                Some(worst) if heap.len() == k => worst.score,
                _ => min_score,
            }
        });
        // Ascending in the heap's order is best first.
        heap.into_sorted_vec()
            .into_iter()
            .map(|h| (h.id.to_owned(), h.score))
            .collect()
    }

    /// Puts row `row`, of exact score `score`, among the `k` best in `heap` if it belongs
    /// there and `filter` accepts its id.
    fn consider<'a>(
        &'a self,
        heap: &mut BinaryHeap<Hit<'a>>,
        k: usize,
        row: usize,
        score: f32,
        filter: &dyn Fn(&str) -> bool,
    ) {
        let id: &str = &self.ids[row];
        if heap.len() == k {
            // Cheap rejection first; the filter (the caller's closure) only sees rows
            // that would enter the top k.
            if heap.peek().is_some_and(|worst| worst.beats(score, id)) {
                return;
            }
        }
        if !filter(id) {
            return;
        }
        heap.push(Hit { score, id });
        if heap.len() > k {
            heap.pop();
        }
    }

    /// Bytes held by the i8 copy the queries scan (beside the f32 rows' `len() × dim × 4`).
    pub fn scan_copy_bytes(&self) -> usize {
        self.quantized.heap_bytes()
    }

    // -----------------------------------------------------------------------------------------
    // Persistence.

    /// The index in its file format (see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let ids_len: usize = self.ids.iter().map(|id| 4 + id.len() + 32).sum();
        let payload_len = 4 + self.model.len() + 4 + 8 + ids_len + self.data.len() * 4;
        let mut out = Vec::with_capacity(HEADER_LEN + payload_len);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(payload_len as u64).to_le_bytes());
        out.extend_from_slice(&[0; 4]); // the CRC, once the payload is written
        out.extend_from_slice(&(self.model.len() as u32).to_le_bytes());
        out.extend_from_slice(self.model.as_bytes());
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        out.extend_from_slice(&(self.ids.len() as u64).to_le_bytes());
        for (id, hash) in self.ids.iter().zip(&self.hashes) {
            out.extend_from_slice(&(id.len() as u32).to_le_bytes());
            out.extend_from_slice(id.as_bytes());
            out.extend_from_slice(&hash.0);
        }
        // Resized once and filled in place: a push per float is several times slower.
        let start = out.len();
        out.resize(start + self.data.len() * 4, 0);
        for (dst, x) in out[start..].chunks_exact_mut(4).zip(&self.data) {
            dst.copy_from_slice(&x.to_le_bytes());
        }
        let crc = crc32fast::hash(&out[HEADER_LEN..]);
        out[20..24].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// An index from its file format; `path` only names the file in errors.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<VectorIndex, VectorError> {
        let corrupt = |reason: String| VectorError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() < HEADER_LEN {
            return Err(corrupt(format!(
                "truncated: {} bytes, shorter than the header",
                bytes.len()
            )));
        }
        let mut r = Reader { bytes, pos: 0 };
        if r.take(8) != Some(&MAGIC[..]) {
            return Err(corrupt("not a vector index (wrong magic)".into()));
        }
        let version = r.u32().unwrap_or_default();
        if version != VERSION {
            return Err(corrupt(format!("unknown format version {version}")));
        }
        let payload_len = r.u64().unwrap_or_default();
        let crc = r.u32().unwrap_or_default();
        let actual = (bytes.len() - HEADER_LEN) as u64;
        if actual < payload_len {
            return Err(corrupt(format!(
                "truncated: {actual} of {payload_len} payload bytes"
            )));
        }
        if actual > payload_len {
            return Err(corrupt(format!(
                "{} bytes after the payload",
                actual - payload_len
            )));
        }
        if crc32fast::hash(&bytes[HEADER_LEN..]) != crc {
            return Err(corrupt("checksum mismatch".into()));
        }
        // The checksum matched, so what follows fails only on a file written by another
        // program: still checked, never trusted to index.
        let short = || corrupt("the payload ends early".into());
        let model_len = r.u32().ok_or_else(short)? as usize;
        let model = std::str::from_utf8(r.take(model_len).ok_or_else(short)?)
            .map_err(|_| corrupt("the model name is not UTF-8".into()))?
            .to_owned();
        let dim = r.u32().ok_or_else(short)? as usize;
        let rows = usize::try_from(r.u64().ok_or_else(short)?)
            .map_err(|_| corrupt("too many rows".into()))?;
        // Each row needs at least 36 bytes of id entry: bounds the allocations below by the
        // file's size.
        if rows > r.remaining() / 36 {
            return Err(corrupt(format!("{rows} rows cannot fit in the file")));
        }
        if rows > 0 && dim == 0 {
            return Err(corrupt("rows of dimension 0".into()));
        }
        let mut index = VectorIndex {
            model,
            dim,
            ids: Vec::with_capacity(rows),
            hashes: Vec::with_capacity(rows),
            rows: FxHashMap::default(),
            data: Vec::new(),
            quantized: Quantized::default(),
        };
        index.rows.reserve(rows);
        for row in 0..rows {
            let len = r.u32().ok_or_else(short)? as usize;
            let id = std::str::from_utf8(r.take(len).ok_or_else(short)?)
                .map_err(|_| corrupt(format!("the id of row {row} is not UTF-8")))?;
            let hash: [u8; 32] = r
                .take(32)
                .and_then(|h| h.try_into().ok())
                .ok_or_else(short)?;
            let id: Arc<str> = Arc::from(id);
            if index.rows.insert(id.clone(), row as u32).is_some() {
                return Err(corrupt(format!("the id {id:?} occurs twice")));
            }
            index.ids.push(id);
            index.hashes.push(Hash(hash));
        }
        let floats = rows
            .checked_mul(dim)
            .ok_or_else(|| corrupt("the matrix size overflows".into()))?;
        if r.remaining() != floats.saturating_mul(4) {
            return Err(corrupt(format!(
                "{} matrix bytes for {rows} rows of {dim}",
                r.remaining()
            )));
        }
        let matrix = r.take(floats * 4).ok_or_else(short)?;
        index.data = matrix
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if index.data.iter().any(|x| !x.is_finite()) {
            return Err(corrupt("a non-finite vector component".into()));
        }
        index.quantized = Quantized::from_rows(dim, &index.data);
        Ok(index)
    }

    /// Writes the index to `path` atomically (see [`write_atomic`]).
    pub fn save(&self, path: &Path) -> Result<(), VectorError> {
        write_atomic(path, &self.encode())
    }

    /// Reads the index at `path`: [`VectorError::Missing`] when there is none,
    /// [`VectorError::Corrupt`] when it fails a check (start empty then).
    pub fn load(path: &Path) -> Result<VectorIndex, VectorError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(VectorError::Missing {
                    path: path.to_path_buf(),
                })
            }
            Err(source) => {
                return Err(VectorError::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        VectorIndex::decode(&bytes, path)
    }
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over `path`
/// (then syncs the directory), so `path` holds either the old contents or the new ones.
/// To save without holding a lock on the index during I/O: `encode` under the lock, then
/// call this.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), VectorError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let io = |source| VectorError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    // Unique per process and call: two saves at once must not write one temporary file.
    name.push(format!(
        ".tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, AtomicOrdering::Relaxed)
    ));
    let tmp = path.with_file_name(name);
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    // The rename is durable once the directory is synced; a failure here loses nothing
    // but durability, so it is not an error.
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// A bounds-checked cursor over the file's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;

    fn h(text: &str) -> Hash {
        text_hash(text)
    }

    fn index_of(rows: &[(&str, &[f32])]) -> VectorIndex {
        let mut ix = VectorIndex::new("m");
        for (id, v) in rows {
            ix.insert(id, h(id), v).unwrap();
        }
        ix
    }

    fn ids(hits: &[(String, f32)]) -> Vec<&str> {
        hits.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn vectors_are_normalised_on_insert() {
        let ix = index_of(&[("a", &[3.0, 4.0]), ("b", &[0.0, -2.0])]);
        assert_eq!(ix.vector("a").unwrap(), &[0.6, 0.8]);
        assert_eq!(ix.vector("b").unwrap(), &[0.0, -1.0]);
        let mut ix = ix;
        assert!(matches!(
            ix.insert("z", h("z"), &[0.0, 0.0]),
            Err(VectorError::Invalid)
        ));
        assert!(matches!(
            ix.insert("n", h("n"), &[f32::NAN, 1.0]),
            Err(VectorError::Invalid)
        ));
        assert!(matches!(
            ix.insert("d", h("d"), &[1.0, 2.0, 3.0]),
            Err(VectorError::Dimension {
                expected: 2,
                got: 3
            })
        ));
        assert_eq!(ix.len(), 2);
        let mut v = vec![1e-30f32, 1e-30];
        assert!(normalize(&mut v));
        assert!((v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
    }

    #[test]
    fn top_k_orders_by_score_then_id() {
        let ix = index_of(&[
            ("far", &[-1.0, 0.0]),
            ("tie-b", &[1.0, 1.0]),
            ("best", &[1.0, 0.0]),
            ("tie-a", &[2.0, 2.0]),
            ("mid", &[0.0, 1.0]),
        ]);
        let all = ix.top_k(&[5.0, 0.0], 10, -1.0, &|_| true);
        assert_eq!(ids(&all), ["best", "tie-a", "tie-b", "mid", "far"]);
        assert!((all[0].1 - 1.0).abs() < 1e-6);
        assert!((all[1].1 - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(all[1].1, all[2].1);
        // A bounded k keeps the best, ties broken the same way whatever the row order.
        assert_eq!(
            ids(&ix.top_k(&[1.0, 0.0], 2, -1.0, &|_| true)),
            ["best", "tie-a"]
        );
        let reversed = index_of(&[("tie-a", &[2.0, 2.0]), ("tie-b", &[1.0, 1.0])]);
        assert_eq!(
            ids(&reversed.top_k(&[1.0, 0.0], 1, -1.0, &|_| true)),
            ["tie-a"]
        );
        assert!(ix.top_k(&[1.0, 0.0], 0, -1.0, &|_| true).is_empty());
        assert!(ix.top_k(&[1.0, 0.0, 0.0], 3, -1.0, &|_| true).is_empty());
        assert!(ix.top_k(&[0.0, 0.0], 3, -1.0, &|_| true).is_empty());
    }

    #[test]
    fn top_k_filter_and_min_score() {
        let ix = index_of(&[
            ("best", &[1.0, 0.0]),
            ("tie-a", &[1.0, 1.0]),
            ("mid", &[0.0, 1.0]),
            ("far", &[-1.0, 0.0]),
        ]);
        let no_best = ix.top_k(&[1.0, 0.0], 2, -1.0, &|id| id != "best");
        assert_eq!(ids(&no_best), ["tie-a", "mid"]);
        let above = ix.top_k(&[1.0, 0.0], 10, 0.5, &|_| true);
        assert_eq!(ids(&above), ["best", "tie-a"]);
        // The bound is inclusive: "mid" scores exactly 0.
        assert_eq!(ix.top_k(&[1.0, 0.0], 10, 0.0, &|_| true).len(), 3);
        assert!(ix.top_k(&[1.0, 0.0], 10, 1.5, &|_| true).is_empty());
    }

    use crate::store::quantized::tests::Rng;

    /// Vectors to insert in the tests, drawn from [`Rng`].
    trait Vectors {
        fn vector(&mut self, dim: usize, earlier: &[Vec<f32>]) -> Vec<f32>;
    }

    impl Vectors for Rng {
        /// A vector to insert: random, a copy of an earlier one (ties), a copy nudged by
        /// an ulp or scaled (near-ties), tiny, or with one dominant component.
        fn vector(&mut self, dim: usize, earlier: &[Vec<f32>]) -> Vec<f32> {
            let mut v: Vec<f32> = (0..dim).map(|_| self.unit()).collect();
            match self.below(8) {
                0 | 1 if !earlier.is_empty() => v = earlier[self.below(earlier.len())].clone(),
                2 if !earlier.is_empty() => {
                    v = earlier[self.below(earlier.len())].clone();
                    let i = self.below(dim);
                    v[i] = v[i].next_up();
                }
                3 if !earlier.is_empty() => {
                    v = earlier[self.below(earlier.len())].clone();
                    v.iter_mut().for_each(|x| *x *= 3.0);
                }
                4 => v.iter_mut().for_each(|x| *x *= 1e-35),
                5 => v[0] = 40.0,
                _ => {}
            }
            if v.iter().all(|&x| x == 0.0) {
                v[0] = 1.0;
            }
            v
        }
    }

    /// What `top_k` must return: every row scored exactly, then sorted, then cut.
    fn naive_top_k(
        ix: &VectorIndex,
        query: &[f32],
        k: usize,
        min_score: f32,
        filter: &dyn Fn(&str) -> bool,
    ) -> Vec<(String, f32)> {
        let mut q = query.to_vec();
        if k == 0 || ix.is_empty() || q.len() != ix.dim || !normalize(&mut q) {
            return Vec::new();
        }
        let mut all: Vec<(String, f32)> = ix
            .ids
            .iter()
            .map(|id| (id.to_string(), dot(&q, ix.vector(id).unwrap())))
            .filter(|(id, score)| (*score >= min_score || min_score.is_nan()) && filter(id))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }

    /// The ids the filter sees in a plain scan of every row (the scan before the i8 copy).
    fn plain_scan_filter_calls(
        ix: &VectorIndex,
        query: &[f32],
        k: usize,
        min_score: f32,
    ) -> Vec<String> {
        let mut q = query.to_vec();
        let mut calls = Vec::new();
        if k == 0 || ix.is_empty() || q.len() != ix.dim || !normalize(&mut q) {
            return calls;
        }
        let mut heap: BinaryHeap<Hit<'_>> = BinaryHeap::new();
        for (row, v) in ix.data.chunks_exact(ix.dim).enumerate() {
            let score = dot(&q, v);
            let id: &str = &ix.ids[row];
            if score < min_score
                || heap.len() == k && heap.peek().is_some_and(|w| w.beats(score, id))
            {
                continue;
            }
            calls.push(id.to_owned());
            if id.len().is_multiple_of(3) {
                continue; // the filter of `check_queries` rejects it
            }
            heap.push(Hit { score, id });
            if heap.len() > k {
                heap.pop();
            }
        }
        calls
    }

    /// `top_k` against the naive scan, bit for bit, for random queries (and rows of the
    /// index as queries), every k up to `len() + 1`, several bounds, with and without a
    /// filter; the filter sees the ids a plain scan shows it, in the same order.
    fn check_queries(ix: &VectorIndex, rng: &mut Rng, queries: usize) {
        // The copy the scan reads is the one the rows would give now.
        assert!(ix
            .quantized
            .same_codes(&Quantized::from_rows(ix.dim, &ix.data)));
        let dim = ix.dim.max(1);
        let mut qs: Vec<Vec<f32>> = (0..queries)
            .map(|_| (0..dim).map(|_| rng.unit()).collect())
            .collect();
        if let Some(id) = ix.ids.first() {
            qs.push(ix.vector(id).unwrap().iter().map(|x| -x * 0.5).collect());
        }
        if let Some(id) = ix.ids.last() {
            qs.push(ix.vector(id).unwrap().to_vec());
        }
        let rejects = |id: &str| id.len().is_multiple_of(3);
        for q in &qs {
            for k in 0..=ix.len() + 1 {
                for min_score in [f32::NEG_INFINITY, -0.5, 0.0, 0.2, 0.9, 1.0, f32::NAN] {
                    let all = ix.top_k(q, k, min_score, &|_| true);
                    assert_eq!(all, naive_top_k(ix, q, k, min_score, &|_| true));
                    let calls = std::cell::RefCell::new(Vec::new());
                    let some = ix.top_k(q, k, min_score, &|id| {
                        calls.borrow_mut().push(id.to_owned());
                        !rejects(id)
                    });
                    assert_eq!(some, naive_top_k(ix, q, k, min_score, &|id| !rejects(id)));
                    assert_eq!(
                        calls.into_inner(),
                        plain_scan_filter_calls(ix, q, k, min_score)
                    );
                }
            }
        }
    }

    #[test]
    fn top_k_equals_an_exact_scan_on_random_indexes() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        for round in 0..60 {
            let dim = [1, 2, 3, 5, 16, 17, 40, 384][round % 8];
            let n = 1 + rng.below(30);
            let mut ix = VectorIndex::new("m");
            let mut vs = Vec::new();
            for i in 0..n {
                let v = rng.vector(dim, &vs);
                // Ids of lengths 1 to 4, so the filter rejects some (length 3).
                let id = format!("{}{i}", "x".repeat(rng.below(3)));
                ix.insert(&id, h(&id), &v).unwrap();
                vs.push(v);
            }
            check_queries(&ix, &mut rng, 3);
        }
    }

    #[test]
    fn top_k_is_exact_where_the_scan_skips_most_rows() {
        // 384 dimensions and many rows: most are skipped on their codes, and the rows
        // near the k-th score (copies, near-copies) must still come out as an exact scan's.
        let mut rng = Rng(77);
        let mut ix = VectorIndex::new("m");
        let mut vs: Vec<Vec<f32>> = Vec::new();
        for i in 0..3000 {
            let v = rng.vector(384, &vs[..vs.len().min(20)]);
            ix.insert(&format!("r{i}"), h("r"), &v).unwrap();
            vs.push(v);
        }
        let mut q = vs[5].clone();
        q[0] += 0.01;
        for k in [1, 2, 10, 50, 400] {
            for min_score in [f32::NEG_INFINITY, 0.1, 0.99] {
                let got = ix.top_k(&q, k, min_score, &|_| true);
                assert_eq!(got, naive_top_k(&ix, &q, k, min_score, &|_| true));
            }
        }
        let filtered = ix.top_k(&q, 10, -1.0, &|id| !id.ends_with('7'));
        assert_eq!(
            filtered,
            naive_top_k(&ix, &q, 10, -1.0, &|id| !id.ends_with('7'))
        );
    }

    #[test]
    fn the_scanned_copy_follows_inserts_replacements_removals_and_loads() {
        let mut rng = Rng(0xfeed);
        for dim in [3, 24, 384] {
            let mut ix = VectorIndex::new("m");
            let mut vs = Vec::new();
            for step in 0..120 {
                let id = format!("n{}", rng.below(25));
                match rng.below(4) {
                    0 => {
                        ix.remove(&id);
                    }
                    _ => {
                        let v = rng.vector(dim, &vs);
                        ix.insert(&id, h(&format!("{id}-{step}")), &v).unwrap();
                        vs.push(v);
                    }
                }
                if step % 15 == 14 {
                    check_queries(&ix, &mut rng, 1);
                }
            }
            // Keeping some, copying a vector to a new id, dropping the rest.
            let current: Vec<Candidate> = ix
                .ids
                .iter()
                .step_by(2)
                .map(|id| Candidate {
                    id: id.to_string(),
                    text: String::new(),
                    hash: ix.hash_of(id).unwrap(),
                })
                .chain(ix.ids.first().map(|id| Candidate {
                    id: "copy".into(),
                    text: String::new(),
                    hash: ix.hash_of(id).unwrap(),
                }))
                .collect();
            ix.retain_current(&current);
            assert!(ix.contains("copy"));
            check_queries(&ix, &mut rng, 2);
            let back = VectorIndex::decode(&ix.encode(), Path::new("v.bin")).unwrap();
            assert!(back.quantized.same_codes(&ix.quantized));
            check_queries(&back, &mut rng, 2);
            // Emptied, then refilled at another dimension.
            for id in ix.ids.clone() {
                ix.remove(&id);
            }
            ix.insert("one", h("one"), &[1.0, 2.0]).unwrap();
            ix.insert("two", h("two"), &[2.0, 1.0]).unwrap();
            check_queries(&ix, &mut rng, 2);
        }
    }

    #[test]
    fn insert_replaces_and_remove_moves_the_last_row() {
        let mut ix = index_of(&[("a", &[1.0, 0.0]), ("b", &[0.0, 1.0]), ("c", &[1.0, 1.0])]);
        ix.insert("a", h("a2"), &[0.0, 3.0]).unwrap();
        assert_eq!(ix.len(), 3);
        assert_eq!(ix.vector("a").unwrap(), &[0.0, 1.0]);
        assert_eq!(ix.hash_of("a"), Some(h("a2")));
        assert!(ix.remove("a"));
        assert!(!ix.remove("a"));
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.vector("c").unwrap()[0], std::f32::consts::FRAC_1_SQRT_2);
        assert_eq!(ix.vector("b").unwrap(), &[0.0, 1.0]);
        assert!(ix.remove("c") && ix.remove("b"));
        assert!(ix.is_empty());
        // An emptied index takes the next model's dimension.
        ix.insert("x", h("x"), &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(ix.dim(), 3);
        assert!(!ix.use_model("m"));
        assert!(ix.use_model("other"));
        assert!(ix.is_empty() && ix.dim() == 0 && ix.model() == "other");
    }

    #[test]
    fn pending_skips_unchanged_text() {
        let mut ix = VectorIndex::new("m");
        let a = Candidate::new("a", "alpha");
        let b = Candidate::new("b", "beta");
        ix.insert("a", a.hash, &[1.0, 0.0]).unwrap();
        assert_eq!(ix.pending(&[a.clone(), b.clone()]), vec![b.clone()]);
        ix.insert("b", b.hash, &[0.0, 1.0]).unwrap();
        assert!(ix.pending(&[a.clone(), b.clone()]).is_empty());
        let a2 = Candidate::new("a", "alpha, edited");
        assert_eq!(ix.pending(&[a2.clone(), b.clone()]), vec![a2]);
        // A new node with the text of a stored one needs no embedding.
        let c = Candidate::new("c", "beta");
        assert!(ix.pending(&[c]).is_empty());
    }

    #[test]
    fn retain_current_drops_changed_vanished_and_excluded() {
        let mut ix = VectorIndex::new("m");
        let a = Candidate::new("a", "alpha");
        let b = Candidate::new("b", "beta");
        let c = Candidate::new("c", "gamma");
        ix.insert("a", a.hash, &[1.0, 0.0]).unwrap();
        ix.insert("b", b.hash, &[0.0, 1.0]).unwrap();
        ix.insert("c", c.hash, &[1.0, 1.0]).unwrap();
        // a unchanged, b edited, c gone (or excluded); d is new with a's text.
        let b2 = Candidate::new("b", "beta, edited");
        let d = Candidate::new("d", "alpha");
        let current = [a.clone(), b2.clone(), d.clone()];
        let report = ix.retain_current(&current);
        assert_eq!(
            report,
            RetainReport {
                kept: 1,
                dropped: 2,
                reused: 1
            }
        );
        assert_eq!(ix.len(), 2);
        assert!(!ix.contains("b") && !ix.contains("c"));
        assert_eq!(ix.vector("d"), ix.vector("a"));
        assert_eq!(ix.pending(&current), vec![b2]);
        // Nothing to do: the index stays as it is.
        let again = ix.retain_current(&[a, d]);
        assert_eq!(
            again,
            RetainReport {
                kept: 2,
                dropped: 0,
                reused: 0
            }
        );
        assert_eq!(ix.retain_current(&[]).dropped, 2);
        assert!(ix.is_empty());
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let ix = index_of(&[("a", &[1.0, 2.0, 3.0]), ("bé", &[-1.0, 0.5, 0.25])]);
        ix.save(&path).unwrap();
        let back = VectorIndex::load(&path).unwrap();
        assert_eq!(back.model(), "m");
        assert_eq!(back.dim(), 3);
        assert_eq!(back.len(), 2);
        for id in ["a", "bé"] {
            assert_eq!(back.vector(id), ix.vector(id));
            assert_eq!(back.hash_of(id), ix.hash_of(id));
        }
        assert_eq!(back.encode(), ix.encode());
        // Saving again replaces the file and leaves no temporary file behind.
        back.save(&path).unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        let empty = VectorIndex::new("e");
        empty.save(&path).unwrap();
        let back = VectorIndex::load(&path).unwrap();
        assert!(back.is_empty() && back.model() == "e");
        assert!(matches!(
            VectorIndex::load(&dir.path().join("none.bin")),
            Err(VectorError::Missing { .. })
        ));
    }

    #[test]
    fn corrupt_and_truncated_files_are_errors() {
        let path = Path::new("vectors.bin");
        let good = index_of(&[("a", &[1.0, 2.0]), ("b", &[3.0, 4.0])]).encode();
        let reason = |bytes: &[u8]| match VectorIndex::decode(bytes, path) {
            Err(VectorError::Corrupt { reason, .. }) => reason,
            other => panic!("not corrupt: {other:?}"),
        };
        // Every truncation, down to nothing.
        for len in 0..good.len() {
            reason(&good[..len]);
        }
        assert!(reason(&good[..good.len() - 1]).contains("truncated"));
        // Every single flipped bit.
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                reason(&bad);
            }
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(reason(&longer).contains("after the payload"));
        let mut version = good.clone();
        version[8] = 9;
        assert!(reason(&version).contains("version 9"));
        assert!(reason(b"garbage that is long enough to pass").contains("magic"));
        // A well-formed checksum over a lying payload: huge row count.
        let mut lying = good[..HEADER_LEN].to_vec();
        let mut payload = Vec::new();
        payload.extend_from_slice(&1u32.to_le_bytes());
        payload.push(b'm');
        payload.extend_from_slice(&2u32.to_le_bytes());
        payload.extend_from_slice(&u64::MAX.to_le_bytes());
        lying[12..20].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        lying[20..24].copy_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        lying.extend_from_slice(&payload);
        assert!(reason(&lying).contains("rows"));
        // On disk: a truncated file is a typed error, not a panic.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        std::fs::write(&file, &good[..good.len() / 2]).unwrap();
        assert!(matches!(
            VectorIndex::load(&file),
            Err(VectorError::Corrupt { .. })
        ));
    }

    #[test]
    fn candidates_follow_the_embed_property_and_the_privacy_filter() {
        let store = Store::in_memory(Config::default());
        let text = "#+FILETAGS: :home:\n\
                    * Garden :outdoor:\n\
                    ** Tomatoes\n:PROPERTIES:\n:EMBED: t\n:END:\nWater them daily.\n\
                    ** Secret\n:PROPERTIES:\n:EMBED: t\n:END:\nThe safe code.\n\
                    * Other\n:PROPERTIES:\n:EMBED: nil\n:END:\nNot embedded.\n";
        store
            .ingest_text("/notes/a.org", text, None, None, None)
            .unwrap();
        let no_secret = |n: &NodeRef| &*n.node().content.title == "Secret";
        let marked = candidates(&store, false, &no_secret);
        assert_eq!(marked.len(), 1);
        assert_eq!(
            marked[0].text,
            "Garden / Tomatoes\nTags: home, outdoor\nWater them daily."
        );
        assert_eq!(marked[0].hash, text_hash(&marked[0].text));
        let all = candidates(&store, true, &no_secret);
        let titles: Vec<&str> = all.iter().map(|c| c.text.lines().next().unwrap()).collect();
        assert_eq!(titles, ["Garden", "Garden / Tomatoes", "Other"]);
        assert_eq!(candidates(&store, true, &|_| true), vec![]);
    }

    #[test]
    fn embedding_text_is_bounded_on_a_char_boundary() {
        let store = Store::in_memory(Config::default());
        let text = format!("* Long\n{}\n", "é".repeat(3000));
        store
            .ingest_text("/n.org", &text, None, None, None)
            .unwrap();
        let c = candidates(&store, true, &|_| false);
        assert!(c[0].text.len() <= MAX_TEXT_BYTES && c[0].text.len() > MAX_TEXT_BYTES - 4);
        assert!(c[0].text.starts_with("Long\né"));
    }
}
