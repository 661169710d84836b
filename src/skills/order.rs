//! Skills in dependency order: a skill loads after the skills it depends on. A missing
//! dependency or a cycle keeps the skills concerned (and their dependants) inactive, with a
//! reason that names the chain.

use super::Skill;
use std::collections::{BTreeMap, HashMap};

/// The outcome of ordering a set of skills.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ordered {
    /// Names of the skills that can be active, each after its dependencies.
    pub active: Vec<String>,
    /// Skills that cannot, with why.
    pub inactive: BTreeMap<String, String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Visiting,
    Done,
}

/// Order `skills` by `#+DEPENDS_ON:`. Skills are visited by name, so the order does not
/// depend on the order the files were found in.
pub fn load_order(skills: &[Skill]) -> Ordered {
    let by_name: HashMap<&str, &Skill> = skills.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut names: Vec<&str> = by_name.keys().copied().collect();
    names.sort_unstable();
    let mut out = Ordered::default();
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    for name in names {
        // A skill that cannot be active is recorded in `out.inactive` by the visit itself.
        let _ = visit(name, &by_name, &mut marks, &mut Vec::new(), &mut out);
    }
    out
}

/// Visit `name` depth first; `Err` with the reason when it cannot be active.
fn visit<'s>(
    name: &'s str,
    by_name: &HashMap<&'s str, &'s Skill>,
    marks: &mut HashMap<&'s str, Mark>,
    path: &mut Vec<&'s str>,
    out: &mut Ordered,
) -> Result<(), String> {
    match marks.get(name) {
        Some(Mark::Done) => {
            return match out.inactive.get(name) {
                Some(_) => Err(format!("{name} is inactive")),
                None => Ok(()),
            }
        }
        Some(Mark::Visiting) => {
            let start = path.iter().position(|n| *n == name).unwrap_or(0);
            let mut cycle: Vec<&str> = path[start..].to_vec();
            cycle.push(name);
            return Err(format!("a dependency cycle: {}", cycle.join(" → ")));
        }
        None => {}
    }
    marks.insert(name, Mark::Visiting);
    path.push(name);
    let skill = by_name[name];
    let mut result = Ok(());
    for dep in &skill.depends_on {
        let outcome = match by_name.get(dep.as_str()) {
            None => Err(format!("{name} needs {dep}, which is not loaded")),
            Some(d) => visit(d.name.as_str(), by_name, marks, path, out)
                .map_err(|why| format!("{name} needs {dep}: {why}")),
        };
        if let Err(why) = outcome {
            result = Err(why);
            break;
        }
    }
    path.pop();
    marks.insert(name, Mark::Done);
    match &result {
        Ok(()) => out.active.push(name.to_owned()),
        Err(why) => {
            out.inactive.insert(name.to_owned(), why.clone());
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::{Skill, Trigger};

    fn skill(name: &str, deps: &[&str]) -> Skill {
        Skill {
            name: name.into(),
            title: name.into(),
            description: "d".into(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            allowed_tools: vec![],
            always: false,
            trigger: Trigger::default(),
            prompt: String::new(),
            references: vec![],
            gate: vec![],
            tools: vec![],
            tests: vec![],
            file: format!("/s/{name}.org"),
            source: crate::skills::Source::User,
            org: None,
        }
    }

    #[test]
    fn dependencies_load_first_and_broken_chains_stay_inactive() {
        let o = load_order(&[
            skill("gtd", &["ids", "agent"]),
            skill("ids", &["agent"]),
            skill("agent", &[]),
            skill("a", &["b"]),
            skill("b", &["a"]),
            skill("lonely", &["missing"]),
            skill("uses-lonely", &["lonely"]),
        ]);
        assert_eq!(o.active, ["agent", "ids", "gtd"]);
        let why = |n: &str| o.inactive.get(n).cloned().unwrap_or_default();
        assert!(
            why("a").contains("a dependency cycle: a → b → a"),
            "{}",
            why("a")
        );
        assert!(why("b").contains("cycle"), "{}", why("b"));
        assert_eq!(why("lonely"), "lonely needs missing, which is not loaded");
        assert!(
            why("uses-lonely").contains("uses-lonely needs lonely"),
            "{}",
            why("uses-lonely")
        );
        assert_eq!(o.active.len() + o.inactive.len(), 7);
    }
}
