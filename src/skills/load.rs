//! Finding and loading skill files: `NAME/SKILL.org` folders and `NAME.skill.org` files in
//! the skill directories, and Agent Skills' `NAME/SKILL.md` folders (read as imported,
//! prompt-only skills wherever they are), read and put in dependency order. A file that
//! does not read, or a skill whose dependencies are not active, stays inactive with its
//! reason.

use super::{load_order, parse_skill, read_skill_md, run_tests, Skill, SkillError, Source};
use crate::llm::config::ConfigError;
use crate::sexp::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What loading the skill directories found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The active skills, each after its dependencies.
    pub active: Vec<Skill>,
    /// Skills (by name, or by file when the file does not read) that are not active, and
    /// why.
    pub inactive: BTreeMap<String, String>,
}

/// The skill files in `dir`: `*/SKILL.org` (else `*/SKILL.md`) and `*.skill.org`, sorted.
pub fn skill_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // The Org version of a skill (converted or written) wins over its SKILL.md.
            let org = path.join("SKILL.org");
            let md = path.join("SKILL.md");
            if org.is_file() {
                out.push(org);
            } else if md.is_file() {
                out.push(md);
            }
        } else if name.ends_with(".skill.org") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Load every skill of `dirs` (each with the source its skills have). A skill name found
/// twice keeps the first directory's (the user's own before the shipped ones, when the
/// caller lists them so). A skill is active only when its file reads and its own gate and
/// trigger tests pass; when a new version of a file fails, the version of it in `previous` (the
/// skills active until now) stays active, and the failure is reported.
pub fn load_dirs(dirs: &[(PathBuf, Source)], previous: &[Skill]) -> Loaded {
    let mut loaded = Loaded::default();
    let mut skills: Vec<Skill> = Vec::new();
    for (dir, source) in dirs {
        for file in skill_files(dir) {
            let shown = file.to_string_lossy().into_owned();
            match read_skill(&file, &shown, *source) {
                Ok(s) if skills.iter().any(|o| o.name == s.name) => {
                    loaded.inactive.insert(
                        shown.clone(),
                        format!(
                            "{shown}: the skill {} is already loaded from another file",
                            s.name
                        ),
                    );
                }
                Ok(s) => skills.push(s),
                Err(e) => match previous.iter().find(|p| p.file == shown) {
                    Some(old) if !skills.iter().any(|o| o.name == old.name) => {
                        loaded
                            .inactive
                            .insert(shown, format!("{e}; the previous version stays active"));
                        skills.push(old.clone());
                    }
                    _ => {
                        loaded.inactive.insert(shown, e.to_string());
                    }
                },
            }
        }
    }
    let order = load_order(&skills);
    loaded.inactive.extend(order.inactive);
    for name in order.active {
        if let Some(i) = skills.iter().position(|s| s.name == name) {
            loaded.active.push(skills.swap_remove(i));
        }
    }
    loaded
}

/// The skill in `file` (named `shown`): a `SKILL.md` is imported, whatever the directory's
/// source; an Org skill is of `source`, and must pass its own gate tests.
fn read_skill(file: &Path, shown: &str, source: Source) -> Result<Skill, SkillError> {
    if file.file_name().is_some_and(|n| n == "SKILL.md") {
        return read_skill_md(file);
    }
    let text = std::fs::read_to_string(file).map_err(|e| SkillError {
        file: shown.to_owned(),
        line: 0,
        message: e.to_string(),
    })?;
    let skill = parse_skill(shown, &text, source)?;
    run_tests(&skill)?;
    Ok(skill)
}

/// The skill directories as Emacs names them: a list of `(DIR . SOURCE)`, SOURCE one of
/// `shipped`, `user`, `imported`, `agent`.
pub fn dirs_from_sexp(value: &Value) -> Result<Vec<(PathBuf, Source)>, ConfigError> {
    let items = crate::sexp::list_items(value)
        .map_err(|_| ConfigError::Shape("the skill directories are a list".into()))?;
    let mut out = Vec::new();
    for item in items {
        let bad = || {
            ConfigError::Shape(format!(
                "a skill directory is (DIR . SOURCE), not {}",
                crate::sexp::print(item)
            ))
        };
        let Value::Cons(pair) = item else {
            return Err(bad());
        };
        let (Value::String(dir), Value::Symbol(source) | Value::Keyword(source)) =
            (pair.car(), pair.cdr())
        else {
            return Err(bad());
        };
        let source = Source::from_name(source).ok_or_else(|| {
            ConfigError::Shape(format!(
                "a skill source is shipped, user, imported or agent, not {source}"
            ))
        })?;
        out.push((PathBuf::from(dir.as_ref()), source));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill(name: &str, deps: &str) -> String {
        format!("#+SKILL_NAME: {name}\n#+DESCRIPTION: {name} things.\n#+DEPENDS_ON: {deps}\n* Prompt\nDo {name}.\n")
    }

    #[test]
    fn directories_load_in_order_and_broken_files_say_why() {
        let user = tempfile::tempdir().unwrap();
        let shipped = tempfile::tempdir().unwrap();
        write(&user.path().join("gtd/SKILL.org"), &skill("gtd", "ids"));
        write(&user.path().join("ids.skill.org"), &skill("ids", ""));
        write(&user.path().join("broken.skill.org"), "* Prompt\nno name\n");
        write(&user.path().join("notes.org"), "* Not a skill\n");
        write(&shipped.path().join("ids/SKILL.org"), &skill("ids", ""));
        write(
            &shipped.path().join("orphan/SKILL.org"),
            &skill("orphan", "nowhere"),
        );
        let dirs = [
            (user.path().to_path_buf(), Source::User),
            (shipped.path().to_path_buf(), Source::Shipped),
            (user.path().join("missing"), Source::User),
        ];
        let loaded = load_dirs(&dirs, &[]);
        let names: Vec<&str> = loaded.active.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ids", "gtd"]);
        assert_eq!(
            loaded.active[0].file,
            user.path().join("ids.skill.org").to_string_lossy()
        );
        let reasons: Vec<&String> = loaded.inactive.values().collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        assert!(reasons
            .iter()
            .any(|r| r.contains("broken.skill.org:1: no #+SKILL_NAME")));
        assert!(reasons
            .iter()
            .any(|r| r.contains("already loaded from another file")));
        assert_eq!(
            loaded.inactive["orphan"],
            "orphan needs nowhere, which is not loaded"
        );

        // A new version whose own gate test fails: the previous version stays active.
        let failing = format!(
            "{}* Gate\n| action | condition | decision | reason |\n\
             | set_todo | state=DONE | ask | sure? |\n* Tests\n** closing asks :gate:\n\
             :PROPERTIES:\n:ACTION: set_todo\n:TARGET: T\n:ARGS: state=DONE\n:EXPECT: deny\n\
             :END:\n#+begin_example\n,* TODO T\n#+end_example\n",
            skill("ids", "")
        );
        let user_ids = user.path().join("ids.skill.org");
        write(&user_ids, &failing);
        let again = load_dirs(&dirs, &loaded.active);
        let names: Vec<&str> = again.active.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ids", "gtd"]);
        assert_eq!(
            again.active[0], loaded.active[0],
            "the old version, not the new"
        );
        let why = &again.inactive[&*user_ids.to_string_lossy()];
        assert!(why.contains("expected deny, the rules decide ask"), "{why}");
        assert!(why.contains("the previous version stays active"), "{why}");
        // Without a previous version the failing file is not active: the shipped skill of
        // the same name is the one loaded.
        let fresh = load_dirs(&dirs, &[]);
        let ids = fresh.active.iter().find(|s| s.name == "ids").unwrap();
        assert!(
            ids.file.starts_with(&*shipped.path().to_string_lossy()),
            "{}",
            ids.file
        );
    }

    #[test]
    fn a_failing_trigger_test_keeps_a_skill_inactive() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nightly.skill.org");
        let text = |expect: &str| {
            format!(
                "{}* Trigger\n:PROPERTIES:\n:ON: cron\n:SCHEDULE: 0 2 * * *\n:END:\n\
                 * Tests\n** two at night :trigger:\n:PROPERTIES:\n:EVENT: cron\n\
                 :TIME: 2026-11-27 02:00\n:EXPECT: {expect}\n:END:\n",
                skill("nightly", "")
            )
        };
        let dirs = [(dir.path().to_path_buf(), Source::User)];
        write(&file, &text("fires"));
        let loaded = load_dirs(&dirs, &[]);
        assert_eq!(loaded.active.len(), 1, "{:?}", loaded.inactive);
        write(&file, &text("quiet"));
        let loaded = load_dirs(&dirs, &[]);
        assert!(loaded.active.is_empty());
        let why = &loaded.inactive[&*file.to_string_lossy()];
        assert!(
            why.contains(":12: trigger test \"two at night\": expected quiet, the trigger fires"),
            "{why}"
        );
    }

    #[test]
    fn skill_md_folders_load_as_imported_and_an_org_version_wins() {
        let user = tempfile::tempdir().unwrap();
        let agents = tempfile::tempdir().unwrap();
        let md = |name: &str| {
            format!("---\nname: {name}\ndescription: {name} things.\n---\nDo {name}.\n")
        };
        write(&agents.path().join("pdf/SKILL.md"), &md("pdf"));
        write(
            &agents.path().join("pdf/references/forms.md"),
            "Fill forms.\n",
        );
        write(&agents.path().join("wrong/SKILL.md"), &md("right"));
        // In a user directory a SKILL.md is imported too; beside a SKILL.org it is ignored.
        write(&user.path().join("csv/SKILL.md"), &md("csv"));
        write(&user.path().join("gtd/SKILL.md"), &md("gtd"));
        write(&user.path().join("gtd/SKILL.org"), &skill("gtd", ""));
        let dirs = [
            (user.path().to_path_buf(), Source::User),
            (agents.path().to_path_buf(), Source::Imported),
        ];
        let loaded = load_dirs(&dirs, &[]);
        let found: Vec<(&str, Source)> = loaded
            .active
            .iter()
            .map(|s| (s.name.as_str(), s.source))
            .collect();
        assert_eq!(
            found,
            [
                ("csv", Source::Imported),
                ("gtd", Source::User),
                ("pdf", Source::Imported)
            ]
        );
        let pdf = &loaded.active[2];
        assert_eq!(pdf.prompt, "Do pdf.");
        assert_eq!(pdf.references[0].0, "forms.md");
        assert!(loaded.active[1].file.ends_with("gtd/SKILL.org"));
        let wrong = agents.path().join("wrong/SKILL.md");
        let why = &loaded.inactive[&*wrong.to_string_lossy()];
        assert!(why.ends_with("wrong/SKILL.md:2: the name \"right\" is not its folder's, \"wrong\": an Agent Skill's name is the name of the folder that holds its SKILL.md"), "{why}");
        assert_eq!(loaded.inactive.len(), 1, "{:?}", loaded.inactive);
    }

    #[test]
    fn directories_from_emacs() {
        let read = |t: &str| dirs_from_sexp(crate::sexp::read(t).unwrap().value());
        let dirs = read("((\"/a\" . user) (\"/b\" . shipped))").unwrap();
        assert_eq!(
            dirs,
            [
                (PathBuf::from("/a"), Source::User),
                (PathBuf::from("/b"), Source::Shipped)
            ]
        );
        assert!(read("nil").unwrap().is_empty());
        assert!(read("((\"/a\" . friends))")
            .unwrap_err()
            .to_string()
            .contains("not friends"));
        assert!(read("(\"/a\")")
            .unwrap_err()
            .to_string()
            .contains("(DIR . SOURCE)"));
    }
}
