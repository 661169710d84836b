//! The user and Emacs as a turn sees them: both live on the main thread, so the turn asks
//! and waits (without blocking a worker).

use crate::action::{Action, EmacsAction};
use crate::llm::completion::ToolCall;
use crate::sexp::Sexp;
use std::future::Future;
use std::pin::Pin;

/// What the user decides about an action the gates asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Once,
    ForConversation,
    Deny,
    /// No user is waiting (a background run): the action went to the approvals queue as
    /// this proposal, to run if the user approves it there.
    Queued(u64),
}

impl Approval {
    /// The answer as Elisp names it (`once`, `conversation`, `deny`).
    pub fn from_name(name: &str) -> Option<Approval> {
        match name {
            "once" => Some(Approval::Once),
            "conversation" => Some(Approval::ForConversation),
            "deny" => Some(Approval::Deny),
            _ => None,
        }
    }
}

/// What a turn asks the user.
pub struct Question<'a> {
    pub call: &'a ToolCall,
    pub action: &'a Action,
    pub reasons: &'a [String],
    /// Approving the action's kind for the conversation would not spare the next question
    /// (a wall that asks whatever was approved holds): the user can only approve it once.
    pub once_only: bool,
}

/// A future the [`Operator`] hands back.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Who answers a turn's questions and runs its Emacs actions. A turn with a user waiting has
/// Emacs (the chat buffer, the actuator); a background run (a schedule, a save hook) has
/// [`Unattended`].
pub trait Operator: Send + Sync {
    /// Ask the user about `action` (the LLM's `call`), which the gates asked about for
    /// `reasons`.
    fn ask(&self, call: &ToolCall, action: &Action, reasons: &[String]) -> BoxFuture<Approval>;
    /// Ask the user `question`; an operator that can show that approving for the
    /// conversation would spare no later question (a wall asks whatever was approved) says
    /// so, the others ask as [`Operator::ask`] does.
    fn ask_about(&self, question: Question<'_>) -> BoxFuture<Approval> {
        self.ask(question.call, question.action, question.reasons)
    }
    /// Run `action` through the Elisp actuator: its result plist, or why it did not run.
    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>>;
}

/// No user waiting and no Emacs (a background run, scripts, tests): asking means deny, Emacs
/// actions do not run.
pub struct Unattended;

impl Operator for Unattended {
    fn ask(&self, _: &ToolCall, _: &Action, _: &[String]) -> BoxFuture<Approval> {
        Box::pin(async { Approval::Deny })
    }

    fn actuate(&self, _: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        Box::pin(async { Err("there is no Emacs to run this action".to_string()) })
    }
}
