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
use crate::store::{filename, FileDoc, NodeRef};
use parking_lot::Mutex;
use std::collections::HashMap;
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
    /// true `:PRIVATE:` property.
    pub fn hides(&self, r: &NodeRef) -> bool {
        if self.hides_doc(&r.doc) {
            return true;
        }
        let node = r.node();
        if node.inherited_tags.iter().any(|t| self.is_private_tag(t)) {
            return true;
        }
        let mut index = Some(r.index);
        // A node's parent always comes before it in the file's list, so this ends; the bound
        // guards against a corrupt tree all the same.
        let mut steps = 0usize;
        while let Some(i) = index {
            let Some(n) = r.doc.nodes.get(i as usize) else {
                return true;
            };
            let c = &n.content;
            if c.tags.iter().any(|t| self.is_private_tag(t))
                || (self.property && c.property("PRIVATE").is_some_and(is_true))
            {
                return true;
            }
            index = n.parent();
            steps += 1;
            if steps > r.doc.nodes.len() {
                return true;
            }
        }
        false
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
}
