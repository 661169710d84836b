//! `org-agent-find`'s candidates: one display string per headline, built in one pass over a
//! file's nodes (each outline path from its parent's, not by walking up from every node).

use super::convert::file_name;
use crate::store::{FileDoc, NodeKind, State};
use std::sync::Arc;

/// Call `f` with the index and the display string of every headline of `doc`, in document
/// order. The display is what `org-agent-find` shows: the TODO keyword, the outline path and
/// title joined by `/`, the tags (inherited ones included) and the file's name.
pub fn each_display<E>(
    doc: &FileDoc,
    mut f: impl FnMut(u32, &str) -> Result<(), E>,
) -> Result<(), E> {
    let file = file_name(&doc.path);
    // paths[i]: the outline path node i gives its children, "A/B/" (the file node: "").
    let mut paths: Vec<String> = Vec::with_capacity(doc.nodes.len());
    let mut display = String::new();
    for (i, n) in doc.nodes.iter().enumerate() {
        let parent = n
            .parent()
            .and_then(|p| paths.get(p as usize))
            .map_or("", String::as_str);
        if n.content.kind != NodeKind::Headline {
            paths.push(String::new());
            continue;
        }
        let mut path = String::with_capacity(parent.len() + n.content.title.len() + 1);
        path.push_str(parent);
        path.push_str(&n.content.title);
        display.clear();
        if let Some(k) = &n.content.todo {
            display.push_str(k);
            display.push(' ');
        }
        display.push_str(&path);
        path.push('/');
        paths.push(path);
        let tags = n.all_tags();
        if !tags.is_empty() {
            display.push_str("  :");
            display.push_str(&tags.join(":"));
            display.push(':');
        }
        display.push_str("  — ");
        display.push_str(file);
        f(i as u32, &display)?;
    }
    Ok(())
}

/// The file and node index of the first headline whose display is `display`.
pub fn target(state: &State, display: &str) -> Option<(Arc<FileDoc>, u32)> {
    for doc in state.files.values() {
        let file = file_name(&doc.path);
        let shown_here = display
            .strip_suffix(file)
            .is_some_and(|rest| rest.ends_with("  — "));
        if !shown_here {
            continue;
        }
        let mut found = None;
        let _ = each_display(doc, |i, d| {
            if d == display {
                found = Some(i);
                return Err(());
            }
            Ok(())
        });
        if let Some(i) = found {
            return Some((doc.clone(), i));
        }
    }
    None
}
