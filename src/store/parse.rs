//! Org text → nodes.
//!
//! The headline tree comes from the headline lines alone, in one linear pass: where headlines
//! are and how they nest is all a node needs of the document's structure. The fields of each
//! headline (TODO keyword, priority, title, tags, planning, property drawer) follow
//! `org-element-headline-parser` rule by rule, Org being the reference.
//!
//! orgize 0.10.0-alpha.10 did the tree before. It also parsed every element of every section,
//! which nothing here used, and scanned to the end of the section from every unclosed
//! `#+begin_…` or drawer line: 8,000 of them took 2 s, 100,000 more than five minutes. It got
//! several headline fields wrong too (see the regression tests in `tests/store_ingest.rs`).

use super::error::StoreError;
use super::hash::Hash;
use super::node::{
    intern_key, link_subtrees, saturating_level, InheritedTags, Keyword, Node, NodeContent,
    NodeKind, Planning, PlanningTimes, Property, TodoType, NO_PARENT,
};
use super::text::PositionMap;
use super::todo::{collect_settings, headline_level, strip_prefix_ci, TodoKeywords};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// Which Org release series' headline syntax to follow: the Org the user's Emacs has loaded
/// (`org-version`), since org-element of each series reads some headline lines differently.
/// Each rule below names the series that introduced it; `tests/fixtures/org-versions/`
/// holds one headline per difference, checked against every series by the fidelity test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Dialect {
    /// Org 9.5 (Emacs 28): `COMMENT` is a prefix (`COMMENTARY` comments the headline);
    /// repeated property keys are all kept.
    Org95,
    /// Org 9.6 (Emacs 29): `COMMENT` must be a word; a repeated key keeps its last value,
    /// repeated `KEY+` values are gathered.
    #[default]
    Org96,
    /// Org 9.7 (Emacs 30): a TODO keyword may end the line; `COMMENT` must be followed by a
    /// space; tags need no blank before them, and the title no longer gives one back.
    Org97,
    /// Org 9.8: the priority cookie is searched for anywhere on the line (the title starts
    /// after it), its value is a letter or a number 0-64; tags need a blank again.
    Org98,
}

impl Dialect {
    /// The dialect for an `org-version` string such as "9.5.5", "9.7.39" or "9.8-pre":
    /// releases before 9.5 read headlines as 9.5 does, later ones as the newest we know.
    pub fn for_org_version(version: &str) -> Dialect {
        let number = |part: Option<&str>, default: u32| {
            let digits: String = part
                .unwrap_or("")
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u32>().unwrap_or(default)
        };
        let mut parts = version.trim().split('.');
        let major = number(parts.next(), 9);
        let minor = number(parts.next(), 6);
        match (major, minor) {
            (0..=8, _) | (9, 0..=5) => Dialect::Org95,
            (9, 6) => Dialect::Org96,
            (9, 7) => Dialect::Org97,
            _ => Dialect::Org98,
        }
    }
}

/// Deeper headline nesting than this is refused: no notes nest so deep, and Org's own parser,
/// which the actuator and the user's Emacs run over the same file, recurses per level.
pub const MAX_NESTING: usize = 256;
/// Larger texts are refused rather than parsed (a 4 GiB offset would not fit our ranges).
pub const MAX_TEXT_BYTES: usize = 1 << 31;

#[derive(Clone, Debug)]
pub struct ParseOptions<'a> {
    /// The keywords Org computed for the buffer; when `None`, read them from the text and
    /// fall back to `default_todo`.
    pub todo: Option<&'a TodoKeywords>,
    pub default_todo: &'a TodoKeywords,
    pub dialect: Dialect,
    /// Tags that are never inherited (`org-tags-exclude-from-inheritance`).
    pub no_inherit_tags: &'a [String],
    /// `org-inlinetask-min-level` when org-inlinetask is loaded: lines with that many stars
    /// or more are inline tasks, text of the headline they sit in, not headlines.
    pub inlinetask_min_level: Option<u32>,
}

/// The nodes of one file in document order; index 0 is the file node.
pub struct Parsed {
    pub nodes: Vec<Node>,
    pub file_tags: Vec<String>,
}

/// The fields of a headline line, as `org-element-headline-parser` reads them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HeadlineLine {
    pub level: u32,
    pub todo: Option<String>,
    pub priority: Option<char>,
    pub commented: bool,
    pub title: String,
    pub tags: Vec<String>,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Characters with whitespace syntax in Org buffers (what `\S-` excludes).
fn is_syntax_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
        || ('\u{2000}'..='\u{200b}').contains(&c)
        || matches!(
            c,
            '\u{1680}' | '\u{2028}' | '\u{2029}' | '\u{205f}' | '\u{3000}'
        )
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '@' | '#' | '%' | ':')
}

/// Org's `org-trim`: strip spaces, tabs, newlines and CRs at both ends.
fn org_trim(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\n', '\r'])
}

pub fn parse_headline_line(line: &str, keywords: &[&str], dialect: Dialect) -> HeadlineLine {
    let stars = line.bytes().take_while(|&b| b == b'*').count();
    let skip_blanks = |p: usize| p + line[p..].len() - line[p..].trim_start_matches(is_blank).len();
    let mut pos = skip_blanks(stars);

    // The keyword must be followed by a space; from 9.7 the end of the line will do.
    let mut todo = None;
    for kw in keywords {
        let Some(after) = line[pos..].strip_prefix(kw).filter(|_| !kw.is_empty()) else {
            continue;
        };
        if after.starts_with(' ') || (dialect >= Dialect::Org97 && after.is_empty()) {
            todo = Some(kw.to_string());
            pos = skip_blanks(pos + kw.len() + after.len().min(1));
            break;
        }
    }

    let mut priority = None;
    if dialect >= Dialect::Org98 {
        if let Some((value, end)) = priority_cookie_in(&line[pos..]) {
            priority = Some(value);
            pos += end;
        }
    } else {
        // "\\[#.\\][ \t]*" right here.
        let rest = &line[pos..];
        let mut chars = rest.char_indices();
        if let (Some((_, '[')), Some((_, '#')), Some((_, c)), Some((close, ']'))) =
            (chars.next(), chars.next(), chars.next(), chars.next())
        {
            priority = Some(c);
            pos = skip_blanks(pos + close + 1);
        }
    }

    let mut commented = false;
    if let Some(after) = line[pos..].strip_prefix("COMMENT") {
        commented = match dialect {
            Dialect::Org95 => true,
            Dialect::Org96 => after.is_empty() || after.starts_with(is_blank),
            Dialect::Org97 | Dialect::Org98 => after.is_empty() || after.starts_with(' '),
        };
        // Org 9.5 and 9.6 step over "COMMENT" before asking whether it ends a word, so
        // "COMMENTARY" leaves "ARY" as the title there.
        if commented || dialect <= Dialect::Org96 {
            pos += "COMMENT".len();
        }
        if commented && dialect >= Dialect::Org97 {
            pos = skip_blanks(pos);
        }
    }

    let title_start = pos;
    let backed = line[..title_start].trim_end_matches(is_blank).len();
    let (from, title_from, blank_before_tags) = match dialect {
        // A headline like "* :tag:": the blank after the stars may belong to the tags.
        Dialect::Org95 | Dialect::Org96 if todo.is_none() && priority.is_none() && !commented => {
            (backed, backed, true)
        }
        Dialect::Org95 | Dialect::Org96 => (title_start, title_start, true),
        Dialect::Org97 => (title_start, title_start, false),
        // The search starts before the blanks, whatever came first.
        Dialect::Org98 => (backed, title_start, true),
    };
    let (tags, title_end) =
        trailing_tags(line, from, blank_before_tags).unwrap_or((Vec::new(), line.len()));
    HeadlineLine {
        level: stars as u32,
        todo,
        priority,
        commented,
        title: org_trim(&line[title_from.min(title_end)..title_end.max(title_from)]).to_string(),
        tags,
    }
}

/// The tag group ending `line`, searched from `from`: "[ \t]+\\(:[[:alnum:]_@#%:]+:\\)[ \t]*$"
/// (or without the leading blanks, as Org 9.7 has it). Returns the tags as `org-split-string`
/// cuts them (inner empty tags kept) and where the title ends: at the blanks before the
/// group, or at the group itself when no blank is asked for.
fn trailing_tags(line: &str, from: usize, blank_before: bool) -> Option<(Vec<String>, usize)> {
    let body = line.trim_end_matches(is_blank);
    // The run of tag characters that ends the line; the group starts at a colon in it.
    let run_start = body
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_tag_char(c))
        .last()
        .map_or(body.len(), |(i, _)| i);
    let group_start = if blank_before {
        // The group must be the whole run, right after a blank at or after `from`.
        let before = &line[from.min(run_start)..run_start];
        (run_start > from && before.ends_with(is_blank) && body[run_start..].starts_with(':'))
            .then_some(run_start)?
    } else {
        // The leftmost colon of the run at or after `from` that starts ":x...:".
        let from = run_start.max(from);
        if from >= body.len() {
            return None;
        }
        body[from..]
            .char_indices()
            .filter(|&(_, c)| c == ':')
            .map(|(i, _)| from + i)
            .find(|&i| body.len() - i >= 3)?
    };
    let group = &body[group_start..];
    if group.len() < 3 || !group.ends_with(':') {
        return None;
    }
    let tags = group[1..group.len() - 1]
        .split(':')
        .map(str::to_string)
        .collect();
    let title_end = if blank_before {
        group_start
            - (line[..group_start].len() - line[..group_start].trim_end_matches(is_blank).len())
    } else {
        group_start
    };
    Some((tags, title_end))
}

/// Org 9.8's `org-priority-regexp` from the start of `s`: the first "[#V]" on the line, V a
/// letter (either case: `case-fold-search` is on in Org buffers) or a number 0-64, and one
/// space after it. Returns the value as `org-priority-to-value` makes it (a number is kept as
/// the character of that code, as Lisp sees both) and the offset after the match.
fn priority_cookie_in(s: &str) -> Option<(char, usize)> {
    let mut from = 0;
    while let Some(i) = s[from..].find("[#").map(|i| i + from) {
        let rest = &s[i + 2..];
        let value = rest.find(']').and_then(|close| {
            let v = &rest[..close];
            let value = match v.as_bytes() {
                [c] if c.is_ascii_alphabetic() => Some(*c as char),
                [c] if c.is_ascii_digit() => char::from_u32(u32::from(c - b'0')),
                [a @ b'1'..=b'5', b] if b.is_ascii_digit() => {
                    char::from_u32(u32::from((a - b'0') * 10 + (b - b'0')))
                }
                [b'6', b @ b'0'..=b'4'] => char::from_u32(60 + u32::from(b - b'0')),
                _ => None,
            };
            value.map(|value| (value, close))
        });
        if let Some((value, close)) = value {
            let mut end = i + 2 + close + 1;
            if s[end..].starts_with(' ') {
                end += 1;
            }
            return Some((value, end));
        }
        from = i + 1;
    }
    None
}

/// The line at `pos` (without its newline) and the offset where the next line starts.
fn line_at(text: &str, pos: usize) -> (&str, usize) {
    match text[pos..].find('\n') {
        Some(i) => (&text[pos..pos + i], pos + i + 1),
        None => (&text[pos..], text.len()),
    }
}

fn is_planning_line(line: &str) -> bool {
    let rest = line.trim_start_matches(is_blank);
    ["CLOSED:", "DEADLINE:", "SCHEDULED:"]
        .iter()
        .any(|k| strip_prefix_ci(rest, k).is_some())
}

/// `org-element--get-time-properties` on one planning line.
pub fn parse_planning(line: &str) -> Planning {
    let mut planning = PlanningTimes::default();
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    loop {
        // The leftmost keyword at a word start, followed by " *[[<][^]>]+[]>]".
        let mut best: Option<(usize, &str)> = None;
        for kw in ["closed:", "deadline:", "scheduled:"] {
            let mut search = from;
            while let Some(i) = lower[search..].find(kw).map(|i| i + search) {
                let word_start = line[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_alphanumeric()));
                if word_start && keyword_time_follows(&line[i + kw.len()..]) {
                    if best.is_none_or(|(b, _)| i < b) {
                        best = Some((i, kw));
                    }
                    break;
                }
                search = i + kw.len();
            }
        }
        let Some((i, kw)) = best else { break };
        let keyword = &line[i..i + kw.len()];
        let mut p = i + kw.len();
        p += line[p..].len() - line[p..].trim_start_matches(is_blank).len();
        let ts = timestamp_at(&line[p..]).map(str::to_string);
        match keyword {
            "SCHEDULED:" => planning.scheduled = ts,
            "DEADLINE:" => planning.deadline = ts,
            _ => planning.closed = ts,
        }
        from = p;
    }
    planning.into()
}

/// " *[[<]\\([^]>]+\\)[]>]" at the start of `s`.
fn keyword_time_follows(s: &str) -> bool {
    let s = s.trim_start_matches(' ');
    let mut chars = s.chars();
    match chars.next() {
        Some('[' | '<') => {}
        _ => return false,
    }
    for (n, c) in chars.enumerate() {
        if c == ']' || c == '>' {
            return n > 0;
        }
        if c == '\n' {
            return false;
        }
    }
    false
}

/// The raw text of the timestamp at the start of `s`, as `org-element-timestamp-parser`
/// accepts and delimits it.
pub fn timestamp_at(s: &str) -> Option<&str> {
    if !looks_like_timestamp(s) {
        return None;
    }
    // "\\([<[]\\(%%\\)?.*?\\)[]>]\\(?:--\\([<[].*?[]>]\\)\\)?"
    let close = s[1..].find([']', '>', '\n'])? + 1;
    if s.as_bytes()[close] == b'\n' {
        return None;
    }
    let mut end = close + 1;
    if let Some(rest) = s[end..].strip_prefix("--") {
        if rest.starts_with(['<', '[']) {
            if let Some(c2) = rest[1..].find([']', '>', '\n']) {
                if rest.as_bytes()[c2 + 1] != b'\n' {
                    end += 2 + c2 + 2;
                }
            }
        }
    }
    Some(&s[..end])
}

fn digits(s: &str, n: usize) -> Option<&str> {
    let b = s.as_bytes();
    (b.len() >= n && b[..n].iter().all(u8::is_ascii_digit)).then(|| &s[n..])
}

/// `org-element--timestamp-regexp` anchored at the start of `s`.
fn looks_like_timestamp(s: &str) -> bool {
    let first_line = s.split('\n').next().unwrap_or("");
    // org-ts-regexp-both: [[<]YYYY-MM-DD( .*?)?[]>]
    if let Some(rest) = first_line.strip_prefix(['<', '[']) {
        let date = digits(rest, 4)
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| digits(r, 2))
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| digits(r, 2));
        if let Some(r) = date {
            if r.starts_with([']', '>']) || (r.starts_with(' ') && r[1..].contains([']', '>'])) {
                return true;
            }
        }
    }
    let Some(rest) = first_line.strip_prefix('<') else {
        return false;
    };
    // <%%(...)>
    if let Some(sexp) = rest.strip_prefix("%%(") {
        if let Some(gt) = sexp.find('>') {
            return gt >= 2 && sexp[..gt].ends_with(')');
        }
        return false;
    }
    // <[0-9]+-[0-9]+-[0-9]+[^>\n]+?\\+[0-9]+[dwmy]>
    let mut r = rest;
    for i in 0..3 {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        r = &r[n..];
        if i < 2 {
            match r.strip_prefix('-') {
                Some(x) => r = x,
                None => return false,
            }
        }
    }
    let Some(gt) = r.find('>') else { return false };
    let inner = &r[..gt];
    // inner = [^>]+? "+" digits unit
    let Some(unit) = inner.chars().last() else {
        return false;
    };
    if !matches!(unit, 'd' | 'w' | 'm' | 'y') {
        return false;
    }
    let head = &inner[..inner.len() - 1];
    let nd = head.bytes().rev().take_while(u8::is_ascii_digit).count();
    if nd == 0 {
        return false;
    }
    let head = &head[..head.len() - nd];
    head.len() >= 2 && head.ends_with('+')
}

/// A property drawer starting at `pos` (`org-property-drawer-re`, case-insensitive): the
/// properties with upcased keys, and the offset just after the `:END:` line.
fn property_drawer_at(text: &str, pos: usize) -> Option<(Vec<Property>, usize)> {
    let (first, mut next) = line_at(text, pos);
    let has_newline = pos + first.len() < text.len();
    if !has_newline
        || !first
            .trim_matches(is_blank)
            .eq_ignore_ascii_case(":PROPERTIES:")
    {
        return None;
    }
    let mut props = Vec::new();
    loop {
        if next >= text.len() {
            return None;
        }
        let at_last_line = !text[next..].contains('\n');
        let (line, after) = line_at(text, next);
        if line.trim_matches(is_blank).eq_ignore_ascii_case(":END:") {
            return Some((props, after));
        }
        if at_last_line {
            // A property line needs its newline before the :END: line.
            return None;
        }
        props.push(property_line(line)?);
        next = after;
    }
}

/// One drawer line `[ \t]*:KEY:( .*)?[ \t]*` → (upcased KEY, value).
fn property_line(line: &str) -> Option<Property> {
    let rest = line.trim_start_matches(is_blank).strip_prefix(':')?;
    let word_len = rest.find(is_syntax_space).unwrap_or(rest.len());
    let word = &rest[..word_len];
    let after = &rest[word_len..];
    if word.len() < 2 || !word.ends_with(':') {
        return None;
    }
    let value = if after.trim_matches(is_blank).is_empty() {
        ""
    } else if let Some(v) = after.strip_prefix(' ') {
        v.trim_start_matches(is_blank).trim_end_matches(is_blank)
    } else {
        return None;
    };
    let key = &word[..word.len() - 1];
    let key = if key.bytes().any(|b| b.is_ascii_lowercase() || !b.is_ascii()) {
        intern_key(&key.to_uppercase())
    } else {
        intern_key(key)
    };
    Some((key, Arc::from(value)))
}

/// A drawer's entries as `org-element--get-node-properties` keeps them. Org 9.5 keeps every
/// line. From 9.6 a repeated key keeps its first place and its last value, and repeated
/// `KEY+` lines are gathered into one list, which the store keeps as consecutive entries
/// (the fidelity test reads Org's list the same way).
fn merge_repeated_keys(props: Vec<Property>, dialect: Dialect) -> Vec<Property> {
    if dialect == Dialect::Org95 || props.len() < 2 {
        return props;
    }
    // One group per key, in the order keys first appear (a drawer may hold thousands).
    let mut groups: Vec<(Arc<str>, Vec<Arc<str>>)> = Vec::new();
    let mut group_of: HashMap<Arc<str>, usize> = HashMap::default();
    for (key, value) in props {
        match group_of.get(&key) {
            Some(&g) if key.ends_with('+') => groups[g].1.push(value),
            Some(&g) => groups[g].1 = vec![value],
            None => {
                group_of.insert(key.clone(), groups.len());
                groups.push((key, vec![value]));
            }
        }
    }
    groups
        .into_iter()
        .flat_map(|(key, values)| values.into_iter().map(move |v| (key.clone(), v)))
        .collect()
}

/// Where the own text of a headline ends its meta lines: after the headline line, planning
/// and property drawer. Returns (planning, properties, offset where the body starts).
fn meta_after_headline(
    text: &str,
    line_end: usize,
    limit: usize,
) -> (Planning, Vec<Property>, usize) {
    let mut planning = Planning::default();
    let mut pos = line_end;
    if pos < limit {
        let (line, next) = line_at(text, pos);
        if is_planning_line(line) {
            planning = parse_planning(line);
            pos = next.min(limit);
        }
    }
    let mut properties = Vec::new();
    if pos < limit {
        if let Some((props, next)) = property_drawer_at(&text[..limit], pos) {
            properties = props;
            pos = next;
        }
    }
    (planning, properties, pos)
}

/// Byte offset and level of every headline line, in document order, wherever it is: Org ends
/// blocks and drawers at the next headline, so nothing else in a section decides where
/// headlines are.
fn headline_lines(text: &str, inlinetask_min_level: Option<u32>) -> Vec<(usize, u32)> {
    let below = inlinetask_min_level.map_or(u32::MAX, |m| m.max(1));
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if let Some(level) = headline_level(line).map(|l| l as u32) {
            if level < below {
                out.push((start, level));
            }
        }
        start += line.len();
    }
    out
}

/// Where one headline's subtree sits: from its line to the next headline of its level or
/// above (or the end of the text), under `parent` (0 is the file node, `i + 1` headline `i`).
struct OutlineEntry {
    begin: usize,
    end: usize,
    parent: u32,
}

/// The headline tree of a text, in document order.
struct Outline {
    headlines: Vec<OutlineEntry>,
    /// The longest chain of strictly deeper headlines.
    depth: usize,
}

/// The headline tree from the headline lines alone, in one pass: each headline's parent is the
/// nearest earlier headline of a lower level that is still open.
fn outline(text: &str, inlinetask_min_level: Option<u32>) -> Outline {
    let lines = headline_lines(text, inlinetask_min_level);
    let mut headlines: Vec<OutlineEntry> = Vec::with_capacity(lines.len());
    // Open headlines as (index into `headlines`, level), shallowest first.
    let mut open: Vec<(usize, u32)> = Vec::new();
    let mut depth = 0;
    for (begin, level) in lines {
        while let Some(&(i, l)) = open.last() {
            if l < level {
                break;
            }
            headlines[i].end = begin;
            open.pop();
        }
        let parent = open.last().map_or(0, |&(i, _)| i as u32 + 1);
        open.push((headlines.len(), level));
        depth = depth.max(open.len());
        headlines.push(OutlineEntry {
            begin,
            end: text.len(),
            parent,
        });
    }
    Outline { headlines, depth }
}

struct Raw {
    content: NodeContent,
    parent: Option<u32>,
    children: Vec<u32>,
    begin: usize,
    end: usize,
}

/// `text` parsed with Org's default settings, as a file of its own: its `#+TODO:` and
/// `#+FILETAGS:` apply, no tag is kept from inheritance, the newest headline rules. For
/// Org text that is not a note (skill files, the approvals queue, fixtures).
pub fn parse_with_defaults(text: &str, file: &Path) -> Result<Parsed, StoreError> {
    let todo = TodoKeywords::default();
    let opts = ParseOptions {
        todo: None,
        default_todo: &todo,
        dialect: Dialect::default(),
        no_inherit_tags: &[],
        inlinetask_min_level: None,
    };
    parse(text, file, &opts)
}

/// Parse `text` (the contents of `file`) into nodes with ids, hashes and positions.
pub fn parse(text: &str, file: &Path, opts: &ParseOptions) -> Result<Parsed, StoreError> {
    if text.len() >= MAX_TEXT_BYTES {
        return Err(StoreError::TooLarge {
            file: file.to_path_buf(),
            bytes: text.len(),
        });
    }
    let outline = outline(text, opts.inlinetask_min_level);
    if outline.depth > MAX_NESTING {
        return Err(StoreError::TooDeep {
            file: file.to_path_buf(),
            depth: outline.depth,
            max: MAX_NESTING,
        });
    }
    let settings = collect_settings(text, Some(file));
    let keywords = match (opts.todo, &settings.todo) {
        (Some(k), _) => k.clone(),
        (None, Some(k)) => k.clone(),
        (None, None) => opts.default_todo.clone(),
    };
    let by_length = keywords.by_length();

    // Sized once: a vector of these large entries that doubles as it fills takes fresh
    // pages at each doubling, and the kernel zeroes them.
    let mut raws: Vec<Raw> = Vec::with_capacity(outline.headlines.len() + 1);
    // The file node: its body is the text before the first headline.
    let first_headline = outline.headlines.first().map_or(text.len(), |h| h.begin);
    let (file_props, body_start) = file_property_drawer(text, first_headline);
    let file_props = merge_repeated_keys(file_props, opts.dialect);
    let file_title = settings.title.clone().unwrap_or_else(|| {
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    raws.push(Raw {
        content: NodeContent {
            // Set once the children's hashes are known.
            hash: Hash::default(),
            kind: NodeKind::File,
            title: file_title.into(),
            todo: None,
            todo_type: None,
            priority: None,
            tags: settings.file_tags.clone().into(),
            properties: file_props.into(),
            planning: Planning::default(),
            body: text[body_start..first_headline].into(),
            level: 0,
            children: Box::default(),
        },
        parent: None,
        children: vec![],
        begin: 0,
        end: text.len(),
    });

    for (i, h) in outline.headlines.iter().enumerate() {
        // The own text ends where the next headline starts, be it a child or not.
        let own_end = outline.headlines.get(i + 1).map_or(text.len(), |n| n.begin);
        let (line, line_end) = line_at(text, h.begin);
        let hl = parse_headline_line(line, &by_length, opts.dialect);
        let (planning, properties, body_start) =
            meta_after_headline(text, line_end.min(own_end), own_end);
        let properties = merge_repeated_keys(properties, opts.dialect);
        let idx = raws.len() as u32;
        raws[h.parent as usize].children.push(idx);
        let todo_type = hl.todo.as_deref().map(|k| {
            if keywords.is_done(k) {
                TodoType::Done
            } else {
                TodoType::Todo
            }
        });
        raws.push(Raw {
            content: NodeContent {
                hash: Hash::default(),
                kind: NodeKind::Headline,
                title: hl.title.into(),
                todo: hl.todo.map(Keyword::from),
                todo_type,
                priority: hl.priority,
                tags: hl.tags.into(),
                properties: properties.into(),
                planning,
                body: text[body_start.min(own_end)..own_end].into(),
                level: saturating_level(hl.level),
                children: Box::default(),
            },
            parent: Some(h.parent),
            children: vec![],
            begin: h.begin,
            end: h.end,
        });
    }

    Ok(finish(
        raws,
        text,
        file,
        &settings.file_tags,
        opts.no_inherit_tags,
    ))
}

/// A property drawer before any other content of the file (blank and comment lines may come
/// first), as org-roam and Org 9.5 use for file-level properties.
fn file_property_drawer(text: &str, limit: usize) -> (Vec<Property>, usize) {
    let mut pos = 0;
    while pos < limit {
        let (line, next) = line_at(text, pos);
        let t = line.trim_start_matches(is_blank);
        if t.is_empty() || (t.starts_with('#') && !t.starts_with("#+")) {
            pos = next;
            continue;
        }
        if let Some((props, after)) = property_drawer_at(&text[..limit], pos) {
            return (props, after);
        }
        break;
    }
    (Vec::new(), 0)
}

/// Ids, Merkle hashes, buffer positions and inherited tags.
fn finish(
    mut raws: Vec<Raw>,
    text: &str,
    file: &Path,
    file_tags: &[String],
    no_inherit: &[String],
) -> Parsed {
    let n = raws.len();
    let path_str = super::filename::key(file);

    // Ids: the :ID: property, or a digest of the file and outline path (with an ordinal for
    // siblings that share a title), stable while the text of the path does not change.
    let mut path_digests: Vec<[u8; 32]> = Vec::with_capacity(n);
    let mut ids: Vec<Arc<str>> = Vec::with_capacity(n);
    let mut seen_paths: std::collections::HashMap<[u8; 32], u32> =
        std::collections::HashMap::with_capacity(n);
    for raw in &raws {
        let mut h = Sha256::new();
        match raw.parent {
            None => {
                h.update(b"org-agent/file\0");
                h.update(path_str.as_bytes());
            }
            Some(p) => {
                h.update(path_digests[p as usize]);
                h.update((raw.content.title.len() as u64).to_le_bytes());
                h.update(raw.content.title.as_bytes());
            }
        }
        let mut digest: [u8; 32] = h.finalize().into();
        let ordinal = seen_paths.entry(digest).or_insert(0);
        *ordinal += 1;
        if *ordinal > 1 {
            let mut h = Sha256::new();
            h.update(digest);
            h.update(ordinal.to_le_bytes());
            digest = h.finalize().into();
        }
        path_digests.push(digest);
        let id = match raw.content.id_value() {
            // The value's own allocation, so the id is in memory once.
            Some(value) => value.clone(),
            None => match raw.content.property("ID").map(str::trim) {
                Some(id) if !id.is_empty() => Arc::from(id),
                _ => {
                    let hex = Hash(digest).to_hex();
                    Arc::from(format!("oa-{}", &hex[..24]).as_str())
                }
            },
        };
        ids.push(id);
    }

    // Hashes bottom-up: children always follow their parent.
    let mut hashes: Vec<Hash> = vec![Hash([0; 32]); n];
    for i in (0..n).rev() {
        let child_hashes = raws[i]
            .children
            .iter()
            .map(|&c| hashes[c as usize])
            .collect::<Box<[Hash]>>();
        raws[i].content.children = child_hashes;
        // A parsed body is in memory: read from `text`, not the log.
        hashes[i] = {
            let c = &raws[i].content;
            c.hash_with(c.body.resident().unwrap_or_default(), &c.children)
        };
        raws[i].content.hash = hashes[i];
    }

    // Positions: begins are in document order; ends are not, so map them separately.
    let mut pm = PositionMap::new(text);
    let begin_pos: Vec<u32> = raws.iter().map(|r| pm.position(r.begin)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| raws[i].end);
    let mut end_pos = vec![0u32; n];
    let mut pm = PositionMap::new(text);
    for i in order {
        end_pos[i] = pm.position(raws[i].end);
    }

    // Into a vector of its own: `collect` would reuse the entries' allocation, at their
    // size, and keep it for as long as the file is stored (188 bytes a node where a node
    // takes 56: 13 MB at 100k headlines ingested one file at a time).
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    nodes.extend(raws.into_iter().enumerate().map(|(i, raw)| Node {
        id: ids[i].clone(),
        content: Arc::new(raw.content),
        parent: raw.parent.unwrap_or(NO_PARENT),
        subtree_end: 0,
        begin: raw.begin as u32,
        end: raw.end as u32,
        begin_pos: begin_pos[i],
        end_pos: end_pos[i],
        inherited_tags: InheritedTags::default(),
    }));
    let no_inherit: HashSet<&str> = no_inherit.iter().map(String::as_str).collect();
    super::inherit::derive(&mut nodes, |t| no_inherit.contains(t));
    // The outline gives each headline a parent before it on the path to it.
    let linked = link_subtrees(&mut nodes);
    debug_assert!(linked, "a parsed outline is a tree in document order");
    Parsed {
        nodes,
        file_tags: file_tags.to_vec(),
    }
}
