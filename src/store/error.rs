//! Errors of the object store.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot read {}: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is too large to ingest ({bytes} bytes)", file.display())]
    TooLarge { file: PathBuf, bytes: usize },
    #[error("{} nests headlines {depth} levels deep; at most {max} are supported", file.display())]
    TooDeep {
        file: PathBuf,
        depth: usize,
        max: usize,
    },
    #[error("the store at {} is unusable: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("store I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the body stored at byte {offset} of {} cannot be read: {reason}; the log changed \
         on disk after the store was opened: opening the store again (in a new Emacs) checks \
         it and, if it is damaged, rebuilds the store from the Org files",
        path.display()
    )]
    BodyUnreadable {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    #[error(
        "the store in {} is in use by another Emacs ({holder}); org-agent waits until that \
         one stops using it (or set org-agent-state-directory to another directory)",
        dir.display()
    )]
    Locked { dir: PathBuf, holder: String },
    #[error("no snapshot number {0}")]
    NoSnapshot(usize),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// An I/O error on `path`, for `map_err`.
    pub fn io_on(path: &Path) -> impl Fn(std::io::Error) -> StoreError + Copy + '_ {
        move |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Open a file of the state directory for reading and writing in place, creating it and
/// its directory if need be; never truncated here, since what is in it decides what comes
/// next (the log's committed length, the lock's holder).
pub fn open_state_file(path: &Path) -> Result<File> {
    let io = StoreError::io_on(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)
}
