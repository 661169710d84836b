//! The store on disk: opening its log (replayed into a state, the unusable moved aside and
//! never deleted, a fallback beside it, memory only as a last resort), compaction, reloading
//! from the log so that bodies are read from there, and flushing. The log's format and its
//! writer thread are `persist`'s; this decides what to do with them.

use super::archive::Archive;
use super::error::{Result, StoreError};
use super::file_doc::FileDoc;
use super::memory::{release_freed_memory, Opening};
use super::persist::{self, LogWriter, Record};
use super::seal::{self, Tally};
use super::sizes::{self, Sizes};
use super::state::{Replaying, State};
use super::{now, Config, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What opening the store found.
#[derive(Clone, Debug, Default)]
pub struct OpenReport {
    pub files: usize,
    pub nodes: usize,
    /// Set when the on-disk store could not be used and was set aside; the caller should
    /// re-ingest the Org files.
    pub rebuilt: Option<String>,
    /// Where the unusable log was moved.
    pub set_aside: Option<PathBuf>,
    /// The log in use; `None` when none could be opened and the store is in memory only.
    pub log: Option<PathBuf>,
    /// A torn last write (from a crash) was dropped.
    pub torn_tail: bool,
}

/// A name beside `path` for setting it aside that no earlier one has, e.g.
/// `store.corrupt-1700000000` or `store.unusable-1700000000-2`.
fn set_aside_name(path: &Path, label: &str) -> PathBuf {
    let stamp = now();
    (0u32..)
        .map(|n| match n {
            0 => path.with_extension(format!("{label}-{stamp}")),
            n => path.with_extension(format!("{label}-{stamp}-{n}")),
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| path.with_extension(label))
}

/// Move the unusable log at `path` (a file, a directory, anything) aside, never deleting it.
/// Returns where it went, or `None` when there is nothing there (or no way to look).
fn set_aside(path: &Path, label: &str) -> std::io::Result<Option<PathBuf>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let aside = set_aside_name(path, label);
    std::fs::rename(path, &aside)?;
    Ok(Some(aside))
}

/// A log, replayed.
struct Replayed {
    state: State,
    archive: Archive,
    /// Where the log's whole batches end.
    tally: Tally,
    torn_tail: bool,
    /// File records read: when they far outnumber the live files, the log is compacted.
    file_records: usize,
}

/// Load the log at `path` batch by batch into a state (a missing log is an empty one,
/// unless its seal says batches were committed to it), its tables sized for about `hint`.
/// Leaves the sizes it came to beside the log for the next replay (see `sizes`).
fn replay_log(path: &Path, hint: Option<Sizes>) -> Result<Replayed> {
    let mut state = State::default();
    let mut archive = Archive::default();
    let room = |n: u64| usize::try_from(n).unwrap_or(0);
    let ids = hint.map_or(0, |hint| room(hint.ids));
    if let Some(hint) = hint {
        archive.versions.reserve(room(hint.versions));
    }
    let mut file_records = 0usize;
    let mut replaying = Replaying::with_room(ids);
    let loaded = persist::load_sealed(path, |batch| {
        for rec in batch {
            if matches!(rec, Record::File(_) | Record::RemoveFile(_)) {
                file_records += 1;
            }
            state.replay(rec, &mut archive, &mut replaying)?;
        }
        Ok(())
    })?;
    // The hint is left once the history is built, which counts the ids.
    let versions = archive.versions.len() as u64;
    let log = path.to_path_buf();
    replaying.finish(&mut state, &mut archive, ids, move |ids| {
        sizes::write(
            &log,
            Sizes {
                versions,
                ids: ids as u64,
            },
        )
    });
    state.index_ids_in_background();
    Ok(Replayed {
        state,
        archive,
        tally: loaded.tally,
        torn_tail: loaded.torn_tail,
        file_records,
    })
}

/// A reload from the log under way ([`Store::begin_reload`]): it holds the commit lock.
pub struct Reload<'s> {
    store: &'s Store,
    writer: &'s LogWriter,
    _guard: parking_lot::MutexGuard<'s, ()>,
}

impl Reload<'_> {
    /// Replay the log and make what it holds current. Commits wait meanwhile (about as long
    /// as an open takes); readers keep the state they hold. When the log may lack something
    /// the store holds (a write error), or reads back as other files than the store's, the
    /// store stays as it is. Returns whether it reloaded.
    pub fn run(self) -> bool {
        let store = self.store;
        if self.writer.flush().is_err() || self.writer.last_error().is_some() {
            return false;
        }
        let hint = sizes_of(&store.archive.lock());
        let replayed = match replay_log(&self.writer.path, Some(hint)) {
            Ok(r) if !r.torn_tail => r,
            _ => return false,
        };
        if !same_files(&replayed.state, &store.state())
            || replayed.archive.versions.len() != store.archive.lock().versions.len()
        {
            return false;
        }
        let replaced = store.install(replayed);
        // Freed, and handed back, before the lock is: a flush after the reload then finds
        // the memory it frees gone too (a state a reader still holds goes with the reader).
        drop(replaced);
        store.compact_generations();
        self.writer.release_batch_buffers();
        release_freed_memory();
        drop(self);
        true
    }
}

/// How large `archive`'s tables are, for the next replay to reserve (see `sizes`).
fn sizes_of(archive: &Archive) -> Sizes {
    Sizes {
        versions: archive.versions.len() as u64,
        ids: archive.history.len() as u64,
    }
}

/// Whether `a` and `b` hold the same files, each read from the same text with the same
/// settings into as many nodes.
fn same_files(a: &State, b: &State) -> bool {
    a.files.len() == b.files.len()
        && a.files.iter().all(|(path, doc)| {
            b.files.get(path).is_some_and(|other| {
                doc.text_hash == other.text_hash
                    && doc.settings == other.settings
                    && doc.nodes.len() == other.nodes.len()
            })
        })
}

/// The fewest new versions for which [`Store::reload_from_log`] is worth its cost.
pub const RELOAD_MIN_VERSIONS: usize = 10_000;

/// File name of the log inside the state directory.
pub const LOG_NAME: &str = "store.log";
/// The log used instead when `store.log` is unusable and cannot even be moved aside.
pub const FALLBACK_LOG_NAME: &str = "store.fallback.log";

impl Store {
    /// Open the store persisted in `dir`, loading it. A log that cannot be used (corrupt,
    /// unreadable, a directory…) never stops the store: it is moved aside (never deleted) and
    /// an empty store returned, with the reason in the report, for the caller to rebuild from
    /// the Org files. When it cannot even be moved, [`FALLBACK_LOG_NAME`] beside it is used;
    /// when no log can be written at all, the store lives in memory only.
    pub fn open(dir: &Path, config: Config) -> Result<(Store, OpenReport)> {
        let _opening = Opening::begin();
        // The store is made in pages of its own: not in the holes of the store it replaces,
        // still being freed. The threads the open starts that outlive it (the id index, the
        // history table) allocate as any other: no thread uses the heap once it returns.
        let heap = crate::alloc::Heap::new();
        let _in_heap = heap.as_ref().map(|h| h.enter());
        let mut report = OpenReport::default();
        for name in [LOG_NAME, FALLBACK_LOG_NAME] {
            let path = dir.join(name);
            let failure = match replay_log(&path, sizes::read(&path)) {
                Ok(replayed) => match LogWriter::open(&path, replayed.tally) {
                    Ok(writer) => return Ok(Store::opened(replayed, writer, config, report)),
                    Err(e) => e,
                },
                Err(e) => e,
            };
            let label = match failure {
                StoreError::Corrupt { .. } => "corrupt",
                _ => "unusable",
            };
            let mut reason = failure.to_string();
            let moved = set_aside(&path, label);
            // The seal goes with the log it describes (or, the log gone, alone): left, it
            // would call the new log cut short.
            let seal_moved = set_aside(&seal::path_for(&path), label);
            match moved {
                Ok(aside) => {
                    report.set_aside = aside.or(seal_moved.ok().flatten());
                    if report.set_aside.is_some() {
                        if let Ok(writer) = LogWriter::open(&path, Tally::empty(0)) {
                            report.rebuilt.get_or_insert(reason);
                            let empty = Replayed {
                                state: State::default(),
                                archive: Archive::default(),
                                tally: Tally::empty(0),
                                torn_tail: false,
                                file_records: 0,
                            };
                            return Ok(Store::opened(empty, writer, config, report));
                        }
                    }
                }
                Err(e) => reason.push_str(&format!(" (it cannot be moved aside either: {e})")),
            }
            report.rebuilt.get_or_insert(reason);
        }
        Ok((
            Store::with(Arc::new(State::default()), Archive::default(), None, config),
            report,
        ))
    }

    fn opened(
        replayed: Replayed,
        writer: LogWriter,
        config: Config,
        mut report: OpenReport,
    ) -> (Store, OpenReport) {
        let Replayed {
            state,
            archive,
            torn_tail,
            file_records,
            ..
        } = replayed;
        report.files = state.files.len();
        report.nodes = state.node_count();
        report.torn_tail = torn_tail;
        report.log = Some(writer.path.clone());
        let compact = file_records > 2 * state.files.len() + 64;
        let store = Store::with(Arc::new(state), archive, Some(writer), config);
        if compact {
            store.compact_and_reload();
        }
        release_freed_memory();
        (store, report)
    }

    /// Rewrite the log with only the live records. Not done, and the error says why (the
    /// statistics' write error too), when a stored version cannot be read back to be
    /// written: the log changed underneath.
    pub fn compact(&self) -> Result<(), String> {
        let _guard = self.commit_lock.lock();
        let Some(w) = &self.writer else {
            return Ok(());
        };
        let recs = self.state().records(&self.archive.lock());
        let ticket = w.ticket();
        // Many moderate batches rather than one huge one: loading decodes batches in
        // parallel, and no batch comes near the size limit.
        let mut bytes = Vec::new();
        for chunk in recs.chunks(4096) {
            if let Err(e) = persist::append_batch(chunk, &mut bytes) {
                // The new log would lack what cannot be written: keep the old one whole.
                let message = format!(
                    "compacting {}: not done, a stored version cannot be written: {e}",
                    w.path.display()
                );
                w.report_error(message.clone());
                return Err(message);
            }
        }
        w.rewrite(ticket, bytes);
        Ok(())
    }

    /// [`Store::compact`], then load the compacted log: the bodies loaded from the old one
    /// are read from it (see `body`), which would keep its disk space until the store
    /// closes. Should the new log not load, the store stays as it was, on the old file.
    fn compact_and_reload(&self) {
        let Some(writer) = &self.writer else {
            return;
        };
        if self.compact().is_err() || self.flush().is_err() {
            return;
        }
        let hint = sizes_of(&self.archive.lock());
        if let Ok(replayed) = replay_log(&writer.path, Some(hint)) {
            let _guard = self.commit_lock.lock();
            drop(self.install(replayed));
        }
    }

    /// Make a state and archive read from the log current, under the commit lock the
    /// caller holds; return the ones they replace, for the caller to free.
    fn install(&self, replayed: Replayed) -> (Arc<State>, Archive) {
        // Documents read again from the log are new ones: those the documents they replace
        // hold the credentials of take them over (a reload after an ingest would otherwise
        // have the warm-up read every node twice), the others are warmed.
        let current = self.state();
        let unknown: Vec<&Arc<FileDoc>> = replayed
            .state
            .files
            .iter()
            .filter(|(path, doc)| {
                !current
                    .files
                    .get(*path)
                    .is_some_and(|old| doc.adopt_credentials(old))
            })
            .map(|(_, doc)| doc)
            .collect();
        drop(current);
        let warm = self.to_warm(unknown.into_iter());
        let old_state = std::mem::replace(&mut *self.current.lock(), Arc::new(replayed.state));
        let old_archive = std::mem::replace(&mut *self.archive.lock(), replayed.archive);
        self.warm_committed(warm);
        (old_state, old_archive)
    }

    /// Whether a directory ingest that added `new_versions` versions left enough bodies in
    /// memory for [`Store::reload_from_log`] to be worth decoding the whole log again: at
    /// least [`RELOAD_MIN_VERSIONS`], and half the store's nodes (a first ingest, or every
    /// file parsed again under another Org).
    pub fn worth_reloading(&self, new_versions: usize) -> bool {
        self.writer.is_some()
            && new_versions >= RELOAD_MIN_VERSIONS
            && new_versions.saturating_mul(2) >= self.state().node_count()
    }

    /// Load the state again from the log, so that the bodies committed since the store was
    /// opened are read from the log when asked, as after an open, rather than held in memory
    /// until the next one. At 100k headlines a first directory ingest left Emacs about 25 MB
    /// larger than opening the same store. Returns whether it reloaded; see
    /// [`Store::begin_reload`].
    pub fn reload_from_log(&self) -> bool {
        self.begin_reload().is_some_and(Reload::run)
    }

    /// Run `reload` (begun before a directory ingest answered; none when it could not be)
    /// and say whether it reloaded. A first ingest leaves its id index for the reload to
    /// build on a thread of its own: when the reload is refused or none could begin, that
    /// build starts here, rather than on the first lookup (on Emacs's main thread, perhaps).
    pub fn reload_or_index_ids(&self, reload: Option<Reload<'_>>) -> bool {
        let reloaded = reload.is_some_and(Reload::run);
        if !reloaded {
            self.build_id_index_now_in_background();
        }
        reloaded
    }

    /// Take the commit lock for [`Store::reload_from_log`] now, so that a flush or commit
    /// asked for from here on waits for it: the caller may answer the user in between. None
    /// when there is nothing to gain or it cannot be done safely: a store without a log or
    /// closed, or one with snapshots (they keep the state before alive, and a rollback would
    /// find every file changed).
    pub fn begin_reload(&self) -> Option<Reload<'_>> {
        let writer = self.writer.as_ref()?;
        let guard = self.commit_lock.lock();
        if self.closed.load(std::sync::atomic::Ordering::SeqCst)
            || !self.snapshots.lock().is_empty()
        {
            return None;
        }
        Some(Reload {
            store: self,
            writer,
            _guard: guard,
        })
    }

    /// Say that the store is being closed: a reload not yet begun is not done.
    pub fn mark_closed(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(Some(warmer)) = self.warmer.get() {
            warmer.stop();
        }
    }

    /// Wait until every commit so far is on disk: one under way (or a reload from the log)
    /// first. Not to be called with the commit lock held.
    pub fn flush(&self) -> Result<(), String> {
        drop(self.commit_lock.lock());
        match &self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}
