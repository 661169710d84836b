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

pub use paths::{Confinement, Refusal, Resolved};
pub use privacy::Privacy;
pub use render::summary;

use crate::action::EmacsAction;
use crate::store::vectors::{self, Candidate};
use crate::store::{FileDoc, NodeContent, NodeKind, NodeRef, Query, Store};
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
    /// Where files may be read and written (the directories of the notes, the policy's
    /// roots), when configured; without it, edits are judged by privacy and protected paths
    /// alone, and there are no file tools.
    confinement: Option<Arc<Confinement>>,
}

/// The file an edit would really write, once judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditTarget {
    /// The note's file as the store names it.
    pub file: String,
    /// Where it really is (`None`: a buffer without a file, nothing on disk is written).
    pub resolved: Option<Resolved>,
}

impl Notes {
    pub fn new(store: Arc<Store>, privacy: Arc<Privacy>) -> Notes {
        Notes {
            store,
            privacy,
            confinement: None,
        }
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
            Some(r) if !self.privacy.hides(&r) => Ok(r),
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
            Some(r) if !self.privacy.hides(&r) => Ok(r),
            _ => Err(NOT_A_NOTE_FILE.to_string()),
        }
    }

    /// The file `action` would edit, judged by its real path: a note the agent may see, not
    /// private by where it really is, not protected, inside the roots when they are
    /// configured. `None` when the action edits no note. Refusals say the rule, never the
    /// path: a node or file refused for privacy is refused as an unknown one.
    pub fn edit_target(&self, action: &EmacsAction) -> Result<Option<EditTarget>, String> {
        let (id, file) = action.target();
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

    /// The nodes matching `q` that may be shown, in the store's order.
    pub fn query(&self, q: &Query) -> Vec<NodeRef> {
        let mut hits = self.store.query(q);
        hits.retain(|r| self.shows(r));
        hits
    }

    /// The nodes matching `q` for which `pick` gives a value, with it, leaving out those that
    /// may not be shown. `pick` runs first, so privacy is only asked of what it picked.
    pub fn query_picking<T>(
        &self,
        q: &Query,
        mut pick: impl FnMut(&NodeRef) -> Option<T>,
    ) -> Vec<(T, NodeRef)> {
        self.store
            .query(q)
            .into_iter()
            .filter_map(|r| pick(&r).map(|t| (t, r)))
            .filter(|(_, r)| self.shows(r))
            .collect()
    }

    /// The files whose file node may be shown (a private pattern or `#+FILETAGS` hides a
    /// whole file), in path order.
    pub fn files(&self) -> Vec<Arc<FileDoc>> {
        self.store
            .state()
            .files
            .values()
            .filter(|doc| {
                self.shows(&NodeRef {
                    doc: (*doc).clone(),
                    index: 0,
                })
            })
            .cloned()
            .collect()
    }

    /// The children of `r` that may be shown.
    pub fn children(&self, r: &NodeRef) -> Vec<NodeRef> {
        r.node()
            .children
            .iter()
            .map(|&index| NodeRef {
                doc: r.doc.clone(),
                index,
            })
            .filter(|c| self.shows(c))
            .collect()
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
        render::node(r, &self.children(r))
    }
}
