//! Inline Markdown → Org within one paragraph: emphasis, strike-through, code spans, links
//! (inline and reference), images, autolinks, inline HTML, backslash escapes. Works on what of
//! the paragraph has arrived: a construct whose end is not there yet stops the scan (`Need`),
//! and the rest waits for more text or the end of the paragraph. A decision is only taken once
//! no later character can change it, so the output does not depend on how the text was split.
//!
//! The text may hold line breaks (a paragraph's lines, joined): emphasis, links, code spans
//! and HTML elements may span them. Org's emphasis spans at most one line break
//! (`org-emphasis-regexp-components`), so one holding more is written line by line, each line
//! marked up on its own, and so is everything inside it; a code span's line breaks are spaces
//! (as in CommonMark); a link's text keeps them (Org's link descriptions may span lines) except
//! inside emphasis written line by line.

use super::refs::{is_hole, normalize, org_link, Refs, MAX_LABEL};

/// How far (bytes) an opener looks for its closer; past it the opener is plain text. Bounds
/// the rescans of a streamed paragraph, and is a property of the text alone.
pub const MAX_SPAN: usize = 4096;
/// Runs of marks longer than this are plain text (no Markdown writes them as markup).
pub const LONG_RUN: usize = 16;
/// How deep constructs nest (emphasis in a link in emphasis…) before inner text is left as is.
const MAX_DEPTH: u8 = 4;
/// The longest opening HTML tag (bytes) read as one: `<a href="…">` with a long address.
const MAX_TAG: usize = 2048;
/// The slot of [`Inline::dead`] for `</`, the start of every closing HTML tag.
const SLOT_END_TAG: usize = 10;
/// The slot of [`Inline::dead`] for `]]`, the end of an Org link.
const SLOT_ORG_LINK: usize = 11;

/// What the scan of one paragraph knows besides its text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline {
    /// Markdown has been seen in the answer: a single `*x*` or `_x_` is Markdown italics
    /// (before, it is left as Org's bold or underline).
    pub markdown: bool,
    /// The text is a table cell: `<br>` becomes a space, `\|` is `\vert{}`.
    pub table: bool,
    /// The text must stay on one line (a headline): `<br>` becomes a space.
    pub one_line: bool,
    /// The text is inside a construct written line by line: a construct holding a line
    /// break is written line by line too.
    split: bool,
    /// The text is a link's: no reference in it is a link (links do not nest), nor a hole
    /// (whose filling would hold marks of its own).
    in_link: bool,
    /// The character before the text (`None`: the line's start).
    pub prev: Option<char>,
    /// Where the next text starts in its paragraph (bytes).
    at: usize,
    /// For each kind of closer (see [`slot`]), the byte of the paragraph before which there
    /// is none: a closer's validity does not depend on its opener, so a later opener's search
    /// starts there, and a paragraph of openers without closers costs linear time.
    dead: [usize; 12],
}

/// What a construct at the scan's position comes to.
enum Res {
    /// The rest of the paragraph is needed to decide.
    Need,
    /// This many bytes are plain text.
    Lit(usize),
    /// This Org text replaces this many bytes.
    Out(String, usize),
}

/// The inline HTML elements converted (the others stay text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    Bold,
    Italic,
    Strike,
    Underline,
    Code,
    Sub,
    Sup,
    Link,
}

impl Inline {
    /// The same settings for a new paragraph (or a cell, or the text of a construct).
    pub fn fresh(&self, prev: Option<char>) -> Inline {
        Inline {
            prev,
            at: 0,
            dead: [0; 12],
            ..*self
        }
    }

    /// Convert `s`, a piece of one paragraph starting where the last call stopped; `eol`:
    /// `s` runs to the end of the paragraph. Returns the Org text and how many bytes of `s`
    /// it covers; the rest must be offered again with more text (never when `eol`).
    /// Reference links are resolved with `refs`, or left there as holes (see [`Refs`]).
    pub fn convert(&mut self, s: &str, eol: bool, refs: &mut Refs) -> (String, usize) {
        let (out, n) = self.scan(s, eol, 0, refs);
        self.at += n;
        (out, n)
    }

    fn scan(&mut self, s: &str, eol: bool, depth: u8, refs: &mut Refs) -> (String, usize) {
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        while i < s.len() {
            let c = s[i..].chars().next().unwrap_or(' ');
            let at = (depth, self.at + i);
            let res = match c {
                '*' | '_' | '~' => self.emphasis(&s[i..], c, eol, at, refs),
                '`' => self.code(&s[i..], eol, at),
                '[' => self.link(&s[i..], eol, at, false, refs),
                '!' => self.image(&s[i..], eol, at, refs),
                '<' => self.angle(&s[i..], eol, at, refs),
                '\\' => self.escape(&s[i..], eol),
                _ => Res::Lit(c.len_utf8()),
            };
            let n = match res {
                Res::Need => break,
                Res::Lit(n) => {
                    out.push_str(&s[i..i + n]);
                    n
                }
                Res::Out(text, n) => {
                    out.push_str(&text);
                    n
                }
            };
            self.prev = s[i..i + n].chars().next_back();
            i += n;
        }
        (out, i)
    }

    /// The text of a construct, converted (as a whole paragraph: it is complete); `split`:
    /// the construct is written line by line.
    fn inner(&mut self, s: &str, before: char, depth: u8, split: bool, refs: &mut Refs) -> String {
        if depth >= MAX_DEPTH {
            return s.to_string();
        }
        let mut sub = self.fresh(Some(before));
        sub.split = split;
        let (out, _) = sub.scan(s, true, depth + 1, refs);
        self.markdown = sub.markdown;
        out
    }

    /// `**bold**`, `__bold__`, `*italic*`, `_italic_`, `***both***`, `~~strike~~`.
    /// `at`: how deep the scan is, and where `s` starts in the paragraph.
    fn emphasis(&mut self, s: &str, c: char, eol: bool, at: (u8, usize), refs: &mut Refs) -> Res {
        let (depth, abs) = at;
        let run = s.bytes().take_while(|&b| b == c as u8).count();
        // A long run is text, and so is its tail (a run is whole, so only a run cut by
        // the line's arrival in pieces follows the same mark).
        if run > LONG_RUN || self.prev == Some(c) {
            return Res::Lit(run);
        }
        if run == s.len() {
            return if eol { Res::Lit(run) } else { Res::Need };
        }
        let wanted = if c == '~' { run == 2 } else { run <= 3 };
        let after = s[run..].chars().next().unwrap_or(' ');
        // An opener is followed by text and not glued to a word before it (snake_case).
        if !wanted || after.is_whitespace() || self.prev.is_some_and(char::is_alphanumeric) {
            return Res::Lit(run);
        }
        let slot = slot(c, run).filter(|_| depth == 0);
        let from = slot.map_or(run, |k| self.dead[k].saturating_sub(abs).max(run));
        let close = match find_closer(s, c, run, from, eol) {
            Closer::At(j) => j,
            Closer::Need => return Res::Need,
            Closer::None(stop) => {
                if let Some(k) = slot {
                    self.dead[k] = self.dead[k].max(abs + stop);
                }
                return Res::Lit(run);
            }
        };
        let (open, shut) = match (c, run) {
            ('~', _) => ("+", "+"),
            (_, 2) => ("*", "*"),
            (_, 3) => ("*/", "/*"),
            ('*', _) if !self.markdown => ("*", "*"),
            ('_', _) if !self.markdown => ("_", "_"),
            _ => ("/", "/"),
        };
        // `**`, `__`, `~~` are Markdown; so is what they hold (`**a *b* c**`).
        if run != 1 {
            self.markdown = true;
        }
        let span = &s[run..close];
        let split = self.split || breaks(span) > 1;
        let inner = self.inner(span, c, depth, split, refs);
        let split = split || breaks(&inner) > 1;
        Res::Out(wrap(open, &inner, shut, split), close + run)
    }

    /// `` `code` `` (any run of backticks, closed by the same run) → `~code~`, or `=code=`
    /// when the code holds a tilde; its line breaks are spaces.
    fn code(&mut self, s: &str, eol: bool, at: (u8, usize)) -> Res {
        let (depth, abs) = at;
        let run = s.bytes().take_while(|&b| b == b'`').count();
        if run > LONG_RUN || self.prev == Some('`') {
            return Res::Lit(run);
        }
        if run == s.len() && !eol {
            return Res::Need;
        }
        let slot = slot('`', run).filter(|_| depth == 0);
        let mut j = slot.map_or(run, |k| self.dead[k].saturating_sub(abs).max(run));
        let mut dead = |stop: usize, res: Res| {
            if let (Some(k), Res::Lit(_)) = (slot, &res) {
                self.dead[k] = self.dead[k].max(abs + stop);
            }
            res
        };
        loop {
            let Some(k) = s[j..].find('`') else {
                return dead(s.len(), undecided(s, eol, run));
            };
            let start = j + k;
            let len = s[start..].bytes().take_while(|&b| b == b'`').count();
            if start + len == s.len() && !eol {
                return Res::Need;
            }
            if len == run {
                let code = one_line(&s[run..start]);
                let code = code.trim();
                if code.is_empty() {
                    return Res::Lit(start + len);
                }
                self.markdown = true;
                return Res::Out(verbatim(code), start + len);
            }
            if start > MAX_SPAN {
                return dead(start, Res::Lit(run));
            }
            j = start + len;
        }
    }

    /// `[text](url "title")` → `[[url][text]]`; `[text][label]`, `[text][]` and `[label]`
    /// through the definitions in `refs` (a full or collapsed reference not defined yet is
    /// a hole); `[[…]]` (an Org link) as it is. `image`: `s` follows a `!`.
    fn link(&mut self, s: &str, eol: bool, at: (u8, usize), image: bool, refs: &mut Refs) -> Res {
        let (depth, abs) = at;
        if s == "[" && !eol {
            return Res::Need;
        }
        // No `]` at all (memchr): the usual case of a lone `[`, and a cheap one.
        let near = &s.as_bytes()[..s.len().min(MAX_SPAN)];
        if !near[1..].contains(&b']') {
            return undecided(s, eol, 1);
        }
        if s.starts_with("[[") {
            let slot = (depth == 0).then_some(SLOT_ORG_LINK);
            let from = slot.map_or(2, |k| self.dead[k].saturating_sub(abs).max(2));
            return match memchr::memmem::find(&near[from.min(near.len())..], b"]]") {
                Some(k) => Res::Lit(from + k + 2),
                None => {
                    let res = undecided(s, eol, 1);
                    if let (Some(k), Res::Lit(_)) = (slot, &res) {
                        // A `]` last may be half of one.
                        let stop = near.len().saturating_sub(1).max(from);
                        self.dead[k] = self.dead[k].max(abs + stop);
                    }
                    res
                }
            };
        }
        let Some(close) = matching(s, b'[', b']') else {
            return undecided(s, eol, 1);
        };
        match s.as_bytes().get(close + 1) {
            None if !eol => return Res::Need,
            Some(b'(') => {}
            Some(b'[') => return self.reference(s, close, eol, (depth, image), refs),
            _ => return self.shortcut(s, close, depth, refs),
        }
        let Some(end) = matching(&s[close + 1..], b'(', b')').map(|k| close + 1 + k) else {
            return undecided(s, eol, 1);
        };
        let dest = s[close + 2..end].trim();
        let url = match dest.strip_prefix('<').and_then(|d| d.split_once('>')) {
            Some((url, _)) => url,
            None => dest.split_whitespace().next().unwrap_or(""),
        };
        if url.is_empty() {
            return Res::Lit(1);
        }
        self.markdown = true;
        let text = self.link_text(&s[1..close], depth, refs);
        Res::Out(org_link(url, &text), end + 1)
    }

    /// A link's text, converted; on one line inside a construct written line by line.
    fn link_text(&mut self, raw: &str, depth: u8, refs: &mut Refs) -> String {
        let outside = self.in_link;
        self.in_link = true;
        let text = self.inner(raw, '[', depth, self.split, refs);
        self.in_link = outside;
        let text = text.trim();
        if self.split && text.contains('\n') {
            one_line(text).into_owned()
        } else {
            text.to_string()
        }
    }

    /// `[text][label]` or `[text][]` (`s[close]` ends the text): a link when the label is
    /// defined, else a hole in `refs` filled when its definition comes (or with the text as it
    /// was at the end of the answer). `how`: the depth, and whether `s` follows a `!` (an
    /// image: its link has no text, its fallback the `!`).
    fn reference(
        &mut self,
        s: &str,
        close: usize,
        eol: bool,
        how: (u8, bool),
        refs: &mut Refs,
    ) -> Res {
        let (depth, image) = how;
        if self.in_link {
            return Res::Lit(1);
        }
        let rest = &s[close + 1..];
        let b = rest.as_bytes();
        let mut j = 1;
        loop {
            if j >= b.len() || j > MAX_LABEL {
                if eol || j > MAX_LABEL || s.len() > MAX_SPAN {
                    return self.shortcut(s, close, depth, refs);
                }
                return Res::Need;
            }
            match b[j] {
                b'\\' => j += 2,
                b'[' => return self.shortcut(s, close, depth, refs),
                b']' => break,
                _ => j += 1,
            }
        }
        let given = &rest[1..j];
        let label = if given.trim().is_empty() {
            &s[1..close]
        } else {
            given
        };
        let end = close + 1 + j + 1;
        if normalize(label).is_empty() {
            return Res::Lit(1);
        }
        if let Some(url) = refs.url(label) {
            let url = url.to_string();
            self.markdown = true;
            let text = self.link_text(&s[1..close], depth, refs);
            return Res::Out(org_link(&url, &text), end);
        }
        self.markdown = true;
        let text = if image {
            String::new()
        } else {
            self.link_text(&s[1..close], depth, refs)
        };
        let mut fallback = String::from(if image { "![" } else { "[" });
        self.in_link = true;
        fallback.push_str(&self.inner(&s[1..close], '[', depth, self.split, refs));
        self.in_link = false;
        fallback.push(']');
        fallback.push_str(&rest[..=j]);
        Res::Out(refs.hole(label, text, fallback), end)
    }

    /// `[label]` alone: a link when the label is defined (before it), else text.
    fn shortcut(&mut self, s: &str, close: usize, depth: u8, refs: &mut Refs) -> Res {
        if self.in_link {
            return Res::Lit(1);
        }
        let Some(url) = refs.url(&s[1..close]).map(str::to_string) else {
            return Res::Lit(1);
        };
        self.markdown = true;
        let text = self.link_text(&s[1..close], depth, refs);
        Res::Out(org_link(&url, &text), close + 1)
    }

    /// `![alt](url)` → `[[url]]`, which Org shows inline.
    fn image(&mut self, s: &str, eol: bool, at: (u8, usize), refs: &mut Refs) -> Res {
        let (depth, abs) = at;
        match s.as_bytes().get(1) {
            None if !eol => Res::Need,
            Some(b'[') if !s[1..].starts_with("[[") => {
                match self.link(&s[1..], eol, (depth, abs + 1), true, refs) {
                    Res::Need => Res::Need,
                    Res::Lit(_) => Res::Lit(1),
                    Res::Out(hole, n) if is_hole(&hole) => Res::Out(hole, n + 1),
                    Res::Out(link, n) => {
                        let url = link[2..].split("][").next().unwrap_or("");
                        let url = url.trim_end_matches(']');
                        Res::Out(format!("[[{url}]]"), n + 1)
                    }
                }
            }
            _ => Res::Lit(1),
        }
    }

    /// `<br>` (`<br/>`, `<br />`) → Org's line break; `<https://…>` → `[[https://…]]`;
    /// inline HTML elements (see [`Inline::tag`]).
    fn angle(&mut self, s: &str, eol: bool, at: (u8, usize), refs: &mut Refs) -> Res {
        let lower: String = s.chars().take(6).collect::<String>().to_ascii_lowercase();
        for br in ["<br>", "<br/>", "<br />"] {
            if lower.starts_with(br) {
                self.markdown = true;
                let n = br.len();
                if self.table || self.one_line {
                    return Res::Out(" ".into(), n);
                }
                // The next text starts a line of its own: no space before it.
                let rest = s[n..].trim_start_matches(' ');
                let skip = s.len() - rest.len();
                return match rest.chars().next() {
                    None if eol => Res::Out("\\\\".into(), skip),
                    None => Res::Need,
                    // The line ends here anyway.
                    Some('\n') => Res::Out("\\\\".into(), skip),
                    Some(_) => Res::Out("\\\\\n".into(), skip),
                };
            }
            if br.starts_with(&lower) && !eol {
                return Res::Need;
            }
        }
        for scheme in ["<https://", "<http://", "<mailto:"] {
            let k = scheme.len().min(s.len());
            if !s.as_bytes()[..k].eq_ignore_ascii_case(&scheme.as_bytes()[..k]) {
                continue;
            }
            if k < scheme.len() {
                return if eol { Res::Lit(1) } else { Res::Need };
            }
            return match s.find(|c: char| c == '>' || c.is_whitespace()) {
                Some(k) if s.as_bytes()[k] == b'>' => Res::Out(format!("[[{}]]", &s[1..k]), k + 1),
                Some(_) => Res::Lit(1),
                None => undecided(s, eol, 1),
            };
        }
        self.tag(s, eol, at, refs)
    }

    /// `<b>`/`<strong>` → `*…*`, `<i>`/`<em>` → `/…/`, `<s>`/`<del>`/`<strike>` → `+…+`,
    /// `<u>`/`<ins>` → `_…_`, `<code>`/`<kbd>`/`<tt>`/`<samp>` → `~…~`, `<sub>` → `_{…}`,
    /// `<sup>` → `^{…}`, `<a href="url">…</a>` → `[[url][…]]`, each up to its closing tag;
    /// any other tag, or one never closed, is text.
    fn tag(&mut self, s: &str, eol: bool, at: (u8, usize), refs: &mut Refs) -> Res {
        let (depth, abs) = at;
        let b = s.as_bytes();
        let name_len = b[1..]
            .iter()
            .take(8)
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        if name_len == 0 || name_len > 6 {
            return Res::Lit(1);
        }
        let Some(&after_name) = b.get(1 + name_len) else {
            return if eol { Res::Lit(1) } else { Res::Need };
        };
        if !matches!(after_name, b'>' | b' ' | b'\t' | b'\n') {
            return Res::Lit(1);
        }
        let name = s[1..1 + name_len].to_ascii_lowercase();
        let kind = match name.as_str() {
            "b" | "strong" => Tag::Bold,
            "i" | "em" => Tag::Italic,
            "s" | "del" | "strike" => Tag::Strike,
            "u" | "ins" => Tag::Underline,
            "code" | "kbd" | "tt" | "samp" => Tag::Code,
            "sub" => Tag::Sub,
            "sup" => Tag::Sup,
            "a" => Tag::Link,
            _ => return Res::Lit(1),
        };
        let gt = match tag_end(s, 1 + name_len) {
            Closer::At(k) => k,
            Closer::Need if !eol => return Res::Need,
            _ => return Res::Lit(1),
        };
        let attrs = &s[1 + name_len..gt];
        if attrs.trim_end().ends_with('/') {
            return Res::Lit(1);
        }
        let href = match kind {
            Tag::Link => match attribute(attrs, "href") {
                Some(h) if !h.trim().is_empty() => Some(h),
                _ => return Res::Lit(1),
            },
            _ => None,
        };
        let slot = (depth == 0).then_some(SLOT_END_TAG);
        let from = slot.map_or(gt + 1, |k| self.dead[k].saturating_sub(abs).max(gt + 1));
        let (start, end) = match closing_tag(s, from, &name, eol) {
            Closer::At(k) => k,
            Closer::Need => return Res::Need,
            Closer::None(stop) => {
                if let (Some(k), Some(stop)) = (slot, stop) {
                    self.dead[k] = self.dead[k].max(abs + stop);
                }
                return Res::Lit(1);
            }
        };
        self.markdown = true;
        let content = &s[gt + 1..start];
        let split = self.split || breaks(content) > 1;
        let out = match kind {
            Tag::Code => {
                let code = decode(&one_line(content)).into_owned();
                let code = code.trim();
                if code.is_empty() {
                    String::new()
                } else {
                    verbatim(code)
                }
            }
            Tag::Link => {
                let url = decode(href.unwrap_or("").trim()).into_owned();
                let text = self.link_text(content, depth, refs);
                org_link(&url, &text)
            }
            Tag::Sub | Tag::Sup => {
                let inner = self.inner(content, '>', depth, split, refs);
                let t = inner.trim();
                if t.is_empty() || t.contains(['{', '}', '\n']) {
                    inner
                } else {
                    let mark = if kind == Tag::Sub { '_' } else { '^' };
                    format!("{mark}{{{t}}}")
                }
            }
            Tag::Bold | Tag::Italic | Tag::Strike | Tag::Underline => {
                let mark = match kind {
                    Tag::Bold => "*",
                    Tag::Italic => "/",
                    Tag::Strike => "+",
                    _ => "_",
                };
                let inner = self.inner(content, '>', depth, split, refs);
                let split = split || breaks(&inner) > 1;
                wrap(mark, &inner, mark, split)
            }
        };
        Res::Out(out, end)
    }

    /// Markdown's backslash escapes: the character itself, as an Org entity where the bare
    /// character would be markup.
    fn escape(&mut self, s: &str, eol: bool) -> Res {
        let Some(c) = s[1..].chars().next() else {
            return if eol { Res::Lit(1) } else { Res::Need };
        };
        let out = match c {
            '*' => "\\ast{}".to_string(),
            '_' => "\\under{}".to_string(),
            '|' if self.table => "\\vert{}".to_string(),
            '\\' | '`' | '#' | '~' | '>' | '+' | '-' | '.' | '!' | '{' | '}' | '<' | '|' => {
                c.to_string()
            }
            _ => return Res::Lit(1),
        };
        Res::Out(out, 1 + c.len_utf8())
    }
}

/// `inner` marked up between `open` and `shut` as Org reads it: the marks hug text (spaces
/// at its ends go outside them), and are left out where they would not read as markup (no
/// text, or text starting or ending with the mark itself). `split`: each line on its own.
fn wrap(open: &str, inner: &str, shut: &str, split: bool) -> String {
    let mut out = String::with_capacity(inner.len() + 2 * open.len());
    if split && inner.contains('\n') {
        for (k, line) in inner.split('\n').enumerate() {
            if k > 0 {
                out.push('\n');
            }
            wrap_one(&mut out, open, line, shut);
        }
    } else {
        wrap_one(&mut out, open, inner, shut);
    }
    out
}

fn wrap_one(out: &mut String, open: &str, piece: &str, shut: &str) {
    let core = piece.trim();
    // A line break (`\\`) ends its line: it goes after the marks.
    let (core, brk) = match core.strip_suffix("\\\\") {
        Some(c) => (c.trim_end(), "\\\\"),
        None => (core, ""),
    };
    let clash = core.chars().next() == open.chars().next_back()
        || core.chars().next_back() == shut.chars().next();
    if core.is_empty() || clash {
        out.push_str(piece);
        return;
    }
    let lead = piece.len() - piece.trim_start().len();
    out.push_str(&piece[..lead]);
    out.push_str(open);
    out.push_str(core);
    out.push_str(shut);
    out.push_str(brk);
    out.push_str(&piece[piece.trim_end().len()..]);
}

/// `code` as Org's code (`~…~`), or verbatim (`=…=`) when it holds a tilde.
fn verbatim(code: &str) -> String {
    let mark = if code.contains('~') { '=' } else { '~' };
    format!("{mark}{code}{mark}")
}

/// How many line breaks `s` holds.
fn breaks(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

/// `s` on one line: each line break (with the indentation after it) a space.
fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\n') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    for (k, line) in s.split('\n').enumerate() {
        if k > 0 {
            out.push(' ');
            out.push_str(line.trim_start_matches([' ', '\t']));
        } else {
            out.push_str(line);
        }
    }
    out.into()
}

/// The few HTML entities a model writes in inline code and addresses, decoded.
fn decode(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(k) = rest.find('&') {
        out.push_str(&rest[..k]);
        rest = &rest[k..];
        let entity = [
            ("&lt;", "<"),
            ("&gt;", ">"),
            ("&amp;", "&"),
            ("&quot;", "\""),
            ("&#39;", "'"),
            ("&apos;", "'"),
        ]
        .into_iter()
        .find(|(e, _)| rest.starts_with(e));
        match entity {
            Some((e, c)) => {
                out.push_str(c);
                rest = &rest[e.len()..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out.into()
}

/// The value of attribute `name` (lowercase) in an HTML tag's `attrs`.
fn attribute<'a>(attrs: &'a str, name: &str) -> Option<&'a str> {
    let lower = attrs.to_ascii_lowercase();
    let mut from = 0;
    while let Some(k) = lower[from..].find(name) {
        let at = from + k;
        from = at + name.len();
        let glued = lower[..at]
            .chars()
            .next_back()
            .is_some_and(|c| !c.is_whitespace());
        let rest = attrs[from..].trim_start();
        let Some(value) = rest.strip_prefix('=') else {
            continue;
        };
        if glued {
            continue;
        }
        let value = value.trim_start();
        return Some(match value.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let v = &value[1..];
                &v[..v.find(q).unwrap_or(v.len())]
            }
            _ => &value[..value.find(char::is_whitespace).unwrap_or(value.len())],
        });
    }
    None
}

/// The `>` ending the opening tag that starts `s`, searched from `from` (quoted values may
/// hold `>`).
fn tag_end(s: &str, from: usize) -> Closer<usize, ()> {
    let mut quote = None;
    for (j, &c) in s.as_bytes().iter().enumerate().skip(from) {
        if j > MAX_TAG {
            return Closer::None(());
        }
        match (quote, c) {
            (None, b'>') => return Closer::At(j),
            (None, b'"' | b'\'') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            _ => {}
        }
    }
    Closer::Need
}

/// The closing tag `</name>` (any case, spaces before `>`) in `s` from `from`: where it
/// starts and ends.
/// When there is none: the byte before which `s` holds no `</` at all (if known).
fn closing_tag(
    s: &str,
    from: usize,
    name: &str,
    eol: bool,
) -> Closer<(usize, usize), Option<usize>> {
    let b = s.as_bytes();
    // Past MAX_SPAN no closer counts (a `</` may start at MAX_SPAN).
    let near = &b[..b.len().min(MAX_SPAN + 2)];
    let mut j = from;
    let mut first = None;
    loop {
        let Some(k) = memchr::memmem::find(&near[j.min(near.len())..], b"</") else {
            let stop = near.len().saturating_sub(1).max(from);
            return if eol || s.len() > MAX_SPAN {
                Closer::None(Some(first.unwrap_or(stop)))
            } else {
                Closer::Need
            };
        };
        let start = j + k;
        first = first.or(Some(start));
        if start > MAX_SPAN {
            return Closer::None(first);
        }
        let tail = &b[start + 2..];
        let n = name.len();
        if tail.len() < n + 1 {
            return if eol {
                Closer::None(first)
            } else {
                Closer::Need
            };
        }
        if tail[..n].eq_ignore_ascii_case(name.as_bytes()) {
            let spaces = tail[n..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            match tail.get(n + spaces) {
                Some(b'>') => return Closer::At((start, start + 2 + n + spaces + 1)),
                None if !eol => return Closer::Need,
                _ => {}
            }
        }
        j = start + 2;
    }
}

/// An opener's fate when its closer is not in `s`: plain text at the paragraph's end or
/// past [`MAX_SPAN`], else undecided.
fn undecided(s: &str, eol: bool, opener: usize) -> Res {
    if eol || s.len() > MAX_SPAN {
        Res::Lit(opener)
    } else {
        Res::Need
    }
}

/// The index in [`Inline::dead`] of closers of `run` × `c`, for those remembered.
fn slot(c: char, run: usize) -> Option<usize> {
    match (c, run) {
        ('*', 1..=3) => Some(run - 1),
        ('_', 1..=3) => Some(run + 2),
        ('~', 2) => Some(6),
        ('`', 1..=3) => Some(run + 6),
        _ => None,
    }
}

/// What the search for a closer found.
enum Closer<T = usize, S = usize> {
    /// The closer is here.
    At(T),
    /// More text is needed.
    Need,
    /// There is none; the search looked up to here.
    None(S),
}

/// The run of `run` × `c` closing the emphasis opened at the start of `s`, searched from
/// `from` (before it there is none).
fn find_closer(s: &str, c: char, run: usize, from: usize, eol: bool) -> Closer {
    let b = s.as_bytes();
    let mut j = from;
    while j < b.len() {
        if j > MAX_SPAN {
            return Closer::None(j);
        }
        if b[j] != c as u8 {
            j += 1;
            continue;
        }
        let len = b[j..].iter().take_while(|&&x| x == c as u8).count();
        let end = j + len;
        if end == b.len() && !eol {
            return Closer::Need;
        }
        let before = s[..j].chars().next_back().unwrap_or(' ');
        let after = s[end..].chars().next().unwrap_or(' ');
        if len == run && !before.is_whitespace() && !after.is_alphanumeric() {
            return Closer::At(j);
        }
        j = end;
    }
    if eol || s.len() > MAX_SPAN {
        Closer::None(b.len())
    } else {
        Closer::Need
    }
}

/// The index of the byte closing the bracket that opens `s` (nesting counted, backslash
/// escapes skipped), if it is there.
fn matching(s: &str, open: u8, close: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut j = 0;
    while j < b.len() && j <= MAX_SPAN {
        match b[j] {
            b'\\' => j += 1,
            x if x == open => depth += 1,
            x if x == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}
