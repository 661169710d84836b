//! The system prompt: fragments from their sources, in order. Its base, and the conventions
//! a turn adds for the tools it offers, are the shipped `agent` skill
//! (`skills/agent/SKILL.org`), compiled into the module: one source for the text, which
//! people read as a skill and the tests check byte for byte.

use super::{parse_skill, Skill, SkillError, Source};
use std::sync::LazyLock;

/// Where the agent skill is, in the package.
pub const AGENT_SKILL_FILE: &str = "skills/agent/SKILL.org";

/// The agent skill as the module was built with it.
const AGENT_SKILL_TEXT: &str = include_str!("../../skills/agent/SKILL.org");

/// What a turn sends of the agent skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentPrompt {
    /// The base of every system prompt (the skill's `* Prompt`).
    pub system: String,
    /// Follows it when the request offers tools (the `With tools` reference).
    pub with_tools: String,
    /// Follows it when the request offers none (`Without tools`).
    pub without_tools: String,
    /// Follows `with_tools` when the edit tools are offered (`Editing`).
    pub editing: String,
}

impl AgentPrompt {
    /// Read the agent skill in `text` (the contents of `file`).
    pub fn parse(file: &str, text: &str) -> Result<AgentPrompt, SkillError> {
        let skill = parse_skill(file, text, Source::Shipped)?;
        let part = |title: &str| reference_text(&skill, title);
        Ok(AgentPrompt {
            with_tools: part("With tools")?,
            without_tools: part("Without tools")?,
            editing: part("Editing")?,
            system: skill.prompt,
        })
    }

    /// The conventions that follow the system prompt's fragments, each after a space: for
    /// a request that offers tools (and among them the edit tools) or none.
    pub fn conventions(&self, tools: bool, edit_tools: bool) -> String {
        let parts: Vec<&str> = match (tools, edit_tools) {
            (false, _) => vec![&self.without_tools],
            (true, false) => vec![&self.with_tools],
            (true, true) => vec![&self.with_tools, &self.editing],
        };
        parts.iter().map(|p| format!(" {p}")).collect()
    }
}

/// The text of `skill`'s reference part `title`, without its headline.
fn reference_text(skill: &Skill, title: &str) -> Result<String, SkillError> {
    let (_, subtree) = skill
        .references
        .iter()
        .find(|(t, _)| t == title)
        .ok_or_else(|| SkillError {
            file: skill.file.clone(),
            line: 0,
            message: format!("the agent skill has no :reference: part {title:?} of its Prompt"),
        })?;
    let body = subtree.split_once('\n').map_or("", |(_, body)| body).trim();
    if body.is_empty() {
        return Err(SkillError {
            file: skill.file.clone(),
            line: 0,
            message: format!("the agent skill's part {title:?} is empty"),
        });
    }
    Ok(body.to_owned())
}

static AGENT: LazyLock<AgentPrompt> = LazyLock::new(|| {
    // The file is part of the build, not read at run time: a skill that does not read is a
    // defect of the build, which the unit test below catches first.
    AgentPrompt::parse(AGENT_SKILL_FILE, AGENT_SKILL_TEXT)
        .unwrap_or_else(|e| panic!("the shipped agent skill does not read: {e}"))
});

/// The shipped agent skill's prompt and conventions, read at first use.
pub fn agent() -> &'static AgentPrompt {
    &AGENT
}

/// A part of the system prompt and where it comes from: the agent skill's prompt, the
/// user's own instead, the catalog of skills.
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
    /// The agent skill's prompt: the prompt when the user gave none.
    fn default() -> Self {
        PromptFragment {
            source: "skill agent".into(),
            text: agent().system.clone(),
        }
    }
}

/// The fragments' texts in order, a blank line between two.
pub fn join(fragments: &[PromptFragment]) -> String {
    let texts: Vec<&str> = fragments.iter().map(|f| f.text.as_str()).collect();
    texts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the turns sent before the text moved into the skill: the same bytes.
    #[test]
    fn the_shipped_agent_skill_is_the_prompt_the_turns_send() {
        let agent = AgentPrompt::parse(AGENT_SKILL_FILE, AGENT_SKILL_TEXT)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&agent, super::agent());
        assert_eq!(
            agent.system,
            "You are org-agent, an assistant inside Emacs that works in the user's Org \
             notes. Answer briefly, in Org markup."
        );
        assert_eq!(PromptFragment::default().text, agent.system);
        assert_eq!(
            agent.conventions(true, false),
            " Use the tools to look things up before you answer."
        );
        assert_eq!(
            agent.conventions(true, true),
            " Use the tools to look things up before you answer. To change the notes, call \
             the edit tools with node ids from the tools or the context below; the user \
             approves each edit."
        );
        let without = " Answer from the notes below: name the headlines that answer the \
                       question, with their dates.";
        assert_eq!(agent.conventions(false, false), without);
        assert_eq!(agent.conventions(false, true), without);
    }

    /// The agent skill is compiled in and sent before any turn's rules are known, so it
    /// does not pass through the notes layer when it is sent: it must be what the notes
    /// layer would show under the default rules, nothing private, no secret.
    #[test]
    fn the_agent_skill_is_sent_as_the_notes_layer_would_show_it() {
        use crate::notes::{Notes, Privacy};
        use crate::store::{Config, Store};
        let skill = parse_skill(AGENT_SKILL_FILE, AGENT_SKILL_TEXT, Source::Shipped).unwrap();
        let notes = Notes::new(
            std::sync::Arc::new(Store::in_memory(Config::default())),
            std::sync::Arc::new(Privacy::default()),
        );
        assert_eq!(skill.as_shown(&notes).as_ref(), Some(&skill));
    }

    #[test]
    fn an_agent_skill_without_its_parts_says_which() {
        let text = AGENT_SKILL_TEXT.replace("** Editing :reference:", "** Edits :reference:");
        let e = AgentPrompt::parse("/s/agent.org", &text).unwrap_err();
        assert!(e.to_string().starts_with("/s/agent.org: "), "{e}");
        assert!(e.message.contains("no :reference: part \"Editing\""), "{e}");
    }
}
