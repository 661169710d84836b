//! The path gate: a path is judged by where it really leads before anything runs.
//!
//! A tool argument named `path` (the file tools', any other tool's) is resolved (`~`, `..`,
//! symbolic links) and denied when it is protected, outside the roots or a private file —
//! before the tool's body runs, so a refused path is never opened. An edit of a note is
//! judged by the note's real file the same way, and an edit through a link always asks,
//! naming the real file: approving "for this conversation" was given for the notes as they
//! look, not for where a link leads. Refusals say the rule, never the path.

use super::{Context, Decision, Gate, GateRules};
use crate::action::{Action, EmacsAction};
use crate::notes::Notes;

/// The path gate over `notes` (their privacy and confinement), as rules of their own.
pub fn path_rules(notes: Notes) -> GateRules {
    GateRules {
        source: "paths".into(),
        gates: vec![Box::new(PathGate { notes })],
    }
}

/// Denies tool calls whose `path` is protected, outside the roots or private, and edits of a
/// note whose real file is; asks about every edit that goes through a link.
pub struct PathGate {
    notes: Notes,
}

impl PathGate {
    pub fn new(notes: Notes) -> PathGate {
        PathGate { notes }
    }
}

impl Gate for PathGate {
    fn name(&self) -> &str {
        "paths"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        let args = match action {
            Action::Tool { args, .. } | Action::Emacs(EmacsAction::CallTool { args, .. }) => args,
            Action::Emacs(edit) => {
                return Ok(match self.notes.edit_target(edit) {
                    Err(refusal) => Decision::Deny(refusal),
                    Ok(Some(target)) => match target.resolved {
                        Some(r) if r.is_redirected() => Decision::Ask(format!(
                            "{} edits {}: the note is a link, and the file it leads to is \
                             what changes",
                            action.kind(),
                            r.shown()
                        )),
                        _ => Decision::Allow,
                    },
                    Ok(None) => Decision::Allow,
                });
            }
        };
        let Some(lexpr::Value::String(path)) = args.get("path") else {
            return Ok(Decision::Allow);
        };
        Ok(match self.notes.judge_path(path) {
            Ok(_) => Decision::Allow,
            Err(refusal) => Decision::Deny(format!("{}: {refusal}", action.kind())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::{Confinement, Privacy};
    use crate::sexp::Sexp;
    use crate::store::{filename, Config, Store};
    use std::path::Path;
    use std::sync::Arc;

    fn key(p: &Path) -> String {
        filename::key(p).into_owned()
    }

    fn tool(path: &str) -> Action {
        Action::Tool {
            name: "read_file".into(),
            args: Sexp::from(lexpr::Value::list(vec![
                lexpr::Value::keyword("path"),
                lexpr::Value::string(path),
            ])),
        }
    }

    #[test]
    fn paths_and_edit_targets_are_judged_by_where_they_lead() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (notes_dir, outside) = (root.join("notes"), root.join("outside"));
        std::fs::create_dir_all(&notes_dir).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("target.org"), "* Target\n").unwrap();
        std::fs::write(notes_dir.join("plain.org"), "* Plain\n").unwrap();
        std::fs::write(notes_dir.join("diary.org"), "* Secret\n").unwrap();
        let out_link = notes_dir.join("link.org");
        std::os::unix::fs::symlink(outside.join("target.org"), &out_link).unwrap();
        let in_link = notes_dir.join("alias.org");
        std::os::unix::fs::symlink(notes_dir.join("plain.org"), &in_link).unwrap();
        let private_link = notes_dir.join("innocent.org");
        std::os::unix::fs::symlink(notes_dir.join("diary.org"), &private_link).unwrap();
        let store = Arc::new(Store::in_memory(Config::default()));
        for f in [
            &out_link,
            &in_link,
            &private_link,
            &notes_dir.join("plain.org"),
        ] {
            store.ingest_file(&key(f), false).unwrap();
        }
        let confinement = Confinement::new(&root, [key(&notes_dir)], None, [""; 0]);
        let notes = Notes::new(store, Arc::new(Privacy::new([], ["diary.org".into()])))
            .confined(Arc::new(confinement));
        let gate = PathGate::new(notes);
        let ctx = Context::default();
        let decide = |a: &Action| gate.check(a, &ctx).unwrap();
        let add = |file: &Path| {
            Action::Emacs(EmacsAction::AddHeadline {
                file: Some(key(file)),
                parent: None,
                title: "New".into(),
                todo: None,
                tags: vec![],
                properties: vec![],
                body: None,
            })
        };
        assert_eq!(decide(&add(&notes_dir.join("plain.org"))), Decision::Allow);
        // Through a link out of the directories: denied, naming neither file.
        let Decision::Deny(why) = decide(&add(&out_link)) else {
            panic!("{:?}", decide(&add(&out_link)))
        };
        assert!(why.contains("outside the directories"), "{why}");
        assert!(
            !why.contains("target.org") && !why.contains("link.org"),
            "{why}"
        );
        // Through a link to a private file: refused as an unknown file.
        let Decision::Deny(why) = decide(&add(&private_link)) else {
            panic!()
        };
        assert!(!why.contains("diary") && !why.contains("innocent"), "{why}");
        // Through a link inside the directories: asks, naming the real file.
        let Decision::Ask(why) = decide(&add(&in_link)) else {
            panic!()
        };
        assert!(
            why.contains(&format!(
                "{} → {}",
                key(&in_link),
                key(&notes_dir.join("plain.org"))
            )),
            "{why}"
        );
        // Tool paths.
        assert_eq!(
            decide(&tool(&key(&notes_dir.join("plain.org")))),
            Decision::Allow
        );
        for (path, rule) in [
            (key(&out_link), "outside the directories"),
            (key(&private_link), "private"),
            ("~/.ssh/id_rsa".to_string(), "protected"),
            (key(&notes_dir.join("../outside/target.org")), "outside"),
            ("notes/plain.org".to_string(), "relative"),
        ] {
            match decide(&tool(&path)) {
                Decision::Deny(why) => {
                    assert!(why.contains(rule), "{path}: {why}");
                    assert!(
                        !why.contains("diary") && !why.contains("target.org"),
                        "{why}"
                    );
                }
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn refiles_links_and_new_notes_are_judged_at_both_ends() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (notes_dir, outside) = (root.join("notes"), root.join("outside"));
        std::fs::create_dir_all(&notes_dir).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(
            notes_dir.join("plain.org"),
            "* Plain\n:PROPERTIES:\n:ID: plain-1\n:END:\n",
        )
        .unwrap();
        std::fs::write(
            notes_dir.join("diary.org"),
            "* Secret\n:PROPERTIES:\n:ID: secret-1\n:END:\n",
        )
        .unwrap();
        std::fs::write(
            outside.join("far.org"),
            "* Far\n:PROPERTIES:\n:ID: far-1\n:END:\n",
        )
        .unwrap();
        let store = Arc::new(Store::in_memory(Config::default()));
        for f in [
            notes_dir.join("plain.org"),
            notes_dir.join("diary.org"),
            outside.join("far.org"),
        ] {
            store.ingest_file(&key(&f), false).unwrap();
        }
        let confinement = Confinement::new(&root, [key(&notes_dir)], None, [""; 0]);
        let notes = Notes::new(store, Arc::new(Privacy::new([], ["diary.org".into()])))
            .confined(Arc::new(confinement));
        let gate = PathGate::new(notes);
        let ctx = Context::default();
        let decide = |a: EmacsAction| gate.check(&Action::Emacs(a), &ctx).unwrap();
        let refile = |to: &str| EmacsAction::Refile {
            id: "plain-1".into(),
            target_id: Some(to.into()),
            target_file: None,
        };
        let link = |to: &str| EmacsAction::InsertLink {
            id: "plain-1".into(),
            target_id: to.into(),
            description: None,
        };
        assert_eq!(decide(refile("plain-1")), Decision::Allow);
        assert_eq!(decide(link("plain-1")), Decision::Allow);
        for (verb, rule) in [
            (refile("secret-1"), "no node"),
            (link("secret-1"), "no node"),
            (refile("far-1"), "outside the directories"),
            (link("far-1"), "outside the directories"),
        ] {
            match decide(verb.clone()) {
                Decision::Deny(why) => {
                    assert!(why.to_lowercase().contains(rule), "{verb:?}: {why}");
                    assert!(!why.contains("diary") && !why.contains("Secret"), "{why}");
                }
                other => panic!("{verb:?}: {other:?}"),
            }
        }
        let into_private_file = EmacsAction::Refile {
            id: "plain-1".into(),
            target_id: None,
            target_file: Some(key(&notes_dir.join("diary.org"))),
        };
        assert!(matches!(decide(into_private_file), Decision::Deny(_)));
        let note = |file: String| EmacsAction::CreateNote {
            file,
            title: "New".into(),
            filetags: vec![],
            body: None,
        };
        assert_eq!(decide(note("ideas/new.org".into())), Decision::Allow);
        assert_eq!(
            decide(note(key(&notes_dir.join("new.org")))),
            Decision::Allow
        );
        for (file, rule) in [
            ("plain.org".to_string(), "exists already"),
            (key(&outside.join("new.org")), "outside the directories"),
            ("../outside/new.org".to_string(), "outside the directories"),
            ("new.txt".to_string(), ".org file"),
            ("diary.org".to_string(), "private"),
        ] {
            match decide(note(file.clone())) {
                Decision::Deny(why) => assert!(why.contains(rule), "{file}: {why}"),
                other => panic!("{file}: {other:?}"),
            }
        }
    }
}
