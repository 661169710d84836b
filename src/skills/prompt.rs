//! The system prompt: fragments from their sources, in order.

/// The prompt when the user configured none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are org-agent, an assistant inside Emacs that \
                                         works in the user's Org notes. Answer briefly, in \
                                         Org markup.";

/// A part of the system prompt and where it comes from: the user's prompt
/// (`org-agent-system-prompt`) today, a skill's prompt later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptFragment {
    pub source: String,
    pub text: String,
}

impl PromptFragment {
    /// The user's own system prompt.
    pub fn users(text: impl Into<String>) -> PromptFragment {
        PromptFragment {
            source: "org-agent-system-prompt".into(),
            text: text.into(),
        }
    }
}

impl Default for PromptFragment {
    fn default() -> Self {
        PromptFragment::users(DEFAULT_SYSTEM_PROMPT)
    }
}

/// The fragments' texts in order, a blank line between two.
pub fn join(fragments: &[PromptFragment]) -> String {
    let texts: Vec<&str> = fragments.iter().map(|f| f.text.as_str()).collect();
    texts.join("\n\n")
}
