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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_emacs() {
        assert_eq!(decode(b"\xEF\xBB\xBF* a\n"), "* a\n");
        assert_eq!(decode(b"* a\r\n* b\r\n"), "* a\n* b\n");
        assert_eq!(decode(b"* a\r\n* b\n"), "* a\r\n* b\n");
        assert_eq!(decode(b"* a\r* b\r"), "* a\n* b\n");
        assert_eq!(decode(b"* caf\xE9\n"), "* caf\u{e9}\n");
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
