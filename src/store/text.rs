//! Turning a file's bytes into the text Emacs would show in its buffer, and byte offsets into
//! buffer positions.

use std::borrow::Cow;

/// Decode file bytes as Emacs does when visiting an Org file with default settings: UTF-8
/// (a byte-order mark is dropped), falling back to Latin-1 for bytes that are not UTF-8, and
/// end-of-line conversion for files whose every line ends in CR LF (DOS) or CR (old Mac).
/// Files with mixed line ends keep their CRs, as in Emacs.
pub fn decode(bytes: &[u8]) -> String {
    decode_owned(bytes.to_vec())
}

/// [`decode`] without copying text that needs no change (the usual case: UTF-8, LF).
pub fn decode_owned(mut bytes: Vec<u8>) -> String {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    };
    if !text.contains('\r') {
        return text;
    }
    normalize_eol(&text).into_owned()
}

fn normalize_eol(text: &str) -> Cow<'_, str> {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count();
    if crlf > 0 && crlf == lf {
        return Cow::Owned(text.replace("\r\n", "\n"));
    }
    if lf == 0 && text.contains('\r') {
        return Cow::Owned(text.replace('\r', "\n"));
    }
    Cow::Borrowed(text)
}

/// How Emacs wrote a buffer to its file, when that writing can be undone exactly: UTF-8
/// (raw bytes written as themselves), with or without a byte-order mark, with LF or CR LF
/// line ends. Other codings are not described here: their buffers are sent as text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// `utf-8-with-signature`: a byte-order mark Emacs wrote and does not show.
    pub signature: bool,
    /// DOS line ends: Emacs wrote each newline as CR LF.
    pub crlf: bool,
}

/// The buffer text Emacs wrote as `bytes` in the way `written` says: the same string as
/// [`from_emacs_utf8`] of the buffer's own UTF-8 encoding, so a save read back from disk is
/// stored as a copy of the buffer would be. Unlike [`decode`], it does not guess: a CR the
/// buffer held stays (Emacs wrote it before the CR LF of its line), and bytes that are not
/// UTF-8 were raw bytes in the buffer, one U+FFFD each.
pub fn from_emacs_written(mut bytes: Vec<u8>, written: Written) -> String {
    if written.signature && bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    if written.crlf {
        // Every LF was written as CR LF, so dropping the CR before each LF is the inverse.
        let (mut read, mut keep) = (0, 0);
        while read < bytes.len() {
            let b = bytes[read];
            read += 1;
            if b == b'\r' && bytes.get(read) == Some(&b'\n') {
                continue;
            }
            bytes[keep] = b;
            keep += 1;
        }
        bytes.truncate(keep);
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => from_emacs_utf8(e.as_bytes()),
    }
}

/// The text of an Emacs string from its UTF-8 encoding (`encode-coding-string` with
/// `utf-8-unix`), one character for each character Emacs had: what Emacs's own UTF-8 decoder
/// reads as one character stays one (U+FFFD when it is beyond Unicode), and every other byte
/// (a raw byte: undecodable input, one character in Emacs) becomes one U+FFFD. Buffer
/// positions computed on the result are Emacs's. Linear: a buffer may hold megabytes of raw
/// bytes.
pub fn from_emacs_utf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let Some(chunk) = bytes[i..].utf8_chunks().next() else {
            break;
        };
        out.push_str(chunk.valid());
        i += chunk.valid().len();
        // Invalid bytes come in runs (a binary blob in a buffer): take them here, one check
        // each, until a valid character starts again.
        while i < bytes.len() && !starts_char(&bytes[i..]) {
            out.push('\u{FFFD}');
            i += beyond_unicode_len(&bytes[i..]).unwrap_or(1);
        }
    }
    out
}

/// Whether `b` (not empty) starts with a valid UTF-8 character.
#[inline]
fn starts_char(b: &[u8]) -> bool {
    let cont = |i: usize| b.get(i).is_some_and(|&c| (0x80..=0xBF).contains(&c));
    let second = |lo: u8, hi: u8| b.get(1).is_some_and(|&c| (lo..=hi).contains(&c));
    match b[0] {
        0x00..=0x7F => true,
        0xC2..=0xDF => cont(1),
        0xE0 => second(0xA0, 0xBF) && cont(2),
        0xED => second(0x80, 0x9F) && cont(2),
        0xE1..=0xEF => cont(1) && cont(2),
        0xF0 => second(0x90, 0xBF) && cont(2) && cont(3),
        0xF4 => second(0x80, 0x8F) && cont(2) && cont(3),
        0xF1..=0xF3 => cont(1) && cont(2) && cont(3),
        _ => false,
    }
}

/// The length of the sequence at the start of `b` if it is one Emacs reads as a single
/// character beyond Unicode (U+110000 up to its raw-byte range): four bytes from F4 90, or
/// five from F8 88.
fn beyond_unicode_len(b: &[u8]) -> Option<usize> {
    let cont = |s: &[u8]| s.iter().all(|&c| (0x80..=0xBF).contains(&c));
    match *b {
        [0xF4, b1, ..] if (0x90..=0xBF).contains(&b1) && b.len() >= 4 && cont(&b[1..4]) => Some(4),
        [0xF5..=0xF7, ..] if b.len() >= 4 && cont(&b[1..4]) => Some(4),
        [0xF8, b1, ..] if (0x88..=0x8F).contains(&b1) && b.len() >= 5 && cont(&b[1..5]) => Some(5),
        _ => None,
    }
}

/// Maps UTF-8 byte offsets of one text to Emacs buffer positions (1-based, in characters).
/// Offsets must be asked for in increasing order, which is how ingest walks a file.
pub struct PositionMap<'a> {
    text: &'a [u8],
    /// Most Org files are pure ASCII: then a position is just the offset plus one.
    ascii: bool,
    byte: usize,
    chars: usize,
}

impl<'a> PositionMap<'a> {
    pub fn new(text: &'a str) -> Self {
        PositionMap {
            text: text.as_bytes(),
            ascii: text.is_ascii(),
            byte: 0,
            chars: 0,
        }
    }

    pub fn position(&mut self, offset: usize) -> u32 {
        let offset = offset.min(self.text.len());
        if self.ascii {
            return (offset + 1) as u32;
        }
        if offset < self.byte {
            // Out of order: count from the start again rather than give a wrong answer.
            self.byte = 0;
            self.chars = 0;
        }
        self.chars += self.text[self.byte..offset]
            .iter()
            .filter(|&&b| (b & 0xC0) != 0x80)
            .count();
        self.byte = offset;
        (self.chars + 1) as u32
    }
}

/// One line of a block's contents as Org reads it: a comma before `*` or `#+` (after any
/// indentation and other commas) is the escape Org adds, and goes
/// (`org-unescape-code-in-string`).
pub fn unescape_org_code(line: &str) -> String {
    let indented = line.trim_start_matches([' ', '\t']);
    let commas = indented.len() - indented.trim_start_matches(',').len();
    let after = &indented[commas..];
    if commas > 0 && (after.starts_with('*') || after.starts_with("#+")) {
        let at = line.len() - indented.len();
        format!("{}{}", &line[..at], &line[at + 1..])
    } else {
        line.to_owned()
    }
}

/// One line as it goes into a block: a line that would read as a headline or an Org
/// keyword (`*`, `#+`, after any indentation and commas) gets a comma
/// (`org-escape-code-in-string`).
pub fn escape_org_code(line: &str) -> String {
    let indented = line.trim_start_matches([' ', '\t']);
    let after = indented.trim_start_matches(',');
    if after.starts_with('*') || after.starts_with("#+") {
        let at = line.len() - indented.len();
        format!("{},{}", &line[..at], &line[at..])
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_emacs_wrote_reads_back_as_the_buffer_copy_would() {
        // What `encode-coding-string' with utf-8-unix gives for a buffer holding "é", a lone
        // CR, a U+FEFF of its own and a raw byte (\xFF), then its DOS / signed writings.
        let buffer_utf8: &[u8] = b"\xEF\xBB\xBFa\xC3\xA9\rb\n\xFF\nc";
        let copy = from_emacs_utf8(buffer_utf8);
        assert_eq!(copy, "\u{FEFF}a\u{e9}\rb\n\u{FFFD}\nc");
        let plain = Written::default();
        assert_eq!(from_emacs_written(buffer_utf8.to_vec(), plain), copy);
        let dos: &[u8] = b"\xEF\xBB\xBFa\xC3\xA9\rb\r\n\xFF\r\nc";
        let crlf = Written {
            crlf: true,
            ..plain
        };
        assert_eq!(from_emacs_written(dos.to_vec(), crlf), copy);
        let signed = [b"\xEF\xBB\xBF".as_slice(), dos].concat();
        let both = Written {
            signature: true,
            crlf: true,
        };
        assert_eq!(from_emacs_written(signed, both), copy);
        // A CR the buffer held before a newline: written CR CR LF, read back CR LF.
        assert_eq!(from_emacs_written(b"x\r\r\ny".to_vec(), crlf), "x\r\ny");
    }

    #[test]
    fn decodes_like_emacs() {
        assert_eq!(decode(b"\xEF\xBB\xBF* a\n"), "* a\n");
        assert_eq!(decode(b"* a\r\n* b\r\n"), "* a\n* b\n");
        assert_eq!(decode(b"* a\r\n* b\n"), "* a\r\n* b\n");
        assert_eq!(decode(b"* a\r* b\r"), "* a\n* b\n");
        assert_eq!(decode(b"* caf\xE9\n"), "* caf\u{e9}\n");
    }

    #[test]
    fn emacs_utf8_keeps_one_character_per_emacs_character() {
        // Each case: bytes, and the characters Emacs 28 decodes them to (as checked with
        // `decode-coding-string` and `utf-8`).
        let cases: [(&[u8], &str); 12] = [
            (b"plain \xC3\xA9", "plain \u{e9}"),
            (b"a\x80b", "a\u{FFFD}b"),
            (b"\xE2\x82A", "\u{FFFD}\u{FFFD}A"),
            (b"\xED\xA0\x80", "\u{FFFD}\u{FFFD}\u{FFFD}"),
            (b"\xF4\x90\x80\x80", "\u{FFFD}"),
            (b"\xF7\xBF\xBF\xBFz", "\u{FFFD}z"),
            (b"\xF8\x88\x80\x80\x80", "\u{FFFD}"),
            (
                b"\xF8\x87\xBF\xBF\xBF",
                "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}",
            ),
            (b"\xF0\x80\x80\x80", "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"),
            (b"\xC0\x80", "\u{FFFD}\u{FFFD}"),
            (b"\xF4\x90\x80", "\u{FFFD}\u{FFFD}\u{FFFD}"),
            (b"\xF4\x8F\xBF\xBF", "\u{10FFFF}"),
        ];
        for (bytes, want) in cases {
            assert_eq!(from_emacs_utf8(bytes), want, "{bytes:?}");
        }
    }

    #[test]
    fn positions_count_characters() {
        let text = "é* ab\n* c";
        let mut map = PositionMap::new(text);
        assert_eq!(map.position(0), 1);
        assert_eq!(map.position(2), 2);
        assert_eq!(map.position(text.len()), 10);
        assert_eq!(map.position(2), 2);
    }
}
