//! Skills at scale: 50 skills (each with gate rules, three gate tests and two trigger tests)
//! beside a 100,000-headline store. Prints the time to load them all (parse, order, run
//! their tests), to judge every trigger against one changed file of the store (the Merkle
//! diff, the events, every skill's trigger), and the size of the skill catalog the system
//! prompt carries.
//!
//!   cargo run --release --example bench-skills [HEADLINES]

use org_agent::llm::estimate_tokens;
use org_agent::skills::disclosure::catalog;
use org_agent::skills::load::load_dirs;
use org_agent::skills::{changed_nodes, file_events, fires, Source};
use org_agent::store::{Config, Store};
use std::time::{Duration, Instant};

const SKILLS: usize = 50;
const RUNS: usize = 20;

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Skill `n`: a fifth each triggered on save (with a match and paths), on TODO changes, on a
/// schedule, on an interval, or only by the model.
fn skill(n: usize) -> String {
    let trigger = match n % 5 {
        0 => ":ON: model save\n:MATCH: +project/TODO|NEXT\n:PATHS: *.org".to_string(),
        1 => ":ON: model todo-change\n:MATCH: TODO=\"DONE\"".to_string(),
        2 => format!(":ON: model cron\n:SCHEDULE: {} 16 * * FRI", n % 60),
        3 => ":ON: model every\n:EVERY: 1h".to_string(),
        _ => ":ON: model user".to_string(),
    };
    let (event, expect) = match n % 5 {
        0 => ("save", "fires"),
        1 => ("todo-change", "fires"),
        2 => ("cron", "quiet"),
        3 => ("every", "fires"),
        _ => ("idle", "quiet"),
    };
    let extra = match n % 5 {
        2 => ":TIME: 2026-11-26 Thu 16:00\n",
        3 => ":ELAPSED: 2h\n",
        _ => "",
    };
    let fixture = match n % 5 {
        1 => "#+begin_example\n,* DONE Project :project:\n#+end_example\n",
        _ => "#+begin_example\n,* TODO Project :project:\n,** NEXT Step\n#+end_example\n",
    };
    let gate_test = |title: &str, state: &str, expect: &str| {
        format!(
            "** {title} :gate:\n:PROPERTIES:\n:ACTION: set_todo\n:TARGET: Project\n\
             :ARGS: state={state}\n:EXPECT: {expect}\n:END:\n\
             #+begin_example\n,* TODO Project :project:\n,** TODO Step\n#+end_example\n"
        )
    };
    format!(
        "#+TITLE: Skill {n}\n#+SKILL_NAME: skill-{n}\n\
         #+DESCRIPTION: Use for the chores of area {n}: reviews, projects and their tasks.\n\
         * Why\nBenchmark skill {n}.\n* Trigger\n:PROPERTIES:\n{trigger}\n:END:\n\
         * Prompt\nDo the chores of area {n} carefully, one edit at a time.\n\
         ** Conventions :reference:\nProjects carry the :project: tag.\n\
         * Gate\n\
         | action   | condition                    | decision | reason                   |\n\
         |----------+------------------------------+----------+--------------------------|\n\
         | set_todo | state=DONE & open-children>0 | deny     | close its children first |\n\
         | set-*    | tag=archive                  | ask      | archived notes           |\n\
         * Tests\n{}{}{}\
         ** the event fires or not :trigger:\n:PROPERTIES:\n:EVENT: {event}\n{extra}\
         :EXPECT: {expect}\n:END:\n{fixture}\
         ** a save elsewhere is judged too :trigger:\n:PROPERTIES:\n:EVENT: startup\n\
         :EXPECT: quiet\n:END:\n",
        gate_test("closing an open project is denied", "DONE", "deny"),
        gate_test("starting it is fine", "NEXT", "allow"),
        gate_test("cancelling it is fine", "CANCELLED", "allow"),
    )
}

/// A file of `per_file` headlines: projects with steps, tasks, notes.
fn note_file(f: usize, per_file: usize) -> String {
    let mut text = format!("#+TITLE: File {f}\n");
    let mut n = 0;
    while n < per_file {
        if n % 20 == 0 {
            text.push_str(&format!("* TODO Project {f}-{n} :project:\n"));
            for s in 0..4 {
                text.push_str(&format!("** TODO Step {s} of {f}-{n}\nSome notes.\n"));
            }
            n += 5;
        } else {
            text.push_str(&format!(
                "* Note {f}-{n} :tag{}:\nA body of a few words about {n}.\n",
                n % 13
            ));
            n += 1;
        }
    }
    text
}

fn main() {
    let headlines: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let per_file = 200;
    let store = Store::in_memory(Config::default());
    let started = Instant::now();
    for f in 0..headlines.div_ceil(per_file) {
        let file = format!("/memex/file-{f}.org");
        if let Err(e) = store.ingest_text(&file, &note_file(f, per_file), None, None, None) {
            eprintln!("bench-skills: {file}: {e}");
            std::process::exit(1);
        }
    }
    eprintln!(
        "bench-skills: {} headlines in {:.1} s",
        store.stats().nodes,
        started.elapsed().as_secs_f64()
    );

    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bench-skills: no temporary directory: {e}");
            std::process::exit(1);
        }
    };
    for n in 0..SKILLS {
        let folder = dir.path().join(format!("skill-{n}"));
        let written = std::fs::create_dir_all(&folder)
            .and_then(|()| std::fs::write(folder.join("SKILL.org"), skill(n)));
        if let Err(e) = written {
            eprintln!("bench-skills: cannot write skill {n}: {e}");
            std::process::exit(1);
        }
    }
    let dirs = [(dir.path().to_path_buf(), Source::User)];
    let mut loads = Vec::new();
    let mut loaded = load_dirs(&dirs, &[]);
    for _ in 0..RUNS {
        let t = Instant::now();
        loaded = load_dirs(&dirs, &[]);
        loads.push(t.elapsed());
    }
    if loaded.active.len() != SKILLS {
        eprintln!("bench-skills: inactive skills: {:?}", loaded.inactive);
        std::process::exit(1);
    }
    let tests: usize = loaded.active.iter().map(|s| s.tests.len()).sum();
    println!(
        "load {SKILLS} skills ({tests} tests run)     median {}  max {}   (target <= 100 ms)",
        ms(median(loads.clone())),
        ms(loads.iter().copied().max().unwrap_or_default())
    );

    // One file of the store changes: a task closed and a note edited, as a save brings.
    let file = "/memex/file-7.org";
    let before = store.state().files.get(file).cloned();
    let edited = note_file(7, per_file)
        .replacen("** TODO Step 1 of 7-0", "** DONE Step 1 of 7-0", 1)
        .replacen("about 9.", "about nine.", 1);
    let after = match store.parse_unstored(file, &edited) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("bench-skills: {e}");
            std::process::exit(1);
        }
    };
    let old = before.map(|d| d.nodes.clone()).unwrap_or_default();
    let mut evals = Vec::new();
    let mut fired = 0;
    for _ in 0..RUNS * 10 {
        let t = Instant::now();
        let changes = changed_nodes(&old, &after.nodes);
        fired = 0;
        for event in file_events(file, &after.nodes, &changes) {
            fired += loaded
                .active
                .iter()
                .filter(|s| fires(&s.trigger, &event))
                .count();
        }
        evals.push(t.elapsed());
    }
    let changes = changed_nodes(&old, &after.nodes);
    println!(
        "every trigger vs one changed file ({} headlines, {} changed, {} TODO changes)  \
         median {}  max {}   ({fired} firings; target <= 1 ms)",
        after.nodes.len(),
        changes.changed.len(),
        changes.todo_changed.len(),
        ms(median(evals.clone())),
        ms(evals.iter().copied().max().unwrap_or_default())
    );

    let notes = org_agent::notes::Notes::new(
        std::sync::Arc::new(Store::in_memory(Config::default())),
        std::sync::Arc::new(org_agent::notes::Privacy::default()),
    );
    let catalog = catalog(&loaded.active, &notes)
        .map(|c| c.text)
        .unwrap_or_default();
    println!(
        "skill catalog in the system prompt  {} bytes = ~{} tokens   (target <= 2,000 tokens)",
        catalog.len(),
        estimate_tokens(&catalog)
    );
}
