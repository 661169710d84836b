//! Whether a text could hold anything the rules would find: a cheap test that rejects
//! nearly all text (notes, prompts) before the rules run, so that a verdict per headline can
//! be made as the notes are ingested.
//!
//! Sound by construction, rule by rule: each part below is implied by a match of what it
//! stands for, so a text it rejects is one on which [`super::Detector`] finds nothing.
//!
//! - The regex rules: literals one of which every match holds (`sk-` for `(?-u:\b)sk-…`),
//!   searched at once in the text with ASCII case folded (SIMD, a few GB/s), and what must
//!   be around them checked in place (not after a word's character; a secret's name
//!   followed by a separator).
//! - URLs (`url-password`, `url-credential`): at each `://`, a `:` then `@` before the host
//!   ends, or the query pass itself on that URL.
//! - Runs of token characters (random tokens, Twilio's ids, hex and base64): the runs long
//!   enough, found by a scan that skips ahead a run's length; each judged as the passes
//!   would (`rules::random_token_ok`), or by the first characters a decoding reads.
//! - Adjacent string literals: joined as the detector joins them, and screened again.

use super::encoded;
use super::query;
use super::rules;
use super::{literals, MIN_RANDOM_TOKEN};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use std::cell::RefCell;

/// What a place where an anchor is written needs around it before a rule could match there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing more: a rare literal whose rule ignores case (`bearer`, `twilio`).
    None,
    /// The anchor as written (the rule's regex is case-sensitive).
    Exact,
    /// As written, and not after a word's character (`(?-u:\b)sk-`, `(?-u:\b)SG\.`).
    ExactAtWordStart,
    /// A secret's name: an assignment to it (`password-assignment`), or for `secret`, `key`
    /// a few bytes on (`aws-secret-access-key`).
    Name,
}

/// The anchors: for every regex rule, the literals one of which each of its matches holds,
/// and what must surround it. (The rule with no literal, Twilio's ids, is looked for in the
/// runs of token characters: [`run_may_hold`].)
const ANCHORS: &[(&str, Check)] = &[
    // private-key, aws-access-key-id.
    ("PRIVATE KEY", Check::Exact),
    ("AKIA", Check::Exact),
    ("ASIA", Check::Exact),
    ("ABIA", Check::Exact),
    ("ACCA", Check::Exact),
    ("A3T", Check::Exact),
    // github-token, gitlab-token.
    ("ghp_", Check::Exact),
    ("gho_", Check::Exact),
    ("ghu_", Check::Exact),
    ("ghs_", Check::Exact),
    ("ghr_", Check::Exact),
    ("github_pat_", Check::Exact),
    ("glpat-", Check::Exact),
    // anthropic-key (`sk-ant-`) and openai-key.
    ("sk-", Check::ExactAtWordStart),
    ("AIza", Check::Exact),
    ("hooks.slack.com", Check::Exact),
    ("xox", Check::Exact),
    ("xapp-", Check::Exact),
    // stripe-key.
    ("_live_", Check::Exact),
    ("_test_", Check::Exact),
    ("twilio", Check::None),
    ("SG.", Check::ExactAtWordStart),
    ("npm_", Check::Exact),
    ("pypi-", Check::Exact),
    ("eyJ", Check::Exact),
    ("bearer", Check::None),
    // password-assignment and aws-secret-access-key: every name in `rules::SECRET_NAMES`
    // ends with one of these and letters.
    ("pass", Check::Name),
    ("pwd", Check::Name),
    ("secret", Check::Name),
    ("key", Check::Name),
    ("token", Check::Name),
    ("credential", Check::Name),
    // The two characters outside ASCII a case-insensitive regex takes for an ASCII letter
    // (`ſ` for `s`, the Kelvin sign for `k`): `paſsword` is a name to the rules.
    ("\u{17f}", Check::None),
    ("\u{212a}", Check::None),
];

/// `b` with ASCII case ignored, as the anchors are searched: bit 5 set (`A` and `a` are
/// one; other bytes may meet others, which the checks then tell apart).
fn fold(b: u8) -> u8 {
    b | 0x20
}

/// The screen, made once per detector.
pub(super) struct Prefilter {
    /// The anchors folded ([`fold`]): a search of literals, so the SIMD one.
    anchors: AhoCorasick,
}

thread_local! {
    /// The text being screened, folded: kept from call to call.
    static FOLDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Prefilter {
    pub(super) fn new() -> Prefilter {
        let folded: Vec<Vec<u8>> = ANCHORS
            .iter()
            .map(|(a, _)| a.bytes().map(fold).collect())
            .collect();
        let anchors = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .build(&folded)
            // The anchors are constants, checked by the unit tests.
            .unwrap_or_else(|e| panic!("secret anchors: {e}"));
        Prefilter { anchors }
    }

    /// Whether some rule could find something in `text` (false: surely nothing).
    pub(super) fn may_hold(&self, text: &str) -> bool {
        self.may_hold_at(text, true)
    }

    /// [`Prefilter::may_hold`], adjacent literals joined only at the top (`top`), as the
    /// detector joins them.
    fn may_hold_at(&self, text: &str, top: bool) -> bool {
        if self.anchored(text) {
            return true;
        }
        if memchr::memmem::find_iter(text.as_bytes(), b"://").any(|at| url_may_hold(text, at)) {
            return true;
        }
        if long_runs(text.as_bytes()).any(|(s, e)| run_may_hold(text, s, e)) {
            return true;
        }
        top && literals::chains(text)
            .iter()
            .any(|c| self.may_hold_at(&c.joined, false))
    }

    /// Whether an anchor is in `text` with what its rule needs around it.
    fn anchored(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        FOLDED.with(|folded| {
            let Ok(mut folded) = folded.try_borrow_mut() else {
                // Screening within a screen (never: nothing here calls back): fold anew.
                return self
                    .anchored_in(bytes, &bytes.iter().map(|&b| fold(b)).collect::<Vec<u8>>());
            };
            folded.clear();
            folded.extend(bytes.iter().map(|&b| fold(b)));
            self.anchored_in(bytes, &folded)
        })
    }

    /// [`Prefilter::anchored`] given the text folded.
    fn anchored_in(&self, bytes: &[u8], folded: &[u8]) -> bool {
        let mut from = 0;
        while let Some(m) = self
            .anchors
            .find(Input::new(folded).range(from..folded.len()))
        {
            // Every place an anchor starts, each anchor once (none is another's prefix).
            from = m.start() + 1;
            let (anchor, check) = ANCHORS[m.pattern().as_usize()];
            let hit = match check {
                Check::None => true,
                Check::Exact => bytes[m.start()..m.end()] == *anchor.as_bytes(),
                Check::ExactAtWordStart => {
                    bytes[m.start()..m.end()] == *anchor.as_bytes()
                        && !m
                            .start()
                            .checked_sub(1)
                            .is_some_and(|p| is_word_byte(bytes[p]))
                }
                Check::Name => {
                    bytes[m.start()..m.end()].eq_ignore_ascii_case(anchor.as_bytes())
                        && (assignment_after(bytes, m.end())
                            || anchor == "secret" && key_after_secret(bytes, m.end()))
                }
            };
            if hit {
                return true;
            }
        }
        false
    }
}

/// ASCII `\w`: what `(?-u:\b)` tells apart.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether what follows a name's anchor ending at `at` could be an assignment to the name
/// (`password-assignment`): the rest of the name (letters), a quote perhaps, then `:`,
/// `=`, `+:` (an Org property's), or ` is `, spaces or tabs before.
fn assignment_after(bytes: &[u8], at: usize) -> bool {
    let mut i = at;
    while bytes.get(i).is_some_and(u8::is_ascii_alphabetic) {
        i += 1;
    }
    if matches!(bytes.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    let spaced = i;
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    match bytes.get(i) {
        Some(b':' | b'=' | b'+') => true,
        Some(b'i' | b'I') => {
            i > spaced
                && matches!(bytes.get(i + 1), Some(b's' | b'S'))
                && matches!(bytes.get(i + 2), Some(b' ' | b'\t'))
        }
        _ => false,
    }
}

/// Whether `key` starts within the bytes after `secret` (ending at `at`) that the name in
/// `aws-secret-access-key` allows: `[_\- ]?(?:access[_\- ]?)?`, eight at most.
fn key_after_secret(bytes: &[u8], at: usize) -> bool {
    (at..=at + 8).any(|i| {
        bytes
            .get(i..i + 3)
            .is_some_and(|k| k.eq_ignore_ascii_case(b"key"))
    })
}

/// Whether the URL whose `://` is at `at` could hold a password or credentials: a `:` then
/// an `@` before the host ends (`url-password`), or a query or fragment with a parameter
/// the query pass takes for a credential (`url-credential`).
fn url_may_hold(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    let end = at + 3;
    // The userinfo has no whitespace nor `/`; `:` and then `@` in it.
    let host_end = bytes[end..]
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b == b'/')
        .map_or(bytes.len(), |p| end + p);
    if let Some(colon) = bytes[end..host_end].iter().position(|&b| b == b':') {
        if bytes[end + colon..host_end].contains(&b'@') {
            return true;
        }
    }
    // The query pass itself, on this URL: it reads the scheme back from `://` and the URL
    // on to a character URLs leave out, whitespace among them, so between the whitespace
    // around it, it reads what it reads in the whole text.
    let to = bytes[end..]
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .map_or(bytes.len(), |p| end + p);
    if !bytes[end..to].iter().any(|&b| b == b'?' || b == b'#') {
        return false;
    }
    let from = bytes[..at]
        .iter()
        .rposition(|b| b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    let mut found = Vec::new();
    query::credentials(&text[from..to], 0, &mut found);
    !found.is_empty()
}

/// The runs of `encoded::token_runs` (token characters, at least
/// [`encoded::MIN_BASE64`] long), found without looking at every byte of ordinary text:
/// a run that long holds the byte [`encoded::MIN_BASE64`] on from the last byte known to
/// be no token's, so only that byte is read, and the bytes back from it when it is one.
fn long_runs(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let min = encoded::MIN_BASE64;
    // The next run can start no sooner than `from`.
    let mut from = 0;
    std::iter::from_fn(move || {
        while from + min <= bytes.len() {
            let probe = from + min - 1;
            if !is_token(bytes[probe]) {
                from = probe + 1;
                continue;
            }
            // The last byte before `probe` that is no token's, if any since `from`.
            match bytes[from..probe].iter().rposition(|&b| !is_token(b)) {
                Some(p) => from = from + p + 1,
                None => {
                    let start = from;
                    let end = bytes[probe..]
                        .iter()
                        .position(|&b| !is_token(b))
                        .map_or(bytes.len(), |p| probe + p);
                    from = end;
                    // A run starts after a byte that is no token's (or at the text's start):
                    // `from` is always just after one.
                    return Some((start, end));
                }
            }
        }
        None
    })
}

/// [`encoded::is_token`] as a table: the run scan's one test per byte.
pub(super) fn is_token(b: u8) -> bool {
    const TABLE: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-' | b'=');
            b += 1;
        }
        t
    };
    TABLE[b as usize]
}

/// Whether the run of token characters `text[start..end]` could be a random token, a
/// Twilio id (`(?-u:\b)(?:AC|SK)[0-9a-f]{32}`, the rule with no literal to look for), or hex
/// or base64 that decodes to text (the only runs whose decoding is rescanned).
fn run_may_hold(text: &str, start: usize, end: usize) -> bool {
    let run = &text[start..end];
    if run.len() >= MIN_RANDOM_TOKEN && rules::random_token_ok(run.trim_end_matches('=')) {
        return true;
    }
    if twilio_sid(run.as_bytes()) {
        return true;
    }
    encoded::pieces(text, start, end).any(|(s, e)| encoded::may_decode(&text[s..e]))
}

/// Whether `run` holds `AC` or `SK` and 32 lower-case hex digits.
fn twilio_sid(run: &[u8]) -> bool {
    run.len() >= 34
        && run.windows(2).enumerate().any(|(i, w)| {
            (w == b"AC" || w == b"SK")
                && run.get(i + 2..i + 34).is_some_and(|h| {
                    h.iter()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
                })
        })
}

/// Whether no anchor, folded, starts another: the search reports one anchor per place, so
/// none may hide another.
#[cfg(test)]
pub(super) fn anchors_are_distinct() -> bool {
    let folded: Vec<Vec<u8>> = ANCHORS
        .iter()
        .map(|(a, _)| a.bytes().map(fold).collect())
        .collect();
    folded.iter().enumerate().all(|(i, a)| {
        folded
            .iter()
            .enumerate()
            .all(|(j, b)| i == j || !b.starts_with(a))
    })
}
