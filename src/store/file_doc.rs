//! One ingested file as the store holds it: its nodes in document order, the indexes built
//! from them (tags, TODO keywords, links), and the digests that say whether a text is the
//! one it was parsed from. A [`FileDoc`] is immutable once made; a file's new version is a
//! new document. [`NodeRef`] points at one node inside one.

use super::config::Config;
use super::credentials::{self, Flagged};
use super::hash::Hash;
use super::links;
use super::node::{self, Node, NodeKind};
use super::todo::TodoKeywords;
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};

/// One ingested file: its nodes in document order (index 0 is the file node) and indexes.
#[derive(Debug)]
pub struct FileDoc {
    pub path: Arc<str>,
    pub mtime: i64,
    pub size: u64,
    pub text_hash: Hash,
    /// Digest of the settings the text was parsed with.
    pub settings: Hash,
    pub file_tags: Vec<String>,
    pub nodes: Vec<Node>,
    /// Tag → the nodes that carry it themselves (the file node for `#+FILETAGS`), in
    /// document order. Not the nodes that inherit it: 10,000 tags over 10,000 children
    /// would be 100 million entries. [`FileDoc::tagged`] adds those.
    pub tag_index: HashMap<String, Vec<u32>>,
    /// TODO keyword → node indexes, in document order.
    pub todo_index: HashMap<String, Vec<u32>>,
    /// The `id:` and `file:` links written in the file, in document order.
    pub links: Vec<links::Link>,
    /// The nodes with credentials, found on first asking (by a scan, or the store's warm-up
    /// after the document was stored): see [`FileDoc::credentials`].
    credentials: OnceLock<Box<[Flagged]>>,
}

impl FileDoc {
    /// Whether `text` is exactly the text this version of the file was parsed from (with
    /// the same settings): a copy of the file under another name.
    pub fn is_text(&self, text: &str) -> bool {
        self.size == text.len() as u64 && text_digest(text, &self.settings) == self.text_hash
    }

    pub(super) fn new(
        path: Arc<str>,
        mtime: i64,
        size: u64,
        text_hash: Hash,
        settings: Hash,
        file_tags: Vec<String>,
        nodes: Vec<Node>,
    ) -> FileDoc {
        let mut tag_index: HashMap<String, Vec<u32>> = HashMap::default();
        let mut todo_index: HashMap<String, Vec<u32>> = HashMap::default();
        for (i, n) in nodes.iter().enumerate() {
            for t in node::keep_last(n.content.tags.iter().map(String::as_str)) {
                match tag_index.get_mut(t) {
                    Some(at) => at.push(i as u32),
                    None => {
                        tag_index.insert(t.to_string(), vec![i as u32]);
                    }
                }
            }
            if let Some(k) = &n.content.todo {
                todo_index.entry(k.to_string()).or_default().push(i as u32);
            }
        }
        let links = links::index(&nodes);
        FileDoc {
            path,
            mtime,
            size,
            text_hash,
            settings,
            file_tags,
            nodes,
            tag_index,
            todo_index,
            links,
            credentials: OnceLock::new(),
        }
    }

    /// The nodes with a credential in their own fields, in document order, private ones
    /// included. Found once per document, by whichever thread asks first; another that asks
    /// meanwhile waits for that answer.
    pub fn credentials(&self) -> &[Flagged] {
        self.credentials_with(&mut credentials::Memo::default())
    }

    /// [`FileDoc::credentials`], for one of many documents: versions `memo` met in the
    /// others are not read again.
    pub fn credentials_with(&self, memo: &mut credentials::Memo) -> &[Flagged] {
        self.credentials
            .get_or_init(|| credentials::find(&self.nodes, memo))
    }

    /// Take what was found in `other` as this document's credentials, when `other` holds
    /// the same node versions in the same places (the same file read again, as from the
    /// log by a reload) and they are known. Returns whether they are now known here.
    pub(super) fn adopt_credentials(&self, other: &FileDoc) -> bool {
        if let Some(found) = other.credentials.get() {
            let same_nodes = self.nodes.len() == other.nodes.len()
                && self
                    .nodes
                    .iter()
                    .zip(&other.nodes)
                    .all(|(a, b)| a.content.hash == b.content.hash);
            if same_nodes {
                let _ = self.credentials.set(found.clone());
            }
        }
        self.credentials_known()
    }

    /// Whether [`FileDoc::credentials`] has been found, so asking costs nothing.
    pub fn credentials_known(&self) -> bool {
        self.credentials.get().is_some()
    }

    /// The nodes that carry `tag` themselves, in document order.
    fn holders(&self, tag: &str) -> &[u32] {
        self.tag_index.get(tag).map_or(&[][..], Vec::as_slice)
    }

    /// The subtrees of the nodes that carry `tag`, as index ranges in document order, none
    /// overlapping another.
    fn tagged_ranges(&self, tag: &str) -> impl Iterator<Item = std::ops::Range<u32>> + '_ {
        let mut next = 0u32;
        self.holders(tag).iter().map(move |&h| {
            // Holders are in document order: one inside a subtree already given adds nothing.
            let from = h.max(next);
            let end = self.subtree_end(h).max(from);
            next = end;
            from..end
        })
    }

    /// The nodes that may have `tag`, own or inherited, in document order, each once: the
    /// subtrees of the nodes that carry it. A subtree may hold nodes that do not inherit it
    /// (tags excluded from inheritance): ask [`Node::has_tag`].
    pub fn tagged(&self, tag: &str) -> impl Iterator<Item = u32> + '_ {
        self.tagged_ranges(tag).flatten()
    }

    /// How many nodes have `tag`, own or inherited: as many as [`FileDoc::tagged`] gives that
    /// [`Node::has_tag`] keeps, found without reading each. A tag is either inherited by
    /// every descendant of a node that carries it or, excluded from inheritance, by none,
    /// alike in the whole document: the first child of a holder with children tells which.
    /// Then the subtrees' lengths, or the holders, are the count.
    pub fn count_tagged(&self, tag: &str) -> usize {
        let holders = self.holders(tag);
        let inherited = holders
            .iter()
            .find(|&&h| self.has_children(h))
            .is_none_or(|&h| self.nodes[h as usize + 1].inherited_tags.contains(tag));
        if !inherited {
            return holders.len();
        }
        self.tagged_ranges(tag).map(|r| r.len()).sum()
    }

    /// How many tag strings the nodes hold, own and inherited, a list shared by several
    /// nodes (or versions) counted once: bounded by the tags written in the file.
    pub fn tag_strings(&self) -> usize {
        let mut seen: rustc_hash::FxHashSet<usize> = Default::default();
        let mut count = 0;
        for n in &self.nodes {
            for (at, len) in n
                .content
                .tags
                .address()
                .into_iter()
                .chain(n.inherited_tags.lists())
            {
                if seen.insert(at) {
                    count += len;
                }
            }
        }
        count
    }

    /// The indexes of the children of node `index`, in document order.
    pub fn children(&self, index: u32) -> node::Children<'_> {
        node::children(&self.nodes, index)
    }

    /// Whether node `index` has children.
    pub fn has_children(&self, index: u32) -> bool {
        node::has_children(&self.nodes, index)
    }

    /// One past the last index of node `index`'s subtree.
    pub fn subtree_end(&self, index: u32) -> u32 {
        node::subtree_end(&self.nodes, index)
    }
}

/// The files of a state, by path.
pub type Files = imbl::OrdMap<Arc<str>, Arc<FileDoc>>;

/// Digest of the settings text is parsed with: the same text parses differently under other
/// keywords or another Org dialect. The number in it is the parser's: 2 since repeated
/// `#+FILETAGS` and done keywords read as Org reads them and inherited tags are derived on
/// reading the log, so every file is parsed again once, and a store written since is
/// parsed again by a module from before rather than read with its inherited tags missing.
pub(super) fn settings_digest(todo: Option<&TodoKeywords>, config: &Config) -> Hash {
    let mut h = Sha256::new();
    h.update(b"org-agent/settings/2\0");
    h.update([todo.is_some() as u8]);
    let kw = todo.unwrap_or(&config.default_todo);
    for k in kw
        .todo
        .iter()
        .chain(std::iter::once(&"|".to_string()))
        .chain(kw.done.iter())
    {
        h.update(k.as_bytes());
        h.update([0]);
    }
    h.update([config.dialect as u8]);
    if let Some(level) = config.inlinetask_min_level {
        h.update(b"inlinetask");
        h.update(level.to_le_bytes());
    }
    for t in &config.no_inherit_tags {
        h.update(t.as_bytes());
        h.update([1]);
    }
    Hash(h.finalize().into())
}

pub(super) fn text_digest(text: &str, settings: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(b"org-agent/text/1\0");
    h.update(settings.0);
    h.update((text.len() as u64).to_le_bytes());
    h.update(text.as_bytes());
    Hash(h.finalize().into())
}

/// A node inside the document that holds it.
#[derive(Clone, Debug)]
pub struct NodeRef {
    pub doc: Arc<FileDoc>,
    pub index: u32,
}

impl NodeRef {
    pub fn node(&self) -> &Node {
        &self.doc.nodes[self.index as usize]
    }

    pub fn parent(&self) -> Option<NodeRef> {
        self.node().parent().map(|p| NodeRef {
            doc: self.doc.clone(),
            index: p,
        })
    }

    /// Titles of the headline ancestors, outermost first (Org's `org-get-outline-path`).
    pub fn outline_path(&self) -> Vec<String> {
        let mut path = Vec::new();
        let mut cur = self.node().parent();
        while let Some(p) = cur {
            let n = &self.doc.nodes[p as usize];
            if n.content.kind == NodeKind::Headline {
                path.push(n.content.title.to_string());
            }
            cur = n.parent();
        }
        path.reverse();
        path
    }
}
