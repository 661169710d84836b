//! The links of a file, indexed when it is ingested: Org bracket links (`[[id:X][desc]]`,
//! `[[file:notes.org::*Heading]]`, `[[./notes.org]]`) in titles and bodies, so questions
//! such as "which `id:` links lead nowhere" are lookups, not text scans.

use super::body::find_link_open;
use super::node::Node;

/// What a link leads to, as Org reads its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// `id:` — a node's `:ID:`.
    Id,
    /// `file:`, or a bare path (`./x.org`, `/x.org`, `~/x.org`, `../x.org`).
    File,
}

/// One link: the node it is written in (an index of the file's node list) and its target,
/// the part after the type prefix (`X` of `id:X`; the path of a `file:` link, without its
/// `::search` option).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub node: u32,
    pub kind: LinkKind,
    pub target: String,
    /// The `::` search option of a file link (`*Heading`, `#custom-id`, a line number).
    pub search: Option<String>,
}

/// The links of `nodes`, in document order (title before body, each in text order).
pub fn index(nodes: &[Node]) -> Vec<Link> {
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        // A body left in the log holds no `[[` (see `body`): nothing to read there.
        let body = outside_blocks(n.content.body.resident().unwrap_or_default());
        for text in [&*n.content.title, body.as_ref()] {
            for raw in bracket_targets(text) {
                if let Some((kind, target, search)) = classify(raw) {
                    out.push(Link {
                        node: i as u32,
                        kind,
                        target,
                        search,
                    });
                }
            }
        }
    }
    out
}

/// `body` without the lines of its blocks (`#+begin_src` … `#+end_src`, examples, quotes
/// of code), where a link is text about links, not a link.
fn outside_blocks(body: &str) -> std::borrow::Cow<'_, str> {
    // Most bodies hold no link at all: one substring search, before looking at any line.
    if find_link_open(body.as_bytes()).is_none() {
        return std::borrow::Cow::Borrowed(body);
    }
    let verbatim_lines = body.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("#+") || l == ":" || l.starts_with(": ")
    });
    if !verbatim_lines {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len());
    let mut inside = false;
    for line in body.split_inclusive('\n') {
        let l = line.trim_start();
        let opens = l
            .get(..8)
            .is_some_and(|h| h.eq_ignore_ascii_case("#+begin_"));
        let closes = l.get(..6).is_some_and(|h| h.eq_ignore_ascii_case("#+end_"));
        let verbatim_block = opens
            && !l.get(8..).is_some_and(|k| {
                let k = k.to_ascii_lowercase();
                k.starts_with("quote") || k.starts_with("center") || k.starts_with("verse")
            });
        // `: text` is a fixed-width line: verbatim, as a block is.
        let fixed_width = l == ":" || l.starts_with(": ") || l.starts_with(":\n");
        if !inside && verbatim_block {
            inside = true;
        } else if inside && closes {
            inside = false;
        } else if !inside && !fixed_width {
            out.push_str(line);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The link part (between `[[` and `]` or `][`) of every bracket link in `text`; a link
/// right after `=` or `~` is verbatim text, not a link.
fn bracket_targets(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(at) = bytes.get(from..).and_then(find_link_open) {
            let start = from + at + 2;
            let verbatim = from + at > 0 && matches!(bytes[from + at - 1], b'=' | b'~');
            // A link's path ends at the first `]`; Org escapes a literal one as `\]`.
            let mut end = start;
            while end < bytes.len() {
                match bytes[end] {
                    b'\\' if end + 1 < bytes.len() && bytes[end + 1].is_ascii() => end += 2,
                    b']' => break,
                    b'\n' => break,
                    _ => end += 1,
                }
            }
            from = end.min(bytes.len());
            if end < bytes.len() && bytes[end] == b']' && end > start && !verbatim {
                return text.get(start..end);
            }
        }
        None
    })
}

fn classify(raw: &str) -> Option<(LinkKind, String, Option<String>)> {
    let raw = raw.trim();
    if let Some(id) = strip_type(raw, "id") {
        let id = id.trim();
        // `id:X::search` is Org's search option on an id link; the id is before it.
        let id = id.split("::").next().unwrap_or(id);
        return (!id.is_empty()).then(|| (LinkKind::Id, id.to_string(), None));
    }
    let path = match strip_type(raw, "file") {
        Some(p) => p,
        None if ["./", "../", "/", "~/"].iter().any(|p| raw.starts_with(p)) => raw,
        None => return None,
    };
    let (path, search) = match path.split_once("::") {
        Some((p, s)) => (p, Some(s.to_string())),
        None => (path, None),
    };
    (!path.is_empty()).then(|| (LinkKind::File, unescape(path), search))
}

/// `raw` without its link type `kind:` (any case), or `None` when it has another type.
fn strip_type<'a>(raw: &'a str, kind: &str) -> Option<&'a str> {
    let head = raw.get(..kind.len())?;
    let rest = raw.get(kind.len()..)?;
    if head.eq_ignore_ascii_case(kind) {
        rest.strip_prefix(':')
    } else {
        None
    }
}

fn unescape(path: &str) -> String {
    path.replace("\\]", "]").replace("\\[", "[")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(text: &str) -> Vec<(LinkKind, String, Option<String>)> {
        bracket_targets(text).filter_map(classify).collect()
    }

    #[test]
    fn id_and_file_links_are_found_and_others_left_out() {
        let got = targets(
            "See [[id:abc-123][the plan]], [[file:~/org/a.org::*Goals][goals]],\n\
             [[./b.org]], [[https://example.org][web]], [[ID:Up]] and [[id:x::*h]].",
        );
        assert_eq!(
            got,
            vec![
                (LinkKind::Id, "abc-123".into(), None),
                (LinkKind::File, "~/org/a.org".into(), Some("*Goals".into())),
                (LinkKind::File, "./b.org".into(), None),
                (LinkKind::Id, "Up".into(), None),
                (LinkKind::Id, "x".into(), None),
            ]
        );
    }

    #[test]
    fn unfinished_and_empty_links_are_not_links() {
        assert!(targets("[[id:abc").is_empty());
        assert!(targets("[[]] [[id:]] [[file:]]").is_empty());
        assert!(targets("[[id:a\nb]]").is_empty());
        assert_eq!(targets("[[file:a\\]b.org]]")[0].1, "a]b.org");
        assert!(targets("[[aé:x]] [[éa]] [[ié]]").is_empty());
        assert!(targets("=[[id:a]]= ~[[id:b]]~").is_empty());
    }

    #[test]
    fn links_in_code_and_example_blocks_are_text() {
        let body = "[[id:a]]\n: [[id:fixed]]\n:PROPERTIES:\n#+begin_src org\n[[id:b]]\n#+END_SRC\n#+BEGIN_EXAMPLE\n[[id:c]]\n#+end_example\n#+begin_quote\n[[id:d]]\n#+end_quote\n";
        let kept = outside_blocks(body);
        let got: Vec<String> = targets(&kept).into_iter().map(|t| t.1).collect();
        assert_eq!(got, ["a", "d"]);
    }
}
