//! Ingest the whole shared corpus of real-world Org files.
//!
//! Every `.org` file under `../shared/corpus` goes through `Store::ingest_file`. (A clone
//! without `../shared` beside it ingests the checkout's own Org files instead — the README,
//! the demo notes, the skills, the test fixtures — and says so.) Nothing may
//! panic, the only acceptable errors are the store's clearly-reported refusals (too large,
//! too deep), and each file must yield exactly as many headlines as Org itself finds: lines
//! matching `^\*+ ` in the decoded text (Org finds headlines even inside blocks).
//!
//! Run with `cargo test --test suite corpus:: -- --nocapture` to see the totals.

use org_agent::store::{text, Config, NodeKind, Query, Store, StoreError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The files to ingest, with the least number of files and of headlines they must hold:
/// the shared corpus, or, when it is not beside this checkout, the checkout's own Org files.
struct Corpus {
    files: Vec<PathBuf>,
    min_files: usize,
    min_headlines: usize,
}

fn corpus(test: &str) -> Corpus {
    if let Some(dir) = crate::support::shared::dir("corpus") {
        return Corpus {
            files: org_files(&dir),
            min_files: 100,
            min_headlines: 1000,
        };
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.org")];
    for sub in ["demo", "skills", "tests/fixtures"] {
        files.extend(org_files(&root.join(sub)));
    }
    files.sort();
    crate::support::shared::say(&format!(
        "skipped: ../shared/corpus is not beside this checkout ({test} ingests the checkout's \
         own {} Org files instead)",
        files.len()
    ));
    Corpus {
        files,
        min_files: 10,
        min_headlines: 100,
    }
}

/// Every `.org` file under `dir`, recursively, sorted; nothing is skipped (hidden files and
/// directories included, symlinks followed).
fn org_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            let md =
                std::fs::metadata(&path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
            if md.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "org") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Headlines as Org finds them: a line of one or more stars followed by a space.
fn org_headline_count(text: &str) -> usize {
    text.split('\n')
        .filter(|line| {
            let stars = line.bytes().take_while(|&b| b == b'*').count();
            stars > 0 && line.as_bytes().get(stars) == Some(&b' ')
        })
        .count()
}

#[test]
fn headline_counter_follows_org_rule() {
    assert_eq!(
        org_headline_count("* a\n** b\n*c\n *d\n*\n**\t\n***  e\n"),
        3
    );
    assert_eq!(
        org_headline_count("#+begin_src\n* in block\n#+end_src\n"),
        1
    );
    assert_eq!(org_headline_count("*bold* text\n"), 0);
    assert_eq!(org_headline_count(""), 0);
}

/// What ingesting the corpus found.
struct Outcome {
    files: usize,
    /// The least number of headlines these files must hold.
    min_headlines: usize,
    bytes: u64,
    headlines: usize,
    elapsed: Duration,
    /// Clearly-reported refusals (too large / too deep).
    refused: Vec<String>,
    /// Any other error.
    errors: Vec<String>,
    /// Files whose ingest panicked, with the panic message.
    panics: Vec<String>,
    /// Files whose headline count differs from Org's.
    mismatches: Vec<String>,
    store: Store,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into())
}

fn ingest_corpus(test: &str) -> Outcome {
    let Corpus {
        files,
        min_files,
        min_headlines,
    } = corpus(test);
    assert!(
        files.len() > min_files,
        "expected more than {min_files} .org files, found {}",
        files.len()
    );
    let store = Store::in_memory(Config {
        snapshot_capacity: 20,
        ..Default::default()
    });
    let mut out = Outcome {
        files: files.len(),
        min_headlines,
        bytes: 0,
        headlines: 0,
        elapsed: Duration::ZERO,
        refused: vec![],
        errors: vec![],
        panics: vec![],
        mismatches: vec![],
        store: Store::in_memory(Config::default()),
    };
    let start = Instant::now();
    for f in &files {
        let name = f.to_string_lossy().into_owned();
        let raw = std::fs::read(f).expect("read corpus file");
        out.bytes += raw.len() as u64;
        let expected = org_headline_count(&text::decode(&raw));
        let result = catch_unwind(AssertUnwindSafe(|| store.ingest_file(&name, false)));
        match result {
            Err(p) => out.panics.push(format!("{name}: {}", panic_message(&*p))),
            Ok(Ok(report)) => {
                assert!(report.changed, "{name}: a first ingest changes the store");
                let got = store
                    .query(&Query {
                        file: Some(name.clone()),
                        kind: Some(NodeKind::Headline),
                        ..Default::default()
                    })
                    .len();
                assert_eq!(
                    report.nodes,
                    got + 1,
                    "{name}: nodes = headlines + file node"
                );
                out.headlines += got;
                if got != expected {
                    out.mismatches.push(format!(
                        "{name}: store has {got} headlines, Org finds {expected}"
                    ));
                }
            }
            Ok(Err(e @ (StoreError::TooLarge { .. } | StoreError::TooDeep { .. }))) => {
                out.refused.push(e.to_string())
            }
            Ok(Err(e)) => out.errors.push(format!("{name}: {e}")),
        }
    }
    out.elapsed = start.elapsed();
    out.store = store;
    println!(
        "corpus: {} files, {} bytes, {} headlines, {} refused, {} errors, {} panics, \
         ingested in {:.2?}",
        out.files,
        out.bytes,
        out.headlines,
        out.refused.len(),
        out.errors.len(),
        out.panics.len(),
        out.elapsed
    );
    for r in &out.refused {
        println!("  refused: {r}");
    }
    for p in &out.panics {
        println!("  panic: {p}");
    }
    out
}

/// Headline counts agree with Org on every file that ingests, and errors are only the
/// clearly-reported refusals.
#[test]
fn corpus_headline_counts_match_org() {
    let out = ingest_corpus("corpus_headline_counts_match_org");
    assert!(out.panics.is_empty(), "panics: {:?}", out.panics);
    assert!(
        out.errors.is_empty(),
        "unexpected errors:\n{}",
        out.errors.join("\n")
    );
    assert!(
        out.mismatches.is_empty(),
        "{} files differ:\n{}",
        out.mismatches.len(),
        out.mismatches.join("\n")
    );
    let stats = out.store.stats();
    assert_eq!(
        stats.files + out.refused.len() + out.panics.len(),
        out.files
    );
    assert_eq!(stats.headlines, out.headlines);
    assert!(
        out.headlines > out.min_headlines,
        "the corpus has many headlines"
    );
}

/// No file of the corpus makes ingest panic.
#[test]
fn corpus_ingest_never_panics() {
    let out = ingest_corpus("corpus_ingest_never_panics");
    assert!(
        out.panics.is_empty(),
        "{} files panicked:\n{}",
        out.panics.len(),
        out.panics.join("\n")
    );
}
