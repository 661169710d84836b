//! The rules: one per credential format, written from each format's public description
//! (the provider's documentation of its key prefixes and lengths, RFC 7519 for JWTs,
//! RFC 7468 for PEM blocks, RFC 3986 for a URL's userinfo), plus two generic rules
//! (password-like assignments and long random tokens) that only fire on what looks random.
//!
//! A rule runs only when one of its keywords occurs in the text (the pre-filter in
//! [`super::Detector`]), so ordinary text costs one scan for all of them.

use super::allow;
use base64::Engine;
use regex::{Captures, Regex};
use std::sync::OnceLock;

/// One detection rule.
pub(super) struct Rule {
    /// The name in `[REDACTED:name]` and in the counts.
    pub name: &'static str,
    /// The rule runs only when one of these occurs (ASCII case ignored).
    pub keywords: &'static [&'static str],
    /// The pattern, compiled the first time a text gets past the screens to this rule
    /// ([`Rule::regex`]).
    pattern: String,
    compiled: OnceLock<Regex>,
    /// The capture groups that hold the secret, tried in order (0: the whole match).
    pub groups: &'static [usize],
    /// Whether a match is a secret (the format's checks beyond the pattern).
    pub check: fn(&Captures<'_>, &str) -> bool,
    /// Where the secret really ends, given the text and the end of the match (a PEM block
    /// whose END line is missing runs on over its base64 lines).
    pub extend: fn(&str, usize, usize) -> usize,
    /// Whether the allowlists apply (generic rules; a token with a provider's prefix is a
    /// secret whatever surrounds it).
    pub generic: bool,
}

impl Rule {
    /// The rule's regex. Compiled when first asked for, not with the detector: the
    /// automata of the Unicode classes and bounded repeats of a few rules (the assignments'
    /// `{1,200}` values, Twilio's `\W{0,5}`) take about 10 MB once compiled and 30 MB while
    /// compiling, and notes whose text never reaches a rule should not pay for it.
    pub fn regex(&self) -> &Regex {
        self.compiled.get_or_init(|| {
            // The patterns are constants, each compiled by the unit tests.
            Regex::new(&self.pattern).unwrap_or_else(|e| panic!("rule {}: {e}", self.name))
        })
    }
}

fn always(_: &Captures<'_>, _: &str) -> bool {
    true
}

fn as_matched(_: &str, _: usize, end: usize) -> usize {
    end
}

/// After a BEGIN line with no END line: the following lines that are base64 (or the
/// `Proc-Type:`-style headers of old PEM), up to the first that is not.
fn pem_body(text: &str, start: usize, end: usize) -> usize {
    if text[start..end].contains("-----END") {
        return end;
    }
    let mut at = end;
    while let Some(rest) = text[at..]
        .strip_prefix('\n')
        .or_else(|| text[at..].strip_prefix("\r\n"))
    {
        let line_start = text.len() - rest.len();
        let line = rest.split('\n').next().unwrap_or("").trim_end_matches('\r');
        let content = line.trim().trim_start_matches(',');
        let base64 = content.len() >= 4
            && content
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
        let header = content.split_once(": ").is_some_and(|(k, _)| {
            !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        if !(base64 || header) {
            break;
        }
        at = line_start + line.len();
    }
    at
}

/// An OpenAI-style key has letters and digits in both cases after its prefix (a hyphenated
/// word such as `sk-learn-…` does not).
fn openai_key(_: &Captures<'_>, secret: &str) -> bool {
    let body = secret.rsplit('-').next().unwrap_or(secret);
    let (lower, upper, digit) = allow::classes(body);
    lower && upper && digit && body.len() >= 16
}

/// A JWT's header is base64url of a JSON object naming its algorithm (RFC 7519 §5,
/// RFC 7515 §4.1.1).
fn jwt(c: &Captures<'_>, _: &str) -> bool {
    let Some(header) = c.get(1) else {
        return false;
    };
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.as_str().trim_end_matches('='))
    else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("alg").map(|_| ()))
        .is_some()
}

/// A password in a URL that is not a placeholder for one (`${PASS}`, `<password>`, `***`).
fn url_password(_: &Captures<'_>, secret: &str) -> bool {
    !secret.is_empty()
        && !secret.starts_with(['$', '<', '{', '%'])
        && !secret.bytes().all(|b| b == b'*' || b == b'x' || b == b'X')
}

/// Whether `value` reads as a credential rather than a word, a number, a reference to one
/// elsewhere or a placeholder.
fn credential_like(value: &str, min_len: usize) -> bool {
    let v = value.trim();
    if v.len() < min_len || allow::is_allowed_value(v) {
        return false;
    }
    let lowered = v.to_ascii_lowercase();
    const NOT_VALUES: [&str; 14] = [
        "true",
        "false",
        "none",
        "null",
        "nil",
        "undefined",
        "required",
        "optional",
        "string",
        "changeme",
        "password",
        "secret",
        "token",
        "example",
    ];
    if NOT_VALUES.contains(&lowered.as_str())
        || v.bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
        || v.bytes()
            .all(|b| matches!(b, b'*' | b'x' | b'X' | b'.' | b'#'))
        || v.starts_with(['$', '%', '{', '<', '/', '~', '@', '&', '(', '['])
        || v.contains(['(', ')', '[', ']'])
        || lowered.starts_with("http")
        || lowered.starts_with("self.")
        || lowered.starts_with("os.")
        || lowered.starts_with("env")
        || lowered.starts_with("process.")
    {
        return false;
    }
    let (lower, upper, digit) = allow::classes(v);
    let symbol = v
        .bytes()
        .any(|b| b.is_ascii_punctuation() && !matches!(b, b'_' | b'-'));
    let identifier = allow::is_identifier(v);
    // camelCase letters alone are a name in code (`getLine`); a password has a digit or a
    // symbol.
    !identifier && ((digit && (lower || upper)) || symbol)
}

/// A `NAME = value` / `NAME: value` assignment: the Org property form always (its value is
/// the rest of the line), the others when the value reads as a credential.
fn assignment(c: &Captures<'_>, secret: &str) -> bool {
    if c.name("prop").is_some() {
        return !secret.trim().is_empty() && !allow::is_allowed_value(secret.trim());
    }
    let raw_sep = c.name("sep").map_or("", |m| m.as_str());
    // `pass =verbatim=` and `secret :tag:` are Org markup after a word, not assignments: a
    // separator spaced on its left is spaced on its right too.
    if raw_sep.starts_with([' ', '\t'])
        && !raw_sep.ends_with([' ', '\t'])
        && !raw_sep.trim().eq_ignore_ascii_case("is")
    {
        return false;
    }
    let sep = raw_sep.trim();
    let quoted = c.name("dq").is_some() || c.name("sq").is_some();
    if quoted && secret.contains(char::is_whitespace) {
        return false;
    }
    let min = if sep.contains('=') || quoted { 4 } else { 6 };
    credential_like(secret, min) || quoted && quoted_key(secret)
}

/// A string literal given to a secret's name (`"api_key": "reizOneEg"`) is the secret even
/// without digits, unless it reads as a name, a placeholder or a word.
fn quoted_key(value: &str) -> bool {
    let (lower, upper, _) = allow::classes(value);
    value.len() >= 8
        && lower
        && upper
        && value.bytes().skip(1).any(|b| b.is_ascii_uppercase())
        && !value.starts_with(['$', '%', '{', '<'])
        && !allow::is_allowed_value(value)
}

/// A long token random enough to be a key (see [`super::random_tokens`] for where it is
/// looked for): letters of both cases and digits, high entropy,
/// few separators (a slug or a path has many).
pub(super) fn random_token_ok(secret: &str) -> bool {
    let (lower, upper, digit) = allow::classes(secret);
    let separators = secret
        .bytes()
        .filter(|b| matches!(b, b'-' | b'_' | b'/' | b'.'))
        .count();
    // An alphabet written out (`abc…XYZ0123…`) is as varied as a key but runs in order.
    let in_order = secret
        .as_bytes()
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count();
    lower
        && upper
        && digit
        && in_order * 2 < secret.len()
        && separators * 12 <= secret.len()
        && !allow::is_allowed_value(secret)
        && allow::entropy(secret) >= 4.3
}

/// A token after a keyword (`Bearer …`): random enough, shorter than [`random_token`] needs.
fn keyed_token(_: &Captures<'_>, secret: &str) -> bool {
    let (lower, upper, digit) = allow::classes(secret);
    (digit && (lower || upper)) && !allow::is_allowed_value(secret) && allow::entropy(secret) >= 3.5
}

/// The names of Org properties and variables that hold a password or key.
const SECRET_NAMES: &str = r"password|passwd|passphrase|pwd|pass|secret|secret[_-]?key|client[_-]?secret|secret[_-]?access[_-]?key|access[_-]?key|token|access[_-]?token|auth[_-]?token|refresh[_-]?token|api[_-]?key|apikey|api[_-]?token|api[_-]?secret|private[_-]?key|credentials?";

fn rule(
    name: &'static str,
    keywords: &'static [&'static str],
    pattern: &str,
    groups: &'static [usize],
    check: fn(&Captures<'_>, &str) -> bool,
    generic: bool,
) -> Rule {
    let extend = if name == "private-key" {
        pem_body
    } else {
        as_matched
    };
    Rule {
        name,
        keywords,
        pattern: pattern.to_owned(),
        compiled: OnceLock::new(),
        groups,
        check,
        extend,
        generic,
    }
}

/// Every rule, the specific formats first (of two matches starting at the same place, the
/// earlier rule names it).
pub(super) fn default_rules() -> Vec<Rule> {
    vec![
        // RFC 7468 textual encoding; PGP armor (RFC 4880 §6.2). The whole block, or from the
        // BEGIN line to the end of its base64 lines when the END line is missing.
        rule(
            "private-key",
            &["PRIVATE KEY"],
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----)?",
            &[0],
            always,
            false,
        ),
        // AWS access key ids: a 4-letter prefix telling the kind (AKIA long-term, ASIA
        // temporary, …) and 16 base32 characters.
        rule(
            "aws-access-key-id",
            &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
            r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16}(?-u:\b)",
            &[0],
            always,
            false,
        ),
        // The secret access key: 40 base64 characters, recognised by the name it is given.
        rule(
            "aws-secret-access-key",
            &["secret"],
            r#"(?i)(?:aws[_\- ]?)?secret[_\- ]?(?:access[_\- ]?)?key(?:[_\- ]?id)?["']?\s*(?:=>|:=|[:=]|\s)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            &[1],
            always,
            false,
        ),
        // GitHub: ghp_ (classic personal), gho_ (OAuth), ghu_/ghs_ (app user/server), ghr_
        // (refresh) and 36+ base62 characters; fine-grained github_pat_….
        rule(
            "github-token",
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
            &[0],
            always,
            false,
        ),
        rule(
            "gitlab-token",
            &["glpat-"],
            r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}",
            &[0],
            always,
            false,
        ),
        rule(
            "anthropic-key",
            &["sk-ant-"],
            r"(?-u:\b)sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_\-]{32,}",
            &[0],
            always,
            false,
        ),
        rule(
            "openai-key",
            &["sk-"],
            r"(?-u:\b)sk-(?:(?:proj|svcacct|admin|None)-)?[A-Za-z0-9_\-]{20,}",
            &[0],
            openai_key,
            false,
        ),
        // Google API keys: AIza and 35 URL-safe characters.
        rule(
            "google-api-key",
            &["AIza"],
            r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
            &[0],
            always,
            false,
        ),
        rule(
            "slack-webhook",
            &["hooks.slack.com"],
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
            &[0],
            always,
            false,
        ),
        // Slack tokens: xoxb (bot), xoxa/xoxp (user), xoxr (refresh), xoxe, xoxs; and
        // app-level xapp-.
        rule(
            "slack-token",
            &["xox", "xapp-"],
            r"(?-u:\b)(?:xox[abeprs](?:\.[a-z0-9]+)?-[0-9A-Za-z\-]{10,}|xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+)",
            &[0],
            always,
            false,
        ),
        // Stripe: secret (sk_), restricted (rk_) and publishable (pk_) keys, live or test.
        rule(
            "stripe-key",
            &["_live_", "_test_"],
            r"(?-u:\b)(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}",
            &[0],
            always,
            false,
        ),
        // Twilio: account SID (AC…) and API key SID (SK…), 32 lowercase hex digits — no
        // keyword (`ac`, `sk` are in every text; the regex's own literal search is fast) —
        // and an auth token (32 hex) named as Twilio's.
        rule(
            "twilio",
            &[],
            r"(?-u:\b)(?:AC|SK)[0-9a-f]{32}(?-u:\b)",
            &[0],
            always,
            false,
        ),
        rule(
            "twilio",
            &["twilio"],
            r"(?i)twilio[_\- ]?(?:auth[_\- ]?)?(?:token|secret|key)\W{0,5}([0-9a-f]{32})(?-u:\b)",
            &[1],
            always,
            false,
        ),
        // SendGrid: SG. + 22 + . + 43 base64url characters.
        rule(
            "sendgrid-key",
            &["SG."],
            r"(?-u:\b)SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
            &[0],
            always,
            false,
        ),
        rule(
            "npm-token",
            &["npm_"],
            r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
            &[0],
            always,
            false,
        ),
        // PyPI: a macaroon, base64 beginning with the pypi.org identifier.
        rule(
            "pypi-token",
            &["pypi-"],
            r"(?-u:\b)pypi-AgE[A-Za-z0-9_\-]{50,}",
            &[0],
            always,
            false,
        ),
        // JWT (RFC 7519): header.payload.signature, base64url, the header a JSON object
        // naming its algorithm (so `{"` → `eyJ`).
        rule(
            "jwt",
            &["eyJ"],
            r"(?-u:\b)(eyJ[A-Za-z0-9_\-]{6,}=*)\.[A-Za-z0-9_\-]{4,}=*\.[A-Za-z0-9_\-]*=*",
            &[0],
            jwt,
            false,
        ),
        // scheme://user:password@host (RFC 3986 userinfo): only the password goes.
        rule(
            "url-password",
            &["://"],
            r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/@\[\]]+:([^\s/@]+)@[^\s/@]",
            &[1],
            url_password,
            false,
        ),
        rule(
            "bearer-token",
            &["bearer"],
            r"(?i)(?-u:\b)bearer\s+([A-Za-z0-9_\-.~+/]{16,}=*)",
            &[1],
            keyed_token,
            true,
        ),
        // `:PASSWORD: value` (an Org property line), `password = "…"`, `DB_PASS=…`,
        // `api_key: …`, `"token": "…"`.
        rule(
            "password-assignment",
            &["pass", "pwd", "secret", "token", "key", "credential"],
            &format!(
                r#"(?im)^[ \t]*:(?P<prop>(?:[A-Za-z0-9]+[_\-])*(?:{names}))\+?:[ \t]+(?P<pv>\S[^\n]*?)[ \t]*$|(?:(?-u:\b)|[_.\-])(?i:{names})["']?(?P<sep>[ \t]*(?:=>|:=|[:=])[ \t]*|[ \t]+is[ \t]+)(?:"(?P<dq>[^"\n]{{1,200}})"|'(?P<sq>[^'\n]{{1,200}})'|(?P<bare>[^\s"'`,;]{{1,200}}))"#,
                names = SECRET_NAMES
            ),
            &[2, 4, 5, 6],
            assignment,
            true,
        ),
    ]
}

/// The rules found by scans of their own rather than by a regex (see [`super::Detector`]),
/// in the order of [`super::Pass`]: their regexes are never run and only say what they find.
pub(super) fn pass_rules() -> Vec<Rule> {
    vec![
        // Long random tokens anywhere (`super::random_token`).
        rule(
            "high-entropy-token",
            &[],
            r"[A-Za-z0-9+/_\-]{32,}={0,2}",
            &[0],
            always,
            true,
        ),
        // A URL's query or fragment parameter named like a credential (`?api_key=…`): only the
        // value goes (`super::query`). Not generic: in a query it judges what the generic
        // rules would.
        rule(
            "url-credential",
            &["://"],
            r"[?&;#][A-Za-z_\-]*(?:key|token|secret|pass|pwd|auth|sig)[A-Za-z_\-]*=[^&#\]\s]+",
            &[0],
            always,
            false,
        ),
        // A run of hex digits that decodes to text holding a secret (`super::encoded`).
        rule(
            "hex-encoded",
            &[],
            r"(?:0x)?[0-9A-Fa-f]{32,}",
            &[0],
            always,
            false,
        ),
        // A base64 or base64url run that decodes to text holding a secret.
        rule(
            "base64-encoded",
            &[],
            r"[A-Za-z0-9+/_\-]{24,}={0,2}",
            &[0],
            always,
            false,
        ),
    ]
}
