//! Handing the memory freed by loads and ingests back to the system (mimalloc keeps a
//! thread's freed pages until the thread allocates again, and ingest threads end), and
//! freeing a replaced store out of the way of the open that replaced it.

use super::{FileDoc, Store};
use std::sync::Arc;

/// Hand back to the system the memory this thread, and threads that have ended, freed.
/// Loading frees as much as it keeps (decoded batches, file records), and a directory
/// ingest about as much (parse trees, texts), spread over pages the allocator would
/// otherwise hold: at 100,000 headlines, 70 MB of resident memory nothing uses each.
pub(super) fn release_freed_memory() {
    extern "C" {
        // mimalloc's, linked as the global allocator (src/lib.rs).
        fn mi_collect(force: bool);
    }
    // SAFETY: takes no pointers; mimalloc collects the calling thread's heap and the
    // abandoned ones, which is always allowed.
    unsafe {
        mi_collect(true);
        // Not always enough alone: in some runs a reload's collection left what it freed
        // resident (+80 MB at 100,000 headlines, twice what the store holds) until a
        // second one, made right after, handed it back. A second pass finds little to do.
        mi_collect(true);
    }
}

/// Stores being opened in this process now, and the signal that the count fell to none.
static OPENING: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static NONE_OPENING: std::sync::Condvar = std::sync::Condvar::new();

fn opening() -> std::sync::MutexGuard<'static, usize> {
    // The count stays right whatever panicked while holding it: it is changed in one step.
    OPENING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held while a store is being opened: freeing a replaced store waits meanwhile
/// ([`Store::free_between_opens`]), and so does finding stored documents' credentials
/// ahead of a scan (`warm`).
pub(super) struct Opening(());

impl Opening {
    pub(super) fn begin() -> Opening {
        *opening() += 1;
        Opening(())
    }
}

impl Drop for Opening {
    fn drop(&mut self) {
        let mut n = opening();
        *n = n.saturating_sub(1);
        if *n == 0 {
            NONE_OPENING.notify_all();
        }
    }
}

/// Return once no store is being opened in this process.
pub(super) fn wait_for_opens() {
    let mut n = opening();
    while *n > 0 {
        n = NONE_OPENING.wait(n).unwrap_or_else(|e| e.into_inner());
    }
}

/// How many entries of the archive's tables are freed between two looks at whether a store
/// is being opened (files are freed one at a time): under a millisecond's work.
const ENTRIES_A_PIECE: usize = 1 << 10;

impl Store {
    /// Free this store, when this is the last handle to it, a piece at a time, and no piece
    /// while a store is being opened in this process. The store an open replaces is freed
    /// while the next one is opened (Emacs closes one and opens another): the allocator and
    /// the kernel then take and give back memory for both at once, which made a million
    /// headlines' open a fifth slower, even with the freeing thread at lowest priority.
    /// Another handle left frees the store with the last of them, as any drop does.
    pub fn free_between_opens(self: Arc<Store>) {
        let Ok(store) = Arc::try_unwrap(self) else {
            return;
        };
        wait_for_opens();
        let Store {
            current,
            archive,
            snapshots,
            writer,
            ..
        } = store;
        // Flushes what is left, and ends the writing thread.
        drop(writer);
        drop(snapshots);
        let state = current.into_inner();
        let docs: Vec<Arc<FileDoc>> = state.files.values().cloned().collect();
        drop(state);
        for doc in docs {
            wait_for_opens();
            drop(doc);
        }
        let mut archive = archive.into_inner();
        for (i, entry) in archive.history.drain().enumerate() {
            if i % ENTRIES_A_PIECE == 0 {
                wait_for_opens();
            }
            drop(entry);
        }
        for (i, version) in archive.versions.drain().enumerate() {
            if i % ENTRIES_A_PIECE == 0 {
                wait_for_opens();
            }
            drop(version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;
    use std::time::Duration;

    /// A replaced store is freed only once no store is being opened, and then all of it.
    #[test]
    fn a_replaced_store_is_freed_only_between_opens() {
        let store = Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_text(
                "/n/a.org",
                "* A\n:PROPERTIES:\n:ID: a\n:END:\n** B\n",
                None,
                None,
                None,
            )
            .expect("ingest");
        let state = store.state();
        let doc = Arc::downgrade(&state.files["/n/a.org"]);
        let nodes = &state.files["/n/a.org"].nodes;
        let version = Arc::downgrade(&nodes[nodes.len() - 1].content);
        drop(state);
        let opening = Opening::begin();
        let freeing = std::thread::spawn(move || store.free_between_opens());
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !freeing.is_finished() && doc.upgrade().is_some(),
            "freed while a store was being opened"
        );
        drop(opening);
        freeing.join().expect("frees");
        assert!(doc.upgrade().is_none() && version.upgrade().is_none());
    }

    /// Finding stored documents' credentials ahead of a scan waits while a store is being
    /// opened, and goes on after.
    #[test]
    fn credentials_are_found_ahead_only_between_opens() {
        let store = Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_text("/n/a.org", "* A\npassword: hunter2-xyz\n", None, None, None)
            .expect("ingest");
        let doc = store.state().files["/n/a.org"].clone();
        assert!(!doc.credentials_known());
        let opening = Opening::begin();
        store.warm_credentials();
        let warmed = {
            let store = store.clone();
            std::thread::spawn(move || store.credentials_warmed())
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !warmed.is_finished() && !doc.credentials_known(),
            "found while a store was being opened"
        );
        drop(opening);
        assert!(warmed.join().expect("warms"));
        assert!(doc.credentials_known());
    }

    /// A closed store's documents are not worked on ahead of a scan any more: Emacs opening
    /// store after store left each closed one's warm-up going.
    #[test]
    fn a_closed_store_s_credentials_are_not_found_ahead() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/a.org", "* A\npassword: hunter2-xyz\n", None, None, None)
            .expect("ingest");
        let doc = store.state().files["/n/a.org"].clone();
        // Held, so that the warm-up has not started on the document when the store closes.
        let opening = Opening::begin();
        store.warm_credentials();
        store.mark_closed();
        drop(opening);
        assert!(store.credentials_warmed());
        assert!(!doc.credentials_known());
    }
}
