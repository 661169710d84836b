//! Inherited tags: shared chains rather than one list per node, and what Org makes of them.
//!
//! A node's inherited tags are a chain of links, innermost first: one link per ancestor (or
//! `#+FILETAGS`) that passes tags down, holding that ancestor's own tag list (the same
//! allocation as its content's, unless tags excluded from inheritance had to be left out)
//! and the link above it. Every node below an ancestor shares its link, so the memory is
//! bounded by the tags written: 10,000 tags on a headline over 10,000 children that each
//! pass a tag of their own down were 100 million strings as one list per parent.
//!
//! What the lists mean follows `org-get-tags`, on which Org 9.5 to 9.8 agree (checked by
//! `tests/elisp/org-agent-fidelity-test.el` under each): all tags are the file tags, then
//! each ancestor's outermost first, then the node's own, each tag kept at its last (most
//! local) place; those that are not the node's own are the inherited ones. Own tags stay as
//! written, repeats included, as `org-element`'s `:tags` has them in every series. (The
//! scanner behind `org-map-entries` and the agenda keeps every repeat in Org 9.5 and
//! `org-get-tags`'s order from 9.6; nothing the store shows follows it.)
//!
//! Inherited tags are derived, not persisted: the log's placement record has room for a
//! list per node (`persist.rs`), and now holds only, in the file node's, [`DERIVED`] and the
//! tags of the file that were excluded from inheritance, so that reading the log derives
//! the chains as parsing did without the settings. A log written before holds each node's
//! whole list there; it reads the same (see [`excluded_in_log`]).

use super::node::{InheritedTags, Node, Tags, NO_PARENT};
use rustc_hash::FxHashSet as HashSet;

/// The first entry of the file node's logged list in a log whose inherited tags are derived:
/// no tag has a blank in it, so no list logged before starts so.
pub(super) const DERIVED: &str = "org-agent: inherited tags derived";

/// Give every node of a file (document order, index 0 the file node, whose own tags are the
/// file tags) its inherited tags, leaving out those `excluded` names. The file node keeps
/// what the log is to record (see the module's comment).
pub(super) fn derive(nodes: &mut [Node], excluded: impl Fn(&str) -> bool) {
    // What each node passes to its children, worked out at its first child.
    let mut passed: Vec<Option<InheritedTags>> = vec![None; nodes.len()];
    let mut left_out: Vec<String> = Vec::new();
    for i in 1..nodes.len() {
        let p = nodes[i].parent as usize;
        if nodes[i].parent == NO_PARENT || p >= i {
            continue;
        }
        if passed[p].is_none() {
            // The file node's own link is only the log's record.
            let up = (p != 0).then(|| &nodes[p].inherited_tags);
            let own = &nodes[p].content.tags;
            let tags = if own.iter().any(|t| excluded(t)) {
                for t in own.iter().filter(|t| excluded(t)) {
                    if !left_out.contains(t) {
                        left_out.push(t.clone());
                    }
                }
                Tags::from(
                    own.iter()
                        .filter(|t| !excluded(t))
                        .cloned()
                        .collect::<Vec<_>>(),
                )
            } else {
                own.clone()
            };
            passed[p] = Some(InheritedTags::passing(up, tags));
        }
        if let Some(tags) = &passed[p] {
            nodes[i].inherited_tags = tags.clone();
        }
    }
    if let Some(file) = nodes.first_mut() {
        let logged: Vec<String> = std::iter::once(DERIVED.to_string())
            .chain(left_out)
            .collect();
        file.inherited_tags = InheritedTags::logged_only(Tags::from(logged));
    }
}

/// The tags excluded from inheritance when `logged` (each node's list in the log's placement
/// record, in document order) was written, for [`derive`]: the file node's list says so in
/// a log whose inherited tags are derived. In one written before, each node's list is the
/// tags it inherited, so a parent's own tags missing from its first child's list were
/// excluded. `own` and `parent` give a node's own tags and its parent's index.
pub(super) fn excluded_in_log<'a>(
    logged: &'a [Vec<String>],
    own: impl Fn(usize) -> &'a [String],
    parent: impl Fn(usize) -> Option<u32>,
) -> HashSet<&'a str> {
    match logged.first() {
        Some(first) if first.first().map(String::as_str) == Some(DERIVED) => {
            first[1..].iter().map(String::as_str).collect()
        }
        _ => {
            let mut out = HashSet::default();
            let mut seen_parent: HashSet<u32> = HashSet::default();
            for (i, list) in logged.iter().enumerate().skip(1) {
                let Some(p) = parent(i).filter(|&p| (p as usize) < i) else {
                    continue;
                };
                if !seen_parent.insert(p) {
                    continue;
                }
                let have: HashSet<&str> = list.iter().map(String::as_str).collect();
                out.extend(
                    own(p as usize)
                        .iter()
                        .map(String::as_str)
                        .filter(|t| !have.contains(t)),
                );
            }
            out
        }
    }
}
