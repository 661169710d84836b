//! File names as the store keys them.
//!
//! A Unix file name is bytes, not necessarily UTF-8; the store keys files by string. A key is
//! the name itself when it is UTF-8. Otherwise each byte that is not part of a UTF-8 character
//! becomes the private-use character U+10FF00 + byte (bytes that are not UTF-8 are all 0x80 or
//! above, so U+10FF80..U+10FFFF), and so does each byte of a name character that falls in that
//! range itself, which keeps the mapping one-to-one: [`to_bytes`] gives back the very bytes.

use std::borrow::Cow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

const ESCAPES: std::ops::RangeInclusive<char> = '\u{10FF80}'..='\u{10FFFF}';

fn escape(b: u8) -> char {
    char::from_u32(0x10FF00 + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The key of the file name `bytes`.
pub fn key_from_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        if !s.chars().any(|c| ESCAPES.contains(&c)) {
            return Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if ESCAPES.contains(&c) {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(escape));
            } else {
                out.push(c);
            }
        }
        out.extend(chunk.invalid().iter().copied().map(escape));
    }
    Cow::Owned(out)
}

/// The key of `path`.
pub fn key(path: &Path) -> Cow<'_, str> {
    key_from_bytes(path.as_os_str().as_bytes())
}

/// Whether `key` stands for a name that is not plain UTF-8.
pub fn is_escaped(key: &str) -> bool {
    key.chars().any(|c| ESCAPES.contains(&c))
}

/// The bytes of the file name `key` stands for.
pub fn to_bytes(key: &str) -> Cow<'_, [u8]> {
    if !is_escaped(key) {
        return Cow::Borrowed(key.as_bytes());
    }
    let mut out = Vec::with_capacity(key.len());
    for c in key.chars() {
        if ESCAPES.contains(&c) {
            out.push((u32::from(c) - 0x10FF00) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    Cow::Owned(out)
}

/// The path `key` stands for, to open the file with.
pub fn to_path(key: &str) -> PathBuf {
    PathBuf::from(std::ffi::OsString::from_vec(to_bytes(key).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_their_own_keys() {
        assert!(matches!(
            key_from_bytes(b"/notes/caf\xC3\xA9.org"),
            Cow::Borrowed(_)
        ));
        assert_eq!(key(Path::new("/a/b.org")), "/a/b.org");
        assert_eq!(to_path("/a/b.org"), Path::new("/a/b.org"));
    }

    #[test]
    fn any_bytes_round_trip() {
        let names: [&[u8]; 5] = [
            b"/notes/caf\xE9.org",
            b"\xFF\xFE\x80",
            b"\xE2\x82 half",
            // A name holding an escape character itself must not read as a raw byte.
            "/x/\u{10FF80}\u{10FFFF}.org".as_bytes(),
            b"mixed \xC3\xA9 \xC3 \xF4\x8F\xBE\x80",
        ];
        for bytes in names {
            let k = key_from_bytes(bytes);
            assert_eq!(&*to_bytes(&k), bytes, "{k:?}");
            assert_eq!(to_path(&k).as_os_str().as_bytes(), bytes);
            assert!(is_escaped(&k));
        }
        assert_eq!(key_from_bytes(b"caf\xE9"), "caf\u{10FFE9}");
    }
}
