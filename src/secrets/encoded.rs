//! Keys written in hex or base64: the runs of token characters, the pieces of them that are
//! hex or base64, and what those decode to when it is text.
//!
//! A run is decoded only when it is long enough to hold a key (32 hex digits, 24 base64
//! characters) and only as far as its first [`PROBE`] characters show text: a git hash, a
//! SHA-256 digest, a DER key or an image decodes to bytes that are not UTF-8 text within a
//! few characters, and is left to the other rules (the random-token rule judges it as
//! before).

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};

/// The fewest hex digits decoded (16 bytes: shorter holds no key worth the look).
pub(super) const MIN_HEX: usize = 32;

/// The fewest base64 characters decoded, padding included (18 bytes).
pub(super) const MIN_BASE64: usize = 24;

/// How many decoded bytes one call of the detector rescans at most, all levels together.
pub(super) const BUDGET: usize = 1 << 20;

/// How many characters of a run are decoded first, to tell text from binary (12 bytes of
/// base64, 8 of hex: a digest's bytes are all printable once in tens of thousands).
const PROBE: usize = 16;

/// How the run was encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Hex,
    Base64,
}

/// Padding optional (`=` is often cut), but never wrong; trailing bits must be zero.
const CONFIG: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);

pub(super) fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-' | b'=')
}

/// The runs of token characters (base64 of either alphabet, with `=`) of `text` at least
/// [`MIN_BASE64`] long, as byte ranges: the one byte scan behind the random-token rule and
/// the encoded runs.
pub(super) fn token_runs(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            if !is_token(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && is_token(bytes[i]) {
                i += 1;
            }
            if i - start >= MIN_BASE64 {
                return Some((start, i));
            }
        }
        None
    })
}

/// The pieces of the run `text[start..end]` that could be encoded: split at `=` signs
/// inside it (`key=…`), each piece keeping the `=` padding that ends the run, and long
/// enough.
pub(super) fn pieces(
    text: &str,
    start: usize,
    end: usize,
) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = start;
    std::iter::from_fn(move || {
        while i < end {
            while i < end && bytes[i] == b'=' {
                i += 1;
            }
            let s = i;
            while i < end && bytes[i] != b'=' {
                i += 1;
            }
            let body = i;
            while i < end && bytes[i] == b'=' {
                i += 1;
            }
            // `=` followed by more of the run separates; only at the run's end is it padding.
            let e = if i == end { i } else { body };
            if e - s >= MIN_BASE64.min(MIN_HEX) {
                return Some((s, e));
            }
        }
        None
    })
}

/// The block of lines that the run `text[start..end]` begins when it is the first line of
/// hex or base64 wrapped at a fixed width (`base64` wraps at 76, `xxd -p` at 60, PEM at 64):
/// lines of one token run each, all as long as the first (at least [`MIN_BASE64`], a
/// multiple of four) but the last, which may be shorter. Where the block ends, and its lines
/// joined without the breaks and indentation. `None` for a single line.
pub(super) fn wrapped(text: &str, start: usize, end: usize) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    let width = end - start;
    if width < MIN_BASE64 || !width.is_multiple_of(4) || bytes[start..end].contains(&b'=') {
        return None;
    }
    let mut joined = text[start..end].to_owned();
    let mut at = end;
    loop {
        // A line break, the next line's indentation, a run, the line's end.
        let mut i = at;
        if bytes.get(i) == Some(&b'\r') {
            i += 1;
        }
        if bytes.get(i) != Some(&b'\n') {
            break;
        }
        i += 1;
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let run = bytes[i..].iter().take_while(|&&b| is_token(b)).count();
        let line_end = matches!(bytes.get(i + run), None | Some(b'\n' | b'\r'));
        if run == 0 || run > width || !line_end {
            break;
        }
        joined.push_str(&text[i..i + run]);
        at = i + run;
        if run < width || bytes[i..at].contains(&b'=') {
            break;
        }
    }
    (at > end).then_some((at, joined))
}

/// Whether the run at `start` is one not worth decoding: an inline image or other media
/// (`data:image/png;base64,…`; a `data:text/…` payload is decoded). Looks at most 100 bytes
/// back.
pub(super) fn skipped_context(text: &str, start: usize) -> bool {
    let mut from = start.saturating_sub(100);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let before = &text[from..start];
    if !before.ends_with("base64,") {
        return false;
    }
    before.rfind("data:").is_some_and(|i| {
        let media = before[i + 5..].to_ascii_lowercase();
        ["image/", "audio/", "video/", "font/"]
            .iter()
            .any(|p| media.starts_with(p))
    })
}

/// The text `piece` decodes to, and how it was encoded, when it is hex (an even number of at
/// least [`MIN_HEX`] digits, `0x` allowed before) or base64 (at least [`MIN_BASE64`]
/// characters, one alphabet, padding right) and decodes to UTF-8 text, within `budget`
/// (which it lessens).
pub(super) fn decode(piece: &str, budget: &mut usize) -> Option<(Encoding, String)> {
    let hex = piece
        .strip_prefix("0x")
        .or_else(|| piece.strip_prefix("0X"))
        .unwrap_or(piece);
    let (encoding, bytes) = if hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        // A hex-looking piece is never read as base64 (a digest would be, to garbage).
        if hex.len() < MIN_HEX || !hex.len().is_multiple_of(2) || hex.len() / 2 > *budget {
            return None;
        }
        let mut probe = [0u8; PROBE / 2];
        for (b, p) in probe.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            *b = byte(p)?;
        }
        if !is_text(&probe, true) {
            return None;
        }
        (Encoding::Hex, from_hex(hex)?)
    } else {
        let body = piece.trim_end_matches('=');
        let padding = piece.len() - body.len();
        let standard = body.contains(['+', '/']);
        if piece.len() < MIN_BASE64
            || standard && body.contains(['-', '_'])
            || padding > 2
            || padding > 0 && !piece.len().is_multiple_of(4)
            || body.len() % 4 == 1
            || body.len() / 4 * 3 > *budget
        {
            return None;
        }
        let engine = if standard { &STANDARD } else { &URL_SAFE };
        // At least 22 characters: the probe is whole groups of four.
        let mut probe = [0u8; PROBE / 4 * 3];
        let n = engine.decode_slice(body.get(..PROBE)?, &mut probe).ok()?;
        if !is_text(&probe[..n], true) {
            return None;
        }
        (Encoding::Base64, engine.decode(body).ok()?)
    };
    *budget = budget.saturating_sub(bytes.len());
    let text = String::from_utf8(bytes).ok()?;
    is_text(text.as_bytes(), false).then_some((encoding, text))
}

/// Whether [`decode`] could find text in `piece`, or in a block of wrapped lines that
/// begins with it: its first characters read as hex, or as base64 of either alphabet, are
/// text. (`decode` reads no further before it gives up on binary, so this is never false
/// where `decode` answers.)
pub(super) fn may_decode(piece: &str) -> bool {
    let hex = piece
        .strip_prefix("0x")
        .or_else(|| piece.strip_prefix("0X"))
        .unwrap_or(piece);
    if let Some(head) = hex.as_bytes().get(..PROBE) {
        if head.iter().all(u8::is_ascii_hexdigit) {
            let mut probe = [0u8; PROBE / 2];
            for (b, p) in probe.iter_mut().zip(head.chunks_exact(2)) {
                *b = byte(p).unwrap_or(0);
            }
            if is_text(&probe, true) {
                return true;
            }
        }
    }
    let Some(head) = piece.get(..PROBE) else {
        return false;
    };
    [&STANDARD, &URL_SAFE].iter().any(|engine| {
        let mut probe = [0u8; PROBE / 4 * 3];
        engine
            .decode_slice(head, &mut probe)
            .is_ok_and(|n| is_text(&probe[..n], true))
    })
}

/// The byte two hex digits write.
fn byte(pair: &[u8]) -> Option<u8> {
    let nibble = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    Some(nibble(*pair.first()?)? << 4 | nibble(*pair.get(1)?)?)
}

/// The bytes of hex digits (an even number of them).
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    hex.as_bytes().chunks_exact(2).map(byte).collect()
}

/// Whether `bytes` are text: UTF-8 with no control character but tabs and line ends (a
/// `cut` prefix may end inside a character).
fn is_text(bytes: &[u8], cut: bool) -> bool {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) if cut && e.error_len().is_none() => {
            // Checked valid up to there just now.
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !text.is_empty()
        && text
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(piece: &str) -> Option<String> {
        decode(piece, &mut { BUDGET }).map(|(_, t)| t)
    }

    #[test]
    fn text_decodes_and_binary_does_not() {
        // "ghp_…" in hex and in base64.
        assert_eq!(
            decoded("6768705f616263646566676869").as_deref(),
            None,
            "shorter than 32 digits"
        );
        assert_eq!(
            decoded("0x68656c6c6f2c20776f726c642c2068656c6c6f21").as_deref(),
            Some("hello, world, hello!")
        );
        assert_eq!(
            decoded("aGVsbG8sIHdvcmxkLCBoZWxsbyE=").as_deref(),
            Some("hello, world, hello!")
        );
        assert_eq!(
            decoded("aGVsbG8sIHdvcmxkLCBoZWxsbyE").as_deref(),
            Some("hello, world, hello!"),
            "padding may be cut"
        );
        // A SHA-256 digest, a git hash: binary.
        assert_eq!(
            decoded("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            None
        );
        assert_eq!(decoded("30040a6f1c2b3d4e5f60718293a4b5c6d7e8f901"), None);
        // Wrong padding, mixed alphabets, an odd number of digits.
        assert_eq!(decoded("aGVsbG8sIHdvcmxkLCBoZWxsbyE=="), None);
        assert_eq!(decoded("aGVsbG8sIHdvcmxk+CBoZWxs_yE"), None);
        assert_eq!(decoded("68656c6c6f2c20776f726c642c2068656c6c6f2"), None);
        // The budget is kept.
        assert_eq!(decode("aGVsbG8sIHdvcmxkLCBoZWxsbyE=", &mut 3), None);
    }

    #[test]
    fn runs_split_into_pieces() {
        let t = "x api_key=aGVsbG8sIHdvcmxkLCBoZWxsbyE= y";
        let runs: Vec<_> = token_runs(t).collect();
        assert_eq!(runs.len(), 1);
        let (s, e) = runs[0];
        let p: Vec<&str> = pieces(t, s, e).map(|(s, e)| &t[s..e]).collect();
        assert_eq!(p, ["aGVsbG8sIHdvcmxkLCBoZWxsbyE="]);
        // Wrapped lines join; lines of other widths do not.
        let w = "k:\n  aGVsbG8sIHdvcmxkLCBoZWxs\n  bywgd29ybGQsIGhlbGxvIQ==\nnext";
        let (s, e) = token_runs(w).next().unwrap_or_default();
        let (block_end, joined) = wrapped(w, s, e).unwrap_or_default();
        assert_eq!(
            &w[s..block_end],
            "aGVsbG8sIHdvcmxkLCBoZWxs\n  bywgd29ybGQsIGhlbGxvIQ=="
        );
        assert_eq!(joined, "aGVsbG8sIHdvcmxkLCBoZWxsbywgd29ybGQsIGhlbGxvIQ==");
        let w = "aGVsbG8sIHdvcmxkLCBoZWxs\naGVsbG8sIHdvcmxkLCBoZWxsbywgd29ybGQsIGhlbGxvIQ==";
        assert_eq!(wrapped(w, 0, 24), None);
        assert!(skipped_context("[[data:image/png;base64,iVBOR", 24));
        assert!(!skipped_context("data:text/plain;base64,aGVs", 23));
    }
}
