//! The store brought back to the files on disk: one pass that looks at every file the store
//! holds under a real path and every Org file under the user's directories, and re-ingests
//! what changed on disk, drops what was deleted and adds what is new. Emacs runs it after
//! opening the store and every so often while it runs, so that a `git pull`, a sync tool or
//! another editor needs no save in Emacs.
//!
//! A file is read only when its size or modification time is not what the store recorded,
//! and not what this pass saw last time either; then its text is hashed, and parsed only
//! when the hash is not the store's. So a pass over unchanged notes costs one `stat` per file.
//!
//! What a buffer gave the store (a save, an unsaved buffer's text) has no modification time.
//! While the file on disk stays as the last pass saw it, the buffer's text is left alone: it
//! is the newer. Once the disk changes, the disk wins.

use super::error::StoreError;
use super::file_doc::text_digest;
use super::ingest::{
    file_meta, IngestReport, Parsed, Prepared, COMMIT_GROUP_FILES, COMMIT_GROUP_NODES,
};
use super::state::{IdUpdates, State};
use super::{filename, text, Store};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A file on disk as a pass saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disk {
    /// In the store when it was opened, not looked at since: whatever is on disk now is
    /// news (a file deleted while Emacs was not running leaves the store).
    Unknown,
    Missing,
    /// Modification time (ns) and size.
    Found(i64, u64),
}

/// What [`Store::reconcile`] last saw of each file on disk. A file absent from it was never
/// looked at and was not in the store when it was opened: a buffer's text stored under a
/// name with no file behind it yet, which a pass leaves alone.
#[derive(Default)]
pub(super) struct DiskSeen(HashMap<Arc<str>, Disk>);

impl DiskSeen {
    /// Every file of the store as opened, not yet looked at.
    pub(super) fn opened(state: &State) -> DiskSeen {
        DiskSeen(
            state
                .files
                .keys()
                .map(|k| (k.clone(), Disk::Unknown))
                .collect(),
        )
    }
}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Files looked at: those of the store under a real path and the Org files under the
    /// directories.
    pub files: usize,
    /// Files read because their size or modification time changed, whose text was the
    /// store's all the same.
    pub confirmed: usize,
    /// Files stored again (changed) or for the first time (new).
    pub ingested: Vec<IngestReport>,
    /// Files that left the store, with their node counts.
    pub removed: Vec<(String, usize)>,
    pub errors: Vec<String>,
    pub cancelled: bool,
}

impl ReconcileReport {
    /// Whether the pass changed the store.
    pub fn changed(&self) -> bool {
        !self.ingested.is_empty() || !self.removed.is_empty()
    }
}

/// A file the scan found out of step with the store or with the last pass.
struct Candidate {
    file: String,
    /// Whether the store held the file when the scan looked.
    stored: bool,
}

impl Store {
    /// Make the store equal the files on disk: the files it holds under real (absolute)
    /// paths, and the Org files under `dirs` (found as a directory ingest finds them). A
    /// file changed on disk is ingested again, a deleted one leaves the store, a new one
    /// under `dirs` is added. Runs one at a time with directory ingests.
    ///
    /// A save's ingest of a file racing with the pass is not overwritten by an older read:
    /// the pass stores a file only if no ingest or removal of it was requested since it
    /// began reading it, and then supersedes those that read it before.
    pub fn reconcile(&self, dirs: &[PathBuf], cancelled: impl Fn() -> bool) -> ReconcileReport {
        let _one_at_a_time = self.directory_ingest.lock();
        // Taken out for the pass (passes run one at a time), so that no lock is held
        // across the file system calls.
        let mut seen = std::mem::take(&mut *self.disk_seen.lock());
        let mut report = ReconcileReport::default();
        let candidates = self.scan(dirs, &mut seen, &mut report);
        let mut group: Vec<Parsed> = Vec::new();
        let mut group_nodes = 0;
        for c in candidates {
            if cancelled() {
                report.cancelled = true;
                break;
            }
            if let Some(parsed) = self.reconcile_file(&c, &mut seen, &mut report) {
                group_nodes += parsed.doc.nodes.len();
                group.push(parsed);
                if group_nodes >= COMMIT_GROUP_NODES || group.len() >= COMMIT_GROUP_FILES {
                    self.commit_reconciled(std::mem::take(&mut group), &mut seen, &mut report);
                    group_nodes = 0;
                }
            }
        }
        // What was parsed is stored, cancelled or not.
        self.commit_reconciled(group, &mut seen, &mut report);
        *self.disk_seen.lock() = seen;
        report
    }

    /// Every file to look at, with those the disk says to look at more closely.
    fn scan(
        &self,
        dirs: &[PathBuf],
        seen: &mut DiskSeen,
        report: &mut ReconcileReport,
    ) -> Vec<Candidate> {
        // File → what the store recorded of it (None: not in the store), in name order.
        let mut files: BTreeMap<String, Option<(i64, u64)>> = BTreeMap::new();
        {
            let state = self.state();
            for (path, doc) in state.files.iter() {
                if filename::to_path(path).is_absolute() {
                    files.insert(path.to_string(), Some((doc.mtime, doc.size)));
                }
            }
        }
        for f in Store::org_files_under(dirs) {
            files.entry(filename::key(&f).into_owned()).or_insert(None);
        }
        report.files = files.len();
        let mut out = Vec::new();
        for (file, stored) in files {
            let disk = match file_meta(&filename::to_path(&file)) {
                Ok((mtime, size)) => Disk::Found(mtime, size),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Disk::Missing,
                Err(e) => {
                    report.errors.push(format!("{file}: {e}"));
                    continue;
                }
            };
            let last = seen.0.get(file.as_str()).copied();
            let in_step = match (disk, stored) {
                (Disk::Found(m, s), Some(recorded)) => (m, s) == recorded,
                _ => false,
            };
            if last == Some(disk) {
                continue;
            }
            if in_step {
                // Remembered, so that a buffer's text stored later is kept until the disk
                // changes.
                seen.0.insert(Arc::from(file.as_str()), disk);
                continue;
            }
            // Text the store never read from disk (no modification time) under a name no
            // file was ever seen at: an unsaved buffer's, which the pass keeps.
            let from_buffer = stored.is_some_and(|(mtime, _)| mtime == 0);
            if disk == Disk::Missing && last.is_none() && from_buffer {
                seen.0.insert(Arc::from(file.as_str()), Disk::Missing);
                continue;
            }
            out.push(Candidate {
                file,
                stored: stored.is_some(),
            });
        }
        out
    }

    /// Look at one candidate closely: remove it, find its text the store's, or return it
    /// parsed, to store.
    fn reconcile_file(
        &self,
        c: &Candidate,
        seen: &mut DiskSeen,
        report: &mut ReconcileReport,
    ) -> Option<Parsed> {
        let generation = self.observed_generation(&c.file);
        let path = filename::to_path(&c.file);
        let meta = match file_meta(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let nodes = self
                    .state()
                    .files
                    .get(c.file.as_str())
                    .map(|d| d.nodes.len());
                if c.stored && self.remove_file_if_latest(&c.file, Some(generation)) {
                    report.removed.push((c.file.clone(), nodes.unwrap_or(0)));
                }
                seen.0.insert(Arc::from(c.file.as_str()), Disk::Missing);
                return None;
            }
            Err(e) => {
                report.errors.push(format!("{}: {e}", c.file));
                return None;
            }
        };
        let text = match std::fs::read(&path) {
            Ok(bytes) => text::decode_owned(bytes),
            Err(source) => {
                let e = StoreError::Read {
                    file: path.to_path_buf(),
                    source,
                };
                report.errors.push(e.to_string());
                return None;
            }
        };
        let doc = self.state().files.get(c.file.as_str()).cloned();
        // The text the store has, however it was parsed (a buffer's keywords, say).
        let same = doc.is_some_and(|d| text_digest(&text, &d.settings) == d.text_hash);
        if same {
            if self.confirm_read(&c.file, generation) {
                report.confirmed += 1;
                seen.0
                    .insert(Arc::from(c.file.as_str()), Disk::Found(meta.0, meta.1));
            }
            return None;
        }
        match self.prepare_text(&c.file, &text, None, Some(meta), Some(generation)) {
            Ok(Prepared::Parsed(mut parsed)) => {
                parsed.supersede = true;
                Some(parsed)
            }
            Ok(Prepared::Unchanged(_)) => {
                if self.confirm_read(&c.file, generation) {
                    report.confirmed += 1;
                    seen.0
                        .insert(Arc::from(c.file.as_str()), Disk::Found(meta.0, meta.1));
                }
                None
            }
            Err(e) => {
                report.errors.push(e.to_string());
                None
            }
        }
    }

    /// Whether a read of `file` that found the store's text still stands: no ingest or
    /// removal of it was requested since `generation`. If so, those that read it before are
    /// superseded, as a store of the read would: the pass then remembers the disk as in
    /// step, and an older text stored after it would stay.
    fn confirm_read(&self, file: &str, generation: u64) -> bool {
        let _guard = self.commit_lock.lock();
        if !self.is_latest(file, Some(generation)) {
            return false;
        }
        self.reserve_generation(file);
        true
    }

    /// Store the files a pass parsed; remember the disk as seen for those stored. One not
    /// stored lost to a newer ingest: the next pass looks at it again.
    fn commit_reconciled(
        &self,
        group: Vec<Parsed>,
        seen: &mut DiskSeen,
        report: &mut ReconcileReport,
    ) {
        if group.is_empty() {
            return;
        }
        let metas: Vec<(Arc<str>, Disk)> = group
            .iter()
            .map(|p| (p.doc.path.clone(), Disk::Found(p.doc.mtime, p.doc.size)))
            .collect();
        for ((path, disk), stored) in metas
            .into_iter()
            .zip(self.commit_parsed(group, IdUpdates::Apply))
        {
            if let Some(r) = stored {
                seen.0.insert(path, disk);
                report.ingested.push(r);
            }
        }
    }
}
