//! Org's tags/property/TODO match syntax (the manual's "Matching tags and properties", as
//! `org-make-tags-matcher` reads it), over the store's nodes.
//!
//! ```text
//! match     = [or-groups] ["/" ["!"] todo-groups]
//! or-groups = group ("|" group)*            ; | binds looser than &
//! group     = term (["&"] term)*            ; + and - also start a new term
//! term      = ["+" | "-"] (TAG | "{" REGEXP "}" | PROPERTY OP ["*"] VALUE)
//! OP        = "=" | "==" | "<>" | "!=" | "/=" | "<" | "<=" | ">" | ">="
//! VALUE     = "\"" text "\"" | NUMBER | "{" REGEXP "}" | "\"<2026-11-27 Fri>\""
//! ```
//!
//! - `+work-boss`, `work&boss`, `work|home`: tags, own or inherited, compared
//!   case-sensitively; `{^proj}` is any tag matching the regexp.
//! - `PRIORITY="A"`, `Effort<>"1:00"`: string comparisons (a missing property reads as "");
//!   `LEVEL>2`, `Effort>=3`: numeric ones (text is read like `string-to-number`: its leading
//!   number, else 0); `With={Sarah|Denny}`, `With<>{^S}`: regexps (only `=` and `<>`);
//!   `SCHEDULED>="<2026-11-01>"`: time comparisons of absolute dates (a missing or unreadable
//!   date is the earliest). Relative dates (`<now>`, `<today>`, `<-5d>`) need a clock, which
//!   a trigger does not have: they are refused.
//! - A `*` after the operator (`PROP<>*"x"`) also requires the property to exist.
//! - Property names are case-insensitive and read the node's own drawer (Org's default of no
//!   property inheritance); `\-` writes a `-` in a name (`SOME\-PROP=1`). Special
//!   properties: `TODO`, `LEVEL` (stars counted as written), `PRIORITY` (`B`, Org's default,
//!   without a cookie), `CATEGORY`, `ITEM` (the title), `TAGS` and `ALLTAGS` (`:a:b:`),
//!   `SCHEDULED`, `DEADLINE`, `CLOSED`.
//! - After the last `/`: TODO keywords, `/TODO|NEXT`, `/-DONE`, `/{^WAIT}`; `/!` keeps only
//!   nodes whose keyword is a not-done one (`work/!`, `/!-WAITING`).
//!
//! Differences from Org: regexps use Rust's `regex` syntax (alternation `|`, groups `( )`),
//! not Emacs's (`\|`, `\( \)` — those are refused, so an Emacs-style regexp cannot silently
//! mean something else); like Emacs's default `case-fold-search` they ignore case (`(?-i)`
//! makes one case-sensitive). A `|` inside `{…}` or quotes does not split alternatives.
//! Spaces between terms, empty alternatives and anything unparsed are errors where Org would
//! silently ignore the rest of the string. Group tags are not expanded. Only headlines
//! match; the file node never does.

use crate::store::node::{keep_last, InheritedTags};
use crate::store::{Node, NodeContent, NodeKind, TodoType};
use regex::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A compiled match, with the text it was compiled from.
#[derive(Clone, Debug)]
pub struct OrgMatch {
    source: String,
    /// Alternatives of conjunctions; empty: every headline.
    tags: Vec<Vec<Signed<Term>>>,
    /// `/!`: only not-done TODO keywords.
    todo_only: bool,
    /// Alternatives of conjunctions over the TODO keyword; empty: any.
    todo: Vec<Vec<Signed<TodoTerm>>>,
}

impl PartialEq for OrgMatch {
    fn eq(&self, other: &OrgMatch) -> bool {
        self.source == other.source
    }
}

impl Eq for OrgMatch {}

#[derive(Clone, Debug)]
struct Signed<T> {
    negated: bool,
    term: T,
}

#[derive(Clone, Debug)]
enum Term {
    Tag(String),
    TagRegex(Regex),
    Property {
        name: String,
        op: Op,
        value: Operand,
        must_exist: bool,
    },
}

#[derive(Clone, Debug)]
enum TodoTerm {
    Keyword(String),
    Regex(Regex),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

impl Op {
    fn holds(self, ord: Ordering) -> bool {
        match self {
            Op::Lt => ord == Ordering::Less,
            Op::Le => ord != Ordering::Greater,
            Op::Eq => ord == Ordering::Equal,
            Op::Ne => ord != Ordering::Equal,
            Op::Ge => ord != Ordering::Less,
            Op::Gt => ord == Ordering::Greater,
        }
    }
}

/// An absolute Org time: (year, month, day, hour, minute).
type OrgTime = (i32, u32, u32, u32, u32);

#[derive(Clone, Debug)]
enum Operand {
    Str(String),
    Number(f64),
    Regex(Regex),
    Time(OrgTime),
}

/// What a match reads of a node: its content, its inherited tags and its category.
#[derive(Clone, Debug)]
pub struct MatchNode<'n> {
    pub content: &'n NodeContent,
    /// Tags from `#+FILETAGS` and ancestors (the store's [`Node::inherited_tags`]).
    pub inherited_tags: &'n InheritedTags,
    /// `CATEGORY`, when known.
    pub category: Option<Cow<'n, str>>,
}

impl<'n> MatchNode<'n> {
    /// `node` without a category (`CATEGORY` then reads as "").
    pub fn of(node: &'n Node) -> MatchNode<'n> {
        MatchNode {
            content: &node.content,
            inherited_tags: &node.inherited_tags,
            category: None,
        }
    }

    /// Node `index` of a file's nodes (as the store parses them; index 0 is the file node),
    /// with its category as Org finds it: a `:CATEGORY:` property of the node or an
    /// ancestor, else the file's `#+CATEGORY:`, else the file name without its extension.
    pub fn in_file(nodes: &'n [Node], index: usize, file: &str) -> Option<MatchNode<'n>> {
        let node = nodes.get(index)?;
        let mut category = None;
        let mut cur = Some(node);
        while let Some(n) = cur {
            if let Some(c) = n.content.property("CATEGORY") {
                category = Some(Cow::Borrowed(c.trim()));
                break;
            }
            cur = n.parent().and_then(|p| nodes.get(p as usize));
        }
        let keyword = || {
            let file_node = nodes.first().filter(|n| n.content.kind == NodeKind::File)?;
            file_node
                .content
                .body_or_notice()
                .lines()
                .rev()
                .find_map(|line| {
                    let rest = line.trim_start();
                    let key = rest.get(..11)?;
                    key.eq_ignore_ascii_case("#+CATEGORY:")
                        .then(|| Cow::Owned(rest[11..].trim().to_owned()))
                })
        };
        let stem = || {
            let name = file.rsplit('/').next().unwrap_or(file);
            let stem = name.split_once('.').map_or(name, |(s, _)| s);
            Cow::Owned(stem.to_owned())
        };
        Some(MatchNode {
            content: &node.content,
            inherited_tags: &node.inherited_tags,
            category: Some(category.or_else(keyword).unwrap_or_else(stem)),
        })
    }

    fn tags(&self) -> impl Iterator<Item = &str> {
        self.content
            .tags
            .iter()
            .map(String::as_str)
            .chain(self.inherited_tags.iter())
    }

    /// A property as a match reads it: the special ones computed, the rest from the drawer.
    fn property(&self, name: &str) -> Option<Cow<'_, str>> {
        let c = self.content;
        let tag_list = |tags: Vec<&str>| {
            (!tags.is_empty()).then(|| Cow::Owned(format!(":{}:", tags.join(":"))))
        };
        match name {
            "TODO" => c.todo.as_deref().map(Cow::Borrowed),
            "LEVEL" => Some(Cow::Owned(c.level.to_string())),
            "PRIORITY" => Some(Cow::Owned(c.priority.unwrap_or('B').to_string())),
            "CATEGORY" => self.category.as_deref().map(Cow::Borrowed),
            "ITEM" => Some(Cow::Borrowed(&c.title)),
            "TAGS" => tag_list(c.tags.iter().map(String::as_str).collect()),
            // As `org-get-tags` gives them (see `store::inherit`).
            "ALLTAGS" => {
                let mut all = self.inherited_tags.as_org(&c.tags);
                all.extend(keep_last(c.tags.iter().map(String::as_str)));
                tag_list(all)
            }
            "SCHEDULED" => c.planning.scheduled.as_deref().map(Cow::Borrowed),
            "DEADLINE" => c.planning.deadline.as_deref().map(Cow::Borrowed),
            "CLOSED" => c.planning.closed.as_deref().map(Cow::Borrowed),
            _ => c.property(name).map(|v| Cow::Borrowed(v.trim())),
        }
    }
}

impl OrgMatch {
    /// Compile `source`; an error says what is wrong and where (a 1-based column).
    pub fn parse(source: &str) -> Result<OrgMatch, String> {
        let text = source.trim();
        let (tags_part, todo_part) = match todo_slash(text) {
            Some(i) => (&text[..i], Some(&text[i + 1..])),
            None => (text, None),
        };
        let offset = source.chars().count() - source.trim_start().chars().count();
        let mut m = OrgMatch {
            source: source.to_owned(),
            tags: Vec::new(),
            todo_only: false,
            todo: Vec::new(),
        };
        if !tags_part.is_empty() {
            m.tags = Lexer::new(tags_part, offset).groups(Lexer::term)?;
        }
        if let Some(mut todo) = todo_part {
            let mut at = offset + tags_part.chars().count() + 1;
            if let Some(rest) = todo.strip_prefix('!') {
                m.todo_only = true;
                todo = rest;
                at += 1;
            }
            if !todo.is_empty() {
                m.todo = Lexer::new(todo, at).groups(Lexer::todo_term)?;
            }
        }
        Ok(m)
    }

    /// The match as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the headline `node` matches.
    pub fn matches(&self, node: &MatchNode) -> bool {
        if node.content.kind != NodeKind::Headline {
            return false;
        }
        if self.todo_only && node.content.todo_type != Some(TodoType::Todo) {
            return false;
        }
        any_group(&self.tags, |t| t.holds(node))
            && any_group(&self.todo, |t| {
                let todo = node.content.todo.as_deref();
                match t {
                    TodoTerm::Keyword(k) => todo == Some(k.as_str()),
                    TodoTerm::Regex(re) => todo.is_some_and(|k| re.is_match(k)),
                }
            })
    }
}

/// Whether some alternative has all its terms hold (a negated term: not hold); no
/// alternatives: yes.
fn any_group<T>(groups: &[Vec<Signed<T>>], holds: impl Fn(&T) -> bool) -> bool {
    groups.is_empty()
        || groups
            .iter()
            .any(|g| g.iter().all(|t| holds(&t.term) != t.negated))
}

impl Term {
    fn holds(&self, node: &MatchNode) -> bool {
        match self {
            Term::Tag(tag) => node.tags().any(|t| t == tag),
            Term::TagRegex(re) => node.tags().any(|t| re.is_match(t)),
            Term::Property {
                name,
                op,
                value,
                must_exist,
            } => {
                let got = node.property(name);
                if *must_exist && got.is_none() {
                    return false;
                }
                let text = got.as_deref().unwrap_or("");
                match value {
                    Operand::Regex(re) => re.is_match(text) == (*op == Op::Eq),
                    Operand::Str(s) => op.holds(text.cmp(s.as_str())),
                    Operand::Number(n) => string_to_number(text)
                        .partial_cmp(n)
                        .is_some_and(|o| op.holds(o)),
                    Operand::Time(t) => op.holds(org_time(text).cmp(&Some(*t))),
                }
            }
        }
    }
}

/// Where the TODO part starts: the last `/` outside braces and quotes that is not the `/=`
/// operator.
fn todo_slash(text: &str) -> Option<usize> {
    let (mut brace, mut quote, mut last) = (false, false, None);
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' if !quote => brace = true,
            b'}' if !quote => brace = false,
            b'"' if !brace => quote = !quote,
            b'/' if !brace && !quote && bytes.get(i + 1) != Some(&b'=') => last = Some(i),
            _ => {}
        }
    }
    last
}

/// Emacs's `string-to-number`: the leading decimal number of `text`, else 0.
fn string_to_number(text: &str) -> f64 {
    let t = text.trim_start_matches([' ', '\t']);
    let b = t.as_bytes();
    let mut end = 0;
    let mut best = 0.0;
    while end < b.len() && (b[end].is_ascii_digit() || b"+-.eE".contains(&b[end])) {
        end += 1;
        if let Ok(n) = t[..end].parse::<f64>() {
            best = n;
        }
    }
    if best.is_finite() {
        best
    } else {
        0.0
    }
}

/// The first `YYYY-MM-DD[ Day][ H:MM]` in `text`, as Org's `org-parse-time-string` finds it.
fn org_time(text: &str) -> Option<OrgTime> {
    let b = text.as_bytes();
    let start = (0..b.len().saturating_sub(9)).find(|&i| {
        let w = &b[i..i + 10];
        w[4] == b'-'
            && w[7] == b'-'
            && w.iter()
                .enumerate()
                .all(|(j, c)| j == 4 || j == 7 || c.is_ascii_digit())
    })?;
    let date = &text[start..start + 10];
    let (y, m, d) = (
        date[..4].parse().ok()?,
        date[5..7].parse().ok()?,
        date[8..10].parse().ok()?,
    );
    let rest = &text[start + 10..];
    let clock = rest
        .split(|c: char| c.is_whitespace() || c == '>' || c == ']')
        .filter(|w| !w.is_empty())
        .take(2)
        .find_map(|w| {
            let (h, mi) = w.split_once(':')?;
            let mi = mi.get(..2)?;
            (h.len() <= 2).then_some(())?;
            Some((h.parse().ok()?, mi.parse().ok()?))
        });
    let (h, mi) = clock.unwrap_or((0, 0));
    Some((y, m, d, h, mi))
}

fn regex(pattern: &str, at: usize) -> Result<Regex, String> {
    for emacs in ["\\|", "\\(", "\\)"] {
        if pattern.contains(emacs) {
            return Err(format!(
                "the regexp {{{pattern}}} at column {at} uses Emacs syntax {emacs}; \
                 regexps here are Rust's: write | ( ) for alternation and groups, \
                 [|] [(] [)] for the characters"
            ));
        }
    }
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .map_err(|e| format!("the regexp {{{pattern}}} at column {at}: {e}"))
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '@' | '#' | '%')
}

struct Lexer<'t> {
    text: &'t str,
    pos: usize,
    /// Column of `text`'s start in the whole match, for errors.
    offset: usize,
}

impl<'t> Lexer<'t> {
    fn new(text: &'t str, offset: usize) -> Lexer<'t> {
        Lexer {
            text,
            pos: 0,
            offset,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// 1-based column of the current position in the whole match.
    fn column(&self) -> usize {
        self.offset + self.text[..self.pos].chars().count() + 1
    }

    fn unexpected(&self) -> String {
        match self.peek() {
            Some(' ') => format!(
                "a space at column {}: terms are joined by +, -, & or |, without spaces",
                self.column()
            ),
            Some(c) => format!("unexpected {c:?} at column {}", self.column()),
            None => format!("the match ends too early (column {})", self.column()),
        }
    }

    /// `group ("|" group)*`, each group a run of signed terms read by `term`.
    fn groups<T>(
        &mut self,
        term: fn(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<Vec<Signed<T>>>, String> {
        let mut groups = Vec::new();
        loop {
            let mut group = Vec::new();
            while self.peek().is_some_and(|c| c != '|') {
                self.eat('&');
                let negated = match self.peek() {
                    Some('-') => true,
                    Some('+' | ':') => false,
                    _ => {
                        group.push(Signed {
                            negated: false,
                            term: term(self)?,
                        });
                        continue;
                    }
                };
                self.pos += 1;
                group.push(Signed {
                    negated,
                    term: term(self)?,
                });
            }
            if group.is_empty() {
                return Err(format!(
                    "an empty alternative at column {} (nothing around a |)",
                    self.column()
                ));
            }
            groups.push(group);
            if !self.eat('|') {
                return Ok(groups);
            }
        }
    }

    /// `{regexp}`, the braces included; `at` the column of `{`.
    fn braced(&mut self) -> Result<(String, usize), String> {
        let at = self.column();
        self.pos += 1;
        let rest = &self.text[self.pos..];
        let end = rest
            .find('}')
            .ok_or(format!("the {{ at column {at} is never closed"))?;
        if end == 0 {
            return Err(format!("an empty {{}} at column {at}"));
        }
        let inner = rest[..end].to_owned();
        self.pos += end + 1;
        Ok((inner, at))
    }

    /// A tag or property name; `\X` escapes a character (so `\-` is a `-`).
    fn word(&mut self) -> (String, bool) {
        let mut out = String::new();
        let mut escaped = false;
        while let Some(c) = self.peek() {
            if c == '\\' {
                let Some(next) = self.text[self.pos + 1..].chars().next() else {
                    break;
                };
                if next.is_whitespace() {
                    break;
                }
                out.push(next);
                escaped = true;
                self.pos += 1 + next.len_utf8();
            } else if is_tag_char(c) {
                out.push(c);
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        (out, escaped)
    }

    fn term(&mut self) -> Result<Term, String> {
        if self.peek() == Some('{') {
            let (pattern, at) = self.braced()?;
            return Ok(Term::TagRegex(regex(&pattern, at)?));
        }
        let at = self.column();
        let (word, escaped) = self.word();
        if word.is_empty() {
            return Err(self.unexpected());
        }
        let Some(op) = self.operator() else {
            if escaped {
                return Err(format!(
                    "{word:?} at column {at}: a tag has no \\ escapes (a property needs an \
                     operator and a value)"
                ));
            }
            return Ok(Term::Tag(word));
        };
        if word.contains(['@', '#', '%']) {
            return Err(format!("{word:?} at column {at} is not a property name"));
        }
        let must_exist = self.eat('*');
        let value = self.operand(op)?;
        Ok(Term::Property {
            name: word.to_uppercase(),
            op,
            value,
            must_exist,
        })
    }

    fn operator(&mut self) -> Option<Op> {
        let rest = &self.text[self.pos..];
        let (op, len) = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("<>", Op::Ne),
            ("!=", Op::Ne),
            ("/=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
            ("=", Op::Eq),
        ]
        .iter()
        .find(|(s, _)| rest.starts_with(s))
        .map(|(s, op)| (*op, s.len()))?;
        self.pos += len;
        Some(op)
    }

    fn operand(&mut self, op: Op) -> Result<Operand, String> {
        let at = self.column();
        match self.peek() {
            Some('{') => {
                let (pattern, at) = self.braced()?;
                if !matches!(op, Op::Eq | Op::Ne) {
                    return Err(format!(
                        "the regexp at column {at} compares with = or <> only"
                    ));
                }
                Ok(Operand::Regex(regex(&pattern, at)?))
            }
            Some('"') => {
                let rest = &self.text[self.pos + 1..];
                let end = rest
                    .find('"')
                    .ok_or(format!("the string at column {at} is never closed"))?;
                let s = rest[..end].to_owned();
                self.pos += end + 2;
                time_operand(&s, at).unwrap_or(Ok(Operand::Str(s)))
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '.' => {
                let rest = &self.text[self.pos..];
                let b = rest.as_bytes();
                let mut end = usize::from(b[0] == b'-');
                while end < b.len() && (b[end].is_ascii_digit() || b[end] == b'.') {
                    end += 1;
                }
                if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
                    let mut e = end + 1;
                    if e < b.len() && (b[e] == b'+' || b[e] == b'-') {
                        e += 1;
                    }
                    if e < b.len() && b[e].is_ascii_digit() {
                        while e < b.len() && b[e].is_ascii_digit() {
                            e += 1;
                        }
                        end = e;
                    }
                }
                let n: f64 = rest[..end]
                    .parse()
                    .map_err(|_| format!("{:?} at column {at} is not a number", &rest[..end]))?;
                self.pos += end;
                Ok(Operand::Number(n))
            }
            _ => Err(format!(
                "the value at column {at} is not a \"string\", a number or a {{regexp}}"
            )),
        }
    }

    fn todo_term(&mut self) -> Result<TodoTerm, String> {
        if self.peek() == Some('{') {
            let (pattern, at) = self.braced()?;
            return Ok(TodoTerm::Regex(regex(&pattern, at)?));
        }
        let start = self.pos;
        while self.peek().is_some_and(is_tag_char) {
            self.pos += self.peek().map_or(1, char::len_utf8);
        }
        if start == self.pos {
            return Err(self.unexpected());
        }
        Ok(TodoTerm::Keyword(self.text[start..self.pos].to_owned()))
    }
}

/// A quoted `"<…>"` or `"[…]"`: a time comparison (Org's `timep`), or `None` for a string.
fn time_operand(s: &str, at: usize) -> Option<Result<Operand, String>> {
    let inner = s.strip_prefix(['<', '['])?;
    let inner = inner.strip_suffix(['>', ']'])?;
    let relative = ["now", "today", "tomorrow", "yesterday", "+", "-"];
    if relative.iter().any(|r| inner.starts_with(r)) {
        return Some(Err(format!(
            "the time \"{s}\" at column {at} is relative; a trigger's match has no clock, \
             so only absolute dates (\"<2026-11-27>\") compare"
        )));
    }
    if !inner.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(
        org_time(inner)
            .map(Operand::Time)
            .ok_or(format!("\"{s}\" at column {at} is not an Org date")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const NOTES: &str = "#+FILETAGS: :home:
#+TODO: TODO NEXT WAITING | DONE CANCELLED
#+CATEGORY: chores
* TODO [#A] Project :work:project:
:PROPERTIES:
:Effort: 3
:With: Sarah
:END:
** NEXT Call Bob :phone:
SCHEDULED: <2026-11-27 Fri 10:00>
** DONE Write report :boss:
CLOSED: [2026-11-20 Fri 17:03]
** WAITING Answer
:PROPERTIES:
:CATEGORY: errands
:END:
*** Deep
* Garden :Outdoor:
:PROPERTIES:
:Effort: 1:30
:END:
";

    fn nodes() -> Vec<Node> {
        crate::store::parse::parse_with_defaults(NOTES, Path::new("/n/house.org"))
            .unwrap()
            .nodes
    }

    /// The titles of the headlines `m` matches, in order.
    fn hits(m: &str) -> Vec<String> {
        let m = OrgMatch::parse(m).unwrap_or_else(|e| panic!("{m}: {e}"));
        let nodes = nodes();
        (0..nodes.len())
            .filter_map(|i| MatchNode::in_file(&nodes, i, "/n/house.org"))
            .filter(|n| m.matches(n))
            .map(|n| n.content.title.to_string())
            .collect()
    }

    fn error(m: &str) -> String {
        OrgMatch::parse(m).expect_err(m)
    }

    #[test]
    fn tags() {
        let all = [
            "Project",
            "Call Bob",
            "Write report",
            "Answer",
            "Deep",
            "Garden",
        ];
        assert_eq!(
            hits(""),
            all,
            "an empty match: every headline, not the file"
        );
        assert_eq!(hits("work"), all[..5], "inherited tags count");
        assert_eq!(hits("+work"), all[..5]);
        assert_eq!(hits("home"), all, "#+FILETAGS are inherited");
        assert_eq!(hits("work-boss"), ["Project", "Call Bob", "Answer", "Deep"]);
        assert_eq!(hits("+work-boss-phone"), ["Project", "Answer", "Deep"]);
        assert_eq!(hits("-work"), ["Garden"]);
        assert_eq!(hits("phone|boss"), ["Call Bob", "Write report"]);
        assert_eq!(hits("work&phone"), ["Call Bob"]);
        assert_eq!(hits("&work&phone"), ["Call Bob"]);
        assert_eq!(hits("phone|Outdoor+home"), ["Call Bob", "Garden"]);
        assert_eq!(
            hits("outdoor"),
            Vec::<String>::new(),
            "tags are case-sensitive"
        );
        assert_eq!(hits("{^proj}"), all[..5]);
        assert_eq!(hits("{^out}"), ["Garden"], "regexps ignore case");
        assert_eq!(hits("{(?-i)^out}"), Vec::<String>::new());
        assert_eq!(hits("{^(boss|phone)$}"), ["Call Bob", "Write report"]);
        assert_eq!(hits("work-{^p}"), Vec::<String>::new());
        assert_eq!(
            hits("Outdoor|{^(zz|ph)}"),
            ["Call Bob", "Garden"],
            "a | in braces is the regexp's"
        );
    }

    #[test]
    fn properties() {
        assert_eq!(hits("Effort>2"), ["Project"]);
        assert_eq!(hits("Effort=1"), ["Garden"], "1:30 reads as 1, as in Emacs");
        assert_eq!(
            hits("Effort<1"),
            ["Call Bob", "Write report", "Answer", "Deep"]
        );
        assert_eq!(hits("effort=\"1:30\""), ["Garden"], "names ignore case");
        assert_eq!(hits("Effort<>\"\""), ["Project", "Garden"]);
        assert_eq!(
            hits("Effort<>*\"3\""),
            ["Garden"],
            "* requires the property"
        );
        assert_eq!(hits("Effort<>\"3\"").len(), 5, "missing reads as \"\"");
        assert_eq!(hits("With={^sa}"), ["Project"]);
        assert_eq!(
            hits("With<>{^Sa}+project"),
            ["Call Bob", "Write report", "Answer", "Deep"]
        );
        assert_eq!(hits("With=\"Sarah\"-boss"), ["Project"]);
        assert_eq!(
            hits("With>\"S\""),
            ["Project"],
            "strings compare as strings"
        );
        assert_eq!(hits("LEVEL>2"), ["Deep"]);
        assert_eq!(hits("LEVEL=1"), ["Project", "Garden"]);
        assert_eq!(hits("LEVEL=2-phone"), ["Write report", "Answer"]);
        assert_eq!(hits("TODO=\"NEXT\""), ["Call Bob"]);
        assert_eq!(hits("TODO={T$}"), ["Call Bob"]);
        assert_eq!(hits("PRIORITY=\"A\""), ["Project"]);
        assert_eq!(
            hits("PRIORITY=\"B\"&LEVEL=1"),
            ["Garden"],
            "B without a cookie"
        );
        assert_eq!(
            hits("CATEGORY=\"errands\""),
            ["Answer", "Deep"],
            "inherited"
        );
        assert_eq!(hits("CATEGORY=\"chores\"").len(), 4, "#+CATEGORY");
        assert_eq!(hits("ITEM={^Call}"), ["Call Bob"]);
        assert_eq!(hits("TAGS=\":work:project:\""), ["Project"]);
        assert_eq!(hits("ALLTAGS={:boss:}"), ["Write report"]);
        assert_eq!(hits("SOME\\-PROP=1"), Vec::<String>::new());
    }

    #[test]
    fn dates() {
        assert_eq!(hits("SCHEDULED>=\"<2026-11-27>\""), ["Call Bob"]);
        assert_eq!(
            hits("SCHEDULED>\"<2026-11-27 Fri 10:00>\""),
            Vec::<String>::new()
        );
        assert_eq!(hits("SCHEDULED>\"<2026-11-27 09:59>\""), ["Call Bob"]);
        assert_eq!(
            hits("SCHEDULED<\"<2026-11-28>\"").len(),
            6,
            "none is earliest"
        );
        assert_eq!(
            hits("CLOSED<\"[2026-11-21]\"&CLOSED>\"[2026-01-01]\""),
            ["Write report"]
        );
        assert!(error("SCHEDULED<\"<today>\"").contains("relative"));
        assert!(error("SCHEDULED<\"<-5d>\"").contains("relative"));
        assert!(error("SCHEDULED<\"<2026-1-1>\"").contains("not an Org date"));
    }

    #[test]
    fn todo_keywords() {
        assert_eq!(hits("/NEXT"), ["Call Bob"]);
        assert_eq!(hits("/TODO|NEXT"), ["Project", "Call Bob"]);
        assert_eq!(hits("work/-DONE-WAITING"), ["Project", "Call Bob", "Deep"]);
        assert_eq!(hits("/!"), ["Project", "Call Bob", "Answer"]);
        assert_eq!(hits("work/!-WAITING"), ["Project", "Call Bob"]);
        assert_eq!(hits("/{^W}"), ["Answer"]);
        assert_eq!(hits("-boss/DONE"), Vec::<String>::new());
        assert_eq!(hits("LEVEL=2/DONE|WAITING"), ["Write report", "Answer"]);
        assert_eq!(
            hits("ITEM={a/b}"),
            Vec::<String>::new(),
            "a / in braces is no TODO part"
        );
        assert_eq!(hits("Effort/=*3"), ["Garden"], "/= is an operator");
    }

    #[test]
    fn errors_say_what_and_where() {
        for (m, says) in [
            ("work boss", "a space at column 5"),
            ("work|", "empty alternative"),
            ("|work", "empty alternative"),
            ("work-", "ends too early"),
            ("work+(x)", "unexpected '(' at column 6"),
            ("{unclosed", "the { at column 1 is never closed"),
            ("{}", "empty {}"),
            ("{a(}", "the regexp {a(} at column 1"),
            ("With={Sarah\\|Denny}", "Emacs syntax \\|"),
            ("With<{a}", "= or <> only"),
            ("With=\"open", "never closed"),
            ("With=Sarah", "is not a \"string\", a number or a {regexp}"),
            ("Effort>1..2", "not a number"),
            ("a\\-b", "a tag has no \\ escapes"),
            ("@home=1", "not a property name"),
            ("/TODO|", "empty alternative"),
            ("/=", "unexpected '/' at column 1"),
        ] {
            let e = error(m);
            assert!(e.contains(says), "{m}: {e}");
        }
    }

    #[test]
    fn equal_by_source() {
        let a = OrgMatch::parse("work").unwrap();
        assert_eq!(a, OrgMatch::parse("work").unwrap());
        assert_ne!(a, OrgMatch::parse("+work").unwrap());
        assert_eq!(a.source(), "work");
        assert_eq!(string_to_number(" 12abc"), 12.0);
        assert_eq!(string_to_number("-1.5e2x"), -150.0);
        assert_eq!(string_to_number("abc"), 0.0);
    }
}
