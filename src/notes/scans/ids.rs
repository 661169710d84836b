//! The ids skill's scan: an `:ID:` carried by more than one headline (Org's `org-id-find`
//! then finds either), and `id:` links whose id no headline carries. Both are lookups in the
//! store's id map and link index.

use super::{Cx, Finding};
use crate::store::links::LinkKind;
use crate::store::{NodeRef, State};

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let mut out = duplicates(cx);
    out.extend(dangling(cx));
    out
}

/// Every headline but the first (in store order) of those sharing an `:ID:`.
fn duplicates(cx: &Cx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (id, locs) in cx.state.duplicated_ids() {
        // Only the copies the model may see take part: naming a private one would tell it
        // that note exists. A copy is addressed as `ID#N`, N its place among all of them.
        let shown: Vec<(usize, NodeRef)> = locs
            .iter()
            .enumerate()
            .filter_map(|(i, loc)| at(&cx.state, &loc.file, loc.index).map(|r| (i + 1, r)))
            .filter(|(_, r)| covered(cx, r) && cx.shows(r))
            .collect();
        let Some(((_, first), copies)) = shown.split_first() else {
            continue;
        };
        for (nth, copy) in copies {
            out.push(Finding {
                kind: "duplicate-id",
                node: copy.clone(),
                detail: format!(
                    "its :ID: {id} is also on \"{}\" in {}; this copy is {id}#{nth}",
                    first.node().content.title,
                    first.doc.path
                ),
                fix: Some(format!(
                    "delete_property ID with id {id}#{nth} (links to {id} keep leading to the \
                     first); ensure_id it afterwards if it needs an id of its own"
                )),
            });
        }
    }
    // The id map is unordered: report in the order of the notes.
    out.sort_by(|a, b| (&*a.node.doc.path, a.node.index).cmp(&(&*b.node.doc.path, b.node.index)));
    out
}

/// `id:` links to an id no headline has, private ones included (a link to a private note
/// is not broken, and saying so would tell the model it exists).
fn dangling(cx: &Cx) -> Vec<Finding> {
    let mut out = Vec::new();
    for doc in cx.files() {
        for link in doc.links.iter().filter(|l| l.kind == LinkKind::Id) {
            if cx.state.has_id(link.target.as_str()) {
                continue;
            }
            let r = Cx::at(doc, link.node);
            if !cx.shows(&r) {
                continue;
            }
            out.push(Finding {
                kind: "dangling-id-link",
                node: r,
                detail: format!("the link [[id:{}]] leads to no headline", link.target),
                fix: Some(
                    "find the note it meant (search_notes by the link's description) and \
                     point the link at that note's id, or remove the link"
                        .into(),
                ),
            });
        }
    }
    out
}

fn at(state: &State, file: &str, index: u32) -> Option<NodeRef> {
    let doc = state.files.get(file)?;
    ((index as usize) < doc.nodes.len()).then(|| NodeRef {
        doc: doc.clone(),
        index,
    })
}

fn covered(cx: &Cx, r: &NodeRef) -> bool {
    cx.input.file.as_deref().is_none_or(|f| *r.doc.path == *f)
}

#[cfg(test)]
mod tests {
    use super::super::test_notes as notes;
    use super::super::{run, Day, Scan, ScanInput};
    use crate::notes::Privacy;

    fn input() -> ScanInput {
        ScanInput {
            today: Day::parse("2026-11-24").unwrap(),
            file: None,
            inbox: None,
        }
    }

    #[test]
    fn duplicate_ids_and_dangling_links_are_found() {
        let n = notes(
            &[
                (
                    "/n/a.org",
                    "* Plan\n:PROPERTIES:\n:ID: same\n:END:\nSee [[id:same][the plan]] and [[id:gone][old]].\n",
                ),
                ("/n/b.org", "* Copy of the plan\n:PROPERTIES:\n:ID: same\n:END:\n"),
            ],
            Privacy::default(),
        );
        let report = run(&n, Scan::Ids, &input()).unwrap();
        assert_eq!(
            report.counts(),
            vec![("duplicate-id", 1), ("dangling-id-link", 1)]
        );
        assert_eq!(
            &*report.findings[0].node.node().content.title,
            "Copy of the plan"
        );
        assert!(report.findings[1].detail.contains("id:gone"));
        assert!(report.text(10).contains("[dangling-id-link] - Plan"));
    }

    #[test]
    fn private_notes_are_neither_reported_nor_named() {
        let privacy = Privacy::new(["private".to_string()], []);
        let n = notes(
            &[
                ("/n/a.org", "* Plan\n:PROPERTIES:\n:ID: same\n:END:\n[[id:secret-one]]\n"),
                (
                    "/n/b.org",
                    "* Diary :private:\n:PROPERTIES:\n:ID: same\n:END:\n* Hidden :private:\n:PROPERTIES:\n:ID: secret-one\n:END:\n[[id:nowhere]]\n",
                ),
            ],
            privacy,
        );
        let report = run(&n, Scan::Ids, &input()).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }
}
