//! These tests spawn real processes (coreutils, findutils' xargs).

use super::*;
use crate::notes::Privacy;
use crate::store::{Config, Store};
use serde_json::json;

fn config(root: &Path) -> ShellConfig {
    ShellConfig {
        timeout: Duration::from_secs(10),
        ..ShellConfig::new(vec![root.to_path_buf()])
    }
}

/// The processes alive now (not zombies) whose command line has `marker`.
fn alive_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(path.join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if cmdline.contains(marker) && !zombie {
            found.push(cmdline);
        }
    }
    found
}

/// Wait up to 3 s for the processes with `marker` to be gone (SIGKILL is not instant).
fn gone(marker: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        if alive_with(marker).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_environment_is_scrubbed() {
    // SAFETY (edition 2021: safe to call): set once, before the commands run; nothing in
    // this test binary reads these names.
    std::env::set_var("OPENAI_API_KEY", "sk-test-not-a-real-key");
    std::env::set_var("GITHUB_TOKEN", "ghp_notarealtoken");
    std::env::set_var("ORG_AGENT_TEST_PASSWORD", "hunter2");
    let dir = tempfile::tempdir().unwrap();
    let out = run(&config(dir.path()), "env", None, None).unwrap();
    assert!(out.starts_with("exit status 0\n"), "{out}");
    for secret in [
        "OPENAI_API_KEY",
        "sk-test",
        "GITHUB_TOKEN",
        "ghp_",
        "PASSWORD",
        "hunter2",
    ] {
        assert!(!out.contains(secret), "{secret} in {out}");
    }
    assert!(out.contains("TERM=dumb"), "{out}");
    assert!(out.contains("PATH="), "{out}");
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once('=').map(|(n, _)| n))
        .collect();
    for name in names {
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "TZ",
                "TERM",
                "TMPDIR",
                "PAGER",
                "GIT_PAGER"
            ]
            .contains(&name)
                || name.starts_with("LC_")
                || name.starts_with("GIT_CONFIG_")
                || name == "GIT_TERMINAL_PROMPT",
            "{name} was passed on"
        );
    }
}

#[test]
fn a_timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.timeout = Duration::from_millis(500);
    // xargs forks the sleep: a grandchild of ours, in the pipeline's group.
    let started = Instant::now();
    let err = run(&cfg, "echo 31.41592 | xargs sleep", None, None).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        err.contains("ran longer than 0.5 s and was killed"),
        "{err}"
    );
    assert!(gone("31.41592"), "{:?}", alive_with("31.41592"));
}

#[test]
fn cancelling_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    let canceller = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        canceller.cancel();
    });
    let started = Instant::now();
    let err = run(
        &config(dir.path()),
        "echo 27.18281 | xargs sleep",
        None,
        Some(&cancel),
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("cancelled"), "{err}");
    assert!(gone("27.18281"), "{:?}", alive_with("27.18281"));
}

#[test]
fn what_a_finished_command_leaves_running_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    // perl forks a sleep and exits at once: the sleep is left in the group.
    let out = run(
        &config(dir.path()),
        "perl -e 'fork or exec \"sleep\", \"14.14213\"; print \"forked\"'",
        None,
        None,
    )
    .unwrap();
    assert_eq!(out, "exit status 0\nstdout:\nforked");
    assert!(gone("14.14213"), "{:?}", alive_with("14.14213"));
}

#[test]
fn output_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.output_cap = 1000;
    let out = run(&cfg, "yes | head -c 100000", None, None).unwrap();
    assert!(
        out.contains("[… 99000 more bytes cut]"),
        "{}",
        &out[out.len() - 80..]
    );
    let kept = out.matches("y\n").count();
    assert_eq!(kept, 500, "{out}");
}

#[test]
fn the_working_directory_stays_inside_the_roots() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
    let cfg = config(root.path());
    let real_root = std::fs::canonicalize(root.path()).unwrap();
    let out = run(&cfg, "pwd", None, None).unwrap();
    assert!(out.contains(&format!("{}\n", real_root.display())), "{out}");
    let out = run(&cfg, "pwd", Some("sub"), None).unwrap();
    assert!(
        out.contains(&format!("{}\n", real_root.join("sub").display())),
        "{out}"
    );
    for cwd in [
        "/",
        "..",
        "sub/../..",
        "escape",
        outside.path().to_str().unwrap(),
    ] {
        let err = run(&cfg, "pwd", Some(cwd), None).unwrap_err();
        assert!(err.contains("outside the directories"), "{cwd}: {err}");
    }
    let err = run(&cfg, "pwd", Some("missing"), None).unwrap_err();
    assert!(err.contains("cannot run in"), "{err}");
    let none = ShellConfig {
        roots: vec![root.path().join("nowhere")],
        ..cfg
    };
    assert!(run(&none, "pwd", None, None)
        .unwrap_err()
        .contains("no directory to run in"));
}

#[test]
fn stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    // cat with no file reads stdin: it must see its end at once, not wait on ours.
    let started = Instant::now();
    let out = run(&config(dir.path()), "wc -c", None, None).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(out.starts_with("exit status 0\nstdout:\n0\n"), "{out}");
}

#[test]
fn joins_follow_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let out = run(&cfg, "false && echo no; echo yes || echo no2", None, None).unwrap();
    assert_eq!(out, "exit status 0\nstdout:\nyes\n");
    let out = run(&cfg, "false || echo ran", None, None).unwrap();
    assert_eq!(out, "exit status 0\nstdout:\nran\n");
    let out = run(&cfg, "true && false", None, None).unwrap();
    assert_eq!(out, "exit status 1\n(no output)");
    let out = run(&cfg, "printf 'b\\na\\n' | sort | head -1", None, None).unwrap();
    assert_eq!(out, "exit status 0\nstdout:\na\n");
    let out = run(&cfg, "no-such-program-here x", None, None).unwrap();
    assert!(
        out.starts_with("exit status 127\nstderr:\nno-such-program-here: cannot run"),
        "{out}"
    );
    let out = run(&cfg, "ls no-such-file", None, None).unwrap();
    assert!(
        out.starts_with("exit status 2\nstderr:\nls: cannot access"),
        "{out}"
    );
}

#[test]
fn only_exact_forms_run_with_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    let err = run(&cfg, "echo hi > out.txt", None, None).unwrap_err();
    assert!(err.contains("a redirection"), "{err}");
    assert!(!dir.path().join("out.txt").exists());
    cfg.exact_forms = vec!["echo hi > out.txt".into()];
    // The sandbox lets it write only where the user said commands may write.
    let out = run(&cfg, "echo hi > out.txt", None, None).unwrap();
    assert!(out.contains("Permission denied"), "{out}");
    cfg.writable = vec![dir.path().to_path_buf()];
    let out = run(&cfg, "echo hi > out.txt", None, None).unwrap();
    assert_eq!(out, "exit status 0\n(no output)");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "hi\n"
    );
}

#[test]
fn the_tool_runs_through_the_registry_with_the_turns_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let set = ToolSet::shell(config(dir.path()));
    let notes = Notes::new(
        Arc::new(Store::in_memory(Config::default())),
        Arc::new(Privacy::default()),
    );
    let out = set
        .registry
        .call(&notes, RUN_COMMAND, &json!({"command": "echo hello"}))
        .unwrap();
    assert_eq!(out, "exit status 0\nstdout:\nhello\n");
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = set
        .registry
        .call_cancellable(
            &notes,
            RUN_COMMAND,
            &json!({"command": "sleep 5"}),
            Some(cancel),
        )
        .unwrap_err();
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert!(set
        .registry
        .call(&notes, RUN_COMMAND, &json!({"cwd": "."}))
        .is_err());
}
