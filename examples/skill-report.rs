//! What a shipped skill's deterministic part finds in a directory of notes: the scans its
//! tools run (`:ALIAS: scan_notes` with `:SCAN:` fixed), over the directory ingested as
//! org-agent ingests it, with the default privacy (notes tagged private are left out).
//! Prints the counts per kind and three examples of each, with file and line.
//!
//!   scripts/skill-report NAME DIR [--today YYYY-MM-DD] [--examples N] [--inbox INBOX]
//!
//! `--inbox` names the inbox for the inbox scan (a file, `FILE::Headline` or an id), as the
//! model's `inbox` argument does; without it the scan looks for its default inbox.

use org_agent::notes::scans::{self, Day, Report, Scan, ScanInput};
use org_agent::notes::{Notes, Privacy};
use org_agent::skills::load::load_dirs;
use org_agent::skills::{SkillToolKind, Source};
use org_agent::store::{Config, NodeRef, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("skill-report: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Options {
    skill: String,
    dir: PathBuf,
    today: Day,
    examples: usize,
    inbox: Option<String>,
}

fn options() -> Result<Options, String> {
    let usage = "usage: skill-report NAME DIR [--today YYYY-MM-DD] [--examples N] [--inbox INBOX]";
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut today = Day::local_today();
    let mut examples = 3;
    let mut inbox = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--today" => {
                let v = args.next().ok_or(usage)?;
                today = Day::parse(&v).ok_or(format!("--today {v:?} is not a date"))?;
            }
            "--examples" => {
                let v = args.next().ok_or(usage)?;
                examples = v
                    .parse()
                    .map_err(|_| format!("--examples {v:?} is not a number"))?;
            }
            "--inbox" => inbox = Some(args.next().ok_or(usage)?),
            "-h" | "--help" => return Err(usage.into()),
            _ => positional.push(a),
        }
    }
    let [skill, dir] = <[String; 2]>::try_from(positional).map_err(|_| usage.to_string())?;
    Ok(Options {
        skill,
        dir: PathBuf::from(dir),
        today,
        examples,
        inbox,
    })
}

/// The scans the tools of skill `name` run, by the scan their alias fixes.
fn skill_scans(name: &str) -> Result<(String, Vec<(String, Scan)>), String> {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    let loaded = load_dirs(&[(shipped, Source::Shipped)], &[]);
    let Some(skill) = loaded.active.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = loaded.active.iter().map(|s| s.name.as_str()).collect();
        let why = loaded
            .inactive
            .get(name)
            .map(|why| format!(" (it is inactive: {why})"))
            .unwrap_or_default();
        return Err(format!(
            "no active shipped skill {name}{why}; they are: {}",
            names.join(", ")
        ));
    };
    let mut out = Vec::new();
    for tool in &skill.tools {
        let SkillToolKind::Alias { builtin, arguments } = &tool.kind else {
            continue;
        };
        if builtin != "scan_notes" {
            continue;
        }
        let fixed = arguments
            .iter()
            .find(|a| a.name == "scan" && !a.default)
            .and_then(|a| a.value.as_str())
            .and_then(Scan::from_name);
        if let Some(scan) = fixed {
            out.push((format!("{}__{}", skill.name, tool.name), scan));
        }
    }
    Ok((skill.file.clone(), out))
}

fn line_of(r: &NodeRef) -> usize {
    let begin = r.node().begin as usize;
    std::fs::read(&*r.doc.path)
        .map(|bytes| {
            bytes[..begin.min(bytes.len())]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        })
        .unwrap_or(0)
}

fn print(report: &Report, examples: usize) {
    for (kind, n) in report.counts() {
        println!("  {kind}: {n}");
        for f in report
            .findings
            .iter()
            .filter(|f| f.kind == kind)
            .take(examples)
        {
            let c = &f.node.node().content;
            let stars = "*".repeat(c.level.max(1) as usize);
            let todo = c
                .todo
                .as_deref()
                .map(|t| format!("{t} "))
                .unwrap_or_default();
            println!(
                "    - {}:{}: {stars} {todo}{}\n      {}",
                f.node.doc.path,
                line_of(&f.node),
                c.title,
                f.detail
            );
        }
    }
}

fn run() -> Result<(), String> {
    let opts = options()?;
    let (file, tools) = skill_scans(&opts.skill)?;
    if tools.is_empty() {
        println!(
            "skill {} ({file}) has no deterministic scan: its work is the model's writing, \
             gated as its file says.",
            opts.skill
        );
        return Ok(());
    }
    let dir = opts
        .dir
        .canonicalize()
        .map_err(|e| format!("{}: {e}", opts.dir.display()))?;
    let store = Arc::new(Store::in_memory(Config::default()));
    let started = Instant::now();
    let ingested = store.ingest_directories(std::slice::from_ref(&dir), |_, _, _| {}, || false);
    let state = store.state();
    println!(
        "skill {} ({file}) over {}: {} files, {} headlines, ingested in {:.0} ms; today is {}",
        opts.skill,
        dir.display(),
        ingested.files,
        state.node_count() - state.files.len(),
        started.elapsed().as_secs_f64() * 1e3,
        opts.today
    );
    let notes = Notes::new(store.clone(), Arc::new(Privacy::default()));
    for (tool, scan) in tools {
        let input = ScanInput {
            today: opts.today,
            file: None,
            inbox: opts.inbox.clone(),
        };
        let started = Instant::now();
        let report = scans::run(&notes, scan, &input)?;
        println!(
            "{tool} (scan {}): {} found in {} headlines, {:.1} ms",
            scan.name(),
            report.findings.len(),
            report.looked_at,
            started.elapsed().as_secs_f64() * 1e3
        );
        print(&report, opts.examples);
    }
    Ok(())
}
