//! The shell tool, `run_command`: a command line run as real processes, never by a shell.
//!
//! The line is parsed into plain commands ([`crate::gates::command::parse`]); each runs with
//! [`std::process::Command`], pipelines connected by pipes and `&&`, `||`, `;` followed by
//! exit status. Every run:
//! - works in a directory inside the configured roots (resolved with `canonicalize` before
//!   it is checked, so `..` and symlinks cannot leave them);
//! - gets no stdin and a scrubbed environment: `PATH`, `HOME`, `LANG`, `LC_*`, `TZ` and
//!   `TERM=dumb`, nothing else (no tokens, keys, secrets or passwords);
//! - runs each pipeline in a process group of its own, killed whole (SIGKILL) on timeout,
//!   on cancellation, and once the pipeline is done (what it left running goes with it);
//! - keeps at most the output cap of stdout and of stderr.
//!
//! Whether a line may run is the gates' business ([`crate::gates::command::CommandGate`]); a
//! line that is not plain commands runs (with `/bin/sh -c`) only when it is one of
//! [`ShellConfig::exact_forms`], the lines the user's rules allow exactly.

use super::sandbox::{self, view::NotesView, Policy, Prepared};
use super::{Args, Param, ParamType, Tool, ToolSet};
use crate::gates::command::{parse, Command, Join, RUN_COMMAND};
use crate::llm::http::CancelToken;
use crate::notes::Notes;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How `run_command` runs.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// Directories commands may run in (and below); the first is the default.
    pub roots: Vec<PathBuf>,
    /// How long a whole line may run before its processes are killed.
    pub timeout: Duration,
    /// The most bytes of stdout, and of stderr, kept of a run.
    pub output_cap: usize,
    /// Lines the user's rules allow exactly although they are not plain commands (see
    /// [`crate::gates::command::Pattern::Exact`]): only these ever run with `/bin/sh -c`.
    pub exact_forms: Vec<String>,
    /// Whether commands run in the kernel's sandbox ([`super::sandbox`]): by default they
    /// do, and where there is none they do not run at all.
    pub sandbox: Sandboxing,
    /// The notes directories: a command sees them through their view.
    pub notes_dirs: Vec<PathBuf>,
    /// Where the views of the notes directories are kept (in the state directory).
    pub view_dir: Option<PathBuf>,
    /// Directories commands may write in (the user's; nothing else but their own `/tmp`).
    pub writable: Vec<PathBuf>,
    /// Commands (argv prefixes) that may use the network; no other may.
    pub network: Vec<Vec<String>>,
}

/// Whether commands run sandboxed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sandboxing {
    /// In the sandbox, or not at all (the default).
    Required,
    /// Without it: the user turned it off (`org-agent-shell-sandbox` nil).
    Off,
}

impl ShellConfig {
    /// Commands in `roots`, 30 seconds, 20,000 bytes of output, no exact forms, sandboxed,
    /// no notes directories, nothing writable, no network.
    pub fn new(roots: Vec<PathBuf>) -> ShellConfig {
        ShellConfig {
            roots,
            timeout: Duration::from_secs(30),
            output_cap: 20_000,
            exact_forms: Vec::new(),
            sandbox: Sandboxing::Required,
            notes_dirs: Vec::new(),
            view_dir: None,
            writable: Vec::new(),
            network: Vec::new(),
        }
    }

    /// Whether the command `argv` may use the network.
    fn networked(&self, argv: &[String]) -> bool {
        self.network
            .iter()
            .any(|prefix| !prefix.is_empty() && argv.starts_with(prefix))
    }
}

impl ToolSet {
    /// The shell tool alone, to be offered when the user's policy enables it (with
    /// [`crate::gates::command::CommandGate`] attached to the gates).
    pub fn shell(config: ShellConfig) -> ToolSet {
        let mut registry = super::Registry::default();
        registry.register(run_command_tool(config));
        ToolSet {
            source: "shell".into(),
            registry,
        }
    }
}

/// The `run_command` tool over `config`.
pub fn run_command_tool(config: ShellConfig) -> Tool {
    Tool {
        name: RUN_COMMAND.into(),
        description: "Run a command line in a directory of the user's and return its exit \
                      status and output. Plain commands only, joined by &&, ||, ; or |: no \
                      redirections, variables, globs, $(…) or subshells (there is no shell). \
                      Read-only commands (git status/log/diff, ls, rg, grep, cat…) run at once; \
                      others ask the user; destructive ones are refused."
            .into(),
        params: vec![
            Param::new(
                "command",
                ParamType::String,
                "The command line, e.g. \"git log --oneline -5\"",
                true,
            ),
            Param::new(
                "cwd",
                ParamType::String,
                "The directory to run in (default: the first allowed directory); relative \
                 to it when relative",
                false,
            ),
            Param::new(
                "writes",
                ParamType::String,
                "A directory the command must write in (e.g. a build directory), inside the \
                 directories commands run in and not in the notes. Commands can write \
                 nowhere else but their own /tmp; naming one asks the user",
                false,
            ),
        ],
        body: Box::new(move |notes: &Notes, args: &Args| {
            let line = args.str("command").unwrap_or_default();
            let mut config = config.clone();
            if let Some(dir) = args.str("writes").map(str::trim).filter(|d| !d.is_empty()) {
                config.writable.push(approved_write(&config, dir)?);
            }
            run_seeing(&config, Some(notes), line, args.str("cwd"), args.cancel())
        }),
    }
}

/// Run `line` under `config` in `cwd` (default: the first root); `cancel` stops it. `Ok`:
/// the exit status and output of a run that finished; `Err`: why it did not run or finish
/// (with what it printed until then). Without notes: for configurations with no notes
/// directories.
pub fn run(
    config: &ShellConfig,
    line: &str,
    cwd: Option<&str>,
    cancel: Option<&CancelToken>,
) -> Result<String, String> {
    run_seeing(config, None, line, cwd, cancel)
}

/// [`run`], the notes directories seen through `notes`.
pub fn run_seeing(
    config: &ShellConfig,
    notes: Option<&Notes>,
    line: &str,
    cwd: Option<&str>,
    cancel: Option<&CancelToken>,
) -> Result<String, String> {
    let dir = working_directory(&config.roots, cwd)?;
    let command = match parse(line) {
        Ok(c) => c,
        Err(_) if config.exact_forms.iter().any(|f| f.trim() == line.trim()) => Command {
            parts: vec![vec!["/bin/sh".into(), "-c".into(), line.trim().into()]],
            joins: Vec::new(),
        },
        Err(refusal) => return Err(refusal.reason),
    };
    let sandbox = match config.sandbox {
        Sandboxing::Off => None,
        Sandboxing::Required => Some(Sandbox::new(config, notes, &dir)?),
    };
    let mut env = scrubbed_environment();
    env.extend(git_safety(&dir));
    if let Some(s) = &sandbox {
        let scratch = s
            .policy
            .scratch()
            .first()
            .copied()
            .unwrap_or("/nonexistent");
        for name in ["HOME", "TMPDIR"] {
            env.retain(|(n, _)| n != name);
            env.push((name.into(), scratch.into()));
        }
    }
    let run = Run {
        dir,
        env,
        deadline: Instant::now() + config.timeout,
        cancel,
        stdout: Capture::new(config.output_cap),
        stderr: Capture::new(config.output_cap),
        sandbox: sandbox.as_ref(),
        config,
    };
    let ended = run.line(&command);
    let mut report = run.report();
    if let Some(s) = &sandbox {
        report.push_str(&s.note(&report));
    }
    match ended {
        Ended::Exited(status) => Ok(format!("{}\n{report}", describe(status))),
        Ended::TimedOut => Err(format!(
            "the command ran longer than {} s and was killed\n{report}",
            config.timeout.as_secs_f64()
        )),
        Ended::Cancelled => Err(format!("the command was stopped (cancelled)\n{report}")),
    }
}

/// The sandbox of one line: the kernel's ABI and what its commands may see.
struct Sandbox {
    abi: i32,
    policy: Policy,
}

impl Sandbox {
    /// The sandbox for a line run in `dir`, the views brought up to date; `Err` when there
    /// is no sandbox here, or `dir` is not in the notes as the notes layer shows them.
    fn new(config: &ShellConfig, notes: Option<&Notes>, dir: &Path) -> Result<Sandbox, String> {
        let abi = sandbox::available().map_err(|why| {
            format!(
                "run_command cannot run: commands run only in a sandbox, and {why}. \
                 (The user may turn the sandbox off with org-agent-shell-sandbox.)"
            )
        })?;
        let canonical = |dirs: &[PathBuf]| -> Vec<PathBuf> {
            dirs.iter()
                .filter_map(|d| std::fs::canonicalize(d).ok())
                .filter(|d| d.is_dir())
                .collect()
        };
        let mut policy = Policy {
            views: Vec::new(),
            reads: canonical(&config.roots),
            writes: canonical(&config.writable),
            network: false,
        };
        if !config.notes_dirs.is_empty() {
            let notes = notes.ok_or("run_command: the notes are not open")?;
            // SAFETY: getuid cannot fail.
            let uid = unsafe { libc::getuid() };
            let base = config.view_dir.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("org-agent-{uid}-views-{}", std::process::id()))
            });
            let shared = NotesView::shared(&base, &config.notes_dirs)
                .map_err(|e| format!("run_command: cannot make the notes view: {e}"))?;
            let mut view = shared
                .lock()
                .map_err(|_| "run_command: the notes view is broken (a panic)")?;
            view.refresh(notes)
                .map_err(|e| format!("run_command: cannot bring the notes view up to date: {e}"))?;
            policy.views = view.dirs().to_vec();
            for (notes_dir, view_dir) in &policy.views {
                if let Ok(rel) = dir.strip_prefix(notes_dir) {
                    if !view_dir.join(rel).is_dir() {
                        return Err("cannot run there: the notes layer does not show that \
                                    directory (it is private or protected)"
                            .into());
                    }
                }
            }
        }
        Ok(Sandbox { abi, policy })
    }

    /// The set-up of one command of the line.
    fn prepare(
        &self,
        config: &ShellConfig,
        argv: &[String],
        dir: &Path,
    ) -> std::io::Result<Prepared> {
        let mut policy = self.policy.clone();
        policy.network = config.networked(argv);
        Prepared::new(&policy, dir, self.abi)
    }

    /// What the model is told of the sandbox after a run's output: the view, when the notes
    /// were in it, and the rule, when the kernel denied something.
    fn note(&self, report: &str) -> String {
        let mut note = String::new();
        if !self.policy.views.is_empty() {
            note.push_str(
                "\n[sandbox: the notes directories are seen as the notes layer shows them: \
                 private parts absent, secrets redacted, no version-control history]",
            );
        }
        if report.contains("Permission denied") || report.contains("Operation not permitted") {
            note.push_str(
                "\n[sandbox: the kernel denied an access. Commands read only the system's \
                 files and the directories they may run in, write only their own /tmp \
                 (discarded) and the directories org-agent-shell-writable-directories \
                 names, and reach the network only when org-agent-shell-network-commands \
                 names the command]",
            );
        }
        note
    }
}

/// Git's settings that run programs, turned off whatever a repository's configuration says
/// (git reads `GIT_CONFIG_*` after every file): the file-system monitor, hooks, pagers,
/// editors, SSH, external diff, credential helpers, signature programs, and the filter,
/// diff and merge drivers and aliases the repository of `dir` defines.
fn git_safety(dir: &Path) -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = [
        ("core.fsmonitor", "false"),
        ("core.hooksPath", "/dev/null"),
        ("core.pager", "cat"),
        ("core.editor", "false"),
        ("sequence.editor", "false"),
        ("core.sshCommand", "false"),
        ("core.askPass", "false"),
        ("diff.external", ""),
        ("credential.helper", ""),
        ("gpg.program", "false"),
        ("gpg.ssh.program", "false"),
        ("gpg.x509.program", "false"),
        ("protocol.ext.allow", "never"),
        ("core.gitProxy", ""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (section, name) in repository_drivers(dir) {
        let keys: &[&str] = match section.as_str() {
            "filter" => &["clean", "smudge", "process"],
            "diff" => &["textconv", "command"],
            "merge" => &["driver"],
            _ => &[],
        };
        for key in keys {
            settings.push((format!("{section}.{name}.{key}"), String::new()));
        }
        if section == "alias" {
            settings.push((format!("alias.{name}"), String::new()));
        }
    }
    let mut env = vec![
        ("GIT_CONFIG_COUNT".to_string(), settings.len().to_string()),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        ("PAGER".to_string(), "cat".to_string()),
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
    ];
    for (i, (key, value)) in settings.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value));
    }
    env
}

/// The drivers (`filter`, `diff`, `merge` with their names) and aliases the configuration
/// of the repository around `dir` defines (its `.git/config`; a `.git` file's `gitdir:`).
fn repository_drivers(dir: &Path) -> Vec<(String, String)> {
    let Some(config) = dir.ancestors().find_map(|d| {
        let git = d.join(".git");
        if git.is_dir() {
            return Some(git.join("config"));
        }
        let text = std::fs::read_to_string(&git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        Some(d.join(target).join("config"))
    }) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(config) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut alias = false;
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            let (section, name) = header
                .split_once(char::is_whitespace)
                .map_or((header, ""), |(s, n)| (s, n.trim().trim_matches('"')));
            let section = section.to_ascii_lowercase();
            alias = section == "alias" && name.is_empty();
            if ["filter", "diff", "merge"].contains(&section.as_str()) && !name.is_empty() {
                found.push((section, name.to_string()));
            }
            continue;
        }
        if alias {
            if let Some(key) = line
                .split('=')
                .next()
                .map(str::trim)
                .filter(|k| !k.is_empty())
            {
                if !key.starts_with(['#', ';']) {
                    found.push(("alias".into(), key.to_string()));
                }
            }
        }
    }
    found
}

/// The directory `dir` a call asked to write in (approved by the user: the command gate
/// asks whenever a call names one), if it may be granted: an existing directory inside the
/// roots, outside the notes directories and the protected paths.
fn approved_write(config: &ShellConfig, dir: &str) -> Result<PathBuf, String> {
    let resolved = working_directory(&config.roots, Some(dir))
        .map_err(|e| format!("run_command cannot write there: {e}"))?;
    let in_notes = config
        .notes_dirs
        .iter()
        .filter_map(|n| std::fs::canonicalize(n).ok())
        .any(|n| resolved.starts_with(&n));
    if in_notes {
        return Err(
            "run_command cannot write in the notes: notes change through the edit \
                    tools, which show the user a diff"
                .into(),
        );
    }
    if crate::notes::paths::names_protected(&resolved) {
        return Err("run_command cannot write there: the path is protected".into());
    }
    Ok(resolved)
}

/// The directory a command runs in: `cwd` (`~/` expanded, relative to the first root) or
/// the first root, canonicalised, inside a canonicalised root.
fn working_directory(roots: &[PathBuf], cwd: Option<&str>) -> Result<PathBuf, String> {
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter_map(|r| std::fs::canonicalize(r).ok())
        .collect();
    let Some(first) = roots.first() else {
        return Err("run_command has no directory to run in (no allowed root exists)".into());
    };
    let wanted = match cwd.map(str::trim).filter(|c| !c.is_empty()) {
        None => return Ok(first.clone()),
        Some(c) => match (c.strip_prefix("~/"), std::env::var_os("HOME")) {
            (Some(rest), Some(home)) => Path::new(&home).join(rest),
            _ => first.join(c),
        },
    };
    let resolved = std::fs::canonicalize(&wanted)
        .map_err(|e| format!("cannot run in {}: {e}", wanted.display()))?;
    if !resolved.is_dir() {
        return Err(format!(
            "cannot run in {}: not a directory",
            wanted.display()
        ));
    }
    if !roots.iter().any(|root| resolved.starts_with(root)) {
        return Err(format!(
            "cannot run in {}: it is outside the directories commands may run in",
            resolved.display()
        ));
    }
    Ok(resolved)
}

/// Whether an environment variable's name says it holds a secret.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_TOKEN", "_KEY", "_SECRET"]
        .iter()
        .any(|s| upper.ends_with(s))
        || [
            "PASSWORD",
            "PASSWD",
            "API_KEY",
            "APIKEY",
            "SECRET",
            "CREDENTIAL",
        ]
        .iter()
        .any(|s| upper.contains(s))
}

/// The only environment commands get: `PATH`, `HOME`, `LANG`, `LC_*`, `TZ` of ours, and
/// `TERM=dumb`.
fn scrubbed_environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| {
            matches!(name.as_str(), "PATH" | "HOME" | "LANG" | "TZ") || name.starts_with("LC_")
        })
        .filter(|(name, _)| !secret_name(name))
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    env.push(("TERM".into(), "dumb".into()));
    env
}

/// The bytes kept of one stream, and how many were cut.
struct Capture {
    kept: Arc<Mutex<(Vec<u8>, u64)>>,
    cap: usize,
}

impl Capture {
    fn new(cap: usize) -> Capture {
        Capture {
            kept: Arc::new(Mutex::new((Vec::new(), 0))),
            cap,
        }
    }

    /// Read `from` to its end on a thread of its own, keeping up to the cap; `done` is told
    /// when it ends.
    fn drain(&self, mut from: impl Read + Send + 'static, done: mpsc::Sender<()>) {
        let kept = Arc::clone(&self.kept);
        let cap = self.cap;
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let Ok(mut kept) = kept.lock() else { break };
                let room = cap.saturating_sub(kept.0.len()).min(n);
                kept.0.extend_from_slice(&buf[..room]);
                kept.1 += (n - room) as u64;
            }
            let _ = done.send(());
        });
    }

    fn text(&self) -> String {
        let Ok(kept) = self.kept.lock() else {
            return String::new();
        };
        let mut text = String::from_utf8_lossy(&kept.0).into_owned();
        if kept.1 > 0 {
            text.push_str(&format!("\n[… {} more bytes cut]", kept.1));
        }
        text
    }
}

/// How a line (or a pipeline) ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// One run of a line.
struct Run<'c> {
    config: &'c ShellConfig,
    sandbox: Option<&'c Sandbox>,
    dir: PathBuf,
    env: Vec<(String, String)>,
    deadline: Instant,
    cancel: Option<&'c CancelToken>,
    stdout: Capture,
    stderr: Capture,
}

/// A failed spawn, as a shell reports a command it cannot run.
fn not_run() -> ExitStatus {
    ExitStatus::from_raw(127 << 8)
}

impl Run<'_> {
    /// Run the pipelines of `command` in order, each after the join before it allows.
    fn line(&self, command: &Command) -> Ended {
        let mut status = None;
        let mut start = 0;
        let mut join_before: Option<Join> = None;
        for end in 0..command.parts.len() {
            if end < command.joins.len() && command.joins[end] == Join::Pipe {
                continue;
            }
            let runs = match (join_before, status) {
                (Some(Join::And), Some(s)) => ExitStatus::success(&s),
                (Some(Join::Or), Some(s)) => !ExitStatus::success(&s),
                _ => true,
            };
            if runs {
                match self.pipeline(&command.parts[start..=end]) {
                    Ended::Exited(s) => status = Some(s),
                    stopped => return stopped,
                }
            }
            join_before = command.joins.get(end).copied();
            start = end + 1;
        }
        Ended::Exited(status.unwrap_or_else(not_run))
    }

    /// Run one pipeline in a process group of its own; its status is its last command's.
    fn pipeline(&self, argvs: &[Vec<String>]) -> Ended {
        let (done_tx, done_rx) = mpsc::channel();
        let mut children: Vec<Option<Child>> = Vec::new();
        let mut group: Option<i32> = None;
        let mut input: Option<Stdio> = None;
        let mut readers = 0;
        for (i, argv) in argvs.iter().enumerate() {
            let last = i + 1 == argvs.len();
            let mut cmd = std::process::Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .current_dir(&self.dir)
                .env_clear()
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .stdin(input.take().unwrap_or_else(Stdio::null))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(group.unwrap_or(0));
            let prepared = match self.sandbox {
                Some(sandbox) => sandbox.prepare(self.config, argv, &self.dir).map(Some),
                None => Ok(None),
            };
            let spawned = match prepared {
                Ok(Some(p)) => {
                    p.apply(&mut cmd);
                    cmd.spawn()
                }
                Ok(None) => cmd.spawn(),
                Err(e) => Err(e),
            };
            match spawned {
                Ok(mut child) => {
                    group.get_or_insert(child.id() as i32);
                    if let Some(err) = child.stderr.take() {
                        self.stderr.drain(err, done_tx.clone());
                        readers += 1;
                    }
                    match child.stdout.take() {
                        Some(out) if last => {
                            self.stdout.drain(out, done_tx.clone());
                            readers += 1;
                        }
                        Some(out) => input = Some(Stdio::from(out)),
                        None => {}
                    }
                    children.push(Some(child));
                }
                Err(e) => {
                    let message = format!("{}: cannot run: {e}\n", argv[0]);
                    self.stderr
                        .drain(std::io::Cursor::new(message), done_tx.clone());
                    readers += 1;
                    children.push(None);
                }
            }
        }
        drop(done_tx);
        let ended = self.wait(&mut children, group);
        // Output still in flight is read, unless something that left the group holds a
        // pipe open.
        let grace = Instant::now() + Duration::from_secs(1);
        for _ in 0..readers {
            let left = grace.saturating_duration_since(Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        ended
    }

    /// Wait for `children` (the group's leader first), killing the group on timeout or
    /// cancellation, and what is left of it once they are done.
    fn wait(&self, children: &mut [Option<Child>], group: Option<i32>) -> Ended {
        let mut statuses: Vec<Option<ExitStatus>> = children
            .iter()
            .map(|c| if c.is_none() { Some(not_run()) } else { None })
            .collect();
        let mut stopped = None;
        loop {
            for (child, status) in children.iter_mut().zip(statuses.iter_mut()) {
                if status.is_none() {
                    if let Some(c) = child {
                        // The leader is not reaped before the group is killed, so its id
                        // cannot name another group by then.
                        if Some(c.id() as i32) == group {
                            if exited_unreaped(c.id()) {
                                *status = Some(ExitStatus::from_raw(0));
                            }
                        } else if let Ok(Some(s)) = c.try_wait() {
                            *status = Some(s);
                        }
                    }
                }
            }
            if statuses.iter().all(Option::is_some) {
                break;
            }
            if self.cancel.is_some_and(CancelToken::is_cancelled) {
                stopped = Some(Ended::Cancelled);
                break;
            }
            if Instant::now() >= self.deadline {
                stopped = Some(Ended::TimedOut);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(pgid) = group {
            kill_group(pgid);
        }
        // Reap every child (the leader's real status comes from here).
        for (child, status) in children.iter_mut().zip(statuses.iter_mut()) {
            if let Some(c) = child {
                if let Ok(s) = c.wait() {
                    *status = Some(s);
                }
            }
        }
        match stopped {
            Some(ended) => ended,
            None => Ended::Exited(statuses.last().copied().flatten().unwrap_or_else(not_run)),
        }
    }

    fn report(&self) -> String {
        let stdout = self.stdout.text();
        let stderr = self.stderr.text();
        let mut report = String::new();
        if stdout.is_empty() && stderr.is_empty() {
            report.push_str("(no output)");
        }
        if !stdout.is_empty() {
            report.push_str(&format!("stdout:\n{stdout}"));
        }
        if !stderr.is_empty() {
            if !report.is_empty() {
                report.push('\n');
            }
            report.push_str(&format!("stderr:\n{stderr}"));
        }
        report
    }
}

/// Whether process `pid` (our child) has exited, without reaping it.
fn exited_unreaped(pid: u32) -> bool {
    // SAFETY: `info` is a plain C struct `waitid` fills in; WNOWAIT leaves the child
    // waitable, so `Child::wait` still reaps it.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() != 0
    }
}

/// SIGKILL every process of group `pgid` (gone already: nothing to do).
fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: killpg only sends a signal; a group that is gone is ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// An exit status as a shell user reads it.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "exit status unknown".into(),
    }
}

#[cfg(test)]
mod tests;
