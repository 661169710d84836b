//! The notes read into the store: a file from disk now, and off the main thread a buffer's
//! text, a saved file, whole directories (with progress and cancellation). What an ingest changed fires the skills'
//! save and TODO-change triggers. The store does the reading and parsing; this only puts it
//! on the workers and reports it as events.

use super::event::Event;
use super::runtime::Runtime;
use crate::store::text::Written;
use crate::store::{IngestReport, Store, StoreError, TodoKeywords};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

/// What ingesting one file from disk did.
#[derive(Debug)]
pub enum FileIngest {
    /// The file was read (or found unchanged).
    Read(IngestReport),
    /// The file no longer exists: it left the store, with its `nodes` nodes (0 when it was
    /// not in the store).
    Gone { nodes: usize },
}

impl Runtime {
    /// Ingest `file` from disk now, on this thread; re-read it even if unchanged when `force`.
    /// A file that no longer exists is not an error: it leaves the store, as a directory
    /// ingest drops the files that are gone, and the log says so. A file that exists but
    /// cannot be read is an error.
    pub fn ingest_file_now(&self, file: &str, force: bool) -> Result<FileIngest, StoreError> {
        let store = self.store();
        let before = store.state().files.get(file).map(|doc| doc.nodes.len());
        match store.ingest_file(file, force) {
            Ok(report) => Ok(FileIngest::Read(report)),
            Err(StoreError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                // The removal a directory ingest makes for a file that is gone.
                store.remove_file(file);
                let nodes = before.unwrap_or(0);
                if before.is_some() {
                    self.with_telemetry(|t| {
                        t.log(
                            "store",
                            format!("{file} no longer exists: its {nodes} nodes left the store"),
                        )
                    });
                }
                Ok(FileIngest::Gone { nodes })
            }
            Err(e) => Err(e),
        }
    }

    /// Ingest a copy of a buffer's text off the main thread. Returns the request id; the
    /// result arrives as an event. Only the newest request per file is committed.
    pub fn ingest_text_async(
        &'static self,
        file: String,
        text: String,
        todo: Option<TodoKeywords>,
    ) -> u64 {
        let generation = self.store().reserve_generation(&file);
        self.ingest_on_worker(file, move |store, file| {
            store.ingest_text(file, &text, todo.as_ref(), None, Some(generation))
        })
    }

    /// Ingest a buffer Emacs has just saved by reading its file on a worker, so the main
    /// thread copies nothing: the file is the buffer's text written as `written` says.
    /// The generation is reserved now, on the saving thread, so that of two saves racing
    /// on the workers the later one's text is what the store keeps. Returns the request id.
    pub fn ingest_saved_async(
        &'static self,
        file: String,
        written: Written,
        todo: Option<TodoKeywords>,
    ) -> u64 {
        let generation = self.store().reserve_generation(&file);
        self.ingest_on_worker(file, move |store, file| {
            store.ingest_saved(file, written, todo.as_ref(), generation)
        })
    }

    /// Run `ingest` of `file` on a worker under a new request id, report it as an event
    /// (`Superseded` when a newer ingest of the file won) and fire the skills' save and
    /// TODO-change triggers when it changed the file's nodes.
    fn ingest_on_worker(
        &'static self,
        file: String,
        ingest: impl FnOnce(&Store, &str) -> Result<Option<IngestReport>, StoreError> + Send + 'static,
    ) -> u64 {
        let request = self.next_id();
        let store = self.store();
        self.spawn(request, Some(file.clone()), move || {
            let before = store.state().files.get(file.as_str()).cloned();
            let event = match ingest(&store, &file) {
                Ok(Some(report)) => {
                    if report.changed {
                        let after = store.state().files.get(file.as_str()).cloned();
                        self.fire_file_triggers(&file, before.as_ref(), after.as_ref());
                    }
                    Event::Ingested { request, report }
                }
                Ok(None) => Event::Superseded { request, file },
                Err(e) => Event::Failed {
                    request,
                    file: Some(file),
                    message: e.to_string(),
                },
            };
            self.push(event);
        });
        request
    }

    /// Ingest `file` from disk on a worker (a saved buffer); returns the request id.
    pub fn ingest_file_async(&'static self, file: String) -> u64 {
        let request = self.next_id();
        let store = self.store();
        self.spawn(request, Some(file.clone()), move || {
            let before = store.state().files.get(file.as_str()).cloned();
            self.push(match store.ingest_file(&file, false) {
                Ok(report) => {
                    if report.changed {
                        let after = store.state().files.get(report.file.as_str()).cloned();
                        self.fire_file_triggers(&file, before.as_ref(), after.as_ref());
                    }
                    Event::Ingested { request, report }
                }
                Err(e) => Event::Failed {
                    request,
                    file: Some(file),
                    message: e.to_string(),
                },
            });
        });
        request
    }

    /// Ingest every Org file under `dirs` off the main thread, with progress events.
    pub fn ingest_directories_async(&'static self, dirs: Vec<PathBuf>) -> u64 {
        let request = self.next_id();
        let cancel = self.cancellable(request);
        let store = self.store();
        self.spawn(request, None, move || {
            let mut last = std::time::Instant::now();
            let report = store.ingest_directories(
                &dirs,
                |done, total, file| {
                    // A few progress reports a second are plenty for the echo area.
                    if last.elapsed().as_millis() >= 200 || done == total {
                        last = std::time::Instant::now();
                        self.push(Event::Progress {
                            request,
                            done,
                            total,
                            file: file.to_string(),
                        });
                    }
                },
                || cancel.load(Ordering::Relaxed),
            );
            self.forget_cancellable(request);
            let new_versions = report.new_versions;
            // Begun before the answer, so that a flush asked for after it waits for the
            // reload; run after it, since the reload only frees the bodies the ingest holds.
            let reload = store
                .worth_reloading(new_versions)
                .then(|| store.begin_reload())
                .flatten();
            self.push(Event::DirectoryDone { request, report });
            if store.reload_or_index_ids(reload) {
                let message = format!(
                    "loaded again from its log after {new_versions} new versions: \
                     their bodies are read from there"
                );
                self.with_telemetry(|t| t.log("store", message));
            }
        });
        request
    }
}

impl Runtime {
    /// Make the store equal the files on disk (see [`crate::store::Store::reconcile`]) off
    /// the main thread; `dirs` are the user's directories, whose new Org files are added.
    /// Each file stored or removed is reported as a save's ingest is (`Ingested`, or
    /// `Removed`), under a request id of its own, so that views refresh; then `Reconciled`
    /// under the returned id. What changed fires no skill trigger, as after a directory
    /// ingest: a pull of many files is not a burst of saves.
    pub fn reconcile_async(&'static self, dirs: Vec<PathBuf>) -> u64 {
        let request = self.next_id();
        let cancel = self.cancellable(request);
        let store = self.store();
        self.spawn(request, None, move || {
            let report = store.reconcile(&dirs, || cancel.load(Ordering::Relaxed));
            self.forget_cancellable(request);
            for r in &report.ingested {
                self.push(Event::Ingested {
                    request: self.next_id(),
                    report: r.clone(),
                });
            }
            for (file, nodes) in &report.removed {
                self.push(Event::Removed {
                    request: self.next_id(),
                    file: file.clone(),
                    nodes: *nodes,
                });
            }
            self.push(Event::Reconciled { request, report });
        });
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_ingested_now_that_is_gone_leaves_the_store_and_the_log_says_so() {
        // A runtime of its own (an in-memory store): the global one belongs to other tests.
        let rt: &'static Runtime = Box::leak(Box::new(Runtime::new(1).unwrap()));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.org");
        std::fs::write(&path, "* One\n** Two\n").unwrap();
        let file = path.to_str().unwrap();
        match rt.ingest_file_now(file, false).unwrap() {
            FileIngest::Read(report) => assert_eq!(report.nodes, 3),
            other => panic!("not read: {other:?}"),
        }
        std::fs::remove_file(&path).unwrap();
        match rt.ingest_file_now(file, false).unwrap() {
            FileIngest::Gone { nodes } => assert_eq!(nodes, 3),
            other => panic!("not gone: {other:?}"),
        }
        assert!(!rt.store().state().files.contains_key(file));
        let logged = rt.with_telemetry(|t| t.entries());
        assert!(logged
            .iter()
            .any(|e| e.kind == "store" && e.message.contains("no longer exists")));
        // Gone again: nothing to remove, still no error.
        assert!(matches!(
            rt.ingest_file_now(file, false),
            Ok(FileIngest::Gone { nodes: 0 })
        ));
        // A file that exists but cannot be read (a directory) is an error.
        let unreadable = dir.path().join("dir.org");
        std::fs::create_dir(&unreadable).unwrap();
        assert!(rt
            .ingest_file_now(unreadable.to_str().unwrap(), false)
            .is_err());
    }
}
