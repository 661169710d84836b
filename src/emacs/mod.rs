//! The Emacs skin: module initialisation, the functions Elisp calls, and conversion between
//! Lisp values and the core's plain Rust data. Nothing outside this module touches `emacs`.
//!
//! Every function here runs on the Emacs main thread and returns quickly: it copies what it
//! was given into Rust values and either answers from the current store state (a lock-free
//! snapshot) or hands the work to the runtime's workers.

mod convert;
mod find;
mod lisp_sexp;
mod mcp;
mod skills;

use crate::agent::ingest::FileIngest;
use crate::agent::Runtime;
use crate::store::text::Written;
use crate::store::{filename, Dialect, StoreError, TodoKeywords};
use ::emacs::{defun, Env, IntoLisp, Result, Value};
use convert::*;
use std::path::PathBuf;
use std::sync::Arc;

::emacs::plugin_is_GPL_compatible!();

// The parent and its kinds, so Elisp callers can `condition-case` on what went wrong. The
// Elisp package defines the same (org-agent-base.el), so they exist before the module loads.
::emacs::define_errors! {
    org_agent_error "org-agent error" (error)
    org_agent_config_error "org-agent configuration error" (org_agent_error)
    org_agent_store_error "org-agent store error" (org_agent_error)
    org_agent_store_locked "org-agent store in use by another Emacs" (org_agent_store_error)
}

#[::emacs::module(
    name = "org-agent-module",
    defun_prefix = "org-agent",
    separator = "--",
    mod_in_name = false
)]
fn init(_env: &Env) -> Result<()> {
    // Start the workers now so the first request does not pay for it.
    Runtime::global().map_err(|e| ::emacs::Error::msg(format!("cannot start workers: {e}")))?;
    Ok(())
}

fn runtime(env: &Env) -> Result<&'static Runtime> {
    match Runtime::global() {
        Ok(rt) => Ok(rt),
        Err(e) => env.signal(
            org_agent_error,
            (format!("org-agent workers unavailable: {e}"),),
        ),
    }
}

fn fail<T>(env: &Env, message: impl std::fmt::Display) -> Result<T> {
    env.signal(org_agent_error, (message.to_string(),))
}

/// Signal `org-agent-store-error`: the store could not do it (a parse, the disk, a snapshot).
fn store_fail<T>(env: &Env, message: impl std::fmt::Display) -> Result<T> {
    env.signal(org_agent_store_error, (message.to_string(),))
}

/// Signal `org-agent-config-error`: an option, a backend or a value set by the user is wrong.
fn config_fail<T>(env: &Env, message: impl std::fmt::Display) -> Result<T> {
    env.signal(org_agent_config_error, (message.to_string(),))
}

/// Return the names of the Emacs actions the agent may propose, as keywords (`:set-todo`…):
/// the vocabulary the Elisp actuator must implement, no more and no less.
#[defun]
fn action_names<'e>(env: &'e Env) -> Result<Value<'e>> {
    let names = crate::action::EmacsAction::NAMES
        .iter()
        .map(|name| env.intern(&format!(":{name}")))
        .collect::<Result<Vec<_>>>()?;
    list(env, names)
}

/// Return the table of verbs as the actuator checks and previews them: an alist of
/// (ACTION :args ((NAME TYPE [optional])…) :edits EDITS :doc DOC), ACTION a keyword
/// (`:set-todo`), TYPE `string', `strings', `pairs' or `plist', EDITS nil (no Org file),
/// `in-place', `move', `new-file' or `unknown', DOC what the verb does.
#[defun]
fn verb_specs<'e>(env: &'e Env) -> Result<Value<'e>> {
    let nil = ().into_lisp(env)?;
    let mut verbs = Vec::with_capacity(crate::action::VERBS.len());
    for verb in &crate::action::VERBS {
        let mut args = Vec::with_capacity(verb.args.len());
        for arg in verb.args {
            let mut spec = vec![
                env.intern(&arg.wire_name())?,
                env.intern(arg.kind.lisp_type())?,
            ];
            if arg.kind.lisp_optional() {
                spec.push(env.intern("optional")?);
            }
            args.push(list(env, spec)?);
        }
        let edits = match verb.edits.lisp_name() {
            Some(name) => env.intern(name)?,
            None => nil,
        };
        verbs.push(list(
            env,
            vec![
                env.intern(&format!(":{}", verb.name))?,
                kw(env, ":args")?,
                list(env, args)?,
                kw(env, ":edits")?,
                edits,
                kw(env, ":doc")?,
                text(env, verb.doc())?,
            ],
        )?);
    }
    list(env, verbs)
}

/// Make streamed text wake Emacs at most every SECONDS (0 to 10): the one throttle of a
/// streaming answer, whose pieces arriving meanwhile come together in one `chat' event.
#[defun]
fn set_redisplay_interval(env: &Env, seconds: Value) -> Result<()> {
    let seconds: f64 = env.call("float", [seconds])?.into_rust()?;
    if !seconds.is_finite() || seconds < 0.0 {
        return config_fail(
            env,
            format!("the redisplay interval is {seconds} seconds, not 0 to 10"),
        );
    }
    runtime(env)?.set_text_interval(std::time::Duration::from_secs_f64(seconds.min(10.0)));
    Ok(())
}

/// Load the skills of DIRS, a list of (DIR . SOURCE) with SOURCE `shipped', `user',
/// `imported' or `agent', on a worker: they replace the active skills every chat turn
/// starts with.  Returns a request id at once; a `skills-loaded' event brings :active (a
/// list of (:name :description :file :source :triggers :tests-passed), in dependency
/// order) and :inactive (a list of
/// (NAME-OR-FILE . REASON)).  The skills named in DISABLED, and those depending on them, are
/// inactive.
#[defun]
fn load_skills(env: &Env, dirs: Value, disabled: Value) -> Result<i64> {
    let dirs = config_from(env, dirs, crate::skills::load::dirs_from_sexp)?;
    let disabled = string_list(env, disabled)?;
    Ok(runtime(env)?.load_skills_async(dirs, disabled) as i64)
}

/// Return the `SKILL.org` text for the Agent Skills `SKILL.md` FILE (or the folder holding
/// one): its body verbatim in a markdown block, its references/*.md as reference parts,
/// its allowed-tools as ask rules with their gate tests.  Signals `org-agent-error` with
/// the file and line when the SKILL.md does not read.
#[defun]
fn import_skill(env: &Env, file: Value) -> Result<String> {
    let file = file_arg(env, file)?;
    match crate::skills::import_skill_md(&filename::to_path(&file)) {
        Ok(org) => Ok(org),
        Err(e) => fail(env, e),
    }
}

/// Return the module's version, which must equal the Elisp package's.
#[defun]
fn version() -> Result<String> {
    Ok(crate::VERSION.to_string())
}

/// Set how text becomes nodes.
/// TODO and DONE are the default keyword lists (`org-todo-keywords-1` split by type) for files
/// ingested from disk that declare none; ORG-VERSION selects the headline syntax to follow;
/// NO-INHERIT lists tags that are never inherited; SNAPSHOTS is the snapshot ring's size;
/// INLINETASK is `org-inlinetask-min-level` while org-inlinetask is loaded, else nil.
#[defun]
fn configure(
    env: &Env,
    todo: Value,
    done: Value,
    org_version: String,
    no_inherit: Value,
    snapshots: i64,
    inlinetask: Option<i64>,
) -> Result<()> {
    let todo = string_list(env, todo)?;
    let done = string_list(env, done)?;
    let no_inherit = string_list(env, no_inherit)?;
    let rt = runtime(env)?;
    rt.configure(|c| {
        c.default_todo = TodoKeywords { todo, done };
        c.dialect = Dialect::for_org_version(&org_version);
        c.no_inherit_tags = no_inherit;
        c.snapshot_capacity = snapshots.clamp(1, 10_000) as usize;
        c.inlinetask_min_level = inlinetask.map(|l| l.clamp(1, 1000) as u32);
    });
    Ok(())
}

/// Set what the LLM must never see: subtrees tagged with one of TAGS (strings) or with a true
/// :PRIVATE: property, and files matching one of FILES (glob patterns: `*` within a
/// directory, `**` across directories, `?` one character; a pattern without `/` matches the
/// file name).  Turns already running keep the rules they started with.
#[defun]
fn set_privacy(env: &Env, tags: Value, files: Value) -> Result<()> {
    let tags = string_list(env, tags)?;
    let files = string_list(env, files)?;
    let rt = runtime(env)?;
    // The secret properties are set on their own (`set_secret_properties`) and kept here.
    let secret = rt.privacy().secret_properties().to_vec();
    rt.set_privacy(crate::notes::Privacy::new(tags, files).with_secret_properties(secret));
    Ok(())
}

/// Set the properties whose values are always withheld from the LLM: NAMES (strings, any
/// case), shown as `[withheld]` wherever the agent would see them.
#[defun]
fn set_secret_properties(env: &Env, names: Value) -> Result<()> {
    let names = string_list(env, names)?;
    let rt = runtime(env)?;
    let privacy = (*rt.privacy()).clone().with_secret_properties(names);
    rt.set_privacy(privacy);
    Ok(())
}

/// Set what counts as untrusted content: subtrees tagged with one of TAGS (strings), besides
/// those whose :SOURCE:, :SOURCE_URL: or :ROAM_REFS: is a web address.  After reading such
/// content, every edit a turn proposes asks.  Turns already running keep the rules they
/// started with.
#[defun]
fn set_untrusted_tags(env: &Env, tags: Value) -> Result<()> {
    let tags = string_list(env, tags)?;
    runtime(env)?.set_trust(crate::notes::Trust::new(tags));
    Ok(())
}

/// Return TEXT, the contents of FILE, without its private subtrees (see `set_privacy');
/// signal an error when the whole file is private.
#[defun]
fn redact_private(env: &Env, text: Value, file: Value) -> Result<String> {
    let text = text_arg(env, text)?;
    let file = file_arg(env, file)?;
    let rt = runtime(env)?;
    let doc = match rt.store().parse_unstored(&file, &text) {
        Ok(doc) => doc,
        Err(e) => return store_fail(env, e),
    };
    match rt.privacy().redact(&doc, &text) {
        Some(redacted) => Ok(redacted),
        None => fail(
            env,
            format!("{file} is private (org-agent-private-files or its tags)"),
        ),
    }
}

/// Return non-nil when the node ID is private (see `set_privacy'): the LLM may not see it.
/// An unknown ID is not private.
#[defun]
fn private_p(env: &Env, id: String) -> Result<bool> {
    let rt = runtime(env)?;
    let store = rt.store();
    Ok(store.node(&id).is_some_and(|r| rt.privacy().hides(&r)))
}

/// Set where the agent's files may be: the directories DIRS (the notes'), with HOME for `~`;
/// STATE (org-agent's state directory, or nil) and the files PROTECTED (the user's init and
/// custom files) are never read or written, nor are credentials (`~/.ssh`, `~/.authinfo*`…)
/// or `.git` internals.  Every path is judged by where it really leads (links followed).
/// Turns already running keep what they started with.
#[defun]
fn set_roots(env: &Env, dirs: Value, home: Value, state: Value, protected: Value) -> Result<()> {
    let mut roots = Vec::new();
    for dir in list_items(env, dirs)? {
        roots.push(file_arg(env, dir)?);
    }
    let mut extra = Vec::new();
    for file in list_items(env, protected)? {
        extra.push(file_arg(env, file)?);
    }
    let home = filename::to_path(&file_arg(env, home)?);
    let state = if state.is_not_nil() {
        Some(file_arg(env, state)?)
    } else {
        None
    };
    runtime(env)?.set_confinement(crate::notes::Confinement::new(
        &home,
        roots,
        state.as_deref(),
        extra,
    ));
    Ok(())
}

/// Return nil when the Emacs ACTION (a request plist) may edit the note it names as things
/// are now, else why not (a rule, naming no private file): its file judged by where it
/// really leads, as `org-agent--set-roots' and `org-agent--set-privacy' say.  An action
/// that edits no note is nil.
#[defun]
fn edit_refusal(env: &Env, action: Value) -> Result<Option<String>> {
    let plist = lisp_sexp::from_lisp(env, action)?;
    let action = match crate::action::Action::from_sexp(plist.value()) {
        Ok(crate::action::Action::Emacs(action)) => action,
        Ok(_) => return Ok(None),
        Err(e) => return fail(env, format!("not an action: {e}")),
    };
    Ok(runtime(env)?.notes().edit_target(&action).err())
}

/// Open the persisted store in DIR (created if missing) and make it current.
/// Return a plist (:files N :nodes N :rebuilt REASON :set-aside PATH :log PATH :torn-tail
/// BOOL). REASON is a string when the store on disk was unusable (corrupt, unreadable, not a
/// file…), so the caller should re-ingest; PATH under :set-aside is where it was moved, if it
/// could be; :log is the log now in use, nil when none could be written (the store then lives
/// in memory only). The store always opens, unless another Emacs holds DIR: then
/// `org-agent-store-locked' is signalled, naming it, and nothing was opened.
#[defun]
fn store_open<'e>(env: &'e Env, dir: Value<'e>) -> Result<Value<'e>> {
    let dir = filename::to_path(&file_arg(env, dir)?);
    let rt = runtime(env)?;
    let path = |p: Option<PathBuf>| -> Result<Value<'e>> {
        match p {
            Some(p) => file_name_value(env, &filename::key(&p)),
            None => ().into_lisp(env),
        }
    };
    match rt.open_store(&dir) {
        Ok(r) => plist(
            env,
            vec![
                (kw(env, ":files")?, r.files.into_lisp(env)?),
                (kw(env, ":nodes")?, r.nodes.into_lisp(env)?),
                (kw(env, ":rebuilt")?, r.rebuilt.into_lisp(env)?),
                (kw(env, ":set-aside")?, path(r.set_aside)?),
                (kw(env, ":log")?, path(r.log)?),
                (kw(env, ":torn-tail")?, r.torn_tail.into_lisp(env)?),
            ],
        ),
        Err(e @ StoreError::Locked { .. }) => env.signal(org_agent_store_locked, (e.to_string(),)),
        Err(e) => store_fail(env, e),
    }
}

/// Close the persisted store (after writing everything) and keep an empty one in memory.
#[defun]
fn store_close(env: &Env) -> Result<()> {
    runtime(env)?.close_store();
    Ok(())
}

/// Wait until the stores closed or replaced so far are freed: freeing one takes a few hundred
/// ms at 100k headlines, on a thread of its own. For benchmarks, so that this does not share
/// the CPUs with what they time next.
#[defun]
fn store_wait_retired(env: &Env) -> Result<()> {
    runtime(env)?.wait_retired();
    Ok(())
}

/// Wait until every change so far is on disk.
#[defun]
fn store_flush(env: &Env) -> Result<()> {
    match runtime(env)?.store().flush() {
        Ok(()) => Ok(()),
        Err(e) => store_fail(env, e),
    }
}

/// Ingest FILE from disk now; re-read it even if unchanged when FORCE. Return its node count,
/// or (:gone N) when FILE no longer exists: it left the store with its N nodes (0: it was not
/// there). A file that exists but cannot be read signals `org-agent-store-error'.
/// FILE may name bytes that are not UTF-8 (Unix file names are bytes): they are kept.
#[defun]
fn ingest_file<'e>(env: &'e Env, file: Value<'e>, force: Value<'e>) -> Result<Value<'e>> {
    let file = file_arg(env, file)?;
    match runtime(env)?.ingest_file_now(&file, force.is_not_nil()) {
        Ok(FileIngest::Read(r)) => (r.nodes as i64).into_lisp(env),
        Ok(FileIngest::Gone { nodes }) => {
            list(env, vec![kw(env, ":gone")?, (nodes as i64).into_lisp(env)?])
        }
        Err(e) => store_fail(env, e),
    }
}

fn keywords(env: &Env, todo: Value, done: Value) -> Result<Option<TodoKeywords>> {
    if todo.is_not_nil() || done.is_not_nil() {
        Ok(Some(TodoKeywords {
            todo: string_list(env, todo)?,
            done: string_list(env, done)?,
        }))
    } else {
        Ok(None)
    }
}

/// Ingest TEXT as the contents of FILE now, with the buffer's TODO and DONE keywords (nil
/// for both: read them from the text). Return the node count.
#[defun]
fn ingest_text(env: &Env, file: Value, text: Value, todo: Value, done: Value) -> Result<i64> {
    let file = file_arg(env, file)?;
    let text = text_arg(env, text)?;
    let kws = keywords(env, todo, done)?;
    let store = runtime(env)?.store();
    // Reserve a generation so an older asynchronous ingest of the same file still in
    // flight cannot overwrite this newer text when it finishes.
    let generation = store.reserve_generation(&file);
    match store.ingest_text(&file, &text, kws.as_ref(), None, Some(generation)) {
        Ok(Some(r)) => Ok(r.nodes as i64),
        Ok(None) => Ok(0),
        Err(e) => store_fail(env, e),
    }
}

/// Like `org-agent--ingest-text' but on a worker: return a request id at once; the result
/// arrives as an event. Only the newest text of a file is committed.
#[defun]
fn ingest_text_async(env: &Env, file: Value, text: Value, todo: Value, done: Value) -> Result<i64> {
    let file = file_arg(env, file)?;
    let text = text_arg(env, text)?;
    let kws = keywords(env, todo, done)?;
    Ok(runtime(env)?.ingest_text_async(file, text, kws) as i64)
}

/// Ingest FILE, which Emacs has just written from an Org buffer, on a worker: read it back
/// instead of copying the buffer. Emacs wrote it as UTF-8, with a byte-order mark when
/// SIGNATURE, each newline as CR LF when CRLF. TODO and DONE are the buffer's keywords, as
/// for `org-agent--ingest-text'. Return a request id at once; the result arrives as an
/// event. Of racing saves of FILE, the one called last is stored.
#[defun]
fn ingest_saved_async(
    env: &Env,
    file: Value,
    signature: Value,
    crlf: Value,
    todo: Value,
    done: Value,
) -> Result<i64> {
    let file = file_arg(env, file)?;
    let kws = keywords(env, todo, done)?;
    let written = Written {
        signature: signature.is_not_nil(),
        crlf: crlf.is_not_nil(),
    };
    Ok(runtime(env)?.ingest_saved_async(file, written, kws) as i64)
}

/// Ingest every Org file under DIRS on a worker; return a request id at once.
#[defun]
fn ingest_directories_async(env: &Env, dirs: Value) -> Result<i64> {
    let mut paths = Vec::new();
    for dir in list_items(env, dirs)? {
        paths.push(filename::to_path(&file_arg(env, dir)?));
    }
    let dirs = paths;
    Ok(runtime(env)?.ingest_directories_async(dirs) as i64)
}

/// Compare the store with the files on disk on a worker, the Org files under DIRS included:
/// what changed is ingested again, what was deleted leaves, what is new is added. Return a
/// request id at once; each change arrives as an event, then a `reconciled' one.
#[defun]
fn reconcile_async(env: &Env, dirs: Value) -> Result<i64> {
    let mut paths = Vec::new();
    for dir in list_items(env, dirs)? {
        paths.push(filename::to_path(&file_arg(env, dir)?));
    }
    Ok(runtime(env)?.reconcile_async(paths) as i64)
}

/// Ask request REQUEST to stop. Return non-nil if it was running.
#[defun]
fn cancel(env: &Env, request: i64) -> Result<bool> {
    Ok(runtime(env)?.cancel(request.max(0) as u64))
}

/// Drop FILE from the store. Return non-nil if it was there.
#[defun]
fn remove_file(env: &Env, file: Value) -> Result<bool> {
    let file = file_arg(env, file)?;
    Ok(runtime(env)?.store().remove_file(&file))
}

/// Open the wake-up channel to pipe process PROCESS: workers write a byte to it when events
/// are waiting, and its filter calls `org-agent--drain'.
#[defun]
fn set_channel(env: &Env, process: Value) -> Result<()> {
    let writer = env.open_channel(process)?;
    let rt = runtime(env)?;
    rt.set_waker(Some(Box::new(writer)));
    // Events that arrived before the channel existed would otherwise wait for the next one.
    if rt.pending_events() > 0 {
        rt.push_wake();
    }
    Ok(())
}

/// Return the waiting events as a list of plists, oldest first.
#[defun]
fn drain<'e>(env: &'e Env) -> Result<Value<'e>> {
    let events = runtime(env)?.drain();
    let mut out = Vec::with_capacity(events.len());
    for e in &events {
        out.push(event_plist(env, e)?);
    }
    list(env, out)
}

/// Return the nodes matching the query plist QUERY (see `org-agent-query'): plists, or with
/// `:lazy t' one `org-agent-node' record per node, whose fields `org-agent--hit-field' reads.
#[defun]
fn query<'e>(env: &'e Env, query: Value<'e>) -> Result<Value<'e>> {
    let (q, fields, lazy) = parse_query(env, query)?;
    let hits = runtime(env)?.store().query(&q);
    if lazy {
        return NodePlists::records(env, hits);
    }
    let mut plists = NodePlists::new(env, fields);
    let mut out = Vec::with_capacity(hits.len());
    for (i, h) in hits.iter().enumerate() {
        convert::warm_hit(&hits, i);
        out.push(plists.plist(h)?);
    }
    list(env, out)
}

/// Return field KEY (a keyword such as :title) of node INDEX of the lazy query result HITS.
#[defun]
fn hit_field<'e>(env: &'e Env, hits: &Hits, index: i64, key: Value<'e>) -> Result<Value<'e>> {
    let Some(r) = usize::try_from(index).ok().and_then(|i| hits.0.get(i)) else {
        return fail(env, format!("no node {index} in this query result"));
    };
    let name = lisp_string(env, key)?;
    let Some(i) = field_index(&name) else {
        return fail(env, format!("unknown node field {name}"));
    };
    match NodePlists::new(env, Fields::ALL).field(r, i)? {
        Some(v) => Ok(v),
        None => ().into_lisp(env),
    }
}

/// Return node INDEX of the lazy query result HITS as a plist (the fields of FIELDS, a list of
/// keywords; nil: those a query returns).
#[defun]
fn hit_plist<'e>(env: &'e Env, hits: &Hits, index: i64, fields: Value<'e>) -> Result<Value<'e>> {
    let Some(r) = usize::try_from(index).ok().and_then(|i| hits.0.get(i)) else {
        return fail(env, format!("no node {index} in this query result"));
    };
    let fields = if fields.is_not_nil() {
        Fields::from_names(env, string_list(env, fields)?)?
    } else {
        Fields::QUERY
    };
    NodePlists::new(env, fields).plist(r)
}

/// Return how many nodes match the query plist QUERY.
#[defun]
fn count<'e>(env: &'e Env, query: Value<'e>) -> Result<i64> {
    let (q, _, _) = parse_query(env, query)?;
    Ok(runtime(env)?.store().count(&q) as i64)
}

/// Return the node with ID (with its body), or nil.
#[defun]
fn node<'e>(env: &'e Env, id: String) -> Result<Value<'e>> {
    match runtime(env)?.store().node(&id) {
        Some(r) => NodePlists::new(env, Fields::ALL).plist(&r),
        None => ().into_lisp(env),
    }
}

/// Return the versions node ID has had, oldest first, as plists.
#[defun]
fn node_history<'e>(env: &'e Env, id: String) -> Result<Value<'e>> {
    let versions = runtime(env)?.store().history(&id);
    let mut out = Vec::with_capacity(versions.len());
    for v in &versions {
        out.push(version_plist(env, v)?);
    }
    list(env, out)
}

/// Return the outline path (ancestor titles, outermost first) of node ID, or nil.
#[defun]
fn outline_path<'e>(env: &'e Env, id: String) -> Result<Value<'e>> {
    match runtime(env)?.store().node(&id) {
        Some(r) => strings(env, &r.outline_path()),
        None => ().into_lisp(env),
    }
}

/// Return one string per headline for completion: the TODO keyword, outline path, title,
/// tags and file name. `org-agent--headline-target' finds the headline a string stands for.
#[defun]
fn headline_candidates<'e>(env: &'e Env) -> Result<Value<'e>> {
    candidates_where(env, |state, each| {
        state
            .files
            .values()
            .try_for_each(|doc| find::each_display(doc, |_, display| each(display)))
    })
}

/// Return the number of headlines in the store: all `org-agent-find' needs to know before
/// the minibuffer opens (whether there is anything to find).
#[defun]
fn headline_count(env: &Env) -> Result<i64> {
    Ok(find::headline_count(&runtime(env)?.store().state()) as i64)
}

/// Return the candidates (the strings `org-agent--headline-candidates' makes) that INPUT
/// matches, in store order: each space-separated word of INPUT occurs in the candidate, in
/// any order, compared in lower case when IGNORE-CASE is non-nil. Only these become Lisp
/// strings.
#[defun]
fn headline_matches<'e>(
    env: &'e Env,
    input: Value<'e>,
    ignore_case: Value<'e>,
) -> Result<Value<'e>> {
    let input = text_arg(env, input)?;
    candidates_where(env, |state, each| {
        find::each_match(state, &input, ignore_case.is_not_nil(), each)
    })
}

/// Return the candidates (the strings `org-agent--headline-candidates' makes) that start with
/// PREFIX, in store order, compared in lower case when IGNORE-CASE is non-nil: all the
/// completion table needs to answer `all-completions' and `try-completion' for PREFIX.
#[defun]
fn headline_prefixed<'e>(
    env: &'e Env,
    prefix: Value<'e>,
    ignore_case: Value<'e>,
) -> Result<Value<'e>> {
    let prefix = text_arg(env, prefix)?;
    candidates_where(env, |state, each| {
        find::each_prefixed(state, &prefix, ignore_case.is_not_nil(), each)
    })
}

/// The candidates `pick` hands to `each`, as a list of Lisp strings: made for those alone.
fn candidates_where<'e>(
    env: &'e Env,
    pick: impl FnOnce(&crate::store::state::State, &mut dyn FnMut(&str) -> Result<()>) -> Result<()>,
) -> Result<Value<'e>> {
    let state = runtime(env)?.store().state();
    let mut out = Vec::new();
    pick(&state, &mut |display| {
        out.push(text(env, display)?);
        Ok(())
    })?;
    list(env, out)
}

/// Complete INPUT against the store's candidates, matched as `org-agent--headline-matches'
/// matches: nil when none matches; (sole CANDIDATE) when one does (or several, all the same
/// string); (several TEXT) when several do, TEXT being what every one of them has right
/// after the first occurrence of INPUT's last word ("" when nothing, or INPUT ends in a space).
#[defun]
fn headline_complete<'e>(
    env: &'e Env,
    input: Value<'e>,
    ignore_case: Value<'e>,
) -> Result<Value<'e>> {
    let input = text_arg(env, input)?;
    let state = runtime(env)?.store().state();
    let (kind, shown) = match find::complete(&state, &input, ignore_case.is_not_nil()) {
        find::Completion::None => return ().into_lisp(env),
        find::Completion::Sole(d) => ("sole", d),
        find::Completion::Several(rest) => ("several", rest),
    };
    list(env, vec![env.intern(kind)?, text(env, &shown)?])
}

/// Return (FILE POSITION ID) of the headline `org-agent--headline-candidates' showed as
/// CANDIDATE, or nil if the store has none such now.
#[defun]
fn headline_target<'e>(env: &'e Env, candidate: String) -> Result<Value<'e>> {
    let state = runtime(env)?.store().state();
    match find::target(&state, &candidate) {
        Some((doc, index)) => {
            let n = &doc.nodes[index as usize];
            list(
                env,
                vec![
                    file_name_value(env, &doc.path)?,
                    (n.begin_pos as i64).into_lisp(env)?,
                    (&*n.id).into_lisp(env)?,
                ],
            )
        }
        None => ().into_lisp(env),
    }
}

/// Return store statistics as a plist.
#[defun]
fn stats<'e>(env: &'e Env) -> Result<Value<'e>> {
    let s = runtime(env)?.store().stats();
    plist(
        env,
        vec![
            (kw(env, ":files")?, s.files.into_lisp(env)?),
            (kw(env, ":nodes")?, s.nodes.into_lisp(env)?),
            (kw(env, ":headlines")?, s.headlines.into_lisp(env)?),
            (kw(env, ":versions")?, s.versions.into_lisp(env)?),
            (
                kw(env, ":duplicate-ids")?,
                s.ids_with_duplicates.into_lisp(env)?,
            ),
            (
                kw(env, ":bytes-on-disk")?,
                (s.bytes_on_disk as i64).into_lisp(env)?,
            ),
            (kw(env, ":snapshots")?, s.snapshots.into_lisp(env)?),
            (kw(env, ":path")?, s.path.into_lisp(env)?),
            (kw(env, ":write-error")?, s.write_error.into_lisp(env)?),
        ],
    )
}

/// Take a snapshot of the store labelled LABEL.
#[defun]
fn snapshot(env: &Env, label: String) -> Result<i64> {
    Ok(runtime(env)?.store().snapshot(&label) as i64)
}

/// Return the snapshots, newest first, as plists (:index N :time SECONDS :label STRING :nodes N).
#[defun]
fn snapshots<'e>(env: &'e Env) -> Result<Value<'e>> {
    let snaps = runtime(env)?.store().snapshots();
    let mut out = Vec::new();
    for (i, s) in snaps.iter().enumerate() {
        out.push(plist(
            env,
            vec![
                (kw(env, ":index")?, i.into_lisp(env)?),
                (kw(env, ":time")?, s.time.into_lisp(env)?),
                (kw(env, ":label")?, s.label.as_str().into_lisp(env)?),
                (kw(env, ":nodes")?, s.state.node_count().into_lisp(env)?),
            ],
        )?);
    }
    list(env, out)
}

/// Restore snapshot INDEX (0 is the newest) as the current store.
#[defun]
fn rollback(env: &Env, index: i64) -> Result<()> {
    match runtime(env)?.store().rollback(index.max(0) as usize) {
        Ok(()) => Ok(()),
        Err(e) => store_fail(env, e),
    }
}

/// Read TEXT as one S-expression with the guarded reader and return it as a Lisp value.
/// Keywords are lowercased; `#' reader macros, nesting deeper than 64 levels, long runs of
/// quotes and input over 1 MiB are errors that give the line and column.
#[defun]
fn read_sexp<'e>(env: &'e Env, text: String) -> Result<Value<'e>> {
    match crate::sexp::read(&text) {
        Ok(s) => lisp_sexp::to_lisp(env, s.value()),
        Err(e) => fail(env, e),
    }
}

/// Print the Lisp VALUE as the module prints S-expressions (for plain data: numbers,
/// strings, symbols, keywords, lists, vectors).
#[defun]
fn print_sexp(env: &Env, value: Value) -> Result<String> {
    let s = lisp_sexp::from_lisp(env, value)?;
    Ok(crate::sexp::print(s.value()))
}

/// The configuration PARSE reads from the Lisp VALUE (a backend plist, a cascade, the tier
/// alist); what it refuses is signalled as `org-agent-config-error'.
fn config_from<T>(
    env: &Env,
    value: Value,
    parse: impl FnOnce(&crate::sexp::Value) -> std::result::Result<T, crate::llm::ConfigError>,
) -> Result<T> {
    let sexp = lisp_sexp::from_lisp(env, value)?;
    match parse(sexp.value()) {
        Ok(parsed) => Ok(parsed),
        Err(e) => env.signal(org_agent_config_error, (e.to_string(),)),
    }
}

/// Hand STIMULUS, a plist such as (:type :event :payload (:sensor :chat-message :text
/// "…") :meta (:session "s1") :depth 0), to the agent and return a request id at once.
/// A chat message (or a command, with :focus) starts a turn of conversation :session with
/// BACKEND (:url :model :key :headers and timeouts) and OPTIONS (:max-depth :temperature
/// :system-prompt :no-stream :focus :tools :audit-file :interactive); updates come as
/// `chat' events.  A buffer save re-ingests the file on a worker.  Other sensors (tool and
/// actuator results) come from the loop itself and are refused, as are unknown shapes.
#[defun]
fn stimulus(env: &Env, stimulus: Value, backend: Value, options: Value) -> Result<i64> {
    use crate::action::{Sensor, Stimulus};
    let plist = lisp_sexp::from_lisp(env, stimulus)?;
    let stimulus = match Stimulus::from_sexp(plist.value()) {
        Ok(s) => s,
        Err(e) => return fail(env, format!("not a stimulus: {e}")),
    };
    let conversation = stimulus.session.unwrap_or_else(|| "default".to_string());
    let (text, focus) = match stimulus.sensor {
        Sensor::ChatMessage { text } => (text, None),
        Sensor::Command { name, focus } => (
            format!("Run the command {name} on the node I am on."),
            focus,
        ),
        Sensor::BufferSave { file } => return Ok(runtime(env)?.ingest_file_async(file) as i64),
        Sensor::Timer { name } => {
            return fail(
                env,
                format!("no skill handles timer stimuli yet (timer {name})"),
            )
        }
        Sensor::ToolResult { .. } | Sensor::ActuatorResult { .. } => {
            return fail(
                env,
                "tool and actuator results are produced by the loop, not sent to it",
            )
        }
    };
    let mut t = turn_setup(env, backend, options, focus)?;
    // A chain of actions begun elsewhere keeps counting toward the depth limit.
    t.cfg.start_depth = stimulus.depth;
    Ok(runtime(env)?.chat_async(conversation, text, t.backends, t.policy, t.cfg, t.setup) as i64)
}

/// The turn BACKEND and OPTIONS describe (see `stimulus'); a configuration error signals
/// `org-agent-config-error'.
fn turn_setup(
    env: &Env,
    backend: Value,
    options: Value,
    focus: Option<String>,
) -> Result<crate::agent::options::TurnSetup> {
    let backend = lisp_sexp::from_lisp(env, backend)?;
    config_from(env, options, |options| {
        crate::agent::options::TurnSetup::from_sexp(backend.value(), options, focus)
    })
}

/// Compute what the next turn of CONVERSATION would send for TEXT with BACKEND and OPTIONS
/// (as for `stimulus', with :focus) and return a request id at once; a `preview' event
/// (:backend NAME :url URL :body JSON) follows, JSON being the exact request body the first
/// backend of the cascade would receive, pretty-printed.  Nothing is sent to the LLM.
#[defun]
fn preview_request(
    env: &Env,
    conversation: String,
    text: Value,
    backend: Value,
    options: Value,
) -> Result<i64> {
    let text = text_arg(env, text)?;
    let t = turn_setup(env, backend, options, None)?;
    let Some(first) = t.backends.first().cloned() else {
        return fail(env, "no backend is configured");
    };
    Ok(runtime(env)?.preview_async(conversation, text, first, t.cfg, t.setup) as i64)
}

/// List the models BACKEND (a backend plist, as in `stimulus') offers.  Returns a request
/// id at once; a `models' event brings :models, a list of (ID . DESCRIPTION-OR-NIL).
#[defun]
fn list_models(env: &Env, backend: Value) -> Result<i64> {
    let backend = config_from(env, backend, crate::llm::http::Backend::from_sexp)?;
    Ok(runtime(env)?.models_async(backend) as i64)
}

/// Bring the notes' embeddings up to date through BACKEND (an embedding backend plist): embed
/// the headlines with :EMBED: t, or all of them when ALL, that are new or changed (never a
/// private one), and drop vectors of nodes that changed or vanished.  Returns a request id at
/// once; an `embedded' event reports it.
#[defun]
fn embed(env: &Env, backend: Value, all: Value) -> Result<i64> {
    let backend = config_from(
        env,
        backend,
        crate::llm::embeddings::EmbeddingBackend::from_sexp,
    )?;
    Ok(runtime(env)?.embed_async(backend, all.is_not_nil()) as i64)
}

/// Search the embedded notes for the K closest in meaning to TEXT, through BACKEND (an
/// embedding backend plist).  Returns a request id at once; a `search-results' event brings
/// :hits, a list of (ID . SIMILARITY), best first.
#[defun]
fn semantic_search(env: &Env, backend: Value, text: String, k: i64) -> Result<i64> {
    let backend = config_from(
        env,
        backend,
        crate::llm::embeddings::EmbeddingBackend::from_sexp,
    )?;
    Ok(runtime(env)?.search_async(backend, text, k.clamp(1, 200) as usize) as i64)
}

/// Answer question REPLY of a chat turn: ANSWER is `once', `conversation' or `deny'.
/// Return whether a turn was waiting for it.
#[defun]
fn answer(env: &Env, reply: i64, answer: Value) -> Result<bool> {
    let name: String = env.call("symbol-name", [answer])?.into_rust()?;
    match crate::agent::operator::Approval::from_name(&name) {
        Some(approval) => Ok(runtime(env)?.answer(reply as u64, approval)),
        None => fail(
            env,
            format!("an answer is once, conversation or deny, not {name}"),
        ),
    }
}

/// Hand the actuator's RESULT plist for action REPLY back to its turn.  A RESULT that
/// cannot be converted reaches the turn as an error.  Return whether a turn was waiting.
#[defun]
fn actuated(env: &Env, reply: i64, result: Value) -> Result<bool> {
    let rt = runtime(env)?;
    match lisp_sexp::from_lisp(env, result) {
        Ok(result) => Ok(rt.actuated(reply as u64, Ok(result))),
        Err(e) => {
            rt.actuated(
                reply as u64,
                Err("the actuator's result could not be converted".into()),
            );
            Err(e)
        }
    }
}

/// Whether a turn still waits for REPLY (an interrupted turn's actions are not run).
#[defun]
fn reply_pending_p(env: &Env, reply: i64) -> Result<bool> {
    Ok(runtime(env)?.reply_pending(reply as u64))
}

/// Return the id of the innermost node of FILE holding buffer position POS (as of the
/// file's last ingest), or nil if FILE is not in the store.
#[defun]
fn node_at<'e>(env: &'e Env, file: Value<'e>, pos: i64) -> Result<Value<'e>> {
    let file = file_arg(env, file)?;
    match runtime(env)?
        .store()
        .node_at(&file, pos.clamp(0, u32::MAX as i64) as u32)
    {
        Some(r) => r.node().id.as_ref().into_lisp(env),
        None => ().into_lisp(env),
    }
}

/// Cancel every chat turn in flight; return how many there were.
#[defun]
fn chat_cancel_all(env: &Env) -> Result<i64> {
    Ok(runtime(env)?.cancel_chats() as i64)
}

/// Forget the history of CONVERSATION.
#[defun]
fn chat_forget(env: &Env, conversation: String) -> Result<()> {
    runtime(env)?.forget_conversation(&conversation);
    Ok(())
}

/// Return the log entries after sequence number SEQ, oldest first: a list of (SEQ TIME-MS
/// KIND MESSAGE), nil when SEQ is the newest. Entries are numbered from 1, one more each;
/// when the first returned is numbered above SEQ + 1, those between fell out of the log
/// (it keeps the last `org-agent--log-capacity').
#[defun]
fn log_since<'e>(env: &'e Env, seq: i64) -> Result<Value<'e>> {
    let entries = runtime(env)?.with_telemetry(|t| t.entries_since(seq.max(0) as u64));
    let mut out = Vec::with_capacity(entries.len());
    for e in &entries {
        out.push(list(
            env,
            vec![
                i64::try_from(e.seq).unwrap_or(i64::MAX).into_lisp(env)?,
                e.time_ms.into_lisp(env)?,
                e.kind.as_str().into_lisp(env)?,
                e.message.as_str().into_lisp(env)?,
            ],
        )?);
    }
    list(env, out)
}

/// Return how many entries the log keeps: older ones fall out.
#[defun]
fn log_capacity(_env: &Env) -> Result<i64> {
    Ok(crate::agent::telemetry::LOG_CAPACITY as i64)
}

/// Return counters per tool and per backend: (:tools ROWS :backends ROWS), each row
/// (NAME :calls N :failures N :ms N :prompt-tokens N :completion-tokens N).
#[defun]
fn telemetry<'e>(env: &'e Env) -> Result<Value<'e>> {
    let (tools, backends) = runtime(env)?.with_telemetry(|t| (t.tools.clone(), t.backends.clone()));
    let rows = |map: &std::collections::BTreeMap<String, crate::agent::telemetry::Counters>| -> Result<Value<'e>> {
        let mut out = Vec::new();
        for (name, c) in map {
            out.push(list(
                env,
                vec![
                    name.as_str().into_lisp(env)?,
                    kw(env, ":calls")?,
                    (c.calls as i64).into_lisp(env)?,
                    kw(env, ":failures")?,
                    (c.failures as i64).into_lisp(env)?,
                    kw(env, ":ms")?,
                    (c.total.as_millis() as i64).into_lisp(env)?,
                    kw(env, ":prompt-tokens")?,
                    (c.prompt_tokens as i64).into_lisp(env)?,
                    kw(env, ":completion-tokens")?,
                    (c.completion_tokens as i64).into_lisp(env)?,
                ],
            )?);
        }
        list(env, out)
    };
    plist(
        env,
        vec![
            (kw(env, ":tools")?, rows(&tools)?),
            (kw(env, ":backends")?, rows(&backends)?),
        ],
    )
}

/// Return what requests to LLMs used today (UTC), as the budget's ledger counts them:
/// (:day "YYYY-MM-DD" :tokens N :cost USD :unpriced-tokens N), the last being the tokens
/// of requests whose price is unknown (not in :cost).
#[defun]
fn spent_today<'e>(env: &'e Env) -> Result<Value<'e>> {
    let day = crate::gates::budget::today();
    let used = runtime(env)?.ledger().used(&day);
    plist(
        env,
        vec![
            (kw(env, ":day")?, day.as_str().into_lisp(env)?),
            (kw(env, ":tokens")?, (used.tokens as i64).into_lisp(env)?),
            (kw(env, ":cost")?, used.cost.into_lisp(env)?),
            (
                kw(env, ":unpriced-tokens")?,
                (used.unpriced_tokens as i64).into_lisp(env)?,
            ),
        ],
    )
}

/// Replace the history of CONVERSATION with MESSAGES, a list of (ROLE . TEXT) where ROLE is
/// `user' or `assistant' (to continue a conversation saved earlier).
#[defun]
fn chat_restore(env: &Env, conversation: String, messages: Value) -> Result<()> {
    let mut history = Vec::new();
    for item in list_items(env, messages)? {
        let role = lisp_string(env, item.car()?)?;
        let text: String = item.cdr::<Value>()?.into_rust()?;
        history.push(match role.as_str() {
            "user" => crate::llm::http::Message::User(text),
            "assistant" => crate::llm::http::Message::Assistant {
                content: text,
                tool_calls: vec![],
            },
            other => return fail(env, format!("unknown role {other} in a saved conversation")),
        });
    }
    runtime(env)?.restore_conversation(conversation, history);
    Ok(())
}

/// Return the history of CONVERSATION as a list of (ROLE . TEXT), ROLE one of `user',
/// `assistant' and `tool' (nil while a turn of it is running).
#[defun]
fn chat_history<'e>(env: &'e Env, conversation: String) -> Result<Value<'e>> {
    let Some(messages) = runtime(env)?.conversation_messages(&conversation) else {
        return ().into_lisp(env);
    };
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let (role, text) = match m {
            crate::llm::http::Message::System(t) => ("system", t),
            crate::llm::http::Message::User(t) => ("user", t),
            crate::llm::http::Message::Assistant { content, .. } => ("assistant", content),
            crate::llm::http::Message::Tool { content, .. } => ("tool", content),
        };
        out.push(env.cons(env.intern(role)?, text)?);
    }
    list(env, out)
}

/// Explain what the gates decide about ACTION (an action plist, as the model would propose
/// it) under the permission RULES (`org-agent-permissions`): every rule that matched and
/// why, each gate's part and the decision, as text. SCOPE is nil (the chat), `background'
/// or a skill's name (in use).
#[defun]
fn permissions_explain(env: &Env, rules: Value, action: Value, scope: Value) -> Result<String> {
    let rules = lisp_sexp::from_lisp(env, rules)?;
    let permissions = match crate::gates::permissions::Permissions::from_sexp(rules.value()) {
        Ok(p) => Arc::new(p),
        Err(e) => return config_fail(env, e.to_string()),
    };
    let action = lisp_sexp::from_lisp(env, action)?;
    let action = match crate::action::Action::from_sexp(action.value()) {
        Ok(a) => a.as_proposed(),
        Err(e) => return config_fail(env, format!("not an action: {e}")),
    };
    let scope = lisp_sexp::from_lisp(env, scope)?;
    let (background, skill) = match scope.value() {
        crate::sexp::Value::Symbol(s) if &**s == "background" => (true, None),
        crate::sexp::Value::String(s) => (false, Some(s.to_string())),
        _ => (false, None),
    };
    let rt = runtime(env)?;
    // The MCP servers' tools as they last listed them: the `mcp` rules name those.
    let mcp_tools: Vec<String> = rt
        .mcp()
        .statuses()
        .into_iter()
        .flat_map(|s| s.tools)
        .collect();
    Ok(crate::agent::equipment::explain_action(
        rt.notes(),
        &rt.skills(),
        permissions,
        action,
        background,
        skill.as_deref(),
        &mcp_tools,
    ))
}
