use super::*;

fn redacted(text: &str) -> String {
    Detector::new().redact(text).text.into_owned()
}

#[test]
fn the_rules_compile_and_are_named() {
    let names = Detector::new().rule_names();
    assert!(names.contains(&"private-key"));
    assert!(names.contains(&"high-entropy-token"));
}

#[test]
fn ordinary_text_is_borrowed() {
    let d = Detector::new();
    let text = "* TODO Call the bank about the password reset :admin:\nSee [[id:5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f]].";
    let r = d.redact(text);
    assert!(matches!(r.text, Cow::Borrowed(_)), "{:?}", r);
    assert!(r.hits.is_empty());
}

#[test]
fn each_format_is_named() {
    let cases = [
        ("key AKIAIOSFODNN7EXAMPLF here", "aws-access-key-id"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws-secret-access-key",
        ),
        (
            "token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok",
            "github-token",
        ),
        (
            "export OPENAI_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
            "openai-key",
        ),
        (
            "slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack-token",
        ),
        (
            "postgres://app:S3cr3t!pw@db.example.com:5432/app",
            "url-password",
        ),
        (":PASSWORD: hunter2", "password-assignment"),
    ];
    for (text, rule) in cases {
        let r = Detector::new().redact(text);
        assert_eq!(r.hits, vec![(rule, 1)], "{text} → {}", r.text);
        assert!(r.text.contains(&format!("[REDACTED:{rule}]")), "{}", r.text);
    }
}

#[test]
fn a_pem_block_goes_whole() {
    let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\nafter";
    assert_eq!(redacted(text), "before\n[REDACTED:private-key]\nafter");
    let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n\nnext paragraph";
    assert_eq!(redacted(cut), "[REDACTED:private-key]\n\nnext paragraph");
}

#[test]
fn a_jwt_needs_a_header_naming_its_algorithm() {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(redacted(jwt), "[REDACTED:jwt]");
    // eyJ… that decodes to JSON without "alg" is not a JWT.
    let not = "eyJmb28iOiJiYXIifQ.eyJzdWIiOiIxIn0.abc";
    assert_eq!(redacted(not), not);
}

#[test]
fn prose_and_identifiers_stay() {
    for text in [
        "The password is in the usual place.",
        "password: see the wiki",
        "max_tokens = 1024",
        "tokenizer = cl100k",
        "token_count: 12",
        "bypass = true",
        "password = get_password()",
        "api_key = os.environ[\"KEY\"]",
        "https://example.com/path?q=1",
        "commit 30040a6f1c2b3d4e5f60718293a4b5c6d7e8f901 fixed it",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "[[data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==]]",
        "sk-learn-is-a-library-for-machine-learning",
        ":TOKEN_COUNT: 5",
    ] {
        assert_eq!(redacted(text), text, "{text}");
    }
}

#[test]
fn the_gate_counts() {
    let gate = SecretGate::default();
    gate.redact(
        "a ghp_16C7e42F292c6912E7710c838347Ae178B4a and ghp_26C7e42F292c6912E7710c838347Ae178B4b",
    );
    gate.redact("AKIAIOSFODNN7EXAMPLF");
    assert_eq!(
        gate.totals(),
        vec![("aws-access-key-id", 1), ("github-token", 2)]
    );
}

#[test]
fn hits_merge_and_read() {
    let mut hits = vec![("jwt", 1)];
    merge_hits(&mut hits, &[("github-token", 2), ("jwt", 1)]);
    assert_eq!(hits, vec![("github-token", 2), ("jwt", 2)]);
    assert_eq!(
        describe_hits(&hits),
        "4 secrets withheld (github-token 2, jwt 2)"
    );
}

#[test]
fn spans_are_what_redact_replaces() {
    let text = "é token ghp_16C7e42F292c6912E7710c838347Ae178B4a and\n:PASSWORD: hunter2\n";
    let d = Detector::new();
    let spans = d.spans(text);
    let rules: Vec<&str> = spans.iter().map(|s| s.rule).collect();
    assert_eq!(rules, ["github-token", "password-assignment"]);
    assert_eq!(
        &text[spans[0].start..spans[0].end],
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    );
    // Cutting the spans out is the redaction.
    let mut cut = String::new();
    let mut at = 0;
    for s in &spans {
        cut.push_str(&text[at..s.start]);
        cut.push_str(&format!("[REDACTED:{}]", s.rule));
        at = s.end;
    }
    cut.push_str(&text[at..]);
    assert_eq!(cut, d.redact(text).text);
    assert!(d.spans("nothing here").is_empty());
}
