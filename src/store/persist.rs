//! The on-disk store: one append-only log of checksummed batches, written by its own thread.
//!
//! Every commit is one batch: `OAB1`, payload length, CRC-32 of those 8 bytes, the payload
//! (postcard-encoded records), CRC-32 of the payload. A crash can only leave a torn last
//! batch (shorter than its header says, or zero-filled), which loading drops: the store is
//! then exactly the state before that commit. Anything else that fails a check is corruption,
//! reported as such so the caller rebuilds from the Org files instead of trusting it: a log
//! that stops short of what its seal (`seal`) says was committed, and a version that does not
//! hash to its hash, as well as bytes that fail a checksum.
//! Compaction writes a fresh log beside the old one and renames it over, so it is atomic too.

use super::body::{DecodingFromLog, LogReader};
use super::error::{open_state_file, Result, StoreError};
use super::hash::Hash;
use super::node::{Node, NodeContent};
use super::seal::{self, Seal, Tally};
use super::FileDoc;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;

const FILE_MAGIC: &[u8; 16] = b"ORG-AGENT-LOG-1\n";
const BATCH_MAGIC: &[u8; 4] = b"OAB1";
pub(crate) const HEADER_LEN: usize = 12;
/// A batch larger than this is not something we wrote: treat it as corruption.
const MAX_BATCH: u32 = 1 << 30;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Placement {
    pub id: String,
    pub hash: Hash,
    pub parent: Option<u32>,
    pub begin: u32,
    pub end: u32,
    pub begin_pos: u32,
    pub end_pos: u32,
    pub inherited_tags: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileRecord {
    pub path: String,
    /// Modification time in nanoseconds since the epoch, and size, when read from disk.
    pub mtime: i64,
    pub size: u64,
    /// Digest of the text and the settings it was parsed with.
    pub text_hash: Hash,
    /// Digest of the settings the text was parsed with.
    pub settings: Hash,
    pub file_tags: Vec<String>,
    pub nodes: Vec<Placement>,
}

/// A file's record: read back from the log as a [`FileRecord`], written straight from its
/// document (the same bytes), so a commit does not first copy every node's id and tags.
#[derive(Clone, Debug)]
pub enum FileEntry {
    /// Boxed, as the largest of the records by far: every record in a batch is as big as
    /// the biggest, and opening a store moves each one several times.
    Read(Box<FileRecord>),
    Doc(Arc<FileDoc>),
}

impl Serialize for FileEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            FileEntry::Read(record) => record.serialize(s),
            FileEntry::Doc(doc) => FileRecordOf {
                path: &doc.path,
                mtime: doc.mtime,
                size: doc.size,
                text_hash: doc.text_hash,
                settings: doc.settings,
                file_tags: &doc.file_tags,
                nodes: PlacementsOf(&doc.nodes),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for FileEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<FileEntry, D::Error> {
        FileRecord::deserialize(d).map(|r| FileEntry::Read(Box::new(r)))
    }
}

/// [`FileRecord`]'s fields, in its order, borrowed from a document.
#[derive(Serialize)]
struct FileRecordOf<'a> {
    path: &'a str,
    mtime: i64,
    size: u64,
    text_hash: Hash,
    settings: Hash,
    file_tags: &'a [String],
    nodes: PlacementsOf<'a>,
}

struct PlacementsOf<'a>(&'a [Node]);

impl Serialize for PlacementsOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|n| PlacementOf {
            id: &n.id,
            hash: n.hash(),
            parent: n.parent(),
            begin: n.begin,
            end: n.end,
            begin_pos: n.begin_pos,
            end_pos: n.end_pos,
            inherited_tags: &n.inherited_tags,
        }))
    }
}

/// [`Placement`]'s fields, in its order, borrowed from a node.
#[derive(Serialize)]
struct PlacementOf<'a> {
    id: &'a str,
    hash: Hash,
    parent: Option<u32>,
    begin: u32,
    end: u32,
    begin_pos: u32,
    end_pos: u32,
    inherited_tags: &'a [String],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Record {
    /// A version by its hash (the content does not write its own).
    #[serde(deserialize_with = "version_with_its_hash")]
    Version(Hash, Arc<NodeContent>),
    File(FileEntry),
    RemoveFile(String),
    History {
        /// Decoded right after the version it names, the same allocation as that
        /// version's `:ID:` value when they are the same text (see [`share_ids`]).
        #[serde(deserialize_with = "super::node::deserialize_arc_str")]
        id: Arc<str>,
        hash: Hash,
        time: i64,
    },
}

/// A version record as read: the content gets the hash the record keys it by.
fn version_with_its_hash<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<(Hash, Arc<NodeContent>), D::Error> {
    let (hash, mut content) = <(Hash, NodeContent)>::deserialize(d)?;
    content.hash = hash;
    Ok((hash, Arc::new(content)))
}

/// `records` as one batch on its own: what [`append_batch`] appends (nothing when they
/// cannot be written).
pub fn encode_batch(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = append_batch(records, &mut out);
    out
}

/// Encode `records` as one batch at the end of `out`. When one cannot be written (a
/// version whose body or child hashes the log no longer holds), `out` is left as it was:
/// a batch with part of its records, or none, would lose the rest silently.
pub fn append_batch(records: &[Record], out: &mut Vec<u8>) -> Result<(), String> {
    // The payload is encoded in place after room for the header, which is filled in after:
    // one buffer, not a payload copied into a second one (a batch is about the size of the
    // file it records, and fresh memory is what ingest pays most for).
    let start = out.len();
    let payload = start + HEADER_LEN;
    out.resize(payload, 0);
    if let Err(e) = postcard::to_io(records, &mut *out) {
        out.truncate(start);
        // The encoder keeps no message of its own: the version that cannot be read says why.
        let unreadable = records.iter().find_map(|r| match r {
            Record::Version(_, content) => content.body().err(),
            _ => None,
        });
        return Err(unreadable.map_or_else(|| e.to_string(), |e| e.to_string()));
    }
    let payload_len = (out.len() - payload) as u32;
    let header = &mut out[start..payload];
    header[..BATCH_MAGIC.len()].copy_from_slice(BATCH_MAGIC);
    header[BATCH_MAGIC.len()..BATCH_MAGIC.len() + 4].copy_from_slice(&payload_len.to_le_bytes());
    let header_crc = crc32fast::hash(&header[..BATCH_MAGIC.len() + 4]);
    header[BATCH_MAGIC.len() + 4..].copy_from_slice(&header_crc.to_le_bytes());
    let payload_crc = crc32fast::hash(&out[payload..]);
    out.extend_from_slice(&payload_crc.to_le_bytes());
    Ok(())
}

/// Batch buffers the writer thread has written, handed back for the next commits to encode
/// into. A batch is about the size of the file it records; a buffer that grows anew for each
/// one costs fresh pages, which the kernel zeroes (2 MiB at a time where the allocator's
/// memory is in huge pages): about a tenth of ingesting the corpus one file at a time.
#[derive(Default)]
pub struct BatchBuffers(parking_lot::Mutex<Vec<Vec<u8>>>);

impl BatchBuffers {
    /// Few buffers, none large, so that what is kept between ingests stays small.
    const KEPT: usize = 2;
    const LARGEST_KEPT: usize = 1 << 20;

    /// An empty buffer, with room from an earlier batch when one was handed back.
    pub fn take(&self) -> Vec<u8> {
        self.0.lock().pop().unwrap_or_default()
    }

    fn give_back(&self, mut buffer: Vec<u8>) {
        if buffer.capacity() == 0 || buffer.capacity() > Self::LARGEST_KEPT {
            return;
        }
        let mut kept = self.0.lock();
        if kept.len() < Self::KEPT {
            buffer.clear();
            kept.push(buffer);
        }
    }
}

/// Bytes read from the log at a time.
pub const READ_BUFFER: usize = 64 << 10;
/// Checked batches are decoded in groups of about this many payload bytes (and at most one
/// batch beyond), a group a core at once: the loader never holds the whole log. Small
/// enough that what a group's records leave behind (file records, ids) is freed and reused
/// by the next group rather than paged in anew.
pub const DECODE_GROUP: usize = 4 << 20;

/// What loading a log found.
#[derive(Debug)]
pub struct Loaded {
    /// Bytes of the log that hold whole batches; a torn tail beyond is cut off.
    pub valid_len: u64,
    /// Where those bytes leave the log: what its writer goes on from.
    pub tally: Tally,
    pub torn_tail: bool,
    /// The most payload bytes in one group. The loader holds a group a decoding thread at
    /// most, and beyond them one group's records waiting and one group's being applied.
    pub peak_buffered: usize,
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Read and check the log at `path`, handing each batch's records to `apply` in log order.
/// A missing file is an empty store. Memory stays bounded by [`DECODE_GROUP`] and the largest
/// batch, whatever the size of the file (a log once grew a gigabyte of zeros).
pub fn load(
    path: &Path,
    apply: impl FnMut(Vec<Record>) -> Result<(), String> + Send,
) -> Result<Loaded> {
    load_in_groups(path, DECODE_GROUP, apply)
}

/// [`load`], and the log must reach what its seal says was committed: one that stops short
/// of it (cut, even on a batch boundary) or differs before it is corrupt. A log without a
/// seal is taken as it is.
pub fn load_sealed(
    path: &Path,
    apply: impl FnMut(Vec<Record>) -> Result<(), String> + Send,
) -> Result<Loaded> {
    let committed = match seal::read(path) {
        Ok(seal) => seal.map(|s| s.tallies()).unwrap_or_default(),
        Err(reason) => return Err(corrupt(path, reason)),
    };
    load_checked(path, DECODE_GROUP, &committed, apply)
}

/// [`load`], decoding batches in groups of about `group` payload bytes.
pub fn load_in_groups(
    path: &Path,
    group: usize,
    apply: impl FnMut(Vec<Record>) -> Result<(), String> + Send,
) -> Result<Loaded> {
    load_checked(path, group, &[], apply)
}

/// [`load_in_groups`], and unless `committed` is empty, the log must match one of its
/// tallies at some batch boundary.
///
/// Every core has work all along: this thread reads and checks the log, a thread a core
/// decodes a group each (the oldest one's records are handed on as soon as they are
/// decoded), and the records are applied, in log order, on a thread of their own.
fn load_checked(
    path: &Path,
    group: usize,
    committed: &[Tally],
    mut apply: impl FnMut(Vec<Record>) -> Result<(), String> + Send,
) -> Result<Loaded> {
    // Bodies stay in the log, read through this handle when asked (see `body`). Without it
    // (the file cannot be opened twice), they are read into memory as before.
    let log = LogReader::open(path).ok().map(Arc::new);
    let log = log.as_ref();
    let decoders = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4);
    // What the threads below make goes to the heap the caller makes its store in, if any.
    let heap = crate::alloc::Heap::current();
    let heap = heap.as_ref();
    std::thread::scope(|scope| {
        // One decoded group waits while another is applied: memory stays bounded.
        let (decoded, to_apply) = std::sync::mpsc::sync_channel::<Vec<Vec<Record>>>(1);
        let applier = scope.spawn(move || -> Result<()> {
            let _in_heap = heap.map(|h| h.enter());
            for group in to_apply {
                for records in group {
                    apply(records).map_err(|reason| corrupt(path, reason))?;
                }
            }
            Ok(())
        });
        let mut decoding = std::collections::VecDeque::with_capacity(decoders + 1);
        // Hands the oldest group on once decoded; answers whether the applier still takes them.
        let hand_on = |decoding: &mut std::collections::VecDeque<
            std::thread::ScopedJoinHandle<'_, Result<Vec<Vec<Record>>>>,
        >|
         -> Result<bool> {
            let Some(oldest) = decoding.pop_front() else {
                return Ok(true);
            };
            let records = oldest
                .join()
                .unwrap_or_else(|_| Err(corrupt(path, "a batch could not be decoded")))?;
            // A failed send means the applier stopped at a bad record: reading on is moot.
            Ok(decoded.send(records).is_ok())
        };
        let read = read_groups(path, group, committed, |batches| {
            decoding.push_back(scope.spawn(move || {
                let _in_heap = heap.map(|h| h.enter());
                decode_batches(path, log, &batches)
            }));
            while decoding.len() > decoders {
                if !hand_on(&mut decoding)? {
                    return Ok(false);
                }
            }
            Ok(true)
        });
        // What was read before a failed read is applied too: an error there comes first.
        let mut handed_on = Ok(true);
        while !decoding.is_empty() && matches!(handed_on, Ok(true)) {
            handed_on = hand_on(&mut decoding);
        }
        drop(decoded);
        let applied = applier
            .join()
            .unwrap_or_else(|_| Err(corrupt(path, "a record could not be applied")));
        // The applier's error comes from earlier in the log than a decode error, and that
        // from earlier than a read error.
        applied?;
        handed_on?;
        read
    })
}

/// The tallies a log must match at some batch boundary (none: any log will do).
struct Checkpoints<'a> {
    committed: &'a [Tally],
    met: bool,
}

impl Checkpoints<'_> {
    fn pass(&mut self, at: &Tally) {
        self.met = self.met || self.committed.contains(at);
    }

    /// Whether the log, whose whole batches end at `end`, held what was committed.
    fn verdict(&self, path: &Path, end: &Tally) -> Result<()> {
        // A seal of a log with no batch yet asks nothing of it: not even its magic.
        if self.met || self.committed.is_empty() || self.committed.iter().any(|t| t.batches == 0) {
            return Ok(());
        }
        let longest = self.committed.iter().map(|t| t.len).max().unwrap_or(0);
        Err(corrupt(
            path,
            if end.len < longest {
                format!(
                    "it ends at byte {} ({} whole batches), short of the {longest} bytes \
                     committed to it: it was cut, not torn by a crash",
                    end.len, end.batches
                )
            } else {
                format!("its batches up to byte {longest} are not the ones committed there")
            },
        ))
    }
}

/// Read and check the log's batches, handing them to `each_group` in groups of about `group`
/// payload bytes; it answers whether to go on. The log must pass one of the `committed`
/// tallies, when there are any.
fn read_groups(
    path: &Path,
    group: usize,
    committed: &[Tally],
    mut each_group: impl FnMut(Vec<(u64, Vec<u8>)>) -> Result<bool>,
) -> Result<Loaded> {
    let mut checkpoints = Checkpoints {
        committed,
        met: false,
    };
    let loaded = read_groups_passing(path, group, &mut checkpoints, &mut each_group)?;
    checkpoints.verdict(path, &loaded.tally)?;
    Ok(loaded)
}

fn read_groups_passing(
    path: &Path,
    group: usize,
    checkpoints: &mut Checkpoints<'_>,
    each_group: &mut impl FnMut(Vec<(u64, Vec<u8>)>) -> Result<bool>,
) -> Result<Loaded> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Loaded {
                valid_len: 0,
                tally: Tally::empty(0),
                torn_tail: false,
                peak_buffered: 0,
            })
        }
        Err(source) => return Err(io(source)),
    };
    let file_len = file.metadata().map_err(io)?.len();
    let mut reader = std::io::BufReader::with_capacity(READ_BUFFER, file);
    let mut magic = [0u8; FILE_MAGIC.len()];
    let got = read_up_to(&mut reader, &mut magic).map_err(io)?;
    if got < FILE_MAGIC.len() {
        // A crash while creating the log leaves a prefix of the magic (or nothing).
        if FILE_MAGIC.starts_with(&magic[..got]) {
            return Ok(Loaded {
                valid_len: 0,
                tally: Tally::empty(0),
                torn_tail: got > 0,
                peak_buffered: 0,
            });
        }
        return Err(corrupt(path, "not an org-agent store"));
    }
    if &magic != FILE_MAGIC {
        return Err(corrupt(path, "not an org-agent store (bad magic)"));
    }
    let mut pos = FILE_MAGIC.len() as u64;
    let mut tally = Tally::empty(pos);
    checkpoints.pass(&tally);
    let mut torn_tail = false;
    let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut pending_bytes = 0usize;
    let mut peak_buffered = 0usize;
    while pos < file_len {
        let rest = file_len - pos;
        let mut header = [0u8; HEADER_LEN];
        let got = read_up_to(&mut reader, &mut header).map_err(io)?;
        if header[..got].iter().all(|&b| b == 0) {
            // File systems extend a file with zeros: a crash mid-append can leave any
            // amount of them, and nothing else, after the last whole batch.
            if zeros_to_end(&mut reader).map_err(io)? {
                torn_tail = true;
                break;
            }
            return Err(corrupt(path, format!("garbage at byte {pos}")));
        }
        if got < HEADER_LEN {
            if got as u64 == rest && BATCH_MAGIC.starts_with(&header[..got.min(4)]) {
                torn_tail = true;
                break;
            }
            return Err(corrupt(path, format!("garbage at byte {pos}")));
        }
        if &header[..4] != BATCH_MAGIC {
            return Err(corrupt(path, format!("bad batch marker at byte {pos}")));
        }
        let header_crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if crc32fast::hash(&header[..8]) != header_crc {
            return Err(corrupt(path, format!("bad batch header at byte {pos}")));
        }
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        if len > MAX_BATCH {
            return Err(corrupt(
                path,
                format!("impossible batch length at byte {pos}"),
            ));
        }
        let total = (HEADER_LEN + len as usize + 4) as u64;
        if rest < total {
            torn_tail = true;
            break;
        }
        // Allocated only once the file is known to hold it all.
        let mut payload = vec![0u8; len as usize];
        let mut crc_bytes = [0u8; 4];
        if read_up_to(&mut reader, &mut payload).map_err(io)? < payload.len()
            || read_up_to(&mut reader, &mut crc_bytes).map_err(io)? < 4
        {
            // The file shrank while we read it: what is left is a torn tail.
            torn_tail = true;
            break;
        }
        let crc = u32::from_le_bytes(crc_bytes);
        if crc32fast::hash(&payload) != crc {
            // The last batch of the file whose checksum reads back as zeros: its header
            // reached the disk but its data did not (file systems extend files with zeros).
            // That is a torn write, not damage to what was committed.
            if pos + total == file_len && crc == 0 {
                torn_tail = true;
                break;
            }
            return Err(corrupt(
                path,
                format!("checksum mismatch in batch at byte {pos}"),
            ));
        }
        pending_bytes += payload.len();
        peak_buffered = peak_buffered.max(pending_bytes);
        pending.push((pos, payload));
        pos += total;
        tally.add(&header, &crc_bytes, total);
        checkpoints.pass(&tally);
        if pending_bytes >= group {
            if !each_group(std::mem::take(&mut pending))? {
                return Ok(Loaded {
                    valid_len: pos,
                    tally,
                    torn_tail,
                    peak_buffered,
                });
            }
            pending_bytes = 0;
        }
    }
    each_group(pending)?;
    Ok(Loaded {
        valid_len: pos,
        tally,
        torn_tail,
        peak_buffered,
    })
}

/// Fill `buf` from `r` as far as the data goes; returns how many bytes were read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether everything `reader` has left is zero bytes, read [`READ_BUFFER`] at a time.
/// Holes of a sparse file are skipped without reading them.
fn zeros_to_end(reader: &mut std::io::BufReader<File>) -> std::io::Result<bool> {
    static ZEROS: [u8; READ_BUFFER] = [0; READ_BUFFER];
    let buffered = reader.buffer().len();
    // A slice comparison is a memcmp: a gigabyte of zeros is checked in a blink.
    if reader.buffer() != &ZEROS[..buffered] {
        return Ok(false);
    }
    reader.consume(buffered);
    let file = reader.get_mut();
    let mut chunk = vec![0u8; READ_BUFFER];
    loop {
        if !skip_hole(file)? {
            return Ok(true);
        }
        let n = read_up_to(file, &mut chunk)?;
        if chunk[..n] != ZEROS[..n] {
            return Ok(false);
        }
        if n < chunk.len() {
            return Ok(true);
        }
    }
}

/// Move `file` past a hole at its offset (`SEEK_DATA`). Returns false when nothing but holes
/// is left. Where the file system cannot tell, the offset stays and the bytes are read.
fn skip_hole(file: &mut File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    let here = file.stream_position()?;
    let Ok(offset) = libc::off_t::try_from(here) else {
        return Ok(true);
    };
    // SAFETY: lseek on a descriptor this `File` owns; no memory is involved.
    let at = unsafe { libc::lseek(file.as_raw_fd(), offset, libc::SEEK_DATA) };
    if at >= 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ENXIO) {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(here))?;
    Ok(true)
}

/// Decode checked batches, in order.
fn decode_batches(
    path: &Path,
    log: Option<&Arc<LogReader>>,
    batches: &[(u64, Vec<u8>)],
) -> Result<Vec<Vec<Record>>> {
    batches
        .iter()
        .map(|(pos, payload)| {
            let at = pos + HEADER_LEN as u64;
            let _bodies_stay = log.map(|log| DecodingFromLog::enter(log, payload, at));
            let records = postcard::from_bytes::<Vec<Record>>(payload)
                .map_err(|e| corrupt(path, format!("undecodable batch at byte {pos}: {e}")))?;
            check_versions(path, &records, payload, at)?;
            Ok(share_ids(records))
        })
        .collect()
}

/// Every version in `records`, decoded from `payload` (at byte `at` of the log), must hash
/// to the hash it is stored by: checksums only show the bytes are the ones written, and a
/// batch can be written whole yet hold a version that is not what its hash says. Done here,
/// where batches are decoded in parallel and the bodies are still in memory.
fn check_versions(path: &Path, records: &[Record], payload: &[u8], at: u64) -> Result<()> {
    for record in records {
        if let Record::Version(hash, content) = record {
            if content.hash_decoded_from(payload, at) != Some(*hash) {
                return Err(corrupt(
                    path,
                    format!(
                        "the node version {} in the batch at byte {} does not hash to it",
                        &hash.to_hex()[..12],
                        at - HEADER_LEN as u64
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A history entry written right after its version (as every commit and compaction write
/// them) takes that version's `:ID:` value as its id when the two are the same text. Done
/// on the decoding thread, where both were just allocated, so the applier replaying the
/// entry neither frees a copy nor touches the version's cold value to share it.
pub(super) fn share_ids(mut records: Vec<Record>) -> Vec<Record> {
    let mut last_id: Option<Arc<str>> = None;
    for record in &mut records {
        match record {
            Record::Version(_, content) => last_id = content.id_value().cloned(),
            Record::History { id, .. } => {
                if let Some(value) = last_id.take() {
                    if *value == **id {
                        *id = value;
                    }
                }
            }
            _ => last_id = None,
        }
    }
    records
}

enum Msg {
    /// Batch number `seq` (possibly empty: a commit that wrote nothing).
    Append(u64, Vec<u8>),
    /// Replace the whole log with these batches (compaction), as number `seq`.
    Rewrite(u64, Vec<u8>),
    /// Answer once every batch numbered below `upto` is on disk.
    Flush(u64, mpsc::SyncSender<Result<(), String>>),
}

/// The writer thread's handle. Dropping it flushes and joins the thread.
///
/// Commits take a [`Ticket`] (a sequence number) while they hold the store's commit lock,
/// then encode their batch after releasing it; the writer thread puts batches back in
/// ticket order before writing, so the log always replays in commit order.
pub struct LogWriter {
    tx: Option<mpsc::Sender<Msg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub path: PathBuf,
    last_error: Arc<parking_lot::Mutex<Option<String>>>,
    next_seq: AtomicU64,
    buffers: Arc<BatchBuffers>,
}

/// A reserved place in the log. Send it with [`LogWriter::append`] or
/// [`LogWriter::rewrite`]; one dropped unused sends an empty batch, so the writer never
/// waits for a commit that will not come.
pub struct Ticket<'w> {
    writer: &'w LogWriter,
    seq: Option<u64>,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(seq) = self.seq.take() {
            self.writer.send(Msg::Append(seq, Vec::new()));
        }
    }
}

impl LogWriter {
    /// Open (or create) the log at `path`, cutting it to where `loaded` (what loading it
    /// found; [`Tally::empty`] for a new log) leaves it first, and seal it there.
    pub fn open(path: &Path, loaded: Tally) -> Result<LogWriter> {
        let io = StoreError::io_on(path);
        let mut file = open_state_file(path)?;
        let tally = if loaded.len < FILE_MAGIC.len() as u64 {
            file.set_len(0).map_err(io)?;
            file.write_all(FILE_MAGIC).map_err(io)?;
            file.sync_all().map_err(io)?;
            sync_dir(path);
            Tally::empty(FILE_MAGIC.len() as u64)
        } else {
            file.set_len(loaded.len).map_err(io)?;
            loaded
        };
        file.seek(SeekFrom::End(0)).map_err(io)?;
        let last_error = Arc::new(parking_lot::Mutex::new(None));
        // A store from before seals, a torn tail cut off, or a log that ran ahead of its
        // seal: seal what was found, so that from now on less is damage.
        let sealed = match seal::read(path) {
            Ok(Some(s)) if s == Seal::at(tally) => Some(tally),
            _ => match seal::write(path, &Seal::at(tally)) {
                Ok(()) => Some(tally),
                Err(e) => {
                    *last_error.lock() = Some(format!("sealing {}: {e}", path.display()));
                    None
                }
            },
        };
        let (tx, rx) = mpsc::channel::<Msg>();
        let err_slot = last_error.clone();
        let buffers = Arc::new(BatchBuffers::default());
        let written = buffers.clone();
        let thread_path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("org-agent-store-writer".into())
            .spawn(move || {
                crate::start_module_thread();
                Writer {
                    file,
                    path: &thread_path,
                    last_error: &err_slot,
                    written: &written,
                    expected: 0,
                    pending: BTreeMap::new(),
                    flushes: Vec::new(),
                    dirty: false,
                    failed: None,
                    tally,
                    sealed,
                }
                .run(rx)
            })
            .map_err(io)?;
        Ok(LogWriter {
            tx: Some(tx),
            thread: Some(thread),
            path: path.to_path_buf(),
            last_error,
            next_seq: AtomicU64::new(0),
            buffers,
        })
    }

    fn send(&self, msg: Msg) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(msg);
        }
    }

    /// Reserve the next place in the log. Take it while holding the commit lock.
    pub fn ticket(&self) -> Ticket<'_> {
        Ticket {
            writer: self,
            seq: Some(self.next_seq.fetch_add(1, Ordering::SeqCst)),
        }
    }

    /// A buffer to encode the next batch into (see [`BatchBuffers`]).
    pub fn batch_buffer(&self) -> Vec<u8> {
        self.buffers.take()
    }

    /// Free the batch buffers kept for the next commits: after a large ingest, which the
    /// commits of single saves that follow do not need.
    pub fn release_batch_buffers(&self) {
        self.buffers.0.lock().clear();
    }

    pub fn append(&self, mut ticket: Ticket<'_>, batch: Vec<u8>) {
        if let Some(seq) = ticket.seq.take() {
            self.send(Msg::Append(seq, batch));
        }
    }

    pub fn rewrite(&self, mut ticket: Ticket<'_>, batches: Vec<u8>) {
        if let Some(seq) = ticket.seq.take() {
            self.send(Msg::Rewrite(seq, batches));
        }
    }

    /// Wait until every commit that took a ticket so far is on disk.
    pub fn flush(&self) -> Result<(), String> {
        let Some(tx) = &self.tx else {
            return Ok(());
        };
        let upto = self.next_seq.load(Ordering::SeqCst);
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        tx.send(Msg::Flush(upto, done_tx))
            .map_err(|_| "the store writer has stopped".to_string())?;
        done_rx
            .recv()
            .map_err(|_| "the store writer has stopped".to_string())?
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    /// Report an error about this log that happened outside the writer thread, as the
    /// writer's own are: the store's statistics show it.
    pub fn report_error(&self, message: String) {
        *self.last_error.lock() = Some(message);
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

enum Job {
    Append(Vec<u8>),
    Rewrite(Vec<u8>),
}

struct Writer<'a> {
    file: File,
    path: &'a Path,
    last_error: &'a parking_lot::Mutex<Option<String>>,
    written: &'a BatchBuffers,
    /// The next batch number to write; later ones wait in `pending`.
    expected: u64,
    pending: BTreeMap<u64, Job>,
    flushes: Vec<(u64, mpsc::SyncSender<Result<(), String>>)>,
    dirty: bool,
    failed: Option<String>,
    /// Where the log stands after the batches written so far.
    tally: Tally,
    /// What the seal on disk says, when it is known to say just that.
    sealed: Option<Tally>,
}

/// Count the whole batches in `bytes` (batches [`append_batch`] wrote) into `tally`.
fn tally_batches(tally: &mut Tally, bytes: &[u8]) {
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER_LEN) {
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        let end = at + HEADER_LEN + len + 4;
        let Some(crc) = bytes.get(end - 4..end) else {
            return;
        };
        tally.add(header, crc, (end - at) as u64);
        at = end;
    }
}

impl Writer<'_> {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        while let Ok(msg) = rx.recv() {
            self.take(msg);
            // Sync once the queue is drained, so a burst of commits costs one fsync.
            while let Ok(next) = rx.try_recv() {
                self.take(next);
            }
            self.sync();
            self.seal();
            self.answer_flushes();
        }
        self.sync();
        self.seal();
    }

    /// Rewrite the seal once the batches it counts are synced: it never says more than the
    /// disk holds. One small write in place and its sync per burst, as the log has one sync
    /// per burst.
    fn seal(&mut self) {
        if self.failed.is_some() || self.sealed == Some(self.tally) {
            return;
        }
        match seal::write(self.path, &Seal::at(self.tally)) {
            Ok(()) => self.sealed = Some(self.tally),
            Err(e) => {
                self.sealed = None;
                *self.last_error.lock() = Some(format!("sealing {}: {e}", self.path.display()));
            }
        }
    }

    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Append(seq, bytes) => {
                self.pending.insert(seq, Job::Append(bytes));
            }
            Msg::Rewrite(seq, bytes) => {
                self.pending.insert(seq, Job::Rewrite(bytes));
            }
            Msg::Flush(upto, done) => self.flushes.push((upto, done)),
        }
        while let Some(job) = self.pending.remove(&self.expected) {
            self.expected += 1;
            self.write(job);
        }
    }

    fn write(&mut self, job: Job) {
        match job {
            Job::Append(bytes) if bytes.is_empty() => {}
            Job::Append(bytes) => {
                if self.failed.is_none() {
                    match self.file.write_all(&bytes) {
                        Ok(()) => {
                            tally_batches(&mut self.tally, &bytes);
                            self.dirty = true;
                        }
                        Err(e) => {
                            let msg = format!("writing {}: {e}", self.path.display());
                            *self.last_error.lock() = Some(msg.clone());
                            self.failed = Some(msg);
                        }
                    }
                }
                self.written.give_back(bytes);
            }
            Job::Rewrite(bytes) => match rewrite(self.path, &bytes, self.tally) {
                Ok((new_file, tally, sealed)) => {
                    self.file = new_file;
                    self.dirty = false;
                    self.failed = None;
                    self.tally = tally;
                    self.sealed = sealed.then_some(tally);
                }
                Err(e) => {
                    // The seal may accept the log that was not renamed in: say it again.
                    self.sealed = None;
                    *self.last_error.lock() =
                        Some(format!("compacting {}: {e}", self.path.display()))
                }
            },
        }
    }

    fn sync(&mut self) {
        if self.dirty && self.failed.is_none() {
            if let Err(e) = self.file.sync_data() {
                *self.last_error.lock() = Some(format!("syncing {}: {e}", self.path.display()));
            }
        }
        self.dirty = false;
    }

    fn answer_flushes(&mut self) {
        let expected = self.expected;
        let failed = self.failed.clone();
        self.flushes.retain(|(upto, done)| {
            if *upto > expected {
                return true;
            }
            let _ = done.send(match &failed {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            });
            false
        });
    }
}

/// Replace the log at `path`, which stands at `old`, with one of `batches`. Returns the new
/// log, where it stands, and whether its seal says just that.
///
/// The seal accepts either log while the new one is renamed over the old, so a crash on
/// either side of the rename leaves a log its seal accepts; then it is the new log's alone.
fn rewrite(path: &Path, batches: &[u8], old: Tally) -> std::io::Result<(File, Tally, bool)> {
    let tmp = path.with_extension("compact");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(FILE_MAGIC)?;
        f.write_all(batches)?;
        f.sync_all()?;
    }
    let mut new = Tally::empty(FILE_MAGIC.len() as u64);
    tally_batches(&mut new, batches);
    let either = Seal {
        committed: old,
        or: Some(new),
    };
    if let Err(e) = seal::write(path, &either) {
        // Renamed without it, the new log would be shorter than its seal says: damage.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path)?;
    sync_dir(path);
    let sealed = seal::write(path, &Seal::at(new)).is_ok();
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    f.seek(SeekFrom::End(0))?;
    Ok((f, new, sealed))
}
