//! Reference links: `[text][label]`, `[text][]` and `[label]`, with definitions
//! `[label]: url "title"` that may come before or after their use.
//!
//! A use whose label is defined already becomes `[[url][text]]` at once. A full or collapsed
//! use (`[text][label]`, `[text][]`) whose definition has not come yet is a *hole*: the Org
//! text from it on is held back until the definition comes (then the link is filled in and the
//! text flows again), or until the answer's step ends ([`super::OrgStream::finish`]), where a
//! hole never defined is the text as it was (`[text][label]`, its text converted); so is one
//! still waiting after [`MAX_HOLD`] bytes of text, so that an answer never stalls long. A
//! shortcut use (`[label]` alone) is only a link when defined before it: brackets are common
//! in prose (`[1]`, `[ ]`, `array[0]`), and holding the answer back at each would stall it.
//!
//! Holes are marks in the Org text held back: a noncharacter (U+FDD0), the hole's number,
//! another (U+FDD1). Noncharacters are never in text that is interchanged; the input's own are
//! replaced by U+FFFD ([`sanitize`]) so that no text can pass for a hole.

use std::borrow::Cow;
use std::collections::HashMap;

/// Opens a hole's mark.
const OPEN: char = '\u{FDD0}';
/// Closes a hole's mark.
const CLOSE: char = '\u{FDD1}';
/// The longest label (bytes), as CommonMark's 999 characters.
pub const MAX_LABEL: usize = 999;
/// How much text (bytes, whole lines) may follow a link waiting for its definition: past it,
/// the links waiting are the text they were, and the answer flows again. Bounds what is held
/// (memory, and how long an answer can stall); measured in lines of the input, so it is a
/// property of the text alone.
pub const MAX_HOLD: usize = 32 * 1024;

/// The definitions seen, the holes waiting for theirs, and the Org text held back behind
/// the first hole.
#[derive(Clone, Debug, Default)]
pub struct Refs {
    /// Normalized label → address (the first definition of a label counts).
    urls: HashMap<String, String>,
    holes: Vec<Hole>,
    /// Normalized label → the holes waiting for its definition.
    waiting: HashMap<String, Vec<usize>>,
    /// Org text held back: `held[from..]`, starting at a hole not filled yet.
    held: String,
    from: usize,
    /// The text (bytes) since links have been waiting.
    waited: usize,
    /// A hole was made since the last delivery (its mark may be in the text delivered).
    made: bool,
}

#[derive(Clone, Debug)]
struct Hole {
    /// The link's text, converted.
    text: String,
    /// What the use becomes if never defined.
    fallback: String,
    /// The link, once defined.
    link: Option<String>,
}

impl Refs {
    /// The address `label` is defined as, if it is.
    pub fn url(&self, label: &str) -> Option<&str> {
        if self.urls.is_empty() {
            return None;
        }
        self.urls.get(&normalize(label)).map(String::as_str)
    }

    /// A hole for a use of `label` (with link text `text`, or `fallback` if never defined):
    /// the mark that stands for it in the Org text.
    pub fn hole(&mut self, label: &str, text: String, fallback: String) -> String {
        let k = self.holes.len();
        self.made = true;
        self.holes.push(Hole {
            text,
            fallback,
            link: None,
        });
        self.waiting.entry(normalize(label)).or_default().push(k);
        format!("{OPEN}{k}{CLOSE}")
    }

    /// `label` is defined as `url` (unless it was before): its holes are filled.
    pub fn define(&mut self, label: &str, url: &str) {
        let key = normalize(label);
        if key.is_empty() || self.urls.contains_key(&key) {
            return;
        }
        for k in self.waiting.remove(&key).unwrap_or_default() {
            if let Some(hole) = self.holes.get_mut(k) {
                hole.link = Some(org_link(url, &hole.text));
            }
        }
        self.urls.insert(key, url.to_string());
    }

    /// A line of `len` bytes (newline included) has been converted: links that have waited
    /// past [`MAX_HOLD`] give up on their definitions.
    pub fn line(&mut self, len: usize) {
        if self.waiting.is_empty() {
            self.waited = 0;
            return;
        }
        self.waited += len;
        if self.waited > MAX_HOLD {
            for (_, ks) in self.waiting.drain() {
                for k in ks {
                    if let Some(hole) = self.holes.get_mut(k) {
                        hole.link = Some(hole.fallback.clone());
                    }
                }
            }
            self.waited = 0;
        }
    }

    /// Org text `out` after what is held back: what of it can be shown now, holes filled.
    /// `end`: the step has ended, every hole is filled (with its fallback if never defined).
    pub fn deliver(&mut self, out: String, end: bool) -> String {
        if self.from == self.held.len() && !std::mem::take(&mut self.made) {
            if end {
                self.reset();
            }
            return out;
        }
        self.made = false;
        self.held.push_str(&out);
        let mut done = String::new();
        loop {
            let rest = &self.held[self.from..];
            let Some(k) = rest.find(OPEN) else {
                done.push_str(rest);
                self.from = self.held.len();
                break;
            };
            let mark = &rest[k + OPEN.len_utf8()..];
            let len = mark.find(CLOSE).unwrap_or(mark.len());
            let hole = mark[..len]
                .parse::<usize>()
                .ok()
                .and_then(|i| self.holes.get(i));
            let text = match hole {
                Some(Hole { link: Some(l), .. }) => l.as_str(),
                Some(h) if end => h.fallback.as_str(),
                Some(_) => {
                    done.push_str(&rest[..k]);
                    self.from += k;
                    break;
                }
                None => "",
            };
            done.push_str(&rest[..k]);
            done.push_str(text);
            self.from += k + OPEN.len_utf8() + (len + CLOSE.len_utf8()).min(mark.len());
        }
        if self.from == self.held.len() {
            self.held.clear();
            self.from = 0;
        } else if self.from > self.held.len() / 2 {
            self.held.drain(..self.from);
            self.from = 0;
        }
        if end {
            self.reset();
        }
        done
    }

    /// The step has ended: no hole is left (the definitions stay for the next step).
    fn reset(&mut self) {
        self.holes.clear();
        self.waiting.clear();
        self.held.clear();
        self.from = 0;
        self.waited = 0;
        self.made = false;
    }
}

/// Whether Org text `s` is a hole's mark.
pub fn is_hole(s: &str) -> bool {
    s.starts_with(OPEN)
}

/// A label as CommonMark matches them: case and runs of spaces do not count.
pub fn normalize(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for word in label.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// `[[url][text]]`, or `[[url]]` without text.
pub fn org_link(url: &str, text: &str) -> String {
    if text.is_empty() {
        format!("[[{url}]]")
    } else {
        format!("[[{url}][{text}]]")
    }
}

/// `chunk` with the noncharacters that mark holes replaced by U+FFFD.
pub fn sanitize(chunk: &str) -> Cow<'_, str> {
    // Both are 0xEF 0xB7 and one byte more (a rare lead byte: memchr finds it fast).
    let marked =
        memchr::memchr_iter(0xEF, chunk.as_bytes()).any(|k| chunk[k..].starts_with([OPEN, CLOSE]));
    if marked {
        chunk.replace([OPEN, CLOSE], "\u{FFFD}").into()
    } else {
        chunk.into()
    }
}

/// A reference definition's parts.
#[derive(Debug, PartialEq, Eq)]
pub struct Definition<'a> {
    pub label: &'a str,
    pub url: &'a str,
    pub title: Option<&'a str>,
}

/// `[label]: url "title"` (the address may be in `<…>`, the title in `"…"`, `'…'` or
/// `(…)`), the whole of `line` but for up to 3 spaces before it.
pub fn definition(line: &str) -> Option<Definition<'_>> {
    let rest = line.trim_start_matches(' ').strip_prefix('[')?;
    let close = label_end(rest).ok()?;
    let label = &rest[..close];
    if label.trim().is_empty() {
        return None;
    }
    let rest = rest[close + 1..].strip_prefix(':')?.trim_start();
    let (url, rest) = match rest.strip_prefix('<') {
        Some(r) => {
            let e = r.find('>')?;
            (&r[..e], &r[e + 1..])
        }
        None => {
            let e = rest.find(char::is_whitespace).unwrap_or(rest.len());
            (&rest[..e], &rest[e..])
        }
    };
    if url.is_empty() {
        return None;
    }
    let t = rest.trim();
    let title = if t.is_empty() {
        None
    } else {
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let shut = match t.as_bytes()[0] {
            b'"' => '"',
            b'\'' => '\'',
            b'(' => ')',
            _ => return None,
        };
        if t.len() < 2 || !t.ends_with(shut) {
            return None;
        }
        Some(&t[1..t.len() - 1])
    };
    Some(Definition { label, url, title })
}

/// Whether a line starting `s` may be a definition: `Some(true)` once `[label]:` is there,
/// `Some(false)` once it cannot be, `None` while undecided; `eol`: all of the line is there.
pub fn definition_start(s: &str, eol: bool) -> Option<bool> {
    let Some(body) = s.strip_prefix('[') else {
        return Some(false);
    };
    if body.starts_with('[') {
        return Some(false);
    }
    match label_end(body) {
        Ok(0) | Err(false) => Some(false),
        Ok(k) => match body.as_bytes().get(k + 1) {
            Some(b':') => Some(true),
            Some(_) => Some(false),
            None if eol => Some(false),
            None => None,
        },
        Err(true) if eol => Some(false),
        Err(_) => None,
    }
}

/// The `]` closing a label that starts `s`; else whether more text could still close it
/// (not after an unescaped `[`, nor past [`MAX_LABEL`]).
fn label_end(s: &str) -> Result<usize, bool> {
    let b = s.as_bytes();
    let mut j = 0;
    while j < b.len() {
        if j > MAX_LABEL {
            return Err(false);
        }
        match b[j] {
            b'\\' => j += 2,
            b'[' => return Err(false),
            b']' => return Ok(j),
            _ => j += 1,
        }
    }
    Err(true)
}
