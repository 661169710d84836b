//! What workers report back to Emacs. Plain data: the Emacs layer turns each into a plist
//! when the main thread drains the queue.

use crate::sexp::Sexp;
use crate::store::{DirReport, IngestReport};

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A buffer or file was ingested (or found unchanged).
    Ingested { request: u64, report: IngestReport },
    /// A newer ingest of the same file was requested before this one finished.
    Superseded { request: u64, file: String },
    /// Progress of a directory ingest.
    Progress {
        request: u64,
        done: usize,
        total: usize,
        file: String,
    },
    /// A directory ingest finished (or was cancelled).
    DirectoryDone { request: u64, report: DirReport },
    /// Something happened in a chat turn (see [`ChatUpdate`]).
    Chat {
        request: u64,
        conversation: String,
        update: ChatUpdate,
    },
    /// Run `action` (an Emacs action plist) with the actuator and send its result back
    /// with `org-agent--actuated` and `reply`.
    Actuate {
        request: u64,
        reply: u64,
        action: Sexp,
    },
    /// The vector index was brought up to date with the store.
    Embedded {
        request: u64,
        report: crate::agent::semantic::UpdateReport,
    },
    /// The notes closest in meaning to a search text: (id, similarity), best first.
    SearchResults {
        request: u64,
        hits: Vec<(String, f32)>,
    },
    /// The models a backend offers.
    Models {
        request: u64,
        backend: String,
        models: Vec<crate::llm::models::ModelInfo>,
    },
    /// What the next request would send (`org-agent-context-preview`).
    Preview {
        request: u64,
        backend: String,
        url: String,
        body: String,
    },
    /// A request failed; `file` when it concerns one.
    Failed {
        request: u64,
        file: Option<String>,
        message: String,
    },
}

/// What a chat turn reports to the chat buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatUpdate {
    /// A piece of the answer.
    Text(String),
    /// A piece of the model's reasoning (shown folded).
    Reasoning(String),
    /// A tool call and what the gates decided.
    Tool {
        name: String,
        arguments: String,
        decision: String,
        reasons: Vec<String>,
    },
    /// A tool's result as sent back to the LLM.
    ToolResult {
        name: String,
        ok: bool,
        content: String,
    },
    /// The gates ask the user about an action; the answer goes back with
    /// `org-agent--answer` and `reply`.
    Ask {
        reply: u64,
        name: String,
        arguments: String,
        action: Sexp,
        reasons: Vec<String>,
    },
    /// An error was fed back to the LLM, or a backend is asked again after a wait.
    Retrying(String),
    /// A backend failed and the next is asked; `discard`: drop the answer text streamed in
    /// this step, it came from the failed backend.
    Failover {
        backend: String,
        error: String,
        next: Option<String>,
        discard: bool,
    },
    /// Several backends were asked (consensus mode): how many agreed, whether it was a tie
    /// (the user decides), and each one's proposal.
    Consensus {
        agreed: usize,
        answered: usize,
        tie: bool,
        proposals: Vec<String>,
    },
    /// Something the user should know about the turn (a request sent to a cheaper tier over
    /// budget, related notes unavailable).
    Notice(String),
    /// Tokens used by the last request.
    Usage { prompt: u64, completion: u64 },
    /// The turn ended with this answer.
    Done(String),
    /// The turn ended with an error.
    Error(String),
    /// The turn was interrupted by the user (`org-agent-interrupt`).
    Interrupted,
}
