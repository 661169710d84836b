//! Finding the credentials of stored documents ahead of the scan that asks
//! ([`Store::warm_credentials`]): one thread of the store's own works through the documents
//! an open or an ingest stored, after they are committed, so no commit waits for the
//! detector and the first secret scan only looks up. A scan that comes first finds what
//! is missing itself: both fill the same slot of the document, once.

use super::credentials::Memo;
use super::file_doc::FileDoc;
use super::memory::{release_freed_memory, wait_for_opens};
use super::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Weak};

enum Job {
    /// Documents to fill. Held weakly: one replaced meanwhile is freed, not worked on.
    Docs(Vec<Weak<FileDoc>>),
    /// Answered once every job sent before it is done.
    Flush(Sender<()>),
}

/// The warm-up thread's queue. The thread ends when its store (and so this) is dropped, and
/// stops working once its store is closed ([`Warmer::stop`]).
pub(super) struct Warmer {
    jobs: Sender<Job>,
    stopped: Arc<AtomicBool>,
}

impl Warmer {
    /// The warm-up thread, started; `None` when no thread can start (scans then find
    /// everything themselves).
    fn start() -> Option<Warmer> {
        let (jobs, queue) = channel::<Job>();
        let stopped = Arc::new(AtomicBool::new(false));
        let stop = stopped.clone();
        std::thread::Builder::new()
            .name("org-agent-warm".into())
            .spawn(move || {
                crate::start_module_thread();
                // The warm-up is never what anyone waits for: an ingest or a turn beside
                // it on a busy machine comes first (a scan that comes before it is done
                // finds the rest itself).
                crate::lower_thread_priority();
                while let Ok(job) = queue.recv() {
                    match job {
                        Job::Docs(docs) => {
                            let mut memo = Memo::default();
                            // A closed store's documents are going: Emacs may open
                            // store after store, and each one's warm-up worked through
                            // every document at lowest priority, the closed ones' too.
                            for doc in docs.iter().take_while(|_| !stop.load(Ordering::Relaxed)) {
                                // Nor before a store being opened: the open of another
                                // store (Emacs closes this one and opens it again, say)
                                // is what the user waits for, and this store may be going.
                                wait_for_opens();
                                if let Some(doc) = doc.upgrade() {
                                    doc.credentials_with(&mut memo);
                                }
                            }
                            // The memo and the detector's buffers would otherwise stay
                            // resident with this thread: 10-20 MB at 100,000 headlines.
                            drop(memo);
                            release_freed_memory();
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })
            .ok()?;
        Some(Warmer { jobs, stopped })
    }

    /// Work no more on the documents queued or to come: their store is closed.
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Queue `docs` whose credentials are not known yet.
    pub(super) fn warm<'a>(&self, docs: impl Iterator<Item = &'a Arc<FileDoc>>) {
        self.queue(
            docs.filter(|d| !d.credentials_known())
                .map(Arc::downgrade)
                .collect(),
        );
    }

    fn queue(&self, docs: Vec<Weak<FileDoc>>) {
        if !docs.is_empty() {
            // Fails only when the thread has died: scans then find them themselves.
            let _ = self.jobs.send(Job::Docs(docs));
        }
    }
}

impl Store {
    /// Find the credentials of every stored document on the store's warm-up thread, and
    /// from now on of each document an ingest stores, after its commit. For the session's
    /// store, where a secret scan is to come; a store a test or a tool makes for a moment
    /// has no use for the thread.
    pub fn warm_credentials(&self) {
        if let Some(warmer) = self.warmer.get_or_init(Warmer::start) {
            warmer.warm(self.state().files.values());
        }
    }

    /// Wait until the warm-up thread has worked through every document queued so far.
    /// Returns whether it did: false when there is no warm-up ([`Store::warm_credentials`]
    /// was not called, or its thread could not start or has died).
    pub fn credentials_warmed(&self) -> bool {
        let Some(Some(warmer)) = self.warmer.get() else {
            return false;
        };
        let (done, wait) = channel();
        if warmer.jobs.send(Job::Flush(done)).is_err() {
            return false;
        }
        wait.recv().is_ok()
    }

    /// The documents a commit is storing, to queue for warm-up once it is written: none
    /// when the store does not warm up.
    pub(super) fn to_warm<'a>(
        &self,
        docs: impl Iterator<Item = &'a Arc<FileDoc>>,
    ) -> Vec<Weak<FileDoc>> {
        match self.warmer.get() {
            Some(Some(_)) => docs.map(Arc::downgrade).collect(),
            _ => Vec::new(),
        }
    }

    /// Queue for warm-up the documents [`Store::to_warm`] gave.
    pub(super) fn warm_committed(&self, docs: Vec<Weak<FileDoc>>) {
        if let Some(Some(warmer)) = self.warmer.get() {
            warmer.queue(docs);
        }
    }
}
