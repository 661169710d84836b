//! What the secret detector finds in a file's nodes, kept with the file's document
//! ([`FileDoc::credentials`](super::FileDoc::credentials)): the few nodes with a credential
//! in their own fields, each with the field, the rule and how many times.
//!
//! Kept per document rather than per node version, so a scan walks the files and the
//! flagged nodes only: at a million headlines, a million lookups in a cache took longer than
//! the scan may. A document is immutable and the detector's rules are fixed, so what is
//! found once holds for the document's life. The store finds nothing private here: which
//! of these nodes may be named is the notes layer's to say.

use super::hash::Hash;
use super::node::{Node, NodeContent};
use crate::secrets::{Detector, SecretGate, Span};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Where in a node a credential is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    Title,
    Body,
    /// A property, by its name.
    Property(Arc<str>),
}

/// A field with a rule that matched in it and how many times.
pub type Found = (Field, &'static str, usize);

/// A node with credentials in its own fields (its children's are theirs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flagged {
    /// The node's index in its document.
    pub index: u32,
    /// In the order the fields are read (title, body, properties) and the rules first
    /// matched in each.
    pub found: Box<[Found]>,
}

/// What was found in the node versions one pass over many documents met (the warm-up's,
/// a scan's), so a version in several of them (a file and its copy, which share their
/// unchanged versions) is read once.
#[derive(Default)]
pub struct Memo {
    seen: FxHashMap<Hash, Box<[Found]>>,
    line: String,
}

/// Versions a memo holds before it starts over: some fifty bytes each, so a pass over
/// millions of nodes the screen lets through holds about ten megabytes at most.
const MEMO_LIMIT: usize = 250_000;

/// The nodes of `nodes` with credentials, in document order.
pub(super) fn find(nodes: &[Node], memo: &mut Memo) -> Box<[Flagged]> {
    let gate = SecretGate::shared();
    let detector = gate.detector();
    let mut flagged = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        // Most nodes are cleared by the screen alone, for less than a lookup would cost:
        // only those it lets through are worth remembering (a memo of every version held
        // 5 MB per 100,000 headlines while a pass lasted).
        if !may_hold(detector, &n.content, &mut memo.line) {
            continue;
        }
        let found = match memo.seen.get(&n.hash()) {
            Some(found) => found.clone(),
            None => {
                let found: Box<[Found]> = in_node(detector, &n.content, &mut memo.line).into();
                if memo.seen.len() >= MEMO_LIMIT {
                    memo.seen.clear();
                }
                memo.seen.insert(n.hash(), found.clone());
                found
            }
        };
        if !found.is_empty() {
            flagged.push(Flagged {
                index: i as u32,
                found,
            });
        }
    }
    flagged.into()
}

/// Hand each of the node's own fields a rule could read to `each`, as the detector is to
/// read it, with a way to name the field; `each` answers whether to go on. The title, the
/// body (most headlines have none), and each property as its drawer line reads, so that
/// rules keyed on the name (`:PASSWORD: x`) apply. `line` is scratch space for those
/// lines, kept across nodes: most nodes have properties, and most of those hold nothing.
fn each_field(
    c: &NodeContent,
    line: &mut String,
    mut each: impl FnMut(&str, &dyn Fn() -> Field) -> bool,
) {
    if !c.title.is_empty() && !each(&c.title, &|| Field::Title) {
        return;
    }
    if !c.body.is_blank() && !each(&c.body_or_notice(), &|| Field::Body) {
        return;
    }
    for (key, value) in &c.properties {
        if value.trim().is_empty() {
            continue;
        }
        line.clear();
        line.push(':');
        line.push_str(key);
        line.push_str(": ");
        line.push_str(value);
        if !each(line, &|| Field::Property(key.clone())) {
            return;
        }
    }
}

/// Whether a rule could find anything in the node's own fields (false: surely nothing).
fn may_hold(detector: &Detector, c: &NodeContent, line: &mut String) -> bool {
    let mut may = false;
    each_field(c, line, |text, _| {
        may = detector.may_hold(text);
        !may
    });
    may
}

/// The credentials in a node's own fields.
fn in_node(detector: &Detector, c: &NodeContent, line: &mut String) -> Vec<Found> {
    let mut out = Vec::new();
    each_field(c, line, |text, field| {
        add(&mut out, detector.spans(text), field);
        true
    });
    out
}

/// Count `spans`, found in the field `field` names, by rule into `out`.
fn add(out: &mut Vec<Found>, spans: Vec<Span>, field: &dyn Fn() -> Field) {
    if spans.is_empty() {
        return;
    }
    let field = field();
    for span in spans {
        match out
            .iter_mut()
            .find(|(f, r, _)| *f == field && *r == span.rule)
        {
            Some((_, _, n)) => *n += 1,
            None => out.push((field.clone(), span.rule, 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Field, Found};
    use crate::secrets::SecretGate;
    use crate::store::{Config, Store};

    const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

    fn flagged(text: &str) -> Vec<(u32, Vec<Found>)> {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/a.org", text, None, None, None)
            .unwrap();
        let state = store.state();
        let doc = &state.files["/n/a.org"];
        assert!(!doc.credentials_known(), "found only when asked");
        doc.credentials()
            .iter()
            .map(|f| (f.index, f.found.to_vec()))
            .collect()
    }

    #[test]
    fn each_field_is_counted_by_rule_in_the_order_found() {
        let text = format!(
            "Before {TOKEN}\n* Clean\nnothing\n* {TOKEN} in the title\n\
             :PROPERTIES:\n:PASSWORD: hunter2\n:NOTE:\n:END:\n\
             glpat-abcdefghij0123456789 {TOKEN} glpat-abcdefghij0123456789\n"
        );
        assert_eq!(
            flagged(&text),
            [
                (0, vec![(Field::Body, "github-token", 1)]),
                (
                    2,
                    vec![
                        (Field::Title, "github-token", 1),
                        (Field::Body, "gitlab-token", 2),
                        (Field::Body, "github-token", 1),
                        (Field::Property("PASSWORD".into()), "password-assignment", 1),
                    ]
                ),
            ]
        );
        assert!(flagged("* Clean\n:PROPERTIES:\n:ID: 8c1d3e0f\n:END:\n").is_empty());
    }

    /// A memo carried from document to document answers for the versions they share as
    /// reading them again would, and never for a version it has not met.
    #[test]
    fn a_memo_answers_for_shared_versions_as_reading_them_would() {
        let text = format!(
            "* Keys\n{TOKEN}\n* Clean\nnothing\n* Other\n:PROPERTIES:\n:PASSWORD: x1\n:END:\n"
        );
        let edited = text.replace("nothing", &format!("now {TOKEN}"));
        let store = Store::in_memory(Config::default());
        for (file, text) in [
            ("/n/a.org", &text),
            ("/n/copy.org", &text),
            ("/n/b.org", &edited),
        ] {
            store.ingest_text(file, text, None, None, None).unwrap();
        }
        let state = store.state();
        let fresh = |file: &str| -> Vec<(u32, Vec<Found>)> {
            super::find(&state.files[file].nodes, &mut super::Memo::default())
                .iter()
                .map(|f| (f.index, f.found.to_vec()))
                .collect()
        };
        let mut memo = super::Memo::default();
        for file in ["/n/a.org", "/n/copy.org", "/n/b.org"] {
            let got: Vec<(u32, Vec<Found>)> = state.files[file]
                .credentials_with(&mut memo)
                .iter()
                .map(|f| (f.index, f.found.to_vec()))
                .collect();
            assert_eq!(got, fresh(file), "{file}");
        }
        assert_eq!(fresh("/n/b.org").len(), 3);
        assert_ne!(fresh("/n/a.org"), fresh("/n/b.org"));
    }

    /// Every node of the shared corpus: what is kept for it is what the gate withholds from
    /// each of its fields (counted by another path, `redact`), and nothing for the rest.
    #[test]
    fn the_corpus_is_flagged_as_the_gate_redacts() {
        let Some(corpus) =
            crate::shared::require("corpus", "the_corpus_is_flagged_as_the_gate_redacts")
        else {
            return;
        };
        let store = Store::in_memory(Config::default());
        for path in Store::org_files_under(std::slice::from_ref(&corpus)) {
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            let _ = store.ingest_text(&path.to_string_lossy(), &text, None, None, None);
        }
        let gate = SecretGate::shared();
        let hits = |text: &str| gate.detector().redact(text).hits;
        let (mut nodes, mut with) = (0, 0);
        let mut memo = super::Memo::default();
        for doc in store.state().files.values() {
            let mut kept = doc.credentials_with(&mut memo).iter().peekable();
            for (i, node) in doc.nodes.iter().enumerate() {
                nodes += 1;
                let c = &node.content;
                let mut want: Vec<(Field, &str, usize)> = Vec::new();
                let mut fields = vec![(Field::Title, c.title.to_string())];
                if !c.body.is_blank() {
                    fields.push((Field::Body, c.body_or_notice().into_owned()));
                }
                for (k, v) in c.properties.iter().filter(|(_, v)| !v.trim().is_empty()) {
                    fields.push((Field::Property(k.clone()), format!(":{k}: {v}")));
                }
                for (field, text) in fields {
                    want.extend(hits(&text).into_iter().map(|(r, n)| (field.clone(), r, n)));
                }
                let mut got = match kept.next_if(|f| f.index == i as u32) {
                    Some(f) => f.found.to_vec(),
                    None => Vec::new(),
                };
                with += usize::from(!got.is_empty());
                want.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
                got.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
                assert_eq!(got, want, "{} node {i}", doc.path);
            }
            assert!(kept.next().is_none(), "{}: flagged out of order", doc.path);
        }
        eprintln!("{nodes} nodes, {with} with credentials");
        assert!(with > 0, "the corpus holds planted credentials");
    }
}
