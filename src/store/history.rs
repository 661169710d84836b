//! What the store remembers of the past: each node's versions, and snapshots of whole
//! states to roll back to. A rollback is an ordinary commit of the snapshot's files, so it
//! is logged and supersedes ingests read before it.

use super::archive::{Archive, Version};
use super::error::{Result, StoreError};
use super::now;
use super::persist::{FileEntry, Record};
use super::state::State;
use super::Store;
use std::sync::Arc;

/// A saved state, for rollback.
#[derive(Clone)]
pub struct Snapshot {
    pub time: i64,
    pub label: String,
    pub state: Arc<State>,
}

impl Store {
    /// Every version a node id has had, oldest first.
    pub fn history(&self, id: &str) -> Vec<Version> {
        let archive = self.archive.lock();
        let Some(hist) = archive.history.get(id) else {
            return Vec::new();
        };
        hist.iter()
            .map(|(content, time)| Version {
                hash: content.hash,
                time: *time,
                content: content.clone(),
            })
            .collect()
    }

    /// Run `f` on the archive of every version and each id's history.
    pub fn with_archive<R>(&self, f: impl FnOnce(&Archive) -> R) -> R {
        f(&self.archive.lock())
    }

    /// Take a snapshot; returns its number (0 is the newest).
    pub fn snapshot(&self, label: &str) -> usize {
        let cap = self.config().snapshot_capacity.max(1);
        // Not during a reload from the log (see `begin_reload`), which would leave the
        // snapshot sharing no document with the state after it.
        let _no_reload = self.commit_lock.lock();
        let mut snaps = self.snapshots.lock();
        snaps.push_front(Snapshot {
            time: now(),
            label: label.to_string(),
            state: self.state(),
        });
        snaps.truncate(cap);
        0
    }

    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.snapshots.lock().iter().cloned().collect()
    }

    /// Make snapshot `n` (0 = newest) the current state, and persist that.
    pub fn rollback(&self, n: usize) -> Result<()> {
        let snap = self
            .snapshots
            .lock()
            .get(n)
            .cloned()
            .ok_or(StoreError::NoSnapshot(n))?;
        let guard = self.commit_lock.lock();
        let mut state = (*self.state()).clone();
        let mut records = Vec::new();
        let time = now();
        let gone: Vec<Arc<str>> = state
            .files
            .keys()
            .filter(|p| !snap.state.files.contains_key(*p))
            .cloned()
            .collect();
        // Ingests of these files read before are superseded, as by a removal.
        for p in gone {
            self.reserve_generation(&p);
            state.remove_file(&p);
            records.push(Record::RemoveFile(p.to_string()));
        }
        for (p, doc) in snap.state.files.iter() {
            let same = state.files.get(p).is_some_and(|cur| Arc::ptr_eq(cur, doc));
            if !same {
                self.reserve_generation(p);
                state.set_file(doc.clone(), time, &mut self.archive.lock(), &mut records);
                records.push(Record::File(FileEntry::Doc(doc.clone())));
            }
        }
        let commit = self.publish(state, records);
        drop(guard);
        commit.write();
        Ok(())
    }
}
