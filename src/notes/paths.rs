//! Paths as every check must see them: resolved before they are judged.
//!
//! A path from the model, a note's file name or a privacy pattern may hide where it really
//! points: `~`, `..`, `.`, doubled or trailing slashes, and symbolic links anywhere along it.
//! [`resolve`] turns it into a [`Resolved`]: the path as given (absolute, written plainly) and
//! the real path (every link followed, as the kernel would), so confinement ([`Roots`]),
//! protection ([`Protected`]) and privacy judge the file that would really be read or
//! written. A path that does not exist yet is resolved as far as it exists and the rest is
//! appended; a link that points to nothing is refused, since what it would create is out of
//! sight. Names are bytes on Unix: a name that is not UTF-8 is kept (the store's keys write
//! its bytes as U+10FF80+byte, see [`filename`], and [`resolve`] reads such keys back).
//!
//! Errors name only the path as the caller gave it, never a link's target: a refusal must not
//! tell the model where a link it cannot see points.

use crate::store::filename;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Links followed in one resolution before it is called a loop (Linux's own limit).
const MAX_LINKS: usize = 40;

/// A path resolved for judging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The path as given, made absolute and written plainly (no `.`, `..` or doubled
    /// slashes), links not followed.
    given: PathBuf,
    /// The path with every link followed.
    real: PathBuf,
    /// Whether the real path exists.
    exists: bool,
}

impl Resolved {
    /// The path as given (absolute, plainly written).
    pub fn given(&self) -> &Path {
        &self.given
    }

    /// The real path: what would be read or written.
    pub fn real(&self) -> &Path {
        &self.real
    }

    pub fn exists(&self) -> bool {
        self.exists
    }

    /// Whether the path goes somewhere else than it says (a link on the way).
    pub fn is_redirected(&self) -> bool {
        self.given != self.real
    }

    /// The real path as the store writes file names (non-UTF-8 bytes kept).
    pub fn real_key(&self) -> String {
        filename::key(&self.real).into_owned()
    }

    /// The given path as the store writes file names.
    pub fn given_key(&self) -> String {
        filename::key(&self.given).into_owned()
    }

    /// How to show it to the user: `given → real` when a link redirects it, else the path.
    pub fn shown(&self) -> String {
        if self.is_redirected() {
            format!("{} → {}", self.given_key(), self.real_key())
        } else {
            self.real_key()
        }
    }
}

/// Why a path cannot be resolved. Each names the path as the caller gave it, nothing else.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path {0:?} contains a NUL byte")]
    Nul(String),
    #[error("the path {0:?} is relative: give an absolute path, or one starting with ~/")]
    Relative(String),
    #[error("the path {0:?} names another user's home (~user): use ~/ or an absolute path")]
    OtherUser(String),
    #[error("the path {0:?} goes through a symbolic link that points to nothing")]
    Dangling(String),
    #[error("the path {0:?} goes through too many symbolic links (a loop)")]
    Loop(String),
    #[error("the path {0:?} goes through a file as if it were a directory")]
    NotADirectory(String),
    #[error("the path {0:?} goes up (..) out of a directory that does not exist")]
    UpFromMissing(String),
    #[error("the path {path:?} cannot be read: {message}")]
    Unreadable { path: String, message: String },
}

/// The user's home directory, from `HOME` (`/` when unset, so that `~` never means the
/// working directory).
pub fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Resolve `path` (a store key or a path as the model wrote it: absolute or `~/…`; relative
/// paths are refused) with `home` for `~`.
pub fn resolve(path: &str, home: &Path) -> Result<Resolved, PathError> {
    resolve_from(path, home, None)
}

/// Like [`resolve`], with relative paths taken from `base` (absolute) when one is given.
pub fn resolve_from(path: &str, home: &Path, base: Option<&Path>) -> Result<Resolved, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let raw = filename::to_path(path);
    if raw.as_os_str().as_bytes().contains(&0) {
        return Err(PathError::Nul(path.to_string()));
    }
    let absolute = absolute(&raw, path, home, base)?;
    let given = lexical(&absolute);
    let (real, exists) = walk(&absolute, path)?;
    Ok(Resolved {
        given,
        real,
        exists,
    })
}

/// The real path of the absolute `path`, or `None` when it cannot be resolved (relative,
/// dangling, a loop…). For privacy, which must judge a note by where it really is.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    walk(path, "").ok().map(|(real, _)| real)
}

/// `raw` made absolute: `~` and `~/…` from `home`, a relative path from `base`.
fn absolute(
    raw: &Path,
    shown: &str,
    home: &Path,
    base: Option<&Path>,
) -> Result<PathBuf, PathError> {
    let bytes = raw.as_os_str().as_bytes();
    if bytes.first() == Some(&b'~') {
        let rest = &bytes[1..];
        if !rest.is_empty() && rest[0] != b'/' {
            return Err(PathError::OtherUser(shown.to_string()));
        }
        let rest = rest.strip_prefix(b"/").unwrap_or(rest);
        let home = if home.is_absolute() {
            home.to_path_buf()
        } else {
            PathBuf::from("/").join(home)
        };
        return Ok(home.join(OsStr::from_bytes(rest)));
    }
    if raw.is_absolute() {
        return Ok(raw.to_path_buf());
    }
    match base {
        Some(b) if b.is_absolute() => Ok(b.join(raw)),
        _ => Err(PathError::Relative(shown.to_string())),
    }
}

/// The absolute `path` written plainly, by its text alone: `.` and doubled or trailing
/// slashes dropped, `..` taking off the component before it (never above `/`).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

enum Part {
    Up,
    Name(OsString),
}

/// Push the components of `path` so that the first is popped first.
fn push_parts(pending: &mut Vec<Part>, path: &Path) {
    let parts: Vec<Part> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Part::Name(n.to_os_string())),
            Component::ParentDir => Some(Part::Up),
            _ => None,
        })
        .collect();
    pending.extend(parts.into_iter().rev());
}

/// ELOOP: too many levels of symbolic links.
const ELOOP: i32 = 40;
/// ENOTDIR: a component used as a directory is not one.
const ENOTDIR: i32 = 20;

/// Follow the absolute `path` component by component as the kernel does, each link's target
/// spliced in where the link was (so `link/..` is the parent of the link's target, not the
/// link's directory). Once a component does not exist, the rest is appended as written. The
/// real path, and whether it exists.
fn walk(path: &Path, shown: &str) -> Result<(PathBuf, bool), PathError> {
    let unreadable = |e: std::io::Error| match e.raw_os_error() {
        Some(ELOOP) => PathError::Loop(shown.to_string()),
        Some(ENOTDIR) => PathError::NotADirectory(shown.to_string()),
        _ => PathError::Unreadable {
            path: shown.to_string(),
            message: e.kind().to_string(),
        },
    };
    let mut pending = Vec::new();
    push_parts(&mut pending, path);
    let mut real = PathBuf::from("/");
    let mut links = 0usize;
    let mut missing = false;
    while let Some(part) = pending.pop() {
        let name = match part {
            Part::Up if missing => return Err(PathError::UpFromMissing(shown.to_string())),
            Part::Up => {
                real.pop();
                continue;
            }
            Part::Name(n) => n,
        };
        let next = real.join(&name);
        if missing {
            real = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(PathError::Loop(shown.to_string()));
                }
                // A link to nothing would let a write create a file out of sight.
                if let Err(e) = std::fs::metadata(&next) {
                    return Err(match e.kind() {
                        std::io::ErrorKind::NotFound => PathError::Dangling(shown.to_string()),
                        _ => unreadable(e),
                    });
                }
                let target = std::fs::read_link(&next).map_err(unreadable)?;
                if target.is_absolute() {
                    real = PathBuf::from("/");
                }
                push_parts(&mut pending, &target);
            }
            Ok(meta) => {
                if !meta.is_dir() && !pending.is_empty() {
                    return Err(PathError::NotADirectory(shown.to_string()));
                }
                real = next;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing = true;
                real = next;
            }
            Err(e) => return Err(unreadable(e)),
        }
    }
    Ok((real, !missing))
}

/// Whether `path` is `dir` or lies under it, component by component (`/a/bc` is not under
/// `/a/b`), comparing names exactly or, with `fold_case`, with ASCII case folded.
fn is_under(path: &Path, dir: &Path, fold_case: bool) -> bool {
    let mut p = path.components();
    for d in dir.components() {
        match p.next() {
            Some(c) if same_name(c.as_os_str(), d.as_os_str(), fold_case) => {}
            _ => return false,
        }
    }
    true
}

fn same_name(a: &OsStr, b: &OsStr, fold_case: bool) -> bool {
    if fold_case {
        a.as_bytes().eq_ignore_ascii_case(b.as_bytes())
    } else {
        a == b
    }
}

/// The directories the file tools and edits may reach: `org-agent-directories` and the
/// roots the policy names, each resolved (a root that is a link counts as its target).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Roots {
    dirs: Vec<PathBuf>,
}

impl Roots {
    /// Roots from directory names (absolute or `~/…`; others are left out, as are those that
    /// cannot be resolved).
    pub fn new<S: AsRef<str>>(dirs: impl IntoIterator<Item = S>, home: &Path) -> Roots {
        let mut roots = Roots::default();
        for d in dirs {
            roots.add(d.as_ref(), home);
        }
        roots
    }

    /// Add the directory `dir` (absolute or `~/…`); false when it cannot be resolved.
    pub fn add(&mut self, dir: &str, home: &Path) -> bool {
        match resolve(dir, home) {
            Ok(r) => {
                if !self.dirs.contains(&r.real) {
                    self.dirs.push(r.real);
                }
                true
            }
            Err(_) => false,
        }
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Whether the real path of `r` lies in one of the roots. Names are compared exactly: on
    /// a file system that ignores case, a path spelt differently is refused, never let in.
    pub fn contains(&self, r: &Resolved) -> bool {
        self.dirs.iter().any(|d| is_under(&r.real, d, false))
    }
}

/// How a protected entry covers paths beyond its names (see [`names_protected`]).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cover {
    /// This path and everything under it (a protected entry's real path, when a link leads
    /// there; the user's `custom-file`, init file…).
    Tree(PathBuf),
    /// org-agent's state directory and everything under it, but for the roots inside it (the
    /// demo's notes live in `~/.emacs.d/org-agent/demo-notes/`).
    State(PathBuf, Vec<PathBuf>),
}

/// The protected files: the one list both the file tools ([`Protected`]) and the command
/// gate (`run_command`, [`names_protected`]) refuse. Credentials and keys, the Emacs init
/// files (which run at the next start), `.git` internals (hooks run, remotes hold tokens),
/// system password files.
///
/// An entry is a run of names matched wherever it stands in a path (`.ssh` in
/// `/srv/backup/.ssh/x`, `.emacs.d/init.el` in `~/.emacs.d/init.el`), with everything under
/// it; a trailing `*` matches a name prefix (`.authinfo*`). `~/` and `/` say where the entry
/// usually lives: the file tools also protect the real path it leads to when it is a link
/// (`~/.aws` linked to `~/keys` protects `~/keys`). Entries without them (`.git`, `id_rsa`)
/// are names alone. Names are compared with ASCII case folded (see [`Protected`]).
#[rustfmt::skip]
pub const PROTECTED: &[&str] = &[
    // Credentials and keys.
    "~/.ssh", "~/.gnupg", "~/.netrc", "~/.authinfo*", "~/.pgpass", "~/.aws", "~/.config/gh",
    "~/.docker", "~/.kube", "~/.config/git/credentials", "~/.git-credentials",
    "~/.password-store", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa",
    // The Emacs init files.
    "~/.emacs", "~/.emacs.el", "~/.emacs.elc", "~/.emacs.d/init.el", "~/.emacs.d/init.elc",
    "~/.emacs.d/early-init.el", "~/.emacs.d/early-init.elc", "~/.emacs.d/custom.el",
    "~/.config/emacs/init.el", "~/.config/emacs/init.elc", "~/.config/emacs/early-init.el",
    "~/.config/emacs/early-init.elc", "~/.config/emacs/custom.el",
    // Repositories' internals.
    ".git",
    // System files.
    "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d",
];

/// The names of a [`PROTECTED`] entry, without where it usually lives.
fn entry_names(entry: &str) -> &str {
    entry
        .strip_prefix("~/")
        .or_else(|| entry.strip_prefix('/'))
        .unwrap_or(entry)
}

/// Whether `path` names a protected file by its names alone, as written (relative or
/// absolute, links not followed): some run of its names is a [`PROTECTED`] entry (ASCII case
/// folded), or its last name is a skill file's (see [`is_skill_file`]). The command gate
/// judges every word of a command by this; the file tools judge a path's given and real
/// forms by it and by the [`Protected`] covers.
pub fn names_protected(path: &Path) -> bool {
    let names: Vec<&[u8]> = path
        .components()
        .map(|c| c.as_os_str().as_bytes())
        .collect();
    if names.last().is_some_and(|n| is_skill_file(n)) {
        return true;
    }
    PROTECTED.iter().any(|entry| {
        let entry: Vec<&str> = entry_names(entry).split('/').collect();
        names.windows(entry.len()).any(|run| {
            run.iter().zip(&entry).enumerate().all(|(i, (name, want))| {
                match want.strip_suffix('*').filter(|_| i + 1 == entry.len()) {
                    Some(prefix) => {
                        name.len() >= prefix.len()
                            && name[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
                    }
                    None => name.eq_ignore_ascii_case(want.as_bytes()),
                }
            })
        })
    })
}

/// Paths that are always denied, whatever the roots: what [`names_protected`] names (the
/// [`PROTECTED`] list, skill files), the real paths the list's entries lead to, org-agent's
/// own state and the user's extra files.
///
/// Names are compared with ASCII case folded on every platform: denying `~/.SSH` on a
/// case-sensitive Linux file system costs nothing, while letting it through on a file
/// system that ignores case (macOS's default, FAT, exFAT mounts) would give away the keys.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protected {
    covers: Vec<Cover>,
}

impl Protected {
    /// The protected paths of `home`, the state directory `state` and `extra` paths (the
    /// user's `custom-file`, init file…), each also by its real path when a link leads there.
    pub fn new<S: AsRef<str>>(
        home: &Path,
        state: Option<&str>,
        extra: impl IntoIterator<Item = S>,
    ) -> Protected {
        let mut p = Protected::default();
        for entry in PROTECTED {
            let base = if entry.starts_with("~/") {
                home
            } else if entry.starts_with('/') {
                Path::new("/")
            } else {
                continue;
            };
            let names = entry_names(entry);
            match names.strip_suffix('*') {
                // Each file of that prefix, in case it is a link.
                Some(prefix) => {
                    let (dir, prefix) = match prefix.rsplit_once('/') {
                        Some((dir, prefix)) => (base.join(dir), prefix),
                        None => (base.to_path_buf(), prefix),
                    };
                    let Ok(files) = std::fs::read_dir(&dir) else {
                        continue;
                    };
                    for file in files.flatten() {
                        let name = file.file_name();
                        let name = name.as_bytes();
                        if name.len() >= prefix.len()
                            && name[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
                        {
                            p.add_tree(&dir.join(file.file_name()));
                        }
                    }
                }
                None => p.add_tree(&base.join(names)),
            }
        }
        if let Some(Ok(r)) = state.map(|s| resolve(s, home)) {
            p.push(Cover::State(r.given, Vec::new()));
            p.push(Cover::State(r.real, Vec::new()));
        }
        for path in extra.into_iter().filter(|e| !e.as_ref().is_empty()) {
            if let Ok(r) = resolve(path.as_ref(), home) {
                p.push(Cover::Tree(r.given));
                p.push(Cover::Tree(r.real));
            }
        }
        p
    }

    /// Let the roots inside the state directory (notes kept there) be reached: the state
    /// directory stays protected around them.
    fn carve_out(&mut self, roots: &Roots) {
        for cover in &mut self.covers {
            if let Cover::State(state, inside) = cover {
                *inside = roots
                    .dirs()
                    .iter()
                    .filter(|root| is_under(root, state, false) && root.as_path() != state)
                    .cloned()
                    .collect();
            }
        }
    }

    /// Protect the real path of `path` when a link leads elsewhere (its given path is
    /// protected by its names).
    fn add_tree(&mut self, path: &Path) {
        let given = lexical(path);
        if let Some(real) = real_path(&given) {
            if real != given {
                self.push(Cover::Tree(real));
            }
        }
    }

    fn push(&mut self, cover: Cover) {
        if !self.covers.contains(&cover) {
            self.covers.push(cover);
        }
    }

    /// Whether `r` is protected: by its given or its real path.
    pub fn covers(&self, r: &Resolved) -> bool {
        [&r.given, &r.real].into_iter().any(|p| self.covers_path(p))
    }

    fn covers_path(&self, path: &Path) -> bool {
        if names_protected(path) {
            return true;
        }
        self.covers.iter().any(|cover| match cover {
            Cover::Tree(t) => is_under(path, t, true),
            Cover::State(state, inside) => {
                is_under(path, state, true) && !inside.iter().any(|r| is_under(path, r, false))
            }
        })
    }
}

/// Whether a file of this name is a skill (`SKILL.org`, `NAME.skill.org`, `SKILL.md`): a
/// user skill may run Elisp, so the agent never writes one through an edit, a new note or a
/// file tool, wherever it lies (skill directories are often inside the notes). Its one way
/// to write a skill is `create_skill`, which asks every time.
fn is_skill_file(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"SKILL.org")
        || name.eq_ignore_ascii_case(b"SKILL.md")
        || (name.len() > b".skill.org".len()
            && name[name.len() - b".skill.org".len()..].eq_ignore_ascii_case(b".skill.org"))
}

/// Why a path is refused, by rule: never naming the path, nor where a link leads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Unresolved(PathError),
    #[error(
        "that path is protected (credentials, Emacs init files, .git internals, org-agent's \
         state, skill files): the agent may never read or write it"
    )]
    Protected,
    #[error(
        "that path is outside the directories the agent may use (org-agent-directories and \
         the roots the user's policy names)"
    )]
    OutsideRoots,
    #[error(
        "that file is private (org-agent-private-files, or its tags): the agent may not read \
         or change it"
    )]
    Private,
}

/// Where paths may go: the home directory `~` means, the roots, the protected paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    home: PathBuf,
    roots: Roots,
    protected: Protected,
}

impl Confinement {
    /// Confinement to `roots` (directory names), protecting the usual paths under `home`,
    /// the state directory `state` and the `extra` protected paths.
    pub fn new<R: AsRef<str>, E: AsRef<str>>(
        home: &Path,
        roots: impl IntoIterator<Item = R>,
        state: Option<&str>,
        extra: impl IntoIterator<Item = E>,
    ) -> Confinement {
        let roots = Roots::new(roots, home);
        let mut protected = Protected::new(home, state, extra);
        protected.carve_out(&roots);
        Confinement {
            home: home.to_path_buf(),
            roots,
            protected,
        }
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn roots(&self) -> &Roots {
        &self.roots
    }

    /// Add a root the policy names (absolute or `~/…`); false when it cannot be resolved.
    pub fn add_root(&mut self, dir: &str) -> bool {
        let home = self.home.clone();
        let added = self.roots.add(dir, &home);
        self.protected.carve_out(&self.roots);
        added
    }

    pub fn protected(&self) -> &Protected {
        &self.protected
    }

    /// `path` resolved (absolute or `~/…`).
    pub fn resolve(&self, path: &str) -> Result<Resolved, PathError> {
        resolve(path, &self.home)
    }

    /// `path` resolved, if it is not protected and lies in the roots.
    pub fn judge(&self, path: &str) -> Result<Resolved, Refusal> {
        let r = self.resolve(path).map_err(Refusal::Unresolved)?;
        self.admits(&r)?;
        Ok(r)
    }

    /// Whether the resolved `r` may be reached: not protected, inside the roots.
    pub fn admits(&self, r: &Resolved) -> Result<(), Refusal> {
        if self.protected.covers(r) {
            return Err(Refusal::Protected);
        }
        if !self.roots.contains(r) {
            return Err(Refusal::OutsideRoots);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    /// A temporary directory, resolved (the temporary directory may itself be a link).
    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        Tree { _dir: dir, root }
    }

    fn s(p: &Path) -> String {
        filename::key(p).into_owned()
    }

    #[test]
    fn tilde_dots_and_slashes_are_written_plainly() {
        let t = tree();
        let home = t.root.join("home");
        std::fs::create_dir_all(home.join("notes/sub")).unwrap();
        let r = resolve("~/notes//sub/./../sub/", &home).unwrap();
        assert_eq!(r.real(), home.join("notes/sub"));
        assert_eq!(r.given(), home.join("notes/sub"));
        assert!(r.exists() && !r.is_redirected());
        assert_eq!(resolve("~", &home).unwrap().real(), home);
        // `..` never climbs above the root.
        assert_eq!(resolve("/../../", &home).unwrap().real(), Path::new("/"));
        // Missing parts are appended as written; going up out of one is refused.
        let r = resolve("~/notes/new/file.org", &home).unwrap();
        assert_eq!(r.real(), home.join("notes/new/file.org"));
        assert!(!r.exists());
        assert!(matches!(
            resolve("~/notes/new/../../x", &home),
            Err(PathError::UpFromMissing(_))
        ));
        assert!(matches!(
            resolve("~bob/x", &home),
            Err(PathError::OtherUser(_))
        ));
        assert_eq!(resolve("", &home), Err(PathError::Empty));
        assert!(matches!(
            resolve("notes/a.org", &home),
            Err(PathError::Relative(_))
        ));
        let r = resolve_from("sub/../a.org", &home, Some(&home.join("notes"))).unwrap();
        assert_eq!(r.real(), home.join("notes/a.org"));
        assert!(matches!(resolve("/a\0b", &home), Err(PathError::Nul(_))));
    }

    #[test]
    fn links_are_followed_where_they_stand() {
        let t = tree();
        let (a, b) = (t.root.join("a"), t.root.join("b"));
        std::fs::create_dir_all(a.join("deep")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("target.org"), "* x\n").unwrap();
        symlink(b.join("target.org"), a.join("link.org")).unwrap();
        // A relative link, and `..` after a link: the parent of its target.
        symlink("../../b", a.join("deep/up")).unwrap();
        let r = resolve(&s(&a.join("link.org")), &t.root).unwrap();
        assert_eq!(r.real(), b.join("target.org"));
        assert_eq!(r.given(), a.join("link.org"));
        assert!(r.is_redirected());
        assert_eq!(
            r.shown(),
            format!("{} → {}", s(&a.join("link.org")), s(&b.join("target.org")))
        );
        let r = resolve(&s(&a.join("deep/up/target.org")), &t.root).unwrap();
        assert_eq!(r.real(), b.join("target.org"));
        let r = resolve(&s(&a.join("deep/up/../a/deep")), &t.root).unwrap();
        assert_eq!(r.real(), a.join("deep"));
        // A new file under a linked directory is judged where it would be created.
        let r = resolve(&s(&a.join("deep/up/new.org")), &t.root).unwrap();
        assert_eq!(r.real(), b.join("new.org"));
        assert!(!r.exists());
        // A file used as a directory.
        assert!(matches!(
            resolve(&s(&b.join("target.org/x")), &t.root),
            Err(PathError::NotADirectory(_))
        ));
    }

    #[test]
    fn dangling_links_and_loops_are_refused_without_naming_the_target() {
        let t = tree();
        symlink(
            t.root.join("secret-nowhere.org"),
            t.root.join("dangling.org"),
        )
        .unwrap();
        symlink(t.root.join("loop2"), t.root.join("loop1")).unwrap();
        symlink(t.root.join("loop1"), t.root.join("loop2")).unwrap();
        symlink("self", t.root.join("self")).unwrap();
        let e = resolve(&s(&t.root.join("dangling.org")), &t.root).unwrap_err();
        assert!(matches!(e, PathError::Dangling(_)));
        assert!(!e.to_string().contains("secret-nowhere"), "{e}");
        for l in ["loop1", "self", "loop1/x"] {
            let e = resolve(&s(&t.root.join(l)), &t.root).unwrap_err();
            assert!(matches!(e, PathError::Loop(_)), "{l}: {e:?}");
        }
        assert_eq!(real_path(&t.root.join("dangling.org")), None);
    }

    #[test]
    fn names_that_are_not_utf8_are_kept() {
        let t = tree();
        let name = OsStr::from_bytes(b"caf\xE9.org");
        let file = t.root.join(name);
        std::fs::write(&file, "* x\n").unwrap();
        symlink(&file, t.root.join("link.org")).unwrap();
        let key = s(&file);
        assert!(filename::is_escaped(&key));
        let r = resolve(&key, &t.root).unwrap();
        assert_eq!(r.real(), file);
        assert!(r.exists());
        assert_eq!(r.real_key(), key);
        let r = resolve(&s(&t.root.join("link.org")), &t.root).unwrap();
        assert_eq!(r.real().file_name(), Some(name));
    }

    #[test]
    fn case_is_exact_for_roots() {
        let t = tree();
        std::fs::create_dir_all(t.root.join("Notes")).unwrap();
        let roots = Roots::new([s(&t.root.join("Notes"))], &t.root);
        let inside = resolve(&s(&t.root.join("Notes/a.org")), &t.root).unwrap();
        let other = resolve(&s(&t.root.join("notes/a.org")), &t.root).unwrap();
        assert!(roots.contains(&inside));
        assert!(!roots.contains(&other));
        // Siblings sharing a prefix are not inside.
        let sibling = resolve(&s(&t.root.join("Notes2/a.org")), &t.root).unwrap();
        assert!(!roots.contains(&sibling));
    }

    #[test]
    fn roots_confine_by_the_real_path() {
        let t = tree();
        let notes = t.root.join("notes");
        let outside = t.root.join("outside");
        std::fs::create_dir_all(&notes).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x.org"), "").unwrap();
        symlink(outside.join("x.org"), notes.join("link.org")).unwrap();
        symlink(&notes, t.root.join("notes-link")).unwrap();
        // A root given through a link is its target.
        let c = Confinement::new(&t.root, [s(&t.root.join("notes-link"))], None, [""; 0]);
        assert_eq!(c.roots().dirs(), std::slice::from_ref(&notes));
        assert!(c.judge(&s(&notes.join("a.org"))).is_ok());
        assert!(c.judge(&s(&t.root.join("notes-link/a.org"))).is_ok());
        assert_eq!(
            c.judge(&s(&notes.join("link.org"))),
            Err(Refusal::OutsideRoots)
        );
        assert_eq!(
            c.judge(&s(&notes.join("../outside/x.org"))),
            Err(Refusal::OutsideRoots)
        );
        let empty = Confinement::new(&t.root, [""; 0], None, [""; 0]);
        assert_eq!(
            empty.judge(&s(&notes.join("a.org"))),
            Err(Refusal::OutsideRoots)
        );
    }

    #[test]
    fn protected_names_are_runs_of_names_anywhere() {
        for p in [
            ".ssh",
            "notes/.ssh/x",
            "/home/u/.SSH",
            ".emacs.d/init.el",
            "a/.config/gh",
            ".authinfo",
            ".authinfo.gpg",
            "../../etc/shadow",
            ".git/config",
            "skills/x/SKILL.org",
            "id_dsa",
        ] {
            assert!(names_protected(Path::new(p)), "{p}");
        }
        for p in [
            ".sshfoo",
            "init.el",
            ".emacs.d/notes.org",
            "gh",
            ".gitignore",
            "etc/passwd",
            "shadow",
            "id_rsa.pub",
            ".github/x",
        ] {
            assert!(!names_protected(Path::new(p)), "{p}");
        }
    }

    #[test]
    fn protected_paths_are_denied_whatever_the_roots() {
        let t = tree();
        let home = t.root.join("home");
        let state = home.join("state");
        for d in [
            ".ssh",
            ".emacs.d",
            ".config/emacs",
            "notes/.git",
            "keys",
            "secret",
        ] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join("keys/id_rsa"), "KEY").unwrap();
        // ~/.authinfo.gpg as a link elsewhere.
        std::fs::write(home.join("secret/auth.gpg"), "KEY").unwrap();
        symlink(home.join("secret/auth.gpg"), home.join(".authinfo.gpg")).unwrap();
        // A link in the notes to the keys, and ~/.aws as a link elsewhere.
        symlink(home.join(".ssh"), home.join("notes/ssh")).unwrap();
        symlink(home.join("keys"), home.join(".aws")).unwrap();
        let custom = home.join("my-custom.el");
        let c = Confinement::new(&home, ["~/", "/"], Some(&s(&state)), [s(&custom)]);
        let denied = [
            "~/.ssh/id_ed25519",
            "~/.ssh",
            "~/notes/ssh/id_rsa",
            "~/.gnupg/pubring.kbx",
            "~/.authinfo",
            "~/.authinfo.gpg",
            "~/.netrc",
            "~/.aws/credentials",
            "~/keys/id_rsa",
            "~/.config/gh/hosts.yml",
            "~/.docker/config.json",
            "~/.kube/config",
            "~/.emacs",
            "~/.emacs.el",
            "~/.emacs.d/init.el",
            "~/.emacs.d/early-init.el",
            "~/.emacs.d/custom.el",
            "~/.config/emacs/init.el",
            "~/.config/emacs/early-init.el",
            "~/notes/.git/config",
            "~/notes/.git",
            "/srv/repo/.git/hooks/pre-commit",
            "~/state/store.log",
            "~/my-custom.el",
            // Case folded on every platform (see `Protected`).
            "~/.SSH/id_rsa",
            "~/.AuthInfo",
            "~/notes/.GIT/HEAD",
            // Skills may run Elisp: only create_skill, which always asks, writes one.
            "~/notes/skills/tidy/SKILL.org",
            "~/notes/skills/tidy/skill.org",
            "~/notes/tidy.skill.org",
            "~/notes/imported/SKILL.md",
            // The command gate's names too: one list (PROTECTED) for both.
            "~/.pgpass",
            "~/.docker/other.json",
            "~/.config/git/credentials",
            "~/.authinfo-work",
            "~/secret/auth.gpg",
            "~/notes/id_ed25519",
            "/srv/backup/.ssh/authorized_keys",
            "/srv/dotfiles/.emacs.d/init.el",
            "/etc/shadow",
            "/etc/sudoers.d/x",
        ];
        for p in denied {
            assert_eq!(c.judge(p), Err(Refusal::Protected), "{p}");
        }
        // Notes kept inside the state directory (the demo's) are a root of their own; the
        // rest of the state directory stays protected, and so do `.git` internals there.
        let demo = Confinement::new(
            &home,
            [s(&state.join("demo-notes"))],
            Some(&s(&state)),
            [""; 0],
        );
        assert!(demo.judge("~/state/demo-notes/tasks.org").is_ok());
        assert_eq!(demo.judge("~/state/approvals.org"), Err(Refusal::Protected));
        assert_eq!(
            demo.judge("~/state/demo-notes/.git/config"),
            Err(Refusal::Protected)
        );
        let allowed = [
            "~/notes/a.org",
            "~/.emacs.d/notes.org",
            "~/.sshfoo",
            "~/.github/x",
            "~/notes/gitignore.org",
            "~/statement.org",
            "~/notes/skills/SKILL.org.txt",
            "~/notes/my-skill.org",
            "~/notes/.skill.org",
            "~/notes/id_rsa.pub",
            "~/secret",
            "/etc/hosts",
        ];
        for p in allowed {
            assert!(c.judge(p).is_ok(), "{p}: {:?}", c.judge(p));
        }
    }
}
