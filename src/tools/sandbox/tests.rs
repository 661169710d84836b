//! The sandbox's walls, tried with real processes under the running kernel.

use super::*;
use std::path::{Path, PathBuf};

#[test]
fn the_kernel_offers_the_sandbox() {
    // The test machines (and CI's) run a kernel with Landlock and user namespaces: a
    // sandbox that silently went missing would turn every wall below into a skip.
    let abi = available().expect("Landlock and user namespaces");
    assert!(abi >= 1, "{abi}");
}

#[test]
fn fd_paths_are_written_without_allocating() {
    let mut out = [0u8; 40];
    fd_path(1234, &mut out);
    assert_eq!(&out[..19], b"/proc/self/fd/1234\0");
    fd_path(0, &mut out);
    assert_eq!(&out[..16], b"/proc/self/fd/0\0");
}

use crate::notes::{Notes, Privacy};
use crate::store::{Config, Store};
use crate::tools::shell::{run, run_seeing, ShellConfig};
use std::sync::Arc;

/// A home with notes (a private subtree, a private file, a secret, a `.git`, a backup, a
/// link out) and a project beside them; the shell's roots are both, the notes seen through
/// their view.
struct Home {
    _dir: tempfile::TempDir,
    notes: PathBuf,
    project: PathBuf,
    config: ShellConfig,
    layer: Notes,
}

const KEY: &str = "sk-proj-Zq8xW2vR7tY5uI3oP1aS9dF6gH4jK0lM";

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let notes = root.join("notes");
    let project = root.join("project");
    std::fs::create_dir_all(notes.join(".git")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        notes.join("tasks.org"),
        format!("* TODO Buy milk\n* Health :private:\nPRIVATE-DIAGNOSIS\n* Keys\nopenai {KEY}\n"),
    )
    .unwrap();
    std::fs::write(notes.join("diary.org"), "* Dear diary\nDIARY-CANARY\n").unwrap();
    std::fs::write(notes.join(".git/config"), "GIT-CANARY\n").unwrap();
    std::fs::write(root.join("outside.txt"), "OUTSIDE-CANARY\n").unwrap();
    std::os::unix::fs::symlink(root.join("outside.txt"), notes.join("link.txt")).unwrap();
    std::fs::write(project.join("README"), "project readme\n").unwrap();
    let mut config = ShellConfig::new(vec![notes.clone(), project.clone()]);
    config.notes_dirs = vec![notes.clone()];
    config.view_dir = Some(root.join("state/view"));
    let privacy = Privacy::new(["private".to_string()], ["diary.org".to_string()]);
    let layer = Notes::new(
        Arc::new(Store::in_memory(Config::default())),
        Arc::new(privacy),
    );
    Home {
        _dir: dir,
        notes,
        project,
        config,
        layer,
    }
}

impl Home {
    fn run(&self, line: &str, cwd: &Path) -> String {
        let cwd = cwd.to_string_lossy();
        match run_seeing(&self.config, Some(&self.layer), line, Some(&cwd), None) {
            Ok(out) | Err(out) => out,
        }
    }
}

#[test]
fn commands_see_the_notes_as_the_notes_layer_shows_them() {
    let h = home();
    let out = h.run("cat tasks.org", &h.notes);
    assert!(out.starts_with("exit status 0"), "{out}");
    assert!(out.contains("Buy milk"), "{out}");
    assert!(out.contains("[a private subtree is left out]"), "{out}");
    assert!(out.contains("[REDACTED:"), "{out}");
    for (line, dir) in [
        ("cat tasks.org", &h.notes),
        ("grep -r -o . .", &h.notes),
        ("ls -la", &h.notes),
        ("cat diary.org", &h.notes),
        ("cat link.txt", &h.notes),
        ("cat .git/config", &h.notes),
        ("git log -p", &h.notes),
        ("grep -R CANARY ..", &h.project),
    ] {
        let out = h.run(line, dir);
        let joined: String = out.lines().map(|l| l.trim_end()).collect();
        for secret in [
            "PRIVATE-DIAGNOSIS",
            "DIARY-CANARY",
            "GIT-CANARY",
            "OUTSIDE-CANARY",
            "diary.org",
            KEY,
            "Zq8xW2vR7tY5",
        ] {
            if line.contains(secret) {
                continue; // The command's own words, echoed in its error.
            }
            assert!(!joined.contains(secret), "{line}: {secret} in {out}");
        }
        // One character a line cannot rebuild the key either.
        let chars: String = out
            .lines()
            .filter_map(|l| l.rsplit(':').next())
            .filter(|c| c.chars().count() == 1)
            .collect();
        assert!(!chars.contains("Zq8xW2vR7tY5"), "{line}: {chars}");
    }
    let out = h.run("git status", &h.notes);
    assert!(out.contains("not a git repository"), "{out}");
    assert!(out.contains("no version-control history"), "{out}");
}

#[test]
fn the_view_follows_the_files() {
    let h = home();
    assert!(h.run("cat tasks.org", &h.notes).contains("Buy milk"));
    std::fs::write(h.notes.join("tasks.org"), "* TODO Buy bread\n").unwrap();
    let out = h.run("cat tasks.org", &h.notes);
    assert!(out.contains("Buy bread") && !out.contains("milk"), "{out}");
    std::fs::write(h.notes.join("new.org"), "* Fresh\n").unwrap();
    assert!(h.run("ls", &h.notes).contains("new.org"));
    std::fs::remove_file(h.notes.join("new.org")).unwrap();
    assert!(!h.run("ls", &h.notes).contains("new.org"));
    // A file made private leaves the view.
    std::fs::write(
        h.notes.join("tasks.org"),
        "#+FILETAGS: :private:\n* secret plan\n",
    )
    .unwrap();
    let out = h.run("cat tasks.org", &h.notes);
    assert!(!out.contains("secret plan"), "{out}");
}

#[test]
fn the_kernel_denies_what_the_sandbox_does_not_grant() {
    let h = home();
    // Reads outside the roots and the system's files.
    let out = h.run("cat ../outside.txt", &h.project);
    assert!(!out.contains("OUTSIDE-CANARY"), "{out}");
    let out = h.run("cat /etc/hostname", &h.project);
    assert!(out.contains("Permission denied"), "{out}");
    assert!(out.contains("the kernel denied an access"), "{out}");
    let out = h.run("cat /etc/shadow", &h.project);
    assert!(
        out.contains("Permission denied") || out.contains("No such file"),
        "{out}"
    );
    // No writes in the roots, nor in the notes.
    let out = h.run("touch made-here", &h.project);
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!h.project.join("made-here").exists());
    let out = h.run("touch made-here", &h.notes);
    assert!(!out.starts_with("exit status 0"), "{out}");
    assert!(!h.notes.join("made-here").exists());
    // Its own /tmp: writable, empty, gone afterwards.
    // (Here the roots are under /tmp, so the scratch space is /var/tmp.)
    let marker = format!("org-agent-sandbox-{}", std::process::id());
    let out = h.run(
        &format!("touch /var/tmp/{marker} /dev/shm/{marker}"),
        &h.project,
    );
    assert!(out.starts_with("exit status 0"), "{out}");
    assert!(!Path::new("/var/tmp").join(&marker).exists());
    let out = h.run(&format!("touch /tmp/{marker}"), &h.project);
    assert!(out.contains("Permission denied"), "{out}");
    // Its scratch space starts empty; the session's sockets under /run are not there.
    let out = h.run("ls -A /var/tmp", &h.project);
    assert!(out.starts_with("exit status 0\n(no output)"), "{out}");
    let out = h.run("ls -A /run", &h.project);
    assert!(!out.starts_with("exit status 0"), "{out}");
    // No signal reaches Emacs (here: this test process).
    let out = h.run(&format!("kill -0 {}", std::process::id()), &h.project);
    assert!(!out.starts_with("exit status 0"), "{out}");
    // The project is read as it is.
    assert!(h.run("cat README", &h.project).contains("project readme"));
}

#[test]
fn the_network_is_off_unless_the_command_may_use_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut h = home();
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a system python3 (Debian's python3 package)");
    let probe = format!(
        "{python} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
    );
    let out = h.run(&probe, &h.project);
    assert!(!out.contains("connected\n"), "{out}");
    h.config.network = vec![vec![python.into()]];
    let out = h.run(&probe, &h.project);
    assert!(out.contains("connected"), "{out}");
}

#[test]
fn git_in_a_project_runs_no_program_its_configuration_names() {
    let h = home();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&h.project)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["-c", "user.email=a@b", "-c", "user.name=a", "add", "README"]);
    git(&[
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-qm",
        "one",
    ]);
    let witness = h.project.join("fsmonitor-ran");
    let hook = h.project.join("monitor.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", witness.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&["config", "core.fsmonitor", &hook.to_string_lossy()]);
    git(&["config", "alias.st", "!touch alias-ran"]);
    let out = h.run("git status", &h.project);
    assert!(out.starts_with("exit status 0"), "{out}");
    assert!(!witness.exists(), "{out}");
    // Unsandboxed too, the configuration says nothing.
    let mut plain = h.config.clone();
    plain.sandbox = crate::tools::shell::Sandboxing::Off;
    plain.notes_dirs.clear();
    let out = run(
        &plain,
        "git status",
        Some(&h.project.to_string_lossy()),
        None,
    )
    .unwrap();
    assert!(out.starts_with("exit status 0"), "{out}");
    assert!(!witness.exists(), "{out}");
}

#[test]
fn a_call_may_write_only_in_the_directory_it_named() {
    let h = home();
    let set = crate::tools::ToolSet::shell(h.config.clone());
    let call = |args: serde_json::Value| match set.registry.call(&h.layer, "run_command", &args) {
        Ok(out) => out,
        Err(e) => e.to_string(),
    };
    let build = h.project.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let cwd = h.project.to_string_lossy().into_owned();
    let out = call(serde_json::json!({"command": "touch build/out.o", "cwd": cwd}));
    assert!(out.contains("Permission denied"), "{out}");
    let out = call(serde_json::json!({
        "command": "touch build/out.o", "cwd": cwd, "writes": build.to_string_lossy()
    }));
    assert!(out.starts_with("exit status 0"), "{out}");
    assert!(build.join("out.o").exists());
    // Only there: not beside it, and never in the notes.
    let out = call(serde_json::json!({
        "command": "touch beside.o", "cwd": cwd, "writes": build.to_string_lossy()
    }));
    assert!(out.contains("Permission denied"), "{out}");
    let out = call(serde_json::json!({
        "command": "touch planted.org", "cwd": h.notes.to_string_lossy(),
        "writes": h.notes.to_string_lossy()
    }));
    assert!(out.contains("cannot write in the notes"), "{out}");
    assert!(!h.notes.join("planted.org").exists());
}
