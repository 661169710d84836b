//! The secret sentinel's scan: credentials pasted into notes (a token in a body, a
//! password in a property), found by the detector the secret gate uses (`crate::secrets`).
//!
//! A finding names the rule that matched and the field (title, body, which property), never
//! the secret nor any part of it: the model reads the findings, and it must not see what it
//! would be asked to move.
//!
//! The detector reads text at some megabytes a second, so what it found is kept with each
//! file's document ([`FileDoc::credentials`](crate::store::FileDoc::credentials)), found by the store's warm-up after the file
//! was stored or by the first scan that asks. A scan walks the files and the few nodes with
//! findings, and asks whether the model may see only those: at a million headlines a walk
//! of every node was slower than the scan may be.

use super::{Cx, Finding};
use crate::store::credentials::{Field, Memo};

fn describe(field: &Field) -> String {
    match field {
        Field::Title => "its title".into(),
        Field::Body => "its body".into(),
        Field::Property(p) => format!("its property :{p}:"),
    }
}

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let mut out = Vec::new();
    // For the files the warm-up has not reached yet.
    let mut memo = Memo::default();
    for doc in cx.files() {
        for flagged in doc.credentials_with(&mut memo) {
            let node = Cx::at(doc, flagged.index);
            if !cx.shows(&node) {
                continue;
            }
            for (field, rule, n) in flagged.found.iter() {
                let what = if *n == 1 {
                    "a credential".to_string()
                } else {
                    format!("{n} credentials")
                };
                out.push(Finding {
                    kind: "credential",
                    node: node.clone(),
                    detail: format!(
                        "{what} ({rule}) in {}; the text is withheld from you",
                        describe(field)
                    ),
                    fix: Some(
                        "call secret-sentinel__move-to-auth-source with this id and the host \
                         and login it is for (ask the user when the title does not say); or, \
                         to keep it in the note, propose set_tags adding the tag private"
                            .into(),
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{run, Day, Report, Scan, ScanInput};
    use crate::notes::{Notes, Privacy};
    use crate::store::{Config, Store};
    use std::sync::Arc;

    const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

    use super::super::test_notes as notes;

    fn sentinel(n: &Notes) -> Report {
        let input = ScanInput {
            today: Day::parse("2026-11-24").unwrap(),
            file: None,
            inbox: None,
        };
        run(n, Scan::Secrets, &input).unwrap()
    }

    #[test]
    fn credentials_are_named_by_rule_and_field_never_shown() {
        let text = format!(
            "Preamble with {TOKEN}\n* GitHub\nMy token: {TOKEN}\nand again {TOKEN}\n\
             * Wifi\n:PROPERTIES:\n:PASSWORD: hunter2\n:END:\n\
             * The password is in the usual place\nNothing here.\n"
        );
        let report = sentinel(&notes(&[("/n/a.org", &text)], Privacy::default()));
        let got: Vec<(&str, &str)> = report
            .findings
            .iter()
            .map(|f| (&*f.node.node().content.title, f.detail.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    // The file node, titled by the file's name: the text before a headline.
                    "a",
                    "a credential (github-token) in its body; the text is withheld from you"
                ),
                (
                    "GitHub",
                    "2 credentials (github-token) in its body; the text is withheld from you"
                ),
                (
                    "Wifi",
                    "a credential (password-assignment) in its property :PASSWORD:; the text \
                     is withheld from you"
                ),
            ]
        );
        let text = report.text(10);
        assert!(!text.contains(TOKEN) && !text.contains("hunter2"), "{text}");
    }

    #[test]
    fn private_notes_are_never_reported() {
        let text = format!(
            "* Diary :private:\n{TOKEN}\n** Under it\n:PROPERTIES:\n:PASSWORD: hunter2\n:END:\n"
        );
        let report = sentinel(&notes(&[("/n/a.org", &text)], Privacy::default()));
        assert!(report.findings.is_empty(), "{}", report.text(10));
        let all = sentinel(&notes(&[("/n/a.org", &text)], Privacy::none()));
        assert_eq!(all.findings.len(), 2);
    }

    fn found(n: &Notes) -> Vec<(String, String)> {
        sentinel(n)
            .findings
            .iter()
            .map(|f| (f.node.node().content.title.to_string(), f.detail.clone()))
            .collect()
    }

    fn in_body(n: &str, rule: &str) -> String {
        format!("{n} ({rule}) in its body; the text is withheld from you")
    }

    /// An edit makes a new document, whose credentials are found again: a secret added is
    /// reported, one removed is not, and a node made private is no longer named. With and
    /// without the store's warm-up, which must change nothing but when the work is done.
    #[test]
    fn a_scan_after_an_edit_reports_what_the_file_holds_now() {
        for warm in [false, true] {
            let store = Arc::new(Store::in_memory(Config::default()));
            if warm {
                store.warm_credentials();
            }
            let n = Notes::new(store.clone(), Arc::new(Privacy::default()));
            let file = "/n/keys.org";
            let before = format!("* Keys\nnew token {TOKEN}\n* Wifi\nNothing yet.\n");
            store.ingest_text(file, &before, None, None, None).unwrap();
            assert_eq!(warm, store.credentials_warmed());
            assert_eq!(warm, store.state().files[file].credentials_known());
            let once = [("Keys".to_string(), in_body("a credential", "github-token"))];
            assert_eq!(found(&n), once);
            // Asked again, the document answers from what it found.
            assert!(store.state().files[file].credentials_known());
            assert_eq!(found(&n), once);

            let after = format!(
                "* Keys\n(moved to auth-source)\n* Wifi\nglpat-{} and {TOKEN}\n",
                "abcdefghij0123456789"
            );
            store.ingest_text(file, &after, None, None, None).unwrap();
            assert_eq!(warm, store.credentials_warmed());
            // Each rule once per field, in the order the text first shows it.
            assert_eq!(
                found(&n),
                [
                    ("Wifi".to_string(), in_body("a credential", "gitlab-token")),
                    ("Wifi".to_string(), in_body("a credential", "github-token")),
                ]
            );

            let private = after.replace("* Wifi", "* Wifi :private:");
            store.ingest_text(file, &private, None, None, None).unwrap();
            assert!(found(&n).is_empty());
            // Still found by the store, which filters nothing: the notes layer withholds it.
            assert_eq!(store.state().files[file].credentials().len(), 1);
        }
    }
}
