//! After untrusted content, every edit asks.
//!
//! Text the user did not write (a note tagged `web` or `untrusted`, a page captured with a
//! `:SOURCE:` address, a file read from outside the notes, the output of a command or of an
//! Elisp tool) may carry instructions aimed at the agent. The model reads it as data (it is
//! spotlighted), but a model can still be talked into an edit; so once a conversation has
//! read such text, every edit it proposes is put to the user, even a kind the user approved
//! "for this conversation", and the question says what was read
//! ([`Context::untrusted_read`]). A background run has nobody to ask: its asks go to the
//! approvals queue, with this reason, and never run on their own.

use super::{Context, Decision, Gate};
use crate::action::Action;

/// Most provenance lines a question names; the rest are counted.
const MAX_NAMED: usize = 3;

pub struct UntrustedEdits;

impl Gate for UntrustedEdits {
    fn name(&self) -> &str {
        "untrusted-edits"
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        if ctx.untrusted_read.is_empty() || !changes_things(action, ctx) {
            return Ok(Decision::Allow);
        }
        Ok(Decision::Ask(format!(
            "proposed after reading {}: after untrusted content every edit is asked, \
             whatever was approved for the conversation",
            provenance(&ctx.untrusted_read)
        )))
    }
}

/// Whether `action` changes something: an edit of the notes (Emacs actions but messages,
/// visits and buffer writes, which other gates judge), or a tool that is not read-only.
fn changes_things(action: &Action, ctx: &Context) -> bool {
    match action {
        Action::Emacs(e) => e.edits_org(),
        Action::Tool { name, .. } => !ctx.read_only_tools.contains(name),
    }
}

/// The first few lines of `read`, and how many more.
fn provenance(read: &[String]) -> String {
    let mut text = read
        .iter()
        .take(MAX_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ");
    if read.len() > MAX_NAMED {
        text.push_str(&format!(" and {} more", read.len() - MAX_NAMED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::EmacsAction;
    use crate::gates::{Outcome, Pipeline};
    use crate::sexp::Sexp;

    fn set_todo() -> Action {
        Action::Emacs(EmacsAction::SetTodo {
            id: "a".into(),
            state: Some("DONE".into()),
        })
    }

    fn approved_for_the_conversation() -> Context {
        let mut ctx = Context::default();
        ctx.approved.insert(set_todo().kind());
        ctx.tools.insert("read_node".into());
        ctx.read_only_tools.insert("read_node".into());
        ctx.tools.insert("mail".into());
        ctx.approved.insert("mail".into());
        ctx
    }

    #[test]
    fn a_trusted_conversation_keeps_its_approvals() {
        let ctx = approved_for_the_conversation();
        let pipeline = Pipeline::default_policy();
        assert_eq!(
            pipeline.decide(set_todo(), &ctx).outcome,
            Outcome::Allow(set_todo())
        );
    }

    #[test]
    fn after_untrusted_content_every_edit_asks_and_says_why() {
        let mut ctx = approved_for_the_conversation();
        ctx.untrusted_read = vec!["~/notes/inbox.org: * Vendor email (tagged :web:)".into()];
        let pipeline = Pipeline::default_policy();
        let Outcome::Ask { reasons, .. } = pipeline.decide(set_todo(), &ctx).outcome else {
            panic!("an approved edit after untrusted content must ask");
        };
        assert_eq!(
            reasons,
            [
                "proposed after reading ~/notes/inbox.org: * Vendor email (tagged :web:): after \
              untrusted content every edit is asked, whatever was approved for the \
              conversation"
            ]
        );
        // A tool that changes things asks too; one that only reads, and a message, do not.
        let mail = Action::Tool {
            name: "mail".into(),
            args: Sexp::from(crate::sexp::Value::Nil),
        };
        assert!(matches!(
            pipeline.decide(mail, &ctx).outcome,
            Outcome::Ask { .. }
        ));
        let read = Action::Tool {
            name: "read_node".into(),
            args: Sexp::from(crate::sexp::Value::Nil),
        };
        assert!(matches!(
            pipeline.decide(read, &ctx).outcome,
            Outcome::Allow(_)
        ));
        let message = Action::Emacs(EmacsAction::Message { text: "hi".into() });
        assert_eq!(
            UntrustedEdits.check(&message, &ctx).unwrap(),
            Decision::Allow
        );
    }

    #[test]
    fn a_long_provenance_names_the_first_few() {
        let read: Vec<String> = (1..=5).map(|i| format!("n{i}")).collect();
        assert_eq!(provenance(&read), "n1; n2; n3 and 2 more");
    }
}
