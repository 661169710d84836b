//! The command sandbox at scale: the view of notes of ORG_AGENT_BENCH_HEADLINES headlines
//! (default 100,000: the shared corpus copied as often as it takes), its first build, the
//! per-command check when nothing changed, its update after one file is saved, the memory it
//! holds; the start cost of a sandboxed command against an unsandboxed one (median, p95 of
//! ORG_AGENT_BENCH_RUNS, default 50); and which commands of the default allow list give the
//! same output inside the sandbox as outside it.
//!
//!   cargo run --release --example bench-sandbox [CORPUS_DIR]

use org_agent::notes::{Notes, Privacy};
use org_agent::store::{Config, Store};
use org_agent::tools::sandbox::view::NotesView;
use org_agent::tools::shell::{run, run_seeing, Sandboxing, ShellConfig};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn median_p95(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let p95 = v[((v.len() as f64 * 0.95).ceil() as usize).min(v.len()) - 1];
    (v[v.len() / 2], p95)
}

/// Resident memory of this process, in KB.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

fn du_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// The corpus's Org files copied under `notes` until they hold `want` headlines; the count.
fn fill(corpus: &Path, notes: &Path, want: usize) -> (usize, usize) {
    let files = Store::org_files_under(&[corpus.to_path_buf()]);
    let mut headlines = 0;
    let mut written = 0;
    let mut copy = 0;
    while headlines < want {
        for f in &files {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            let rel = f.strip_prefix(corpus).unwrap_or(f);
            let target = notes.join(format!("copy{copy}")).join(rel);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, &text).unwrap();
            headlines += text.lines().filter(|l| l.starts_with('*')).count();
            written += 1;
        }
        copy += 1;
        if files.is_empty() {
            break;
        }
    }
    (headlines, written)
}

fn main() {
    let corpus = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let want: usize = std::env::var("ORG_AGENT_BENCH_HEADLINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs: usize = std::env::var("ORG_AGENT_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    if let Err(why) = org_agent::tools::sandbox::available() {
        println!("skipped: no sandbox on this machine: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let notes_dir = root.join("org");
    let project = root.join("project");
    std::fs::create_dir_all(&notes_dir).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let (headlines, files) = if corpus.is_dir() {
        fill(&corpus, &notes_dir, want)
    } else {
        println!(
            "skipped: {} is not there; generating plain notes",
            corpus.display()
        );
        let mut n = 0;
        let mut f = 0;
        while n < want {
            let text: String = (0..1000)
                .map(|i| format!("* TODO Task {n}-{i} :work:\nSome body text.\n"))
                .collect();
            std::fs::write(notes_dir.join(format!("gen{f}.org")), text).unwrap();
            n += 1000;
            f += 1;
        }
        (n, f)
    };
    println!("## 14. The command sandbox");
    println!("notes: {headlines} headlines in {files} files");
    let layer = Notes::new(
        Arc::new(Store::in_memory(Config::default())),
        Arc::new(Privacy::default()),
    );
    let before = rss_kb();
    let started = Instant::now();
    let mut view = NotesView::new(&root.join("state/view"), std::slice::from_ref(&notes_dir))
        .expect("the view");
    let first = view.refresh(&layer).expect("the first build");
    let build = started.elapsed();
    let held = rss_kb().saturating_sub(before);
    println!(
        "view, first build: {} ({} files shown, {} left out); memory held: {:.1} MB; on disk: {:.1} MB",
        ms(build),
        first.shown,
        first.left_out,
        held as f64 / 1024.0,
        du_bytes(&root.join("state/view")) as f64 / 1e6
    );
    let idle: Vec<Duration> = (0..9)
        .map(|_| view.refresh(&layer).expect("a refresh").took)
        .collect();
    let (m, p) = median_p95(idle);
    println!(
        "view, per-command check with nothing changed: median {}, p95 {}",
        ms(m),
        ms(p)
    );
    let saved = Store::org_files_under(std::slice::from_ref(&notes_dir))
        .into_iter()
        .max_by_key(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .expect("a file");
    let size = std::fs::metadata(&saved).map(|m| m.len()).unwrap_or(0);
    let mut saves = Vec::new();
    for i in 0..9 {
        let mut text = std::fs::read_to_string(&saved).unwrap();
        text.push_str(&format!("* Saved {i}\n"));
        std::fs::write(&saved, text).unwrap();
        let r = view.refresh(&layer).expect("a refresh");
        assert_eq!(r.copied, 1, "one file copied again");
        saves.push(r.took);
    }
    let (m, p) = median_p95(saves);
    println!(
        "view, update after a save of the largest file ({:.0} KB): median {}, p95 {}",
        size as f64 / 1024.0,
        ms(m),
        ms(p)
    );
    drop(view);

    // Start cost: `true`, sandboxed (no notes; then with the 100k view) and not.
    let plain = ShellConfig {
        sandbox: Sandboxing::Off,
        ..ShellConfig::new(vec![project.clone()])
    };
    let boxed = ShellConfig::new(vec![project.clone()]);
    let mut with_notes = ShellConfig::new(vec![notes_dir.clone(), project.clone()]);
    with_notes.notes_dirs = vec![notes_dir.clone()];
    with_notes.view_dir = Some(root.join("state/view2"));
    let _ = run_seeing(&with_notes, Some(&layer), "true", None, None);
    for (name, config, notes) in [
        ("unsandboxed", &plain, None),
        ("sandboxed", &boxed, None),
        ("sandboxed, with the notes view", &with_notes, Some(&layer)),
    ] {
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let out = run_seeing(config, notes, "true", None, None).expect("true runs");
                assert!(out.starts_with("exit status 0"), "{out}");
                t.elapsed()
            })
            .collect();
        let (m, p) = median_p95(times);
        println!("`true`, {name}: median {}, p95 {}", ms(m), ms(p));
    }

    // The default allow list, inside and outside the sandbox, in a project with a history.
    std::fs::write(project.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "notes.txt"],
        &["commit", "-qm", "first"],
        &["tag", "v1"],
    ] {
        std::process::Command::new("git")
            .args(["-c", "user.email=b@b", "-c", "user.name=b"])
            .args(args)
            .current_dir(&project)
            .status()
            .expect("git");
    }
    let lines = [
        "ls",
        "ls -la",
        "cat notes.txt",
        "head -1 notes.txt",
        "tail -1 notes.txt",
        "wc -l notes.txt",
        "grep beta notes.txt",
        "rg beta",
        "pwd",
        "date +%Y",
        "echo hi",
        "printf %s hi",
        "true",
        "false",
        "file notes.txt",
        "stat -c %s notes.txt",
        "du -s .",
        "df .",
        "which ls",
        "basename /a/b",
        "dirname /a/b",
        "uname",
        "whoami",
        "sort notes.txt",
        "find . -name notes.txt",
        "git status --short",
        "git log --oneline",
        "git diff",
        "git show --stat HEAD",
        "git blame notes.txt",
        "git shortlog -s HEAD",
        "git describe --tags",
        "git ls-files",
    ];
    let mut same = Vec::new();
    let mut differ = Vec::new();
    let cwd = project.to_string_lossy().into_owned();
    for line in lines {
        let a = run(&plain, line, Some(&cwd), None).unwrap_or_else(|e| e);
        let b = run(&boxed, line, Some(&cwd), None).unwrap_or_else(|e| e);
        // Times and sizes of the file systems differ by nature; the status must not.
        let volatile = line.starts_with("ls -la") || line.starts_with("df");
        let first = |s: &str| s.lines().next().unwrap_or("").to_string();
        if a == b || (volatile && first(&a) == first(&b)) {
            same.push(line);
        } else {
            differ.push(format!("{line}\n  outside: {a:?}\n  inside:  {b:?}"));
        }
    }
    println!(
        "default allow list: {} of {} commands give the same result inside the sandbox",
        same.len(),
        lines.len()
    );
    for d in differ {
        println!("  differs: {d}");
    }
}
