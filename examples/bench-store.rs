//! The store alone, without Emacs: ingest a directory of Org files into a fresh persisted
//! store, then open that store again in fresh processes and report open time and resident
//! memory (the figures of `scripts/bench` sections 1, 4 and 5, for iterating quickly).
//!
//!   cargo run --release --example bench-store [--only one-file|flushed|dir] DIR [STATE_DIR]
//!
//! `flushed` ingests one file at a time and waits for each commit to be on disk: the cost
//! of a commit's durability (the log's sync and its seal's replacement).
//!
//!   cargo run --release --example bench-store --open STATE_DIR
//!   cargo run --release --example bench-store --compact STATE_DIR
//!
//!   cargo run --release --example bench-store --reopen STATE_DIR
//!
//! `--open` opens a persisted store once, as the third step above does; `--compact`
//! rewrites its log as compaction does, to time opening a compacted log; `--reopen` opens
//! it again and again, each time while the store opened before is freed on a thread of
//! lowest priority, as Emacs frees the store an open replaces (`scripts/bench` row 4).
//!
//! DIR is, e.g., the generated memex (`org-agent-bench--generate-memex`).
//!
//! The stores ingested into warm up as the session's does (their documents' credentials
//! found on a thread of their own after each commit); ORG_AGENT_BENCH_WARM=off leaves that
//! out, to see what it costs the ingest beside it.

use org_agent::store::{Config, Store};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn open_child(state: &std::path::Path) {
    let before = rss_kb();
    let t = Instant::now();
    let (store, report) = match Store::open(state, Config::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("open: {e}");
            std::process::exit(1);
        }
    };
    let took = t.elapsed();
    // The id index is built on a thread of its own after `open` returns; the stats wait
    // for it, so the memory figure includes it.
    let t = Instant::now();
    let stats = store.stats();
    let index_wait = t.elapsed();
    let after = rss_kb();
    println!(
        "open {:.1} ms (id index ready {:.1} ms later)  rss +{:.1} MB  ({} files, {} headlines, rebuilt {:?})",
        took.as_secs_f64() * 1e3,
        index_wait.as_secs_f64() * 1e3,
        (after.saturating_sub(before)) as f64 * 1024.0 / 1e6,
        report.files,
        stats.headlines,
        report.rebuilt
    );
    drop(store);
}

/// Open the store in `state` four times, each open after the first while the store before
/// it is freed as Emacs frees a replaced one (`Store::free_between_opens`, on a thread of
/// its own at lowest priority).
fn reopen(state: &Path) {
    let open = || match Store::open(state, Config::default()) {
        Ok((store, _)) => store,
        Err(e) => {
            eprintln!("open: {e}");
            std::process::exit(1);
        }
    };
    let mut store = open();
    store.stats();
    for _ in 0..3 {
        let freeing = std::thread::spawn(move || {
            org_agent::lower_thread_priority();
            Arc::new(store).free_between_opens();
        });
        let t = Instant::now();
        store = open();
        let took = t.elapsed();
        let t = Instant::now();
        store.stats();
        let index_wait = t.elapsed();
        let _ = freeing.join();
        println!(
            "open while the last store is freed {:.1} ms (id index ready {:.1} ms later)",
            took.as_secs_f64() * 1e3,
            index_wait.as_secs_f64() * 1e3
        );
    }
}

/// Rewrite the log of the store in `state` as compaction does.
fn compact(state: &Path) {
    let t = Instant::now();
    let done = Store::open(state, Config::default())
        .map_err(|e| e.to_string())
        .and_then(|(store, _)| {
            store.compact()?;
            store.flush()
        });
    match done {
        Ok(()) => println!("compacted in {:.1} s", t.elapsed().as_secs_f64()),
        Err(e) => {
            eprintln!("compact: {e}");
            std::process::exit(1);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let first = args.next().unwrap_or_default();
    if first == "--open" {
        let state = PathBuf::from(args.next().unwrap_or_default());
        open_child(&state);
        return;
    }
    if first == "--reopen" {
        reopen(&PathBuf::from(args.next().unwrap_or_default()));
        return;
    }
    if first == "--compact" {
        let state = PathBuf::from(args.next().unwrap_or_default());
        compact(&state);
        return;
    }
    // `--only one-file DIR` or `--only dir DIR`: that ingest alone, e.g. to profile it.
    let only = if first == "--only" { args.next() } else { None };
    let dir = if only.is_some() {
        args.next()
    } else {
        Some(first)
    };
    let (Some(dir), true) = (
        dir.filter(|d| !d.is_empty()).map(PathBuf::from),
        matches!(only.as_deref(), None | Some("one-file" | "flushed" | "dir")),
    ) else {
        eprintln!("usage: bench-store [--only one-file|flushed|dir] DIR [STATE_DIR]");
        std::process::exit(2);
    };
    let state = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("org-agent-bench-store"));
    if only.as_deref() == Some("flushed") {
        one_file_at_a_time(&dir, &state, true);
        return;
    }
    if only.as_deref() != Some("dir") {
        one_file_at_a_time(&dir, &state, false);
    }
    if only.as_deref() != Some("one-file") {
        directory_ingest(&dir, &state);
    }
    if only.is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap_or_default();
    for _ in 0..3 {
        let _ = std::process::Command::new(&exe)
            .arg("--open")
            .arg(&state)
            .status();
    }
}

/// Ingest the files under `dir` into a fresh store in `state`, one `ingest_file` each, and
/// when `flushed`, each on disk before the next.
fn one_file_at_a_time(dir: &Path, state: &Path, flushed: bool) {
    let store = empty_store(state);
    let files = Store::org_files_under(&[dir.to_path_buf()]);
    let t = Instant::now();
    for f in &files {
        let name = f.to_string_lossy();
        if let Err(e) = store.ingest_file(&name, true) {
            eprintln!("{name}: {e}");
        }
        if flushed {
            let _ = store.flush();
        }
    }
    let _ = store.flush();
    let took = t.elapsed().as_secs_f64();
    println!(
        "one file at a time{}: {took:.3} s ({} files, {:.2} ms a commit)",
        if flushed { ", each flushed" } else { "" },
        files.len(),
        took * 1e3 / files.len().max(1) as f64
    );
}

/// Ingest the files under `dir` into a fresh store in `state` with `ingest_directories`.
fn directory_ingest(dir: &Path, state: &Path) {
    let store = empty_store(state);
    let t = Instant::now();
    let r = store.ingest_directories(&[dir.to_path_buf()], |_, _, _| {}, || false);
    let _ = store.flush();
    println!(
        "directory ingest: {:.3} s ({} files, {} nodes)",
        t.elapsed().as_secs_f64(),
        r.files,
        r.nodes
    );
}

/// A new, empty store in `state` (whatever was there is removed); exits on failure.
fn empty_store(state: &Path) -> Store {
    let _ = std::fs::remove_dir_all(state);
    match Store::open(state, Config::default()) {
        Ok((store, _)) => {
            if std::env::var("ORG_AGENT_BENCH_WARM").as_deref() != Ok("off") {
                store.warm_credentials();
            }
            store
        }
        Err(e) => {
            eprintln!("open: {e}");
            std::process::exit(1);
        }
    }
}
