//! The sandbox every command of `run_command` runs in: the kernel, not the argv parser,
//! decides what a command can read, write and reach.
//!
//! Chosen: Landlock and namespaces, set up by the module itself between `fork` and `exec`
//! (no helper program, no package to install, no setuid binary). Bubblewrap would give the
//! same walls but is a program users must install and keep on `PATH`, and would sit between
//! the module and the processes it kills by group; seccomp filters were not needed, since
//! Landlock denies mounts and `ptrace` and the network namespace leaves no network.
//!
//! Each command's process, before it runs the program:
//! 1. enters a user, mount and (unless the command may use the network) network namespace
//!    of its own, mapped to the user's own ids: the network namespace has no interface but
//!    a loopback that is down, and abstract Unix sockets are per network namespace;
//! 2. covers `/tmp`, `/var/tmp`, `/run` and `/dev/shm` with empty file systems of its own,
//!    so no socket of the user's session (Emacs's server, an SSH or GPG agent, Docker's) can
//!    be reached by its path, and its scratch files vanish with it;
//! 3. mounts, over each notes directory, the [`view`] of it: the notes as the notes layer
//!    shows them (private parts absent, secrets redacted, no version-control history);
//!    the other directories commands may run in are mounted back where they were;
//! 4. restricts itself with Landlock: read (and run) the system's directories, the
//!    directories commands may run in and the views; write only its own `/tmp`, the null
//!    devices and the directories the user made writable; no TCP unless allowed; no signals
//!    to, and no `ptrace` of, processes outside the sandbox (Emacs); no mounts.
//!
//! Everything between `fork` and `exec` is plain system calls on buffers prepared before the
//! fork: a multi-threaded process may not allocate there.

pub mod view;

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What one command may see and do beyond the system's files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Each notes directory (its real path) and the view mounted over it.
    pub views: Vec<(PathBuf, PathBuf)>,
    /// Directories read (and run from) as they are: the other roots.
    pub reads: Vec<PathBuf>,
    /// Directories the command may write in (the user's writable directories).
    pub writes: Vec<PathBuf>,
    /// Whether the command may use the network.
    pub network: bool,
}

/// The directories every command reads and runs programs from.
const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/nix/store",
    "/proc",
];

/// The files of `/etc` programs need to start, name users and read their data (never
/// `/etc/shadow` and its kind, which root could otherwise read).
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/alternatives",
    "/etc/magic",
    "/etc/magic.mime",
    "/etc/mime.types",
    "/etc/gitconfig",
    "/etc/inputrc",
    "/etc/terminfo",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/default/locale",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
];

/// Devices every command may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Directories covered by an empty file system of the command's own (its scratch space).
const SCRATCH: &[&str] = &["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// The scratch directories a command may write in, unless a directory of the policy lies
/// under one (Landlock's rights pass down to everything mounted below).
const SCRATCH_RW: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

impl Policy {
    /// Every directory mounted in the sandbox.
    fn mounted(&self) -> impl Iterator<Item = &PathBuf> {
        self.reads
            .iter()
            .chain(&self.writes)
            .chain(self.views.iter().map(|(notes, _)| notes))
    }

    /// The scratch directories the command may write in (the first is its `HOME` and
    /// `TMPDIR`): those with no directory of the policy under them.
    pub fn scratch(&self) -> Vec<&'static str> {
        SCRATCH_RW
            .iter()
            .copied()
            .filter(|s| !self.mounted().any(|d| d.starts_with(s)))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Landlock, by its system calls (linux/landlock.h).

mod landlock {
    pub const CREATE_RULESET_VERSION: u32 = 1;
    pub const RULE_PATH_BENEATH: libc::c_int = 1;

    pub const EXECUTE: u64 = 1 << 0;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const READ_FILE: u64 = 1 << 2;
    pub const READ_DIR: u64 = 1 << 3;
    pub const MAKE_CHAR: u64 = 1 << 6;
    pub const MAKE_BLOCK: u64 = 1 << 11;
    pub const TRUNCATE: u64 = 1 << 14;
    pub const IOCTL_DEV: u64 = 1 << 15;

    pub const NET_BIND_TCP: u64 = 1 << 0;
    pub const NET_CONNECT_TCP: u64 = 1 << 1;
    pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
    pub const SCOPE_SIGNAL: u64 = 1 << 1;

    /// The rights a rule on a file (not a directory) may hold.
    pub const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
    pub const READ_EXEC: u64 = EXECUTE | READ_FILE | READ_DIR;

    #[repr(C)]
    pub struct RulesetAttr {
        pub handled_access_fs: u64,
        pub handled_access_net: u64,
        pub scoped: u64,
    }

    #[repr(C, packed)]
    pub struct PathBeneathAttr {
        pub allowed_access: u64,
        pub parent_fd: i32,
    }

    /// The file-system rights the kernel's ABI `abi` knows.
    pub fn fs_rights(abi: i32) -> u64 {
        let mut rights = (1 << 13) - 1;
        if abi >= 2 {
            rights |= 1 << 13; // REFER
        }
        if abi >= 3 {
            rights |= TRUNCATE;
        }
        if abi >= 5 {
            rights |= IOCTL_DEV;
        }
        rights
    }

    /// The size of the ruleset attribute the ABI reads.
    pub fn attr_size(abi: i32) -> usize {
        match abi {
            ..=3 => 8,
            4 | 5 => 16,
            _ => 24,
        }
    }
}

/// The Landlock ABI version of the running kernel (0: none, or Landlock off).
pub fn landlock_abi() -> i32 {
    // SAFETY: the version query takes no attribute and writes nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<landlock::RulesetAttr>(),
            0usize,
            landlock::CREATE_RULESET_VERSION,
        )
    };
    v.max(0) as i32
}

/// Whether commands can be sandboxed here: `Ok` with the Landlock ABI, or why not. Found
/// once, by running `true` in the sandbox.
pub fn available() -> Result<i32, String> {
    static FOUND: OnceLock<Result<i32, String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let abi = landlock_abi();
            if abi < 1 {
                return Err("the kernel offers no Landlock (Linux 5.13 or later with \
                            Landlock enabled, e.g. lsm=landlock,…)"
                    .into());
            }
            let prepared = Prepared::new(&Policy::default(), Path::new("/"), abi)
                .map_err(|e| format!("the sandbox cannot be prepared: {e}"))?;
            let mut cmd = std::process::Command::new("true");
            cmd.env_clear()
                .env("PATH", "/usr/bin:/bin")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            prepared.apply(&mut cmd);
            match cmd.status() {
                Ok(s) if s.success() => Ok(abi),
                Ok(s) => Err(format!("a sandboxed test command failed ({s})")),
                Err(e) => Err(format!(
                    "the kernel refused the sandbox ({e}): user namespaces may be off \
                     (sysctl kernel.unprivileged_userns_clone or user.max_user_namespaces)"
                )),
            }
        })
        .clone()
}

// ---------------------------------------------------------------------------------------------
// The set-up, prepared before the fork.

/// One bind mount: a directory opened before the scratch file systems cover it, mounted at
/// `target` (whose missing ancestors are made first).
struct Bind {
    source: CString,
    target: CString,
    ancestors: Vec<CString>,
}

/// A Landlock rule: a path and the rights on it (masked to the ABI's; a file gets only
/// file rights).
struct Rule {
    path: CString,
    rights: u64,
}

/// Everything the child does between `fork` and `exec`, as C strings and numbers.
pub struct Prepared {
    abi: i32,
    network: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    scratch: Vec<CString>,
    binds: Vec<Bind>,
    cwd: CString,
    rules: Vec<Rule>,
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
}

fn c_str(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

impl Prepared {
    /// The set-up of `policy` for a command run in `cwd`, on Landlock ABI `abi`.
    pub fn new(policy: &Policy, cwd: &Path, abi: i32) -> io::Result<Prepared> {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut binds: Vec<(PathBuf, PathBuf)> = Vec::new();
        let in_view = |p: &Path| policy.views.iter().any(|(notes, _)| p.starts_with(notes));
        for dir in policy.reads.iter().chain(&policy.writes) {
            // A directory inside a notes directory is seen through its view.
            if !in_view(dir) {
                binds.push((dir.clone(), dir.clone()));
            }
        }
        for (notes, view) in &policy.views {
            binds.push((view.clone(), notes.clone()));
        }
        // A command with the network needs the resolver's configuration, which
        // systemd-resolved keeps under /run (covered by the scratch file systems): its
        // directory alone comes back.
        if policy.network {
            if let Some(dir) = std::fs::canonicalize("/etc/resolv.conf")
                .ok()
                .filter(|real| SCRATCH.iter().any(|s| real.starts_with(s)))
                .and_then(|real| real.parent().map(Path::to_path_buf))
            {
                binds.push((dir.clone(), dir));
            }
        }
        // Outer directories first, so an inner mount lands on top.
        binds.sort_by_key(|(_, target)| target.components().count());
        binds.dedup_by(|a, b| a.1 == b.1);
        let binds = binds
            .iter()
            .map(|(source, target)| {
                let ancestors = target
                    .ancestors()
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .skip(1)
                    .map(c_path)
                    .collect::<io::Result<Vec<_>>>()?;
                Ok(Bind {
                    source: c_path(source)?,
                    target: c_path(target)?,
                    ancestors,
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        let all = landlock::fs_rights(abi) & !(landlock::MAKE_CHAR | landlock::MAKE_BLOCK);
        let device =
            landlock::READ_FILE | landlock::WRITE_FILE | landlock::TRUNCATE | landlock::IOCTL_DEV;
        let mut rules: Vec<Rule> = Vec::new();
        let mut rule = |path: &Path, rights: u64| -> io::Result<()> {
            rules.push(Rule {
                path: c_path(path)?,
                rights,
            });
            Ok(())
        };
        for dir in SYSTEM_DIRS {
            rule(Path::new(dir), landlock::READ_EXEC)?;
        }
        for file in ETC_FILES {
            rule(Path::new(file), landlock::READ_FILE | landlock::READ_DIR)?;
        }
        for device_path in DEVICES {
            rule(Path::new(device_path), device)?;
        }
        for dir in policy.scratch() {
            rule(Path::new(dir), all)?;
        }
        for dir in path_dirs() {
            rule(&dir, landlock::READ_EXEC)?;
        }
        for dir in &policy.reads {
            rule(dir, landlock::READ_EXEC)?;
        }
        for (notes, _) in &policy.views {
            rule(notes, landlock::READ_EXEC)?;
        }
        for dir in &policy.writes {
            rule(dir, all)?;
        }
        Ok(Prepared {
            abi,
            network: policy.network,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            scratch: SCRATCH.iter().map(|s| c_str(s)).collect(),
            binds,
            cwd: c_path(cwd)?,
            rules,
        })
    }

    /// Make `cmd` enter this sandbox before it runs its program.
    pub fn apply(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: `enter` makes only system calls on the prepared buffers: no allocation,
        // no lock, as the child of a multi-threaded process requires.
        unsafe {
            cmd.pre_exec(move || self.enter());
        }
    }

    /// In the child, between fork and exec: enter the namespaces, mount, restrict.
    fn enter(&self) -> io::Result<()> {
        let mut flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS;
        if !self.network {
            flags |= libc::CLONE_NEWNET;
        }
        check(unsafe { libc::unshare(flags) })?;
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // Nothing mounted here leaks back to the user's namespace.
        check(unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            )
        })?;
        // The sources are opened before the scratch file systems may cover them.
        let mut fds = [-1i32; MAX_BINDS];
        if self.binds.len() > MAX_BINDS {
            return Err(io::Error::from_raw_os_error(libc::E2BIG));
        }
        for (fd, bind) in fds.iter_mut().zip(&self.binds) {
            *fd = unsafe {
                libc::open(
                    bind.source.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            check(*fd)?;
        }
        for dir in &self.scratch {
            let r = unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    dir.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    c"size=256m,mode=1777".as_ptr().cast(),
                )
            };
            if r != 0 && errno() != libc::ENOENT {
                return Err(io::Error::last_os_error());
            }
        }
        for (fd, bind) in fds.iter().zip(&self.binds) {
            for dir in &bind.ancestors {
                let r = unsafe { libc::mkdir(dir.as_ptr(), 0o755) };
                if r != 0 && errno() != libc::EEXIST {
                    return Err(io::Error::last_os_error());
                }
            }
            let mut source = [0u8; 40];
            fd_path(*fd, &mut source);
            check(unsafe {
                libc::mount(
                    source.as_ptr().cast(),
                    bind.target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                )
            })?;
            unsafe { libc::close(*fd) };
        }
        // The working directory was entered before the mounts: enter it again, in the view.
        check(unsafe { libc::chdir(self.cwd.as_ptr()) })?;
        self.restrict()
    }

    /// Landlock: the rules, then no new privileges, then the restriction itself.
    fn restrict(&self) -> io::Result<()> {
        let handled = landlock::fs_rights(self.abi);
        let attr = landlock::RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if self.network || self.abi < 4 {
                0
            } else {
                landlock::NET_BIND_TCP | landlock::NET_CONNECT_TCP
            },
            scoped: if self.abi >= 6 {
                landlock::SCOPE_ABSTRACT_UNIX_SOCKET | landlock::SCOPE_SIGNAL
            } else {
                0
            },
        };
        let ruleset = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const landlock::RulesetAttr,
                landlock::attr_size(self.abi),
                0u32,
            )
        } as i32;
        check(ruleset)?;
        for rule in &self.rules {
            let fd = unsafe { libc::open(rule.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            if fd < 0 {
                continue; // Not on this system.
            }
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            let is_dir = unsafe { libc::fstat(fd, &mut st) } == 0
                && (st.st_mode & libc::S_IFMT) == libc::S_IFDIR;
            let mut rights = rule.rights & handled;
            if !is_dir {
                rights &= landlock::FILE_RIGHTS;
            }
            let beneath = landlock::PathBeneathAttr {
                allowed_access: rights,
                parent_fd: fd,
            };
            let r = unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    ruleset,
                    landlock::RULE_PATH_BENEATH,
                    &beneath as *const landlock::PathBeneathAttr,
                    0u32,
                )
            };
            unsafe { libc::close(fd) };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
        unsafe { libc::close(ruleset) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The most directories one command mounts.
const MAX_BINDS: usize = 64;

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(r: i32) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Write `bytes` to the file `path` (a `/proc` file), without allocating.
fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    unsafe { libc::close(fd) };
    if n != bytes.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `/proc/self/fd/FD` into `out`, NUL-terminated, without allocating.
fn fd_path(fd: i32, out: &mut [u8; 40]) {
    let prefix = b"/proc/self/fd/";
    out[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 12];
    let mut n = fd.max(0) as u32;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[prefix.len() + i] = digits[len - 1 - i];
    }
    out[prefix.len() + len] = 0;
}

/// The directories of our `PATH` that are not system directories (`~/.local/bin`…): the
/// programs there may run, and read their own directory. A version manager's `shims`
/// (`~/.pyenv/shims`) run the manager from the directory it lives in, which comes too. The
/// home directory itself, and relative entries, are never among them.
fn path_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.is_absolute())
        .filter(|d| !SYSTEM_DIRS.iter().any(|s| d.starts_with(s)))
        .filter(|d| Some(d) != home.as_ref() && d != Path::new("/"))
        .filter(|d| d.is_dir())
        .collect();
    if let Some(home) = &home {
        let managers: Vec<PathBuf> = dirs
            .iter()
            .filter(|d| d.ends_with("shims"))
            .filter_map(|d| d.strip_prefix(home).ok()?.components().next())
            .map(|first| home.join(first))
            .filter(|m| {
                m.file_name()
                    .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
            })
            .collect();
        dirs.extend(managers);
    }
    dirs
}

#[cfg(test)]
mod tests;
