//! The notes as the agent may see them: the store behind the privacy rules.
//!
//! [`Notes`] is the only way the layers above (gates, tools, context, the turn) read the
//! store: its store is private, and every query, lookup, listing and rendering here leaves
//! out what [`Privacy`] hides. A caller cannot forget to filter, because it never holds the
//! unfiltered store. Rendering lives here too, so a node shown to the LLM (a tool result, the
//! context) is written one way and lists only the children it may see.

pub mod paths;
pub mod privacy;
mod render;
pub mod scans;
pub mod trust;

pub use paths::{Confinement, Refusal, Resolved};
pub use privacy::Privacy;
pub use render::{brief, summary};
pub use trust::Trust;

use crate::action::EmacsAction;
use crate::store::vectors::{self, Candidate};
use crate::store::{filename, FileDoc, NodeContent, NodeKind, NodeRef, Query, Store};
use parking_lot::Mutex;
use std::sync::Arc;

/// Why a node cannot be shown: it does not exist, or the privacy rules hide it.
pub const NO_SUCH_NODE: &str =
    "no node the agent may see has that id: it does not exist, or the user's privacy rules \
     keep it out of view";

/// Why a file cannot be shown: it is not one of the notes, or the privacy rules hide it.
pub const NOT_A_NOTE_FILE: &str =
    "that file is not one of the notes the agent may see: give the absolute file name \
     list_files shows (private files are not shown)";

/// The store seen through the privacy rules. Cheap to clone (a few `Arc`s); a turn keeps the
/// rules it started with even when the user changes them meanwhile.
#[derive(Clone)]
pub struct Notes {
    store: Arc<Store>,
    privacy: Arc<Privacy>,
    /// What counts as untrusted content.
    trust: Arc<Trust>,
    /// Where the untrusted nodes handed out are noted, when someone watches (see
    /// [`Notes::watching`]); shared by the clones.
    reads: Option<Arc<Mutex<UntrustedReads>>>,
    /// Where files may be read and written (the directories of the notes, the policy's
    /// roots), when configured; without it, edits are judged by privacy and protected paths
    /// alone, and there are no file tools.
    confinement: Option<Arc<Confinement>>,
}

/// Why a file is private as a whole (see [`Notes::why_private`]): the rule a refusal names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhyPrivate {
    /// A private pattern matches its name or its real path.
    Name,
    /// It is a copy of a file a private pattern matches (a backup, an auto-save file, an
    /// archive…).
    Original,
    /// Its tags (`#+FILETAGS`, a file `:PRIVATE:` property), or its original's, as the
    /// store holds them.
    Tags,
    /// It is another name (a hard link) of a file private as a whole.
    HardLink,
}

impl std::fmt::Display for WhyPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WhyPrivate::Name => "org-agent-private-files names it",
            WhyPrivate::Original => {
                "it is a backup, auto-save, copy or archive of a file org-agent-private-files \
                 names"
            }
            WhyPrivate::Tags => "its tags, or its original's, make it private",
            WhyPrivate::HardLink => "it is another name (a hard link) of a private file",
        })
    }
}

/// The file an edit would really write, once judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditTarget {
    /// The note's file as the store names it.
    pub file: String,
    /// Where it really is (`None`: a buffer without a file, nothing on disk is written).
    pub resolved: Option<Resolved>,
}

/// The untrusted nodes handed out since the last look, as provenance lines, without
/// repeats.
#[derive(Default)]
struct UntrustedReads {
    lines: Vec<String>,
    /// More were read than are kept.
    more: usize,
}

/// Most provenance lines kept between two looks: enough to say where a turn read what it
/// read, bounded whatever a query returns.
const MAX_READS_KEPT: usize = 32;

impl Notes {
    /// The store under `privacy`, with the default rules of what is untrusted.
    pub fn new(store: Arc<Store>, privacy: Arc<Privacy>) -> Notes {
        Notes {
            store,
            privacy,
            trust: Arc::new(Trust::default()),
            reads: None,
            confinement: None,
        }
    }

    /// The same notes under the untrusted-content rules `trust`.
    pub fn with_trust(mut self, trust: Arc<Trust>) -> Notes {
        self.trust = trust;
        self
    }

    /// The rules of what is untrusted.
    pub fn trust(&self) -> &Trust {
        &self.trust
    }

    /// Why the model must not take `r`'s text as the user's (its place and the tag or
    /// property that makes it untrusted), or `None` when it is trusted.
    pub fn untrusted(&self, r: &NodeRef) -> Option<String> {
        self.trust.untrusted(r)
    }

    /// The same notes, noting every untrusted node its lookups, queries and listings hand
    /// out (and its clones' do) until [`Notes::take_untrusted_reads`] takes them: a tool
    /// that reads through them cannot forget to say what it read. Handed out is not always
    /// shown (a query's hits beyond a limit), so this errs toward more asking, never less.
    pub fn watching(&self) -> Notes {
        Notes {
            reads: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// The untrusted nodes handed out since the last call (provenance lines, first read
    /// first), when these notes are watched.
    pub fn take_untrusted_reads(&self) -> Vec<String> {
        let Some(reads) = &self.reads else {
            return Vec::new();
        };
        let taken = std::mem::take(&mut *reads.lock());
        let mut lines = taken.lines;
        if taken.more > 0 {
            lines.push(format!("{} more untrusted notes", taken.more));
        }
        lines
    }

    /// Note `r` if it is untrusted and someone watches.
    fn note_read(&self, r: &NodeRef) {
        let Some(reads) = &self.reads else {
            return;
        };
        let Some(line) = self.trust.untrusted(r) else {
            return;
        };
        let mut reads = reads.lock();
        if reads.lines.contains(&line) {
            return;
        }
        if reads.lines.len() < MAX_READS_KEPT {
            reads.lines.push(line);
        } else {
            reads.more += 1;
        }
    }

    /// Note the untrusted ones of `refs` (see [`Notes::watching`]).
    fn note_reads<'r>(&self, refs: impl IntoIterator<Item = &'r NodeRef>) {
        if self.reads.is_some() {
            for r in refs {
                self.note_read(r);
            }
        }
    }

    /// Whether `path` names one of the notes' files or a directory holding some directly
    /// (as the store names them, or after resolving links): text read there by a file tool
    /// is the notes', judged node by node; anything else comes from outside (a directory
    /// above the notes, such as the home directory, too).
    pub fn holds_path(&self, path: &str) -> bool {
        let state = self.store.state();
        let resolved = std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned));
        let candidates: Vec<&str> = std::iter::once(path.trim_end_matches('/'))
            .chain(resolved.as_deref())
            .filter(|p| !p.is_empty())
            .collect();
        state.files.keys().any(|file| {
            candidates.iter().any(|c| {
                &**file == *c
                    || file
                        .strip_prefix(*c)
                        .and_then(|rest| rest.strip_prefix('/'))
                        .is_some_and(|name| !name.is_empty() && !name.contains('/'))
            })
        })
    }

    /// Why text a file tool read at `path` is untrusted: a file outside the notes always
    /// is; a note file is when one of its nodes is. `None` when it is trusted.
    pub fn path_provenance(&self, path: &str) -> Option<String> {
        if !self.holds_path(path) {
            return Some(format!(
                "{} (read from outside the notes)",
                trust::shown_path(path)
            ));
        }
        let state = self.store.state();
        let resolved = std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned));
        let doc = state
            .files
            .get(path)
            .or_else(|| resolved.and_then(|p| state.files.get(p.as_str())))?;
        (0..doc.nodes.len() as u32).find_map(|index| {
            self.trust.untrusted(&NodeRef {
                doc: doc.clone(),
                index,
            })
        })
    }

    /// The same notes, with files confined by `confinement`.
    pub fn confined(self, confinement: Arc<Confinement>) -> Notes {
        Notes {
            confinement: Some(confinement),
            ..self
        }
    }

    /// Where files may be read and written, when configured.
    pub fn confinement(&self) -> Option<&Arc<Confinement>> {
        self.confinement.as_ref()
    }

    /// The rules in force (to tell a user why something is hidden, or redact a text).
    pub fn privacy(&self) -> &Privacy {
        &self.privacy
    }

    /// Whether the LLM may see `r`.
    pub fn shows(&self, r: &NodeRef) -> bool {
        !self.privacy.hides(r)
    }

    /// The node `id`, or why it cannot be shown. A private node is refused as an unknown one
    /// is, in words naming neither: the refusal must not tell the model it exists.
    pub fn node(&self, id: &str) -> Result<NodeRef, String> {
        match self.store.node(id) {
            Some(r) if !self.privacy.hides(&r) => {
                self.note_read(&r);
                Ok(r)
            }
            _ => Err(NO_SUCH_NODE.to_string()),
        }
    }

    /// The file node of `file` (named as the store names it: absolute, expanded), or why it
    /// cannot be shown: it is not one of the notes, or it is private. Both are refused in the
    /// same words, naming neither, so the refusal does not tell the model a private file exists.
    pub fn file(&self, file: &str) -> Result<NodeRef, String> {
        let state = self.store.state();
        let file_node = state.files.get(file).map(|doc| NodeRef {
            doc: doc.clone(),
            index: 0,
        });
        match file_node {
            Some(r) if !self.privacy.hides(&r) => {
                self.note_read(&r);
                Ok(r)
            }
            _ => Err(NOT_A_NOTE_FILE.to_string()),
        }
    }

    /// The file `action` would edit, judged by its real path: a note the agent may see, not
    /// private by where it really is, not protected, inside the roots when they are
    /// configured. `None` when the action edits no note. Refusals say the rule, never the
    /// path: a node or file refused for privacy is refused as an unknown one.
    ///
    /// An action that touches two places (a refile's destination, a link's target node) has
    /// both judged; the one returned is the one that goes through a link, if either does, so
    /// the path gate asks about it. A new note file must lie inside the roots, be `.org`,
    /// and not exist.
    pub fn edit_target(&self, action: &EmacsAction) -> Result<Option<EditTarget>, String> {
        if let Some(file) = action.new_file() {
            return self.new_note_target(file).map(Some);
        }
        let (id, file) = action.target();
        let primary = self.judge_place(id, file)?;
        let (id, file) = action.destination();
        let second = self.judge_place(id, file)?;
        let redirected = |t: &Option<EditTarget>| {
            t.as_ref()
                .and_then(|t| t.resolved.as_ref())
                .is_some_and(Resolved::is_redirected)
        };
        Ok(if !redirected(&primary) && redirected(&second) {
            second
        } else {
            primary
        })
    }

    /// The new note file `file` (absolute, or relative to the first root) judged: inside the
    /// roots, not protected or private, an `.org` file that does not exist yet.
    fn new_note_target(&self, file: &str) -> Result<EditTarget, String> {
        let Some(confinement) = &self.confinement else {
            return Err("a new note needs org-agent-directories, and none are set".into());
        };
        if !file.ends_with(".org") {
            return Err(format!("a new note is an .org file, and {file:?} is not"));
        }
        let path = if file.starts_with('/') || file.starts_with('~') {
            file.to_string()
        } else {
            let first = confinement.roots().dirs().first().ok_or_else(|| {
                "a new note needs org-agent-directories, and none are set".to_string()
            })?;
            first.join(file).to_string_lossy().into_owned()
        };
        let resolved = self
            .judge_path_in(confinement, &path)
            .map_err(|refusal| format!("the new note cannot be written: {refusal}"))?;
        if resolved.exists() {
            return Err(format!(
                "{} exists already, and a new note never replaces a file",
                resolved.shown()
            ));
        }
        Ok(EditTarget {
            file: resolved.given().to_string_lossy().into_owned(),
            resolved: Some(resolved),
        })
    }

    /// The file of node `id` or of note file `file` (`None` when neither is given), judged
    /// by its real path; see [`Notes::edit_target`].
    fn judge_place(
        &self,
        id: Option<&str>,
        file: Option<&str>,
    ) -> Result<Option<EditTarget>, String> {
        let (file, unknown) = match (id, file) {
            (Some(id), _) => (self.node(id)?.doc.path.to_string(), NO_SUCH_NODE),
            (None, Some(file)) => (self.file(file)?.doc.path.to_string(), NOT_A_NOTE_FILE),
            (None, None) => return Ok(None),
        };
        if !file.starts_with('/') {
            // A buffer without a file: the edit writes nothing to disk.
            return Ok(Some(EditTarget {
                file,
                resolved: None,
            }));
        }
        let home = match &self.confinement {
            Some(c) => c.home().to_path_buf(),
            None => paths::home_dir(),
        };
        let resolved = paths::resolve(&file, &home).map_err(|e| {
            format!(
                "the note's file cannot be edited: {}",
                Refusal::Unresolved(e)
            )
        })?;
        if self.privacy.hides_file(&resolved.real_key()) {
            return Err(unknown.to_string());
        }
        let judged = match &self.confinement {
            Some(c) => c.admits(&resolved),
            None => match paths::Protected::new(&home, None, [""; 0]).covers(&resolved) {
                true => Err(Refusal::Protected),
                false => Ok(()),
            },
        };
        judged.map_err(|refusal| format!("the note's file cannot be edited: {refusal}"))?;
        Ok(Some(EditTarget {
            file,
            resolved: Some(resolved),
        }))
    }

    /// The path `path` (absolute or `~/…`, from the model) resolved, if the file tools may
    /// reach it: inside the roots, not protected, not a private file (by its name or its real
    /// path). Refusals say the rule, never the path.
    pub fn judge_path(&self, path: &str) -> Result<Resolved, Refusal> {
        match &self.confinement {
            Some(c) => self.judge_path_in(c, path),
            None => Err(Refusal::OutsideRoots),
        }
    }

    /// Like [`Notes::judge_path`], within `confinement` (a file tool's own roots).
    pub fn judge_path_in(
        &self,
        confinement: &Confinement,
        path: &str,
    ) -> Result<Resolved, Refusal> {
        let resolved = confinement.judge(path)?;
        if self.privacy.hides_file(&resolved.given_key())
            || self.privacy.hides_file(&resolved.real_key())
        {
            return Err(Refusal::Private);
        }
        Ok(resolved)
    }

    /// Whether `file` (a store key) is one of the notes and private as a whole (by a
    /// pattern, or by its `#+FILETAGS`), so that a listing leaves it out.
    pub fn hides_note_file(&self, file: &str) -> bool {
        let state = self.store.state();
        state.files.get(file).is_some_and(|doc| {
            self.privacy.hides(&NodeRef {
                doc: doc.clone(),
                index: 0,
            })
        })
    }

    /// The Org text `text` of the file `file` as the notes would show it: private subtrees
    /// cut out, `None` when the whole file is private. Parsed here, whether or not the file
    /// is one of the notes, so a file read by another name is redacted all the same.
    pub fn redact_org(&self, file: &str, text: &str) -> Option<String> {
        let doc = self.store.parse_unstored(file, text).ok()?;
        self.privacy.redact(&doc, text)
    }

    /// The text of the file `file` (a store key: absolute path) as the notes layer shows it:
    /// `None` when the file is private as a whole (its name or its original's name matches
    /// a private pattern, its #+FILETAGS, a hard link to a private file…); otherwise the text
    /// with private subtrees cut out (Org parsing applied to any text, backups and
    /// archives under their original's rules), withheld properties replaced and secrets
    /// replaced by `[REDACTED:rule]` placeholders.
    ///
    /// Any text is read as Org: a copy of a note under another name (`notes.txt`,
    /// `tasks.bak`) is cut like the note, and a text that is not Org has no private
    /// headlines, so nothing changes but its secrets. A text that could not hold anything
    /// private (no private tag, no `PRIVATE`…: [`Privacy::could_hide`]) is not parsed; one
    /// that could and does not parse (nesting too deep) is not shown.
    pub fn text_as_shown(&self, file: &str, text: &str) -> Option<String> {
        if self.hides_path(file) || self.copies_a_private_file(text) {
            return None;
        }
        if !self.privacy.could_hide(text) {
            return Some(self.clean_text(text));
        }
        let doc = self.store.parse_unstored(file, text).ok()?;
        let cut = self.privacy.redact(&doc, text)?;
        Some(self.clean_text(&cut))
    }

    /// `text` with the values of withheld properties and secrets replaced: what
    /// [`Notes::text_as_shown`] does to a text once its private subtrees are cut, for a text
    /// shown apart from its file (a skill's description, a part of its prompt).
    pub fn clean_text(&self, text: &str) -> String {
        let withheld = self.privacy.withhold_properties(text);
        let gate = crate::secrets::SecretGate::shared();
        let redacted = gate.redact(&withheld).text;
        // The secret rules take `:TOKEN: [withheld]` for a password assignment: withheld
        // values are said to be withheld, as `read_node` says it.
        self.privacy.withhold_properties(&redacted).into_owned()
    }

    /// Whether `text` is, byte for byte, the text of a note private as a whole (`cp diary.org
    /// notes.txt`: a copy whose name says nothing of its original). Only notes of the same
    /// size are hashed.
    fn copies_a_private_file(&self, text: &str) -> bool {
        let state = self.store.state();
        let len = text.len() as u64;
        let private = state.files.values().any(|doc| {
            doc.size == len
                && doc.is_text(text)
                && self.privacy.hides(&NodeRef {
                    doc: doc.clone(),
                    index: 0,
                })
        });
        private
    }

    /// Whether the file at `file` (a store key) is private as a whole, by any of the rules
    /// above (name, original's name for backups, FILETAGS when the store holds it, hard link).
    pub fn hides_path(&self, file: &str) -> bool {
        self.why_private(file).is_some()
    }

    /// Why the file at `file` (a store key) is private as a whole, when it is (see
    /// [`Notes::hides_path`]): to say the rule in a refusal, never the path.
    ///
    /// In order: a private pattern names it (or where it leads); one names the file it is a
    /// copy of (an Emacs backup, auto-save or lock file, a `.bak`/`.orig`… copy, the
    /// `.org_archive` of a file: see [`privacy::originals`]); the store holds it or its
    /// original and its `#+FILETAGS` (or a `:PRIVATE:` file property) make it private; it is
    /// a hard link to a file private as a whole (see [`Privacy::hard_link_to_private`]:
    /// looked up only for a file with more than one name).
    pub fn why_private(&self, file: &str) -> Option<WhyPrivate> {
        if self.privacy.hides_file(file) {
            return Some(WhyPrivate::Name);
        }
        let originals = privacy::originals(file);
        if originals.iter().any(|o| self.privacy.hides_file(o)) {
            return Some(WhyPrivate::Original);
        }
        if std::iter::once(file)
            .chain(originals.iter().map(String::as_str))
            .any(|f| self.hides_note_file(f))
        {
            return Some(WhyPrivate::Tags);
        }
        if file.starts_with('/') {
            if let Ok(meta) = std::fs::metadata(filename::to_path(file)) {
                let roots = self
                    .confinement
                    .as_ref()
                    .map(|c| c.roots().dirs())
                    .unwrap_or_default();
                if self
                    .privacy
                    .hard_link_to_private(&meta, &self.store.state(), roots)
                {
                    return Some(WhyPrivate::HardLink);
                }
            }
        }
        None
    }

    /// The nodes matching `q` that may be shown, in the store's order.
    pub fn query(&self, q: &Query) -> Vec<NodeRef> {
        let mut hits = self.store.query(q);
        hits.retain(|r| self.shows(r));
        self.note_reads(&hits);
        hits
    }

    /// The nodes matching `q` for which `pick` gives a value, with it, leaving out those that
    /// may not be shown. `pick` runs first, so privacy is only asked of what it picked.
    pub fn query_picking<T>(
        &self,
        q: &Query,
        mut pick: impl FnMut(&NodeRef) -> Option<T>,
    ) -> Vec<(T, NodeRef)> {
        let picked: Vec<(T, NodeRef)> = self
            .store
            .query(q)
            .into_iter()
            .filter_map(|r| pick(&r).map(|t| (t, r)))
            .filter(|(_, r)| self.shows(r))
            .collect();
        self.note_reads(picked.iter().map(|(_, r)| r));
        picked
    }

    /// The files whose file node may be shown (a private pattern or `#+FILETAGS` hides a
    /// whole file), in path order.
    pub fn files(&self) -> Vec<Arc<FileDoc>> {
        self.store
            .state()
            .files
            .values()
            .filter(|doc| {
                let file = NodeRef {
                    doc: (*doc).clone(),
                    index: 0,
                };
                let shown = self.shows(&file);
                if shown {
                    self.note_read(&file);
                }
                shown
            })
            .cloned()
            .collect()
    }

    /// The children of `r` that may be shown.
    pub fn children(&self, r: &NodeRef) -> Vec<NodeRef> {
        let children: Vec<NodeRef> = r
            .doc
            .children(r.index)
            .map(|index| NodeRef {
                doc: r.doc.clone(),
                index,
            })
            .filter(|c| self.shows(c))
            .collect();
        self.note_reads(&children);
        children
    }

    /// The headlines `matches` accepts that may be shown: the first `limit` of them, and how
    /// many there are in all. `matches` runs first, so privacy is only asked of hits.
    pub fn find_headlines(
        &self,
        limit: usize,
        matches: impl Fn(&NodeContent) -> bool,
    ) -> (Vec<NodeRef>, usize) {
        let state = self.store.state();
        let mut hits = Vec::new();
        let mut total = 0;
        for doc in state.files.values() {
            for (i, node) in doc.nodes.iter().enumerate() {
                if node.content.kind != NodeKind::Headline || !matches(&node.content) {
                    continue;
                }
                let r = NodeRef {
                    doc: doc.clone(),
                    index: i as u32,
                };
                if !self.shows(&r) {
                    continue;
                }
                total += 1;
                if hits.len() < limit {
                    self.note_read(&r);
                    hits.push(r);
                }
            }
        }
        (hits, total)
    }

    /// The headlines to embed (those with `:EMBED: t`, or all with `embed_all`), never a
    /// private one.
    pub fn embedding_candidates(&self, embed_all: bool) -> Vec<Candidate> {
        vectors::candidates(&self.store, embed_all, &|r| self.privacy.hides(r))
    }

    /// `r` as Org text for the LLM: outline path, file, headline, planning, properties, body
    /// and one line per child it may see.
    pub fn render(&self, r: &NodeRef) -> String {
        render::node(r, &self.children(r), &self.privacy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Config;

    #[test]
    fn text_as_shown_applies_every_rule_of_the_notes_layer() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let key = |name: &str| filename::key(&root.join(name)).into_owned();
        let store = Arc::new(Store::in_memory(Config::default()));
        let privacy = Privacy::new(["private".to_string()], ["diary.org".to_string()]);
        let notes = Notes::new(store.clone(), Arc::new(privacy));
        let text = "* Plans\nghp_16C7e42F292c6912E7710c838347Ae178B4a\n:PROPERTIES:\n\
                    :TOKEN: abc\n:END:\n* Health :private:\nthe diagnosis\n";
        let shown = notes.text_as_shown(&key("notes.txt"), text).unwrap();
        assert_eq!(
            shown,
            "* Plans\n[REDACTED:github-token]\n:PROPERTIES:\n:TOKEN: [withheld]\n:END:\n\
             * [a private subtree is left out]\n"
        );
        // Nothing private, no secret: the text as it is.
        assert_eq!(
            notes.text_as_shown(&key("a.txt"), "plain\n").as_deref(),
            Some("plain\n")
        );
        for (file, why) in [
            ("diary.org", WhyPrivate::Name),
            ("diary.org~", WhyPrivate::Original),
            ("#diary.org#", WhyPrivate::Original),
            ("diary.org_archive", WhyPrivate::Original),
        ] {
            assert_eq!(notes.why_private(&key(file)), Some(why), "{file}");
            assert!(notes.hides_path(&key(file)));
            assert_eq!(notes.text_as_shown(&key(file), "* harmless\n"), None);
        }
        // By its FILETAGS: in the text itself, or, for a backup, its original's in the store.
        assert_eq!(
            notes.text_as_shown(&key("x.txt"), "#+FILETAGS: :private:\n* x\n"),
            None
        );
        std::fs::write(root.join("tagged.org"), "#+FILETAGS: :private:\n* t\n").unwrap();
        store.ingest_file(&key("tagged.org"), false).unwrap();
        assert_eq!(
            notes.why_private(&key("tagged.org~")),
            Some(WhyPrivate::Tags)
        );
        assert_eq!(notes.text_as_shown(&key("tagged.org~"), "* t\n"), None);
        assert!(!notes.hides_path(&key("tasks.org~")));
    }
}
