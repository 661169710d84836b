//! Markdown → Org while the text streams. [`OrgStream`] takes a model's answer in chunks
//! split anywhere (inside `**`, inside a fence marker, mid-line) and returns Org text as soon
//! as it is decided; [`OrgStream::finish`] flushes the rest and closes what is open. The
//! output for a text is the same however it is split.
//!
//! Blocks:
//! - ATX headings (`# Title`) become headlines `base + level` deep (bold text in a quote).
//! - Setext headings (`Title` over `===`, level 1, or over `--` or longer, level 2) too. The
//!   title is a paragraph's first line, held back until the next line shows whether it is
//!   underlined; so that no answer stalls on it, a line longer than [`MAX_TITLE`] bytes, the
//!   first line of the text (of a step: an answer's first words show as they come), a line in
//!   a list or a quote, and a paragraph of more lines are never titles (their `===` is text,
//!   their `---` a rule). `---` after a blank line is a rule, `- x` a list item.
//! - Fences become `#+begin_src LANG` (or `#+begin_example`), indented code (4 spaces or a
//!   tab, after a blank line or at the start, outside lists and quotes; its blank lines held
//!   until the code goes on or ends) `#+begin_example`, lines starting `*` or `#+`
//!   comma-escaped as Org does.
//! - `>` quotes become `#+begin_quote`; rules `-----`; `*` bullets `-`.
//! - Pipe tables become Org tables, their alignment row (`|:--|:-:|--:|`) Org's rule
//!   `|---+---|`. No `<l>`/`<c>`/`<r>` cookie row: Org shows it as a row of the table, and
//!   aligns numbers right by itself.
//!
//! Inline (see [`inline`]): emphasis, strike-through, code, links, images, autolinks, HTML
//! (`<b>`, `<i>`, `<code>`, `<kbd>`, `<sub>`, `<sup>`, `<a href>`…; other tags stay text),
//! escapes. They may span the lines of a paragraph: an opener waits for its closer until the
//! paragraph ends (a blank line, or a line starting a list item, heading, fence, quote…) or
//! [`inline::MAX_SPAN`] bytes, and is text if none comes. Org's emphasis spans at most one
//! line break, so emphasis over more is marked up line by line. Inside code nothing is
//! converted.
//!
//! Reference links (see [`refs`]): `[text][label]` and `[text][]` become `[[url][text]]`
//! whether `[label]: url "title"` comes before or after them; until it comes, the text from
//! the first such link on is held back (the text before it flows), and at the end of the step
//! (or after [`refs::MAX_HOLD`] bytes more) a link never defined is the text it was. A shortcut `[label]` is a link only when defined
//! before it (brackets are common in prose; waiting at each would stall answers). Definitions
//! stay in the text as `[label]: [[url][title]]`, so that no address is lost.
//!
//! Text that is already Org passes through: `#+` lines and Org blocks, `[[links]]`, lists,
//! `|---+---|`, `/italic/`, `=verbatim=`. Two forms mean different things in each: a line
//! `* text` (an Org headline, a Markdown bullet) and `*text*` / `_text_` (Org bold and
//! underline, Markdown italics). They are read as Org until the answer has shown Markdown (a
//! heading, fence, quote, `**bold**`, `` `code` ``, `[link](url)`, `~~strike~~`, a Markdown
//! table rule, HTML), as Markdown after. Org headlines are moved under the base level like
//! Markdown headings, so an answer can never close the heading it is written under; an
//! indented `* item`, or one right after a list item, is always a bullet. No converted text
//! starts an Org element the Markdown did not mean: where a line of prose would start with
//! `* ` (a headline), `#+`, `# ` or `|` only after conversion (`<br>* x`, `\# x`, `<b>*</b> x`),
//! a zero-width space (Org's own escape) goes before it.
//!
//! Not converted: tables without a leading `|`, Setext titles other than those above,
//! definitions whose title is on a line of its own, definitions inside a paragraph (as in
//! CommonMark, they are text there).
//!
//! Pure text in and out: no Emacs, no I/O, no recursion deeper than a few levels.

mod inline;
mod refs;
#[cfg(test)]
mod tests;

use inline::{Inline, LONG_RUN};
use refs::Refs;

/// Marks (and spaces) a rule may have: a longer run of them is text.
const LONG_RULE: usize = 256;
/// The longest line (bytes) that may be a Setext heading's title. A paragraph's first line
/// is held back until the next line shows whether it is one; a line longer than this flows
/// on (a title is short), so no paragraph waits long.
pub const MAX_TITLE: usize = 128;
/// Put before prose that would otherwise start an Org element (Org's own escape).
const ZWSP: char = '\u{200B}';

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
    /// Indented code: `#+begin_example`.
    Indented,
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
    /// A paragraph's first line: a Setext heading's title if the next line underlines it.
    Title,
    /// The `===` or `---` under a title.
    Underline,
    /// A line starting `[label]:`: a reference definition if all of it is one.
    Definition,
    /// A blank line in indented code: in the code, or after it.
    CodeBlank,
}

/// Where prose output is in its line, for [`OrgStream::emit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Guard {
    /// Past the line's start.
    Mid,
    /// At the line's start.
    Start,
    /// At the line's start, after this many `*` (held back).
    Stars(usize),
    /// At the line's start, after a `#` (held back).
    Hash,
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
    /// The paragraph's text not converted yet, past the end of its last line (which it ends
    /// with, newline included): from an opener whose closer may come, or a whole title.
    para: String,
    /// `para` is a paragraph's first line, whole: a Setext heading's title if underlined.
    title: bool,
    /// The last line was a line of a paragraph, which the next line may continue.
    in_para: bool,
    /// The current line is a line of a paragraph (prose, a list item's text).
    para_line: bool,
    /// The current line is blank.
    blank: bool,
    /// The last line was blank (or there was none): indented code may start.
    after_blank: bool,
    /// No line has ended yet (in this step): the text's first line is never held as a
    /// Setext title, so that an answer's first words show as they come.
    first: bool,
    /// Blank lines held in indented code (past the code's indentation, newlines included).
    blanks: String,
    guard: Guard,
    refs: Refs,
    /// The bytes of the current line so far (some may be converted already).
    line_bytes: usize,
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
            para: String::new(),
            title: false,
            in_para: false,
            para_line: false,
            blank: false,
            after_blank: true,
            first: true,
            blanks: String::new(),
            guard: Guard::Start,
            refs: Refs::default(),
            line_bytes: 0,
        }
    }

    /// Take the next `chunk` of the text; returns the Org text now decided.
    pub fn push(&mut self, chunk: &str) -> String {
        let chunk = refs::sanitize(chunk);
        let mut out = String::with_capacity(chunk.len() + 16);
        let mut rest: &str = &chunk;
        while let Some(k) = memchr::memchr(b'\n', rest.as_bytes()) {
            self.pending.push_str(&rest[..k]);
            self.refs.line(self.line_bytes + k + 1);
            self.line_bytes = 0;
            self.end_line(&mut out, true);
            rest = &rest[k + 1..];
        }
        self.pending.push_str(rest);
        self.line_bytes += rest.len();
        self.step(&mut out);
        self.note_last(&out);
        self.refs.deliver(out, false)
    }

    /// The text has ended: the rest of its last line, and the ends of blocks left open.
    /// The converter is then ready for more text (a next step of the answer), still knowing
    /// whether the answer writes Markdown and the reference definitions it made.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.pending.is_empty() || self.line != Line::Start {
            self.end_line(&mut out, false);
        }
        self.close_para(&mut out);
        self.flush_guard(&mut out);
        self.note_last(&out);
        let end = match std::mem::replace(&mut self.block, Block::None) {
            Block::Fence { indent, src, .. } => Some(format!(
                "{indent}#+end_{}",
                if src { "src" } else { "example" }
            )),
            Block::Quote => Some("#+end_quote".to_string()),
            Block::Indented => Some("#+end_example".to_string()),
            Block::Org(_) | Block::None => None,
        };
        if let Some(end) = end {
            if self.last.is_some_and(|c| c != '\n') {
                out.push('\n');
            }
            out.push_str(&end);
        }
        let blanks = std::mem::take(&mut self.blanks);
        if !blanks.is_empty() {
            // The blank lines after the code: the newline after its end is the first.
            out.push('\n');
            out.push_str(blanks.strip_suffix('\n').unwrap_or(&blanks));
        }
        self.note_last(&out);
        self.pending.clear();
        self.line = Line::Start;
        self.quote_line = false;
        self.inline = self.inline.fresh(None);
        self.in_para = false;
        self.para_line = false;
        self.blank = false;
        self.after_blank = true;
        self.first = true;
        self.guard = Guard::Start;
        self.line_bytes = 0;
        self.refs.deliver(out, true)
    }

    fn note_last(&mut self, out: &str) {
        if let Some(c) = out.chars().next_back() {
            self.last = Some(c);
        }
    }

    /// Convert what of the current line can be decided before its end.
    fn step(&mut self, out: &mut String) {
        loop {
            match self.line {
                Line::Start => {
                    if !self.classify(out, false) {
                        return;
                    }
                }
                Line::Inline => {
                    let (text, n) = self.inline.convert(&self.pending, false, &mut self.refs);
                    self.emit(&text, out);
                    self.pending.drain(..n);
                    return;
                }
                Line::Raw => {
                    out.push_str(&self.pending);
                    self.pending.clear();
                    return;
                }
                Line::Whole(Whole::Title) if self.pending.len() > MAX_TITLE => {
                    self.line = Line::Inline;
                }
                Line::Whole(_) => return,
            }
        }
    }

    /// All of the current line is there; `nl`: a newline ended it (else the text did).
    fn end_line(&mut self, out: &mut String, nl: bool) {
        while self.line == Line::Start {
            if !self.classify(out, true) {
                break;
            }
        }
        if self.line == Line::Whole(Whole::Title) && self.pending.len() > MAX_TITLE {
            self.line = Line::Inline;
        }
        let mut in_para = false;
        match self.line {
            Line::Whole(Whole::Title) => {
                // Held until the next line shows whether it is a title.
                self.para = std::mem::take(&mut self.pending);
                self.title = true;
                if nl {
                    self.para.push('\n');
                    in_para = true;
                } else {
                    self.close_para(out);
                }
            }
            Line::Inline if self.para_line => {
                // Its newline is text like any other: an opener before it may close on a
                // later line of the paragraph, and what waits for that is kept in `para`.
                if nl {
                    self.pending.push('\n');
                }
                let (text, n) = self.inline.convert(&self.pending, !nl, &mut self.refs);
                self.emit(&text, out);
                self.pending.drain(..n);
                std::mem::swap(&mut self.para, &mut self.pending);
                in_para = nl;
            }
            Line::Inline => {
                let (text, _) = self.inline.convert(&self.pending, true, &mut self.refs);
                self.emit(&text, out);
                if nl {
                    self.emit("\n", out);
                }
            }
            Line::Raw => {
                out.push_str(&self.pending);
                if nl {
                    out.push('\n');
                }
            }
            Line::Whole(Whole::CodeBlank) => {
                self.blanks.push_str(&self.pending);
                if nl {
                    self.blanks.push('\n');
                }
            }
            Line::Whole(kind) => {
                let line = std::mem::take(&mut self.pending);
                self.whole(kind, &line, out);
                if nl {
                    out.push('\n');
                }
            }
            Line::Start => {}
        }
        self.in_para = in_para;
        self.after_blank = self.blank;
        self.first = false;
        self.blank = false;
        self.pending.clear();
        self.line = Line::Start;
        self.quote_line = false;
        self.para_line = false;
        if self.para.is_empty() {
            self.inline = self.inline.fresh(None);
        }
    }

    /// The paragraph has ended: what it held back, converted.
    fn close_para(&mut self, out: &mut String) {
        self.title = false;
        self.in_para = false;
        if self.para.is_empty() {
            return;
        }
        let para = std::mem::take(&mut self.para);
        let (text, _) = self.inline.convert(&para, true, &mut self.refs);
        self.emit(&text, out);
        self.inline = self.inline.fresh(None);
    }

    /// The current line goes on the paragraph: what it held back comes before it.
    fn join_para(&mut self) {
        self.title = false;
        if !self.para.is_empty() {
            let mut text = std::mem::take(&mut self.para);
            text.push_str(&self.pending);
            self.pending = text;
        }
    }

    /// The current line is prose after `indent` (a numbered list `item`'s too): it goes on
    /// the paragraph, or starts one (perhaps with a Setext title).
    fn prose(&mut self, indent: usize, item: bool, out: &mut String) {
        self.line = Line::Inline;
        self.para_line = true;
        if self.in_para && !item {
            self.join_para();
            return;
        }
        self.close_para(out);
        self.guard = Guard::Start;
        let could_be_title = !item
            && !self.first
            && !self.in_list
            && !self.quote_line
            && self.block == Block::None
            && indent <= 3;
        if could_be_title {
            self.line = Line::Whole(Whole::Title);
        }
    }

    /// Prose output `text`, with a zero-width space before a line start that would read as
    /// an Org element the Markdown did not mean: a headline (`* `), a keyword or comment
    /// (`#+`, `# `), a table (`|`).
    fn emit(&mut self, text: &str, out: &mut String) {
        let mut rest = text;
        while let Some(&c) = rest.as_bytes().first() {
            match self.guard {
                Guard::Mid => match memchr::memchr(b'\n', rest.as_bytes()) {
                    Some(k) => {
                        out.push_str(&rest[..=k]);
                        rest = &rest[k + 1..];
                        self.guard = Guard::Start;
                    }
                    None => {
                        out.push_str(rest);
                        return;
                    }
                },
                Guard::Start => match c {
                    b'*' => {
                        let n = rest.bytes().take_while(|&b| b == b'*').count();
                        self.guard = Guard::Stars(n);
                        rest = &rest[n..];
                    }
                    b'#' => {
                        self.guard = Guard::Hash;
                        rest = &rest[1..];
                    }
                    b'|' => {
                        out.push(ZWSP);
                        self.guard = Guard::Mid;
                    }
                    _ => self.guard = Guard::Mid,
                },
                Guard::Stars(n) => {
                    if c == b'*' {
                        let m = rest.bytes().take_while(|&b| b == b'*').count();
                        self.guard = Guard::Stars(n + m);
                        rest = &rest[m..];
                        continue;
                    }
                    if c == b' ' || c == b'\t' {
                        out.push(ZWSP);
                    }
                    out.extend(std::iter::repeat_n('*', n));
                    self.guard = Guard::Mid;
                }
                Guard::Hash => {
                    if matches!(c, b' ' | b'\t' | b'+') {
                        out.push(ZWSP);
                    }
                    out.push('#');
                    self.guard = Guard::Mid;
                }
            }
        }
    }

    /// What [`OrgStream::emit`] holds back, as it is (nothing follows it on its line).
    fn flush_guard(&mut self, out: &mut String) {
        match self.guard {
            Guard::Stars(n) => out.extend(std::iter::repeat_n('*', n)),
            Guard::Hash => out.push('#'),
            Guard::Mid | Guard::Start => {}
        }
        self.guard = Guard::Start;
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
            Block::Indented => return self.classify_indented(out, eol),
            Block::None | Block::Quote => {}
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
            let n = indent + 1 + usize::from(after.starts_with(' '));
            if self.block != Block::Quote {
                self.close_para(out);
                out.push_str("#+begin_quote\n");
                self.block = Block::Quote;
            }
            self.inline.markdown = true;
            self.pending.drain(..n);
            self.quote_line = true;
            return true;
        }
        if self.block == Block::Quote && !self.quote_line {
            self.close_para(out);
            out.push_str("#+end_quote\n");
            self.block = Block::None;
        }
        let s = self.pending.as_str();
        let rest = &s[indent..];
        if rest.is_empty() {
            self.close_para(out);
            self.blank = true;
            self.line = Line::Inline;
            self.guard = Guard::Start;
            return true;
        }
        let first = rest.as_bytes()[0];
        // A Setext underline: decided on the whole line.
        if self.title && !self.quote_line && indent <= 3 && matches!(first, b'=' | b'-') {
            let run = rest.bytes().take_while(|&b| b == first).count();
            if rest[run..].bytes().all(|b| b == b' ' || b == b'\t') {
                if !eol {
                    return false;
                }
                if first == b'=' || run >= 2 {
                    self.line = Line::Whole(Whole::Underline);
                    return true;
                }
            }
        }
        if self.block == Block::None
            && !self.quote_line
            && self.after_blank
            && !self.in_list
            && columns(&s[..indent]) >= 4
        {
            self.close_para(out);
            out.push_str("#+begin_example\n");
            self.block = Block::Indented;
            return self.classify_indented(out, eol);
        }
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
        if first == b'[' && indent <= 3 && !self.in_para {
            match refs::definition_start(rest, eol) {
                None => return false,
                Some(true) => {
                    self.close_para(out);
                    self.line = Line::Whole(Whole::Definition);
                    self.in_list = false;
                    return true;
                }
                Some(false) => {}
            }
        }
        let kind = match first {
            b'`' | b'~' if (3..=LONG_RUN).contains(&run) && !self.quote_line => {
                Some(Whole::FenceOpen)
            }
            b'#' if run == 1 && rest[1..].starts_with('+') => Some(Whole::Keyword),
            b'#' if run <= 6 && (run == rest.len() || rest[run..].starts_with([' ', '\t'])) => {
                Some(Whole::Heading)
            }
            b'|' => Some(Whole::Table),
            b'-' | b'*' | b'_' | b'+' => return self.classify_mark(first, indent, run, out, eol),
            _ => None,
        };
        self.in_list = item || (indent > 0 && self.in_list);
        match kind {
            Some(kind) => {
                self.close_para(out);
                self.line = Line::Whole(kind);
            }
            None => self.prose(indent, item, out),
        }
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
                self.close_para(out);
                self.line = Line::Whole(Whole::Rule);
                return true;
            }
        }
        let spaced = rest[run..].starts_with([' ', '\t']);
        let after_list = self.in_list;
        self.in_list = spaced && run == 1 && c != b'_';
        if !spaced {
            self.prose(indent, false, out);
            return true;
        }
        if c == b'*' {
            // Not more of the paragraph, which may show Markdown (deciding what `* ` is).
            self.close_para(out);
        }
        match c {
            b'*' if indent == 0
                && !self.quote_line
                && (run > 1 || !(self.inline.markdown || after_list)) =>
            {
                self.close_para(out);
                self.in_list = false;
                // An Org headline, moved under the base level.
                out.push_str(&"*".repeat(self.base + run));
                self.pending.drain(..run);
                self.inline.prev = Some('*');
                self.line = Line::Inline;
                self.guard = Guard::Mid;
            }
            b'*' if run == 1 => {
                self.close_para(out);
                out.push_str(&self.pending[..indent]);
                out.push('-');
                self.pending.drain(..indent + 1);
                self.inline.prev = Some('-');
                self.bullet();
            }
            b'-' | b'+' if run == 1 => {
                self.close_para(out);
                out.push_str(&self.pending[..indent + 1]);
                self.pending.drain(..indent + 1);
                self.inline.prev = Some(c as char);
                self.bullet();
            }
            _ => self.prose(indent, false, out),
        }
        true
    }

    /// The current line is a bullet, its mark written: its text starts a paragraph.
    fn bullet(&mut self) {
        self.line = Line::Inline;
        self.para_line = true;
        self.guard = Guard::Mid;
    }

    /// A line inside a fence: its closing fence (decided on the whole line), or code, with
    /// a comma before a leading `*` or `#+` (after any commas), as `org-escape-code-in-string`.
    fn classify_code(&mut self, ch: u8, out: &mut String, eol: bool) -> bool {
        let s = self.pending.as_str();
        let t = s.trim_start_matches([' ', '\t']);
        if t.is_empty() && !eol {
            return false;
        }
        if t.as_bytes().first() == Some(&ch) {
            self.line = Line::Whole(Whole::FenceLine);
            return true;
        }
        let Some(comma) = code_escape(s, eol) else {
            return false;
        };
        if let Some(k) = comma {
            out.push_str(&s[..k]);
            out.push(',');
            self.pending.drain(..k);
        }
        self.line = Line::Raw;
        true
    }

    /// A line after indented code's first: more code (its first 4 columns of indentation
    /// taken off, escaped as in a fence), a blank line (held: in the code if more follows),
    /// or the code's end.
    fn classify_indented(&mut self, out: &mut String, eol: bool) -> bool {
        let s = self.pending.as_str();
        let ws = s.len() - s.trim_start_matches([' ', '\t']).len();
        let mut cols = 0;
        let mut strip = 0;
        for &b in &s.as_bytes()[..ws] {
            if cols >= 4 {
                break;
            }
            cols = if b == b'\t' {
                cols / 4 * 4 + 4
            } else {
                cols + 1
            };
            strip += 1;
        }
        if ws == s.len() {
            if !eol {
                return false;
            }
            self.pending.drain(..strip);
            self.blank = true;
            self.line = Line::Whole(Whole::CodeBlank);
            return true;
        }
        if cols < 4 {
            out.push_str("#+end_example\n");
            out.push_str(&std::mem::take(&mut self.blanks));
            self.block = Block::None;
            return true;
        }
        let Some(comma) = code_escape(&s[strip..], eol) else {
            return false;
        };
        out.push_str(&std::mem::take(&mut self.blanks));
        self.pending.drain(..strip);
        if let Some(k) = comma {
            out.push_str(&self.pending[..k]);
            out.push(',');
            self.pending.drain(..k);
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
                    self.prose_line(line, out);
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
            Whole::Underline => {
                let title = std::mem::take(&mut self.para);
                self.title = false;
                self.in_para = false;
                let level = if t.starts_with('=') { 1 } else { 2 };
                self.headline(level, title.trim(), out);
            }
            Whole::Definition => match refs::definition(line) {
                Some(def) => {
                    self.inline.markdown = true;
                    self.refs.define(def.label, def.url);
                    out.push_str(indent);
                    out.push('[');
                    out.push_str(def.label);
                    out.push_str("]: ");
                    out.push_str(&refs::org_link(def.url, def.title.unwrap_or("").trim()));
                }
                None => self.prose_line(line, out),
            },
            // Held and written by `end_line`; as prose should they come here.
            Whole::Title | Whole::CodeBlank => self.prose_line(line, out),
        }
    }

    /// A whole `line` of prose on its own.
    fn prose_line(&mut self, line: &str, out: &mut String) {
        self.guard = Guard::Start;
        let mut inline = self.inline.fresh(None);
        let (text, _) = inline.convert(line, true, &mut self.refs);
        self.inline.markdown = inline.markdown;
        self.emit(&text, out);
        self.flush_guard(out);
    }

    /// `# Title ##` → a headline `base + 1` deep (bold text inside a quote).
    fn heading(&mut self, t: &str, out: &mut String) {
        let level = t.bytes().take_while(|&b| b == b'#').count();
        let mut text = t[level..].trim();
        let unclosed = text.trim_end_matches('#');
        if unclosed.is_empty() || unclosed.ends_with([' ', '\t']) {
            text = unclosed.trim_end();
        }
        self.headline(level, text, out);
    }

    /// A heading of `level` with (Markdown) `text`: a headline `base + level` deep (bold
    /// text inside a quote).
    fn headline(&mut self, level: usize, text: &str, out: &mut String) {
        self.inline.markdown = true;
        let mut inline = self.inline.fresh(Some(' '));
        inline.one_line = true;
        let (text, _) = inline.convert(text, true, &mut self.refs);
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
                let cell = &body[start..j.min(bytes.len())];
                let (cell, _) = inline.convert(cell, true, &mut self.refs);
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

/// How many columns `ws` (spaces and tabs) takes, tabs stopping every 4.
fn columns(ws: &str) -> usize {
    ws.bytes().fold(0, |cols, b| {
        if b == b'\t' {
            cols / 4 * 4 + 4
        } else {
            cols + 1
        }
    })
}

/// Whether code line `s` needs a comma, as `org-escape-code-in-string`: `Some(Some(k))`
/// before byte `k` (a `*` or `#+` after its indentation and any commas), `Some(None)` not,
/// `None` while undecided (`eol`: all of the line is there).
fn code_escape(s: &str, eol: bool) -> Option<Option<usize>> {
    let t = s.trim_start_matches([' ', '\t']);
    let after = t.trim_start_matches(',');
    if !eol && (after.is_empty() || after == "#") {
        return None;
    }
    let escape = after.starts_with('*') || after.starts_with("#+");
    Some(escape.then_some(s.len() - t.len()))
}
