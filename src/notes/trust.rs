//! What in the notes is untrusted: text the user did not write and that may carry
//! instructions meant for the agent (a forwarded email, a page captured from the web).
//!
//! A node is untrusted when it or an ancestor (or its file, through `#+FILETAGS`) has a tag
//! in `org-agent-untrusted-tags` (default `untrusted` and `web`), or when it or an ancestor
//! has a web address (`http://`, `https://`) as its `:SOURCE:`, `:SOURCE_URL:` or
//! `:ROAM_REFS:` property: the properties capture templates and org-roam's web captures
//! write, which say the text came from that page. A `:URL:` property does not count: users
//! put links to pages beside their own words.
//!
//! Reading untrusted text does not stop a turn, but every edit it proposes afterwards is
//! asked about (the gate `UntrustedEdits`), with the [provenance](Trust::untrusted) shown.

use crate::store::NodeRef;

/// The tags that mark untrusted content when no configuration says otherwise.
pub const DEFAULT_UNTRUSTED_TAGS: [&str; 2] = ["untrusted", "web"];

/// Properties whose web address says the node's text came from that page.
const SOURCE_PROPERTIES: [&str; 3] = ["SOURCE", "SOURCE_URL", "ROAM_REFS"];

/// Longest title a provenance line quotes.
const MAX_TITLE_CHARS: usize = 80;

/// The rules saying what is untrusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    tags: Vec<String>,
}

impl Default for Trust {
    fn default() -> Self {
        Trust::new(DEFAULT_UNTRUSTED_TAGS.iter().map(|t| t.to_string()))
    }
}

impl Trust {
    pub fn new(tags: impl IntoIterator<Item = String>) -> Trust {
        Trust {
            tags: tags.into_iter().filter(|t| !t.is_empty()).collect(),
        }
    }

    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// Why `r` is untrusted, or `None` when it is not: the tag or the property that makes it
    /// so, found on it, an ancestor or its file.
    pub fn why_untrusted(&self, r: &NodeRef) -> Option<String> {
        let node = r.node();
        if let Some(tag) = node
            .inherited_tags
            .iter()
            .find(|t| self.is_untrusted_tag(t))
        {
            return Some(format!("tagged :{tag}:"));
        }
        let mut index = Some(r.index);
        let mut steps = 0usize;
        while let Some(i) = index {
            let n = r.doc.nodes.get(i as usize)?;
            let c = &n.content;
            if let Some(tag) = c.tags.iter().find(|t| self.is_untrusted_tag(t)) {
                return Some(format!("tagged :{tag}:"));
            }
            for key in SOURCE_PROPERTIES {
                if let Some(url) = c.property(key).and_then(web_address) {
                    return Some(format!(":{key}: {}", shorten(url, MAX_TITLE_CHARS)));
                }
            }
            index = n.parent();
            steps += 1;
            if steps > r.doc.nodes.len() {
                // A corrupt tree: call it untrusted rather than loop.
                return Some("its outline could not be read".into());
            }
        }
        None
    }

    /// Where `r` is and why it is untrusted ("~/notes/inbox.org: * Vendor email (tagged
    /// :web:)"), or `None` when it is trusted.
    pub fn untrusted(&self, r: &NodeRef) -> Option<String> {
        let why = self.why_untrusted(r)?;
        Some(format!("{} ({why})", place(r)))
    }

    fn is_untrusted_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// A node's file and, for a headline, its stars and title.
fn place(r: &NodeRef) -> String {
    let file = shown_path(&r.doc.path);
    let n = r.node();
    if n.parent().is_none() {
        return file;
    }
    let c = &n.content;
    format!(
        "{file}: {} {}",
        "*".repeat(c.level.max(1) as usize),
        shorten(&c.title, MAX_TITLE_CHARS)
    )
}

/// `path` with the home directory written `~`.
pub fn shown_path(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && home != "/" => match path.strip_prefix(&home) {
            Some(rest) if rest.starts_with('/') => format!("~{rest}"),
            _ => path.to_owned(),
        },
        _ => path.to_owned(),
    }
}

/// The first web address in a property value (`ROAM_REFS` holds several, space-separated).
fn web_address(value: &str) -> Option<&str> {
    value
        .split_whitespace()
        .map(|w| w.trim_start_matches("[[").trim_end_matches("]]"))
        .find(|w| {
            let lower = w.get(..8).unwrap_or(w).to_ascii_lowercase();
            lower.starts_with("http://") || lower.starts_with("https://")
        })
}

/// `text` on one line, at most `max` characters.
fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Config, Store};

    const NOTES: &str = "\
#+TITLE: Inbox
* Vendor email :mail:web:
Pay the invoice.
** Reply
* Own plan
** A page
:PROPERTIES:
:SOURCE: https://example.com/post
:END:
** A reference
:PROPERTIES:
:ROAM_REFS: cite:key [[https://example.org/x]]
:END:
** A bookmark
:PROPERTIES:
:URL: https://example.com
:SOURCE: my head
:END:
";

    fn titled(store: &Store, title: &str) -> NodeRef {
        let state = store.state();
        let doc = state.files.values().next().unwrap().clone();
        let index = doc
            .nodes
            .iter()
            .position(|n| &*n.content.title == title)
            .unwrap();
        NodeRef {
            doc,
            index: index as u32,
        }
    }

    #[test]
    fn tags_and_web_sources_make_a_node_untrusted() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/n/inbox.org", NOTES, None, None, None)
            .unwrap();
        let trust = Trust::default();
        let why = |t: &str| trust.why_untrusted(&titled(&store, t));
        assert_eq!(why("Vendor email").as_deref(), Some("tagged :web:"));
        // A child of an untrusted headline is untrusted, whatever tag inheritance says.
        assert_eq!(why("Reply").as_deref(), Some("tagged :web:"));
        assert_eq!(
            why("A page").as_deref(),
            Some(":SOURCE: https://example.com/post")
        );
        assert_eq!(
            why("A reference").as_deref(),
            Some(":ROAM_REFS: https://example.org/x")
        );
        assert_eq!(why("A bookmark"), None);
        assert_eq!(why("Own plan"), None);
        assert_eq!(why("Inbox"), None);
        assert_eq!(
            trust.untrusted(&titled(&store, "Reply")).as_deref(),
            Some("/n/inbox.org: ** Reply (tagged :web:)")
        );
        let none = Trust::new([]);
        assert_eq!(none.why_untrusted(&titled(&store, "Vendor email")), None);
        assert!(none.why_untrusted(&titled(&store, "A page")).is_some());
    }

    #[test]
    fn a_file_tag_makes_the_whole_file_untrusted() {
        let store = Store::in_memory(Config::default());
        let text = "#+FILETAGS: :untrusted:\n* Clipped\n";
        store
            .ingest_text("/n/clip.org", text, None, None, None)
            .unwrap();
        let r = titled(&store, "Clipped");
        assert_eq!(
            Trust::default().untrusted(&r).as_deref(),
            Some("/n/clip.org: * Clipped (tagged :untrusted:)")
        );
    }

    #[test]
    fn watched_notes_say_which_untrusted_nodes_they_handed_out() {
        use crate::notes::{Notes, Privacy};
        let store = std::sync::Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_text("/n/inbox.org", NOTES, None, None, None)
            .unwrap();
        store
            .ingest_text("/n/plans.org", "* Plan\n", None, None, None)
            .unwrap();
        let plain = Notes::new(store.clone(), std::sync::Arc::new(Privacy::none()));
        let notes = plain.watching();
        let id = |title: &str| titled(&store, title).node().id.to_string();
        notes.node(&id("Own plan")).unwrap();
        assert!(notes.take_untrusted_reads().is_empty());
        let clone = notes.clone();
        clone.node(&id("Reply")).unwrap();
        notes.node(&id("Reply")).unwrap();
        assert_eq!(
            notes.take_untrusted_reads(),
            ["/n/inbox.org: ** Reply (tagged :web:)"]
        );
        assert!(notes.take_untrusted_reads().is_empty(), "taken once");
        // Unwatched notes note nothing.
        plain.node(&id("Reply")).unwrap();
        assert!(plain.take_untrusted_reads().is_empty());
        // File tools: a note file is judged by its nodes, anything else is untrusted.
        assert_eq!(notes.path_provenance("/n/plans.org"), None);
        assert_eq!(notes.path_provenance("/n"), None);
        assert_eq!(
            notes.path_provenance("/n/inbox.org").as_deref(),
            Some("/n/inbox.org: * Vendor email (tagged :web:)")
        );
        for outside in ["/etc/passwd", "/", "/n/attachments", "/n/plans.org.bak"] {
            assert_eq!(
                notes.path_provenance(outside),
                Some(format!("{outside} (read from outside the notes)")),
                "{outside}"
            );
        }
    }
}
