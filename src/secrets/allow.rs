//! What looks like a secret but is not: the identifiers and hashes notes are full of (Org
//! ids, UUIDs, the store's SHA-256 hashes, git hashes, Org timestamps, `id:` links, inline
//! base64 images), and the measure of how random a token is (Shannon entropy per
//! character), which tells a key from a word.

/// Whether `s` is a UUID (`8-4-4-4-12` hex digits, any case): Org ids made by `org-id`.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Whether `s` is only hex digits, at least 7 of them: git hashes (short or whole), SHA-1
/// and SHA-256 digests such as those the store makes. (A key written in hex carries at most
/// 4 bits a character; the formats with a hex secret are matched by their own rules.)
pub fn is_hex_hash(s: &str) -> bool {
    s.len() >= 7 && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Whether `s` starts like an Org timestamp (`<2026-11-24 Tue>`, `[2026-11-24 Tue 10:00]`)
/// or a bare ISO date.
pub fn is_timestamp(s: &str) -> bool {
    let s = s.trim_start_matches(['<', '[']);
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
}

/// Whether the token at `start` of `text` is the payload of a `data:` URL
/// (`data:image/png;base64,…`) or the target of an `id:` link, judged from the text just
/// before it.
pub fn in_allowed_context(text: &str, start: usize) -> bool {
    let before = &text[..start];
    // The token's own prefix back to whitespace or a bracket: `data:…;base64,` or `id:`.
    let from = before
        .rfind(|c: char| c.is_whitespace() || matches!(c, '[' | '(' | '"' | '\''))
        .map_or(0, |i| i + 1);
    let prefix = &before[from..];
    (prefix.starts_with("data:") && prefix.ends_with("base64,"))
        || prefix.eq_ignore_ascii_case("id:")
}

/// Whether the value is an allowed look-alike whatever its context.
pub fn is_allowed_value(s: &str) -> bool {
    is_uuid(s) || is_hex_hash(s) || is_timestamp(s) || s.starts_with("[REDACTED:")
}

/// Shannon entropy of `s` in bits per character (over bytes).
pub fn entropy(s: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    if n == 0.0 {
        return 0.0;
    }
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Whether `v` is a name in code, not a credential: snake_case, kebab-case or dotted lower
/// case (`next_page`, `my-app.v2`), or an upper-case constant with an underscore
/// (`YOUR_API_KEY`).
pub fn is_identifier(v: &str) -> bool {
    v.bytes()
        .all(|b| b.is_ascii_lowercase() || matches!(b, b'_' | b'-' | b'.'))
        || v.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            && v.contains('_')
}

/// Which classes of character `s` has: (lower, upper, digit).
pub fn classes(s: &str) -> (bool, bool, bool) {
    let b = s.as_bytes();
    (
        b.iter().any(u8::is_ascii_lowercase),
        b.iter().any(u8::is_ascii_uppercase),
        b.iter().any(u8::is_ascii_digit),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_are_known() {
        assert!(is_uuid("5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f"));
        assert!(!is_uuid("5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5"));
        assert!(is_hex_hash("30040a6"));
        assert!(!is_hex_hash("30040a"));
        assert!(is_timestamp("<2026-11-24 Tue 10:00>"));
        assert!(!is_timestamp("hunter2-2026"));
        let t = "see [[data:image/png;base64,iVBORw0KGgo]] and [[id:abc]]";
        assert!(in_allowed_context(t, t.find("iVBOR").unwrap()));
        assert!(in_allowed_context(t, t.find("abc").unwrap()));
        assert!(!in_allowed_context(t, t.find("see").unwrap()));
    }

    #[test]
    fn entropy_tells_words_from_keys() {
        assert!(entropy("aaaaaaaa") < 0.01);
        assert!(entropy("internationalization-of-software") < 4.0);
        assert!(entropy("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY") > 4.5);
    }
}
