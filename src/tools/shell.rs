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
}

impl ShellConfig {
    /// Commands in `roots`, 30 seconds, 20,000 bytes of output, no exact forms.
    pub fn new(roots: Vec<PathBuf>) -> ShellConfig {
        ShellConfig {
            roots,
            timeout: Duration::from_secs(30),
            output_cap: 20_000,
            exact_forms: Vec::new(),
        }
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
        ],
        body: Box::new(move |_: &Notes, args: &Args| {
            let line = args.str("command").unwrap_or_default();
            run(&config, line, args.str("cwd"), args.cancel())
        }),
    }
}

/// Run `line` under `config` in `cwd` (default: the first root); `cancel` stops it. `Ok`:
/// the exit status and output of a run that finished; `Err`: why it did not run or finish
/// (with what it printed until then).
pub fn run(
    config: &ShellConfig,
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
    let run = Run {
        dir,
        env: scrubbed_environment(),
        deadline: Instant::now() + config.timeout,
        cancel,
        stdout: Capture::new(config.output_cap),
        stderr: Capture::new(config.output_cap),
    };
    let ended = run.line(&command);
    let report = run.report();
    match ended {
        Ended::Exited(status) => Ok(format!("{}\n{report}", describe(status))),
        Ended::TimedOut => Err(format!(
            "the command ran longer than {} s and was killed\n{report}",
            config.timeout.as_secs_f64()
        )),
        Ended::Cancelled => Err(format!("the command was stopped (cancelled)\n{report}")),
    }
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
            match cmd.spawn() {
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
