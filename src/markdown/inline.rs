//! Inline Markdown → Org within one line: emphasis, strike-through, code spans, links,
//! images, autolinks, `<br>`, backslash escapes. Works on what of the line has arrived: a
//! construct whose end is not there yet stops the scan (`Need`), and the rest waits for more
//! text or the end of the line. A decision is only taken once no later character can change
//! it, so the output does not depend on how the text was split.

/// How far (bytes) an opener looks for its closer; past it the opener is plain text. Bounds
/// the rescans of a streamed line, and is a property of the text alone.
pub const MAX_SPAN: usize = 4096;
/// Runs of marks longer than this are plain text (no Markdown writes them as markup).
pub const LONG_RUN: usize = 16;
/// How deep constructs nest (emphasis in a link in emphasis…) before inner text is left as is.
const MAX_DEPTH: u8 = 4;

/// What the scan of one line knows besides its text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline {
    /// Markdown has been seen in the answer: a single `*x*` or `_x_` is Markdown italics
    /// (before, it is left as Org's bold or underline).
    pub markdown: bool,
    /// The text is a table cell: `<br>` becomes a space, `\|` is `\vert{}`.
    pub table: bool,
    /// The character before the text (`None`: the line's start).
    pub prev: Option<char>,
    /// Where the next text starts in its line (bytes).
    at: usize,
    /// For each kind of closer (see [`slot`]), the byte of the line before which there is
    /// none: a closer's validity does not depend on its opener, so a later opener's search
    /// starts there, and a line of openers without closers costs linear time.
    dead: [usize; 10],
}

/// What a construct at the scan's position comes to.
enum Res {
    /// The rest of the line is needed to decide.
    Need,
    /// This many bytes are plain text.
    Lit(usize),
    /// This Org text replaces this many bytes.
    Out(String, usize),
}

impl Inline {
    /// The same settings for a new line (or a cell, or the text of a construct).
    pub fn fresh(&self, prev: Option<char>) -> Inline {
        Inline {
            prev,
            at: 0,
            dead: [0; 10],
            ..*self
        }
    }

    /// Convert `s`, a piece of one line (no newline) starting where the last call stopped;
    /// `eol`: `s` runs to the end of the line. Returns the Org text and how many bytes of `s`
    /// it covers; the rest must be offered again with more text (never when `eol`).
    pub fn convert(&mut self, s: &str, eol: bool) -> (String, usize) {
        let (out, n) = self.scan(s, eol, 0);
        self.at += n;
        (out, n)
    }

    fn scan(&mut self, s: &str, eol: bool, depth: u8) -> (String, usize) {
        let mut out = String::with_capacity(s.len());
        let mut i = 0;
        while i < s.len() {
            let c = s[i..].chars().next().unwrap_or(' ');
            let res = match c {
                '*' | '_' | '~' => self.emphasis(&s[i..], c, eol, (depth, self.at + i)),
                '`' => self.code(&s[i..], eol, (depth, self.at + i)),
                '[' => self.link(&s[i..], eol, depth),
                '!' => self.image(&s[i..], eol, depth),
                '<' => self.angle(&s[i..], eol),
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

    /// The text of a construct, converted (as a whole line: it is complete).
    fn inner(&mut self, s: &str, before: char, depth: u8) -> String {
        if depth >= MAX_DEPTH {
            return s.to_string();
        }
        let mut sub = self.fresh(Some(before));
        let (out, _) = sub.scan(s, true, depth + 1);
        self.markdown = sub.markdown;
        out
    }

    /// `**bold**`, `__bold__`, `*italic*`, `_italic_`, `***both***`, `~~strike~~`.
    /// `at`: how deep the scan is, and where `s` starts in the line.
    fn emphasis(&mut self, s: &str, c: char, eol: bool, at: (u8, usize)) -> Res {
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
        let inner = self.inner(&s[run..close], c, depth);
        Res::Out(format!("{open}{inner}{shut}"), close + run)
    }

    /// `` `code` `` (any run of backticks, closed by the same run) → `~code~`, or `=code=`
    /// when the code holds a tilde.
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
                let code = s[run..start].trim();
                if code.is_empty() {
                    return Res::Lit(start + len);
                }
                self.markdown = true;
                let mark = if code.contains('~') { '=' } else { '~' };
                return Res::Out(format!("{mark}{code}{mark}"), start + len);
            }
            if start > MAX_SPAN {
                return dead(start, Res::Lit(run));
            }
            j = start + len;
        }
    }

    /// `[text](url "title")` → `[[url][text]]`; `[[…]]` (an Org link) as it is.
    fn link(&mut self, s: &str, eol: bool, depth: u8) -> Res {
        if s == "[" && !eol {
            return Res::Need;
        }
        // No `]` at all (memchr): the usual case of a lone `[`, and a cheap one.
        let near = &s.as_bytes()[..s.len().min(MAX_SPAN)];
        if !near[1..].contains(&b']') {
            return undecided(s, eol, 1);
        }
        if s.starts_with("[[") {
            return match near.windows(2).position(|w| w == b"]]") {
                Some(k) => Res::Lit(k + 2),
                None => undecided(s, eol, 1),
            };
        }
        let Some(close) = matching(s, b'[', b']') else {
            return undecided(s, eol, 1);
        };
        match s.as_bytes().get(close + 1) {
            None if !eol => return Res::Need,
            Some(b'(') => {}
            _ => return Res::Lit(1),
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
        let text = self.inner(&s[1..close], '[', depth);
        let text = text.trim();
        Res::Out(
            if text.is_empty() {
                format!("[[{url}]]")
            } else {
                format!("[[{url}][{text}]]")
            },
            end + 1,
        )
    }

    /// `![alt](url)` → `[[url]]`, which Org shows inline.
    fn image(&mut self, s: &str, eol: bool, depth: u8) -> Res {
        match s.as_bytes().get(1) {
            None if !eol => Res::Need,
            Some(b'[') if !s[1..].starts_with("[[") => match self.link(&s[1..], eol, depth) {
                Res::Need => Res::Need,
                Res::Lit(_) => Res::Lit(1),
                Res::Out(link, n) => {
                    let url = link[2..].split("][").next().unwrap_or("");
                    let url = url.trim_end_matches(']');
                    Res::Out(format!("[[{url}]]"), n + 1)
                }
            },
            _ => Res::Lit(1),
        }
    }

    /// `<br>` (`<br/>`, `<br />`) → Org's line break; `<https://…>` → `[[https://…]]`.
    fn angle(&mut self, s: &str, eol: bool) -> Res {
        let lower: String = s.chars().take(6).collect::<String>().to_ascii_lowercase();
        for br in ["<br>", "<br/>", "<br />"] {
            if lower.starts_with(br) {
                self.markdown = true;
                let n = br.len();
                // The next text starts a line of its own: no space before it.
                let rest = s[n..].trim_start_matches(' ');
                return match (self.table, rest.is_empty()) {
                    (true, _) => Res::Out(" ".into(), n),
                    (false, true) if eol => Res::Out("\\\\".into(), s.len()),
                    (false, true) => Res::Need,
                    (false, false) => Res::Out("\\\\\n".into(), s.len() - rest.len()),
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
        Res::Lit(1)
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

/// An opener's fate when its closer is not in `s`: plain text at the line's end or past
/// [`MAX_SPAN`], else undecided.
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
enum Closer {
    /// The closing run starts here.
    At(usize),
    /// More text is needed.
    Need,
    /// There is none; the search looked up to here.
    None(usize),
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
