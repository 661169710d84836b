//! The secret sentinel's scan: credentials pasted into notes (a token in a body, a
//! password in a property), found by the detector the secret gate uses (`crate::secrets`).
//!
//! A finding names the rule that matched and the field (title, body, which property), never
//! the secret nor any part of it: the model reads the findings, and it must not see what it
//! would be asked to move.
//!
//! The detector reads text at some megabytes a second, so a first scan of large notes takes
//! a while; what it found is kept per node version ([`Node::hash`], a digest of the node's
//! content) in a process-wide cache, so a scan after a few edits looks up every unchanged
//! node and runs the detector only on the new versions.
//!
//! [`Node::hash`]: crate::store::Node

use super::{Cx, Finding};
use crate::secrets::SecretGate;
use crate::store::{FileDoc, Hash, NodeContent, NodeRef};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};

/// Where in a node a credential is.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Title,
    Body,
    /// A property, by its name.
    Property(String),
}

impl Field {
    fn describe(&self) -> String {
        match self {
            Field::Title => "its title".into(),
            Field::Body => "its body".into(),
            Field::Property(p) => format!("its property :{p}:"),
        }
    }
}

/// What the detector found in one version of a node's own fields: each field with a rule
/// that matched in it and how many times.
type Found = Arc<[(Field, &'static str, usize)]>;

/// Found credentials per node version, and the scan each entry was last used in.
#[derive(Default)]
struct Cache {
    entries: FxHashMap<Hash, (Found, u64)>,
    scans: u64,
}

/// Entries kept beyond which those the last scan did not use are dropped: at about a
/// hundred bytes each, some tens of megabytes at most.
const CACHE_LIMIT: usize = 400_000;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let nodes: Vec<NodeRef> = cx.files().flat_map(|doc| shown_nodes(cx, doc)).collect();
    // Look up every node first; the detector runs on the misses with the lock released,
    // so a slow first scan does not hold up another scan's lookups.
    let (scan_no, mut found, misses) = {
        let mut cache = cache().lock();
        cache.scans += 1;
        let scan_no = cache.scans;
        let mut found: Vec<Option<Found>> = Vec::with_capacity(nodes.len());
        let mut misses = Vec::new();
        for (i, r) in nodes.iter().enumerate() {
            match cache.entries.get_mut(&r.node().hash()) {
                Some((f, used)) => {
                    *used = scan_no;
                    found.push(Some(f.clone()));
                }
                None => {
                    found.push(None);
                    misses.push(i);
                }
            }
        }
        (scan_no, found, misses)
    };
    if !misses.is_empty() {
        let gate = SecretGate::shared();
        // A version met twice in one scan (a file and its copy) is read once.
        let mut fresh: FxHashMap<Hash, Found> = FxHashMap::default();
        for &i in &misses {
            let node = nodes[i].node();
            let f = fresh
                .entry(node.hash())
                .or_insert_with(|| detect(gate.as_ref(), &node.content));
            found[i] = Some(f.clone());
        }
        let mut cache = cache().lock();
        for (hash, f) in fresh {
            cache.entries.insert(hash, (f, scan_no));
        }
        if cache.entries.len() > CACHE_LIMIT {
            cache.entries.retain(|_, (_, used)| *used == scan_no);
        }
    }
    let mut out = Vec::new();
    for (r, f) in nodes.iter().zip(found) {
        for (field, rule, n) in f.iter().flat_map(|f| f.iter()) {
            let what = if *n == 1 {
                "a credential".to_string()
            } else {
                format!("{n} credentials")
            };
            out.push(Finding {
                kind: "credential",
                node: r.clone(),
                detail: format!(
                    "{what} ({rule}) in {}; the text is withheld from you",
                    field.describe()
                ),
                fix: Some(
                    "call secret-sentinel__move-to-auth-source with this id and the host and \
                     login it is for (ask the user when the title does not say); or, to keep \
                     it in the note, propose set_tags adding the tag private"
                        .into(),
                ),
            });
        }
    }
    out
}

/// The nodes of `doc` the model may see: its file node (the text before the first
/// headline) and its headlines.
fn shown_nodes<'a>(cx: &'a Cx, doc: &'a Arc<FileDoc>) -> impl Iterator<Item = NodeRef> + 'a {
    (0..doc.nodes.len() as u32)
        .map(move |i| Cx::at(doc, i))
        .filter(move |r| cx.shows(r))
}

/// The credentials in a node's own fields (its children's are theirs).
fn detect(gate: &SecretGate, c: &NodeContent) -> Found {
    let detector = gate.detector();
    let mut out: Vec<(Field, &'static str, usize)> = Vec::new();
    let mut add = |field: &Field, text: &str| {
        for span in detector.spans(text) {
            match out
                .iter_mut()
                .find(|(f, r, _)| f == field && *r == span.rule)
            {
                Some((_, _, n)) => *n += 1,
                None => out.push((field.clone(), span.rule, 1)),
            }
        }
    };
    if !c.title.is_empty() {
        add(&Field::Title, &c.title);
    }
    // Most headlines have no body: no call at all for them.
    if !c.body.is_blank() {
        add(&Field::Body, &c.body_or_notice());
    }
    for (key, value) in &c.properties {
        if value.trim().is_empty() {
            continue;
        }
        // As the drawer line reads, so that rules keyed on the name (`:PASSWORD: x`) apply.
        add(
            &Field::Property(key.to_string()),
            &format!(":{key}: {value}"),
        );
    }
    out.into()
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

    #[test]
    fn a_repeated_scan_reads_the_cache_and_an_edit_is_seen() {
        let store = Arc::new(Store::in_memory(Config::default()));
        let before = format!("* Keys {}\nnew token {TOKEN}\n", std::process::id());
        store
            .ingest_text("/n/cached.org", &before, None, None, None)
            .unwrap();
        let n = Notes::new(store.clone(), Arc::new(Privacy::default()));
        let hash = store.state().files["/n/cached.org"].nodes[1].hash();
        assert_eq!(sentinel(&n).findings.len(), 1);
        assert!(super::cache().lock().entries.contains_key(&hash));
        assert_eq!(sentinel(&n).findings.len(), 1);
        // The edited node is a new version: detected again, not read from the cache.
        let after = before.replace(TOKEN, "(moved to auth-source)");
        store
            .ingest_text("/n/cached.org", &after, None, None, None)
            .unwrap();
        assert!(sentinel(&n).findings.is_empty());
    }
}
