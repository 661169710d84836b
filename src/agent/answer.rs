//! The chat's answer text as the user reads it: with `:answer-format org` (the chat's
//! default) the model's Markdown becomes Org while it streams ([`crate::markdown`]); with
//! `raw` it is shown as the model wrote it. The conversation keeps the model's own words
//! either way (the model reads back what it wrote); only what the chat shows is converted,
//! and the final answer is converted the same way, so what is saved is what was shown.

use super::options::AnswerFormat;
use super::turn::TurnEvent;
use crate::llm::completion::Delta;
use crate::markdown::{to_org, OrgStream};

/// The level of the heading an answer is written under, for its Markdown headings: answers
/// go under `* Assistant`, whose steps are `** ` headings, so `# Title` becomes `*** Title`
/// and no answer can open a turn or a step of the chat.
pub const CHAT_BASE_LEVEL: usize = 2;

/// One turn's answer text on its way to the chat.
pub struct AnswerText {
    /// The converter (none: raw).
    stream: Option<OrgStream>,
    /// The level its headings go under.
    base: usize,
}

impl AnswerText {
    /// The chat's: headings under [`CHAT_BASE_LEVEL`].
    pub fn new(format: AnswerFormat) -> AnswerText {
        AnswerText::under(format, CHAT_BASE_LEVEL)
    }

    /// An answer whose headings go under level `base` (0: top-level headlines).
    pub fn under(format: AnswerFormat, base: usize) -> AnswerText {
        AnswerText {
            stream: match format {
                AnswerFormat::Org => Some(OrgStream::new(base)),
                AnswerFormat::Raw => None,
            },
            base,
        }
    }

    /// What the chat gets for turn event `e`: answer text converted (held back while its
    /// line is undecided); when a request ends, the text of its step flushed first; when a
    /// backend fails over, the text it streamed and the chat drops, forgotten.
    pub fn events(&mut self, e: TurnEvent) -> Vec<TurnEvent> {
        let Some(stream) = &mut self.stream else {
            return vec![e];
        };
        match e {
            TurnEvent::Delta(Delta::Text(t)) => {
                let org = stream.push(&t);
                if org.is_empty() {
                    Vec::new()
                } else {
                    vec![TurnEvent::Delta(Delta::Text(org))]
                }
            }
            TurnEvent::Request { .. } => {
                let rest = stream.finish();
                let mut out = Vec::new();
                if !rest.is_empty() {
                    out.push(TurnEvent::Delta(Delta::Text(rest)));
                }
                out.push(e);
                out
            }
            TurnEvent::Failover { .. } => {
                *stream = OrgStream::new(self.base);
                vec![e]
            }
            other => vec![other],
        }
    }

    /// What the turn still held back, at its end (none: nothing).
    pub fn finish(&mut self) -> Option<String> {
        let rest = self.stream.as_mut()?.finish();
        (!rest.is_empty()).then_some(rest)
    }

    /// The turn's final answer as the chat shows it.
    pub fn answer(&self, answer: String) -> String {
        match self.stream {
            Some(_) => to_org(&answer, self.base),
            None => answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(events: Vec<TurnEvent>) -> String {
        events
            .into_iter()
            .map(|e| match e {
                TurnEvent::Delta(Delta::Text(t)) => t,
                TurnEvent::Request { .. } => "<request>".into(),
                _ => "<other>".into(),
            })
            .collect()
    }

    fn text(t: &str) -> TurnEvent {
        TurnEvent::Delta(Delta::Text(t.into()))
    }

    fn request() -> TurnEvent {
        TurnEvent::Request {
            backend: None,
            took: Default::default(),
            prompt_tokens: 0,
            completion_tokens: 0,
            error: None,
            spent: None,
        }
    }

    #[test]
    fn org_converts_and_flushes_at_the_end_of_each_request() {
        let mut a = AnswerText::new(AnswerFormat::Org);
        let mut shown = String::new();
        for e in [text("# Plan\nSome **bo"), text("ld** and `co"), request()] {
            shown.push_str(&texts(a.events(e)));
        }
        assert_eq!(shown, "*** Plan\nSome *bold* and `co<request>");
        assert_eq!(a.finish(), None);
        assert_eq!(a.answer("# Plan".into()), "*** Plan");
    }

    #[test]
    fn raw_leaves_the_text_as_the_model_wrote_it() {
        let mut a = AnswerText::new(AnswerFormat::Raw);
        assert_eq!(texts(a.events(text("# Plan **x"))), "# Plan **x");
        assert_eq!(a.finish(), None);
        assert_eq!(a.answer("# Plan".into()), "# Plan");
    }

    #[test]
    fn a_failover_forgets_what_the_failed_backend_streamed() {
        let mut a = AnswerText::new(AnswerFormat::Org);
        assert_eq!(texts(a.events(text("```sh\nls"))), "#+begin_src sh\nls");
        a.events(TurnEvent::Failover {
            backend: "a".into(),
            error: "gone".into(),
            streamed: true,
            next: None,
        });
        assert_eq!(texts(a.events(text("Done"))), "Done");
        assert_eq!(a.finish().as_deref(), None);
    }
}
