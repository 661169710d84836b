//! The view of the notes a command sees: each notes directory copied as the notes layer
//! shows it, mounted over the real one in the command's sandbox.
//!
//! In the view, every text file holds what `read_node` and `read_file` would show of it:
//! private subtrees cut out, private files (by name, tags, a backup's original, a hard link)
//! absent, secrets already replaced by their `[REDACTED:rule]` placeholders. Protected paths
//! and version-control directories (`.git`: its history holds every private subtree ever
//! committed) are absent, and so are binary files and links that lead out of the notes. So
//! whatever a command does with what it reads (one character a line, a key split in two,
//! hex), the private text is not there to be read.
//!
//! The view is kept current, not rebuilt per command: before a command runs, each file of
//! the notes directories is compared by its stamp (inode, size, modification and change
//! times) with the one its copy was made from, and only the files that changed are copied
//! again. New privacy rules start a new view.

use crate::notes::paths::{resolve, Protected};
use crate::notes::{Confinement, Notes, Privacy};
use crate::store::filename;
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Files larger than this are left out of the view (as `read_file` refuses them).
const MAX_FILE_BYTES: u64 = crate::tools::files::MAX_FILE_BYTES;

/// Directories no view holds: version control, whose history holds what the notes hide.
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul"];

/// What a file's copy was made from: when any of it changes, the file is copied again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
        }
    }
}

/// What one file came to in the view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Copied {
    /// Copied as the notes layer shows it.
    Shown,
    /// Left out: private, binary, too large, unreadable.
    LeftOut,
}

/// What a refresh did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refresh {
    /// Files in the view.
    pub shown: usize,
    /// Files of the notes directories left out of it (private, protected, binary, links out).
    pub left_out: usize,
    /// Files copied again by this refresh, and copies removed.
    pub copied: usize,
    pub removed: usize,
    pub took: Duration,
}

/// The views of the notes directories, under one directory of the state.
pub struct NotesView {
    /// The notes directories as configured (to know a view of others is another view).
    configured: Vec<PathBuf>,
    /// Each notes directory (real path) and its view.
    dirs: Vec<(PathBuf, PathBuf)>,
    copies: HashMap<PathBuf, (Stamp, Copied)>,
    /// Each directory of the notes met so far, and whether the view shows it.
    judged_dirs: HashMap<PathBuf, bool>,
    privacy: Option<Privacy>,
}

impl NotesView {
    /// The views of `notes_dirs` (those that exist), kept in `base` (made if missing, and
    /// emptied: a view is only trusted once this process made it).
    pub fn new(base: &Path, notes_dirs: &[PathBuf]) -> io::Result<NotesView> {
        let mut dirs = Vec::new();
        for (i, dir) in notes_dirs.iter().enumerate() {
            let Ok(real) = std::fs::canonicalize(dir) else {
                continue;
            };
            if !real.is_dir() || dirs.iter().any(|(d, _): &(PathBuf, PathBuf)| d == &real) {
                continue;
            }
            dirs.push((real, base.join(i.to_string())));
        }
        if base.exists() {
            std::fs::remove_dir_all(base)?;
        }
        std::fs::create_dir_all(base)?;
        set_private(base)?;
        for (_, view) in &dirs {
            std::fs::create_dir_all(view)?;
        }
        Ok(NotesView {
            configured: notes_dirs.to_vec(),
            dirs,
            copies: HashMap::new(),
            judged_dirs: HashMap::new(),
            privacy: None,
        })
    }

    /// The view kept in `base` of `notes_dirs`: one per `base` in this process, shared by
    /// every configuration and turn, made anew when the notes directories change.
    pub fn shared(base: &Path, notes_dirs: &[PathBuf]) -> io::Result<Arc<Mutex<NotesView>>> {
        static VIEWS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<NotesView>>>>> = OnceLock::new();
        let mut views = VIEWS
            .get_or_init(Mutex::default)
            .lock()
            .map_err(|_| io::Error::other("the views' registry is broken (a panic)"))?;
        if let Some(view) = views.get(base) {
            let same = view.lock().is_ok_and(|v| v.configured == notes_dirs);
            if same {
                return Ok(view.clone());
            }
        }
        let view = Arc::new(Mutex::new(NotesView::new(base, notes_dirs)?));
        views.insert(base.to_path_buf(), view.clone());
        Ok(view)
    }

    /// Each notes directory (real path) and its view.
    pub fn dirs(&self) -> &[(PathBuf, PathBuf)] {
        &self.dirs
    }

    /// Bring the views up to date with the files and `notes`' rules.
    pub fn refresh(&mut self, notes: &Notes) -> io::Result<Refresh> {
        let started = Instant::now();
        let mut report = Refresh::default();
        if self.privacy.as_ref() != Some(notes.privacy()) {
            for (_, view) in &self.dirs {
                if view.exists() {
                    std::fs::remove_dir_all(view)?;
                }
                std::fs::create_dir_all(view)?;
            }
            self.copies.clear();
            self.judged_dirs.clear();
            self.privacy = Some(notes.privacy().clone());
        }
        let home = crate::notes::paths::home_dir();
        let protected = notes
            .confinement()
            .map(|c| c.protected().clone())
            .unwrap_or_else(|| Protected::new(&home, None, [""; 0]));
        // Judged within the notes directories (a hard link is private when the file's other
        // name there is), whatever the roots of the notes handed in.
        let confined = notes.clone().confined(Arc::new(Confinement::new(
            &home,
            self.dirs.iter().map(|(d, _)| filename::key(d).into_owned()),
            None,
            [""; 0],
        )));
        let notes = &confined;
        let mut seen: HashSet<PathBuf> = HashSet::new();
        let mut seen_dirs: HashSet<PathBuf> = HashSet::new();
        for (dir, view) in self.dirs.clone() {
            let mut todo = vec![dir.clone()];
            while let Some(d) = todo.pop() {
                let Ok(entries) = std::fs::read_dir(&d) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    let name = entry.file_name();
                    let Ok(kind) = entry.file_type() else {
                        continue;
                    };
                    let Ok(rel) = path.strip_prefix(&dir) else {
                        continue;
                    };
                    let target = view.join(rel);
                    if kind.is_dir() {
                        // Judged once (a directory's verdict changes only with the rules,
                        // which start a new view), made in the view once.
                        let shown = match self.judged_dirs.get(&path) {
                            Some(shown) => *shown,
                            None => {
                                let shown = !VCS_DIRS
                                    .iter()
                                    .any(|v| name.as_encoded_bytes() == v.as_bytes())
                                    && !notes.privacy().hides_file(&filename::key(&path))
                                    && resolve(&filename::key(&path), &home)
                                        .is_ok_and(|r| !protected.covers(&r));
                                if shown {
                                    std::fs::create_dir_all(&target)?;
                                }
                                self.judged_dirs.insert(path.clone(), shown);
                                shown
                            }
                        };
                        if !shown {
                            report.left_out += 1;
                            continue;
                        }
                        seen_dirs.insert(path.clone());
                        todo.push(path);
                        continue;
                    }
                    // A protected file inside the notes is a dot-file (the notes directory
                    // is the home directory) or reached by a link: plain files skip the
                    // check, which costs a walk of the path's components.
                    let dotted = name.as_encoded_bytes().starts_with(b".");
                    let excluded = (kind.is_symlink() || dotted)
                        && resolve(&filename::key(&path), &home)
                            .map_or(true, |r| protected.covers(&r));
                    // A link is followed only to a file inside the notes directories; the
                    // copy is of what it leads to, judged by both names.
                    let meta = match std::fs::metadata(&path) {
                        Ok(m) if m.is_file() => m,
                        _ => {
                            report.left_out += 1;
                            continue;
                        }
                    };
                    if excluded
                        || (kind.is_symlink() && !self.leads_inside(&path))
                        || meta.len() > MAX_FILE_BYTES
                    {
                        report.left_out += 1;
                        continue;
                    }
                    let stamp = Stamp::of(&meta);
                    seen.insert(target.clone());
                    let copy = match self.copies.get(&target) {
                        Some((s, c)) if *s == stamp => *c,
                        _ => {
                            let copy = copy_shown(notes, &path, &target)?;
                            report.copied += 1;
                            self.copies.insert(target.clone(), (stamp, copy));
                            copy
                        }
                    };
                    match copy {
                        Copied::Shown => report.shown += 1,
                        Copied::LeftOut => report.left_out += 1,
                    }
                }
            }
        }
        // Copies of files gone from the notes (or now left out) go.
        let stale: Vec<PathBuf> = self
            .copies
            .keys()
            .filter(|t| !seen.contains(*t))
            .cloned()
            .collect();
        for target in stale {
            if let Some((_, Copied::Shown)) = self.copies.remove(&target) {
                report.removed += 1;
            }
            let _ = std::fs::remove_file(&target);
        }
        // Directories gone from the notes leave the view.
        let gone: Vec<PathBuf> = self
            .judged_dirs
            .keys()
            .filter(|d| !seen_dirs.contains(*d))
            .cloned()
            .collect();
        for dir in gone {
            if self.judged_dirs.remove(&dir) == Some(true) {
                if let Some(target) = self.target_of(&dir) {
                    let _ = std::fs::remove_dir_all(target);
                }
            }
        }
        report.took = started.elapsed();
        Ok(report)
    }

    /// Where `path` (inside a notes directory) is in the view.
    fn target_of(&self, path: &Path) -> Option<PathBuf> {
        self.dirs
            .iter()
            .find_map(|(dir, view)| Some(view.join(path.strip_prefix(dir).ok()?)))
    }

    /// Whether the link `path` leads to a file inside the notes directories.
    fn leads_inside(&self, path: &Path) -> bool {
        std::fs::canonicalize(path)
            .is_ok_and(|real| self.dirs.iter().any(|(dir, _)| real.starts_with(dir)))
    }
}

/// Copy `source` to `target` as the notes layer shows it, or remove `target` when the
/// notes layer shows nothing of it.
fn copy_shown(notes: &Notes, source: &Path, target: &Path) -> io::Result<Copied> {
    let shown = std::fs::read(source)
        .ok()
        .filter(|bytes| !bytes.contains(&0))
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| notes.text_as_shown(&filename::key(source), &text));
    match shown {
        Some(text) => {
            std::fs::write(target, text)?;
            Ok(Copied::Shown)
        }
        None => {
            match std::fs::remove_file(target) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            Ok(Copied::LeftOut)
        }
    }
}

/// Only the user may enter the views' directory.
fn set_private(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}
