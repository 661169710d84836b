//! Progressive disclosure: the model sees each active skill's name and description (one
//! line each); it loads a skill's whole prompt, and any `:reference:` part of it, with the
//! `use_skill` tool. Fifty skills cost a few hundred tokens, not fifty prompts. A skill always
//! in use (`#+ALWAYS: t`: the shipped `agent` and `safety` skills) is neither listed nor
//! loaded: there is nothing to choose.

use super::prompt::PromptFragment;
use super::Skill;
use crate::notes::Notes;
use crate::tools::{Args, Param, ParamType, Registry, Tool, ToolSet};
use std::sync::Arc;

/// The name of the tool that loads a skill.
pub const USE_SKILL: &str = "use_skill";

/// The skills the model may choose among: the active ones not always in use.
pub fn offered(skills: &[Skill]) -> impl Iterator<Item = &Skill> {
    skills.iter().filter(|s| !s.always)
}

/// The system prompt's list of the `skills` offered: `None` when none is.
pub fn catalog(skills: &[Skill]) -> Option<PromptFragment> {
    let mut offered = offered(skills).peekable();
    offered.peek()?;
    let mut text = format!(
        "Skills you can load with {USE_SKILL} when one fits the request (name: when to use it):"
    );
    for s in offered {
        text.push_str(&format!("\n- {}: {}", s.name, s.description));
    }
    Some(PromptFragment {
        source: "skills".into(),
        text,
    })
}

/// The `use_skill` tool over `skills`.
pub fn use_skill_tools(skills: Arc<[Skill]>) -> ToolSet {
    let mut registry = Registry::default();
    registry.register(Tool {
        name: USE_SKILL.into(),
        description: "Load a skill listed in the system prompt: its instructions, and with \
                      `reference` one of the reference parts it names."
            .into(),
        params: vec![
            Param::new("name", ParamType::String, "the skill's name", true),
            Param::new(
                "reference",
                ParamType::String,
                "the title of one of its reference parts",
                false,
            ),
        ],
        body: Box::new(move |_: &Notes, args: &Args| load(&skills, args)),
    });
    ToolSet {
        source: "skills".into(),
        registry,
    }
}

fn load(skills: &[Skill], args: &Args) -> Result<String, String> {
    let name = args.str("name").unwrap_or_default();
    let Some(skill) = offered(skills).find(|s| s.name == name) else {
        let known: Vec<&str> = offered(skills).map(|s| s.name.as_str()).collect();
        return Err(format!("no skill {name:?} (skills: {})", known.join(", ")));
    };
    let Some(reference) = args.str("reference").filter(|r| !r.trim().is_empty()) else {
        return Ok(instructions(skill));
    };
    if let Some((_, text)) = skill
        .references
        .iter()
        .find(|(title, _)| title == reference)
    {
        return Ok(text.clone());
    }
    // Small models fill the optional argument with a guess ("weekly review"): what they
    // need is the skill itself, with the parts it really has.
    Ok(format!(
        "{name} has no reference {reference:?}; its instructions follow.\n\n{}",
        instructions(skill)
    ))
}

/// `skill`'s prompt as the model gets it when the skill is in use, naming its reference
/// parts and its tools (offered while it is in use: after `use_skill`, from the next step).
pub fn instructions(skill: &Skill) -> String {
    let mut out = format!("Skill {} ({}):\n{}", skill.name, skill.title, skill.prompt);
    if !skill.tools.is_empty() {
        let names: Vec<String> = skill
            .tools
            .iter()
            .map(|t| super::tools::tool_name(&skill.name, &t.name))
            .collect();
        out.push_str(&format!("\n\nIts tools: {}", names.join(", ")));
    }
    if !skill.references.is_empty() {
        let titles: Vec<&str> = skill.references.iter().map(|(t, _)| t.as_str()).collect();
        out.push_str(&format!(
            "\n\nReference parts (load with {USE_SKILL} and reference): {}",
            titles.join("; ")
        ));
    }
    out
}

/// The prompt fragment of a skill in use from the start of a turn (`/NAME` in the chat, a
/// skill's own run), rather than loaded with `use_skill`.
pub fn in_use(skill: &Skill) -> PromptFragment {
    PromptFragment {
        source: format!("skill {}", skill.name),
        text: instructions(skill),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::Privacy;
    use crate::skills::{parse_skill, Source};
    use crate::store::{Config, Store};
    use serde_json::json;

    fn skill(n: usize) -> Skill {
        let text = format!(
            "#+TITLE: Skill {n}\n#+SKILL_NAME: skill-{n}\n#+DESCRIPTION: Use when the user \
             asks about topic number {n} of their notes, such as reviews and plans.\n\
             * Prompt\nLook up topic {n} first.\n** Details :reference:\nTopic {n} in depth.\n"
        );
        parse_skill(&format!("/s/skill-{n}.org"), &text, Source::User).unwrap()
    }

    #[test]
    fn fifty_skills_cost_one_line_each_and_load_on_demand() {
        let skills: Vec<Skill> = (0..50).map(skill).collect();
        let listed = catalog(&skills).unwrap();
        let tokens = crate::llm::estimate_tokens(&listed.text);
        assert!(
            tokens <= 2_000,
            "the catalog of 50 skills is {tokens} tokens"
        );
        assert!(
            !listed.text.contains("Look up topic"),
            "prompts load on demand"
        );
        assert!(catalog(&[]).is_none());
        let set = use_skill_tools(skills.into());
        let notes = Notes::new(
            Arc::new(Store::in_memory(Config::default())),
            Arc::new(Privacy::default()),
        );
        let call = |args| set.registry.call(&notes, USE_SKILL, &args);
        let loaded = call(json!({"name": "skill-7"})).unwrap();
        assert!(loaded.contains("Look up topic 7 first."), "{loaded}");
        assert!(
            loaded.contains("Reference parts") && loaded.contains("Details"),
            "{loaded}"
        );
        assert!(!loaded.contains("in depth"), "references load on demand");
        let part = call(json!({"name": "skill-7", "reference": "Details"})).unwrap();
        assert!(part.contains("Topic 7 in depth."), "{part}");
        let e = call(json!({"name": "skill-99"})).unwrap_err().to_string();
        assert!(e.contains("no skill \"skill-99\""), "{e}");
        let guessed = call(json!({"name": "skill-7", "reference": "Nope"})).unwrap();
        assert!(
            guessed.starts_with("skill-7 has no reference \"Nope\"")
                && guessed.contains("Reference parts")
                && guessed.contains("Details"),
            "{guessed}"
        );
    }

    #[test]
    fn skills_always_in_use_are_neither_listed_nor_loaded() {
        let mut always = skill(1);
        always.always = true;
        assert!(catalog(std::slice::from_ref(&always)).is_none());
        let listed = catalog(&[always.clone(), skill(2)]).unwrap();
        assert!(!listed.text.contains("skill-1"), "{}", listed.text);
        assert!(listed.text.contains("- skill-2: "), "{}", listed.text);
        let set = use_skill_tools(vec![always, skill(2)].into());
        let notes = Notes::new(
            Arc::new(Store::in_memory(Config::default())),
            Arc::new(Privacy::default()),
        );
        let e = set
            .registry
            .call(&notes, USE_SKILL, &json!({"name": "skill-1"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no skill \"skill-1\" (skills: skill-2)"), "{e}");
    }
}
