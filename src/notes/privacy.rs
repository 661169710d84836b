//! What the LLM must never see: subtrees tagged with a private tag (default `@personal` and
//! `private`) or with a true `:PRIVATE:` property, and whole files matching a private pattern.
//!
//! Privacy is decided here, once, and every path that sends notes out (the context of a
//! request, every tool result, embedding requests) asks [`Privacy::hides`] before showing a
//! node. It does not rely on Org's tag inheritance: a user may exclude `private` from
//! inheritance (`org-tags-exclude-from-inheritance`) for agenda reasons, yet the subtree
//! under a private headline is still private. So the node and every ancestor are checked.
//!
//! A file is judged by where it really is as well as by its name: a note that is a symbolic
//! link to a private file is private, and so is a link whose own name a pattern matches. The
//! real path of each note is resolved once and kept (see [`RealPaths`]), not on every check.

use super::paths;
use crate::store::State;
use crate::store::{filename, FileDoc, Node, NodeContent, NodeRef};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The tags that make a subtree private when no configuration says otherwise.
pub const DEFAULT_PRIVATE_TAGS: [&str; 2] = ["@personal", "private"];

/// The properties whose values are always withheld when no configuration says otherwise
/// (`org-agent-secret-properties`).
pub const DEFAULT_SECRET_PROPERTIES: [&str; 9] = [
    "PASSWORD",
    "PASS",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "CREDENTIALS",
];

/// What a withheld property value is shown as.
pub const WITHHELD: &str = "[withheld]";

/// The privacy rules in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Privacy {
    /// A subtree with one of these tags (own, on an ancestor, or from `#+FILETAGS`) is private.
    tags: Vec<String>,
    /// Files whose path matches one of these are private as a whole.
    files: Vec<Glob>,
    /// Whether a true `:PRIVATE:` property makes a subtree private (always, except in
    /// [`Privacy::none`]).
    property: bool,
    /// Properties whose values are never shown (upper case; Org's property names ignore
    /// case).
    secret_properties: Vec<String>,
    /// The real path of each note file seen, to match the patterns against.
    real_paths: RealPaths,
    /// The inodes of the files private as a whole, to know a hard link to one.
    inodes: PrivateInodes,
}

impl Default for Privacy {
    /// The default tags, no private files.
    fn default() -> Self {
        Privacy::new(DEFAULT_PRIVATE_TAGS.iter().map(|t| t.to_string()), [])
    }
}

impl Privacy {
    /// Rules from tag names and file patterns (see [`Glob`]).
    pub fn new(
        tags: impl IntoIterator<Item = String>,
        files: impl IntoIterator<Item = String>,
    ) -> Privacy {
        let mut globs = Vec::new();
        for p in files.into_iter().filter(|p| !p.is_empty()) {
            // `~/notes/journal/**` where `~/notes` is a link also means the link's target.
            if let Some(real) = real_pattern(&p) {
                globs.push(Glob::new(&real));
            }
            globs.push(Glob::new(&p));
        }
        Privacy {
            tags: tags.into_iter().filter(|t| !t.is_empty()).collect(),
            files: globs,
            property: true,
            secret_properties: DEFAULT_SECRET_PROPERTIES
                .iter()
                .map(|p| p.to_string())
                .collect(),
            real_paths: RealPaths::default(),
            inodes: PrivateInodes::default(),
        }
    }

    /// The same rules, withholding the values of the properties named in `names` (any
    /// case) instead of [`DEFAULT_SECRET_PROPERTIES`].
    pub fn with_secret_properties(self, names: impl IntoIterator<Item = String>) -> Privacy {
        Privacy {
            secret_properties: names
                .into_iter()
                .map(|n| n.trim().trim_matches(':').to_ascii_uppercase())
                .filter(|n| !n.is_empty())
                .collect(),
            ..self
        }
    }

    pub fn secret_properties(&self) -> &[String] {
        &self.secret_properties
    }

    /// Whether the value of property `name` is withheld (`NAME+`, Org's accumulating form,
    /// counts as `NAME`).
    pub fn withholds_property(&self, name: &str) -> bool {
        let name = name.strip_suffix('+').unwrap_or(name);
        self.secret_properties
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name))
    }

    /// `text` with the value of every property line (`:NAME: value`) of a withheld property
    /// replaced by [`WITHHELD`]. Borrowed when there is none.
    pub fn withhold_properties<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let withheld_line = |line: &str| -> Option<String> {
            let indent = line.len() - line.trim_start().len();
            let rest = line[indent..].strip_prefix(':')?;
            let (name, value) = rest.split_once(':')?;
            (!value.trim().is_empty()
                && value.starts_with([' ', '\t'])
                && !name.contains(char::is_whitespace)
                && self.withholds_property(name))
            .then(|| format!("{}:{name}: {WITHHELD}", &line[..indent]))
        };
        if self.secret_properties.is_empty() || !text.lines().any(|l| withheld_line(l).is_some()) {
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            match withheld_line(body.trim_end_matches('\r')) {
                Some(w) => {
                    out.push_str(&w);
                    out.push_str(end);
                }
                None => out.push_str(line),
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// Nothing is private (for tests of other things, never a user default).
    pub fn none() -> Privacy {
        Privacy {
            property: false,
            ..Privacy::new([], [])
        }
    }

    pub fn tags(&self) -> &[String] {
        &self.tags
    }

    /// Whether the whole file at `path` (a store key) is private, by its name or by its real
    /// path (resolved now: for one file, not in a loop over nodes).
    pub fn hides_file(&self, path: &str) -> bool {
        if self.files.is_empty() {
            return false;
        }
        self.matches_name(path) || real_key(path).is_some_and(|real| self.matches_name(&real))
    }

    /// Whether a pattern matches `path` as written.
    fn matches_name(&self, path: &str) -> bool {
        self.files.iter().any(|g| g.matches(path))
    }

    /// Whether the file of `doc` is private, by its name or by its real path (resolved once
    /// per version of the file).
    fn hides_doc(&self, doc: &Arc<FileDoc>) -> bool {
        if self.files.is_empty() {
            return false;
        }
        self.matches_name(&doc.path)
            || self
                .real_paths
                .of(doc)
                .is_some_and(|real| self.matches_name(&real))
    }

    /// Whether the node is private: its file is, or it or an ancestor has a private tag or a
    /// true `:PRIVATE:` property, or was archived from a private place (see
    /// [`Privacy::hides_node`]).
    pub fn hides(&self, r: &NodeRef) -> bool {
        self.hides_doc(&r.doc) || self.hides_node(&r.doc.nodes, r.index)
    }

    /// Whether node `index` of `nodes` (one file's nodes in document order, as the store's
    /// parser reads them) is private by what its text says, the file's name aside: it or an
    /// ancestor has a private tag (own, inherited, from `#+FILETAGS`) or a true `:PRIVATE:`
    /// property, or was archived from a private place. Org writes the tags an archived
    /// subtree inherited into `:ARCHIVE_ITAGS:` and where it came from into
    /// `:ARCHIVE_FILE:`: a subtree archived from under a private headline, or from a file a
    /// private pattern names, stays private in the `.org_archive` file.
    pub fn hides_node(&self, nodes: &[Node], index: u32) -> bool {
        let Some(node) = nodes.get(index as usize) else {
            return true;
        };
        if node.inherited_tags.any(|t| self.is_private_tag(t)) {
            return true;
        }
        let mut index = Some(index);
        // A node's parent always comes before it in the file's list, so this ends; the bound
        // guards against a corrupt tree all the same.
        let mut steps = 0usize;
        while let Some(i) = index {
            let Some(n) = nodes.get(i as usize) else {
                return true;
            };
            let c = &n.content;
            if c.tags.iter().any(|t| self.is_private_tag(t))
                || (self.property && c.property("PRIVATE").is_some_and(is_true))
                || self.archived_from_private(c)
            {
                return true;
            }
            index = n.parent();
            steps += 1;
            if steps > nodes.len() {
                return true;
            }
        }
        false
    }

    /// Whether `c` was archived from a private place: `:ARCHIVE_ITAGS:` (the tags it
    /// inherited where it was, space- or colon-separated) names a private tag, or
    /// `:ARCHIVE_FILE:` (the file it came from, `~/…` as Org abbreviates it) matches a private
    /// pattern. The file is judged by its name as written and with `~` expanded, not by
    /// resolving links: this runs for every node a scan looks at.
    fn archived_from_private(&self, c: &NodeContent) -> bool {
        if c.property("ARCHIVE_ITAGS").is_some_and(|tags| {
            tags.split(|ch: char| ch == ':' || ch.is_whitespace())
                .any(|t| !t.is_empty() && self.is_private_tag(t))
        }) {
            return true;
        }
        if self.files.is_empty() {
            return false;
        }
        let Some(file) = c.property("ARCHIVE_FILE").map(str::trim) else {
            return false;
        };
        if file.is_empty() {
            return false;
        }
        let expanded = file.strip_prefix("~/").map(|rest| {
            format!(
                "{}/{rest}",
                filename::key(&paths::home_dir()).trim_end_matches('/')
            )
        });
        self.matches_name(file) || expanded.is_some_and(|f| self.matches_name(&f))
    }

    /// Whether a text could hold anything [`Privacy::hides_node`] hides: one of the private
    /// tags, `PRIVATE` in any case (the property), `ARCHIVE_FILE` when there are private
    /// patterns, or `SETUPFILE` (whose `#+FILETAGS` the parser follows). When it cannot,
    /// parsing it as Org to cut private subtrees would change nothing, and is skipped.
    pub fn could_hide(&self, text: &str) -> bool {
        let mut needles: Vec<&str> = self.tags.iter().map(String::as_str).collect();
        if self.property {
            needles.push("PRIVATE");
        }
        if !self.files.is_empty() {
            needles.push("ARCHIVE_FILE");
        }
        needles.push("SETUPFILE");
        // Tags are matched ignoring case too: more texts parsed, never fewer.
        match aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(&needles)
        {
            Ok(ac) => ac.is_match(text),
            Err(_) => true,
        }
    }

    /// `text` (whose nodes are `doc`, parsed from exactly this text) without its private
    /// subtrees, each replaced by a line saying a private subtree was left out, and with
    /// withheld property values replaced (see [`Privacy::withhold_properties`]); `None`
    /// when the whole file is private.
    pub fn redact(&self, doc: &Arc<FileDoc>, text: &str) -> Option<String> {
        let hidden = |index: u32| {
            self.hides(&NodeRef {
                doc: doc.clone(),
                index,
            })
        };
        if doc.nodes.is_empty() || hidden(0) {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut from = 0usize;
        for (i, node) in doc.nodes.iter().enumerate().skip(1) {
            let (begin, end) = (node.begin as usize, node.end as usize);
            // Only the outermost private subtree of a branch: its range holds the rest.
            if begin < from || !hidden(i as u32) {
                continue;
            }
            let (Some(before), Some(_)) = (text.get(from..begin), text.get(begin..end)) else {
                // Offsets that do not fit the text: the text is not the one parsed. Showing
                // nothing is the safe answer.
                return None;
            };
            out.push_str(before);
            out.push_str(&format!(
                "{} [a private subtree is left out]\n",
                "*".repeat(node.content.level.max(1) as usize)
            ));
            from = end;
        }
        out.push_str(text.get(from..)?);
        Some(self.withhold_properties(&out).into_owned())
    }

    /// Whether the file `meta` describes is another name (a hard link) of a file private as a
    /// whole: one of `state`'s files that privacy hides (by a pattern, its `#+FILETAGS`…), or
    /// a file a private pattern names in `roots` or in the directory an absolute pattern
    /// names. Only a regular file with more than one name is looked up, so an ordinary file
    /// costs nothing; the set of private inodes is built when first needed and again when
    /// the store's state changes, the roots differ, or after [`RESOLVE_AGAIN`].
    ///
    /// Its limits: a directory walk stops after [`MAX_WALKED`] entries, skips `.git`, `.hg`
    /// and `.svn`, and follows no link; a file private by its `#+FILETAGS` counts only when
    /// the store holds it; a link made after the set was built is known at the next build.
    pub fn hard_link_to_private(
        &self,
        meta: &std::fs::Metadata,
        state: &Arc<State>,
        roots: &[PathBuf],
    ) -> bool {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.nlink() < 2 {
            return false;
        }
        let inodes = self
            .inodes
            .get(state, roots, || self.private_inodes(state, roots));
        inodes.contains(&(meta.dev(), meta.ino()))
    }

    /// The (device, inode) of every file private as a whole that has more than one name
    /// (see [`Privacy::hard_link_to_private`]).
    fn private_inodes(&self, state: &State, roots: &[PathBuf]) -> HashSet<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let mut out = HashSet::new();
        let mut add = |meta: &std::fs::Metadata| {
            if meta.is_file() && meta.nlink() > 1 {
                out.insert((meta.dev(), meta.ino()));
            }
        };
        for doc in state.files.values() {
            if !doc.path.starts_with('/') {
                continue;
            }
            let file = NodeRef {
                doc: doc.clone(),
                index: 0,
            };
            if self.hides(&file) {
                if let Ok(meta) = std::fs::metadata(filename::to_path(&doc.path)) {
                    add(&meta);
                }
            }
        }
        if self.files.is_empty() {
            return out;
        }
        let mut stack: Vec<PathBuf> = roots.to_vec();
        for place in self.files.iter().filter_map(Glob::literal_place) {
            match place {
                Ok(file) => {
                    if let Ok(meta) = std::fs::metadata(file) {
                        add(&meta);
                    }
                }
                Err(dir) => stack.push(dir),
            }
        }
        let mut seen_dirs: HashSet<PathBuf> = HashSet::new();
        let mut walked = 0usize;
        while let Some(dir) = stack.pop() {
            if !seen_dirs.insert(dir.clone()) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                walked += 1;
                if walked > MAX_WALKED {
                    return out;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    let name = entry.file_name();
                    if ![".git", ".hg", ".svn"].iter().any(|v| name == *v) {
                        stack.push(path);
                    }
                } else if kind.is_file() && self.matches_name(&filename::key(&path)) {
                    if let Ok(meta) = entry.metadata() {
                        add(&meta);
                    }
                }
            }
        }
        out
    }

    fn is_private_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

/// The real path of the file named by the store key `path`, as a key, when it differs from
/// `path` (`None`: not a link, not absolute, or not resolvable).
fn real_key(path: &str) -> Option<String> {
    let real = paths::real_path(&filename::to_path(path))?;
    let key = filename::key(&real);
    (key != path).then(|| key.into_owned())
}

/// The pattern `pattern` with its literal directory part (up to the last `/` before the first
/// wildcard) resolved, when that differs: a pattern naming a linked directory must also
/// match the files as they really are. `None` for name-only patterns and unchanged ones.
fn real_pattern(pattern: &str) -> Option<String> {
    if !pattern.starts_with('/') {
        return None;
    }
    let literal_end = pattern.find(['*', '?']).unwrap_or(pattern.len());
    let dir_end = pattern[..literal_end].rfind('/')?;
    let dir = if dir_end == 0 {
        "/"
    } else {
        &pattern[..dir_end]
    };
    let real = real_key(dir)?;
    Some(format!(
        "{}{}",
        real.trim_end_matches('/'),
        &pattern[dir_end..]
    ))
}

/// The path of the file Emacs made `path` from, in the same directory, when `path` is
/// one of Emacs's copies of it: a backup `x.org~`, a numbered backup `x.org.~3~`, an
/// auto-save file `#x.org#` or a lock link `.#x.org`. `None` for any other name. A copy is
/// private under its original's rules: its name says nothing of what it holds.
pub fn backup_original(path: &str) -> Option<String> {
    let (dir, name) = match path.rfind('/') {
        Some(i) => path.split_at(i + 1),
        None => ("", path),
    };
    let original = if let Some(inner) = name.strip_prefix('#').and_then(|n| n.strip_suffix('#')) {
        inner
    } else if let Some(rest) = name.strip_prefix(".#") {
        rest
    } else if let Some(rest) = name.strip_suffix('~') {
        // `x.org.~3~` (numbered) before `x.org~` (simple).
        match rest.rsplit_once(".~") {
            Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
            _ => rest,
        }
    } else {
        return None;
    };
    (!original.is_empty() && original != "." && original != "..")
        .then(|| format!("{dir}{original}"))
}

/// The endings of copies people and tools make of a file (`x.org.bak`, `x.org.orig`…): a
/// copy of a private file by one of these names is private as its original is.
const COPY_SUFFIXES: [&str; 7] = [".bak", ".orig", ".old", ".backup", ".save", ".tmp", ".rej"];

/// The paths whose privacy `path` shares, nearest first: what [`backup_original`] gives,
/// what a copy suffix (`.bak`, `.orig`…) was added to, and the file an Org archive
/// `x.org_archive` (Org's default `%s_archive`) is of, followed to the end (`#x.org_archive#`
/// → `x.org_archive` → `x.org`). `path` itself is not among them.
pub fn originals(path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut at = path.to_string();
    // Each step shortens the name, so this ends; the bound is for the reader.
    for _ in 0..16 {
        let name = at.rsplit('/').next().unwrap_or(&at);
        let next = backup_original(&at)
            .or_else(|| {
                COPY_SUFFIXES.iter().find_map(|suffix| {
                    name.strip_suffix(suffix)
                        .filter(|base| !base.is_empty())
                        .map(|_| at[..at.len() - suffix.len()].to_string())
                })
            })
            .or_else(|| {
                name.strip_suffix("_archive")
                    .filter(|base| !base.is_empty())
                    .map(|_| at[..at.len() - "_archive".len()].to_string())
            });
        match next {
            Some(n) if n != at && !out.contains(&n) => {
                out.push(n.clone());
                at = n;
            }
            _ => break,
        }
    }
    out
}

/// The real paths of the note files privacy has judged, each resolved once per version of
/// the file and at most every [`RESOLVE_AGAIN`]: an entry holds the file's `FileDoc` weakly
/// and is resolved again when the store holds a new version (a re-ingest, the file removed
/// and added again) or when it is older than that (a link pointed elsewhere while the file
/// it led to did not change). Shared by the clones of one [`Privacy`]; new rules start with
/// a new cache.
#[derive(Default, Clone)]
struct RealPaths {
    known: Arc<Mutex<Known>>,
}

#[derive(Default)]
struct Known {
    entries: HashMap<Arc<str>, RealPath>,
    sweep_at: usize,
}

struct RealPath {
    doc: Weak<FileDoc>,
    real: Option<Arc<str>>,
    resolved: Instant,
}

/// Entries before the cache is first swept of files the store no longer holds.
const SWEEP_AT: usize = 4096;

/// How long a resolved real path is trusted.
const RESOLVE_AGAIN: Duration = Duration::from_secs(30);

impl RealPaths {
    /// The real path of `doc`'s file as a key, when it is not the file's own name.
    fn of(&self, doc: &Arc<FileDoc>) -> Option<Arc<str>> {
        let now = Instant::now();
        if let Some(e) = self.known.lock().entries.get(&doc.path) {
            if std::ptr::eq(e.doc.as_ptr(), Arc::as_ptr(doc))
                && now.duration_since(e.resolved) < RESOLVE_AGAIN
            {
                return e.real.clone();
            }
        }
        // Resolved without the lock: it reads the file system.
        let real: Option<Arc<str>> = real_key(&doc.path).map(Arc::from);
        let mut known = self.known.lock();
        if known.entries.len() >= known.sweep_at.max(SWEEP_AT) {
            known.entries.retain(|_, e| e.doc.strong_count() > 0);
            known.sweep_at = known.entries.len() * 2;
        }
        known.entries.insert(
            doc.path.clone(),
            RealPath {
                doc: Arc::downgrade(doc),
                real: real.clone(),
                resolved: now,
            },
        );
        real
    }
}

/// Entries a walk for private files looks at before it stops (see
/// [`Privacy::hard_link_to_private`]).
pub const MAX_WALKED: usize = 200_000;

/// The inodes of the files private as a whole (see [`Privacy::hard_link_to_private`]), with
/// what they were built from. Shared by the clones of one [`Privacy`].
#[derive(Default, Clone)]
struct PrivateInodes {
    built: Arc<Mutex<Option<InodeSet>>>,
}

struct InodeSet {
    state: Weak<State>,
    roots: Vec<PathBuf>,
    at: Instant,
    inodes: Arc<HashSet<(u64, u64)>>,
}

impl PrivateInodes {
    /// The set built for `state` and `roots` when it is recent, else `build()`'s.
    fn get(
        &self,
        state: &Arc<State>,
        roots: &[PathBuf],
        build: impl FnOnce() -> HashSet<(u64, u64)>,
    ) -> Arc<HashSet<(u64, u64)>> {
        if let Some(set) = &*self.built.lock() {
            if std::ptr::eq(set.state.as_ptr(), Arc::as_ptr(state))
                && set.roots == roots
                && set.at.elapsed() < RESOLVE_AGAIN
            {
                return set.inodes.clone();
            }
        }
        // Built without the lock: it reads the file system.
        let inodes = Arc::new(build());
        *self.built.lock() = Some(InodeSet {
            state: Arc::downgrade(state),
            roots: roots.to_vec(),
            at: Instant::now(),
            inodes: inodes.clone(),
        });
        inodes
    }
}

impl PartialEq for PrivateInodes {
    /// A cache: two rules are equal whatever they have built so far.
    fn eq(&self, _: &PrivateInodes) -> bool {
        true
    }
}

impl Eq for PrivateInodes {}

impl std::fmt::Debug for PrivateInodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateInodes")
    }
}

impl PartialEq for RealPaths {
    /// A cache: two rules are equal whatever they have resolved so far.
    fn eq(&self, _: &RealPaths) -> bool {
        true
    }
}

impl Eq for RealPaths {}

impl std::fmt::Debug for RealPaths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RealPaths")
    }
}

/// Org's idea of a true property value, as users write it: `t`, `yes`, `true` (any case).
fn is_true(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "t" | "yes" | "true"
    )
}

/// A file pattern: `*` matches within one path component, `**` across components, `?` one
/// character. A pattern without `/` is matched against the file name alone, one with `/`
/// against the whole absolute path (so `~/notes/journal/**` works once `~` is expanded, which
/// the Elisp side does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: Vec<char>,
    name_only: bool,
}

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob {
            pattern: pattern.chars().collect(),
            name_only: !pattern.contains('/'),
        }
    }

    /// A pattern over the whole of a text that is not a path (code, a command): `*` matches
    /// any run of characters, `/` included.
    pub fn across(pattern: &str) -> Glob {
        Glob {
            pattern: pattern
                .replace("**", "*")
                .replace('*', "**")
                .chars()
                .collect(),
            name_only: false,
        }
    }

    /// Where the files an absolute pattern matches are: the file it names when it has no
    /// wildcard (`Ok`), else the directory before its first wildcard (`Err`: `/n/journal`
    /// for `/n/journal/**`). `None` for a name-only pattern.
    fn literal_place(&self) -> Option<Result<PathBuf, PathBuf>> {
        if self.name_only || self.pattern.first() != Some(&'/') {
            return None;
        }
        let literal: String = self
            .pattern
            .iter()
            .take_while(|c| **c != '*' && **c != '?')
            .collect();
        if literal.len() == self.pattern.len() {
            return Some(Ok(filename::to_path(&literal)));
        }
        let dir = &literal[..literal.rfind('/')?];
        Some(Err(filename::to_path(if dir.is_empty() {
            "/"
        } else {
            dir
        })))
    }

    pub fn matches(&self, path: &str) -> bool {
        let subject = if self.name_only {
            path.rsplit('/').next().unwrap_or(path)
        } else {
            path
        };
        let text: Vec<char> = subject.chars().collect();
        glob_match(&self.pattern, &text)
    }
}

/// Iterative glob matching with backtracking to the last star (linear memory, no recursion):
/// `**` may eat `/`, `*` may not.
fn glob_match(p: &[char], t: &[char]) -> bool {
    let (mut pi, mut ti) = (0usize, 0usize);
    // Where to resume after the last star: (pattern index after it, text index, crosses `/`).
    let mut star: Option<(usize, usize, bool)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                let double = p.get(pi + 1) == Some(&'*');
                let after = if double { pi + 2 } else { pi + 1 };
                // `**/` also matches zero directories.
                let after = if double && p.get(after) == Some(&'/') {
                    after + 1
                } else {
                    after
                };
                star = Some((after, ti, double));
                pi = after;
            }
            Some('?') if t[ti] != '/' => {
                pi += 1;
                ti += 1;
            }
            Some(&c) if c != '*' && c != '?' && c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((after, start, double)) if double || t[start] != '/' => {
                    star = Some((after, start + 1, double));
                    pi = after;
                    ti = start + 1;
                }
                _ => return false,
            },
        }
    }
    while p.get(pi) == Some(&'*') {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let m = |p: &str, path: &str| Glob::new(p).matches(path);
        assert!(m("diary.org", "/home/u/notes/diary.org"));
        assert!(!m("diary.org", "/home/u/notes/diary.org.bak"));
        assert!(m("*.private.org", "/n/health.private.org"));
        assert!(!m("*.private.org", "/n/health.org"));
        assert!(m(
            "/home/u/notes/journal/**",
            "/home/u/notes/journal/2026/11.org"
        ));
        assert!(m("/home/u/notes/journal/*", "/home/u/notes/journal/11.org"));
        assert!(!m(
            "/home/u/notes/journal/*",
            "/home/u/notes/journal/2026/11.org"
        ));
        assert!(m("/home/**/secret/*.org", "/home/u/a/b/secret/x.org"));
        assert!(m("/home/**/secret/*.org", "/home/secret/x.org"));
        assert!(!m("/home/**/secret/*.org", "/home/u/secret/sub/x.org"));
        assert!(m("j?urnal.org", "/x/journal.org"));
        assert!(!m("/n/*", "/n/a/b"));
        // Pathological backtracking stays linear enough to finish at once.
        let long = format!("/{}", "a/".repeat(2000));
        assert!(!m("/**/**/**/**/**/b", &long));
    }

    #[test]
    fn files_are_private_by_their_real_path_and_their_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let key = |p: &std::path::Path| filename::key(p).into_owned();
        std::fs::create_dir_all(root.join("real/journal")).unwrap();
        std::fs::create_dir_all(root.join("notes")).unwrap();
        std::fs::write(root.join("diary.org"), "* d\n").unwrap();
        std::fs::write(root.join("real/journal/day.org"), "* d\n").unwrap();
        std::fs::write(root.join("plain.org"), "* p\n").unwrap();
        let link = root.join("notes/innocent.org");
        std::os::unix::fs::symlink(root.join("diary.org"), &link).unwrap();
        let named = root.join("notes/diary.org");
        std::os::unix::fs::symlink(root.join("plain.org"), &named).unwrap();
        // The pattern names the journal through a linked directory.
        std::os::unix::fs::symlink(root.join("real"), root.join("linked")).unwrap();
        let pattern = format!("{}/journal/**", key(&root.join("linked")));
        let p = Privacy::new([], ["diary.org".to_string(), pattern]);
        assert!(p.hides_file(&key(&link)), "a link to a private file");
        assert!(p.hides_file(&key(&named)), "a link named private");
        assert!(p.hides_file(&key(&root.join("real/journal/day.org"))));
        assert!(!p.hides_file(&key(&root.join("plain.org"))));
        assert!(!Privacy::default().hides_file(&key(&link)));
    }

    #[test]
    fn truthy_values() {
        for v in ["t", "T", " yes ", "true"] {
            assert!(is_true(v), "{v}");
        }
        for v in ["nil", "", "no", "false", "tt"] {
            assert!(!is_true(v), "{v}");
        }
    }

    #[test]
    fn emacs_copies_name_their_original() {
        for (copy, original) in [
            ("/n/x.org~", Some("/n/x.org")),
            ("/n/x.org.~3~", Some("/n/x.org")),
            ("/n/x.org.~12~", Some("/n/x.org")),
            ("/n/#x.org#", Some("/n/x.org")),
            ("/n/.#x.org", Some("/n/x.org")),
            ("x.org~", Some("x.org")),
            // Not a numbered backup: the `~` alone is the backup's.
            ("/n/x.org.~a~", Some("/n/x.org.~a")),
            ("/n/x.org", None),
            ("/n/#x.org", None),
            ("/n/~", None),
            ("/n/##", None),
            ("/n/.#", None),
            ("/n/#/x.org", None),
        ] {
            assert_eq!(backup_original(copy).as_deref(), original, "{copy}");
        }
        assert_eq!(
            originals("/n/#diary.org_archive.bak#"),
            [
                "/n/diary.org_archive.bak",
                "/n/diary.org_archive",
                "/n/diary.org"
            ]
        );
        assert_eq!(originals("/n/x.org.orig"), ["/n/x.org"]);
        assert!(originals("/n/x.org").is_empty());
        assert!(originals("/n/.bak").is_empty());
    }

    /// A file's nodes as the store parses them.
    fn nodes(text: &str) -> Vec<Node> {
        crate::store::parse::parse_with_defaults(text, std::path::Path::new("/n/a.org_archive"))
            .unwrap()
            .nodes
    }

    fn hidden_titles(p: &Privacy, text: &str) -> Vec<String> {
        let nodes = nodes(text);
        (0..nodes.len() as u32)
            .filter(|&i| p.hides_node(&nodes, i))
            .map(|i| nodes[i as usize].content.title.to_string())
            .collect()
    }

    #[test]
    fn archived_subtrees_stay_private_by_their_inherited_tags_and_their_file() {
        let home = filename::key(&paths::home_dir()).into_owned();
        let home = home.trim_end_matches('/');
        let p = Privacy::new(
            ["private".to_string(), "@personal".to_string()],
            [format!("{home}/org/diary.org"), "*.secret.org".to_string()],
        );
        let text = "* Itags\n:PROPERTIES:\n:ARCHIVE_ITAGS: work private\n:END:\n** Under\n\
                    * Colons\n:PROPERTIES:\n:ARCHIVE_ITAGS: :@personal:\n:END:\n\
                    * Home\n:PROPERTIES:\n:ARCHIVE_FILE: ~/org/diary.org\n:END:\n\
                    * Named\n:PROPERTIES:\n:ARCHIVE_FILE: /x/health.secret.org\n:END:\n\
                    * Kept\n:PROPERTIES:\n:ARCHIVE_FILE: ~/org/tasks.org\n\
                    :ARCHIVE_ITAGS: work privately\n:END:\n";
        assert_eq!(
            hidden_titles(&p, text),
            ["Itags", "Under", "Colons", "Home", "Named"]
        );
        // Without private patterns, the file an entry came from says nothing.
        let tags_only = Privacy::new(["private".to_string()], []);
        assert_eq!(hidden_titles(&tags_only, text), ["Itags", "Under"]);
        assert!(hidden_titles(&Privacy::none(), text).is_empty());
    }

    #[test]
    fn only_texts_that_could_hold_something_private_need_parsing() {
        let p = Privacy::new(["private".to_string()], []);
        assert!(!p.could_hide("* Plain\nwords\n"));
        assert!(p.could_hide("* x :private:\n"));
        assert!(p.could_hide("* x\n:PROPERTIES:\n:private: t\n:END:\n"));
        assert!(p.could_hide("#+setupfile: other.org\n"));
        // ARCHIVE_FILE matters only with private patterns.
        assert!(!p.could_hide(":ARCHIVE_FILE: ~/x.org\n"));
        let files = Privacy::new([], ["x.org".to_string()]);
        assert!(files.could_hide(":archive_file: ~/x.org\n"));
        let none = Privacy::none();
        assert!(!none.could_hide("* x :private:\n:PRIVATE: t\n"));
    }
}
