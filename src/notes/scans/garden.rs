//! The gardener's scan: the small rot of a collection of notes, each kind a question the
//! store answers without reading text again.
//!
//! - `broken-file-link`: a `file:` link (the link index) whose target is not on disk,
//!   resolved as Org does: relative to the note's directory, `~` expanded. Each distinct
//!   path is asked of the file system once per scan.
//! - `empty-headline`: a headline with no title (`* TODO`, `** :tag:`, a line of stars):
//!   nothing in an agenda or an outline says what it is. A one-line task is not empty.
//! - `duplicate-title`: two headlines under the same parent with the same title (case and
//!   spacing aside). The same title under different parents is how outlines work (every
//!   project has its "Notes"), so only siblings count.
//! - `bad-timestamp`: a SCHEDULED/DEADLINE/CLOSED date, or a date in a property, that is
//!   no day of the calendar (`<2024-02-30>`, `<2026-13-01>`, `<2026-1-5>`): Org either
//!   ignores it or silently reads another day.
//! - `tag-variant`: a tag that is a spelling variant of a more common one in the same notes
//!   (case, `_`, plural, an abbreviation such as `proj` for `project`).
//!
//! `id:` links that lead nowhere are the ids skill's (`dangling-id-link` of its scan); the
//! gardener does not report them again.

use super::{Cx, Day, Finding};
use crate::notes::paths::home_dir;
use crate::store::links::LinkKind;
use crate::store::{FileDoc, NodeKind, NodeRef};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file the scan covers, with whether the model may see each of its nodes.
type Shown<'a> = (&'a Arc<FileDoc>, Vec<bool>);

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    // Whether each node may be shown, asked once per node.
    let files: Vec<Shown> = cx
        .files()
        .map(|doc| {
            let shown = (0..doc.nodes.len() as u32)
                .map(|i| cx.shows(&Cx::at(doc, i)))
                .collect();
            (doc, shown)
        })
        .collect();
    let variants = tag_variants(&files);
    let mut exists = Exists::default();
    let mut out = Vec::new();
    for (doc, shown) in &files {
        let (doc, shown) = (*doc, shown.as_slice());
        let mut found = Vec::new();
        broken_file_links(cx, doc, shown, &mut exists, &mut found);
        for (i, node) in doc.nodes.iter().enumerate() {
            if !shown[i] || node.content.kind != NodeKind::Headline {
                continue;
            }
            let r = At {
                doc,
                index: i as u32,
            };
            empty_headline(&r, &mut found);
            bad_timestamps(&r, &mut found);
            tag_variant(&r, &variants, &mut found);
        }
        duplicate_titles(doc, shown, &mut found);
        // Each kind was found in document order; report the file in document order.
        found.sort_by_key(|f: &Finding| f.node.index);
        out.extend(found);
    }
    out
}

/// A node of a file, named without taking a reference to the file (a [`NodeRef`] is made
/// only for a finding: most nodes have none).
struct At<'a> {
    doc: &'a Arc<FileDoc>,
    index: u32,
}

impl At<'_> {
    fn node(&self) -> &crate::store::Node {
        &self.doc.nodes[self.index as usize]
    }

    fn to_ref(&self) -> NodeRef {
        Cx::at(self.doc, self.index)
    }
}

/// Whether paths exist, each asked of the file system once.
#[derive(Default)]
struct Exists {
    home: Option<PathBuf>,
    seen: FxHashMap<PathBuf, bool>,
    /// The notes by file name, made when a first link is broken.
    by_name: Option<FxHashMap<String, Vec<Arc<FileDoc>>>>,
}

impl Exists {
    fn check(&mut self, path: PathBuf) -> bool {
        if let Some(&known) = self.seen.get(&path) {
            return known;
        }
        // `metadata` follows symbolic links: a link to nothing is a broken link.
        let known = std::fs::metadata(&path).is_ok();
        self.seen.insert(path, known);
        known
    }

    /// A note the model may see whose file has the name of `path`, the only one of that
    /// name: where a moved note probably went.
    fn elsewhere(&mut self, cx: &Cx, path: &Path) -> Option<Arc<str>> {
        let name = path.file_name()?.to_str()?;
        let by_name = self.by_name.get_or_insert_with(|| {
            let mut m: FxHashMap<String, Vec<Arc<FileDoc>>> = FxHashMap::default();
            for doc in cx.state.files.values() {
                if let Some(n) = Path::new(&*doc.path).file_name().and_then(|n| n.to_str()) {
                    m.entry(n.to_string()).or_default().push(doc.clone());
                }
            }
            m
        });
        let [doc] = by_name.get(name)?.as_slice() else {
            return None;
        };
        (!cx.notes.privacy.hides_file(&doc.path) && cx.shows(&Cx::at(doc, 0)))
            .then(|| doc.path.clone())
    }

    fn home(&mut self) -> &Path {
        self.home.get_or_insert_with(home_dir)
    }
}

/// Where a `file:` link's target is, or `None` when it cannot be checked here: a remote
/// (TRAMP) path, or one naming environment variables.
fn link_path(target: &str, doc_dir: &Path, exists: &mut Exists) -> Option<PathBuf> {
    let target = target.trim();
    // `/ssh:host:/x`, `/sudo::/etc/x`: another machine or another user's view.
    let tramp = target.strip_prefix('/').is_some_and(|rest| {
        rest.split('/')
            .next()
            .is_some_and(|first| first.contains(':'))
    });
    if target.is_empty() || tramp || target.contains('$') {
        return None;
    }
    if target == "~" {
        return Some(exists.home().to_path_buf());
    }
    if let Some(rest) = target.strip_prefix("~/") {
        return Some(exists.home().join(rest));
    }
    if target.starts_with('~') {
        // `~user/…`: another user's home, not worth a lookup of the password database.
        return None;
    }
    Some(doc_dir.join(target))
}

fn broken_file_links(
    cx: &Cx,
    doc: &Arc<FileDoc>,
    shown: &[bool],
    exists: &mut Exists,
    out: &mut Vec<Finding>,
) {
    let doc_dir = Path::new(&*doc.path)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut last: Option<(u32, &str)> = None;
    for link in doc.links.iter().filter(|l| l.kind == LinkKind::File) {
        if !shown.get(link.node as usize).copied().unwrap_or(false) {
            continue;
        }
        // The same target twice in one node is one problem.
        if last == Some((link.node, link.target.as_str())) {
            continue;
        }
        last = Some((link.node, link.target.as_str()));
        let Some(path) = link_path(&link.target, &doc_dir, exists) else {
            continue;
        };
        if exists.check(path.clone()) {
            continue;
        }
        let mut detail = format!(
            "the link [[file:{}]] leads to {}, which does not exist",
            link.target,
            path.display()
        );
        if let Some(moved) = exists.elsewhere(cx, &path) {
            detail.push_str(&format!("; a note of that name is at {moved}"));
        }
        out.push(Finding {
            kind: "broken-file-link",
            node: Cx::at(doc, link.node),
            detail,
            fix: Some(
                "find where the file went (the note of that name, list_files, search_notes by \
                 its name) and propose replace_body with the link pointed there, the rest of \
                 the text unchanged; if it is gone for good, say so and leave the link"
                    .into(),
            ),
        });
    }
}

/// A title that says nothing: empty, or only stars and spaces.
fn is_empty_title(title: &str) -> bool {
    title.chars().all(|c| c.is_whitespace() || c == '*')
}

fn empty_headline(r: &At, out: &mut Vec<Finding>) {
    let n = r.node();
    let c = &n.content;
    if !is_empty_title(&c.title) {
        return;
    }
    let holds_nothing = c.body.is_blank()
        && !r.doc.has_children(r.index)
        && c.properties.is_empty()
        && c.planning == Default::default();
    let what = match (&c.todo, c.tags.is_empty()) {
        (Some(todo), _) => format!("a {todo} with no title"),
        (None, false) => format!("a headline with tags :{}: and no title", c.tags.join(":")),
        (None, true) => "a headline with no title".to_string(),
    };
    let (detail, fix) = if holds_nothing {
        (
            format!("{what}, and nothing under it"),
            "propose archive of it, or ask the user what it was for",
        )
    } else {
        (
            format!("{what}; its text or children say what it is about"),
            "read_node it and suggest a title to the user (no tool retitles a headline: \
             the user types it)",
        )
    };
    out.push(Finding {
        kind: "empty-headline",
        node: r.to_ref(),
        detail,
        fix: Some(fix.into()),
    });
}

/// The title as duplicates are compared: case and runs of spaces aside (borrowed when it
/// is so already, as most titles are).
fn title_key(title: &str) -> Cow<'_, str> {
    let spaced = !title.contains("  ") && !title.contains(['\t', '\n']) && title.trim() == title;
    if spaced {
        return if title.chars().any(char::is_uppercase) {
            Cow::Owned(title.to_lowercase())
        } else {
            Cow::Borrowed(title)
        };
    }
    Cow::Owned(
        title
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase(),
    )
}

/// When a log-like entry happened: its first planning timestamp, or else the first
/// timestamp of its body (`[2022-02-22 Tue 14:39]` of a journal entry, a CLOCK line), time
/// of day included: two breaks on one day are two events.
fn entry_date(c: &crate::store::NodeContent) -> Option<Cow<'_, str>> {
    [
        &c.planning.scheduled,
        &c.planning.deadline,
        &c.planning.closed,
    ]
    .into_iter()
    .flatten()
    .map(|t| Cow::Borrowed(t.as_str()))
    .next()
    .or_else(|| match c.body_or_notice() {
        Cow::Borrowed(body) => dated(body).next().map(Cow::Borrowed),
        Cow::Owned(body) => dated(&body).next().map(|d| Cow::Owned(d.to_owned())),
    })
}

/// Siblings with one title duplicate each other unless they are entries of a log on
/// different dates (the same "taking a break" on two days of a journal is two events). A
/// title with no letter or digit (a `-----` separator) is not a note. The dates are only
/// read for titles that repeat: most bodies are never searched.
fn duplicate_titles(doc: &Arc<FileDoc>, shown: &[bool], out: &mut Vec<Finding>) {
    // The siblings' title keys, sorted: equal titles end up side by side, in document
    // order. One buffer for every parent, no hashing.
    let mut keyed: Vec<(Cow<str>, u32)> = Vec::new();
    for (p, parent) in doc.nodes.iter().enumerate() {
        if doc.children(p as u32).nth(1).is_none() || !shown[p] {
            continue;
        }
        keyed.clear();
        keyed.extend(
            doc.children(p as u32)
                .map(|c| (c, &doc.nodes[c as usize].content.title))
                .filter(|(c, t)| shown[*c as usize] && t.chars().any(char::is_alphanumeric))
                .map(|(c, t)| (title_key(t), c)),
        );
        keyed.sort();
        for group in keyed.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
            // The first sibling of each date (each body read once: a journal repeats a
            // title hundreds of times).
            let mut first_of: FxHashMap<Option<Cow<str>>, u32> = FxHashMap::default();
            for &(_, c) in group {
                let date = entry_date(&doc.nodes[c as usize].content);
                let earlier = *first_of.entry(date).or_insert(c);
                if earlier == c {
                    continue;
                }
                let under = if p == 0 {
                    "at the top of the file".to_string()
                } else {
                    format!("under \"{}\"", parent.content.title)
                };
                let e = &doc.nodes[earlier as usize];
                out.push(Finding {
                    kind: "duplicate-title",
                    node: Cx::at(doc, c),
                    detail: format!(
                        "an earlier sibling {under} has the same title (id {}, position {})",
                        e.id, e.begin_pos
                    ),
                    fix: Some(
                        "read_node both; if they are one thing, propose append_body of this \
                         one's text to the earlier and archive of this one; if not, suggest a \
                         distinguishing title to the user"
                            .into(),
                    ),
                });
            }
        }
    }
}

/// The timestamps of `value` that try to be dates (`<` or `[` then four digits and `-`).
fn dated(value: &str) -> impl Iterator<Item = &str> {
    value.char_indices().filter_map(move |(i, c)| {
        if c != '<' && c != '[' {
            return None;
        }
        let rest = &value[i..];
        let b = rest.as_bytes();
        (b.len() > 5 && b[1..5].iter().all(u8::is_ascii_digit) && b[5] == b'-').then(|| {
            let close = if c == '<' { '>' } else { ']' };
            rest.find(close).map_or(rest, |e| &rest[..=e])
        })
    })
}

fn bad_timestamps(r: &At, out: &mut Vec<Finding>) {
    let c = &r.node().content;
    let planning = [
        ("SCHEDULED", &c.planning.scheduled),
        ("DEADLINE", &c.planning.deadline),
        ("CLOSED", &c.planning.closed),
    ];
    let mut push = |at: String, ts: &str, fix: &str| {
        out.push(Finding {
            kind: "bad-timestamp",
            node: r.to_ref(),
            detail: format!("{at} {ts} is not a day of the calendar"),
            fix: Some(fix.into()),
        });
    };
    for (label, ts) in planning {
        let Some(ts) = ts.as_deref() else { continue };
        // `<%%(diary-sexp)>` is a date Org computes, not one written out.
        if ts.get(1..3) == Some("%%") || Day::parse(ts).is_some() {
            continue;
        }
        let fix = match label {
            "SCHEDULED" => "ask the user which day was meant, then propose schedule with it",
            "DEADLINE" => "ask the user which day was meant, then propose deadline with it",
            _ => "tell the user; the CLOSED line is Org's record and is fixed by hand",
        };
        push(format!("its {label}:"), ts, fix);
    }
    for (key, value) in &c.properties {
        for ts in dated(value) {
            if Day::parse(ts).is_none() {
                push(
                    format!("its property :{key}:"),
                    ts,
                    "ask the user which day was meant, then propose set_property with it",
                );
            }
        }
    }
}

/// How a tag varies from the common one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variation {
    Spelling,
    Abbreviation,
}

/// Rare tag → (the common tag it varies from, how).
type Variants = FxHashMap<String, (String, Variation)>;

/// A tag as variants compare: lower case, `_` dropped, a plural made singular.
fn tag_key(tag: &str) -> String {
    let t: String = tag
        .chars()
        .filter(|&c| c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    if t.chars().count() > 4 {
        if let Some(stem) = t.strip_suffix("ies") {
            return format!("{stem}y");
        }
    }
    if t.chars().count() > 3 && t.ends_with('s') && !t.ends_with("ss") {
        return t[..t.len() - 1].to_string();
    }
    t
}

/// The lengths of an abbreviation counted, and how much longer the full tag must be.
const MIN_ABBREVIATION: usize = 3;
const MAX_ABBREVIATION: usize = 5;
const MIN_ABBREVIATED: usize = 3;

/// The tag vocabulary of the headlines the model may see, with counts, and each rare
/// variant with the common tag it varies from: a tag whose key (see [`tag_key`]) another,
/// more used tag shares, or whose key is the start of a more used tag's key (`proj` of
/// `project`). An abbreviation counts only when the full tag is used more: `work` is not an
/// abbreviation of a rarer `workshop`.
fn tag_variants(files: &[Shown]) -> Variants {
    let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
    for (doc, shown) in files {
        for (n, _) in doc.nodes.iter().zip(shown).filter(|(_, &s)| s) {
            if n.content.kind == NodeKind::Headline {
                for t in &n.content.tags {
                    *counts.entry(t.as_str()).or_default() += 1;
                }
            }
        }
    }
    // Key → its tags, the most used first (ties: lower case first, then by name, so the
    // choice does not depend on hashing).
    let mut by_key: FxHashMap<String, Vec<(&str, usize)>> = FxHashMap::default();
    for (&t, &n) in &counts {
        by_key.entry(tag_key(t)).or_default().push((t, n));
    }
    let rank = |a: &(&str, usize), b: &(&str, usize)| {
        b.1.cmp(&a.1)
            .then_with(|| is_lower(b.0).cmp(&is_lower(a.0)))
            .then_with(|| a.0.cmp(b.0))
    };
    for tags in by_key.values_mut() {
        tags.sort_by(rank);
    }
    let mut out = Variants::default();
    for tags in by_key.values() {
        let (common, n) = tags[0];
        for &(t, m) in &tags[1..] {
            // Equal use and no case to prefer: nothing says which is the variant.
            if m == n && is_lower(t) == is_lower(common) {
                continue;
            }
            out.insert(t.to_string(), (common.to_string(), Variation::Spelling));
        }
    }
    // Abbreviations: keys sorted, so every key that starts with `k` follows it.
    let mut keys: Vec<(&String, usize)> = by_key
        .iter()
        .map(|(k, tags)| (k, tags.iter().map(|t| t.1).sum()))
        .collect();
    keys.sort();
    for (i, &(short, short_n)) in keys.iter().enumerate() {
        let len = short.chars().count();
        if !(MIN_ABBREVIATION..=MAX_ABBREVIATION).contains(&len)
            || !short.chars().all(char::is_alphabetic)
        {
            continue;
        }
        // The most used longer key it starts, if more used than it; two full tags it could
        // stand for make it no abbreviation of either.
        let longer: Vec<&(&String, usize)> = keys[i + 1..]
            .iter()
            .take_while(|(k, _)| k.starts_with(short.as_str()))
            .filter(|(k, _)| k.chars().count() >= short.chars().count() + MIN_ABBREVIATED)
            .collect();
        let [&(full, full_n)] = longer.as_slice() else {
            continue;
        };
        if full_n <= short_n {
            continue;
        }
        let full_tag = by_key[full][0].0;
        // `src` of `src_block`, `toc` of `TOC_5_gh`: a word of the longer tag, not an
        // abbreviation of it.
        let next = full_tag.to_lowercase().chars().nth(len);
        if !next.is_some_and(char::is_alphabetic) {
            continue;
        }
        for &(t, _) in &by_key[short] {
            out.entry(t.to_string())
                .or_insert((full_tag.to_string(), Variation::Abbreviation));
        }
    }
    out
}

fn is_lower(tag: &str) -> bool {
    !tag.chars().any(char::is_uppercase)
}

fn tag_variant(r: &At, variants: &Variants, out: &mut Vec<Finding>) {
    for t in &r.node().content.tags {
        let Some((common, how)) = variants.get(t) else {
            continue;
        };
        let how = match how {
            Variation::Spelling => "a spelling variant",
            Variation::Abbreviation => "an abbreviation",
        };
        out.push(Finding {
            kind: "tag-variant",
            node: r.to_ref(),
            detail: format!("its tag :{t}: is {how} of :{common}:, the tag the other notes use"),
            fix: Some(format!(
                "propose set_tags with :{t}: replaced by :{common}: (its other tags kept)"
            )),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_notes as notes;
    use super::super::{run, Day, Report, Scan, ScanInput};
    use crate::notes::Privacy;

    fn garden(files: &[(&str, &str)], privacy: Privacy) -> Report {
        let input = ScanInput {
            today: Day::parse("2026-11-24").unwrap(),
            file: None,
            inbox: None,
        };
        run(&notes(files, privacy), Scan::Garden, &input).unwrap()
    }

    fn of_kind<'r>(report: &'r Report, kind: &str) -> Vec<&'r str> {
        report
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| &*f.node.node().content.title)
            .collect()
    }

    #[test]
    fn file_links_are_checked_on_disk_relative_to_the_note() {
        let dir = std::env::temp_dir().join(format!("garden-links-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/there.org"), "* x\n").unwrap();
        std::fs::write(dir.join("data.csv"), "a,b\n").unwrap();
        let note = dir.join("sub/note.org");
        let text = "* Links\n[[file:there.org]] [[./there.org::*x]] [[file:../data.csv]]\n\
                    [[file:gone.org][gone]] [[file:gone.org]] [[file:/ssh:host:/x.org]]\n\
                    * Elsewhere\n[[../missing.pdf]]\n";
        let report = garden(&[(note.to_str().unwrap(), text)], Privacy::default());
        assert_eq!(of_kind(&report, "broken-file-link"), ["Links", "Elsewhere"]);
        // A note of the missing file's name elsewhere in the notes is named.
        let moved = garden(
            &[
                (note.to_str().unwrap(), text),
                ("/elsewhere/gone.org", "* x\n"),
            ],
            Privacy::default(),
        );
        assert!(moved.findings[0]
            .detail
            .ends_with("a note of that name is at /elsewhere/gone.org"));
        assert!(report.findings[0].detail.contains("gone.org"));
        assert!(report.findings[1].detail.contains("missing.pdf"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headlines_without_a_title_are_empty_and_one_line_tasks_are_not() {
        let report = garden(
            &[(
                "/n/a.org",
                "* TODO \n* :work:\nSome text.\n* TODO Call Ann\n* Short\n* \n",
            )],
            Privacy::default(),
        );
        let empty: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.kind == "empty-headline")
            .map(|f| f.detail.as_str())
            .collect();
        assert_eq!(empty.len(), 3, "{}", report.text(20));
        assert!(empty[0].starts_with("a TODO with no title, and nothing under it"));
        assert!(empty[1].contains(":work:") && empty[1].contains("its text"));
    }

    #[test]
    fn only_siblings_with_one_title_are_duplicates() {
        let report = garden(
            &[(
                "/n/a.org",
                "* Project A\n** Notes\n** Budget\n** notes\n* Project B\n** Notes\n* Budget\n* budget\n\
                 * Journal\n** a break\n[2022-02-22 Tue 14:39]\n** a break\n[2022-02-22 Tue 16:00]\n** -----\n** -----\n",
            )],
            Privacy::default(),
        );
        let dups: Vec<(&str, &str)> = report
            .findings
            .iter()
            .filter(|f| f.kind == "duplicate-title")
            .map(|f| (&*f.node.node().content.title, f.detail.as_str()))
            .collect();
        assert_eq!(dups.len(), 2, "{}", report.text(20));
        assert_eq!(dups[0].0, "notes");
        assert!(dups[0].1.contains("under \"Project A\""));
        assert_eq!(dups[1].0, "budget");
        assert!(dups[1].1.contains("top of the file"));
    }

    #[test]
    fn impossible_dates_are_bad_timestamps() {
        let report = garden(
            &[(
                "/n/a.org",
                "* TODO Leap\nSCHEDULED: <2024-02-30 Fri>\n\
                 * TODO Fine\nDEADLINE: <2024-02-29 Thu +1y> SCHEDULED: <%%(diary-float t 4 2)>\n\
                 * Made\n:PROPERTIES:\n:CREATED: [2026-13-01 Tue]\n:LINK: [[id:x]]\n:SPAN: <2026-01-01>--<2026-1-5>\n:END:\n",
            )],
            Privacy::default(),
        );
        let bad: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.kind == "bad-timestamp")
            .map(|f| f.detail.as_str())
            .collect();
        assert_eq!(bad.len(), 3, "{}", report.text(20));
        assert!(bad[0].contains("SCHEDULED: <2024-02-30 Fri>"));
        assert!(bad[1].contains(":CREATED: [2026-13-01 Tue]"));
        assert!(bad[2].contains("<2026-1-5>"));
    }

    #[test]
    fn rare_tag_variants_name_the_common_tag() {
        let mut text = String::new();
        for i in 0..5 {
            text.push_str(&format!("* Task {i} :project:work:meeting:\n"));
        }
        text.push_str("* Odd one :Project:\n* Another :proj:\n* Third :meetings:\n");
        // `work` is used more than `workshop`: not an abbreviation of it.
        text.push_str("* Talk :workshop:\n* Tie a :alpha:\n* Tie b :alphas:\n");
        let report = garden(&[("/n/a.org", &text)], Privacy::default());
        let tags: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.kind == "tag-variant")
            .map(|f| f.detail.as_str())
            .collect();
        assert_eq!(tags.len(), 3, "{}", report.text(20));
        assert!(tags[0].contains(":Project: is a spelling variant of :project:"));
        assert!(tags[1].contains(":proj: is an abbreviation of :project:"));
        assert!(tags[2].contains(":meetings: is a spelling variant of :meeting:"));
    }

    #[test]
    fn private_notes_are_never_reported_nor_counted() {
        let mut text = String::new();
        for i in 0..3 {
            text.push_str(&format!("* Diary {i} :private:Health:\n"));
        }
        text.push_str(
            "* Secret :private:\n** TODO \nSCHEDULED: <2024-02-30 Fri>\n** Same\n** Same\n\
             [[file:/nowhere/x.org]]\n* Open :health:\n",
        );
        let report = garden(&[("/n/a.org", &text)], Privacy::default());
        // `health` is only rarer than `Health` among private notes: nothing to say.
        assert!(report.findings.is_empty(), "{}", report.text(20));
        let all = garden(&[("/n/a.org", &text)], Privacy::none());
        assert_eq!(all.counts().len(), 5, "{}", all.text(20));
    }
}
