//! How large the store was when its log was last replayed: a hint beside the log, so that
//! the next replay reserves its tables once instead of growing them through a score of
//! rehashes. Each rehash is a pass over every entry that follows the entry's pointer to hash
//! it again: at a million headlines, a cache miss apiece, 300 ms of a 1.7 s open.
//!
//! Only a hint: a missing, stale or damaged one costs time, never correctness, and what it
//! asks for is capped by what the log could hold, so a forged one cannot make an open
//! reserve more than the log's own size warrants.

use super::seal;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"OASIZE1\n";
const LEN: usize = MAGIC.len() + 8 + 8 + 4;
/// The fewest bytes a version record takes in the log (its hash alone is 32): no log holds
/// more versions than its length over this.
const SMALLEST_VERSION: u64 = 48;

/// Entries of the archive's two large tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    pub versions: u64,
    pub ids: u64,
}

impl Sizes {
    /// What a log of `log_len` bytes can hold, at most, of each.
    pub fn capped(self, log_len: u64) -> Sizes {
        let most = log_len / SMALLEST_VERSION;
        Sizes {
            versions: self.versions.min(most),
            ids: self.ids.min(most),
        }
    }

    fn encode(&self) -> Vec<u8> {
        seal::framed(MAGIC, LEN, |out| {
            out.extend_from_slice(&self.versions.to_le_bytes());
            out.extend_from_slice(&self.ids.to_le_bytes());
        })
    }

    fn decode(bytes: &[u8]) -> Option<Sizes> {
        let body = seal::unframed(MAGIC, LEN, bytes)?;
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&body[at..at + 8]);
            u64::from_le_bytes(b)
        };
        Some(Sizes {
            versions: u64_at(0),
            ids: u64_at(8),
        })
    }
}

/// The hint of the log at `log`: the log's name with `.sizes` after it.
pub fn path_for(log: &Path) -> PathBuf {
    seal::beside(log, ".sizes")
}

/// The hint beside the log at `log`, capped by the log's length; none when there is none or
/// it does not read back.
pub fn read(log: &Path) -> Option<Sizes> {
    let log_len = std::fs::metadata(log).ok()?.len();
    let bytes = std::fs::read(path_for(log)).ok()?;
    Sizes::decode(&bytes).map(|s| s.capped(log_len))
}

/// Leave `sizes` beside the log at `log` for its next replay. Written beside and renamed in,
/// so a reader finds the old hint or the new one; not synced, since losing it costs only
/// time. Failing to write it is not worth a report.
pub fn write(log: &Path, sizes: Sizes) {
    let path = path_for(log);
    if std::fs::read(&path).ok().and_then(|b| Sizes::decode(&b)) == Some(sizes) {
        return;
    }
    let tmp = seal::beside(&path, ".new");
    if std::fs::write(&tmp, sizes.encode()).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hint_reads_back_and_any_changed_byte_makes_it_none() {
        let sizes = Sizes {
            versions: 1_000_000,
            ids: 999_999,
        };
        let bytes = sizes.encode();
        assert_eq!(Sizes::decode(&bytes), Some(sizes));
        for i in 0..bytes.len() {
            let mut forged = bytes.clone();
            forged[i] ^= 0x01;
            assert_eq!(Sizes::decode(&forged), None, "byte {i}");
        }
        assert_eq!(Sizes::decode(&bytes[..LEN - 1]), None);
    }

    #[test]
    fn a_hint_asks_for_no_more_than_the_log_can_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("store.log");
        std::fs::write(&log, vec![1u8; 4800]).expect("log");
        assert_eq!(read(&log), None, "no hint yet");
        write(
            &log,
            Sizes {
                versions: 10,
                ids: u64::MAX,
            },
        );
        assert_eq!(
            read(&log),
            Some(Sizes {
                versions: 10,
                ids: 100
            })
        );
        std::fs::write(path_for(&log), b"OASIZE1\nnot a hint at all").expect("garbage");
        assert_eq!(read(&log), None);
        std::fs::remove_file(&log).expect("rm");
        assert_eq!(read(&log), None, "no log, nothing to reserve for");
    }
}
