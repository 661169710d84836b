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

/// The skills offered as `notes`' privacy rules let the model see them (see
/// [`Skill::as_shown`]): a skill whose file is private as a whole is not among them.
pub fn offered_shown(skills: &[Skill], notes: &Notes) -> Vec<Skill> {
    offered(skills).filter_map(|s| s.as_shown(notes)).collect()
}

/// The system prompt's list of the `skills` offered, as `notes` shows them: `None` when
/// none is.
pub fn catalog(skills: &[Skill], notes: &Notes) -> Option<PromptFragment> {
    let offered = offered_shown(skills, notes);
    if offered.is_empty() {
        return None;
    }
    let mut text = format!(
        "Skills you can load with {USE_SKILL} when one fits the request (name: when to use it):"
    );
    for s in &offered {
        text.push_str(&format!("\n- {}: {}", s.name, s.description));
    }
    Some(PromptFragment {
        source: "skills".into(),
        text,
    })
}

/// The `use_skill` tool over `skills`: what it returns passes through the notes layer of
/// the turn that calls it.
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
        body: Box::new(move |notes: &Notes, args: &Args| load(&skills, notes, args)),
    });
    ToolSet {
        source: "skills".into(),
        registry,
    }
}

fn load(skills: &[Skill], notes: &Notes, args: &Args) -> Result<String, String> {
    let name = args.str("name").unwrap_or_default();
    let offered = offered_shown(skills, notes);
    // A private skill is refused as an unknown one is: the answer does not say it exists.
    let Some(skill) = offered.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = offered.iter().map(|s| s.name.as_str()).collect();
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
    // need is the skill itself, with the parts it really has. A private part is absent,
    // and answered in the same words as one that does not exist.
    Ok(format!(
        "{name} has no reference {reference:?} the agent may see (it does not exist, or the \
         user's privacy rules keep it out of view); its instructions follow.\n\n{}",
        instructions(skill)
    ))
}

/// `skill`'s prompt as the model gets it when the skill is in use, naming its reference
/// parts and its tools (offered while it is in use: after `use_skill`, from the next step).
/// For a skill as shown ([`Skill::as_shown`]): it shows what it is given.
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
/// skill's own run), rather than loaded with `use_skill`, as `notes` shows it: a skill
/// whose file is private as a whole sends nothing of its text.
pub fn in_use(skill: &Skill, notes: &Notes) -> PromptFragment {
    PromptFragment {
        source: format!("skill {}", skill.name),
        text: match skill.as_shown(notes) {
            Some(shown) => instructions(&shown),
            None => format!(
                "Skill {}: the user's privacy rules keep its text out of view.",
                skill.name
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::Privacy;
    use crate::skills::tools::SkillTools;
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

    /// Notes under `privacy`, with nothing in them.
    fn notes_under(privacy: Privacy) -> Notes {
        Notes::new(
            Arc::new(Store::in_memory(Config::default())),
            Arc::new(privacy),
        )
    }

    fn notes() -> Notes {
        notes_under(Privacy::default())
    }

    #[test]
    fn fifty_skills_cost_one_line_each_and_load_on_demand() {
        let skills: Vec<Skill> = (0..50).map(skill).collect();
        let notes = notes();
        let listed = catalog(&skills, &notes).unwrap();
        let tokens = crate::llm::estimate_tokens(&listed.text);
        assert!(
            tokens <= 2_000,
            "the catalog of 50 skills is {tokens} tokens"
        );
        assert!(
            !listed.text.contains("Look up topic"),
            "prompts load on demand"
        );
        assert!(catalog(&[], &notes).is_none());
        let set = use_skill_tools(skills.into());
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
        let notes = notes();
        assert!(catalog(std::slice::from_ref(&always), &notes).is_none());
        let listed = catalog(&[always.clone(), skill(2)], &notes).unwrap();
        assert!(!listed.text.contains("skill-1"), "{}", listed.text);
        assert!(listed.text.contains("- skill-2: "), "{}", listed.text);
        let set = use_skill_tools(vec![always, skill(2)].into());
        let e = set
            .registry
            .call(&notes, USE_SKILL, &json!({"name": "skill-1"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no skill \"skill-1\" (skills: skill-2)"), "{e}");
    }

    /// A skill with private parts of every kind, and secrets.
    const HEALTH: &str = "#+TITLE: Health
#+SKILL_NAME: health
#+DESCRIPTION: Use for health questions.
* Prompt
Check the notes first.
** Steps
Step one.
*** My doctor :private:
Dr. Hidden, 555-0100.
*** Step two
Then this.
** Mine :@personal:
personal steps
** Public :reference:
public part
:PROPERTIES:
:TOKEN: abc123
:END:
** Diagnoses :reference:private:
the private diagnosis
** Flagged :reference:
:PROPERTIES:
:PRIVATE: t
:END:
flagged words
** Tokens :reference:
use ghp_16C7e42F292c6912E7710c838347Ae178B4a
* Tools
** stale
:PROPERTIES:
:ALIAS: query_notes
:END:
What waits.
** hidden-tool :private:
:PROPERTIES:
:ALIAS: query_notes
:END:
The private tool's words.
";

    /// Every private text of [`HEALTH`].
    const PRIVATE_WORDS: [&str; 9] = [
        "Dr. Hidden",
        "My doctor",
        "personal steps",
        "Mine",
        "Diagnoses",
        "private diagnosis",
        "Flagged",
        "flagged words",
        "hidden-tool",
    ];

    #[test]
    fn private_parts_of_a_skill_never_reach_the_model() {
        let health = parse_skill("/s/health.org", HEALTH, Source::User).unwrap();
        let notes = notes();
        let set = use_skill_tools(vec![health.clone()].into());
        let call = |args| set.registry.call(&notes, USE_SKILL, &args).unwrap();
        let loaded = call(json!({"name": "health"}));
        let started = in_use(&health, &notes).text;
        let expected = "Skill health (Health):\nCheck the notes first.\n\n** Steps\nStep one.\n\
                        *** [a private subtree is left out]\n*** Step two\nThen this.\n\n\
                        ** [a private subtree is left out]\n\nIts tools: health__stale\n\n\
                        Reference parts (load with use_skill and reference): Public; Tokens";
        assert_eq!(loaded, expected);
        assert_eq!(started, expected);
        // A private reference part is absent, in the words of one that does not exist.
        for title in ["Diagnoses", "Flagged", "Nope"] {
            let part = call(json!({"name": "health", "reference": title}));
            assert!(
                part.starts_with(&format!(
                    "health has no reference {title:?} the agent may see (it does not exist, \
                     or the user's privacy rules keep it out of view)"
                )),
                "{part}"
            );
            for private in PRIVATE_WORDS {
                if private != title {
                    assert!(!part.contains(private), "{private}: {part}");
                }
            }
        }
        // Shown parts: withheld properties and secrets replaced.
        let public = call(json!({"name": "health", "reference": "Public"}));
        assert!(
            public.contains(":TOKEN: [withheld]") && !public.contains("abc123"),
            "{public}"
        );
        let tokens = call(json!({"name": "health", "reference": "Tokens"}));
        assert_eq!(tokens, "** Tokens :reference:\nuse [REDACTED:github-token]");
        // The private tool is not offered; its words are in no declaration.
        let tools = SkillTools::shown(&health, &notes).unwrap();
        assert_eq!(tools.names(), ["health__stale"]);
        let schemas = serde_json::to_string(&tools.function_schemas()).unwrap();
        assert!(!schemas.contains("private tool"), "{schemas}");
        // The bounds of the skill still know every tool.
        assert_eq!(
            SkillTools::of(&health).unwrap().names(),
            ["health__hidden-tool", "health__stale"]
        );
        // Under rules where nothing is private, all of it shows.
        let open = notes_under(Privacy::none());
        let all = in_use(&health, &open).text;
        assert!(
            all.contains("Dr. Hidden") && all.contains("Diagnoses"),
            "{all}"
        );
    }

    #[test]
    fn a_skill_private_as_a_whole_is_neither_listed_nor_loaded() {
        let tagged = HEALTH.replace(
            "#+TITLE: Health\n",
            "#+TITLE: Health\n#+FILETAGS: :private:\n",
        );
        let by_tags = parse_skill("/s/health.org", &tagged, Source::User).unwrap();
        let by_name = parse_skill("/s/diary.skill.org", HEALTH, Source::User).unwrap();
        let notes = notes_under(Privacy::new(
            ["private".to_string()],
            ["diary.skill.org".to_string()],
        ));
        for private in [by_tags, by_name] {
            let skills = vec![private.clone(), skill(2)];
            let listed = catalog(&skills, &notes).unwrap();
            assert!(!listed.text.contains("health"), "{}", listed.text);
            let set = use_skill_tools(skills.into());
            let e = set
                .registry
                .call(&notes, USE_SKILL, &json!({"name": "health"}))
                .unwrap_err()
                .to_string();
            assert!(e.contains("no skill \"health\" (skills: skill-2)"), "{e}");
            let fragment = in_use(&private, &notes).text;
            assert_eq!(
                fragment,
                "Skill health: the user's privacy rules keep its text out of view."
            );
            assert!(SkillTools::shown(&private, &notes).unwrap().is_empty());
        }
    }
}
