//! The secret gate's cost: the detector over a full 8,000-token request, and over the
//! embedding inputs of 10,000 headlines of the shared corpus (their titles and bodies, as
//! semantic search embeds them); and what it finds in the corpus, which holds no real
//! secrets (every hit is a false positive, printed with its context for inspection).
//!
//!   cargo run --release --example bench-secrets [CORPUS_DIR]
//!
//! With `ORG_AGENT_BENCH_EMBED_URL` (an OpenAI-compatible `/v1` root, e.g. the local
//! embedding model of `scripts/local-llm serve embed PORT`), it also embeds
//! `ORG_AGENT_BENCH_EMBED_COUNT` headlines (default 1,000) through the client, gate included,
//! and says what share of that run the gate was.

use org_agent::llm::embeddings::{
    EmbeddingBackend, EmbeddingClient, EmbeddingWire, EncodingFormat,
};
use org_agent::llm::http::redact_request;
use org_agent::llm::CancelToken;
use org_agent::llm::{ChatRequest, Message};
use org_agent::secrets::{describe_hits, merge_hits, Detector, Hits, SecretGate};
use org_agent::store::{Config, NodeKind, Query, Store};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn org_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
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

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if !dir.is_dir() {
        // ../shared is beside this project's checkouts only.
        eprintln!(
            "skipped: {} is not there (name a folder of Org files as the argument)",
            dir.display()
        );
        return;
    }
    let show = std::env::var_os("ORG_AGENT_SECRETS_SHOW").is_some();
    let store = Store::in_memory(Config::default());
    for f in org_files(&dir) {
        let _ = store.ingest_file(&f.to_string_lossy(), false);
    }
    let headlines = store.query(&Query {
        kind: Some(NodeKind::Headline),
        ..Default::default()
    });
    let texts: Vec<String> = headlines
        .iter()
        .map(|r| {
            let c = &r.node().content;
            format!("{}\n{}", c.title, c.body_or_notice())
        })
        .collect();
    let started = Instant::now();
    let detector = Detector::new();
    println!("compiling the rules: {}", ms(started.elapsed()));

    // The whole corpus: every hit is a false positive.
    let started = Instant::now();
    let mut hits: Hits = Vec::new();
    let mut with_hits = 0;
    for (r, text) in headlines.iter().zip(&texts) {
        let red = detector.redact(text);
        if !red.hits.is_empty() {
            with_hits += 1;
            merge_hits(&mut hits, &red.hits);
            if show {
                println!("--- {} :: {}", r.doc.path, r.node().content.title);
                for line in red.text.lines().filter(|l| l.contains("[REDACTED:")) {
                    let line: String = line.chars().take(200).collect();
                    println!("    {line}");
                }
            }
        }
    }
    let whole = started.elapsed();
    let bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "corpus: {} headlines ({:.1} MB) in {}; {} with a redaction ({:.2} per 10,000 headlines): {}",
        texts.len(),
        bytes as f64 / 1e6,
        ms(whole),
        with_hits,
        with_hits as f64 * 10_000.0 / texts.len().max(1) as f64,
        describe_hits(&hits)
    );

    // Embedding inputs of 10,000 headlines: the texts semantic search embeds.
    let embedding_texts: Vec<String> = headlines
        .iter()
        .take(10_000)
        .map(org_agent::store::vectors::embedding_text)
        .collect();
    let sample: Vec<&String> = embedding_texts.iter().collect();
    let runs: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for text in &sample {
                std::hint::black_box(detector.redact(text));
            }
            t.elapsed()
        })
        .collect();
    let gate_time = median(runs);
    // What the client does anyway for the same inputs, without any server: the request
    // bodies of 64 texts each, serialised (a lower bound of the embedding run's own CPU).
    let owned: Vec<String> = sample.iter().map(|s| s.to_string()).collect();
    let bodies: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for batch in owned.chunks(64) {
                let body = EmbeddingWire::OpenAi.request_body("m", batch, EncodingFormat::Float);
                std::hint::black_box(serde_json::to_vec(&body).unwrap_or_default());
            }
            t.elapsed()
        })
        .collect();
    let body_time = median(bodies);
    println!(
        "embedding inputs: {} headlines, {:.1} MB: gate median {} ({:.2} µs a headline); \
         building and serialising the request bodies alone takes {} (the gate is {:.0}% of that)",
        sample.len(),
        sample.iter().map(|s| s.len()).sum::<usize>() as f64 / 1e6,
        ms(gate_time),
        gate_time.as_secs_f64() * 1e6 / sample.len().max(1) as f64,
        ms(body_time),
        100.0 * gate_time.as_secs_f64() / body_time.as_secs_f64().max(1e-9)
    );

    if let Ok(url) = std::env::var("ORG_AGENT_BENCH_EMBED_URL") {
        let count: usize = std::env::var("ORG_AGENT_BENCH_EMBED_COUNT")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1_000);
        // The small model's server takes 512 tokens a text.
        let short: Vec<String> = owned
            .iter()
            .take(count)
            .map(|t| t.chars().take(500).collect())
            .collect();
        embedding_run(&url, &short, &detector);
    }

    // A full 8,000-token request (32,000 bytes): corpus text with planted credentials.
    let mut request = String::new();
    for text in &texts {
        if request.len() >= 31_000 {
            break;
        }
        request.push_str(text);
        request.push('\n');
    }
    request.push_str(
        ":PASSWORD: hunter2\nAKIAIOSFODNN7EXAMPLF\nghp_16C7e42F292c6912E7710c838347Ae178B4a\n",
    );
    let mut cut = request.len().min(32_000);
    while !request.is_char_boundary(cut) {
        cut -= 1;
    }
    request.truncate(cut);
    // As a chat request: the system prompt with the context, history, a tool result.
    let (system, rest) = request.split_at(request.len() / 2);
    let (user, tool) = rest.split_at(rest.len() / 2);
    let chat = ChatRequest {
        messages: vec![
            Message::System(system.to_owned()),
            Message::User(user.to_owned()),
            Message::Tool {
                tool_call_id: "c1".into(),
                content: tool.to_owned(),
            },
        ],
        ..ChatRequest::default()
    };
    let gate = SecretGate::default();
    let runs: Vec<Duration> = (0..500)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(redact_request(&gate, &chat));
            t.elapsed()
        })
        .collect();
    let mut sorted = runs.clone();
    sorted.sort();
    println!(
        "8,000-token request ({} bytes, {} tokens estimated): median {}, p95 {}, max {} over 500 runs",
        request.len(),
        chat.estimated_tokens(),
        ms(median(runs)),
        ms(sorted[sorted.len() * 95 / 100]),
        ms(sorted[sorted.len() - 1])
    );
}

/// Embeds `texts` in batches of 32 through a real server and compares the run's time with
/// the gate's on the same texts.
fn embedding_run(url: &str, texts: &[String], detector: &Detector) {
    let mut backend = EmbeddingBackend::new(EmbeddingWire::OpenAi, url, "all-minilm");
    backend.endpoint.timeouts.total = Duration::from_secs(3600);
    let client = match EmbeddingClient::new(backend) {
        Ok(c) => c,
        Err(e) => {
            println!("embedding run: {e}");
            return;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            println!("embedding run: {e}");
            return;
        }
    };
    let cancel = CancelToken::new();
    let started = Instant::now();
    for batch in texts.chunks(32) {
        if let Err(e) = rt.block_on(client.embed(batch, &cancel)) {
            println!("embedding run: {e}");
            return;
        }
    }
    let run = started.elapsed();
    let started = Instant::now();
    for text in texts {
        std::hint::black_box(detector.redact(text));
    }
    let gate = started.elapsed();
    println!(
        "embedding run: {} headlines embedded in {} (gate included); the gate alone {} = {:.4}% of the run",
        texts.len(),
        ms(run),
        ms(gate),
        100.0 * gate.as_secs_f64() / run.as_secs_f64().max(1e-9)
    );
}
