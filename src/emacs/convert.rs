//! Lisp ⇄ Rust conversion for the store's data: node plists, events, query plists.

use super::lisp_sexp::{encoded_bytes, is_non_unicode};
pub use super::lisp_sexp::{text, text_arg};
use super::org_agent_error;
use crate::agent::Event;
use crate::store::{
    filename, FileDoc, Node, NodeContent, NodeKind, NodeRef, PlanningTimes, Property, Query,
    TodoType, Version,
};
use ::emacs::{Env, IntoLisp, Result, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

::emacs::use_symbols! {
    kw_id => ":id"
    kw_kind => ":kind"
    kw_title => ":title"
    kw_todo => ":todo"
    kw_todo_type => ":todo-type"
    kw_priority => ":priority"
    kw_tags => ":tags"
    kw_inherited_tags => ":inherited-tags"
    kw_properties => ":properties"
    kw_scheduled => ":scheduled"
    kw_deadline => ":deadline"
    kw_closed => ":closed"
    kw_level => ":level"
    kw_file => ":file"
    kw_begin => ":begin"
    kw_end => ":end"
    kw_hash => ":hash"
    kw_parent => ":parent"
    kw_body => ":body"
    kw_children => ":children"
    kw_time => ":time"
    sym_todo => "todo"
    sym_done => "done"
    sym_file => "file"
    sym_headline => "headline"
    sym_org_agent_node => "org-agent-node"
}

// Called for every plist and list we build: through a cached function reference instead of
// interning the symbol each time.
::emacs::use_functions! {
    fn_list => "list"
    fn_cons => "cons"
    fn_record => "record"
}

/// Hard cap on the length of a plist or list argument we walk (guards circular lists).
const MAX_LIST: usize = 100_000;

pub fn kw<'e>(env: &'e Env, name: &str) -> Result<Value<'e>> {
    env.intern(name)
}

pub fn list<'e>(env: &'e Env, items: Vec<Value<'e>>) -> Result<Value<'e>> {
    if items.is_empty() {
        return ().into_lisp(env);
    }
    fn_list.call(env, &items[..])
}

pub fn plist<'e>(env: &'e Env, pairs: Vec<(Value<'e>, Value<'e>)>) -> Result<Value<'e>> {
    let mut items = Vec::with_capacity(pairs.len() * 2);
    for (k, v) in pairs {
        items.push(k);
        items.push(v);
    }
    list(env, items)
}

pub fn strings<'e, S: AsRef<str>>(env: &'e Env, items: &[S]) -> Result<Value<'e>> {
    let mut out = Vec::with_capacity(items.len());
    for s in items {
        out.push(text(env, s.as_ref())?);
    }
    list(env, out)
}

/// The elements of a proper list as Lisp values.
pub fn list_items<'e>(env: &'e Env, mut v: Value<'e>) -> Result<Vec<Value<'e>>> {
    let mut out = Vec::new();
    while v.is_not_nil() {
        if out.len() >= MAX_LIST {
            return env.signal(org_agent_error, ("list argument too long or circular",));
        }
        out.push(v.car()?);
        v = v.cdr()?;
    }
    Ok(out)
}

/// A list of strings (symbols are taken by name).
pub fn string_list(env: &Env, v: Value) -> Result<Vec<String>> {
    list_items(env, v)?
        .into_iter()
        .map(|item| lisp_string(env, item))
        .collect()
}

/// A string, or the name of a symbol.
pub fn lisp_string(env: &Env, v: Value) -> Result<String> {
    if env.call("symbolp", [v])?.is_not_nil() {
        env.call("symbol-name", [v])?.into_rust()
    } else {
        v.into_rust()
    }
}

/// The coding system Emacs encodes file names with, as `ENCODE_FILE` picks it.
fn file_name_coding<'e>(env: &'e Env) -> Result<Value<'e>> {
    for var in ["file-name-coding-system", "default-file-name-coding-system"] {
        let coding = env.call("symbol-value", [env.intern(var)?])?;
        if coding.is_not_nil() {
            return Ok(coding);
        }
    }
    env.intern("utf-8-unix")
}

/// A file name argument as the store's key for it (see [`crate::store::filename`]): a name
/// whose bytes are not all UTF-8 (Unix file names are bytes) keeps them.
pub fn file_arg(env: &Env, v: Value) -> Result<String> {
    match v.into_rust::<String>() {
        Ok(name) => Ok(filename::key_from_bytes(name.as_bytes()).into_owned()),
        Err(e) if is_non_unicode(&e) => {
            let bytes = encoded_bytes(env, v, file_name_coding(env)?)?;
            Ok(filename::key_from_bytes(&bytes).into_owned())
        }
        Err(e) => Err(e),
    }
}

/// The Emacs file name the store key `key` stands for.
pub fn file_name_value<'e>(env: &'e Env, key: &str) -> Result<Value<'e>> {
    if !filename::is_escaped(key) {
        return key.into_lisp(env);
    }
    let bytes = filename::to_bytes(key);
    let unibyte = (&*bytes).into_lisp(env)?;
    env.call(
        "decode-coding-string",
        (unibyte, file_name_coding(env)?, true),
    )
}

pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn opt_str<'e>(env: &'e Env, s: Option<&str>) -> Result<Value<'e>> {
    match s {
        Some(s) => text(env, s),
        None => ().into_lisp(env),
    }
}

/// Which keys a node plist carries (`:fields` in a query), as a bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields(u32);

/// The keys of a node plist, in the order they appear.
const FIELD_NAMES: [&str; 19] = [
    ":id",
    ":kind",
    ":title",
    ":todo",
    ":todo-type",
    ":priority",
    ":tags",
    ":properties",
    ":scheduled",
    ":deadline",
    ":closed",
    ":level",
    ":inherited-tags",
    ":file",
    ":begin",
    ":end",
    ":hash",
    ":parent",
    ":body",
];
const F_BODY: usize = 18;

impl Fields {
    /// Everything but the body (what queries return by default).
    pub const QUERY: Fields = Fields((1 << F_BODY) - 1);
    /// Everything, with the body and the children's ids (what `org-agent-node` returns).
    pub const ALL: Fields = Fields(u32::MAX);

    fn has(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    /// The field set named by a list of keywords such as `(:id :title)`.
    pub fn from_names(env: &Env, names: Vec<String>) -> Result<Fields> {
        let mut bits = 0;
        for name in names {
            match FIELD_NAMES.iter().position(|f| *f == name) {
                Some(i) => bits |= 1 << i,
                None => {
                    return env.signal(
                        org_agent_error,
                        (format!(
                            "unknown node field {name}; known: {}",
                            FIELD_NAMES.join(" ")
                        ),),
                    )
                }
            }
        }
        Ok(Fields(bits))
    }
}

/// The hits of one lazy query (`:lazy t`): the nodes as they were when queried, which the
/// `org-agent-node` records Elisp holds point into (a record is the symbol, this, an index).
pub struct Hits(pub Vec<NodeRef>);

impl ::emacs::Transfer for Hits {
    fn type_name() -> &'static str {
        "org-agent-hits"
    }
}

/// Builds node plists with as little Lisp garbage as the keys allow: a key whose value is nil
/// is left out (`plist-get` answers nil all the same), and a string many nodes share (a file
/// name, TODO keyword, tag, property name, a node's id as its `:id` and as its children's
/// `:parent`) is one Lisp string per call. The strings are shared, so callers must not modify
/// them in place; the lists are each node's own.
pub struct NodePlists<'e> {
    env: &'e Env,
    fields: Fields,
    keys: [Value<'e>; 19],
    file: Option<(*const FileDoc, Value<'e>)>,
    shared: HashMap<String, Value<'e>>,
    /// The `:id` string of the node being built, for an `ID` property of the same value.
    id: Option<Value<'e>>,
    /// Each node's id string made in this call, by document and index: a subtree's nodes
    /// share their parent's as `:parent`, and with the parent's `:id` when it is a hit too.
    /// Keyed by the document's address, as `file` is: a `NodePlists` lives for one call, and
    /// the nodes it is given hold their documents for all of it.
    ids: rustc_hash::FxHashMap<(*const FileDoc, u32), Value<'e>>,
}

impl<'e> NodePlists<'e> {
    pub fn new(env: &'e Env, fields: Fields) -> Self {
        let keys = [
            kw_id.bind(env),
            kw_kind.bind(env),
            kw_title.bind(env),
            kw_todo.bind(env),
            kw_todo_type.bind(env),
            kw_priority.bind(env),
            kw_tags.bind(env),
            kw_properties.bind(env),
            kw_scheduled.bind(env),
            kw_deadline.bind(env),
            kw_closed.bind(env),
            kw_level.bind(env),
            kw_inherited_tags.bind(env),
            kw_file.bind(env),
            kw_begin.bind(env),
            kw_end.bind(env),
            kw_hash.bind(env),
            kw_parent.bind(env),
            kw_body.bind(env),
        ];
        NodePlists {
            env,
            fields,
            keys,
            file: None,
            shared: HashMap::new(),
            id: None,
            ids: Default::default(),
        }
    }

    /// The id of node `index` of `doc` as one Lisp string per call.
    fn node_id(&mut self, doc: &Arc<FileDoc>, index: u32) -> Result<Value<'e>> {
        let key = (Arc::as_ptr(doc), index);
        if let Some(v) = self.ids.get(&key) {
            return Ok(*v);
        }
        let v = text(self.env, &doc.nodes[index as usize].id)?;
        self.ids.insert(key, v);
        Ok(v)
    }

    fn file_value(&mut self, doc: &Arc<FileDoc>) -> Result<Value<'e>> {
        let ptr = Arc::as_ptr(doc);
        match self.file {
            Some((p, v)) if p == ptr => Ok(v),
            _ => {
                let v = file_name_value(self.env, &doc.path)?;
                self.file = Some((ptr, v));
                Ok(v)
            }
        }
    }

    /// One Lisp string per distinct `s` within this call.
    fn shared(&mut self, s: &str) -> Result<Value<'e>> {
        if let Some(v) = self.shared.get(s) {
            return Ok(*v);
        }
        let v = text(self.env, s)?;
        self.shared.insert(s.to_string(), v);
        Ok(v)
    }

    fn shared_list<'a>(
        &mut self,
        items: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<Option<Value<'e>>> {
        if items.len() == 0 {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(items.len());
        for s in items {
            out.push(self.shared(s)?);
        }
        Ok(Some(list(self.env, out)?))
    }

    fn properties(&mut self, props: &[Property], id: &str) -> Result<Option<Value<'e>>> {
        if props.is_empty() {
            return Ok(None);
        }
        let env = self.env;
        let mut out = Vec::with_capacity(props.len());
        for (k, v) in props {
            let key = self.shared(k)?;
            let value = match self.id {
                Some(same) if &**k == "ID" && &**v == id => same,
                _ => self.shared(v)?,
            };
            out.push(fn_cons.call(env, (key, value))?);
        }
        Ok(Some(list(env, out)?))
    }

    /// The value of field `i` (an index into [`FIELD_NAMES`]) of the node `r`; None for nil.
    pub fn field(&mut self, r: &NodeRef, i: usize) -> Result<Option<Value<'e>>> {
        let env = self.env;
        let n = r.node();
        let c = &n.content;
        let int = |x: i64| x.into_lisp(env).map(Some);
        match i {
            0 => {
                let id = self.node_id(&r.doc, r.index)?;
                self.id = Some(id);
                Ok(Some(id))
            }
            1 => Ok(Some(match c.kind {
                NodeKind::File => sym_file.bind(env),
                NodeKind::Headline => sym_headline.bind(env),
            })),
            2 => text(env, &c.title).map(Some),
            3 => c.todo.as_deref().map(|k| self.shared(k)).transpose(),
            4 => Ok(c.todo_type.map(|t| match t {
                TodoType::Todo => sym_todo.bind(env),
                TodoType::Done => sym_done.bind(env),
            })),
            5 => c.priority.map(|p| int(p as i64)).unwrap_or(Ok(None)),
            6 => self.shared_list(c.tags.iter().map(String::as_str)),
            7 => self.properties(&c.properties, &n.id),
            8..=10 => {
                let p = &c.planning;
                let ts = [&p.scheduled, &p.deadline, &p.closed][i - 8];
                ts.as_deref().map(|s| self.shared(s)).transpose()
            }
            11 => int(c.level as i64),
            12 => self.shared_list(n.inherited().into_iter()),
            13 => self.file_value(&r.doc).map(Some),
            14 => int(n.begin_pos as i64),
            15 => int(n.end_pos as i64),
            16 => text(env, &n.hash().to_hex()).map(Some),
            17 => n.parent().map(|p| self.node_id(&r.doc, p)).transpose(),
            F_BODY => body_text(env, c).map(Some),
            _ => Ok(None),
        }
    }

    pub fn plist(&mut self, r: &NodeRef) -> Result<Value<'e>> {
        let env = self.env;
        let f = self.fields;
        self.id = None;
        let mut out: Vec<Value<'e>> = Vec::with_capacity(40);
        for i in 0..FIELD_NAMES.len() {
            if f.has(i) {
                if let Some(v) = self.field(r, i)? {
                    out.push(self.keys[i]);
                    out.push(v);
                }
            }
        }
        if f == Fields::ALL && r.doc.has_children(r.index) {
            out.push(kw_children.bind(env));
            let mut kids = Vec::new();
            for c in r.doc.children(r.index) {
                kids.push(text(env, &r.doc.nodes[c as usize].id)?);
            }
            out.push(list(env, kids)?);
        }
        list(env, out)
    }

    /// The records of a lazy query: one `(org-agent-node HITS INDEX)` record per hit.
    pub fn records(env: &'e Env, hits: Vec<NodeRef>) -> Result<Value<'e>> {
        let n = hits.len();
        if n == 0 {
            return ().into_lisp(env);
        }
        let hits = Box::new(RefCell::new(Hits(hits))).into_lisp(env)?;
        let tag = sym_org_agent_node.bind(env);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            out.push(fn_record.call(env, (tag, hits, i as i64))?);
        }
        list(env, out)
    }
}

/// Ask the CPU to load `len` bytes at `p` into its cache, without waiting for them.
#[inline(always)]
fn prefetch<T: ?Sized>(p: *const T, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = p as *const u8 as *const i8;
        // SAFETY: a prefetch is a hint: it never faults and reads nothing into the program,
        // whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            if len > 64 {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

/// Warm what the plist of hit `i` will read, some hits ahead.
///
/// A query leaves most of its hits' data out of the cache, and that data is a chain: the
/// node; then its id, its parent's node and its content; then the parent's id and the
/// content's title, planning and properties; then their text. Each link waits on the one
/// before, and building the plists of 6,000 hits spent a third of its time so waiting.
/// Emacs's own work between two plists is long enough to hide those waits if each link is
/// asked for a few hits before it is read: a hit's node 12 hits ahead, its content 8, and
/// so on.
pub fn warm_hit(hits: &[NodeRef], i: usize) {
    if let Some(r) = hits.get(i + 12) {
        prefetch(r.node(), size_of::<Node>());
    }
    if let Some(r) = hits.get(i + 8) {
        let n = r.node();
        prefetch(n.id.as_ptr(), n.id.len());
        prefetch(Arc::as_ptr(&n.content), size_of::<NodeContent>());
        if let Some(p) = n.parent() {
            prefetch(&r.doc.nodes[p as usize], size_of::<Node>());
        }
    }
    if let Some(r) = hits.get(i + 4) {
        let n = r.node();
        if let Some(p) = n.parent() {
            let id = &r.doc.nodes[p as usize].id;
            prefetch(id.as_ptr(), id.len());
        }
        let c = &n.content;
        prefetch(c.title.as_ptr(), c.title.len());
        prefetch(
            &*c.planning as *const PlanningTimes,
            size_of::<PlanningTimes>(),
        );
        prefetch(c.properties.as_ptr(), size_of_val(&*c.properties));
    }
    if let Some(r) = hits.get(i + 2) {
        let c = &r.node().content;
        for t in [
            &c.planning.scheduled,
            &c.planning.deadline,
            &c.planning.closed,
        ]
        .into_iter()
        .flatten()
        {
            prefetch(t.as_ptr(), t.len());
        }
        for (k, v) in c.properties.iter().take(2) {
            prefetch(k.as_ptr(), 1);
            prefetch(v.as_ptr(), v.len());
        }
    }
}

/// The field named by the keyword `key` (see [`FIELD_NAMES`]), or None if there is none.
pub fn field_index(key: &str) -> Option<usize> {
    FIELD_NAMES.iter().position(|f| *f == key)
}

/// The fields of a node plist that come from its content (`:kind` … `:level`).
fn content_fields<'e>(
    env: &'e Env,
    c: &NodeContent,
    f: Fields,
    out: &mut Vec<Value<'e>>,
) -> Result<()> {
    if f.has(1) {
        out.push(kw_kind.bind(env));
        out.push(match c.kind {
            NodeKind::File => sym_file.bind(env),
            NodeKind::Headline => sym_headline.bind(env),
        });
    }
    if f.has(2) {
        out.push(kw_title.bind(env));
        out.push((*c.title).into_lisp(env)?);
    }
    if f.has(3) {
        out.push(kw_todo.bind(env));
        out.push(opt_str(env, c.todo.as_deref())?);
    }
    if f.has(4) {
        out.push(kw_todo_type.bind(env));
        out.push(match c.todo_type {
            Some(TodoType::Todo) => sym_todo.bind(env),
            Some(TodoType::Done) => sym_done.bind(env),
            None => ().into_lisp(env)?,
        });
    }
    if f.has(5) {
        out.push(kw_priority.bind(env));
        out.push(match c.priority {
            Some(p) => (p as i64).into_lisp(env)?,
            None => ().into_lisp(env)?,
        });
    }
    if f.has(6) {
        out.push(kw_tags.bind(env));
        out.push(strings(env, &c.tags)?);
    }
    if f.has(7) {
        out.push(kw_properties.bind(env));
        let mut props = Vec::with_capacity(c.properties.len());
        for (k, v) in &c.properties {
            props.push(fn_cons.call(env, (&**k, &**v))?);
        }
        out.push(list(env, props)?);
    }
    if f.has(8) {
        out.push(kw_scheduled.bind(env));
        out.push(opt_str(env, c.planning.scheduled.as_deref())?);
    }
    if f.has(9) {
        out.push(kw_deadline.bind(env));
        out.push(opt_str(env, c.planning.deadline.as_deref())?);
    }
    if f.has(10) {
        out.push(kw_closed.bind(env));
        out.push(opt_str(env, c.planning.closed.as_deref())?);
    }
    if f.has(11) {
        out.push(kw_level.bind(env));
        out.push((c.level as i64).into_lisp(env)?);
    }
    Ok(())
}

/// One past version of a node.
pub fn version_plist<'e>(env: &'e Env, v: &Version) -> Result<Value<'e>> {
    let mut out: Vec<Value<'e>> = Vec::with_capacity(30);
    out.push(kw_hash.bind(env));
    out.push(v.hash.to_hex().into_lisp(env)?);
    out.push(kw_time.bind(env));
    out.push(v.time.into_lisp(env)?);
    content_fields(env, &v.content, Fields::ALL, &mut out)?;
    out.push(kw_body.bind(env));
    out.push(body_text(env, &v.content)?);
    list(env, out)
}

/// The body of `c` as a Lisp string; `org-agent-store-error` when the log cannot give it.
fn body_text<'e>(env: &'e Env, c: &NodeContent) -> Result<Value<'e>> {
    match c.body() {
        Ok(body) => text(env, &body),
        Err(e) => super::store_fail(env, e),
    }
}

/// An event as the plist Elisp dispatches on: the core's plist, with the file name under
/// `:file` made Emacs's own (a name that is not UTF-8 keeps its bytes).
pub fn event_plist<'e>(env: &'e Env, e: &Event) -> Result<Value<'e>> {
    let plist = super::lisp_sexp::to_lisp(env, e.to_sexp().value())?;
    match e.file() {
        Some(file) => env.call(
            "plist-put",
            (plist, kw(env, ":file")?, file_name_value(env, file)?),
        ),
        None => Ok(plist),
    }
}

fn date_arg(env: &Env, key: &str, v: Value) -> Result<String> {
    let s: String = lisp_string(env, v)?;
    if crate::store::query::timestamp_date(&format!("<{s}>")).is_none() {
        return env.signal(
            org_agent_error,
            (format!("{key} wants a date as \"YYYY-MM-DD\", not {s:?}"),),
        );
    }
    Ok(s[..10].to_string())
}

/// A query plist such as `(:tag "work" :todo-type todo)` → [`Query`], the fields of its
/// plists, and whether it wants records instead (`:lazy`).
pub fn parse_query(env: &Env, plist: Value) -> Result<(Query, Fields, bool)> {
    let items = list_items(env, plist)?;
    if items.len() % 2 != 0 {
        return env.signal(
            org_agent_error,
            ("query plist has an odd number of elements",),
        );
    }
    let mut q = Query::default();
    let mut fields = Fields::QUERY;
    let mut lazy = false;
    for pair in items.chunks(2) {
        let key = lisp_string(env, pair[0])?;
        let v = pair[1];
        let given = v.is_not_nil();
        match key.as_str() {
            ":file" if given => q.file = Some(file_arg(env, v)?),
            ":type" if given => {
                q.kind = Some(match lisp_string(env, v)?.as_str() {
                    "file" => NodeKind::File,
                    "headline" => NodeKind::Headline,
                    other => {
                        return env.signal(
                            org_agent_error,
                            (format!(":type is `file' or `headline', not {other}"),),
                        )
                    }
                })
            }
            ":tag" if given => q.tag = Some(lisp_string(env, v)?),
            ":own-tag" if given => q.own_tag = Some(lisp_string(env, v)?),
            ":todo" if given => q.todo = Some(lisp_string(env, v)?),
            ":todo-type" if given => {
                q.todo_type = Some(match lisp_string(env, v)?.as_str() {
                    "todo" => TodoType::Todo,
                    "done" => TodoType::Done,
                    other => {
                        return env.signal(
                            org_agent_error,
                            (format!(":todo-type is `todo' or `done', not {other}"),),
                        )
                    }
                })
            }
            ":property" if given => {
                q.property = Some(if env.call("consp", [v])?.is_not_nil() {
                    let key = lisp_string(env, v.car()?)?;
                    let rest: Value = v.cdr()?;
                    // Both ("KEY" . "VALUE") and ("KEY" "VALUE").
                    let value = if env.call("consp", [rest])?.is_not_nil() {
                        rest.car()?
                    } else {
                        rest
                    };
                    (key, Some(lisp_string(env, value)?))
                } else {
                    (lisp_string(env, v)?, None)
                })
            }
            ":scheduled-before" if given => q.scheduled_before = Some(date_arg(env, &key, v)?),
            ":scheduled-after" if given => q.scheduled_after = Some(date_arg(env, &key, v)?),
            ":deadline-before" if given => q.deadline_before = Some(date_arg(env, &key, v)?),
            ":deadline-after" if given => q.deadline_after = Some(date_arg(env, &key, v)?),
            ":closed-since" if given => q.closed_since = Some(date_arg(env, &key, v)?),
            ":level" if given => {
                q.level = Some(v.into_rust::<i64>()?.clamp(0, u32::MAX as i64) as u32)
            }
            ":projects" => q.projects = given,
            ":sparse" => q.sparse = given,
            ":lazy" => lazy = given,
            ":limit" if given => q.limit = Some(v.into_rust::<i64>()?.max(0) as usize),
            ":fields" if given => fields = Fields::from_names(env, string_list(env, v)?)?,
            _ if !given => {}
            other => {
                return env.signal(org_agent_error, (format!("unknown query key {other}"),));
            }
        }
    }
    Ok((q, fields, lazy))
}
