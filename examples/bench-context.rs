//! Assembling the context of one request on a 100,000-headline store: the focus node, five
//! related notes, the active projects' skeleton and recent completions, under the privacy
//! rules and the default token budget. Prints the median and max over 100 assemblies.
//!
//!   cargo run --release --example bench-context [HEADLINES]

use org_agent::context::{assemble, ContextSpec, DEFAULT_BUDGET_TOKENS};
use org_agent::llm::estimate_tokens;
use org_agent::notes::Notes;
use org_agent::notes::Privacy;
use org_agent::store::{Config, Query, Store};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let headlines: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let per_file = 100;
    let store = Store::in_memory(Config::default());
    let started = Instant::now();
    for f in 0..headlines.div_ceil(per_file) {
        let mut text = format!("#+TITLE: File {f}\n");
        let mut n = 0;
        while n < per_file {
            match n % 20 {
                // A project with four steps, every 20 headlines in some files.
                0 if f % 7 == 0 => {
                    text.push_str(&format!("* TODO Project {f}-{n} :project:\n"));
                    for s in 0..4 {
                        text.push_str(&format!("** TODO Step {s} of {f}-{n}\nSome notes.\n"));
                    }
                    n += 5;
                }
                1 => {
                    text.push_str(&format!(
                        "* DONE Finished {f}-{n}\nCLOSED: [2026-11-{:02} Sat 10:00]\n",
                        1 + (f + n) % 28
                    ));
                    n += 1;
                }
                2 if f % 10 == 0 => {
                    text.push_str(&format!("* Diary {f}-{n} :private:\nSecret.\n"));
                    n += 1;
                }
                _ => {
                    text.push_str(&format!(
                        "* Note {f}-{n} :tag{}:\nA body of a few words about {n}.\n",
                        n % 13
                    ));
                    n += 1;
                }
            }
        }
        store
            .ingest_text(&format!("/bench/f{f}.org"), &text, None, None, None)
            .expect("ingest");
    }
    let count = store
        .query(&Query {
            kind: Some(org_agent::store::NodeKind::Headline),
            ..Query::default()
        })
        .len();
    println!(
        "store: {count} headlines in {} files, built in {}",
        headlines.div_ceil(per_file),
        ms(started.elapsed())
    );
    let ids: Vec<String> = store
        .query(&Query {
            tag: Some("tag3".into()),
            limit: Some(6),
            ..Query::default()
        })
        .iter()
        .map(|r| r.node().id.to_string())
        .collect();
    let related: Vec<(String, f32)> = ids[1..].iter().map(|id| (id.clone(), 0.8)).collect();
    let privacy = Privacy::default();
    let store = Arc::new(store);
    let notes = Notes::new(store.clone(), Arc::new(privacy.clone()));
    let spec = ContextSpec {
        focus: Some(&ids[0]),
        focus_is_users: true,
        related: &related,
        done_since: Some("2026-11-15"),
        // As the chat sends them: today's date and the open tasks due within a week.
        today: Some("2026-11-23 Mon"),
        due_before: Some("2026-12-01"),
        budget_tokens: DEFAULT_BUDGET_TOKENS,
        // The chat with tools (a configured backend): lines with ids and paths.
        brief: false,
    };
    let mut times = Vec::new();
    let mut out = String::new();
    for _ in 0..100 {
        let t = Instant::now();
        out = assemble(&notes, &spec);
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "context assembly (today, focus + 5 related + due soon + projects + recent, budget {DEFAULT_BUDGET_TOKENS} tokens): median {}, max {} (100 runs)",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
    println!(
        "context: {} bytes, ~{} tokens",
        out.len(),
        estimate_tokens(&out)
    );
}
