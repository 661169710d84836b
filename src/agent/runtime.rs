//! The module's worker threads and the queue that carries their results to Emacs.
//!
//! Workers never call Emacs. They push an [`Event`] and, when the queue goes from empty to
//! non-empty, write one byte to the wake-up channel (a pipe process in Emacs, opened with
//! `open_channel`), whose filter calls the module's drain function on the main thread.

use super::event::{ChatUpdate, Event};
use super::message::{Action, EmacsAction};
use super::telemetry::Telemetry;
use super::turn::{
    run_turn, Approval, BoxFuture, Conversation, Equipment, Operator, TurnConfig, TurnEvent,
};
use crate::agent::semantic::Semantic;
use crate::agent::turn::Budget;
use crate::context::privacy::Privacy;
use crate::gates::audit::AuditLog;
use crate::gates::budget::{Ledger, Limits};
use crate::llm::cascade::{Cascade, Health, Policy};
use crate::llm::completion::{Delta, ToolCall};
use crate::llm::embeddings::{EmbeddingBackend, EmbeddingClient};
use crate::llm::http::{Backend, CancelToken, ChatClient};
use crate::sexp::Sexp;
use crate::store::vectors::{write_atomic, VectorError, VectorIndex};
use crate::store::{Config, OpenReport, Store, StoreError, TodoKeywords};
use crate::tools::emacs::ElispTool;
use futures_util::FutureExt;
use once_cell::sync::OnceCell;
use parking_lot::{Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

pub type Waker = Box<dyn Write + Send>;

pub struct Runtime {
    tokio: tokio::runtime::Runtime,
    store: RwLock<Arc<Store>>,
    config: Mutex<Config>,
    events: Mutex<VecDeque<Event>>,
    waker: Mutex<Option<Waker>>,
    next_request: AtomicU64,
    cancels: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    /// Recent log entries and counters per tool and backend.
    telemetry: Mutex<Telemetry>,
    /// In-flight chat turns, by request id.
    chat_cancels: Mutex<HashMap<u64, CancelToken>>,
    /// Conversations by id; a turn holds its conversation's lock while it runs.
    conversations: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Conversation>>>>,
    /// Turns waiting for the main thread (an answer from the user, an actuator result),
    /// by reply id, with the request they belong to.
    replies: Mutex<HashMap<u64, (u64, Pending)>>,
    /// When Emacs was last woken, and whether a wake for streamed text is scheduled.
    last_wake: Mutex<std::time::Instant>,
    wake_scheduled: AtomicBool,
    /// The privacy rules every turn (and embedding job) starts with.
    privacy: RwLock<Arc<Privacy>>,
    /// Which backends failed recently, shared by every turn's cascade.
    health: Arc<Health>,
    /// The notes' embeddings, and the file they are kept in (beside the store's log).
    vectors: Arc<Mutex<VectorIndex>>,
    vectors_path: Mutex<Option<PathBuf>>,
    /// Tokens and cost spent per day, for budgets (kept beside the store).
    ledger: RwLock<Arc<Ledger>>,
}

/// The vector index's file in the state directory.
const VECTORS_FILE: &str = "vectors.bin";

/// Streamed text wakes Emacs at most this often (the chat inserts at most every 0.1 s too).
const TEXT_WAKE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What a turn waits for from the main thread.
enum Pending {
    Answer(oneshot::Sender<Approval>),
    Result(oneshot::Sender<Result<Sexp, String>>),
}

/// What a chat turn is equipped with besides its backend and configuration.
#[derive(Default)]
pub struct ChatSetup {
    pub elisp_tools: Vec<ElispTool>,
    /// Where gate decisions are appended (none: not audited).
    pub audit_file: Option<PathBuf>,
    /// Whether the user may be asked (false in batch Emacs: asking means deny).
    pub interactive: bool,
    /// The embedding server, for semantic search and related notes.
    pub embedding: Option<EmbeddingBackend>,
    /// Token and cost limits, and the backends of the cheaper tier requests over them go to
    /// (none: they are refused).
    pub budget: Option<(Limits, Option<Vec<Backend>>)>,
}

/// Emacs as the operator of one chat turn: questions go to the chat buffer and Emacs
/// actions to the actuator, as events; the answers come back through [`Runtime::answer`]
/// and [`Runtime::actuated`].
struct EmacsOperator {
    rt: &'static Runtime,
    request: u64,
    conversation: String,
    interactive: bool,
}

impl Operator for EmacsOperator {
    fn ask(&self, call: &ToolCall, action: &Action, reasons: &[String]) -> BoxFuture<Approval> {
        if !self.interactive {
            return Box::pin(async { Approval::Deny });
        }
        let (tx, rx) = oneshot::channel();
        let reply = self.rt.expect_reply(self.request, Pending::Answer(tx));
        self.rt.push(Event::Chat {
            request: self.request,
            conversation: self.conversation.clone(),
            update: ChatUpdate::Ask {
                reply,
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
                action: action.to_sexp(),
                reasons: reasons.to_vec(),
            },
        });
        // A question nobody answers (the buffer was killed) is a refusal.
        Box::pin(async move { rx.await.unwrap_or(Approval::Deny) })
    }

    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        let (tx, rx) = oneshot::channel();
        let reply = self.rt.expect_reply(self.request, Pending::Result(tx));
        self.rt.push(Event::Actuate {
            request: self.request,
            reply,
            action: action.to_sexp(),
        });
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err("Emacs dropped the action without running it".into()))
        })
    }
}

static RUNTIME: OnceCell<Runtime> = OnceCell::new();

fn default_config() -> Config {
    Config {
        snapshot_capacity: 20,
        ..Config::default()
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Flush a replaced store, then free it on a thread of its own: dropping a large store takes
/// long enough (a few hundred ms at 100k headlines) to be felt on the main thread.
fn retire(old: Arc<Store>) {
    let _ = old.flush();
    let spawned = std::thread::Builder::new()
        .name("org-agent-retire".into())
        .spawn(move || {
            crate::block_sigpipe();
            drop(old);
        });
    // If no thread can be started, the store is dropped here instead (the closure is gone).
    drop(spawned);
}

impl Runtime {
    /// The process-wide runtime, started on first use.
    pub fn global() -> Result<&'static Runtime, std::io::Error> {
        RUNTIME.get_or_try_init(|| Runtime::new(2))
    }

    pub fn new(workers: usize) -> Result<Runtime, std::io::Error> {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .max_blocking_threads(4)
            .thread_name("org-agent-worker")
            // Parsing recurses per headline level; give it room.
            .thread_stack_size(16 << 20)
            .on_thread_start(crate::block_sigpipe)
            .enable_all()
            .build()?;
        let config = default_config();
        Ok(Runtime {
            tokio,
            store: RwLock::new(Arc::new(Store::in_memory(config.clone()))),
            config: Mutex::new(config),
            events: Mutex::new(VecDeque::new()),
            waker: Mutex::new(None),
            next_request: AtomicU64::new(1),
            cancels: Mutex::new(HashMap::new()),
            telemetry: Mutex::new(Telemetry::default()),
            chat_cancels: Mutex::new(HashMap::new()),
            conversations: Mutex::new(HashMap::new()),
            replies: Mutex::new(HashMap::new()),
            last_wake: Mutex::new(std::time::Instant::now()),
            wake_scheduled: AtomicBool::new(false),
            privacy: RwLock::new(Arc::new(Privacy::default())),
            health: Arc::default(),
            vectors: Arc::new(Mutex::new(VectorIndex::new(""))),
            vectors_path: Mutex::new(None),
            ledger: RwLock::new(Arc::new(Ledger::default())),
        })
    }

    pub fn privacy(&self) -> Arc<Privacy> {
        self.privacy.read().clone()
    }

    /// Replace the privacy rules; turns already running keep the rules they started with.
    pub fn set_privacy(&self, privacy: Privacy) {
        *self.privacy.write() = Arc::new(privacy);
    }

    pub fn store(&self) -> Arc<Store> {
        self.store.read().clone()
    }

    /// Open the persisted store in `dir` and make it current.
    pub fn open_store(&'static self, dir: &std::path::Path) -> Result<OpenReport, StoreError> {
        let (store, report) = Store::open(dir, self.config.lock().clone())?;
        let old = std::mem::replace(&mut *self.store.write(), Arc::new(store));
        retire(old);
        // The vectors are derived data: a missing or damaged file only means embedding
        // again, so it never stops the store from opening. Reading and checking 150 MB is
        // not main-thread work: a worker loads them; until then searches find nothing.
        let path = dir.join(VECTORS_FILE);
        *self.vectors.lock() = VectorIndex::new("");
        *self.vectors_path.lock() = Some(path.clone());
        self.tokio.spawn_blocking(move || {
            let index = match VectorIndex::load(&path) {
                Ok(index) => index,
                Err(VectorError::Missing { .. }) => return,
                Err(e) => {
                    self.telemetry.lock().log(
                        "warning",
                        format!("vectors set aside, embedding again: {e}"),
                    );
                    let _ = std::fs::rename(&path, path.with_extension("corrupt"));
                    return;
                }
            };
            // Unless the store was closed or re-opened meanwhile, or an embedding run
            // filled the index first.
            if self.vectors_path.lock().as_deref() == Some(path.as_path()) {
                let mut current = self.vectors.lock();
                if current.is_empty() {
                    *current = index;
                }
            }
        });
        *self.ledger.write() = Arc::new(Ledger::at(dir.join("usage.json")));
        Ok(report)
    }

    /// Keep the store in memory only (closing any persisted one).
    pub fn close_store(&self) {
        let config = self.config.lock().clone();
        let old = std::mem::replace(&mut *self.store.write(), Arc::new(Store::in_memory(config)));
        retire(old);
        *self.vectors_path.lock() = None;
        *self.vectors.lock() = VectorIndex::new("");
    }

    pub fn configure(&self, f: impl FnOnce(&mut Config)) {
        let mut c = self.config.lock();
        f(&mut c);
        self.store().set_config(c.clone());
    }

    pub fn set_waker(&self, waker: Option<Waker>) {
        *self.waker.lock() = waker;
    }

    /// Run `f` on the telemetry (log ring and counters).
    pub fn with_telemetry<R>(&self, f: impl FnOnce(&mut Telemetry) -> R) -> R {
        f(&mut self.telemetry.lock())
    }

    fn log_event(&self, event: &Event) {
        let line = match event {
            Event::Ingested { report, .. } if report.changed => Some((
                "ingest",
                format!(
                    "{} ({} nodes, {} new versions)",
                    report.file, report.nodes, report.new_versions
                ),
            )),
            Event::DirectoryDone { report, .. } => Some((
                "ingest",
                format!(
                    "{} files: {} ingested, {} unchanged, {} removed, {} errors",
                    report.files,
                    report.ingested,
                    report.unchanged,
                    report.removed,
                    report.errors.len()
                ),
            )),
            Event::Failed { message, .. } => Some(("error", message.clone())),
            Event::Chat {
                update: ChatUpdate::Tool { name, decision, .. },
                ..
            } => Some(("gate", format!("{name}: {decision}"))),
            Event::Chat {
                update: ChatUpdate::Ask { name, .. },
                ..
            } => Some(("gate", format!("{name}: asking the user"))),
            Event::Actuate { action, .. } => {
                let text = crate::sexp::print(action.value());
                Some(("actuate", text.chars().take(200).collect()))
            }
            Event::Chat {
                update: ChatUpdate::Done(answer),
                conversation,
                ..
            } => Some((
                "chat",
                format!(
                    "{conversation}: answered ({} characters)",
                    answer.chars().count()
                ),
            )),
            Event::Chat {
                update: ChatUpdate::Error(m),
                conversation,
                ..
            } => Some(("chat", format!("{conversation}: error: {m}"))),
            Event::Chat {
                update: ChatUpdate::Interrupted,
                conversation,
                ..
            } => Some(("chat", format!("{conversation}: interrupted"))),
            Event::Chat {
                update: ChatUpdate::Retrying(m),
                conversation,
                ..
            } => Some((
                "chat",
                format!("{conversation}: error fed back to the LLM: {m}"),
            )),
            _ => None,
        };
        if let Some((kind, message)) = line {
            self.telemetry.lock().log(kind, message);
        }
    }

    pub fn push(&self, event: Event) {
        self.log_event(&event);
        let wake = {
            let mut q = self.events.lock();
            // Pieces of an answer that Emacs has not drained yet become one piece: one
            // insertion, one redisplay.
            if let (
                Some(Event::Chat {
                    request: queued,
                    update: ChatUpdate::Text(text),
                    ..
                }),
                Event::Chat {
                    request,
                    update: ChatUpdate::Text(more),
                    ..
                },
            ) = (q.back_mut(), &event)
            {
                if queued == request {
                    text.push_str(more);
                    return;
                }
            }
            let was_empty = q.is_empty();
            let text = matches!(
                event,
                Event::Chat {
                    update: ChatUpdate::Text(_),
                    ..
                }
            );
            q.push_back(event);
            // Anything but text must not wait behind text held back for a later wake
            // (an error or the end of a turn is shown at once).
            if text {
                was_empty.then_some(true)
            } else {
                (was_empty || self.wake_scheduled.load(Ordering::Acquire)).then_some(false)
            }
        };
        match wake {
            Some(true) => self.wake_for_text(),
            Some(false) => self.push_wake(),
            None => {}
        }
    }

    /// Wake Emacs so that it drains the queue.
    /// Wake Emacs for streamed text: at once if it was last woken [`TEXT_WAKE_INTERVAL`]
    /// ago, else when that much time has passed (text arriving meanwhile joins the queued
    /// piece). A fast stream then costs Emacs a few drains a second, not one per token.
    fn wake_for_text(&self) {
        let since = self.last_wake.lock().elapsed();
        if since >= TEXT_WAKE_INTERVAL {
            self.push_wake();
            return;
        }
        if self.wake_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let delay = TEXT_WAKE_INTERVAL - since;
        self.tokio.spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(rt) = RUNTIME.get() {
                rt.wake_scheduled.store(false, Ordering::Release);
                rt.push_wake();
            }
        });
    }

    pub fn push_wake(&self) {
        *self.last_wake.lock() = std::time::Instant::now();
        {
            // One byte into a pipe that the main thread drains: it cannot block for long,
            // and an error (Emacs closed the pipe) only means nobody is listening.
            if let Some(w) = self.waker.lock().as_mut() {
                let _ = w.write_all(b"\n").and_then(|_| w.flush());
            }
        }
    }

    pub fn drain(&self) -> Vec<Event> {
        self.events.lock().drain(..).collect()
    }

    pub fn pending_events(&self) -> usize {
        self.events.lock().len()
    }

    fn next_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::SeqCst)
    }

    /// Run `work` on a blocking worker; a panic becomes a `Failed` event.
    fn spawn(
        &'static self,
        request: u64,
        file: Option<String>,
        work: impl FnOnce() + Send + 'static,
    ) {
        self.tokio.spawn_blocking(move || {
            crate::block_sigpipe();
            if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(work)) {
                self.push(Event::Failed {
                    request,
                    file,
                    message: format!("internal error (panic): {}", panic_message(&*p)),
                });
            }
        });
    }

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
            let event = match store.ingest_text(&file, &text, todo.as_ref(), None, Some(generation))
            {
                Ok(Some(report)) => Event::Ingested { request, report },
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
            self.push(match store.ingest_file(&file, false) {
                Ok(report) => Event::Ingested { request, report },
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
        let cancel = Arc::new(AtomicBool::new(false));
        self.cancels.lock().insert(request, cancel.clone());
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
            self.cancels.lock().remove(&request);
            self.push(Event::DirectoryDone { request, report });
        });
        request
    }

    /// Ask a running request to stop. Returns whether it was running.
    pub fn cancel(&self, request: u64) -> bool {
        if let Some(token) = self.chat_cancels.lock().get(&request) {
            token.cancel();
            return true;
        }
        match self.cancels.lock().get(&request) {
            Some(flag) => {
                flag.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Cancel every chat turn in flight. Returns how many there were.
    pub fn cancel_chats(&self) -> usize {
        let tokens = self.chat_cancels.lock();
        for t in tokens.values() {
            t.cancel();
        }
        tokens.len()
    }

    /// Note that turn `request` waits for `pending`; returns the reply id Emacs answers.
    fn expect_reply(&self, request: u64, pending: Pending) -> u64 {
        let reply = self.next_id();
        self.replies.lock().insert(reply, (request, pending));
        reply
    }

    /// Take what waits for `reply` if it is of the kind `wanted` accepts; a reply of the
    /// other kind stays where it is.
    fn take_reply(&self, reply: u64, wanted: impl Fn(&Pending) -> bool) -> Option<Pending> {
        let mut replies = self.replies.lock();
        if !replies.get(&reply).is_some_and(|(_, p)| wanted(p)) {
            return None;
        }
        replies.remove(&reply).map(|(_, p)| p)
    }

    /// The user's answer to question `reply`. Returns whether a turn was waiting for it.
    pub fn answer(&self, reply: u64, approval: Approval) -> bool {
        match self.take_reply(reply, |p| matches!(p, Pending::Answer(_))) {
            Some(Pending::Answer(tx)) => tx.send(approval).is_ok(),
            _ => false,
        }
    }

    /// The actuator's result for action `reply`. Returns whether a turn was waiting for it.
    pub fn actuated(&self, reply: u64, result: Result<Sexp, String>) -> bool {
        match self.take_reply(reply, |p| matches!(p, Pending::Result(_))) {
            Some(Pending::Result(tx)) => tx.send(result).is_ok(),
            _ => false,
        }
    }

    /// Whether a turn still waits for `reply` (an interrupted turn's actions are dropped).
    pub fn reply_pending(&self, reply: u64) -> bool {
        self.replies
            .lock()
            .get(&reply)
            .is_some_and(|(_, p)| match p {
                Pending::Answer(tx) => !tx.is_closed(),
                Pending::Result(tx) => !tx.is_closed(),
            })
    }

    /// Set the history of conversation `id` (to continue one saved earlier).
    pub fn restore_conversation(&self, id: String, messages: Vec<crate::llm::http::Message>) {
        let conversation = Conversation {
            messages,
            ..Conversation::default()
        };
        self.conversations
            .lock()
            .insert(id, Arc::new(tokio::sync::Mutex::new(conversation)));
    }

    /// The messages of conversation `id`, or `None` while a turn of it runs (or if there
    /// is no such conversation). Never waits.
    pub fn conversation_messages(&self, id: &str) -> Option<Vec<crate::llm::http::Message>> {
        let conversation = self.conversations.lock().get(id)?.clone();
        let guard = conversation.try_lock().ok()?;
        Some(guard.messages.clone())
    }

    /// Forget conversation `id` (its history).
    pub fn forget_conversation(&self, id: &str) {
        self.conversations.lock().remove(id);
    }

    /// What the next turn of conversation `id` would send for `text` to `backend` (what
    /// `org-agent-context-preview` shows), built by the same code as a turn (related notes
    /// included, which takes an embedding request): an [`Event::Preview`] with the exact
    /// request body. Nothing is sent to the LLM. Returns the request id at once.
    pub fn preview_async(
        &'static self,
        id: String,
        text: String,
        backend: Backend,
        cfg: TurnConfig,
        setup: ChatSetup,
    ) -> u64 {
        let request = self.next_id();
        let store = self.store();
        let privacy = self.privacy();
        let messages = self.conversation_messages(&id).unwrap_or_default();
        self.run_async(request, |cancel| async move {
            let client = ChatClient::new(backend.clone()).map_err(|e| e.to_string())?;
            let eq = Equipment {
                edit_tools: true,
                elisp_tools: setup.elisp_tools,
                privacy,
                semantic: self.semantic(setup.embedding)?,
                ..Equipment::new(client, store)
            };
            let mut cfg = cfg;
            if cfg.related.is_empty() {
                cfg.related = crate::agent::turn::related_notes(&eq, &text, &cfg, &cancel)
                    .await
                    .unwrap_or_default();
            }
            let mut conversation = Conversation {
                messages,
                ..Conversation::default()
            };
            conversation
                .messages
                .push(crate::llm::http::Message::User(text));
            let chat = crate::agent::turn::step_request(&eq, &conversation, &cfg);
            let body = backend.wire.request_body(&chat, &backend.model);
            Ok(Event::Preview {
                request,
                backend: backend.name.clone(),
                url: backend.url(chat.stream),
                body: serde_json::to_string_pretty(&body).unwrap_or_default(),
            })
        })
    }

    /// Semantic search with `backend` over the runtime's vector index, if there is one.
    fn semantic(&self, backend: Option<EmbeddingBackend>) -> Result<Option<Semantic>, String> {
        let Some(backend) = backend else {
            return Ok(None);
        };
        Ok(Some(Semantic {
            client: EmbeddingClient::new(backend).map_err(|e| e.to_string())?,
            index: self.vectors.clone(),
        }))
    }

    /// Bring the vector index up to date with the store through `backend` (embedding what
    /// is new or changed, dropping what changed, vanished or became private), then save it;
    /// an [`Event::Embedded`] reports it. Returns the request id at once.
    pub fn embed_async(&'static self, backend: EmbeddingBackend, embed_all: bool) -> u64 {
        let request = self.next_id();
        let store = self.store();
        let privacy = self.privacy();
        self.run_async(request, |cancel| async move {
            let semantic = self
                .semantic(Some(backend))?
                .ok_or("no embedding backend")?;
            let report = semantic
                .update(&store, &privacy, embed_all, &cancel)
                .await
                .map_err(|e| format!("embedding failed: {e}"))?;
            if report.embedded > 0 || report.dropped > 0 {
                // Encoding and fsyncing 150 MB is no work for an async worker.
                tokio::task::spawn_blocking(move || self.save_vectors())
                    .await
                    .map_err(|e| format!("could not save the vectors: {e}"))??;
            }
            Ok(Event::Embedded { request, report })
        })
    }

    /// The `k` notes closest in meaning to `text` (never private ones): an
    /// [`Event::SearchResults`]. Returns the request id at once.
    pub fn search_async(&'static self, backend: EmbeddingBackend, text: String, k: usize) -> u64 {
        let request = self.next_id();
        let store = self.store();
        let privacy = self.privacy();
        self.run_async(request, |cancel| async move {
            let semantic = self
                .semantic(Some(backend))?
                .ok_or("no embedding backend")?;
            if semantic.index.lock().is_empty() {
                return Err("no note is embedded yet (M-x org-agent-embed-notes)".to_string());
            }
            let hits = semantic
                .search(&store, &privacy, &text, k, 0.0, &cancel)
                .await
                .map_err(|e| format!("semantic search failed: {e}"))?;
            Ok(Event::SearchResults { request, hits })
        })
    }

    /// The models `backend` offers: an [`Event::Models`]. Returns the request id at once.
    pub fn models_async(&'static self, backend: Backend) -> u64 {
        let request = self.next_id();
        self.run_async(request, |cancel| async move {
            let models = crate::llm::models::list_models(&backend, &cancel)
                .await
                .map_err(|e| format!("{}: could not list the models: {e}", backend.name))?;
            Ok(Event::Models {
                request,
                backend: backend.name.clone(),
                models,
            })
        })
    }

    /// Runs `work` on the workers; its event (or its error, or a panic, as `Failed`) is
    /// pushed.
    fn run_async<F>(&'static self, request: u64, work: impl FnOnce(CancelToken) -> F) -> u64
    where
        F: std::future::Future<Output = Result<Event, String>> + Send + 'static,
    {
        // Registered like a turn's, so `org-agent-interrupt` (or cancelling the request)
        // stops the job at its next wait.
        let cancel = CancelToken::new();
        self.chat_cancels.lock().insert(request, cancel.clone());
        let work = work(cancel);
        self.tokio.spawn(async move {
            let outcome = AssertUnwindSafe(work).catch_unwind().await;
            self.chat_cancels.lock().remove(&request);
            let event = match outcome {
                Ok(Ok(event)) => event,
                Ok(Err(message)) => Event::Failed {
                    request,
                    file: None,
                    message,
                },
                Err(p) => Event::Failed {
                    request,
                    file: None,
                    message: format!("internal error (panic): {}", panic_message(&*p)),
                },
            };
            self.push(event);
        });
        request
    }

    /// Write the vector index beside the store (encoded under its lock, written outside).
    fn save_vectors(&self) -> Result<(), String> {
        let Some(path) = self.vectors_path.lock().clone() else {
            return Ok(());
        };
        let bytes = self.vectors.lock().encode();
        write_atomic(&path, &bytes).map_err(|e| format!("could not save the vectors: {e}"))
    }

    /// Which backends are in their cool-down.
    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }

    /// Run one chat turn of conversation `id` for `text` on the workers, asking `backends`
    /// in cascade order; updates arrive as [`Event::Chat`]. Returns the request id at once.
    pub fn chat_async(
        &'static self,
        id: String,
        text: String,
        backends: Vec<Backend>,
        policy: Policy,
        cfg: TurnConfig,
        setup: ChatSetup,
    ) -> u64 {
        let request = self.next_id();
        let cancel = CancelToken::new();
        self.chat_cancels.lock().insert(request, cancel.clone());
        let conversation = self
            .conversations
            .lock()
            .entry(id.clone())
            .or_default()
            .clone();
        let store = self.store();
        let privacy = self.privacy();
        let names: Vec<String> = backends
            .iter()
            .map(|b| format!("{} ({} @ {})", b.name, b.model, b.base_url))
            .collect();
        self.telemetry.lock().log(
            "chat",
            format!("{id}: turn started with {}", names.join(", then ")),
        );
        let operator = Arc::new(EmacsOperator {
            rt: self,
            request,
            conversation: id.clone(),
            interactive: setup.interactive,
        });
        let send = move |update: ChatUpdate| {
            self.push(Event::Chat {
                request,
                conversation: id.clone(),
                update,
            })
        };
        self.tokio.spawn(async move {
            let outcome = AssertUnwindSafe(async {
                let clients = backends
                    .into_iter()
                    .map(ChatClient::new)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())?;
                let Some(first) = clients.first().cloned() else {
                    return Err("no backend is configured".to_string());
                };
                let budget = match setup.budget {
                    None => None,
                    Some((limits, fallback)) => Some(Budget {
                        limits,
                        ledger: self.ledger.read().clone(),
                        fallback: match fallback {
                            None => None,
                            Some(backends) => Some(Cascade::new(
                                backends
                                    .into_iter()
                                    .map(ChatClient::new)
                                    .collect::<Result<Vec<_>, _>>()
                                    .map_err(|e| e.to_string())?,
                                self.health.clone(),
                                policy,
                            )),
                        },
                    }),
                };
                let eq = Equipment {
                    budget,
                    semantic: self.semantic(setup.embedding)?,
                    llm: Cascade::new(clients, self.health.clone(), policy),
                    operator,
                    edit_tools: true,
                    elisp_tools: setup.elisp_tools,
                    audit: setup.audit_file.map(AuditLog::new),
                    privacy,
                    ..Equipment::new(first, store)
                };
                let mut conv = conversation.lock().await;
                run_turn(&eq, &mut conv, &text, &cfg, &cancel, |e| {
                    match &e {
                        TurnEvent::Request {
                            backend: Some(backend),
                            took,
                            prompt_tokens,
                            completion_tokens,
                            ..
                        } => self.telemetry.lock().llm_request(
                            backend,
                            true,
                            *took,
                            (*prompt_tokens, *completion_tokens),
                        ),
                        TurnEvent::Failover { backend, error, .. } => {
                            let mut t = self.telemetry.lock();
                            t.llm_request(backend, false, Default::default(), (0, 0));
                            t.log("chat", format!("{backend} failed: {error}"));
                        }
                        TurnEvent::ToolResult { name, ok, took, .. } => {
                            self.telemetry.lock().tool_call(name, *ok, *took)
                        }
                        TurnEvent::Warning(m) => self.telemetry.lock().log("warning", m.clone()),
                        _ => {}
                    }
                    if let Some(u) = chat_update(e) {
                        send(u)
                    }
                })
                .await
                .map_err(|e| e.to_string())
            })
            .catch_unwind()
            .await;
            self.chat_cancels.lock().remove(&request);
            // Whatever this turn still waited for from Emacs is dropped.
            self.replies.lock().retain(|_, (r, _)| *r != request);
            send(match outcome {
                Ok(Ok(answer)) => ChatUpdate::Done(answer),
                Ok(Err(_)) if cancel.is_cancelled() => ChatUpdate::Interrupted,
                Ok(Err(message)) => ChatUpdate::Error(message),
                Err(p) => {
                    ChatUpdate::Error(format!("internal error (panic): {}", panic_message(&*p)))
                }
            });
        });
        request
    }
}

/// What of a turn event the chat buffer shows.
fn chat_update(e: TurnEvent) -> Option<ChatUpdate> {
    Some(match e {
        TurnEvent::Delta(Delta::Text(t)) => ChatUpdate::Text(t),
        TurnEvent::Delta(Delta::Reasoning(t)) => ChatUpdate::Reasoning(t),
        TurnEvent::Delta(Delta::Usage(u)) => ChatUpdate::Usage {
            prompt: u.prompt_tokens,
            completion: u.completion_tokens,
        },
        TurnEvent::Delta(_) => return None,
        TurnEvent::Proposed {
            call,
            decision,
            reasons,
        } => ChatUpdate::Tool {
            name: call.name,
            arguments: call.arguments.to_string(),
            decision: decision.to_string(),
            reasons,
        },
        TurnEvent::ToolResult {
            name, ok, content, ..
        } => ChatUpdate::ToolResult { name, ok, content },
        TurnEvent::ErrorFedBack(m) => ChatUpdate::Retrying(m),
        TurnEvent::Retry {
            backend,
            after,
            error,
        } => ChatUpdate::Retrying(format!(
            "{backend}: {error}; asking it again in {:.1} s",
            after.as_secs_f64()
        )),
        TurnEvent::Failover {
            backend,
            error,
            streamed,
            next,
        } => ChatUpdate::Failover {
            backend,
            error,
            next,
            discard: streamed,
        },
        TurnEvent::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        } => ChatUpdate::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        },
        TurnEvent::Warning(m) => ChatUpdate::Notice(m),
        TurnEvent::Request { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_of_the_wrong_kind_is_refused_and_stays_pending() {
        let rt = Runtime::global().unwrap();
        let (tx, mut rx) = oneshot::channel();
        let reply = rt.expect_reply(0, Pending::Result(tx));
        // An answer to an action (a confused caller) must neither take it nor hang.
        assert!(!rt.answer(reply, Approval::Once));
        assert!(rt.reply_pending(reply));
        assert!(rt.actuated(reply, Err("ran".into())));
        assert_eq!(rx.try_recv(), Ok(Err("ran".to_string())));
        assert!(!rt.reply_pending(reply));
        assert!(!rt.actuated(reply, Err("again".into())));

        let (tx, mut rx) = oneshot::channel();
        let reply = rt.expect_reply(0, Pending::Answer(tx));
        assert!(!rt.actuated(reply, Err("not an answer".into())));
        assert!(rt.answer(reply, Approval::Deny));
        assert_eq!(rx.try_recv(), Ok(Approval::Deny));
    }
}
