//! Org objects: the content-addressed part of a node and where it sits in a file.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::Arc;

/// A SHA-256 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    pub fn from_hex(hex: &str) -> Option<Hash> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Hash(out))
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({})", &self.to_hex()[..12])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeKind {
    File,
    Headline,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TodoType {
    Todo,
    Done,
}

impl TodoType {
    pub fn as_str(self) -> &'static str {
        match self {
            TodoType::Todo => "todo",
            TodoType::Done => "done",
        }
    }
}

/// Planning timestamps, kept exactly as written (repeaters and warnings included).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planning {
    pub scheduled: Option<String>,
    pub deadline: Option<String>,
    pub closed: Option<String>,
}

/// What a node *is*: its own fields and its children's hashes. Stored once per distinct
/// version, keyed by [`NodeContent::hash`]. Where the node sits (file, offsets, parent) is not
/// part of it, so moving a subtree does not make new versions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeContent {
    pub kind: NodeKind,
    pub title: String,
    pub todo: Option<String>,
    pub todo_type: Option<TodoType>,
    pub priority: Option<char>,
    pub tags: Vec<String>,
    /// Property drawer entries in file order, keys upcased as Org reports them.
    pub properties: Vec<(String, String)>,
    pub planning: Planning,
    pub body: String,
    pub level: u32,
    pub children: Vec<Hash>,
}

impl NodeContent {
    /// SHA-256 over a canonical, length-prefixed encoding of every field. Children enter by
    /// hash, which makes the digest a Merkle hash of the whole subtree.
    pub fn hash(&self) -> Hash {
        let mut h = Sha256::new();
        h.update(b"org-agent/node/1\0");
        h.update([match self.kind {
            NodeKind::File => 0u8,
            NodeKind::Headline => 1u8,
        }]);
        put_str(&mut h, &self.title);
        put_opt(&mut h, self.todo.as_deref());
        h.update([match self.todo_type {
            None => 0u8,
            Some(TodoType::Todo) => 1,
            Some(TodoType::Done) => 2,
        }]);
        match self.priority {
            None => h.update([0u8]),
            Some(c) => {
                h.update([1u8]);
                h.update((c as u32).to_le_bytes());
            }
        }
        h.update((self.tags.len() as u64).to_le_bytes());
        for t in &self.tags {
            put_str(&mut h, t);
        }
        h.update((self.properties.len() as u64).to_le_bytes());
        for (k, v) in &self.properties {
            put_str(&mut h, k);
            put_str(&mut h, v);
        }
        put_opt(&mut h, self.planning.scheduled.as_deref());
        put_opt(&mut h, self.planning.deadline.as_deref());
        put_opt(&mut h, self.planning.closed.as_deref());
        put_str(&mut h, &self.body);
        h.update(self.level.to_le_bytes());
        h.update((self.children.len() as u64).to_le_bytes());
        for c in &self.children {
            h.update(c.0);
        }
        Hash(h.finalize().into())
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        // Org reads the last value of a repeated key.
        self.properties
            .iter()
            .rev()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

fn put_str(h: &mut Sha256, s: &str) {
    h.update((s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

fn put_opt(h: &mut Sha256, s: Option<&str>) {
    match s {
        None => h.update([0u8]),
        Some(s) => {
            h.update([1u8]);
            put_str(h, s);
        }
    }
}

/// A node as it sits in one file: identity, position, tree links and its content.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: Arc<str>,
    pub hash: Hash,
    pub content: Arc<NodeContent>,
    /// Index of the parent in the file's node list (`None` for the file node).
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    /// UTF-8 byte range of the subtree in the ingested text.
    pub begin: u32,
    pub end: u32,
    /// The same range as Emacs buffer positions (1-based character positions).
    pub begin_pos: u32,
    pub end_pos: u32,
    /// Tags from `#+FILETAGS` and ancestors, not the node's own.
    pub inherited_tags: Vec<String>,
}

impl Node {
    pub fn has_tag(&self, tag: &str) -> bool {
        self.content.has_tag(tag) || self.inherited_tags.iter().any(|t| t == tag)
    }
}

/// `tags` without repeats, in the order of their first occurrence. Linear: a headline may
/// carry tens of thousands of tags.
pub fn distinct_tags<'a>(tags: impl IntoIterator<Item = &'a String>) -> Vec<&'a str> {
    let all: Vec<&str> = tags.into_iter().map(String::as_str).collect();
    if all.len() <= 8 {
        // The usual handful: comparing beats hashing and allocates nothing more.
        let mut out: Vec<&str> = Vec::with_capacity(all.len());
        for t in all {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        return out;
    }
    let mut seen = rustc_hash::FxHashSet::default();
    all.into_iter().filter(|t| seen.insert(*t)).collect()
}
