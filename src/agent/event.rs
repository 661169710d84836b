//! What workers report back to Emacs. Plain data: the Emacs layer turns each into a plist
//! when the main thread drains the queue.

use crate::store::{DirReport, IngestReport};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A buffer or file was ingested (or found unchanged).
    Ingested { request: u64, report: IngestReport },
    /// A newer ingest of the same file was requested before this one finished.
    Superseded { request: u64, file: String },
    /// Progress of a directory ingest.
    Progress {
        request: u64,
        done: usize,
        total: usize,
        file: String,
    },
    /// A directory ingest finished (or was cancelled).
    DirectoryDone { request: u64, report: DirReport },
    /// A request failed; `file` when it concerns one.
    Failed {
        request: u64,
        file: Option<String>,
        message: String,
    },
}
