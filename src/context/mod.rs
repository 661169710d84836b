//! What the LLM is shown of the notes at each step, besides tool results: the node the
//! user is on (in full, with its ancestors' titles and its children) and the outline of
//! the active projects. Rendered as Org, from the store as it is at that step, so an edit
//! the agent just made shows in its next request.

pub mod privacy;

use crate::store::{NodeKind, NodeRef, Query};
use crate::tools::builtin::{render_node, summary};
use crate::tools::Notes;

/// Most active projects shown.
const MAX_PROJECTS: usize = 30;
/// Most children shown under one project.
const MAX_PROJECT_CHILDREN: usize = 8;

/// The context section of the system prompt; empty when there is nothing to show.
pub fn render(notes: &Notes, focus: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(r) = focus.and_then(|id| notes.node(id).ok()) {
        out.push_str("* The node the user is on\n");
        out.push_str(&render_node(&r, notes.privacy));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let mut projects = notes.store.query(&Query {
        kind: Some(NodeKind::Headline),
        projects: true,
        ..Query::default()
    });
    projects.retain(|p| notes.shows(p));
    if !projects.is_empty() {
        out.push_str(&format!("* Active projects ({})\n", projects.len()));
        for p in projects.iter().take(MAX_PROJECTS) {
            out.push_str(&summary(p));
            out.push('\n');
            let children: Vec<NodeRef> = p
                .node()
                .children
                .iter()
                .map(|&index| NodeRef {
                    doc: p.doc.clone(),
                    index,
                })
                .filter(|c| notes.shows(c))
                .collect();
            for c in children.iter().take(MAX_PROJECT_CHILDREN) {
                out.push_str("  ");
                out.push_str(&summary(c));
                out.push('\n');
            }
            if children.len() > MAX_PROJECT_CHILDREN {
                out.push_str(&format!(
                    "  - … {} more\n",
                    children.len() - MAX_PROJECT_CHILDREN
                ));
            }
        }
        if projects.len() > MAX_PROJECTS {
            out.push_str(&format!(
                "- … {} more projects (query_notes with projects: true)\n",
                projects.len() - MAX_PROJECTS
            ));
        }
    }
    out
}
