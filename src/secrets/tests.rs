use super::*;

fn redacted(text: &str) -> String {
    Detector::new().redact(text).text.into_owned()
}

#[test]
fn the_rules_compile_and_are_named() {
    let d = Detector::new();
    // Each regex is compiled only when a text first reaches it: compile them all here.
    for rule in &d.rules {
        assert!(!rule.regex().as_str().is_empty(), "{}", rule.name);
    }
    let names = d.rule_names();
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

/// Each `(text, redacted)` pair: the detector's output is exactly `redacted`.
fn assert_redacts(cases: &[(&str, &str)]) {
    for (text, want) in cases {
        assert_eq!(redacted(text), *want, "{text}");
    }
}

#[test]
fn a_key_split_over_adjacent_literals_goes_whole() {
    assert_redacts(&[
        // C and Python join adjacent literals.
        (
            r#"key = "sk-proj-Ab3dEf6hIj9k" "Lm2nOp5qRs8tUv1wXy4z""#,
            r#"key = "[REDACTED:openai-key]""#,
        ),
        (
            "aws = 'AKIA' 'IOSFODNN7EXAMPLE'",
            "aws = '[REDACTED:aws-access-key-id]'",
        ),
        // JS and Java `+`, Lua `..`, PHP `.`, SQL `||`.
        (
            r#"const t = "ghp_16C7e42F292c" + "6912E7710c838347Ae178B4a";"#,
            r#"const t = "[REDACTED:github-token]";"#,
        ),
        (
            r#"local k = "glpat-" .. "Xk9fQ2mLp7Rt4wZ8vB3n""#,
            r#"local k = "[REDACTED:gitlab-token]""#,
        ),
        (
            "$k = 'AKIAIOSF' . 'ODNN7EXAMPLE';",
            "$k = '[REDACTED:aws-access-key-id]';",
        ),
        (
            "select 'AKIAIOSF' || 'ODNN7EXAMPLE';",
            "select '[REDACTED:aws-access-key-id]';",
        ),
        // Over line breaks with indentation, a Python continuation and prefix.
        (
            "key = (\n    \"sk-proj-Ab3dEf6hIj9k\"\n    \"Lm2nOp5qRs8tUv1wXy4z\"\n)",
            "key = (\n    \"[REDACTED:openai-key]\"\n)",
        ),
        (
            "key = 'sk-proj-Ab3dEf6hIj9k' \\\n      f'Lm2nOp5qRs8tUv1wXy4z'",
            "key = '[REDACTED:openai-key]'",
        ),
        (
            "t = \"ghp_16C7e42F292c\" +\n    \"6912E7710c838347Ae178B4a\"",
            "t = \"[REDACTED:github-token]\"",
        ),
        // Three pieces; a split that only the joined string shows as a URL's key.
        (
            r#"k = "AKIA" "IOSFODNN" "7EXAMPLE" + x"#,
            r#"k = "[REDACTED:aws-access-key-id]" + x"#,
        ),
        (
            r#"url = "https://api.x.io/v1?api_key=" "Ab12Cd34Ef56Gh78""#,
            r#"url = "https://api.x.io/v1?api_key=" "[REDACTED:url-credential]""#,
        ),
        // Prose apostrophes before the literals do not hide them.
        (
            "don't: 'AKIA' 'IOSFODNN7EXAMPLE'",
            "don't: '[REDACTED:aws-access-key-id]'",
        ),
    ]);
}

#[test]
fn adjacent_literals_without_a_key_stay() {
    for text in [
        r#"(setq org-agenda-files '("~/org/work.org" "~/org/home.org"))"#,
        r#"print("hello " + "world")"#,
        r#"He said "yes" and "no", then "maybe"."#,
        "It's Bob's and Alice's 'plan' 'B'.",
        r#"names = ["AKIA", "IOSFODNN7EXAMPLE"]"#,
        "\"AKIA\"\n\n\"IOSFODNN7EXAMPLE\"",
    ] {
        assert_eq!(redacted(text), text, "{text}");
    }
}

#[test]
fn hex_and_base64_keys_go_whole() {
    assert_redacts(&[
        // "ghp_…" in hex; "AKIA…" in hex with 0x.
        (
            "blob 6768705f313643376534324632393263363931324537373130633833383334374165313738423461 end",
            "blob [REDACTED:hex-encoded] end",
        ),
        (
            "k = 0x414b4941494f53464f444e4e374558414d504c45;",
            "k = [REDACTED:hex-encoded];",
        ),
        // An OpenAI key in base64, padded.
        (
            "OPENAI=c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJzOHRVdjF3WHk0eg==",
            "OPENAI=[REDACTED:base64-encoded]",
        ),
        // `DB_PASSWORD=…?` in base64, found by the assignment rule in the decoded text.
        (
            "env: REJfUEFTU1dPUkQ9ZTVAb3RLZ1VKM2omdj8=",
            "env: [REDACTED:base64-encoded]",
        ),
        // base64url (`-`, `_`) and standard (`+`, `/`) of the same text.
        (
            "t dG9rZW49Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YT9-Pg== t",
            "t [REDACTED:base64-encoded] t",
        ),
        (
            "t dG9rZW49Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YT9+Pg== t",
            "t [REDACTED:base64-encoded] t",
        ),
        (
            "ZXhwb3J0IFBBU1NXT1JEPSJUcjB1YjRkb3ImM3g_PiI=",
            "[REDACTED:base64-encoded]",
        ),
        // Wrapped over lines (as `base64` writes it), the key across a break.
        (
            "secret.env: |\n    ZXhwb3J0IE9QRU5BSV9BUElf\n    S0VZPXNrLXByb2otQWIzZEVm\n    NmhJajlrTG0ybk9wNXFSczh0\n    VXYxd1h5NHoK\nnext line",
            "secret.env: |\n    [REDACTED:base64-encoded]\nnext line",
        ),
        (
            "c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJz\nOHRVdjF3WHk0eg==",
            "[REDACTED:base64-encoded]",
        ),
        // Padding cut off.
        (
            "ZXhwb3J0IFBBU1NXT1JEPSJUcjB1YjRkb3ImM3g_PiI",
            "[REDACTED:base64-encoded]",
        ),
        // Two levels: base64 of the hex of a GitHub token.
        (
            "x Njc2ODcwNWYzMTM2NDMzNzY1MzQzMjQ2MzIzOTMyNjMzNjM5MzEzMjQ1MzczNzMxMzA2MzM4MzMzODMzMzQzNzQxNjUzMTM3Mzg0MjM0NjE= y",
            "x [REDACTED:base64-encoded] y",
        ),
        // A data URL of text is decoded (one of an image is not).
        (
            "[[data:text/plain;base64,ZXhwb3J0IFBBU1NXT1JEPSJUcjB1YjRkb3ImM3g_PiI=]]",
            "[[data:text/plain;base64,[REDACTED:base64-encoded]]]",
        ),
    ]);
}

#[test]
fn hashes_colours_ids_and_encoded_prose_stay() {
    for text in [
        "#+begin_src css\nh1 { color: #ff00ff; background: #A0B1C2 }\n#+end_src",
        ":PROPERTIES:\n:ID:       5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f\n:END:",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "Checksum e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 matches.",
        "Fixed in 30040a6f1c2b3d4e5f60718293a4b5c6d7e8f901.",
        "md5 d41d8cd98f00b204e9800998ecf8427e",
        // An English sentence in base64 and in hex: decoded, nothing found.
        "VGhlIG1lZXRpbmcgbW92ZWQgdG8gVGh1cnNkYXkgYXQgdGVuLCBicmluZyB0aGUgc2xpZGVzLg==",
        "546865206d656574696e67206d6f76656420746f2054687572736461792061742074656e2c206272696e672074686520736c696465732e",
        "org-agent-secret-properties and internationalization_of_software_products",
        "/home/user/projects/org-agent/src/secrets/encoded.rs",
    ] {
        assert_eq!(redacted(text), text, "{text}");
    }
}

#[test]
fn credentials_in_url_queries_go_and_the_url_stays() {
    assert_redacts(&[
        (
            "https://api.example.com/v1?api_key=Xk9fQ2mLp7Rt4wZ8&page=2",
            "https://api.example.com/v1?api_key=[REDACTED:url-credential]&page=2",
        ),
        (
            "[[https://x.io/feed.xml?token=abc123def456][my feed]]",
            "[[https://x.io/feed.xml?token=[REDACTED:url-credential]][my feed]]",
        ),
        (
            "GET https://x.io/me?fields=name&access_token=EAAB9xZk27Qp#top",
            "GET https://x.io/me?fields=name&access_token=[REDACTED:url-credential]#top",
        ),
        (
            "https://maps.x.com/api?key=Zq81mN0vR3tY5uW7x",
            "https://maps.x.com/api?key=[REDACTED:url-credential]",
        ),
        (
            "ftp://h/x?secret=s3cr3tValue9&passwd=Tr0ub4dor&pwd=9fk2LmQ8z",
            "ftp://h/x?secret=[REDACTED:url-credential]&passwd=[REDACTED:url-credential]&pwd=[REDACTED:url-credential]",
        ),
        (
            "https://x/y?password=hunter22&auth=dXNlcjpwYXNzMTIz&a=dXNlcjpwYXNz",
            "https://x/y?password=[REDACTED:url-credential]&auth=[REDACTED:url-credential]&a=dXNlcjpwYXNz",
        ),
        (
            "https://s3.x.com/f?X-Amz-Expires=300&X-Amz-Signature=5f2b8c0e9d7a4f6e1b3c8d2a9e7f0c1d&sig=Q2hlY2tTaWc%3D",
            "https://s3.x.com/f?X-Amz-Expires=300&X-Amz-Signature=[REDACTED:url-credential]&sig=[REDACTED:url-credential]",
        ),
        (
            "https://login.x.com/token?client_id=app&client_secret=q8Z-2mL_9xPw&apikey=K3y9Zq7Wm2",
            "https://login.x.com/token?client_id=app&client_secret=[REDACTED:url-credential]&apikey=[REDACTED:url-credential]",
        ),
        // OAuth's implicit flow answers in the fragment; prose after a URL is not its value.
        (
            "back to https://app/cb#access_token=ya29a0AfH6SMB&expires_in=3600.",
            "back to https://app/cb#access_token=[REDACTED:url-credential]&expires_in=3600.",
        ),
        // `sig` in a signed URL (an Azure SAS: a version, an expiry, permissions).
        (
            "https://acct.blob.core.windows.net/c/f.pdf?sv=2022-11-02&se=2026-01-01&sp=r&sig=Q2hlY2tTaWc9%2BabcD%3D",
            "https://acct.blob.core.windows.net/c/f.pdf?sv=2022-11-02&se=2026-01-01&sp=r&sig=[REDACTED:url-credential]",
        ),
        (
            "(see https://x.io/a?token=Ab12cd34Ef)",
            "(see https://x.io/a?token=[REDACTED:url-credential])",
        ),
        // A key with its own rule keeps that rule's name.
        (
            "https://x.io/?token=ghp_16C7e42F292c6912E7710c838347Ae178B4a&a=1",
            "https://x.io/?token=[REDACTED:github-token]&a=1",
        ),
    ]);
}

#[test]
fn ordinary_url_parameters_stay() {
    for text in [
        "https://example.com/search?page=2&sort=asc",
        "https://x.io/a?key=1&token=next",
        "https://x.io/a?token=next&page=2",
        "https://x.io/a?token=&key=",
        "https://x.io/a?api_key=YOUR_API_KEY",
        "https://x.io/a?api_key=${API_KEY}&x=1",
        "https://x.io/a?key=some-setting-name",
        "https://x.io/a?pageToken=CAoQAA12345678&keyword=abc12345",
        "https://x.io/a?since=2026-11-24&pass=12345678",
        "[[https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42][video]]",
        // A `sig` outside a signed URL, a publisher's proxy token, a storage link's
        // download token (a UUID).
        "[[https://books.google.ca/books?id=NJ_xBwAAQBAJ&pg=PA232&ots=1EDj-63h7P&sig=AOvVaw3kZ9x2Lp7QmT4r&hl=en][book]]",
        "[[https://dl.acm.org/doi/pdf/10.1145/1297081?casa_token=ue30hIDzLJAAAAAA:UjEJpdcbRA6NAgB2][paper]]",
        "https://firebasestorage.googleapis.com/v0/b/x.appspot.com/o/a.png?alt=media&token=5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f",
    ] {
        assert_eq!(redacted(text), text, "{text}");
    }
}

#[test]
fn long_and_odd_inputs_stay_linear() {
    let d = Detector::new();
    let started = std::time::Instant::now();
    let unchanged = |text: &str| {
        let r = d.redact(text);
        assert!(r.hits.is_empty(), "{:?} in {}…", r.hits, &text[..60]);
    };
    // A hundred thousand adjacent literals, a run of quotes, of backslashes before quotes.
    unchanged(&"\"ab\" ".repeat(100_000));
    unchanged(&"'".repeat(200_000));
    unchanged(&"\\\\\\\"".repeat(50_000));
    // Half a megabyte of base64 prose, words of token characters without a space, URLs
    // inside URLs.
    unchanged(
        &"VGhlIG1lZXRpbmcgbW92ZWQgdG8gVGh1cnNkYXkgYXQgdGVuLCBicmluZyB0aGUgc2xpZGVzLiAg"
            .repeat(7_000),
    );
    unchanged(&"abcdefghijklmnopqrstuvwxyz.".repeat(40_000));
    unchanged(&"https://x.io/?key=".repeat(50_000));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// A text for each rule (each found by it, unscreened), for the screen's soundness.
const EACH_RULE: &[(&str, &str)] = &[
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n", "private-key"),
    ("key AKIAIOSFODNN7EXAMPLF here", "aws-access-key-id"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"),
    ("SecretKey wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws-secret-access-key"),
    ("token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", "github-token"),
    ("glpat-Xk9fQ2mLp7Rt4wZ8vB3n", "gitlab-token"),
    ("sk-ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9k", "anthropic-key"),
    ("export OPENAI_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "openai-key"),
    ("AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "google-api-key"),
    ("https://hooks.slack.com/services/T000/B000/XXXX", "slack-webhook"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack-token"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
    ("AC0123456789abcdef0123456789abcdef", "twilio"),
    ("TWILIO_AUTH_TOKEN: 0123456789abcdef0123456789abcdef", "twilio"),
    ("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", "sendgrid-key"),
    ("npm_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d", "npm-token"),
    ("pypi-AgEIcHlwaS5vcmcCJGI0ZjU2ZDZiLTk3ZDAtNDQ4Zi1iNzM2LTAwMGYzYjQ2", "pypi-token"),
    ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
    ("postgres://app:S3cr3t!pw@db.example.com:5432/app", "url-password"),
    ("Authorization: Bearer abcDEF123456ghiJKL789", "bearer-token"),
    (":PASSWORD: hunter2", "password-assignment"),
    (":DB_PASS+: hunter2", "password-assignment"),
    ("db_password = \"Tr0ub4dor&3\"", "password-assignment"),
    ("the token is Tq9xZ2mLp", "password-assignment"),
    ("\"api_key\": \"reizOneEgXy\"", "password-assignment"),
    ("my key; paſsword = hunter22", "password-assignment"),
    ("a wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY9 b", "high-entropy-token"),
    ("https://x.io/v1?api_key=Ab12Cd34Ef56Gh78", "url-credential"),
    ("blob 6768705f313643376534324632393263363931324537373130633833383334374165313738423461 end", "hex-encoded"),
    ("OPENAI=c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJzOHRVdjF3WHk0eg==", "base64-encoded"),
    ("c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJz\nOHRVdjF3WHk0eg==", "base64-encoded"),
    (r#"t = "ghp_16C7e42F292c" + "6912E7710c838347Ae178B4a""#, "github-token"),
    (r#"url = "https://api.x.io/v1?api_key=" "Ab12Cd34Ef56Gh78""#, "url-credential"),
];

/// What the detector found: (start, end, rule) each.
type Spans = Vec<(usize, usize, usize)>;

/// Spans of `text`, screened and not: what the screen must never change.
fn both(d: &Detector, text: &str) -> (Spans, Spans) {
    let key = |f: Vec<Found>| f.into_iter().map(|f| (f.start, f.end, f.rule)).collect();
    (key(d.find(text)), key(d.find_unscreened(text)))
}

#[test]
fn the_screen_passes_every_rules_examples() {
    let d = Detector::new();
    let mut named: Vec<&str> = Vec::new();
    let contexts = [
        ("", ""),
        ("Some prose first. ", " and after."),
        ("* A headline\n", "\n"),
        ("x", "x"),
        ("- item: ", ";"),
    ];
    for &(text, rule) in EACH_RULE {
        let found = d.find_unscreened(text);
        assert!(
            found.iter().any(|f| d.rule(f.rule).name == rule),
            "{text} is no example of {rule}"
        );
        named.push(rule);
        for (before, after) in contexts {
            let t = format!("{before}{text}{after}");
            assert!(d.may_hold(&t), "the screen drops {rule} in {t:?}");
            let (screened, unscreened) = both(&d, &t);
            assert_eq!(screened, unscreened, "{t:?}");
        }
    }
    for name in d.rule_names() {
        assert!(named.contains(&name), "no example of {name}");
    }
}

#[test]
fn the_screen_reads_case_as_the_rules_do() {
    // The only characters outside ASCII that a case-insensitive regex matches for an
    // ASCII letter are the two the screen looks for.
    let letter = regex::Regex::new("(?i)^[a-z]$").unwrap();
    let odd: Vec<char> = (0..=0x10ffffu32)
        .filter_map(char::from_u32)
        .filter(|c| !c.is_ascii() && letter.is_match(c.encode_utf8(&mut [0; 4])))
        .collect();
    assert_eq!(odd, ['\u{17f}', '\u{212a}']);
    assert!(prefilter::anchors_are_distinct());
    for b in 0..=255u8 {
        assert_eq!(prefilter::is_token(b), encoded::is_token(b), "{b}");
    }
}

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

#[test]
fn the_screen_changes_nothing_on_generated_text() {
    let d = Detector::new();
    // Pieces of secrets and of what is near them: names, separators, prefixes, alphabets.
    let pieces: Vec<&str> = EACH_RULE
        .iter()
        .map(|(t, _)| *t)
        .chain([
            "pass",
            "PASSWORD",
            "pwd",
            "secret",
            "Secret_Access_",
            "key",
            "KEY",
            "token",
            "credentials",
            "api-",
            "client_",
            "\"",
            "'",
            " ",
            "  ",
            "\t",
            "\n",
            ":",
            "=",
            "+",
            "=>",
            ":=",
            " is ",
            " IS ",
            "is",
            "://",
            "https://",
            "@",
            "?",
            "&",
            "#",
            "/",
            "sk-",
            "ghp_",
            "AKIA",
            "ASIA",
            "AC",
            "SK",
            "SG.",
            "eyJ",
            "xox",
            "xoxb-",
            "_live_",
            "bearer ",
            "Bearer\t",
            "twilio",
            "ſ",
            "K",
            "é",
            "0x",
            "==",
            "-",
            "_",
            ".",
            "..",
            "||",
            "(",
            ")",
            "[[",
            "]]",
            "hunter2",
            "Tr0ub4dor&3",
            "wJalrXUtnFEMI",
            "K7MDENG",
            "0123456789abcdef",
            "abcdef0123456789",
            "aGVsbG8sIHdvcmxk",
            "c2stcHJvai1BYjNk",
            "6768705f3136",
            "QUtJQUlPU0ZPRE5O",
            "dG9rZW49",
            "The meeting moved. ",
            "word",
            "Ab3dEf6hIj9kLm2n",
            "Op5qRs8tUv1wXy4z",
            "-----BEGIN ",
            "PRIVATE KEY",
            "-----",
        ])
        .collect();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for case in 0..40_000 {
        let n = 1 + g.next() % 12;
        let text: String = (0..n).map(|_| g.pick(&pieces)).collect();
        let (screened, unscreened) = both(&d, &text);
        assert_eq!(screened, unscreened, "case {case}: {text:?}");
    }
}

#[test]
fn the_screen_changes_nothing_on_the_corpus() {
    let Some(corpus) = crate::shared::require("corpus", "the_screen_changes_nothing_on_the_corpus")
    else {
        return;
    };
    let d = Detector::new();
    let mut files = vec![corpus];
    let (mut texts, mut kept, mut held) = (0, 0, 0);
    while let Some(path) = files.pop() {
        if path.is_dir() {
            if let Ok(dir) = std::fs::read_dir(&path) {
                files.extend(dir.flatten().map(|e| e.path()));
            }
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        // Each headline's section, as the sentinel and the gate see notes.
        for section in text.split("\n*") {
            texts += 1;
            let (screened, unscreened) = both(&d, section);
            assert_eq!(screened, unscreened, "{}: {section}", path.display());
            if d.may_hold(section) {
                held += 1;
            } else {
                kept += 1;
            }
        }
    }
    eprintln!("{texts} sections: {kept} cleared by the screen, {held} left to the rules");
    assert!(kept > held, "the screen clears most notes");
}
