//! The secret gate: the detector on a labelled set (tests/fixtures/secrets/labelled.tsv,
//! made by generate.py beside it: fake secrets of every format and look-alikes), its false
//! positives on the shared corpus, and over real HTTP: planted credentials in every part of
//! a request reach no provider's wire and no embedding server.
//!
//! `cargo test --test suite secrets:: -- --nocapture` prints the figures.

use crate::support::llm_server::{LlmServer, Reply};
use org_agent::llm::cascade::{Cascade, CascadeEvent};
use org_agent::llm::embeddings::{EmbeddingBackend, EmbeddingClient, EmbeddingWire};
use org_agent::llm::{Backend, CancelToken, ChatClient, ChatRequest, Message, ToolCall, Wire};
use org_agent::secrets::Detector;
use org_agent::store::{Config, NodeKind, Query, Store};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

struct Labelled {
    secret: bool,
    rule: String,
    value: String,
    text: String,
}

fn labelled() -> Vec<Labelled> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/secrets/labelled.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let f: Vec<&str> = line.splitn(4, '\t').collect();
            assert_eq!(f.len(), 4, "{}:{}: four fields", path.display(), i + 1);
            Labelled {
                secret: f[0] == "secret",
                rule: f[1].to_owned(),
                value: f[2].replace("\\n", "\n"),
                text: f[3].replace("\\n", "\n"),
            }
        })
        .collect()
}

#[derive(Default)]
struct Score {
    tp: usize,
    fp: usize,
    fn_: usize,
}

/// Recall ≥ 99% on the known formats, no look-alike withheld; precision and recall per rule
/// printed.
#[test]
fn the_labelled_set() {
    let d = Detector::new();
    let set = labelled();
    let secrets = set.iter().filter(|l| l.secret).count();
    let benign = set.len() - secrets;
    assert!(
        secrets >= 150 && benign >= 300,
        "{secrets} secrets, {benign} look-alikes"
    );
    let mut score: BTreeMap<String, Score> = BTreeMap::new();
    let mut missed = Vec::new();
    let mut false_alarms = Vec::new();
    for l in &set {
        let r = d.redact(&l.text);
        if l.secret {
            let named = r.hits.iter().any(|(k, _)| *k == l.rule);
            let gone = !r.text.contains(&l.value);
            if named && gone {
                score.entry(l.rule.clone()).or_default().tp += 1;
            } else {
                score.entry(l.rule.clone()).or_default().fn_ += 1;
                missed.push(format!("{}: {:?} → {:?}", l.rule, l.text, r.text));
            }
            for (k, _) in r.hits.iter().filter(|(k, _)| *k != l.rule) {
                // Another rule withheld something too: where the text holds nothing else,
                // that rule misfired.
                score.entry(k.to_string()).or_default().fp += 1;
                false_alarms.push(format!("{k} on {:?} → {:?}", l.text, r.text));
            }
        } else {
            for (k, _) in &r.hits {
                score.entry(k.to_string()).or_default().fp += 1;
                false_alarms.push(format!("{k} on {:?} → {:?}", l.text, r.text));
            }
        }
    }
    println!("secret gate on the labelled set: {secrets} secrets, {benign} look-alikes");
    println!(
        "{:<24} {:>4} {:>4} {:>4} {:>9} {:>7}",
        "rule", "tp", "fp", "fn", "precision", "recall"
    );
    let (mut tp, mut fp, mut fn_) = (0, 0, 0);
    for (rule, s) in &score {
        println!(
            "{rule:<24} {:>4} {:>4} {:>4} {:>8.1}% {:>6.1}%",
            s.tp,
            s.fp,
            s.fn_,
            100.0 * s.tp as f64 / (s.tp + s.fp).max(1) as f64,
            100.0 * s.tp as f64 / (s.tp + s.fn_).max(1) as f64
        );
        tp += s.tp;
        fp += s.fp;
        fn_ += s.fn_;
    }
    for m in &missed {
        println!("  missed: {m}");
    }
    let recall = tp as f64 / (tp + fn_) as f64;
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    println!(
        "{:<24} {tp:>4} {fp:>4} {fn_:>4} {:>8.1}% {:>6.1}%",
        "all",
        100.0 * precision,
        100.0 * recall
    );
    assert!(
        recall >= 0.99,
        "recall {recall:.3}; missed:\n{}",
        missed.join("\n")
    );
    assert!(
        false_alarms.is_empty(),
        "false alarms:\n{}",
        false_alarms.join("\n")
    );
}

fn org_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "org") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Text in the corpus that does look like a credential, inspected by hand: (file, rule).
/// Withholding these is right; they are not counted as false positives.
const CREDENTIAL_LIKE_IN_CORPUS: [(&str, &str); 5] = [
    // `Enter the password: 32423asdas` — passwords typed into a program, in a transcript.
    (
        "caiorss+Functional-Programming/haskell/Tips_And_Tricks.org",
        "password-assignment",
    ),
    // `password="Terng2258"` in a connection snippet.
    (
        "Awannaphasch2016+Org/notes/programming-language/sql/mysql-note.org",
        "password-assignment",
    ),
    // `password = 295TkBbHZiKwnDnQYhJW` in a configuration example.
    (
        "syl20bnr+spacemacs/layers/+music/pianobar/README.org",
        "password-assignment",
    ),
    // A presigned S3 URL with `AWSAccessKeyId=AKIA…` (and its signature).
    (
        "caiorss+Functional-Programming/haskell/GUI_Graphical_User_Interface_GTK.org",
        "aws-access-key-id",
    ),
    // The same URL's `Signature=…` parameter, a credential of the same request.
    (
        "caiorss+Functional-Programming/haskell/GUI_Graphical_User_Interface_GTK.org",
        "url-credential",
    ),
];

/// At most one false positive per 10,000 headlines of the shared corpus (which holds no real
/// secrets): every headline's title and body, as the context and embeddings send them.
#[test]
fn corpus_false_positives() {
    let Some(dir) = crate::support::shared::require("corpus", "corpus_false_positives") else {
        return;
    };
    let files = org_files(&dir);
    assert!(files.len() > 100, "the shared corpus at {}", dir.display());
    let store = Store::in_memory(Config::default());
    for f in &files {
        let _ = store.ingest_file(&f.to_string_lossy(), false);
    }
    let headlines = store.query(&Query {
        kind: Some(NodeKind::Headline),
        ..Default::default()
    });
    assert!(headlines.len() > 10_000);
    let d = Detector::new();
    let mut false_positives = Vec::new();
    let mut credential_like = 0;
    for r in &headlines {
        let c = &r.node().content;
        let text = format!("{}\n{}", c.title, c.body_or_notice());
        let red = d.redact(&text);
        for (rule, _) in &red.hits {
            let known = CREDENTIAL_LIKE_IN_CORPUS
                .iter()
                .any(|(file, k)| r.doc.path.ends_with(file) && k == rule);
            if known {
                credential_like += 1;
            } else {
                let lines: Vec<&str> = red
                    .text
                    .lines()
                    .filter(|l| l.contains("[REDACTED:"))
                    .collect();
                false_positives.push(format!("{} :: {} — {:?}", r.doc.path, c.title, lines));
            }
        }
    }
    let per_10k = false_positives.len() as f64 * 10_000.0 / headlines.len() as f64;
    println!(
        "secret gate on the corpus: {} headlines, {} false positives ({per_10k:.2} per 10,000), \
         {credential_like} credential-like texts withheld",
        headlines.len(),
        false_positives.len()
    );
    for fp in &false_positives {
        println!("  false positive: {fp}");
    }
    assert!(
        per_10k <= 1.0,
        "{per_10k:.2} false positives per 10,000 headlines"
    );
    assert!(
        credential_like >= 4,
        "the corpus's credential-like texts are still found"
    );
}

/// Credentials planted on purpose in the checkout's own Org files: the secret-sentinel skill's
/// examples (found, and so withheld, as they should be).
const PLANTED_IN_CHECKOUT: &[(&str, &str)] = &[
    ("skills/secret-sentinel/SKILL.org", "password-assignment"),
    ("skills/secret-sentinel/SKILL.org", "github-token"),
];

/// No false positive in the Org files of this checkout (the README, the demo notes, the
/// skills, the test fixtures): every headline's title and body, as the context and
/// embeddings send them; the credentials planted there are found. Runs on every clone, with
/// or without the shared corpus.
#[test]
fn checkout_org_files_have_no_false_positives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.org")];
    for sub in ["demo", "skills", "tests/fixtures"] {
        files.extend(org_files(&root.join(sub)));
    }
    let store = Store::in_memory(Config::default());
    for f in &files {
        store
            .ingest_file(&f.to_string_lossy(), false)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    let headlines = store.query(&Query {
        kind: Some(NodeKind::Headline),
        ..Default::default()
    });
    assert!(headlines.len() > 100, "{} headlines", headlines.len());
    let d = Detector::new();
    let mut planted = BTreeMap::new();
    let mut false_positives = Vec::new();
    for r in &headlines {
        let c = &r.node().content;
        let text = format!("{}\n{}", c.title, c.body_or_notice());
        for (rule, _) in &d.redact(&text).hits {
            let known = PLANTED_IN_CHECKOUT
                .iter()
                .find(|(file, k)| r.doc.path.ends_with(file) && k == rule);
            match known {
                Some(k) => *planted.entry(k).or_insert(0) += 1,
                None => false_positives.push(format!("{} :: {} — {rule}", r.doc.path, c.title)),
            }
        }
    }
    assert!(
        false_positives.is_empty(),
        "false positives:\n{}",
        false_positives.join("\n")
    );
    assert_eq!(
        planted.len(),
        PLANTED_IN_CHECKOUT.len(),
        "planted credentials found: {planted:?}"
    );
}

/// The credentials of issue 12, planted in notes: each with a piece that must not reach
/// any server.
fn planted() -> Vec<(&'static str, &'static str)> {
    vec![
        ("AWS key id", "AKIAQWERTYUIOP234567"),
        ("AWS secret", "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"),
        ("GitHub token", "ghp_R8kLm2Qw9Zx4Vb7Nc1Tp6Hy3Jd5Fs0Ga8EoU"),
        (
            "OpenAI key",
            "sk-proj-Tq7Wm2Xk9Lp4Zr8Vn3Bc6Hd1Jf5Gs0Ya7Eu2Io",
        ),
        (
            "Slack token",
            "xoxb-284719350612-3918274650192-QmZ8pL2vK9rT4wX7yN1bC5hJ",
        ),
        (
            "PEM key",
            "MIIEowIBAAKCAQEAu7Kq9Zx3Lm2Vb8Nc4Tp1Hy6Jd0Fs5Ga7EoUr9Wk3Qm2Xl8",
        ),
        ("PASSWORD property", "Tr0ub4dor&3x"),
        ("DB URL password", "pg-S3cr3t-9921"),
        ("JWT", "eyJzdWIiOiJhbmEiLCJyb2xlIjoiYWRtaW4ifQ"),
    ]
}

/// A note holding every planted credential.
fn note() -> String {
    let p = planted();
    format!(
        "* Server credentials\n:PROPERTIES:\n:PASSWORD: {pw}\n:END:\n\
         AWS: aws_access_key_id = {id}\naws_secret_access_key = {secret}\n\
         GitHub: {gh}\nOpenAI: {oa}\nSlack: {sl}\n\
         #+begin_example\n-----BEGIN RSA PRIVATE KEY-----\n{pem}\nq9Zx3Lm2Vb8Nc4Tp1Hy6Jd0Fs5Ga7EoUr9Wk3Qm2Xl8==\n-----END RSA PRIVATE KEY-----\n#+end_example\n\
         DATABASE_URL=postgres://app:{db}@db.internal:5432/app\n\
         session: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{jwt}.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg\n",
        pw = p[6].1,
        id = p[0].1,
        secret = p[1].1,
        gh = p[2].1,
        oa = p[3].1,
        sl = p[4].1,
        pem = p[5].1,
        db = p[7].1,
        jwt = p[8].1,
    )
}

fn assert_clean(what: &str, body: &[u8]) {
    let body = String::from_utf8_lossy(body);
    for (name, secret) in planted() {
        assert!(
            !body.contains(secret),
            "{what}: the {name} reached the server:\n{body}"
        );
    }
    assert!(
        body.contains("[REDACTED:"),
        "{what}: the request says what was withheld"
    );
}

/// A request with the planted credentials in the system prompt (the focus and related
/// notes), the user's text, an earlier answer's tool call and a tool result reaches each
/// provider's server with none of them, and the cascade reports what it withheld.
#[tokio::test]
async fn no_planted_credential_reaches_any_wire() {
    for wire in [Wire::OpenAi, Wire::Anthropic, Wire::Gemini, Wire::Ollama] {
        let server = LlmServer::start().await;
        server.push(Reply::answer(wire, "ok", &[]));
        let client = ChatClient::new(Backend::with_wire(wire, server.root_for(wire), "m")).unwrap();
        let n = note();
        let request = ChatRequest {
            messages: vec![
                Message::System(format!("You help with notes.\n\nFocus:\n{n}")),
                Message::User(format!("Keep this safe: {}", planted()[2].1)),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "read_node".into(),
                        arguments: json!({"id": "abc", "note": planted()[3].1}),
                        signature: None,
                    }],
                },
                Message::Tool {
                    tool_call_id: "call_1".into(),
                    content: n.clone(),
                },
                Message::User(format!("and {}", planted()[0].1)),
            ],
            stream: true,
            ..ChatRequest::default()
        };
        let mut redacted = Vec::new();
        let answer = Cascade::single(client)
            .chat(&request, &CancelToken::new(), |e| {
                if let CascadeEvent::Redacted(h) = e {
                    redacted.push(h)
                }
            })
            .await
            .unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(answer.completion.text, "ok");
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_clean(wire.name(), &requests[0].body);
        assert_eq!(redacted.len(), 1, "{wire:?}: one report per request");
        let total: usize = redacted[0].iter().map(|(_, n)| n).sum();
        assert!(total >= 18, "{wire:?}: {:?}", redacted[0]);
    }
}

/// Embedding inputs pass the gate too, on every embedding wire.
#[tokio::test]
async fn no_planted_credential_reaches_an_embedding_server() {
    for (wire, root, reply) in [
        (
            EmbeddingWire::OpenAi,
            Wire::OpenAi,
            json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}),
        ),
        (
            EmbeddingWire::Ollama,
            Wire::Ollama,
            json!({"embeddings": [[1.0, 0.0], [0.0, 1.0]]}),
        ),
        (
            EmbeddingWire::Gemini,
            Wire::Gemini,
            json!({"embeddings": [{"values": [1.0, 0.0]}, {"values": [0.0, 1.0]}]}),
        ),
    ] {
        let server = LlmServer::start().await;
        server.push(Reply::ok(
            "application/json",
            reply.to_string().into_bytes(),
        ));
        let client =
            EmbeddingClient::new(EmbeddingBackend::new(wire, server.root_for(root), "e")).unwrap();
        let texts = vec!["Groceries: apples, bread".to_owned(), note()];
        let (vectors, hits) = client
            .embed_gated(&texts, &CancelToken::new())
            .await
            .unwrap_or_else(|e| panic!("{wire:?}: {e}"));
        assert_eq!(vectors.len(), 2);
        assert!(
            hits.iter().map(|(_, n)| n).sum::<usize>() >= 9,
            "{wire:?}: {hits:?}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_clean(wire.name(), &requests[0].body);
        assert!(String::from_utf8_lossy(&requests[0].body).contains("Groceries: apples, bread"));
    }
}

const VAULT: &str = "\
#+TITLE: Vault
* Router
:PROPERTIES:
:ID:       5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f
:PASSWORD: correct horse battery staple
:api_key:  plainwordsonly
:EFFORT:   0:30
:END:
Admin page at 192.168.1.1.
  :TOKEN: tokenvalueinbody
** Child
";

/// `org-agent-secret-properties`: values of the named properties never appear in what the
/// notes layer renders (read_node, the context's focus) or in a redacted buffer, whatever
/// they look like; other properties do.
#[test]
fn secret_properties_are_withheld() {
    use org_agent::notes::{Notes, Privacy};
    let store = Store::in_memory(Config::default());
    store
        .ingest_text("/notes/vault.org", VAULT, None, None, None)
        .unwrap();
    let store = std::sync::Arc::new(store);
    let id = "5b9c2c9e-3f2a-4b7e-9d1c-0a1b2c3d4e5f";
    let check = |what: &str, text: &str, withheld: &[&str]| {
        for v in ["correct horse", "plainwordsonly", "tokenvalueinbody"] {
            assert!(!text.contains(v), "{what} shows {v}:\n{text}");
        }
        for name in withheld {
            // Property names are case-insensitive (the store writes them upper-case).
            assert!(
                text.to_ascii_lowercase()
                    .contains(&format!("{name}: [withheld]").to_ascii_lowercase()),
                "{what}: {name}\n{text}"
            );
        }
        assert!(
            text.contains(":EFFORT: 0:30") || text.contains(":EFFORT:   0:30"),
            "{what}:\n{text}"
        );
    };
    let notes = Notes::new(store.clone(), std::sync::Arc::new(Privacy::default()));
    let r = notes.node(id).unwrap();
    check(
        "read_node",
        &notes.render(&r),
        &[":PASSWORD", ":api_key", ":TOKEN"],
    );
    let ctx = org_agent::context::render(&notes, Some(id));
    check("the context", &ctx, &[":PASSWORD"]);
    let doc = store.parse_unstored("/notes/vault.org", VAULT).unwrap();
    let buffer = Privacy::default().redact(&doc, VAULT).unwrap();
    check(
        "a redacted buffer",
        &buffer,
        &[":PASSWORD", ":api_key", ":TOKEN"],
    );
    // The user's own list replaces the default.
    let mine = Privacy::default().with_secret_properties(["effort".to_string()]);
    assert!(mine.withholds_property("EFFORT") && !mine.withholds_property("PASSWORD"));
    let notes = Notes::new(store, std::sync::Arc::new(mine));
    let shown = notes.render(&notes.node(id).unwrap());
    assert!(
        shown.contains(":EFFORT: [withheld]") && shown.contains("correct horse"),
        "{shown}"
    );
}
