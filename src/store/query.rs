//! Queries over a [`State`]: by file, kind, tag, TODO, property, planning dates; active
//! projects, recently completed tasks, sparse trees and outline paths.

use super::file_doc::{FileDoc, NodeRef};
use super::node::{Node, NodeKind, TodoType};
use super::state::State;
use super::Store;
use std::sync::Arc;

/// A date as written in Org timestamps, compared as `YYYY-MM-DD`.
pub type Date = String;

/// The date part of an Org timestamp such as `<2024-03-01 Fri 10:00 +1w>`.
pub fn timestamp_date(ts: &str) -> Option<&str> {
    let inner = ts.get(1..11)?;
    let b = inner.as_bytes();
    let ok = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    ok.then_some(inner)
}

/// Conditions, all of which a node must meet. `Default` matches every node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    pub file: Option<String>,
    pub kind: Option<NodeKind>,
    /// Own or inherited tag.
    pub tag: Option<String>,
    /// Own tag only.
    pub own_tag: Option<String>,
    pub todo: Option<String>,
    pub todo_type: Option<TodoType>,
    /// A property key, and optionally the value it must have.
    pub property: Option<(String, Option<String>)>,
    pub scheduled_before: Option<Date>,
    pub scheduled_after: Option<Date>,
    pub deadline_before: Option<Date>,
    pub deadline_after: Option<Date>,
    /// CLOSED on or after this date.
    pub closed_since: Option<Date>,
    pub level: Option<u32>,
    /// Active projects: own tag `project` and not done.
    pub projects: bool,
    /// Add the ancestors of every match (a sparse tree), in document order.
    pub sparse: bool,
    pub limit: Option<usize>,
}

impl Query {
    pub fn matches(&self, n: &Node) -> bool {
        let c = &n.content;
        if self.kind.is_some_and(|k| k != c.kind) {
            return false;
        }
        if self.tag.as_deref().is_some_and(|t| !n.has_tag(t)) {
            return false;
        }
        if self.own_tag.as_deref().is_some_and(|t| !c.has_tag(t)) {
            return false;
        }
        if self
            .todo
            .as_deref()
            .is_some_and(|t| c.todo.as_deref() != Some(t))
        {
            return false;
        }
        if self.todo_type.is_some_and(|t| c.todo_type != Some(t)) {
            return false;
        }
        if let Some((key, value)) = &self.property {
            match (c.property(key), value) {
                (None, _) => return false,
                (Some(v), Some(want)) if v != want => return false,
                _ => {}
            }
        }
        // Dates are compared as text slices of the timestamps, and only when a bound asks:
        // a query over every node must not allocate per node.
        fn date(ts: &Option<String>) -> Option<&str> {
            ts.as_deref().and_then(timestamp_date)
        }
        let before = |ts: &Option<String>, bound: &Option<Date>| match bound {
            None => true,
            Some(b) => date(ts).is_some_and(|d| d < b.as_str()),
        };
        let after = |ts: &Option<String>, bound: &Option<Date>| match bound {
            None => true,
            Some(b) => date(ts).is_some_and(|d| d > b.as_str()),
        };
        let p = &c.planning;
        if !before(&p.scheduled, &self.scheduled_before)
            || !after(&p.scheduled, &self.scheduled_after)
            || !before(&p.deadline, &self.deadline_before)
            || !after(&p.deadline, &self.deadline_after)
        {
            return false;
        }
        if let Some(since) = &self.closed_since {
            if date(&p.closed).is_none_or(|d| d < since.as_str()) {
                return false;
            }
        }
        if self.level.is_some_and(|l| l != u32::from(c.level)) {
            return false;
        }
        if self.projects
            && (c.kind != NodeKind::Headline
                || !c.has_tag("project")
                || c.todo_type == Some(TodoType::Done))
        {
            return false;
        }
        true
    }

    /// Candidate node indexes of one document, using its indexes where the query allows.
    fn candidates<'d>(&self, doc: &'d FileDoc) -> Box<dyn Iterator<Item = u32> + 'd> {
        if let Some(t) = &self.tag {
            return Box::new(doc.tagged(t));
        }
        if let Some(t) = &self.own_tag {
            return match doc.tag_index.get(t) {
                Some(v) => Box::new(v.iter().copied()),
                None => Box::new(std::iter::empty()),
            };
        }
        if self.projects {
            return match doc.tag_index.get("project") {
                Some(v) => Box::new(v.iter().copied()),
                None => Box::new(std::iter::empty()),
            };
        }
        if let Some(k) = &self.todo {
            return match doc.todo_index.get(k) {
                Some(v) => Box::new(v.iter().copied()),
                None => Box::new(std::iter::empty()),
            };
        }
        Box::new(0..doc.nodes.len() as u32)
    }

    /// Whether the index [`Query::candidates`] picks holds exactly the matching nodes: the
    /// query asks nothing else (but which file, and how many).
    fn index_decides(&self) -> bool {
        let mut rest = Query {
            file: None,
            limit: None,
            ..self.clone()
        };
        if rest.tag.is_some() {
            // The inherited-tag walk is not an index; `matches` decides.
            return false;
        }
        if rest.own_tag.take().is_none() && !rest.projects {
            rest.todo = None;
        }
        rest == Query::default()
    }

    /// The tag, own or inherited, when the query asks nothing else (but which file, and how
    /// many): [`FileDoc::count_tagged`] counts it without reading each node.
    fn only_tag(&self) -> Option<&str> {
        let tag = self.tag.as_deref()?;
        let rest = Query {
            file: None,
            limit: None,
            tag: None,
            ..self.clone()
        };
        (rest == Query::default()).then_some(tag)
    }

    /// How many nodes [`Query::run`] would return, without making them: a count over a
    /// million headlines must not touch each hit.
    pub fn count(&self, state: &State) -> usize {
        if self.sparse {
            return self.run(state).len();
        }
        let docs: Box<dyn Iterator<Item = &Arc<FileDoc>>> = match &self.file {
            Some(f) => Box::new(state.files.get(f.as_str()).into_iter()),
            None => Box::new(state.files.values()),
        };
        let decides = self.index_decides();
        let only_tag = self.only_tag();
        let limit = self.limit.unwrap_or(usize::MAX);
        let mut n = 0;
        for doc in docs {
            n += if decides {
                self.candidates(doc).count()
            } else if let Some(tag) = only_tag {
                doc.count_tagged(tag)
            } else {
                self.candidates(doc)
                    .filter(|&i| self.matches(&doc.nodes[i as usize]))
                    .count()
            };
            if n >= limit {
                return limit;
            }
        }
        n
    }

    pub fn run(&self, state: &State) -> Vec<NodeRef> {
        let mut out = Vec::new();
        let limit = self.limit.unwrap_or(usize::MAX);
        let docs: Box<dyn Iterator<Item = &Arc<FileDoc>>> = match &self.file {
            Some(f) => Box::new(state.files.get(f.as_str()).into_iter()),
            None => Box::new(state.files.values()),
        };
        for doc in docs {
            let mut hits: Vec<u32> = self
                .candidates(doc)
                .filter(|&i| self.matches(&doc.nodes[i as usize]))
                .collect();
            if self.sparse {
                let mut keep = vec![false; doc.nodes.len()];
                for &i in &hits {
                    let mut cur = Some(i);
                    while let Some(c) = cur {
                        if keep[c as usize] {
                            break;
                        }
                        keep[c as usize] = true;
                        cur = doc.nodes[c as usize].parent();
                    }
                }
                hits = (0..doc.nodes.len() as u32)
                    .filter(|&i| keep[i as usize])
                    .collect();
            }
            for i in hits {
                if out.len() >= limit {
                    return out;
                }
                out.push(NodeRef {
                    doc: doc.clone(),
                    index: i,
                });
            }
        }
        out
    }
}
impl Store {
    pub fn node(&self, id: &str) -> Option<NodeRef> {
        self.state().node(id)
    }

    /// The innermost node of `file` whose subtree holds buffer position `pos` (as of the
    /// file's last ingest): the headline at or above point, or the file node before the
    /// first headline.
    pub fn node_at(&self, file: &str, pos: u32) -> Option<NodeRef> {
        let doc = self.state().files.get(file)?.clone();
        // Nodes are in document order, so the last one starting at or before `pos` whose
        // subtree reaches past it is the innermost.
        let index = doc
            .nodes
            .iter()
            .rposition(|n| n.begin_pos <= pos && pos <= n.end_pos)
            .or_else(|| (!doc.nodes.is_empty()).then_some(0))?;
        Some(NodeRef {
            doc,
            index: index as u32,
        })
    }

    pub fn query(&self, q: &Query) -> Vec<NodeRef> {
        q.run(&self.state())
    }

    pub fn count(&self, q: &Query) -> usize {
        q.count(&self.state())
    }
}
