//! How a change becomes current and durable: the commit lock serialises writers, a change
//! is published (or made in place when no reader holds the state), and its records are
//! encoded and handed to the log writer after the lock is released. Also the generations
//! that let a newer ingest (or a removal) of a file supersede one read before it.

use super::persist::{self, LogWriter, Record};
use super::state::{IdUpdates, State};
use super::Store;
use std::sync::Arc;

/// A published state's records, waiting to be encoded and handed to the log writer.
#[must_use = "a commit that is not written leaves its changes out of the log"]
pub(super) struct Commit<'s> {
    ticket: Option<(&'s LogWriter, persist::Ticket<'s>)>,
    records: Vec<Record>,
}

impl Commit<'_> {
    pub(super) fn write(self) {
        if let Some((writer, ticket)) = self.ticket {
            let bytes = if self.records.is_empty() {
                Vec::new()
            } else {
                let mut bytes = writer.batch_buffer();
                if let Err(e) = persist::append_batch(&self.records, &mut bytes) {
                    writer.report_error(format!(
                        "writing {}: a commit's records cannot be encoded, so it is not in \
                         the log: {e}",
                        writer.path.display()
                    ));
                }
                bytes
            };
            writer.append(ticket, bytes);
        }
    }
}

impl Store {
    /// Make `state` current and reserve its place in the log. Call with the commit lock
    /// held; write the returned commit after releasing it, so encoding does not serialise
    /// concurrent ingests.
    pub(super) fn publish(&self, state: State, records: Vec<Record>) -> Commit<'_> {
        *self.current.lock() = Arc::new(state);
        self.commit(records)
    }

    /// Reserve the place in the log of `records`, a change made to the current state. Call
    /// with the commit lock held, as the change was made.
    pub(super) fn commit(&self, records: Vec<Record>) -> Commit<'_> {
        Commit {
            ticket: self.writer.as_ref().map(|w| (w, w.ticket())),
            records,
        }
    }

    /// Change the current state with `change`, with the commit lock held.
    ///
    /// Where [`Store::publish`] builds the next state on a copy, this changes the state in
    /// place when no reader holds it, the usual case. A change on a copy copied, for each id
    /// it added, a node of the id index (a 64-key leaf when it was a B-tree), and freed it
    /// with the old state: 8–25% of ingesting the corpus one file at a time. A reader that
    /// holds the state keeps it as it was (`Arc::make_mut` changes a copy then; the id
    /// index's bucket array, 16 bytes a bucket, is copied once for it).
    ///
    /// Readers wait for `change`: it should only apply what was worked out before, and
    /// must not panic, since the state it changes is the one readers find.
    pub(super) fn change_in_place<R>(
        &self,
        ids: IdUpdates,
        change: impl FnOnce(&mut State) -> R,
    ) -> R {
        // An id index still being built after the open is waited for here, not while
        // readers wait (one left to its first reader stays so).
        if ids == IdUpdates::Apply {
            self.state().ids();
        }
        change(Arc::make_mut(&mut self.current.lock()))
    }

    /// Reserve a generation for an ingest of `file`; a later reservation supersedes it.
    pub fn reserve_generation(&self, file: &str) -> u64 {
        let g = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.generations.lock().insert(file.to_string(), g);
        g
    }

    /// Make the generations table again, every key a fresh allocation of this thread. A
    /// directory ingest adds one key per file, made by the thread that parsed it among that
    /// file's garbage: once the garbage is freed, each key alone keeps an allocator page
    /// resident (after a first ingest of 100k headlines in 100 files, about 7 MB more
    /// than an open of the same store). Called under the commit lock, after a reload.
    pub(super) fn compact_generations(&self) {
        let mut generations = self.generations.lock();
        let fresh: super::HashMap<String, u64> = generations
            .iter()
            .map(|(file, &g)| (file.as_str().to_owned(), g))
            .collect();
        *generations = fresh;
    }

    /// The generation of `file` now, without reserving one: an ingest that stores what it
    /// read only when this is still [`Store::is_latest`] loses to any ingest or removal of
    /// the file requested meanwhile. 0, which no reservation returns, when none was.
    pub(super) fn observed_generation(&self, file: &str) -> u64 {
        self.generations.lock().get(file).copied().unwrap_or(0)
    }

    pub(super) fn is_latest(&self, file: &str, generation: Option<u64>) -> bool {
        match generation {
            None => true,
            Some(g) => self
                .generations
                .lock()
                .get(file)
                .is_none_or(|&latest| latest == g),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::store::{Config, Store};

    /// Made again after a reload, the table still supersedes an ingest read before it.
    #[test]
    fn compacted_generations_keep_what_supersedes_what() {
        let store = Store::in_memory(Config::default());
        let stale = store.reserve_generation("/n/a.org");
        let latest = store.reserve_generation("/n/a.org");
        let other = store.reserve_generation("/n/b.org");
        store.compact_generations();
        assert!(!store.is_latest("/n/a.org", Some(stale)));
        assert!(store.is_latest("/n/a.org", Some(latest)));
        assert_eq!(store.observed_generation("/n/b.org"), other);
        assert_eq!(store.observed_generation("/n/never.org"), 0);
        assert!(store.reserve_generation("/n/b.org") > other);
    }
}
