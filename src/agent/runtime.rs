//! The module's worker threads and the queue that carries their results to Emacs.
//!
//! Workers never call Emacs. They push an [`Event`] and, when the queue goes from empty to
//! non-empty, write one byte to the wake-up channel (a pipe process in Emacs, opened with
//! `open_channel`), whose filter calls the module's drain function on the main thread.

use super::approvals::Approvals;
use super::event::{ChatUpdate, Event};
use super::operator::Approval;
use super::runs::SkillRuns;
use super::telemetry::Telemetry;
use super::trigger_state::TriggerState;
use super::turn::Conversation;
use crate::agent::semantic::Semantic;
use crate::gates::budget::Ledger;
use crate::llm::cascade::Health;
use crate::llm::embeddings::{EmbeddingBackend, EmbeddingClient};
use crate::llm::http::{Backend, CancelToken};
use crate::notes::{Confinement, Notes, Privacy};
use crate::sexp::Sexp;
use crate::skills::Skill;
use crate::store::vectors::{write_atomic, VectorError, VectorIndex};
use crate::store::{Config, OpenReport, Store, StoreError};
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
    /// The state directory of the persisted store, held against other sessions.
    state_lock: Mutex<Option<crate::store::StateLock>>,
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
    /// The least time between two wakes for streamed text, in microseconds: the one
    /// throttle of a streaming answer (`org-agent-chat-redisplay-interval`).
    text_interval_us: AtomicU64,
    /// The privacy rules every turn (and embedding job) starts with.
    privacy: RwLock<Arc<Privacy>>,
    /// What every turn counts as untrusted content (`org-agent-untrusted-tags`).
    trust: RwLock<Arc<crate::notes::Trust>>,
    /// Where files may be read and written (`org-agent-directories`, protected paths), once
    /// Emacs has said.
    confinement: RwLock<Option<Arc<Confinement>>>,
    /// Which backends failed recently, shared by every turn's cascade.
    health: Arc<Health>,
    /// The notes' embeddings, and the file they are kept in (beside the store's log).
    vectors: Arc<Mutex<VectorIndex>>,
    vectors_path: Mutex<Option<PathBuf>>,
    /// Tokens and cost spent per day, for budgets (kept beside the store).
    ledger: RwLock<Arc<Ledger>>,
    /// The active skills, in dependency order (every chat turn starts with these).
    skills: RwLock<Arc<[Skill]>>,
    /// Background runs of skills: one at a time per skill, and their statistics.
    runs: SkillRuns,
    /// What background runs proposed and the user has not yet decided (kept beside the
    /// store).
    approvals: RwLock<Arc<Approvals>>,
    /// Own edits and intervals the triggers remember.
    triggers: TriggerState,
    /// The MCP servers the user lists (`org-agent-mcp-servers`), as a client.
    mcp: crate::mcp::client::McpClients,
    /// The threads freeing the stores an open or a close replaced ([`Runtime::retire`]).
    retiring: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// The vector index's file in the state directory.
const VECTORS_FILE: &str = "vectors.bin";

/// Streamed text wakes Emacs at most this often unless Emacs sets another interval.
const TEXT_WAKE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// What a turn waits for from the main thread.
pub(super) enum Pending {
    Answer(oneshot::Sender<Approval>),
    Result(oneshot::Sender<Result<Sexp, String>>),
}

static RUNTIME: OnceCell<Runtime> = OnceCell::new();

fn default_config() -> Config {
    Config {
        snapshot_capacity: 20,
        ..Config::default()
    }
}

pub(super) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// `store` as the session's: its documents' credentials found on its warm-up thread as
/// they are stored, so the secret sentinel's first scan only looks them up.
fn session_store(store: Store) -> Arc<Store> {
    store.warm_credentials();
    Arc::new(store)
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
            // The Org scanner and the sexp reader no longer recurse; what still does
            // (serde_json up to its 128 levels, dropping deep trees) gets headroom. A stack
            // is reserved address space, committed only as it is used.
            .thread_stack_size(16 << 20)
            .on_thread_start(crate::start_module_thread)
            .enable_all()
            .build()?;
        let config = default_config();
        Ok(Runtime {
            tokio,
            store: RwLock::new(session_store(Store::in_memory(config.clone()))),
            state_lock: Mutex::new(None),
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
            text_interval_us: AtomicU64::new(TEXT_WAKE_INTERVAL.as_micros() as u64),
            privacy: RwLock::new(Arc::new(Privacy::default())),
            trust: RwLock::new(Arc::default()),
            confinement: RwLock::new(None),
            health: Arc::default(),
            vectors: Arc::new(Mutex::new(VectorIndex::new(""))),
            vectors_path: Mutex::new(None),
            ledger: RwLock::new(Arc::new(Ledger::default())),
            skills: RwLock::new(Arc::from(Vec::new())),
            runs: SkillRuns::default(),
            approvals: RwLock::new(Arc::new(Approvals::in_memory())),
            triggers: TriggerState::default(),
            mcp: Default::default(),
            retiring: Mutex::new(Vec::new()),
        })
    }

    /// Flush a replaced store, then free it on a thread of its own: dropping a large store
    /// takes long enough (a few hundred ms at 100k headlines) to be felt on the main thread.
    fn retire(&self, old: Arc<Store>) {
        old.mark_closed();
        let _ = old.flush();
        let spawned = std::thread::Builder::new()
            .name("org-agent-retire".into())
            .spawn(move || {
                crate::start_module_thread();
                // Freeing a million headlines takes seconds of CPU; the open that usually
                // follows is what the user waits for.
                crate::lower_thread_priority();
                old.free_between_opens();
            });
        // If no thread can be started, the store was dropped here instead (the closure is
        // gone with the error).
        if let Ok(handle) = spawned {
            let mut retiring = self.retiring.lock();
            retiring.retain(|h| !h.is_finished());
            retiring.push(handle);
        }
    }

    /// Wait until the stores replaced so far are freed. Only for measuring: freeing one
    /// shares the CPUs with whatever runs meanwhile, which a user's Emacs, with its one
    /// store open, does not see.
    pub fn wait_retired(&self) {
        let handles = std::mem::take(&mut *self.retiring.lock());
        for h in handles {
            let _ = h.join();
        }
    }

    pub fn privacy(&self) -> Arc<Privacy> {
        self.privacy.read().clone()
    }

    /// Replace the privacy rules; turns already running keep the rules they started with.
    pub fn set_privacy(&self, privacy: Privacy) {
        // The same rules again (Emacs sends them before every turn) keep the real paths
        // they have resolved.
        if **self.privacy.read() == privacy {
            return;
        }
        *self.privacy.write() = Arc::new(privacy);
    }

    /// Replace what counts as untrusted content; turns already running keep theirs.
    pub fn set_trust(&self, trust: crate::notes::Trust) {
        *self.trust.write() = Arc::new(trust);
    }

    /// Replace where files may be read and written; turns already running keep theirs.
    pub fn set_confinement(&self, confinement: Confinement) {
        *self.confinement.write() = Some(Arc::new(confinement));
    }

    /// The notes as the agent may see them now: the current store under the rules in force,
    /// files confined as configured.
    pub fn notes(&self) -> Notes {
        let notes = Notes::new(self.store(), self.privacy()).with_trust(self.trust.read().clone());
        match self.confinement.read().clone() {
            Some(c) => notes.confined(c),
            None => notes,
        }
    }

    pub fn store(&self) -> Arc<Store> {
        self.store.read().clone()
    }

    /// Open the persisted store in `dir` and make it current.
    /// Another session holding `dir` is [`StoreError::Locked`], and the store in use stays.
    pub fn open_store(&'static self, dir: &std::path::Path) -> Result<OpenReport, StoreError> {
        let held = self
            .state_lock
            .lock()
            .as_ref()
            .is_some_and(|l| l.dir() == dir);
        let lock = match held {
            true => None,
            false => Some(crate::store::StateLock::acquire(dir)?),
        };
        let (store, report) = Store::open(dir, self.config.lock().clone())?;
        let old = std::mem::replace(&mut *self.store.write(), session_store(store));
        self.retire(old);
        // The old directory is let go only once its store is flushed (by `retire`).
        if let Some(lock) = lock {
            *self.state_lock.lock() = Some(lock);
        }
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
        // A small Org file (at most a few hundred headlines).
        let (approvals, warning) = Approvals::open(dir);
        if let Some(warning) = warning {
            self.telemetry.lock().log("warning", warning);
        }
        *self.approvals.write() = Arc::new(approvals);
        Ok(report)
    }

    /// Keep the store in memory only (closing any persisted one).
    pub fn close_store(&self) {
        let config = self.config.lock().clone();
        let old = std::mem::replace(
            &mut *self.store.write(),
            session_store(Store::in_memory(config)),
        );
        self.retire(old);
        *self.state_lock.lock() = None;
        *self.approvals.write() = Arc::new(Approvals::in_memory());
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
            Event::Removed { file, nodes, .. } => Some((
                "store",
                format!("{file} no longer exists: its {nodes} nodes left the store"),
            )),
            Event::Reconciled { report, .. } if report.changed() || !report.errors.is_empty() => {
                Some((
                    "ingest",
                    format!(
                        "the store compared with the disk: {} files, {} ingested, {} removed, \
                         {} errors",
                        report.files,
                        report.ingested.len(),
                        report.removed.len(),
                        report.errors.len()
                    ),
                ))
            }
            Event::Failed { message, .. } => Some(("error", message.clone())),
            Event::SkillTriggered { skill, provenance } => {
                Some(("trigger", format!("{skill}: {provenance}")))
            }
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

    /// Set the least time between two wakes for streamed text (clamped to 0–10 s).
    pub fn set_text_interval(&self, interval: std::time::Duration) {
        let us = interval.min(std::time::Duration::from_secs(10)).as_micros() as u64;
        self.text_interval_us.store(us, Ordering::Relaxed);
    }

    fn text_interval(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.text_interval_us.load(Ordering::Relaxed))
    }

    /// Wake Emacs for streamed text: at once if it was last woken the text interval ago,
    /// else when that much time has passed (text arriving meanwhile joins the queued
    /// piece). A fast stream then costs Emacs a few drains a second, not one per token.
    fn wake_for_text(&self) {
        let since = self.last_wake.lock().elapsed();
        let interval = self.text_interval();
        if since >= interval {
            self.push_wake();
            return;
        }
        if self.wake_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let delay = interval - since;
        self.tokio.spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(rt) = RUNTIME.get() {
                rt.wake_scheduled.store(false, Ordering::Release);
                rt.push_wake();
            }
        });
    }

    /// Wake Emacs so that it drains the queue.
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

    pub(super) fn next_id(&self) -> u64 {
        self.next_request.fetch_add(1, Ordering::SeqCst)
    }

    /// Run `work` on a blocking worker; a panic becomes a `Failed` event.
    pub(super) fn spawn(
        &'static self,
        request: u64,
        file: Option<String>,
        work: impl FnOnce() + Send + 'static,
    ) {
        // The runtime's threads were prepared when they started (`on_thread_start`).
        self.tokio.spawn_blocking(move || {
            if let Err(p) = std::panic::catch_unwind(AssertUnwindSafe(work)) {
                self.push(Event::Failed {
                    request,
                    file,
                    message: format!("internal error (panic): {}", panic_message(&*p)),
                });
            }
        });
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

    /// Have Emacs run `action` of turn `request` through the actuator: an event, and the
    /// turn awaits the result `org-agent--actuated` brings back.
    pub(super) fn actuate_in_emacs(
        &self,
        request: u64,
        action: &crate::action::EmacsAction,
    ) -> super::operator::BoxFuture<Result<Sexp, String>> {
        let (tx, rx) = oneshot::channel();
        let reply = self.expect_reply(request, Pending::Result(tx));
        self.push(Event::Actuate {
            request,
            reply,
            action: action.to_sexp(),
        });
        Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err("Emacs dropped the action without running it".into()))
        })
    }

    /// Note that turn `request` waits for `pending`; returns the reply id Emacs answers.
    pub(super) fn expect_reply(&self, request: u64, pending: Pending) -> u64 {
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

    /// The tool results of conversation `id` written as plists (each request prints them
    /// again in its data blocks), empty while a turn of it runs.
    pub fn conversation_plist_results(&self, id: &str) -> Vec<super::turn::PlistResult> {
        let Some(conversation) = self.conversations.lock().get(id).cloned() else {
            return Vec::new();
        };
        let results = conversation
            .try_lock()
            .map(|c| c.plist_results.clone())
            .unwrap_or_default();
        results
    }

    /// The skills conversation `id` loaded with `use_skill` (still in use in its next turn).
    pub fn conversation_skills(&self, id: &str) -> std::collections::HashSet<String> {
        let Some(conversation) = self.conversations.lock().get(id).cloned() else {
            return Default::default();
        };
        let skills = conversation
            .try_lock()
            .map(|c| c.context.skills_in_use.clone())
            .unwrap_or_default();
        skills
    }

    /// Forget conversation `id` (its history).
    pub fn forget_conversation(&self, id: &str) {
        self.conversations.lock().remove(id);
    }

    /// Semantic search with `backend` over the runtime's vector index, if there is one.
    pub(super) fn semantic(
        &self,
        backend: Option<EmbeddingBackend>,
    ) -> Result<Option<Semantic>, String> {
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
        let notes = self.notes();
        self.run_async(request, |cancel| async move {
            let semantic = self
                .semantic(Some(backend))?
                .ok_or("no embedding backend")?;
            let report = semantic
                .update(&notes, embed_all, &cancel)
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
        let notes = self.notes();
        self.run_async(request, |cancel| async move {
            let semantic = self
                .semantic(Some(backend))?
                .ok_or("no embedding backend")?;
            if semantic.index.lock().is_empty() {
                return Err("no note is embedded yet (M-x org-agent-embed-notes)".to_string());
            }
            let hits = semantic
                .search(&notes, &text, k, 0.0, &cancel)
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
                .map_err(|e| {
                    format!("{}: could not list the models: {e}", backend.endpoint.name)
                })?;
            Ok(Event::Models {
                request,
                backend: backend.endpoint.name.clone(),
                models,
            })
        })
    }

    /// Runs `work` on the workers; its event (or its error, or a panic, as `Failed`) is
    /// pushed.
    /// The MCP servers the user lists.
    pub fn mcp(&self) -> &crate::mcp::client::McpClients {
        &self.mcp
    }

    /// Run `work` on a worker; its value (or error) comes back as an [`Event::Mcp`].
    pub fn mcp_async<F>(&'static self, work: impl FnOnce(&'static Runtime) -> F) -> u64
    where
        F: std::future::Future<Output = Result<Sexp, String>> + Send + 'static,
    {
        let request = self.next_id();
        let work = work(self);
        self.run_async(request, move |_cancel| async move {
            let value = work.await?;
            Ok(Event::Mcp { request, value })
        })
    }

    pub(super) fn run_async<F>(
        &'static self,
        request: u64,
        work: impl FnOnce(CancelToken) -> F,
    ) -> u64
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
    /// The active skills, in dependency order.
    pub fn skills(&self) -> Arc<[Skill]> {
        self.skills.read().clone()
    }

    /// Make `skills` (in dependency order) the active ones.
    pub(super) fn set_skills(&self, skills: Arc<[Skill]>) {
        *self.skills.write() = skills;
    }

    /// A flag that [`Runtime::cancel`] sets for request `request`, which polls it.
    pub(super) fn cancellable(&self, request: u64) -> Arc<AtomicBool> {
        let cancel = Arc::new(AtomicBool::new(false));
        self.cancels.lock().insert(request, cancel.clone());
        cancel
    }

    /// Request `request` ended: there is nothing left to cancel.
    pub(super) fn forget_cancellable(&self, request: u64) {
        self.cancels.lock().remove(&request);
    }

    /// The background runs of skills.
    pub fn runs(&self) -> &SkillRuns {
        &self.runs
    }

    /// What the skills' triggers remember.
    pub(super) fn trigger_state(&self) -> &TriggerState {
        &self.triggers
    }

    /// The approvals queue of the open store's state directory.
    pub fn approvals(&self) -> Arc<Approvals> {
        self.approvals.read().clone()
    }

    /// The ledger of the days' spending, kept beside the store.
    pub fn ledger(&self) -> Arc<Ledger> {
        self.ledger.read().clone()
    }

    /// Track chat turn `request`, so that it can be cancelled.
    pub(super) fn register_chat(&self, request: u64, cancel: CancelToken) {
        self.chat_cancels.lock().insert(request, cancel);
    }

    /// Chat turn `request` ended: it can no longer be cancelled, and whatever it still
    /// waited for from Emacs is dropped (the actuator skips those actions).
    pub(super) fn end_chat(&self, request: u64) {
        self.chat_cancels.lock().remove(&request);
        self.replies.lock().retain(|_, (r, _)| *r != request);
    }

    /// Conversation `id`, created empty if new; a turn holds its lock while it runs.
    pub(super) fn conversation(&self, id: &str) -> Arc<tokio::sync::Mutex<Conversation>> {
        self.conversations
            .lock()
            .entry(id.to_owned())
            .or_default()
            .clone()
    }

    /// Run `work` on a blocking worker (file writes off the main thread).
    pub(super) fn spawn_blocking(&self, work: impl FnOnce() + Send + 'static) {
        self.tokio.spawn_blocking(work);
    }

    /// Run `future` on the workers.
    pub(super) fn spawn_future(
        &self,
        future: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.tokio.spawn(future);
    }

    pub fn health(&self) -> &Arc<Health> {
        &self.health
    }
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

    /// Work run by `spawn` and on the async workers finds its thread prepared as every
    /// module thread is (batch scheduling, SIGPIPE blocked): the runtime does it as each of
    /// its threads starts, not per task.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_runtime_s_threads_start_as_module_threads() {
        fn prepared() -> bool {
            // SAFETY: pid 0 is the calling thread; takes no pointers.
            let policy = unsafe { libc::sched_getscheduler(0) };
            policy == libc::SCHED_BATCH && crate::sigpipe_blocked_here()
        }
        let rt: &'static Runtime = Box::leak(Box::new(Runtime::new(1).unwrap()));
        let (tx, rx) = std::sync::mpsc::channel();
        let blocking = tx.clone();
        rt.spawn(0, None, move || blocking.send(prepared()).unwrap());
        rt.tokio.spawn(async move { tx.send(prepared()).unwrap() });
        assert!(rx.recv().unwrap(), "a blocking task's thread");
        assert!(rx.recv().unwrap(), "an async worker");
    }

    #[test]
    fn waiting_for_retired_stores_returns_once_each_is_freed() {
        // A runtime of its own: the global one's store belongs to other tests.
        let rt: &'static Runtime = Box::leak(Box::new(Runtime::new(1).unwrap()));
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        rt.open_store(first.path()).unwrap();
        // Enough to free that it takes a while.
        let text: String = (0..20_000)
            .map(|i| format!("* Note {i}\nText {i}.\n"))
            .collect();
        rt.store()
            .ingest_text("/notes/a.org", &text, None, None, None)
            .unwrap();
        let opened = Arc::downgrade(&rt.store());
        rt.open_store(second.path()).unwrap();
        let reopened = Arc::downgrade(&rt.store());
        rt.close_store();
        rt.wait_retired();
        assert!(opened.upgrade().is_none() && reopened.upgrade().is_none());
        assert!(rt.retiring.lock().is_empty());
        // The current (in-memory) store is not retired.
        assert!(rt.store().stats().path.is_none());
    }
}
