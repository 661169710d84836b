//! Nodes as Org text for the LLM: one line per node in listings, a whole node for reading.

use super::privacy::{Privacy, WITHHELD};
use crate::store::{NodeContent, NodeKind, NodeRef};

/// Longest body a rendered node shows, in characters.
const MAX_BODY_CHARS: usize = 20_000;

/// "TODO [#A] Title :tags:" — a headline's words as Org writes them.
/// A priority as written in its cookie. Org 9.8 reads `[#12]` as the number 12, which the
/// store keeps as the character of that code, as Lisp does; such codes are control
/// characters, shown as the number.
fn priority_text(p: char) -> String {
    if p.is_control() {
        (p as u32).to_string()
    } else {
        p.to_string()
    }
}

fn headline_words(c: &NodeContent) -> String {
    let mut line = String::new();
    if let Some(k) = &c.todo {
        line.push_str(k);
        line.push(' ');
    }
    if let Some(p) = c.priority {
        line.push_str(&format!("[#{}] ", priority_text(p)));
    }
    line.push_str(&c.title);
    if !c.tags.is_empty() {
        line.push_str(&format!(" :{}:", c.tags.join(":")));
    }
    line
}

/// One line describing a node: TODO keyword, title, tags, planning, and the file's name —
/// no id and no path: for a model that calls no tools, which would only spend its few
/// tokens on them.
pub fn brief(r: &NodeRef) -> String {
    let file = r.doc.path.rsplit('/').next().unwrap_or(&r.doc.path);
    format!("{} ({file})", planned_line(&r.node().content))
}

/// `- KEYWORD Title :tags:` and the node's planning, as the summary lines begin.
fn planned_line(c: &NodeContent) -> String {
    let mut line = format!("- {}", headline_words(c));
    for (label, ts) in [
        ("SCHEDULED", &c.planning.scheduled),
        ("DEADLINE", &c.planning.deadline),
        ("CLOSED", &c.planning.closed),
    ] {
        if let Some(ts) = ts {
            line.push_str(&format!(" {label}: {ts}"));
        }
    }
    line
}

/// One line describing a node: TODO keyword, title, tags, planning, id and file.
pub fn summary(r: &NodeRef) -> String {
    let n = r.node();
    format!(
        "{} (id: {}, file: {})",
        planned_line(&n.content),
        n.id,
        r.doc.path
    )
}

/// Whether a file's preamble sets its title itself (`#+TITLE:`, any case).
fn has_title_keyword(preamble: &str) -> bool {
    preamble.lines().any(|line| {
        line.trim_start()
            .get(..8)
            .is_some_and(|k| k.eq_ignore_ascii_case("#+title:"))
    })
}

/// A node as Org text: outline path, file, headline, planning, properties, body (up to
/// [`MAX_BODY_CHARS`]) and one line per child in `children` (those the reader may see). The
/// values of the properties `privacy` withholds are shown as `[withheld]`, in the drawer and
/// in any property line of the body.
pub(super) fn node(r: &NodeRef, children: &[NodeRef], privacy: &Privacy) -> String {
    let n = r.node();
    let c = &n.content;
    let body = c.body_or_notice();
    let mut out = String::new();
    let path = r.outline_path();
    if !path.is_empty() {
        out.push_str(&format!("Outline path: {}\n", path.join(" / ")));
    }
    out.push_str(&format!("File: {}\nId: {}\n\n", r.doc.path, n.id));
    if c.kind == NodeKind::Headline {
        out.push_str(&format!(
            "{} {}\n",
            "*".repeat(c.level as usize),
            headline_words(c)
        ));
    } else if !has_title_keyword(&body) {
        // The file's own #+TITLE line is in its body, printed below; one named after the
        // file (no #+TITLE) is said once here.
        out.push_str(&format!("#+TITLE: {}\n", c.title));
    }
    let planning: Vec<String> = [
        ("CLOSED", &c.planning.closed),
        ("SCHEDULED", &c.planning.scheduled),
        ("DEADLINE", &c.planning.deadline),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}: {v}")))
    .collect();
    if !planning.is_empty() {
        out.push_str(&planning.join(" "));
        out.push('\n');
    }
    if !c.properties.is_empty() {
        out.push_str(":PROPERTIES:\n");
        for (k, v) in &c.properties {
            let v = if privacy.withholds_property(k) {
                WITHHELD
            } else {
                v
            };
            out.push_str(&format!(":{k}: {v}\n"));
        }
        out.push_str(":END:\n");
    }
    let body: String = privacy
        .withhold_properties(&body)
        .chars()
        .take(MAX_BODY_CHARS)
        .collect();
    out.push_str(&body);
    if body.chars().count() > MAX_BODY_CHARS {
        out.push_str("\n[… body cut here …]\n");
    }
    if !children.is_empty() {
        out.push_str("\nChildren:\n");
        for c in children {
            out.push_str(&summary(c));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::priority_text;

    #[test]
    fn numeric_priorities_show_as_numbers() {
        assert_eq!(priority_text('A'), "A");
        assert_eq!(priority_text('5'), "5");
        assert_eq!(priority_text('\u{c}'), "12");
        assert_eq!(priority_text('\u{0}'), "0");
    }
}
