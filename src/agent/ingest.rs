//! The notes read into the store off the main thread: a buffer's text, a saved file, whole
//! directories (with progress and cancellation). What an ingest changed fires the skills'
//! save and TODO-change triggers. The store does the reading and parsing; this only puts it
//! on the workers and reports it as events.

use super::event::Event;
use super::runtime::Runtime;
use crate::store::TodoKeywords;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

impl Runtime {
    /// Ingest a copy of a buffer's text off the main thread. Returns the request id; the
    /// result arrives as an event. Only the newest request per file is committed.
    pub fn ingest_text_async(
        &'static self,
        file: String,
        text: String,
        todo: Option<TodoKeywords>,
    ) -> u64 {
        let request = self.next_id();
        let store = self.store();
        let generation = store.reserve_generation(&file);
        self.spawn(request, Some(file.clone()), move || {
            let before = store.state().files.get(file.as_str()).cloned();
            let event = match store.ingest_text(&file, &text, todo.as_ref(), None, Some(generation))
            {
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
            if reload.is_some_and(|r| r.run()) {
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
