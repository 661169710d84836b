//! The object store: Org headlines as content-addressed nodes, with history, snapshots,
//! persistence and queries. Plain Rust; the Emacs skin lives in `src/emacs/`.
//!
//! Concurrency: the current [`State`] is an immutable value behind an `Arc`. Readers clone the
//! `Arc` (a pointer copy under a lock) and query without locks. Writers are serialised by
//! `commit_lock`. An ingest links its parsed documents into the current state in place when
//! no reader holds it, holding the readers' lock only for that (see
//! `Store::change_in_place`); a held state is copied first (`imbl` maps, `Arc`ed file
//! documents and node contents share structure) and stays as it was. Disk writes go to the
//! log writer thread, so no lock is ever held across I/O.

pub mod archive;
pub mod body;
pub mod commit;
pub mod config;
pub mod credentials;
pub mod date;
pub mod error;
pub mod file_doc;
pub mod filename;
pub mod hash;
pub mod history;
pub mod ids;
pub mod ingest;
pub mod inherit;
pub mod links;
pub mod lock;
pub mod log;
mod memory;
pub mod node;
pub mod parse;
pub mod persist;
mod quantized;
pub mod query;
pub mod reconcile;
pub mod seal;
pub mod sizes;
pub mod state;
pub mod stats;
pub mod text;
pub mod todo;
pub mod vectors;
mod warm;

pub use archive::{Archive, History, StoredVersion, Version, Versions};
pub use config::Config;
pub use error::{Result, StoreError};
pub use file_doc::{FileDoc, Files, NodeRef};
pub use hash::Hash;
pub use history::Snapshot;
pub use ids::{FileKey, IdKey, IdLocs, IdMap, Loc};
pub use ingest::{DirReport, IngestReport};
pub use lock::{StateLock, LOCK_NAME};
pub use log::{OpenReport, Reload, FALLBACK_LOG_NAME, LOG_NAME, RELOAD_MIN_VERSIONS};
pub use node::{Node, NodeContent, NodeKind, Planning, PlanningTimes, Property, TodoType};
pub use parse::Dialect;
pub use query::Query;
pub use reconcile::ReconcileReport;
pub use state::State;
pub use stats::Stats;
pub use todo::TodoKeywords;

use parking_lot::Mutex;
use persist::LogWriter;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Store {
    current: Mutex<Arc<State>>,
    archive: archive::ArchiveLock,
    /// Serialises every change of `current` (and of the archive, beside it). Taken before
    /// any other lock of the store; `current`, `archive` and `generations` are never held
    /// together, so a reader that holds one may take another.
    commit_lock: Mutex<()>,
    snapshots: Mutex<VecDeque<Snapshot>>,
    writer: Option<LogWriter>,
    config: Mutex<Config>,
    /// The newest ingest generation requested per file: older results are dropped.
    generations: Mutex<HashMap<String, u64>>,
    next_generation: std::sync::atomic::AtomicU64,
    /// Held by a directory ingest for its whole run (see [`Store::ingest_directories`]).
    directory_ingest: Mutex<()>,
    /// Set when the store is being closed ([`Store::mark_closed`]).
    closed: std::sync::atomic::AtomicBool,
    /// What [`Store::reconcile`] last saw of each file on disk.
    disk_seen: Mutex<reconcile::DiskSeen>,
    /// The thread that finds stored documents' credentials, once asked for
    /// ([`Store::warm_credentials`]); `None` in it when it could not start.
    warmer: std::sync::OnceLock<Option<warm::Warmer>>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Store {
    /// A store that lives in memory only.
    pub fn in_memory(config: Config) -> Store {
        Store::with(Arc::new(State::default()), Archive::default(), None, config)
    }

    fn with(
        state: Arc<State>,
        archive: Archive,
        writer: Option<LogWriter>,
        config: Config,
    ) -> Store {
        Store {
            archive: archive::ArchiveLock::new(archive),
            commit_lock: Mutex::new(()),
            snapshots: Mutex::new(VecDeque::new()),
            writer,
            config: Mutex::new(config),
            generations: Mutex::new(HashMap::default()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
            directory_ingest: Mutex::new(()),
            disk_seen: Mutex::new(reconcile::DiskSeen::opened(&state)),
            current: Mutex::new(state),
            closed: std::sync::atomic::AtomicBool::new(false),
            warmer: std::sync::OnceLock::new(),
        }
    }

    pub fn state(&self) -> Arc<State> {
        self.current.lock().clone()
    }

    pub fn config(&self) -> Config {
        self.config.lock().clone()
    }

    pub fn set_config(&self, config: Config) {
        *self.config.lock() = config;
    }
}
