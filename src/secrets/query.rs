//! Credentials in a URL's query or fragment: `?api_key=…`, `&access_token=…`, `#token=…`
//! (OAuth's implicit flow), `&X-Amz-Signature=…`, in plain URLs and in Org links. Only the
//! value goes, so `https://x/y?api_key=[REDACTED:url-credential]&page=2` still reads as the
//! link it was.
//!
//! A parameter counts by its name (a credential's, see [`credential_name`]) and its value
//! (one that could be a key, see [`credential_value`]): `?key=1`, `?token=next` and
//! `?page=2&sort=asc` stay.

use super::{allow, Found};

/// What ends a URL in text: whitespace, quotes, brackets (an Org link's `]]`), and what
/// RFC 3986 leaves out of URLs.
fn url_stop(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(
            b,
            b'"' | b'\'' | b'<' | b'>' | b'`' | b'[' | b']' | b'{' | b'}' | b'|' | b'\\' | b'^'
        )
}

/// The words of a parameter's name, lower-cased: split at `_`, `-`, `.` and where camelCase
/// turns upper (`X-Amz-Signature`, `pageToken`).
fn words(name: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.') {
            prev_lower = false;
            words.push(String::new());
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower || words.is_empty() {
            words.push(String::new());
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        if let Some(w) = words.last_mut() {
            w.push(c.to_ascii_lowercase());
        }
    }
    words.retain(|w| !w.is_empty());
    words
}

/// Whether a parameter's name is a credential's (ASCII case ignored): `key`, `apikey`,
/// `token`, `secret`, `password`, `passwd`, `pwd`, `pass`, `auth`, and `sig` or `signature`
/// in a signed URL (`signed`: one with an expiry, a policy or a key id beside it, as AWS,
/// Google Cloud and Azure sign theirs; a Google Books link has a `sig` that is not one).
/// A longer name counts by its last word: a password or secret whatever comes before,
/// a key, token, signature or credential after a word that says whose (`access_token`,
/// `client_secret`, `subscription-key`, `X-Amz-Signature`), not a page's or a proxy's
/// (`next_page_token`, `casa_token`).
pub(super) fn credential_name(name: &str, signed: bool) -> bool {
    let words = words(name);
    let Some(last) = words.last().map(String::as_str) else {
        return false;
    };
    const ANY_PREFIX: [&str; 5] = ["password", "passwd", "pwd", "secret", "apikey"];
    const QUALIFIED: [&str; 7] = [
        "key",
        "token",
        "signature",
        "sig",
        "credential",
        "auth",
        "pass",
    ];
    const WHOSE: [&str; 24] = [
        "api",
        "access",
        "auth",
        "refresh",
        "id",
        "private",
        "client",
        "secret",
        "session",
        "security",
        "oauth",
        "bearer",
        "app",
        "subscription",
        "amz",
        "goog",
        "signing",
        "master",
        "admin",
        "account",
        "service",
        "personal",
        "consumer",
        "webhook",
    ];
    match words.as_slice() {
        [_] if matches!(last, "sig" | "signature") => signed,
        [_] => {
            ANY_PREFIX.contains(&last)
                || QUALIFIED.contains(&last)
                || [
                    "accesstoken",
                    "authtoken",
                    "apitoken",
                    "clientsecret",
                    "privatetoken",
                ]
                .contains(&last)
        }
        [.., whose, _] => {
            ANY_PREFIX.contains(&last)
                || QUALIFIED.contains(&last) && WHOSE.contains(&whose.as_str())
        }
        [] => false,
    }
}

/// Whether a parameter's name says its URL is signed: an expiry, a policy, a key id (AWS's
/// `X-Amz-…` and `AWSAccessKeyId`/`Expires`, Google Cloud's `X-Goog-…`/`GoogleAccessId`,
/// Azure's SAS `sv`/`se`/`sp`, OAuth 1's `oauth_…`, CloudFront's `Key-Pair-Id`/`Policy`).
fn signs(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "expires",
        "expiry",
        "se",
        "sv",
        "sp",
        "skoid",
        "policy",
        "key-pair-id",
        "keyid",
        "awsaccesskeyid",
        "googleaccessid",
        "timestamp",
        "nonce",
    ]
    .contains(&n.as_str())
        || n.starts_with("x-amz-")
        || n.starts_with("x-goog-")
        || n.starts_with("oauth_")
}

/// Whether a parameter's value could be a key: at least 8 characters, neither a number, a
/// date, a word nor an identifier, nor a placeholder (`$KEY`, `{token}`, `YOUR_API_KEY`,
/// `xxxxxxxx`). Letters alone count when they look random (both cases, 16 or more, varied).
pub(super) fn credential_value(value: &str) -> bool {
    let v = value;
    if v.len() < 8 {
        return false;
    }
    let lowered = v.to_ascii_lowercase();
    let placeholder = v.starts_with(['$', '{', '<', ':'])
        || ["%7b", "%3c", "%24"].iter().any(|p| lowered.starts_with(p))
        || v.bytes()
            .all(|b| matches!(b, b'*' | b'x' | b'X' | b'.' | b'#' | b'-' | b'_'))
        || lowered.starts_with("your")
        || lowered.starts_with("redacted")
        || lowered.starts_with("[redacted")
        // A URL handed on (`?next=https://…`), encoded or not.
        || lowered.starts_with("http")
        || lowered.contains("%3a%2f%2f");
    let number = v
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b':' | b'+'));
    let (lower, upper, digit) = allow::classes(v);
    let letters = v.bytes().all(|b| b.is_ascii_alphabetic());
    let identifier = allow::is_identifier(v);
    // A UUID is an id, as everywhere in the detector (a storage link's download token).
    if placeholder || number || identifier || allow::is_timestamp(v) || allow::is_uuid(v) {
        return false;
    }
    if letters {
        return lower && upper && v.len() >= 16 && allow::entropy(v) >= 3.5;
    }
    // Letters and digits, or symbols (percent-encoded base64, `+/=`).
    (lower || upper) && (digit || v.bytes().any(|b| b.is_ascii_punctuation()))
        || digit && v.len() >= 16
}

/// The value of a parameter without what follows a URL in prose (`…?token=abc).`,
/// `*…*`).
fn trim_value(v: &str) -> &str {
    let mut v = v.trim_end_matches(['.', ',', ':', '!', '*', '~']);
    if v.ends_with(')') && !v.contains('(') {
        v = v.trim_end_matches(')');
        v = v.trim_end_matches(['.', ',', ':', '!', '*', '~']);
    }
    v
}

/// Whether `at` is in one of `queries` (sorted, none overlapping).
pub(super) fn inside(queries: &[(usize, usize)], at: usize) -> bool {
    let i = queries.partition_point(|&(_, end)| end <= at);
    queries.get(i).is_some_and(|&(start, _)| start <= at)
}

/// The credentials in the queries and fragments of `text`'s URLs (`scheme://…`), as
/// [`Found`]s of rule `index`; returns where the queries are (sorted), which this rule
/// alone judges.
pub(super) fn credentials(text: &str, index: usize, found: &mut Vec<Found>) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut queries = Vec::new();
    let mut from = 0;
    for m in memchr::memmem::find_iter(bytes, b"://") {
        if m < from {
            continue;
        }
        let scheme = bytes[..m]
            .iter()
            .rev()
            .take(32)
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
            .count();
        if scheme == 0 || !bytes[m - scheme].is_ascii_alphabetic() {
            continue;
        }
        let rest = m + 3;
        let end = bytes[rest..]
            .iter()
            .position(|&b| url_stop(b))
            .map_or(bytes.len(), |p| rest + p);
        from = end;
        let Some(q) = bytes[rest..end]
            .iter()
            .position(|&b| b == b'?' || b == b'#')
        else {
            continue;
        };
        let query = rest + q + 1;
        queries.push((query, end));
        // The parameters as (start, `=`, end); the URL is signed if one of them says so.
        let mut params = Vec::new();
        let mut i = query;
        while i < end {
            let param_end = bytes[i..end]
                .iter()
                .position(|&b| matches!(b, b'&' | b';' | b'#' | b'?'))
                .map_or(end, |p| i + p);
            if let Some(eq) = bytes[i..param_end].iter().position(|&b| b == b'=') {
                params.push((i, i + eq, param_end));
            }
            i = param_end + 1;
        }
        let signed = params.iter().any(|&(s, eq, _)| signs(&text[s..eq]));
        for &(s, eq, e) in &params {
            let value = trim_value(&text[eq + 1..e]);
            if credential_name(&text[s..eq], signed) && credential_value(value) {
                found.push(Found {
                    start: eq + 1,
                    end: eq + 1 + value.len(),
                    rule: index,
                });
            }
        }
    }
    queries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        for n in [
            "api_key",
            "API-KEY",
            "apikey",
            "key",
            "token",
            "access_token",
            "accessToken",
            "X-Amz-Signature",
            "X-Amz-Security-Token",
            "client_secret",
            "pwd",
            "auth",
            "db_password",
            "shared_secret",
            "subscription-key",
        ] {
            assert!(credential_name(n, false), "{n}");
        }
        for n in [
            "page",
            "sort",
            "q",
            "pageToken",
            "next_page_token",
            "casa_token",
            "keyword",
            "monkey",
            "sort_key",
            "sig",
            "Signature",
            "",
        ] {
            assert!(!credential_name(n, false), "{n}");
        }
        assert!(credential_name("sig", true) && credential_name("Signature", true));
        assert!(signs("X-Amz-Expires") && signs("se") && !signs("hl"));
        for v in [
            "Xk9fQ2mLp7",
            "abc12345",
            "a1b2c3d4e5f6a7b8c9d0",
            "AbCdEfGhIjKlMnOpQr",
            "4f3c%2Bx9%3D",
        ] {
            assert!(credential_value(v), "{v}");
        }
        for v in [
            "1",
            "next",
            "nextpage",
            "12345678",
            "2026-11-24",
            "YOUR_API_KEY",
            "${API_KEY}",
            "xxxxxxxx",
            "some-key-name",
            "abcdefghijklmnop",
            "5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f",
        ] {
            assert!(!credential_value(v), "{v}");
        }
    }

    #[test]
    fn queries_are_found() {
        let t = "see https://x.io/a?q=1&token=Ab12cd34Ef).";
        let mut found = Vec::new();
        let q = credentials(t, 7, &mut found);
        assert_eq!(q.len(), 1);
        assert_eq!(found.len(), 1);
        assert_eq!(&t[found[0].start..found[0].end], "Ab12cd34Ef");
        assert!(inside(&q, found[0].start));
        assert!(!inside(&q, 0));
    }
}
