//! Org objects: the content-addressed part of a node and where it sits in a file.

use super::body::Body;
use super::error::{Result, StoreError};
use super::hash::Hash;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

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

/// A TODO keyword as a node holds it: one thin pointer (a node has room for a body in the
/// log because of the 8 bytes this saves), shared by the nodes a thread parses or decodes.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Keyword(Arc<String>);

thread_local! {
    static KEYWORDS: std::cell::RefCell<rustc_hash::FxHashSet<Keyword>> = Default::default();
}

impl std::borrow::Borrow<str> for Keyword {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Keyword {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Keyword {
    /// The keyword as the `Arc` this thread already holds for it (at most
    /// [`INTERNED_KEYS_MAX`] of them, as for property keys).
    fn from(word: &str) -> Keyword {
        intern(&KEYWORDS, word, |w| Keyword(Arc::new(w.to_string())))
    }
}

impl From<String> for Keyword {
    fn from(word: String) -> Keyword {
        Keyword::from(word.as_str())
    }
}

impl fmt::Debug for Keyword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl fmt::Display for Keyword {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl Serialize for Keyword {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Keyword {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Keyword, D::Error> {
        d.deserialize_str(StrVisitor(|s: &str| Keyword::from(s)))
    }
}

/// A headline's own tags as a node holds them: one thin pointer, none for no tags, and the
/// same list for the nodes a thread parses or decodes with the same tags (a few hundred
/// lists at most in a memex: at 100k headlines, one list a tagged headline was ~2 MB).
#[derive(Clone, Default)]
pub struct Tags(Option<Arc<Box<[String]>>>);

thread_local! {
    static TAG_LISTS: std::cell::RefCell<rustc_hash::FxHashSet<Tags>> = Default::default();
}

impl Tags {
    /// Where the list is and how long, to count shared lists once.
    pub(super) fn address(&self) -> Option<(usize, usize)> {
        self.0.as_ref().map(|t| (Arc::as_ptr(t) as usize, t.len()))
    }
}

impl std::ops::Deref for Tags {
    type Target = [String];
    fn deref(&self) -> &[String] {
        self.0.as_deref().map_or(&[], |tags| tags)
    }
}

impl std::borrow::Borrow<[String]> for Tags {
    fn borrow(&self) -> &[String] {
        self
    }
}

// By the list, as `Borrow` requires of the interning table's lookups.
impl PartialEq for Tags {
    fn eq(&self, other: &Tags) -> bool {
        **self == **other
    }
}

impl Eq for Tags {}

impl std::hash::Hash for Tags {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl<'a> IntoIterator for &'a Tags {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl From<&[String]> for Tags {
    /// The list as the `Arc` this thread already holds for it (at most
    /// [`INTERNED_KEYS_MAX`] lists, as for property keys).
    fn from(tags: &[String]) -> Tags {
        if tags.is_empty() {
            return Tags(None);
        }
        intern(&TAG_LISTS, tags, |t: &[String]| {
            Tags(Some(Arc::new(t.to_vec().into_boxed_slice())))
        })
    }
}

impl From<Vec<String>> for Tags {
    fn from(tags: Vec<String>) -> Tags {
        Tags::from(tags.as_slice())
    }
}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for Tags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Tags {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Tags, D::Error> {
        Vec::<String>::deserialize(d).map(Tags::from)
    }
}

/// Planning timestamps, kept exactly as written (repeaters and warnings included).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanningTimes {
    pub scheduled: Option<String>,
    pub deadline: Option<String>,
    pub closed: Option<String>,
}

static NO_PLANNING: PlanningTimes = PlanningTimes {
    scheduled: None,
    deadline: None,
    closed: None,
};

/// A node's [`PlanningTimes`], boxed only when it has one: most headlines have none, and
/// three inline `Option<String>`s were 64 of the 232 bytes of every stored version. Reads go
/// through `Deref` (`planning.scheduled` as before); writing through `DerefMut` makes the box.
/// Serialized as the plain struct, so the log's format is unchanged.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Planning(Option<Box<PlanningTimes>>);

impl From<PlanningTimes> for Planning {
    fn from(times: PlanningTimes) -> Planning {
        if times == NO_PLANNING {
            Planning(None)
        } else {
            Planning(Some(Box::new(times)))
        }
    }
}

impl std::ops::Deref for Planning {
    type Target = PlanningTimes;
    fn deref(&self) -> &PlanningTimes {
        self.0.as_deref().unwrap_or(&NO_PLANNING)
    }
}

impl std::ops::DerefMut for Planning {
    fn deref_mut(&mut self) -> &mut PlanningTimes {
        self.0.get_or_insert_with(Box::default)
    }
}

impl fmt::Debug for Planning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for Planning {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Planning {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Planning, D::Error> {
        PlanningTimes::deserialize(d).map(Planning::from)
    }
}

/// `stars` as a stored level: a headline of more than 65,535 stars is read as that deep.
pub fn saturating_level(stars: u32) -> u16 {
    u16::try_from(stars).unwrap_or(u16::MAX)
}

/// A property drawer entry: (key, value). Both are shared allocations: a key is the same
/// `Arc` as in other nodes of the thread that read it ([`intern_key`]), and an `:ID:` value
/// the same as the node's id. At 100k headlines, two `String`s a pair were about 13 MB.
pub type Property = (Arc<str>, Arc<str>);

/// How many distinct keys a thread keeps for sharing before starting over: drawers with
/// ever-new keys must not grow a worker's table without bound.
const INTERNED_KEYS_MAX: usize = 4096;

thread_local! {
    // Per thread, so the threads decoding a log in parallel never wait on each other or
    // bounce one reference count between cores; a key is at most once per thread.
    static KEYS: std::cell::RefCell<rustc_hash::FxHashSet<Arc<str>>> = Default::default();
}

/// `key` as the `Arc` this thread already holds for it.
pub fn intern_key(key: &str) -> Arc<str> {
    intern(&KEYS, key, |k: &str| Arc::from(k))
}

type InternTable<T> = std::thread::LocalKey<std::cell::RefCell<rustc_hash::FxHashSet<T>>>;

/// `text` as the value this thread's `table` already holds for it, made by `make` the first
/// time. A table keeps at most [`INTERNED_KEYS_MAX`] values, then starts over.
fn intern<Q, T>(table: &'static InternTable<T>, text: &Q, make: impl FnOnce(&Q) -> T) -> T
where
    Q: std::hash::Hash + Eq + ?Sized,
    T: std::borrow::Borrow<Q> + std::hash::Hash + Eq + Clone,
{
    table.with(|values| {
        let mut values = values.borrow_mut();
        if let Some(v) = values.get(text) {
            return v.clone();
        }
        if values.len() >= INTERNED_KEYS_MAX {
            values.clear();
        }
        let v = make(text);
        values.insert(v.clone());
        v
    })
}

/// Reads a string as whatever `F` makes of it, without an owned copy in between.
struct StrVisitor<F>(F);

impl<T, F: FnOnce(&str) -> T> serde::de::Visitor<'_> for StrVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<T, E> {
        Ok((self.0)(s))
    }
}

/// A string read straight into an `Arc<str>`: one allocation, where serde's own reads a
/// `Box<str>` and copies it.
pub(super) fn deserialize_arc_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Arc<str>, D::Error> {
    d.deserialize_str(StrVisitor(|s: &str| Arc::from(s)))
}

/// The log's `(key, value)` string pairs, keys interned and each value one allocation
/// (serde's `Arc<str>` would read a `Box<str>` and copy it).
fn deserialize_properties<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Box<[Property]>, D::Error> {
    struct Key(Arc<str>);
    struct Value(Arc<str>);
    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
            d.deserialize_str(StrVisitor(intern_key)).map(Key)
        }
    }
    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
            deserialize_arc_str(d).map(Value)
        }
    }
    let pairs = Vec::<(Key, Value)>::deserialize(d)?;
    Ok(pairs.into_iter().map(|(k, v)| (k.0, v.0)).collect())
}

/// What a node *is*: its own fields and its children's hashes. Stored once per distinct
/// version, by its [`hash`](NodeContent::hash). Where the node sits (file, offsets, parent)
/// is not part of it, so moving a subtree does not make new versions.
///
/// Written with the body and the children's hashes read from the log where they are (so
/// compaction copies them, checked); equal when every field is, those two read.
#[derive(Clone, Debug)]
pub struct NodeContent {
    /// [`NodeContent::compute_hash`] of the other fields, kept here only: the nodes and the
    /// versions table read it from their content rather than each holding a copy. Not
    /// written with the content: the log's version record carries it beside.
    pub hash: Hash,
    pub kind: NodeKind,
    pub title: Box<str>,
    pub todo: Option<Keyword>,
    pub todo_type: Option<TodoType>,
    pub priority: Option<char>,
    pub tags: Tags,
    /// Property drawer entries in file order, keys upcased as Org reports them.
    pub properties: Box<[Property]>,
    pub planning: Planning,
    /// In memory or in the log: read it with [`NodeContent::body`].
    pub body: Body,
    pub level: u16,
    /// The children's hashes when they are in memory. Only the version's own hash reads
    /// them, so where the body stays in the log they stay there too, after it, and this is
    /// empty (at 100k headlines, 3 MB less): read them with [`NodeContent::children`].
    pub(super) children: Box<[Hash]>,
}

/// The fields of [`NodeContent`] as the log holds them, in order.
const LOGGED_FIELDS: &[&str] = &[
    "kind",
    "title",
    "todo",
    "todo_type",
    "priority",
    "tags",
    "properties",
    "planning",
    "body",
    "level",
    "children",
];

impl<'de> Deserialize<'de> for NodeContent {
    /// Read as the log holds it; the children's hashes that follow a body left in the log
    /// are counted and left there too.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NodeContent, D::Error> {
        d.deserialize_struct("NodeContent", LOGGED_FIELDS, ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> serde::de::Visitor<'de> for ContentVisitor {
    type Value = NodeContent;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a node version of {} fields", LOGGED_FIELDS.len())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<NodeContent, A::Error> {
        // Each field with its place, for the error when the version is cut short.
        macro_rules! read {
            ($at:expr, $ty:ty) => {
                seq.next_element::<$ty>()?
                    .ok_or_else(|| serde::de::Error::invalid_length($at, &self))?
            };
        }
        let kind = read!(0, NodeKind);
        let title = read!(1, Box<str>);
        let todo = read!(2, Option<Keyword>);
        let todo_type = read!(3, Option<TodoType>);
        let priority = read!(4, Option<char>);
        let tags = read!(5, Tags);
        let LoggedProperties(properties) = read!(6, LoggedProperties);
        let planning = read!(7, Planning);
        let mut body = read!(8, Body);
        // Older logs wrote the level as a `u32` (the same varint for every level that fits):
        // a deeper one loads saturated, as the parser saturates it.
        let level = saturating_level(read!(9, u32));
        let children = match body.logged_mut() {
            Some(logged) => {
                let count = seq
                    .next_element_seed(CountHashes)?
                    .ok_or_else(|| serde::de::Error::invalid_length(10, &self))?;
                logged.set_children(count);
                Box::default()
            }
            None => read!(10, Box<[Hash]>),
        };
        Ok(NodeContent {
            hash: Hash::default(),
            kind,
            title,
            todo,
            todo_type,
            priority,
            tags,
            properties,
            planning,
            body,
            level,
            children,
        })
    }
}

/// Property pairs as the log holds them (see [`deserialize_properties`]).
struct LoggedProperties(Box<[Property]>);

impl<'de> Deserialize<'de> for LoggedProperties {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<LoggedProperties, D::Error> {
        deserialize_properties(d).map(LoggedProperties)
    }
}

/// The children's hashes behind a body left in the log: read to count them, not kept.
struct CountHashes;

impl<'de> serde::de::DeserializeSeed<'de> for CountHashes {
    type Value = u32;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CountHashes {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of hashes")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<u32, A::Error> {
        let mut count: u32 = 0;
        while seq.next_element::<Hash>()?.is_some() {
            count = count
                .checked_add(1)
                .ok_or_else(|| serde::de::Error::custom("2^32 children or more"))?;
        }
        Ok(count)
    }
}

impl Serialize for NodeContent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        // Destructured so that a field added must be written here (or said not to be).
        let NodeContent {
            // The log's version record carries it.
            hash: _,
            kind,
            title,
            todo,
            todo_type,
            priority,
            tags,
            properties,
            planning,
            body: _,
            level,
            children: _,
        } = self;
        let (body, children) = self.read().map_err(serde::ser::Error::custom)?;
        // The fields in the order of `LOGGED_FIELDS`, as `ContentVisitor` reads them.
        let mut st = s.serialize_struct("NodeContent", 11)?;
        st.serialize_field("kind", kind)?;
        st.serialize_field("title", title)?;
        st.serialize_field("todo", todo)?;
        st.serialize_field("todo_type", todo_type)?;
        st.serialize_field("priority", priority)?;
        st.serialize_field("tags", tags)?;
        st.serialize_field("properties", properties)?;
        st.serialize_field("planning", planning)?;
        st.serialize_field("body", &*body)?;
        st.serialize_field("level", level)?;
        st.serialize_field("children", &*children)?;
        st.end()
    }
}

impl PartialEq for NodeContent {
    fn eq(&self, other: &NodeContent) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        self.hash == other.hash
            && self.same_fields_but_body(other)
            && match (self.body.logged(), other.body.logged()) {
                // The same place in the same log: the same body and hashes follow.
                (Some(a), Some(b)) if a.same_place(b) => self.children == other.children,
                // Body and hashes in one read each. Unreadable is unequal: nothing can show
                // the two are the same.
                _ => matches!(
                    (self.read_unchecked(), other.read_unchecked()),
                    (Ok(a), Ok(b)) if a == b
                ),
            }
    }
}

impl Eq for NodeContent {}

impl NodeContent {
    /// Whether every field of the node itself is `other`'s: all but the hash and the
    /// children's hashes, the body read from the log where it is.
    pub fn same_own_fields(&self, other: &NodeContent) -> bool {
        self.same_fields_but_body(other) && self.body == other.body
    }

    /// [`NodeContent::same_own_fields`] but for the body, which may take a read.
    fn same_fields_but_body(&self, other: &NodeContent) -> bool {
        // Destructured so that a field added must be considered here.
        let NodeContent {
            hash: _,
            kind,
            title,
            todo,
            todo_type,
            priority,
            tags,
            properties,
            planning,
            body: _,
            level,
            children: _,
        } = self;
        *kind == other.kind
            && *title == other.title
            && *todo == other.todo
            && *todo_type == other.todo_type
            && *priority == other.priority
            && *tags == other.tags
            && *properties == other.properties
            && *planning == other.planning
            && *level == other.level
    }

    /// SHA-256 over a canonical, length-prefixed encoding of every other field, reading the
    /// body and the children's hashes from the log where they are. Children enter by hash,
    /// which makes the digest a Merkle hash of the whole subtree.
    pub fn compute_hash(&self) -> Result<Hash> {
        let (body, children) = self.read_unchecked()?;
        Ok(self.hash_with(&body, &children))
    }

    /// [`NodeContent::compute_hash`] with `body` and `children` for the body and the
    /// children's hashes.
    pub fn hash_with(&self, body: &str, children: &[Hash]) -> Hash {
        self.hash_with_body_bytes(body.as_bytes(), children)
    }

    /// [`NodeContent::hash_with`], the body given as its UTF-8 bytes.
    fn hash_with_body_bytes(&self, body: &[u8], children: &[Hash]) -> Hash {
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
        put_bytes(&mut h, body);
        // Hashed as the u32 it once was, so stored hashes stay valid.
        h.update(u32::from(self.level).to_le_bytes());
        h.update((children.len() as u64).to_le_bytes());
        for c in children {
            h.update(c.0);
        }
        Hash(h.finalize().into())
    }

    /// [`NodeContent::compute_hash`] of this version as just decoded from `payload`, which
    /// the log holds at byte `at`: a body left in the log, and the child hashes after it,
    /// are read from the payload, not the file. `None` when they are not in it.
    pub(super) fn hash_decoded_from(&self, payload: &[u8], at: u64) -> Option<Hash> {
        match self.body.logged() {
            Some(logged) => {
                let (body, children) = logged.within(payload, at)?;
                Some(self.hash_with_body_bytes(body, &children))
            }
            None => Some(self.hash_with(self.body.resident()?, &self.children)),
        }
    }

    /// The body and the children's hashes, read from the log where they are, not checked.
    fn read_unchecked(&self) -> Result<(Cow<'_, str>, Cow<'_, [Hash]>)> {
        match self.body.logged() {
            Some(logged) if logged.children() > 0 => {
                let (body, children) = logged.read_with_children()?;
                Ok((Cow::Owned(body), Cow::Owned(children)))
            }
            _ => Ok((self.body.read()?, Cow::Borrowed(&self.children))),
        }
    }

    /// The body and the children's hashes, read from the log where they are and then
    /// checked against this version's hash, so a log changed underneath is an error, never
    /// another note's text.
    fn read(&self) -> Result<(Cow<'_, str>, Cow<'_, [Hash]>)> {
        let (body, children) = self.read_unchecked()?;
        if let Some((path, offset)) = self.body.location() {
            if self.hash_with(&body, &children) != self.hash {
                return Err(StoreError::BodyUnreadable {
                    path: path.to_path_buf(),
                    offset,
                    reason: "the log holds other text there now".into(),
                });
            }
        }
        Ok((body, children))
    }

    /// The body's text, read from the log when it is there and checked against this
    /// version's hash.
    pub fn body(&self) -> Result<Cow<'_, str>> {
        self.read().map(|(body, _)| body)
    }

    /// The hashes of the children, in order, read from the log when they are there and
    /// checked against this version's hash.
    pub fn children(&self) -> Result<Cow<'_, [Hash]>> {
        self.read().map(|(_, children)| children)
    }

    /// The body's text or, when it cannot be read, a notice saying why: for text shown to a
    /// model or scanned for hints, where one unreadable body must not stop the rest.
    pub fn body_or_notice(&self) -> Cow<'_, str> {
        self.body()
            .unwrap_or_else(|e| Cow::Owned(format!("[org-agent: {e}]")))
    }

    pub fn property(&self, key: &str) -> Option<&str> {
        self.property_value(key).map(|v| &**v)
    }

    fn property_value(&self, key: &str) -> Option<&Arc<str>> {
        self.property_at(key).map(|i| &self.properties[i].1)
    }

    /// Where `key`'s entry is: the first one, as `org-entry-get` reads a repeated key in
    /// Org 9.5, where the drawer keeps every line; from 9.6 the drawer keeps one entry a key,
    /// with the last value (see `parse::merge_repeated_keys`), and `org-entry-get` reads that.
    fn property_at(&self, key: &str) -> Option<usize> {
        self.properties
            .iter()
            .position(|(k, _)| k.eq_ignore_ascii_case(key))
    }

    /// The `:ID:` value when it is the node's id as written (no blanks to trim), so the id can
    /// be this very allocation.
    pub fn id_value(&self) -> Option<&Arc<str>> {
        self.property_value("ID")
            .filter(|v| !v.is_empty() && v.trim().len() == v.len())
    }

    /// Make the `:ID:` value the allocation `id` when they are the same text, so an id that
    /// is also a property is in memory once.
    pub fn share_id_value(&mut self, id: &Arc<str>) {
        if let Some(i) = self.property_at("ID") {
            let slot = &mut self.properties[i].1;
            if !Arc::ptr_eq(slot, id) && **slot == **id {
                *slot = id.clone();
            }
        }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

fn put_str(h: &mut Sha256, s: &str) {
    put_bytes(h, s.as_bytes());
}

fn put_bytes(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
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
    pub content: Arc<NodeContent>,
    /// Index of the parent in the file's node list, [`NO_PARENT`] for the file node: read
    /// it with [`Node::parent`].
    pub(super) parent: u32,
    /// One past the last index of this node's subtree. Nodes are in document order, so a
    /// subtree is the run of indexes after its root, and the children are found by skipping
    /// from one child's subtree to the next: no list of children per node (at 100k nodes,
    /// 16 bytes each and an allocation per parent). Set by [`link_subtrees`].
    pub(super) subtree_end: u32,
    /// UTF-8 byte range of the subtree in the ingested text.
    pub begin: u32,
    pub end: u32,
    /// The same range as Emacs buffer positions (1-based character positions).
    pub begin_pos: u32,
    pub end_pos: u32,
    /// Tags from `#+FILETAGS` and ancestors, as a chain shared with the other nodes below
    /// the same ancestors: read them with [`Node::inherited`] or [`Node::has_tag`] (as a
    /// slice it is what the log records, see [`InheritedTags`]).
    pub inherited_tags: InheritedTags,
}

/// One ancestor's tags as its descendants inherit them.
#[derive(Debug)]
struct Link {
    up: Option<Arc<Link>>,
    tags: Tags,
    /// What the log records for the node holding this link (only the file node's is
    /// ever set; see [`InheritedTags`]'s `Deref`).
    logged: Tags,
}

/// The tags a node inherits, as a shared chain that `store::inherit` derives (why and how
/// is there). A thin pointer: a node is one of 100k.
///
/// Read them with [`InheritedTags::contains`], [`InheritedTags::any`] or, in Org's order,
/// [`Node::inherited`]. As a slice (its `Deref`) it is what the log's placement record
/// writes for the node: nothing, or in the file node the list reading the log derives the
/// chains from. It is not the tags.
#[derive(Clone, Debug, Default)]
pub struct InheritedTags(Option<Arc<Link>>);

impl std::ops::Deref for InheritedTags {
    type Target = [String];
    fn deref(&self) -> &[String] {
        self.0.as_deref().map_or(&[], |link| &link.logged)
    }
}

impl InheritedTags {
    /// The links, innermost first.
    fn links(&self) -> impl Iterator<Item = &Link> {
        std::iter::successors(self.0.as_deref(), |l| l.up.as_deref())
    }

    /// Every inherited tag, repeats included, innermost ancestor first.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.links()
            .flat_map(|l| l.tags.iter().rev())
            .map(String::as_str)
    }

    /// Whether the node inherits no tag (what the log records aside).
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    pub fn contains(&self, tag: &str) -> bool {
        self.iter().any(|t| t == tag)
    }

    pub fn any(&self, f: impl FnMut(&str) -> bool) -> bool {
        self.iter().any(f)
    }

    /// The tags `org-get-tags` marks `inherited` on a node whose own tags are `own`: outermost
    /// first, each at its last place, none of `own`.
    pub fn as_org<'a>(&'a self, own: &'a [String]) -> Vec<&'a str> {
        let mut seen: rustc_hash::FxHashSet<&str> = own.iter().map(String::as_str).collect();
        let mut out: Vec<&str> = self.iter().filter(|t| seen.insert(t)).collect();
        out.reverse();
        out
    }

    /// This chain with `tags` passed down below it (itself when there are none), or a chain
    /// of `tags` alone without `up`.
    pub(super) fn passing(up: Option<&InheritedTags>, tags: Tags) -> InheritedTags {
        let up = up.and_then(|u| u.0.clone());
        if tags.is_empty() {
            return InheritedTags(up);
        }
        InheritedTags(Some(Arc::new(Link {
            up,
            tags,
            logged: Tags::default(),
        })))
    }

    /// No inherited tags, and `logged` for the log to record.
    pub(super) fn logged_only(logged: Tags) -> InheritedTags {
        InheritedTags(Some(Arc::new(Link {
            up: None,
            tags: Tags::default(),
            logged,
        })))
    }

    /// The tag lists this chain holds, as (address, length): a list shared by several chains
    /// has the same address in each.
    pub(super) fn lists(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.links()
            .flat_map(|l| [l.tags.address(), l.logged.address()])
            .flatten()
    }
}

/// `tags` without repeats, each at its last place, as `org-get-tags` keeps them.
pub fn keep_last<'a>(tags: impl DoubleEndedIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
    let mut out: Vec<&str> = tags.rev().filter(|t| seen.insert(t)).collect();
    out.reverse();
    out
}

/// [`Node::parent`] of the file node, as stored.
pub(super) const NO_PARENT: u32 = u32::MAX;

impl Node {
    /// The hash of this node's version.
    pub fn hash(&self) -> Hash {
        self.content.hash
    }

    /// Index of the parent in the file's node list (`None` for the file node).
    pub fn parent(&self) -> Option<u32> {
        (self.parent != NO_PARENT).then_some(self.parent)
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.content.has_tag(tag) || self.inherited_tags.contains(tag)
    }

    /// The tags `org-get-tags` marks `inherited`: from `#+FILETAGS` and ancestors, outermost
    /// first, each at its last place, none of the node's own.
    pub fn inherited(&self) -> Vec<&str> {
        self.inherited_tags.as_org(&self.content.tags)
    }

    /// All the node's tags as `org-get-tags` gives them: [`Node::inherited`], then the own
    /// tags, each at its last place.
    pub fn all_tags(&self) -> Vec<&str> {
        let mut all = self.inherited();
        all.extend(keep_last(self.content.tags.iter().map(String::as_str)));
        all
    }
}

/// The indexes of the children of `nodes[index]`, in document order. `nodes` is a file's
/// node list that went through [`link_subtrees`].
pub fn children(nodes: &[Node], index: u32) -> Children<'_> {
    Children {
        nodes,
        next: index.saturating_add(1),
        end: subtree_end(nodes, index),
    }
}

/// One past the last index of `nodes[index]`'s subtree, never past the list (`index`
/// itself when it is past the list).
pub fn subtree_end(nodes: &[Node], index: u32) -> u32 {
    nodes
        .get(index as usize)
        .map_or(index, |n| n.subtree_end.min(nodes.len() as u32))
}

/// Whether `nodes[index]` has children.
pub fn has_children(nodes: &[Node], index: u32) -> bool {
    children(nodes, index).next().is_some()
}

/// See [`children`].
#[derive(Clone)]
pub struct Children<'a> {
    nodes: &'a [Node],
    next: u32,
    end: u32,
}

impl Iterator for Children<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.next >= self.end {
            return None;
        }
        let child = self.next;
        // `max` keeps the walk going forward should a subtree end be wrong; `end` is at most
        // the list's length, so `child` is in it.
        self.next = self.nodes[child as usize].subtree_end.max(child + 1);
        Some(child)
    }
}

/// Set each node's subtree end from the parents, after checking that `nodes` is a tree in
/// document order: the file node first with no parent, and each other node's parent the
/// node before it or one of that node's ancestors. `false`, with nothing set, when it is
/// not (a log written by something else), since the children would then be wrong.
pub(super) fn link_subtrees(nodes: &mut [Node]) -> bool {
    let Some(first) = nodes.first() else {
        return true;
    };
    if first.parent != NO_PARENT || u32::try_from(nodes.len()).is_err() {
        return false;
    }
    let mut ends = vec![nodes.len() as u32; nodes.len()];
    // The open subtrees: the ancestors of the node before, and that node, root first.
    let mut open: Vec<u32> = vec![0];
    for (i, n) in nodes.iter().enumerate().skip(1) {
        loop {
            match open.last() {
                Some(&top) if top == n.parent => break,
                Some(&top) => {
                    ends[top as usize] = i as u32;
                    open.pop();
                }
                None => return false,
            }
        }
        open.push(i as u32);
    }
    for (n, end) in nodes.iter_mut().zip(ends) {
        n.subtree_end = end;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `NodeContent` as logs before the compact layout wrote it.
    #[derive(Serialize, Deserialize)]
    struct LoggedBefore {
        kind: NodeKind,
        title: String,
        todo: Option<String>,
        todo_type: Option<TodoType>,
        priority: Option<char>,
        tags: Vec<String>,
        properties: Vec<(String, String)>,
        planning: PlanningTimes,
        body: String,
        level: u32,
        children: Vec<Hash>,
    }

    fn logged(level: u32, planning: PlanningTimes) -> LoggedBefore {
        LoggedBefore {
            kind: NodeKind::Headline,
            title: "Weekly review".into(),
            todo: Some("TODO".into()),
            todo_type: Some(TodoType::Todo),
            priority: Some('A'),
            tags: vec!["work".into(), "é".into()],
            properties: vec![
                ("ID".into(), "abc".into()),
                ("EFFORT".into(), "1:00".into()),
            ],
            planning,
            body: "Body.\n".into(),
            level,
            children: vec![Hash([7; 32])],
        }
    }

    #[test]
    fn the_compact_layout_reads_and_writes_the_logged_format() {
        let with_planning = PlanningTimes {
            scheduled: Some("<2024-03-01 Fri +1w>".into()),
            deadline: None,
            closed: Some("[2024-02-01 Thu 09:12]".into()),
        };
        for planning in [PlanningTimes::default(), with_planning] {
            let before = postcard::to_stdvec(&logged(3, planning.clone())).expect("encode");
            let read: NodeContent = postcard::from_bytes(&before).expect("decode");
            assert_eq!(&*read.title, "Weekly review");
            assert_eq!(read.todo.as_deref(), Some("TODO"));
            assert_eq!(*read.tags, ["work", "é"]);
            assert_eq!(read.property("effort"), Some("1:00"));
            assert_eq!(*read.planning, planning);
            assert_eq!(
                read.planning.0.is_some(),
                planning != PlanningTimes::default()
            );
            assert_eq!(read.level, 3);
            assert_eq!(*read.children, [Hash([7; 32])]);
            assert_eq!(postcard::to_stdvec(&read).expect("encode"), before);
        }
    }

    #[test]
    fn decoded_keys_are_shared_and_values_read_as_written() {
        let bytes = postcard::to_stdvec(&logged(3, PlanningTimes::default())).expect("encode");
        let a: NodeContent = postcard::from_bytes(&bytes).expect("decode");
        let b: NodeContent = postcard::from_bytes(&bytes).expect("decode");
        for i in 0..2 {
            assert!(Arc::ptr_eq(&a.properties[i].0, &b.properties[i].0));
            assert!(!Arc::ptr_eq(&a.properties[i].1, &b.properties[i].1));
        }
        assert_eq!(a.id_value().map(|v| &**v), Some("abc"));
        let (Some(a_tags), Some(b_tags)) = (&a.tags.0, &b.tags.0) else {
            panic!("tags read as none: {:?}", a.tags)
        };
        assert!(Arc::ptr_eq(a_tags, b_tags));
        // An id is shared only when it is the same text.
        let mut c = a.clone();
        let other: Arc<str> = Arc::from("abd");
        c.share_id_value(&other);
        assert_eq!(c.property("ID"), Some("abc"));
        let same: Arc<str> = Arc::from("abc");
        c.share_id_value(&same);
        assert!(Arc::ptr_eq(c.id_value().expect("id"), &same));
    }

    #[test]
    fn a_thread_holds_one_list_per_set_of_tags_in_order() {
        let work = |t: &[&str]| Tags::from(t.iter().map(|t| t.to_string()).collect::<Vec<_>>());
        let (a, b) = (work(&["work", "urgent"]), work(&["work", "urgent"]));
        assert!(matches!((&a.0, &b.0), (Some(x), Some(y)) if Arc::ptr_eq(x, y)));
        // Order is part of the list: Org shows tags as written.
        let swapped = work(&["urgent", "work"]);
        assert_ne!(a, swapped);
        assert!(matches!((&a.0, &swapped.0), (Some(x), Some(y)) if !Arc::ptr_eq(x, y)));
        assert_eq!(*swapped, ["urgent", "work"]);
        // No tags hold nothing, and read as an empty list.
        let none = work(&[]);
        assert!(none.0.is_none() && none.is_empty() && none == Tags::default());
        assert_eq!(postcard::to_stdvec(&none).expect("encode"), [0]);
        // Written as the plain list the log always held.
        let list = vec!["work".to_string(), "urgent".to_string()];
        assert_eq!(
            postcard::to_stdvec(&a).expect("encode"),
            postcard::to_stdvec(&list).expect("encode")
        );
        // Each thread has its own table: another thread's list is equal, not shared.
        let elsewhere = std::thread::spawn(move || work(&["work", "urgent"]))
            .join()
            .expect("thread");
        assert_eq!(elsewhere, a);
        assert!(matches!((&a.0, &elsewhere.0), (Some(x), Some(y)) if !Arc::ptr_eq(x, y)));
    }

    #[test]
    fn a_level_deeper_than_16_bits_loads_saturated_and_digests_are_unchanged() {
        let deep = postcard::to_stdvec(&logged(70_000, PlanningTimes::default())).expect("encode");
        let read: NodeContent = postcard::from_bytes(&deep).expect("decode");
        assert_eq!(read.level, u16::MAX);
        // The digest of the same node before the compact layout (computed outside Rust from
        // the encoding `hash` documents), so every stored hash stays valid.
        let logged = postcard::to_stdvec(&logged(3, PlanningTimes::default())).expect("encode");
        let read: NodeContent = postcard::from_bytes(&logged).expect("decode");
        assert_eq!(
            read.compute_hash().expect("in memory").to_hex(),
            "9dc411bb6d9d63c968f059488b73a54b1a5d44a7ec98d95f3824bd9f5d189d69"
        );
    }

    #[test]
    fn digests_of_long_fields_are_unchanged() {
        // Fields longer than SHA-256's block, and shorter ones between them: the digest is of
        // the encoding `hash` documents (computed outside Rust from it).
        let mut node = logged(2, PlanningTimes::default());
        node.title = "a long title ".repeat(50);
        node.body = format!("{}é\n", "body line\n".repeat(300));
        node.properties.push(("NOTE".into(), "x".repeat(700)));
        node.children = (0..40).map(|i| Hash([i; 32])).collect();
        let encoded = postcard::to_stdvec(&node).expect("encode");
        let read: NodeContent = postcard::from_bytes(&encoded).expect("decode");
        assert_eq!(
            read.compute_hash().expect("in memory").to_hex(),
            "3fedb3b7015d7e7910c4aacb4c192217abcbf591a4e68c335d67df3a2326e72d"
        );
    }

    fn outline(text: &str) -> Vec<Node> {
        crate::store::parse::parse_with_defaults(text, std::path::Path::new("/t.org"))
            .expect("parses")
            .nodes
    }

    fn all_children(nodes: &[Node]) -> Vec<Vec<u32>> {
        (0..nodes.len() as u32)
            .map(|i| children(nodes, i).collect())
            .collect()
    }

    #[test]
    fn children_follow_their_parent_in_document_order() {
        let nodes = outline("intro\n* a\n** b\n* c\n** d\n*** e\n**** f\n** g\n");
        let parents: Vec<Option<u32>> = nodes.iter().map(Node::parent).collect();
        assert_eq!(
            parents,
            [
                None,
                Some(0),
                Some(1),
                Some(0),
                Some(3),
                Some(4),
                Some(5),
                Some(3)
            ]
        );
        assert_eq!(
            all_children(&nodes),
            [
                vec![1, 3],
                vec![2],
                vec![],
                vec![4, 7],
                vec![5],
                vec![6],
                vec![],
                vec![]
            ]
        );
        let with_children: Vec<bool> = (0..8).map(|i| has_children(&nodes, i)).collect();
        assert_eq!(
            with_children,
            [true, true, false, true, true, true, false, false]
        );
        // Past the end: nothing, no panic.
        assert_eq!(children(&nodes, 8).count(), 0);
        assert_eq!(children(&nodes, u32::MAX).count(), 0);
        assert_eq!(all_children(&outline("")), [Vec::<u32>::new()]);
    }

    #[test]
    fn a_list_that_is_not_an_outline_in_document_order_is_refused() {
        let text = "* a\n** b\n* c\n** d\n";
        let mut nodes = outline(text);
        assert!(link_subtrees(&mut nodes));
        let before = all_children(&nodes);
        // Each: (node, new parent); none is the node before it or one of its ancestors.
        for (node, parent) in [(4, 1), (2, 3), (2, 2), (0, 0), (3, NO_PARENT), (1, 7)] {
            let mut broken = outline(text);
            broken[node].parent = parent;
            assert!(!link_subtrees(&mut broken), "node {node} under {parent}");
        }
        // A sibling of an ancestor is fine: `d` under the file node.
        nodes[4].parent = 0;
        assert!(link_subtrees(&mut nodes));
        assert_ne!(all_children(&nodes), before);
        assert_eq!(all_children(&nodes)[0], [1, 3, 4]);
    }

    #[test]
    fn child_hashes_stay_in_the_log_behind_a_body_that_does() {
        use crate::store::body::{DecodingFromLog, LogReader, LoggedBody};
        // `f` and `g`: a version with its hashes in memory right after one with them in the
        // log. `deep`: a level of two varint bytes before the hashes.
        let text = format!(
            "* a\nText of a.\n** b\nText of b.\n** c\n* d\n** e\n* f\nText of f.\n* g\n** h\n\
             {} deep\nDeep text.\n{} deeper\n",
            "*".repeat(130),
            "*".repeat(131)
        );
        let nodes = outline(&text);
        assert_eq!(nodes[9].content.level, 130);
        let originals: Vec<NodeContent> = nodes.iter().map(|n| (*n.content).clone()).collect();
        let versions: Vec<(Hash, &NodeContent)> = originals.iter().map(|c| (c.hash, c)).collect();
        let payload = postcard::to_stdvec(&versions).expect("encode");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        std::fs::write(&path, &payload).expect("write");
        let log = Arc::new(LogReader::open(&path).expect("open"));
        let decoded: Vec<(Hash, NodeContent)> = {
            let _span = DecodingFromLog::enter(&log, &payload, 0);
            postcard::from_bytes(&payload).expect("decode")
        };
        let read: Vec<NodeContent> = decoded
            .into_iter()
            .map(|(hash, mut c)| {
                c.hash = hash;
                c
            })
            .collect();
        let in_log: Vec<Option<u32>> = read
            .iter()
            .map(|c| c.body.logged().map(LoggedBody::children))
            .collect();
        // Blank bodies (the file node's, `c`, `d`, `e`, `g`, `h`, `deeper`) stay in memory,
        // and with them their children's hashes.
        assert_eq!(
            in_log,
            [
                None,
                Some(2),
                Some(0),
                None,
                None,
                None,
                Some(0),
                None,
                None,
                Some(1),
                None
            ]
        );
        let kept: Vec<usize> = read.iter().map(|c| c.children.len()).collect();
        assert_eq!(kept, [4, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0]);
        for (r, o) in read.iter().zip(&originals) {
            assert_eq!(*r.children().expect("read"), *o.children, "{}", o.title);
            assert_eq!(r.compute_hash().expect("read"), o.hash, "{}", o.title);
        }
        assert_eq!(read, originals);
        // Written back, they are where they were.
        let again: Vec<(Hash, &NodeContent)> = read.iter().map(|c| (c.hash, c)).collect();
        assert_eq!(postcard::to_stdvec(&again).expect("encode"), payload);

        // A child hash changed in the log: the version no longer reads.
        let b_hash = originals[2].hash.0;
        let at = payload
            .windows(32)
            .position(|w| w == b_hash)
            .expect("b's hash in the log");
        let mut changed = payload.clone();
        changed[at + 31] ^= 1;
        std::fs::write(&path, &changed).expect("write");
        let e = read[1].children().expect_err("changed").to_string();
        assert!(
            e.contains("other text there now") && e.contains("log"),
            "{e}"
        );
        assert!(read[1].body().is_err() && read[1].compute_hash().is_ok());
        assert_ne!(read[1], originals[1]);
        // Still equal to itself, and to a copy: the same place in the same log.
        assert_eq!(read[1], read[1].clone());
        assert!(postcard::to_stdvec(&read[1]).is_err());
        // The log cut short inside the hashes.
        std::fs::write(&path, &payload[..at + 16]).expect("write");
        let e = read[1].children().expect_err("cut short").to_string();
        assert!(e.contains("child hashes after it do not read back"), "{e}");
        // Cut short inside the body.
        std::fs::write(&path, &payload[..at - 40]).expect("write");
        let e = read[1].body().expect_err("cut short").to_string();
        assert!(e.contains("the log ends before it"), "{e}");
    }

    #[test]
    fn a_stored_version_fits_a_160_byte_block() {
        // With the `Arc`'s two counts, 144 bytes fill mimalloc's 160-byte class exactly: one
        // byte more and every stored version takes the next class (at 100k headlines, MBs).
        assert!(std::mem::size_of::<NodeContent>() <= 144);
        assert_eq!(std::mem::size_of::<Option<Keyword>>(), 8);
        assert_eq!(std::mem::size_of::<Tags>(), 8);
        // A node is one of 100k in the files' node lists: 56 bytes, with no list of children
        // and its inherited tags behind a thin pointer.
        assert!(std::mem::size_of::<Node>() <= 56);
    }

    #[test]
    fn hex_is_lowercase_two_digits_a_byte_and_reads_back() {
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0xa5;
        }
        let h = Hash(bytes);
        let hex = h.to_hex();
        assert_eq!(&hex[..8], "a580efca");
        assert_eq!(hex.len(), 64);
        assert_eq!(Hash::from_hex(&hex), Some(h));
        assert_eq!(Hash([255; 32]).to_hex(), "f".repeat(64));
    }

    #[test]
    fn writing_planning_boxes_it_and_no_planning_stays_unboxed() {
        let mut p = Planning::default();
        assert!(p.0.is_none() && p.scheduled.is_none());
        p.deadline = Some("<2024-01-02 Tue>".into());
        assert_eq!(p.deadline.as_deref(), Some("<2024-01-02 Tue>"));
        assert!(p.0.is_some());
        assert!(Planning::from(PlanningTimes::default()).0.is_none());
    }
}
