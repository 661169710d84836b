//! A skill as the model may see it. Skills are literate Org files, and what the model reads
//! of one (its description in the catalog, its prompt, a reference part, a tool's
//! description) passes through the notes layer like any note: a part tagged with a private
//! tag or with a true `:PRIVATE:` property is absent, a skill file private as a whole
//! (by a private pattern, its `#+FILETAGS`…) is not offered at all, and withheld property
//! values and secrets are replaced. The rules are the turn's ([`Notes::privacy`]), applied
//! when the skill is shown, not when it loads: the user may change them between two turns.
//!
//! What the skill does is not changed: its gate rules, ceilings, triggers and tests are
//! enforcement, not text for the model, and are kept whole.

use super::parse::shown_parts;
use super::{Skill, SkillToolKind};
use crate::notes::Notes;

impl Skill {
    /// This skill as `notes`' privacy rules let the model see it: `None` when its file is
    /// private as a whole; otherwise with its private reference parts absent, its private
    /// prompt parts replaced by a line saying so, its private tools not offered, and every
    /// text it shows cleaned of withheld property values and secrets.
    ///
    /// An imported `SKILL.md` has no Org structure of its own; its prompt and references are
    /// read as Org all the same, as any text a tool shows is ([`Notes::text_as_shown`]).
    pub fn as_shown(&self, notes: &Notes) -> Option<Skill> {
        if notes.hides_path(&self.file) {
            return None;
        }
        let mut shown = self.clone();
        match &self.org {
            Some(org) if notes.privacy().could_hide(org) => {
                let privacy = notes.privacy();
                let parts = shown_parts(&self.file, org, |nodes, i| privacy.hides_node(nodes, i))?;
                shown.prompt = parts.prompt;
                shown.references = parts.references;
                shown
                    .tools
                    .retain(|t| !parts.hidden_tools.contains(&t.name));
            }
            Some(_) => {}
            None => {
                shown.prompt = notes.text_as_shown(&self.file, &self.prompt)?;
                shown.references = self
                    .references
                    .iter()
                    .filter_map(|(title, text)| {
                        notes
                            .text_as_shown(&self.file, text)
                            .map(|text| (title.clone(), text))
                    })
                    .collect();
            }
        }
        let clean = |text: &mut String| *text = notes.clean_text(text);
        clean(&mut shown.title);
        clean(&mut shown.description);
        clean(&mut shown.prompt);
        for (title, text) in &mut shown.references {
            clean(title);
            clean(text);
        }
        for tool in &mut shown.tools {
            clean(&mut tool.description);
            if let SkillToolKind::Elisp { params, .. } = &mut tool.kind {
                for p in params {
                    p.description = notes.clean_text(&p.description).into();
                }
            }
        }
        Some(shown)
    }
}
