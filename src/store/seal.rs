//! The seal: a small file beside the log saying how much of it was committed.
//!
//! A crash can tear only what was being written, so a log that ends early was not cut by
//! a crash unless what is missing had not been committed yet. The log alone cannot tell
//! (a log cut on a batch boundary is a well-formed shorter log), so the writer thread
//! records, after each burst of batches is synced, the log's length, its batch count and a
//! chained checksum of every batch's header and payload checksum. On open the log must
//! reach that point with the same batches; it may run ahead of it (a crash between a sync
//! and the seal's replacement), never stop short of it or differ before it.
//!
//! A new seal is written beside and renamed in, so it appears whole or not at all; from then
//! on its 53 bytes are rewritten in place, within one disk sector, which a disk writes whole
//! (renaming a new one in each time cost a second journal commit per burst: twice the cost
//! of a flushed commit). A crash leaves the old seal or the new one, never a torn one, so a
//! seal that does not read back is damage too. A missing seal is a store from before seals
//! (or a fresh one): accepted, and sealed from then on.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"OASEAL1\n";
const TALLY_LEN: usize = 8 + 8 + 4;
/// Magic, whether a second tally follows, two tallies, the checksum of all before it.
const SEAL_LEN: usize = MAGIC.len() + 1 + 2 * TALLY_LEN + 4;

/// Where a log stands: its length, how many batches it holds and their chained checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    pub len: u64,
    pub batches: u64,
    pub chain: u32,
}

impl Tally {
    /// A log of `len` bytes holding no batch: just its file magic.
    pub fn empty(len: u64) -> Tally {
        Tally {
            len,
            batches: 0,
            chain: 0,
        }
    }

    /// Count one more batch of `total` bytes, by its 12-byte header and the checksum of its
    /// payload: together they pin its length and, up to CRC-32, its content.
    pub fn add(&mut self, header: &[u8], payload_crc: &[u8], total: u64) {
        let mut h = crc32fast::Hasher::new_with_initial(self.chain);
        h.update(header);
        h.update(payload_crc);
        self.chain = h.finalize();
        self.batches += 1;
        self.len += total;
    }

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.batches.to_le_bytes());
        out.extend_from_slice(&self.chain.to_le_bytes());
    }

    fn take(bytes: &[u8]) -> Tally {
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let mut chain = [0u8; 4];
        chain.copy_from_slice(&bytes[16..20]);
        Tally {
            len: u64_at(0),
            batches: u64_at(8),
            chain: u32::from_le_bytes(chain),
        }
    }
}

/// What the seal says: the log was committed up to `committed`, or, while a compaction
/// renames its new log over the old one, up to `or` (the new log's tally).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seal {
    pub committed: Tally,
    pub or: Option<Tally>,
}

impl Seal {
    pub fn at(committed: Tally) -> Seal {
        Seal {
            committed,
            or: None,
        }
    }

    /// The tallies the log may match.
    pub fn tallies(&self) -> Vec<Tally> {
        std::iter::once(self.committed).chain(self.or).collect()
    }

    fn encode(&self) -> Vec<u8> {
        framed(MAGIC, SEAL_LEN, |out| {
            out.push(u8::from(self.or.is_some()));
            self.committed.put(out);
            self.or.unwrap_or(Tally::empty(0)).put(out);
        })
    }

    fn decode(bytes: &[u8]) -> Option<Seal> {
        let body = unframed(MAGIC, SEAL_LEN, bytes)?;
        let committed = Tally::take(&body[1..1 + TALLY_LEN]);
        let or = match body[0] {
            0 => None,
            1 => Some(Tally::take(&body[1 + TALLY_LEN..])),
            _ => return None,
        };
        Some(Seal { committed, or })
    }
}

/// A small file of `len` bytes: `magic`, what `body` writes, and the CRC-32 of all before it.
pub(super) fn framed(magic: &[u8], len: usize, body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(magic);
    body(&mut out);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// The body of a [`framed`] file of `len` bytes, when `bytes` is one whole and unchanged.
pub(super) fn unframed<'a>(magic: &[u8], len: usize, bytes: &'a [u8]) -> Option<&'a [u8]> {
    if bytes.len() != len || &bytes[..magic.len()] != magic {
        return None;
    }
    let (checked, crc) = bytes.split_at(len - 4);
    (crc32fast::hash(checked).to_le_bytes() == crc).then(|| &checked[magic.len()..])
}

/// The seal of the log at `log`: the log's name with `.seal` after it.
pub fn path_for(log: &Path) -> PathBuf {
    beside(log, ".seal")
}

/// The file named as `log` with `suffix` after it: where the small files a log keeps beside
/// it live (its seal, its size hint, either's replacement while it is written).
pub(super) fn beside(log: &Path, suffix: &str) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The seal of the log at `log`: `None` when there is none, an error saying why when it is
/// there but unreadable or not a seal.
pub fn read(log: &Path) -> Result<Option<Seal>, String> {
    let path = path_for(log);
    match std::fs::read(&path) {
        Ok(bytes) => Seal::decode(&bytes)
            .map(Some)
            .ok_or_else(|| format!("its seal {} does not read back", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("its seal {} cannot be read: {e}", path.display())),
    }
}

/// Replace the seal of the log at `log` with `seal`, in place (see the module's comment).
/// Written only once what it counts is synced, and synced itself as the log is: a crash may
/// leave the seal before, which the log is then ahead of, never one ahead of the log.
pub fn write(log: &Path, seal: &Seal) -> std::io::Result<()> {
    let path = path_for(log);
    let bytes = seal.encode();
    if let Ok(f) = OpenOptions::new().write(true).open(&path) {
        if f.metadata()?.len() == bytes.len() as u64 {
            f.write_all_at(&bytes, 0)?;
            return f.sync_data();
        }
    }
    let tmp = beside(&path, ".new");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_data()?;
    }
    std::fs::rename(&tmp, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_reads_back_and_any_changed_byte_makes_it_unreadable() {
        let mut a = Tally::empty(16);
        a.add(b"OAB1\x05\0\0\0abcd", b"wxyz", 21);
        let mut b = a;
        b.add(b"OAB1\x06\0\0\0efgh", b"1234", 22);
        assert_eq!((b.len, b.batches), (59, 2));
        assert_ne!(a.chain, b.chain);
        for seal in [
            Seal::at(a),
            Seal {
                committed: a,
                or: Some(b),
            },
        ] {
            let bytes = seal.encode();
            assert_eq!(Seal::decode(&bytes), Some(seal));
            for i in 0..bytes.len() {
                let mut forged = bytes.clone();
                forged[i] ^= 0x10;
                assert_eq!(Seal::decode(&forged), None, "byte {i}");
            }
            assert_eq!(Seal::decode(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn a_seal_is_written_beside_its_log_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("store.log");
        assert_eq!(read(&log), Ok(None));
        let seal = Seal::at(Tally::empty(16));
        write(&log, &seal).expect("write");
        assert!(dir.path().join("store.log.seal").exists());
        assert_eq!(read(&log), Ok(Some(seal)));
        // Rewritten in place from then on.
        let mut later = Tally::empty(16);
        later.add(b"OAB1\x01\0\0\0abcd", b"wxyz", 17);
        write(&log, &Seal::at(later)).expect("rewrite");
        assert_eq!(read(&log), Ok(Some(Seal::at(later))));
        std::fs::write(path_for(&log), b"").expect("truncate");
        let e = read(&log).expect_err("an empty seal");
        assert!(e.contains("does not read back"), "{e}");
        // One of another length is not rewritten in place but replaced.
        write(&log, &seal).expect("replace");
        assert_eq!(read(&log), Ok(Some(seal)));
        std::fs::write(path_for(&log), [7u8; 100]).expect("longer");
        write(&log, &seal).expect("replace");
        assert_eq!(read(&log), Ok(Some(seal)));
    }
}
