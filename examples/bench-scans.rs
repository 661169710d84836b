//! The skills' deterministic scans at scale: the shared corpus (real notes: 29,902
//! headlines) ingested as many times as it takes to pass ORG_AGENT_BENCH_HEADLINES
//! (default 100,000), each copy under its own directory with its `:ID:`s and `id:` links
//! renamed so duplicates stay the corpus's own; then each scan of `src/notes/scans/` timed
//! over all of it (median and worst of ORG_AGENT_BENCH_RUNS runs, default 9, after one
//! untimed run, which is also reported).
//!
//! The secret scan runs first, just after the store is built, since its first run is the
//! one that may have to find what the store's warm-up has not: ORG_AGENT_BENCH_WARM says
//! whether the store warms up as the session's does (`wait`, the default: and the scan
//! waits for the warm-up to finish; `now`: the scan starts at once, beside it) or not
//! (`off`: the first scan finds everything itself).
//!
//!   cargo run --release --example bench-scans [CORPUS_DIR]

use org_agent::notes::scans::{self, Day, Scan, ScanInput};
use org_agent::notes::{Notes, Privacy};
use org_agent::store::{Config, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `text` with every `:ID:` value and `id:` link target suffixed by `-cN`: copy N's ids are
/// its own, as if another person had written the same notes.
fn renamed_ids(text: &str, copy: usize) -> String {
    if copy == 0 {
        return text.to_string();
    }
    let suffix = format!("-c{copy}");
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed
            .get(..4)
            .is_some_and(|h| h.eq_ignore_ascii_case(":ID:"))
        {
            let end = line.trim_end().len();
            out.push_str(&line[..end]);
            out.push_str(&suffix);
            out.push_str(&line[end..]);
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("[[id:") {
            let (head, tail) = rest.split_at(at + 5);
            out.push_str(head);
            let end = tail.find([']', ':']).unwrap_or(tail.len());
            out.push_str(&tail[..end]);
            out.push_str(&suffix);
            rest = &tail[end..];
        }
        out.push_str(rest);
    }
    out
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let corpus = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if !corpus.is_dir() {
        // ../shared is beside this project's checkouts only.
        eprintln!(
            "skipped: {} is not there (name a folder of Org files as the argument)",
            corpus.display()
        );
        return;
    }
    let want: usize = std::env::var("ORG_AGENT_BENCH_HEADLINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("ORG_AGENT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
        .max(1);
    let files = Store::org_files_under(std::slice::from_ref(&corpus));
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            let rel = p.strip_prefix(&corpus).ok()?.to_string_lossy().into_owned();
            Some((rel, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    if texts.is_empty() {
        eprintln!("bench-scans: no Org files under {}", corpus.display());
        std::process::exit(1);
    }
    let warm = std::env::var("ORG_AGENT_BENCH_WARM").unwrap_or_else(|_| "wait".into());
    if !["wait", "now", "off"].contains(&warm.as_str()) {
        eprintln!("bench-scans: ORG_AGENT_BENCH_WARM is wait, now or off, not {warm}");
        std::process::exit(2);
    }
    let store = Arc::new(Store::in_memory(Config::default()));
    if warm != "off" {
        store.warm_credentials();
    }
    let started = Instant::now();
    let mut copy = 0;
    let headlines = |s: &Store| {
        let st = s.state();
        st.node_count() - st.files.len()
    };
    let mut count = 0;
    'fill: loop {
        for (rel, text) in &texts {
            if count >= want {
                break 'fill;
            }
            let path = format!("/bench/copy{copy}/{rel}");
            if let Ok(Some(report)) =
                store.ingest_text(&path, &renamed_ids(text, copy), None, None, None)
            {
                // The file node is not a headline.
                count += report.nodes.saturating_sub(1);
            }
        }
        copy += 1;
    }
    let state = store.state();
    println!(
        "store: {} headlines in {} files ({} copies, the last one partial, of {}), built in \
         {:.1} s",
        headlines(&store),
        state.files.len(),
        copy + 1,
        corpus.display(),
        started.elapsed().as_secs_f64()
    );
    match warm.as_str() {
        "wait" => {
            let t = Instant::now();
            let done = store.credentials_warmed();
            println!(
                "warm-up: {} {} after the store was built; the secret scan starts now",
                if done { "finished" } else { "failed" },
                ms(t.elapsed())
            );
        }
        "now" => println!("warm-up: still running; the secret scan starts beside it"),
        _ => println!("warm-up: off; the first secret scan finds every file's credentials"),
    }
    let notes = Notes::new(store.clone(), Arc::new(Privacy::default()));
    let input = ScanInput {
        today: Day::parse("2026-11-24").unwrap_or_else(Day::local_today),
        file: None,
        inbox: None,
    };
    let secrets_first =
        std::iter::once(Scan::Secrets).chain(Scan::ALL.into_iter().filter(|s| *s != Scan::Secrets));
    for scan in secrets_first {
        let first = Instant::now();
        let report = match scans::run(&notes, scan, &input) {
            Ok(r) => r,
            Err(e) => {
                println!("{:<15} not run: {e}", scan.name());
                continue;
            }
        };
        let first = first.elapsed();
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let _ = scans::run(&notes, scan, &input);
                t.elapsed()
            })
            .collect();
        times.sort();
        let counts: Vec<String> = report
            .counts()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "{:<15} median {:>10}, max {:>10} over {runs} runs (first run {}); {} found{}",
            scan.name(),
            ms(times[times.len() / 2]),
            ms(times[times.len() - 1]),
            ms(first),
            report.findings.len(),
            if counts.is_empty() {
                String::new()
            } else {
                format!(": {}", counts.join(", "))
            }
        );
    }
}
