//! The secret gate's detector: finds credentials in text and replaces each with
//! `[REDACTED:rule-name]`, so nothing secret leaves for an LLM or embedding server.
//!
//! Pure text: it knows nothing of requests or notes. The `llm` layer runs every request
//! body's text and every embedding input through a [`SecretGate`] before sending.
//!
//! No maintained Rust library does this as a library with an allowlist for notes (the
//! crates found are command-line scanners of repositories), so the rules are our own,
//! written from the formats' public descriptions (see `rules.rs`).
//!
//! Besides the rules' regexes, four passes of our own catch what a regex on the text as it
//! stands cannot:
//!
//! - long random tokens anywhere (`high-entropy-token`), unless the token decodes to words
//!   that hold no secret (base64 of a sentence);
//! - a URL's query parameters named like credentials (`?api_key=…`, `&token=…`): only the
//!   value goes, the URL keeps its shape (`url-credential`, `query.rs`);
//! - hex and base64 runs, and blocks of them wrapped over lines (as `base64` and `xxd -p`
//!   write them): one that decodes to text is rescanned with every rule, and a hit
//!   withholds the whole run or block (`hex-encoded`, `base64-encoded`, `encoded.rs`);
//! - a key split over adjacent string literals (`"sk-proj-abc" "def…"`, `'a' + 'b'`, `..`):
//!   the literals' contents are joined and rescanned, and a hit withholds the literals it
//!   covers, named by the rule that found it (`literals.rs`).
//!
//! Cost: first the screen (`prefilter.rs`), which clears nearly all notes (97 % of the
//! corpus's sections) with no rule run and nothing allocated; then one Aho-Corasick pass over
//! the text for every rule's keywords, one byte scan for
//! runs of token characters (the random tokens and the encoded runs) and one `memchr` scan
//! for quotes; a rule's regex runs only when one of its keywords occurred, so ordinary text
//! costs those three linear scans. What they find is rescanned the same way: a run is
//! decoded only when its first bytes decode to text (a hash or a key's binary decodes to
//! garbage at once), decoded text at most [`encoded::BUDGET`] bytes per call and two levels
//! deep, the joined literals once (they are not joined again), so the whole stays linear.

mod allow;
mod encoded;
mod literals;
mod prefilter;
mod query;
mod rules;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use rules::Rule;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use allow::entropy;

/// How many secrets each rule found, by rule name (sorted by name; rules that found none are
/// left out).
pub type Hits = Vec<(&'static str, usize)>;

/// Text with its secrets replaced, and how many each rule found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted<'a> {
    /// The text itself (borrowed) when nothing was found.
    pub text: Cow<'a, str>,
    pub hits: Hits,
}

/// The shortest token the keyword-free rule looks at.
const MIN_RANDOM_TOKEN: usize = 32;

/// The rules found by scans of their own, in the order of [`rules::pass_rules`]: each one's
/// index is the number of table rules plus its own.
#[derive(Debug, Clone, Copy)]
enum Pass {
    Random = 0,
    Url = 1,
    Hex = 2,
    Base64 = 3,
}

/// How many levels of decoding a text goes through (the text, then what a run of it decodes
/// to): `base64(hex(key))` is found, deeper nestings are not.
const MAX_DECODE_DEPTH: usize = 2;

/// The detector: the rules and their keyword pre-filter.
pub struct Detector {
    /// The regex rules, then the rules of the hand-written passes ([`Pass`]).
    rules: Vec<Rule>,
    /// How many of `rules` are regex rules.
    table: usize,
    prefilter: AhoCorasick,
    /// For each pattern of the pre-filter, the rules whose keyword it is (bit i: rule i).
    keyword_rules: Vec<u64>,
    /// The rules without keywords, which always run (bit i: rule i).
    always: u64,
    /// Whether a text could hold anything at all, before any of this runs.
    screen: prefilter::Prefilter,
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("rules", &self.rule_names())
            .finish()
    }
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

/// Where a secret is in a text (a byte range on character boundaries) and the rule that
/// found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub rule: &'static str,
}

/// A found secret: where it is and which rule found it.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    end: usize,
    rule: usize,
}

impl Detector {
    /// The detector with the default rules.
    pub fn new() -> Detector {
        let mut rules = rules::default_rules();
        let table = rules.len();
        rules.extend(rules::pass_rules());
        assert!(rules.len() <= 64, "the rule sets are bit masks");
        let mut keywords: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<u64> = Vec::new();
        let mut always = 0u64;
        for (i, r) in rules.iter().enumerate() {
            if r.keywords.is_empty() {
                always |= 1 << i;
            }
            for k in r.keywords {
                let k = k.to_ascii_lowercase();
                match keywords.iter().position(|x| *x == k) {
                    Some(p) => keyword_rules[p] |= 1 << i,
                    None => {
                        keywords.push(k);
                        keyword_rules.push(1 << i);
                    }
                }
            }
        }
        let prefilter = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&keywords)
            // The keywords are constants, checked by the unit tests.
            .unwrap_or_else(|e| panic!("secret keywords: {e}"));
        Detector {
            rules,
            table,
            prefilter,
            keyword_rules,
            always,
            screen: prefilter::Prefilter::new(),
        }
    }

    /// Whether some rule could find a secret in `text`: false means [`Detector::spans`] is
    /// empty, and costs a fraction of it (most text is rejected in two linear scans).
    pub fn may_hold(&self, text: &str) -> bool {
        self.screen.may_hold(text)
    }

    /// The rule names, in the order rules are tried.
    pub fn rule_names(&self) -> Vec<&'static str> {
        self.rules.iter().map(|r| r.name).collect()
    }

    /// `text` with each secret replaced by `[REDACTED:rule-name]`.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let found = self.find(text);
        if found.is_empty() {
            return Redacted {
                text: Cow::Borrowed(text),
                hits: Vec::new(),
            };
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut hits: Hits = Vec::new();
        for f in &found {
            let name = self.rule(f.rule).name;
            out.push_str(&text[at..f.start]);
            out.push_str("[REDACTED:");
            out.push_str(name);
            out.push(']');
            at = f.end;
            match hits.iter_mut().find(|(n, _)| *n == name) {
                Some((_, count)) => *count += 1,
                None => hits.push((name, 1)),
            }
        }
        out.push_str(&text[at..]);
        hits.sort_unstable();
        Redacted {
            text: Cow::Owned(out),
            hits,
        }
    }

    /// Where the secrets of `text` are and which rule found each: the byte ranges
    /// [`Detector::redact`] replaces, in order, none overlapping. For a caller that must act
    /// on a secret where it stands (move it out of a note) without being handed a copy.
    pub fn spans(&self, text: &str) -> Vec<Span> {
        self.find(text)
            .into_iter()
            .map(|f| Span {
                start: f.start,
                end: f.end,
                rule: self.rule(f.rule).name,
            })
            .collect()
    }

    fn rule(&self, i: usize) -> &Rule {
        &self.rules[i]
    }

    /// The index of a pass's rule.
    fn pass(&self, p: Pass) -> usize {
        self.table + p as usize
    }

    /// The secrets in `text`, in order, none overlapping.
    fn find(&self, text: &str) -> Vec<Found> {
        if !self.screen.may_hold(text) {
            return Vec::new();
        }
        self.find_unscreened(text)
    }

    /// [`Detector::find`] without the screen: every rule's own search (what the screen is
    /// checked against).
    fn find_unscreened(&self, text: &str) -> Vec<Found> {
        let mut budget = encoded::BUDGET;
        self.find_in(text, 0, &mut budget)
    }

    /// The secrets in `text` at `depth` (0: the text given; 1 and on: what was decoded or
    /// joined from it), decoding at most `budget` more bytes.
    fn find_in(&self, text: &str, depth: usize, budget: &mut usize) -> Vec<Found> {
        let mut triggered = self.always;
        for m in self.prefilter.find_overlapping_iter(text) {
            triggered |= self.keyword_rules[m.pattern().as_usize()];
        }
        let mut found = Vec::new();
        for (i, rule) in self.rules[..self.table].iter().enumerate() {
            if triggered & (1 << i) != 0 {
                matches_of(rule, i, text, &mut found);
            }
        }
        let random = self.pass(Pass::Random);
        // Where the last block of wrapped lines ended (its lines start none of their own).
        let mut wrapped_until = 0;
        for (start, end) in encoded::token_runs(text) {
            if depth < MAX_DECODE_DEPTH && start >= wrapped_until {
                if let Some((block_end, joined)) = encoded::wrapped(text, start, end) {
                    wrapped_until = block_end;
                    self.encoded_block(&joined, start, block_end, depth, budget, &mut found);
                }
            }
            let prose = depth < MAX_DECODE_DEPTH
                && self.encoded_run(text, start, end, depth, budget, &mut found);
            // A run that decodes to words without a secret is encoded prose, not a key.
            if end - start >= MIN_RANDOM_TOKEN && !prose {
                random_token(text, start, end, random, &mut found);
            }
        }
        let url = self.pass(Pass::Url);
        if triggered & (1 << url) != 0 {
            let queries = query::credentials(text, url, &mut found);
            // A query's parameters are judged by their names there: the generic rules (an
            // assignment's value runs on over `&`) keep out.
            found.retain(|f| !(self.rule(f.rule).generic && query::inside(&queries, f.start)));
        }
        if depth == 0 {
            for chain in literals::chains(text) {
                for f in self.find_in(&chain.joined, depth + 1, budget) {
                    if let Some((start, end)) = chain.to_text(f.start, f.end) {
                        found.push(Found { start, end, ..f });
                    }
                }
            }
        }
        self.resolve(found)
    }

    /// The hex or base64 pieces of the token run `text[start..end]` that decode to text
    /// holding a secret, whole. Whether the whole run decodes to words (text with a space)
    /// holding none.
    fn encoded_run(
        &self,
        text: &str,
        start: usize,
        end: usize,
        depth: usize,
        budget: &mut usize,
        found: &mut Vec<Found>,
    ) -> bool {
        if encoded::skipped_context(text, start) {
            return false;
        }
        let mut prose = false;
        for (s, e) in encoded::pieces(text, start, end) {
            let Some((encoding, decoded)) = encoded::decode(&text[s..e], budget) else {
                continue;
            };
            if self.find_in(&decoded, depth + 1, budget).is_empty() {
                prose = (s, e) == (start, end) && decoded.contains(' ');
            } else {
                let pass = match encoding {
                    encoded::Encoding::Hex => Pass::Hex,
                    encoded::Encoding::Base64 => Pass::Base64,
                };
                found.push(Found {
                    start: s,
                    end: e,
                    rule: self.pass(pass),
                });
            }
        }
        prose
    }

    /// A block of hex or base64 wrapped over lines (`joined`: its lines without the breaks,
    /// at `text[start..end]`), whole if it decodes to text holding a secret.
    fn encoded_block(
        &self,
        joined: &str,
        start: usize,
        end: usize,
        depth: usize,
        budget: &mut usize,
        found: &mut Vec<Found>,
    ) {
        let Some((encoding, decoded)) = encoded::decode(joined, budget) else {
            return;
        };
        if !self.find_in(&decoded, depth + 1, budget).is_empty() {
            let pass = match encoding {
                encoded::Encoding::Hex => Pass::Hex,
                encoded::Encoding::Base64 => Pass::Base64,
            };
            found.push(Found {
                start,
                end,
                rule: self.pass(pass),
            });
        }
    }

    /// `found` with overlaps settled: the formats' own rules first, then the generic ones
    /// where no format matched; among equals the earliest, then the longest, then the
    /// earlier rule. In order of position.
    fn resolve(&self, mut found: Vec<Found>) -> Vec<Found> {
        found.sort_unstable_by_key(|f| {
            (
                self.rule(f.rule).generic,
                f.start,
                std::cmp::Reverse(f.end),
                f.rule,
            )
        });
        let mut kept: Vec<Found> = Vec::with_capacity(found.len());
        for f in found {
            if kept.iter().all(|k| f.end <= k.start || f.start >= k.end) {
                kept.push(f);
            }
        }
        kept.sort_unstable_by_key(|f| f.start);
        kept
    }
}

/// The matches of `rule` in `text` that pass its checks, as [`Found`]s.
fn matches_of(rule: &Rule, index: usize, text: &str, found: &mut Vec<Found>) {
    for caps in rule.regex().captures_iter(text) {
        let Some(secret) = rule.groups.iter().find_map(|&g| caps.get(g)) else {
            continue;
        };
        if secret.is_empty() || !(rule.check)(&caps, secret.as_str()) {
            continue;
        }
        if rule.generic
            && (allow::is_allowed_value(secret.as_str())
                || allow::in_allowed_context(text, secret.start()))
        {
            continue;
        }
        found.push(Found {
            start: secret.start(),
            end: (rule.extend)(text, secret.start(), secret.end()),
            rule: index,
        });
    }
}

/// A long random token (the keyword-free rule) in the token run `text[start..i]`: a run in a
/// word that is a URL or a file path is left alone (a secret in a URL is a password or a
/// named parameter, which other rules find), as are public keys and hashes named as such.
fn random_token(text: &str, start: usize, i: usize, index: usize, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    let is_word = |b: u8| {
        !b.is_ascii_whitespace()
            && !matches!(
                b,
                b'[' | b']' | b'(' | b')' | b'<' | b'>' | b'"' | b'\'' | b'`' | b'{' | b'}'
            )
    };
    let word_start = bytes[..start]
        .iter()
        .rposition(|&b| !is_word(b))
        .map_or(0, |p| p + 1);
    let word_prefix = &text[word_start..start];
    let token = &text[start..i];
    let path_like = word_prefix.contains("://")
        || word_prefix.contains('/')
        || word_prefix.starts_with(['~', '.', '@'])
        || word_prefix.contains(':') && !word_prefix.ends_with(':')
        || token.contains("//")
        || token.starts_with('/');
    let before = text[..word_start].trim_end();
    let public = [
        "ssh-ed25519",
        "ssh-rsa",
        "ssh-dss",
        "nistp256",
        "nistp384",
        "nistp521",
    ]
    .iter()
    .any(|k| before.ends_with(k))
        || before
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .is_some_and(|w| {
                w.to_ascii_lowercase()
                    .trim_matches(['=', ':', '"'])
                    .starts_with("sha")
            })
        || token.starts_with("sha256-")
        || token.starts_with("sha512-");
    // The local part of a mail address or message id (`…@mail.gmail.com`), a hash that
    // names a directory (`<sha256>/VERSION`).
    let addressed = bytes.get(i) == Some(&b'@');
    let hashed_path = token
        .split('/')
        .any(|part| part.len() >= 32 && allow::is_hex_hash(part));
    if path_like || public || addressed || hashed_path || allow::in_allowed_context(text, start) {
        return;
    }
    let token = token.trim_end_matches('=');
    if rules::random_token_ok(token) {
        found.push(Found {
            start,
            end: start + token.len(),
            rule: index,
        });
    }
}

/// Adds `more` into `into` (counts of the same rule summed, sorted by name).
pub fn merge_hits(into: &mut Hits, more: &[(&'static str, usize)]) {
    for &(name, n) in more {
        match into.iter_mut().find(|(k, _)| *k == name) {
            Some((_, count)) => *count += n,
            None => into.push((name, n)),
        }
    }
    into.sort_unstable();
}

/// "2 secrets withheld (github-token 1, jwt 1)".
pub fn describe_hits(hits: &[(&'static str, usize)]) -> String {
    let total: usize = hits.iter().map(|(_, n)| n).sum();
    let parts: Vec<String> = hits.iter().map(|(k, n)| format!("{k} {n}")).collect();
    format!(
        "{total} secret{} withheld ({})",
        if total == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

/// The detector as it guards a client: the rules, and how many secrets each rule withheld
/// since the gate was made (every client of the module shares [`SecretGate::shared`]).
#[derive(Debug)]
pub struct SecretGate {
    detector: Detector,
    counts: Vec<AtomicU64>,
}

impl Default for SecretGate {
    fn default() -> Self {
        SecretGate::new(Detector::new())
    }
}

impl SecretGate {
    pub fn new(detector: Detector) -> SecretGate {
        let counts = detector
            .rule_names()
            .iter()
            .map(|_| AtomicU64::new(0))
            .collect();
        SecretGate { detector, counts }
    }

    /// The gate with the default rules, made once (compiling the rules takes milliseconds).
    pub fn shared() -> Arc<SecretGate> {
        static SHARED: OnceLock<Arc<SecretGate>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(SecretGate::default()))
            .clone()
    }

    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// [`Detector::redact`], counted.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let r = self.detector.redact(text);
        if !r.hits.is_empty() {
            let names = self.detector.rule_names();
            for (name, n) in &r.hits {
                if let Some(i) = names.iter().position(|k| k == name) {
                    self.counts[i].fetch_add(*n as u64, Ordering::Relaxed);
                }
            }
        }
        r
    }

    /// How many secrets each rule withheld so far (rules with none left out).
    pub fn totals(&self) -> Vec<(&'static str, u64)> {
        self.detector
            .rule_names()
            .into_iter()
            .zip(&self.counts)
            .map(|(k, c)| (k, c.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

#[cfg(test)]
mod tests;
