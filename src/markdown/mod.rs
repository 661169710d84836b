//! Markdown → Org while the text streams. [`OrgStream`] takes a model's answer in chunks
//! split anywhere (inside `**`, inside a fence marker, mid-line) and returns Org text as soon
//! as it is decided, holding back at most the current line; [`OrgStream::finish`] flushes
//! the rest and closes what is open. The output for a text is the same however it is split.
//!
//! Blocks: ATX headings become headlines `base + level` deep; fences become `#+begin_src
//! LANG` (or `#+begin_example`) with lines starting `*` or `#+` comma-escaped as Org does;
//! `>` quotes become `#+begin_quote`; pipe tables become Org tables (`|---+---|`); rules
//! become `-----`; `*` bullets become `-`. Inline: see [`inline`]. Inside code nothing is
//! converted.
//!
//! Text that is already Org passes through: `#+` lines and Org blocks, `[[links]]`, lists,
//! `|---+---|`, `/italic/`, `=verbatim=`. Two forms mean different things in each: a line
//! `* text` (an Org headline, a Markdown bullet) and `*text*` / `_text_` (Org bold and
//! underline, Markdown italics). They are read as Org until the answer has shown Markdown (a
//! heading, fence, quote, `**bold**`, `` `code` ``, `[link](url)`, `~~strike~~`, a Markdown
//! table rule, `<br>`), as Markdown after. Org headlines are moved under the base level like
//! Markdown headings, so an answer can never close the heading it is written under; an
//! indented `* item`, or one right after a list item, is always a bullet.
//!
//! Not converted: emphasis and links spanning lines, Setext headings, tables without a
//! leading `|`, reference links, raw HTML other than `<br>`, indented code.
//!
//! Pure text in and out: no Emacs, no I/O, no recursion deeper than a few levels.

mod inline;
#[cfg(test)]
mod tests;

use inline::{Inline, LONG_RUN};

/// Marks (and spaces) a rule may have: a longer run of them is text.
const LONG_RULE: usize = 256;

/// `text` (a whole answer) as Org, its headings under level `base`.
pub fn to_org(text: &str, base: usize) -> String {
    let mut stream = OrgStream::new(base);
    let mut out = stream.push(text);
    out.push_str(&stream.finish());
    out
}

/// The block the current line is in.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Block {
    None,
    /// A fence of `len` × `ch` at `indent`: `#+begin_src` (`src`) or `#+begin_example`.
    Fence {
        ch: u8,
        len: usize,
        indent: String,
        src: bool,
    },
    /// An Org block the text opened itself (`#+begin_NAME`): passed through to its end.
    Org(String),
    Quote,
}

/// What is known of the current line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// Its kind is not known yet.
    Start,
    /// Prose: inline conversion of what arrives.
    Inline,
    /// As it is (code).
    Raw,
    /// Converted once all of it is there.
    Whole(Whole),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Whole {
    Heading,
    Keyword,
    FenceOpen,
    /// A line in a fence that starts with the fence's character: its end, or code.
    FenceLine,
    /// A line in an Org block starting with `#`: its end, or content.
    OrgLine,
    Table,
    Rule,
}

/// The streaming converter of one answer (or one step of it).
#[derive(Clone, Debug)]
pub struct OrgStream {
    base: usize,
    /// The undecided rest of the current line (never a newline).
    pending: String,
    line: Line,
    block: Block,
    inline: Inline,
    /// The current line's `>` markers are consumed (it is inside the quote).
    quote_line: bool,
    /// The last character returned, if any.
    last: Option<char>,
    /// The last line with text was a list item (or indented under one): a `* ` line after
    /// it is one more item, not a headline.
    in_list: bool,
}

impl OrgStream {
    /// A converter whose headings go under level `base` (0: top-level headlines).
    pub fn new(base: usize) -> OrgStream {
        OrgStream {
            base: base.min(50),
            pending: String::new(),
            line: Line::Start,
            block: Block::None,
            inline: Inline::default(),
            quote_line: false,
            last: None,
            in_list: false,
        }
    }

    /// Take the next `chunk` of the text; returns the Org text now decided.
    pub fn push(&mut self, chunk: &str) -> String {
        let mut out = String::with_capacity(chunk.len() + 16);
        let mut rest = chunk;
        while let Some(k) = rest.find('\n') {
            self.pending.push_str(&rest[..k]);
            self.step(&mut out, true);
            out.push('\n');
            self.line = Line::Start;
            self.quote_line = false;
            self.inline = self.inline.fresh(None);
            rest = &rest[k + 1..];
        }
        self.pending.push_str(rest);
        self.step(&mut out, false);
        self.note_last(&out);
        out
    }

    /// The text has ended: the rest of its last line, and the ends of blocks left open.
    /// The converter is then ready for more text (a next step of the answer), still knowing
    /// whether the answer writes Markdown.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.pending.is_empty() || self.line != Line::Start {
            self.step(&mut out, true);
        }
        self.note_last(&out);
        let end = match std::mem::replace(&mut self.block, Block::None) {
            Block::Fence { indent, src, .. } => Some(format!(
                "{indent}#+end_{}",
                if src { "src" } else { "example" }
            )),
            Block::Quote => Some("#+end_quote".to_string()),
            Block::Org(_) | Block::None => None,
        };
        if let Some(end) = end {
            if self.last.is_some_and(|c| c != '\n') {
                out.push('\n');
            }
            out.push_str(&end);
        }
        self.note_last(&out);
        self.pending.clear();
        self.line = Line::Start;
        self.quote_line = false;
        self.inline = self.inline.fresh(None);
        out
    }

    fn note_last(&mut self, out: &str) {
        if let Some(c) = out.chars().next_back() {
            self.last = Some(c);
        }
    }

    /// Convert what of the current line can be decided; `eol`: all of it is there.
    fn step(&mut self, out: &mut String, eol: bool) {
        loop {
            match self.line {
                Line::Start => {
                    if !self.classify(out, eol) {
                        return;
                    }
                }
                Line::Inline => {
                    let (text, n) = self.inline.convert(&self.pending, eol);
                    out.push_str(&text);
                    self.pending.drain(..n);
                    return;
                }
                Line::Raw => {
                    out.push_str(&self.pending);
                    self.pending.clear();
                    return;
                }
                Line::Whole(kind) => {
                    if eol {
                        let line = std::mem::take(&mut self.pending);
                        self.whole(kind, &line, out);
                        self.line = Line::Raw;
                    }
                    return;
                }
            }
        }
    }

    /// Decide the kind of the current line from its start, writing what its start becomes;
    /// false when more of it is needed.
    fn classify(&mut self, out: &mut String, eol: bool) -> bool {
        match &self.block {
            Block::Fence { ch, .. } => return self.classify_code(*ch, out, eol),
            Block::Org(_) => {
                let t = self.pending.trim_start();
                if t.is_empty() && !eol {
                    return false;
                }
                self.line = if t.starts_with('#') {
                    Line::Whole(Whole::OrgLine)
                } else {
                    Line::Raw
                };
                return true;
            }
            _ => {}
        }
        let s = self.pending.as_str();
        let indent = s.len() - s.trim_start_matches([' ', '\t']).len();
        let rest = &s[indent..];
        if rest.is_empty() && !eol {
            return false;
        }
        if let Some(after) = rest.strip_prefix('>') {
            if after.is_empty() && !eol {
                return false;
            }
            if self.block != Block::Quote {
                out.push_str("#+begin_quote\n");
                self.block = Block::Quote;
            }
            self.inline.markdown = true;
            let n = indent + 1 + usize::from(after.starts_with(' '));
            self.pending.drain(..n);
            self.quote_line = true;
            return true;
        }
        if self.block == Block::Quote && !self.quote_line {
            out.push_str("#+end_quote\n");
            self.block = Block::None;
        }
        let Some(&first) = rest.as_bytes().first() else {
            self.line = Line::Inline;
            return true;
        };
        let run = rest.bytes().take_while(|&b| b == first).count();
        if run == rest.len()
            && run <= LONG_RUN
            && !eol
            && matches!(first, b'`' | b'~' | b'#' | b'0'..=b'9')
        {
            return false;
        }
        let item = first.is_ascii_digit()
            && run <= 9
            && matches!(rest.as_bytes().get(run), Some(b'.' | b')'))
            && rest[run + 1..].starts_with([' ', '\t']);
        if first.is_ascii_digit() && !item && !eol && rest.len() <= run + 1 {
            return false;
        }
        self.line = match first {
            b'`' | b'~' if (3..=LONG_RUN).contains(&run) && !self.quote_line => {
                Line::Whole(Whole::FenceOpen)
            }
            b'#' if run == 1 && rest[1..].starts_with('+') => Line::Whole(Whole::Keyword),
            b'#' if run <= 6 && (run == rest.len() || rest[run..].starts_with([' ', '\t'])) => {
                Line::Whole(Whole::Heading)
            }
            b'|' => Line::Whole(Whole::Table),
            b'-' | b'*' | b'_' | b'+' => return self.classify_mark(first, indent, run, out, eol),
            _ => Line::Inline,
        };
        self.in_list = item || (indent > 0 && self.in_list);
        true
    }

    /// A line starting with `-`, `*`, `_` or `+` after `indent`: a rule, a bullet, an Org
    /// headline, or prose.
    fn classify_mark(
        &mut self,
        c: u8,
        indent: usize,
        run: usize,
        out: &mut String,
        eol: bool,
    ) -> bool {
        let rest = &self.pending[indent..];
        let marks = rest
            .bytes()
            .take(LONG_RULE + 1)
            .take_while(|&b| b == c || b == b' ' || b == b'\t')
            .count();
        if marks == rest.len() && marks <= LONG_RULE {
            if !eol {
                return false;
            }
            if c != b'+' && rest.bytes().filter(|&b| b == c).count() >= 3 {
                self.line = Line::Whole(Whole::Rule);
                return true;
            }
        }
        let spaced = rest[run..].starts_with([' ', '\t']);
        self.line = Line::Inline;
        let after_list = self.in_list;
        self.in_list = spaced && run == 1 && c != b'_';
        if !spaced {
            return true;
        }
        match c {
            b'*' if indent == 0
                && !self.quote_line
                && (run > 1 || !(self.inline.markdown || after_list)) =>
            {
                self.in_list = false;
                // An Org headline, moved under the base level.
                out.push_str(&"*".repeat(self.base + run));
                self.pending.drain(..run);
                self.inline.prev = Some('*');
            }
            b'*' if run == 1 => {
                out.push_str(&self.pending[..indent]);
                out.push('-');
                self.pending.drain(..indent + 1);
                self.inline.prev = Some('-');
            }
            b'-' | b'+' if run == 1 => {
                out.push_str(&self.pending[..indent + 1]);
                self.pending.drain(..indent + 1);
                self.inline.prev = Some(c as char);
            }
            _ => {}
        }
        true
    }

    /// A line inside a fence: its closing fence (decided on the whole line), or code, with
    /// a comma before a leading `*` or `#+` (after any commas), as `org-escape-code-in-string`.
    fn classify_code(&mut self, ch: u8, out: &mut String, eol: bool) -> bool {
        let s = self.pending.as_str();
        let t = s.trim_start_matches([' ', '\t']);
        let indent = s.len() - t.len();
        if t.is_empty() && !eol {
            return false;
        }
        if t.as_bytes().first() == Some(&ch) {
            self.line = Line::Whole(Whole::FenceLine);
            return true;
        }
        let after = t.trim_start_matches(',');
        if !eol && (after.is_empty() || after == "#") {
            return false;
        }
        if after.starts_with('*') || after.starts_with("#+") {
            out.push_str(&s[..indent]);
            out.push(',');
            self.pending.drain(..indent);
        }
        self.line = Line::Raw;
        true
    }

    /// Convert a whole `line` of `kind`.
    fn whole(&mut self, kind: Whole, line: &str, out: &mut String) {
        let t = line.trim_start_matches([' ', '\t']);
        let indent = &line[..line.len() - t.len()];
        match kind {
            Whole::Heading => self.heading(t, out),
            Whole::Keyword => {
                out.push_str(line);
                let lower = t.to_ascii_lowercase();
                if let Some(name) = lower.strip_prefix("#+begin_") {
                    let name = name.split_whitespace().next().unwrap_or("").to_string();
                    if self.block == Block::None && !name.is_empty() {
                        self.block = Block::Org(name);
                    }
                }
            }
            Whole::OrgLine => {
                out.push_str(line);
                if let Block::Org(name) = &self.block {
                    let lower = t.trim_end().to_ascii_lowercase();
                    if lower.strip_prefix("#+end_") == Some(name.as_str()) {
                        self.block = Block::None;
                    }
                }
            }
            Whole::FenceOpen => {
                let ch = t.as_bytes()[0];
                let len = t.bytes().take_while(|&b| b == ch).count();
                if ch == b'`' && t[len..].contains('`') {
                    // Not a fence (a backtick in its info string): prose.
                    let mut inline = self.inline.fresh(None);
                    let (text, _) = inline.convert(line, true);
                    self.inline.markdown = inline.markdown;
                    out.push_str(&text);
                    return;
                }
                let info = t[len..]
                    .trim()
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                let lang = info
                    .split(|c: char| c.is_whitespace() || c == ',' || c == '}')
                    .next()
                    .unwrap_or("")
                    .trim_start_matches('.');
                let lang = match lang {
                    "elisp" | "emacs-lisp" | "el" => "emacs-lisp",
                    other => other,
                };
                out.push_str(indent);
                if lang.is_empty() {
                    out.push_str("#+begin_example");
                } else {
                    out.push_str("#+begin_src ");
                    out.push_str(lang);
                }
                self.inline.markdown = true;
                self.block = Block::Fence {
                    ch,
                    len,
                    indent: indent.to_string(),
                    src: !lang.is_empty(),
                };
            }
            Whole::FenceLine => {
                if let Block::Fence {
                    ch,
                    len,
                    indent: open,
                    src,
                } = &self.block
                {
                    let body = t.trim_end();
                    if body.len() >= *len && body.bytes().all(|b| b == *ch) {
                        out.push_str(open);
                        out.push_str(if *src { "#+end_src" } else { "#+end_example" });
                        self.block = Block::None;
                        return;
                    }
                }
                out.push_str(line);
            }
            Whole::Table => self.table_row(indent, t, out),
            Whole::Rule => {
                out.push_str(indent);
                out.push_str("-----");
            }
        }
    }

    /// `# Title ##` → a headline `base + 1` deep (bold text inside a quote).
    fn heading(&mut self, t: &str, out: &mut String) {
        let level = t.bytes().take_while(|&b| b == b'#').count();
        let mut text = t[level..].trim();
        let unclosed = text.trim_end_matches('#');
        if unclosed.is_empty() || unclosed.ends_with([' ', '\t']) {
            text = unclosed.trim_end();
        }
        self.inline.markdown = true;
        let mut inline = self.inline.fresh(Some(' '));
        let (text, _) = inline.convert(text, true);
        self.inline.markdown = inline.markdown;
        if self.quote_line {
            if !text.is_empty() {
                out.push('*');
                out.push_str(&text);
                out.push('*');
            }
        } else {
            out.push_str(&"*".repeat(self.base + level));
            out.push(' ');
            out.push_str(&text);
        }
    }

    /// A table row, or its rule: `|:---|--:|` → `|---+---|`; cells converted inline.
    fn table_row(&mut self, indent: &str, t: &str, out: &mut String) {
        out.push_str(indent);
        let body = t.trim_end();
        let is_rule = body.contains('-')
            && body
                .bytes()
                .all(|b| matches!(b, b'|' | b'-' | b':' | b'+' | b' ' | b'\t'));
        if is_rule {
            if body.contains('+') && !body.contains(':') {
                out.push_str(body);
                return;
            }
            self.inline.markdown = true;
            let inner = body.trim_start_matches('|').trim_end_matches('|');
            let cells = inner.split(['|', '+']).count();
            out.push('|');
            out.push_str(&vec!["---"; cells].join("+"));
            out.push('|');
            return;
        }
        let mut inline = self.inline.fresh(Some('|'));
        inline.table = true;
        let bytes = body.as_bytes();
        let mut start = 0;
        let mut j = 0;
        let mut code = false;
        while j <= bytes.len() {
            let cut = j == bytes.len() || (bytes[j] == b'|' && !code);
            if j < bytes.len() && bytes[j] == b'\\' {
                j = (j + 2).min(bytes.len());
                continue;
            }
            if j < bytes.len() && bytes[j] == b'`' {
                code = !code;
            }
            if cut {
                let (cell, _) = inline.convert(&body[start..j.min(bytes.len())], true);
                out.push_str(&cell);
                if j < bytes.len() {
                    out.push('|');
                }
                inline = inline.fresh(Some('|'));
                start = j + 1;
            }
            j += 1;
        }
        self.inline.markdown = inline.markdown;
    }
}
