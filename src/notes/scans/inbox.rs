//! The inbox skill's scan: one finding per item of the inbox, each with where the user's own
//! outline suggests refiling it, tags of the user's vocabulary its words name, and whether
//! it reads like a task. The judgement (which target, whether to schedule) stays the model's
//! and the user's; the scan only does what a store walk does well and a model does badly:
//! look at every headline of the notes.
//!
//! *The inbox* is `ScanInput::inbox`: a file (as the store names it, `~/…`, or the end of a
//! path such as `inbox.org` when one file ends so), `FILE::Headline` (Org's search syntax,
//! the `*` optional), or a headline's id. When none is given, the first of these the model
//! may see: a file named `inbox.org`, `refile.org` or `notes.org` (in that order; Org's
//! `org-default-notes-file` is `~/.notes`, a notes file the store never reads, so the usual
//! names stand for it), the one nearest the top of the notes first; else a top-level
//! headline titled `Inbox` or `Refile`. A file whose only top-level headline is a container
//! (`* Inbox`, `* Tasks`, … with children, as a `file+headline` capture target makes) has
//! that headline's children as items.
//!
//! *Refile targets* are the active projects (own tag `project`, not done; any level) and
//! the headlines of the first three levels, outside the inbox, neither done nor archived
//! nor untrusted, whose title words or own tags share a word with the item's title, tags or
//! body (body words and the title's verbs count half). Each shared word weighs by its rarity among the targets
//! (`ln(1 + N/df)`), a word found in more than `MAX_DF_SHARE` of them not at all; projects
//! weigh half as much again. The ties are broken by project first, then level, file and
//! place, so the ranking is the same every time.
//!
//! *Tags* are the own tags of the headlines outside the inbox, counted; an item is offered
//! those whose words all appear among its own, minus the tags it has or would inherit from
//! its first target.
//!
//! `ScanInput::file` limits the targets and the vocabulary to one file.

use super::{Cx, Finding};
use crate::store::{FileDoc, NodeKind, NodeRef, TodoType};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// File names taken for the inbox when none is given, the first found winning.
const INBOX_FILES: [&str; 3] = ["inbox.org", "refile.org", "notes.org"];

/// Titles of a top-level headline taken for the inbox when no inbox file is found.
const INBOX_HEADLINES: [&str; 2] = ["inbox", "refile"];

/// Titles of a headline that holds an inbox file's items (a capture's `file+headline`).
const CONTAINER_TITLES: [&str; 7] = [
    "inbox", "refile", "notes", "tasks", "capture", "captured", "incoming",
];

/// Headlines deeper than this are targets only when they are active projects: a refile
/// target is a place in the outline, not one more note.
const MAX_TARGET_LEVEL: u32 = 3;

/// A word found in more than this share of the targets says nothing about where an item
/// goes (and would cost a posting per target for every item using it).
const MAX_DF_SHARE: f64 = 0.02;

/// At least this many targets may share a word before `MAX_DF_SHARE` drops it: in small
/// notes every word is in a large share of them.
const MIN_DF_CAP: usize = 20;

/// Longest title (in bytes) of a target: a longer one is a paragraph written as a
/// headline, a note rather than a place to file notes under.
const MAX_TARGET_TITLE: usize = 120;

/// Longest title shown for a target, in characters.
const MAX_SHOWN_TITLE: usize = 80;

/// Targets and tags proposed per item.
const MAX_TARGETS: usize = 3;
const MAX_TAGS: usize = 5;

/// How much of an item's body is read for words: captures put the gist first, and a pasted
/// page must not cost a scan.
const MAX_BODY_CHARS: usize = 600;

/// Tags never proposed: Org's own (`ARCHIVE` hides a subtree) and the one that makes a
/// headline a project (a judgement, not a word match).
const STRUCTURAL_TAGS: [&str; 3] = ["ARCHIVE", "project", "REFILE"];

/// Words too common to say where anything goes; words are lowercased and at least three
/// letters before they are compared with these.
const STOPWORDS: &[&str] = &[
    "about", "after", "again", "all", "also", "and", "any", "are", "because", "been", "before",
    "being", "between", "both", "but", "can", "com", "could", "did", "does", "doing", "done",
    "during", "each", "even", "every", "few", "file", "for", "from", "get", "had", "has", "have",
    "her", "here", "his", "how", "html", "http", "https", "into", "its", "just", "like", "lot",
    "lots", "many", "may", "might", "more", "most", "much", "must", "need", "new", "not", "now",
    "off", "once", "one", "only", "org", "other", "our", "out", "over", "own", "per", "really",
    "same", "she", "should", "some", "still", "such", "take", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "thing", "things", "this", "those", "through",
    "time", "todo", "too", "two", "under", "until", "use", "used", "using", "very", "via", "want",
    "was", "way", "well", "were", "what", "when", "where", "which", "while", "who", "why", "will",
    "with", "within", "without", "would", "www", "yet", "you", "your",
];

/// Verbs an item starting with reads as something to do ("Call the plumber"). A word list,
/// not a parser: the finding says which word it was, and the model judges.
const VERBS: &[&str] = &[
    "add",
    "answer",
    "apply",
    "arrange",
    "ask",
    "book",
    "bring",
    "build",
    "buy",
    "call",
    "cancel",
    "change",
    "check",
    "clean",
    "collect",
    "confirm",
    "contact",
    "create",
    "decide",
    "delete",
    "deploy",
    "discuss",
    "do",
    "download",
    "draft",
    "email",
    "file",
    "find",
    "finish",
    "fix",
    "follow",
    "get",
    "give",
    "go",
    "implement",
    "install",
    "invite",
    "learn",
    "look",
    "mail",
    "make",
    "meet",
    "move",
    "order",
    "organize",
    "pay",
    "pick",
    "plan",
    "prepare",
    "print",
    "publish",
    "read",
    "register",
    "remind",
    "remove",
    "renew",
    "repair",
    "reply",
    "research",
    "reserve",
    "return",
    "review",
    "schedule",
    "send",
    "set",
    "setup",
    "ship",
    "sign",
    "sort",
    "start",
    "submit",
    "talk",
    "test",
    "text",
    "try",
    "update",
    "upgrade",
    "visit",
    "watch",
    "write",
];

pub(super) fn scan(cx: &Cx) -> Result<Vec<Finding>, String> {
    let inbox = find_inbox(cx)?;
    let items = inbox.items(cx);
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let words: Vec<ItemWords> = items.iter().map(ItemWords::of).collect();
    let outline = Outline::build(cx, &inbox, &words);
    Ok(items
        .iter()
        .zip(&words)
        .map(|(item, w)| outline.finding(cx, item, w))
        .collect())
}

/// The inbox: a file (`root` 0, its file node) or a headline of one.
struct Inbox {
    doc: Arc<FileDoc>,
    root: u32,
}

impl Inbox {
    /// The headline holding the items: the root, or an inbox file's container headline.
    fn holder(&self, cx: &Cx) -> u32 {
        if self.root != 0 {
            return self.root;
        }
        let tops: Vec<u32> = self.shown_children(cx, 0).collect();
        match tops.as_slice() {
            [only] => {
                let n = &self.doc.nodes[*only as usize];
                let title = n.content.title.trim().to_lowercase();
                let holds = CONTAINER_TITLES.contains(&title.as_str())
                    && self.shown_children(cx, *only).next().is_some();
                if holds {
                    *only
                } else {
                    0
                }
            }
            _ => 0,
        }
    }

    fn shown_children<'a>(&'a self, cx: &'a Cx, index: u32) -> impl Iterator<Item = u32> + 'a {
        self.doc.children(index).filter(move |&i| {
            self.doc.nodes[i as usize].content.kind == NodeKind::Headline
                && cx.shows(&Cx::at(&self.doc, i))
        })
    }

    /// The items, in the order of the inbox; private ones left out.
    fn items(&self, cx: &Cx) -> Vec<NodeRef> {
        let holder = self.holder(cx);
        self.shown_children(cx, holder)
            .map(|i| Cx::at(&self.doc, i))
            .collect()
    }

    /// Whether `r` is the inbox or inside it (never a target, never counted as vocabulary:
    /// the items are what is being filed).
    fn contains(&self, r: &NodeRef) -> bool {
        if !Arc::ptr_eq(&self.doc, &r.doc) && self.doc.path != r.doc.path {
            return false;
        }
        let root = &self.doc.nodes[self.root as usize];
        let n = r.node();
        self.root == 0 || (n.begin >= root.begin && n.begin < root.end)
    }
}

/// The inbox `cx.input.inbox` names, or the default one; why there is none otherwise.
fn find_inbox(cx: &Cx) -> Result<Inbox, String> {
    match cx
        .input
        .inbox
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(spec) => named_inbox(cx, spec),
        None => default_inbox(cx).ok_or_else(|| {
            "no inbox found: no note is a file named inbox.org, refile.org or notes.org, and \
             no top-level headline is titled Inbox or Refile; name the inbox (a file, \
             FILE::Headline, or a headline's id)"
                .to_string()
        }),
    }
}

fn default_inbox(cx: &Cx) -> Option<Inbox> {
    let shown = |doc: &&Arc<FileDoc>| cx.shows(&Cx::at(doc, 0));
    let depth = |doc: &Arc<FileDoc>| doc.path.matches('/').count();
    let by_name = cx
        .state
        .files
        .values()
        .filter_map(|doc| {
            let name = doc.path.rsplit('/').next().unwrap_or(&doc.path);
            let rank = INBOX_FILES
                .iter()
                .position(|f| name.eq_ignore_ascii_case(f))?;
            Some((rank, depth(doc), doc))
        })
        .filter(|(_, _, doc)| shown(doc))
        .min_by(|a, b| (a.0, a.1, &a.2.path).cmp(&(b.0, b.1, &b.2.path)));
    if let Some((_, _, doc)) = by_name {
        return Some(Inbox {
            doc: doc.clone(),
            root: 0,
        });
    }
    // Files in store order are in path order; the shallowest file wins, then the first.
    let mut best: Option<(usize, Inbox)> = None;
    for doc in cx.state.files.values() {
        for i in doc.children(0) {
            let n = &doc.nodes[i as usize];
            let title = n.content.title.trim().to_lowercase();
            if n.content.kind == NodeKind::Headline
                && INBOX_HEADLINES.contains(&title.as_str())
                && best.as_ref().is_none_or(|(d, _)| depth(doc) < *d)
                && cx.shows(&Cx::at(doc, i))
            {
                best = Some((
                    depth(doc),
                    Inbox {
                        doc: doc.clone(),
                        root: i,
                    },
                ));
            }
        }
    }
    best.map(|(_, inbox)| inbox)
}

fn named_inbox(cx: &Cx, spec: &str) -> Result<Inbox, String> {
    if let Some((file, headline)) = spec.split_once("::") {
        let doc = file_named(cx, file.trim())?.ok_or_else(|| no_such_file(file))?;
        let title = headline.trim().trim_start_matches('*').trim();
        let shown = |i: &u32| {
            doc.nodes[*i as usize].content.kind == NodeKind::Headline && cx.shows(&Cx::at(&doc, *i))
        };
        let indexes = || (1..doc.nodes.len() as u32).filter(shown);
        let exact = indexes().find(|&i| &*doc.nodes[i as usize].content.title == title);
        let root = exact
            .or_else(|| {
                indexes().find(|&i| {
                    doc.nodes[i as usize]
                        .content
                        .title
                        .eq_ignore_ascii_case(title)
                })
            })
            .ok_or_else(|| format!("{} has no headline {title:?} the agent may see", doc.path))?;
        return Ok(Inbox { doc, root });
    }
    if let Some(doc) = file_named(cx, spec)? {
        return Ok(Inbox { doc, root: 0 });
    }
    match cx.notes.node(spec) {
        Ok(r) if r.node().content.kind == NodeKind::Headline => Ok(Inbox {
            doc: r.doc.clone(),
            root: r.index,
        }),
        Ok(r) => Ok(Inbox {
            doc: r.doc.clone(),
            root: 0,
        }),
        Err(_) => Err(format!(
            "the inbox {spec:?} is neither a file nor a headline's id among the notes the \
             agent may see: give a file (as list_files names it), FILE::Headline, or an id"
        )),
    }
}

fn no_such_file(file: &str) -> String {
    format!("{file:?} is not a file among the notes the agent may see (list_files names them)")
}

/// The file `spec` names, as the store names it, by its end (`inbox.org`, `gtd/inbox.org`)
/// or `~/…`; `None` when none does; an error when several do. Private files are left out,
/// so naming one is answered as naming no file.
fn file_named(cx: &Cx, spec: &str) -> Result<Option<Arc<FileDoc>>, String> {
    let expanded = match spec.strip_prefix("~/") {
        Some(rest) => format!("{}/{rest}", super::super::paths::home_dir().display()),
        None => spec.to_string(),
    };
    let shown = |doc: &Arc<FileDoc>| cx.shows(&Cx::at(doc, 0));
    if let Some(doc) = cx.state.files.get(expanded.as_str()) {
        return Ok(shown(doc).then(|| doc.clone()));
    }
    let tail = format!("/{}", expanded.trim_start_matches('/'));
    let ends: Vec<&Arc<FileDoc>> = cx
        .state
        .files
        .values()
        .filter(|doc| doc.path.ends_with(&tail) && shown(doc))
        .collect();
    match ends.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some((*one).clone())),
        several => {
            let names: Vec<&str> = several.iter().take(5).map(|d| &*d.path).collect();
            Err(format!(
                "{} files end with {spec:?} ({}{}): give the whole path",
                several.len(),
                names.join(", "),
                if several.len() > 5 { ", …" } else { "" }
            ))
        }
    }
}

/// An item's words, each once, with the weight it counts with (title and tags 1, body ½).
struct ItemWords {
    words: Vec<(String, f64)>,
}

impl ItemWords {
    fn of(item: &NodeRef) -> ItemWords {
        let c = &item.node().content;
        let mut words: Vec<(String, f64)> = Vec::new();
        let mut add = |w: String, weight: f64| match words.iter_mut().find(|(x, _)| *x == w) {
            Some((_, old)) => *old = old.max(weight),
            None => words.push((w, weight)),
        };
        // A verb says what to do, not what about: "Buy seeds" belongs with the seeds.
        title_words(&c.title, |w| {
            let weight = if VERBS.binary_search(&w).is_ok() {
                0.5
            } else {
                1.0
            };
            add(w.to_string(), weight)
        });
        for t in &c.tags {
            for_words(t, |w| add(w.to_string(), 1.0));
        }
        for_words(&prose(&c.body_or_notice()), |w| add(w.to_string(), 0.5));
        ItemWords { words }
    }

    fn has(&self, word: &str) -> bool {
        self.words.iter().any(|(w, _)| w == word)
    }
}

/// The start of a body as prose: drawers, planning and clock lines, link targets and bare
/// URLs left out (their path words would match every note under `~/org/notes`).
fn prose(body: &str) -> String {
    let mut out = String::new();
    let mut in_drawer = false;
    for line in body.lines() {
        let t = line.trim();
        if in_drawer {
            in_drawer = !t.eq_ignore_ascii_case(":END:");
            continue;
        }
        if t.starts_with(':') && t.ends_with(':') && t.len() > 2 {
            in_drawer = true;
            continue;
        }
        if t.starts_with("CLOCK:") || t.starts_with("#+") {
            continue;
        }
        let t = match t.char_indices().nth(MAX_BODY_CHARS) {
            Some((cut, _)) => &t[..cut],
            None => t,
        };
        let mut plain = String::new();
        let mut rest = t;
        while let Some(start) = rest.find("[[") {
            plain.push_str(&rest[..start]);
            plain.push(' ');
            let link = &rest[start + 2..];
            let Some(end) = link.find("]]") else {
                rest = "";
                break;
            };
            if let Some((_, desc)) = link[..end].split_once("][") {
                plain.push_str(desc);
            }
            plain.push(' ');
            rest = &link[end + 2..];
        }
        plain.push_str(rest);
        for token in without_timestamps(&plain).split_whitespace() {
            if !token.contains("://") {
                out.push_str(token);
                out.push(' ');
            }
        }
        out.push('\n');
        if out.len() >= MAX_BODY_CHARS {
            break;
        }
    }
    out
}

/// `text` without its Org timestamps (`[2026-11-24 Tue 09:00]`, `<2026-11-24 Tue>`): their
/// day names would match every note captured on a Tuesday.
fn without_timestamps(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut close: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(end) = close {
            if c == end {
                close = None;
                out.push(' ');
            }
            continue;
        }
        if (c == '[' || c == '<') && chars.peek().is_some_and(char::is_ascii_digit) {
            close = Some(if c == '[' { ']' } else { '>' });
            continue;
        }
        out.push(c);
    }
    out
}

/// [`for_words`] of a title, its links read as their descriptions and its URLs left out
/// (`read https://example.com/50-data-structures` is about reading, not data structures).
fn title_words(title: &str, f: impl FnMut(&str)) {
    match plain_title(title) {
        Some(plain) => for_words(&plain, f),
        None => for_words(title, f),
    }
}

/// A title read as prose (see [`prose`]) when it has links, timestamps or URLs; `None` when
/// it is plain already (most are: no allocation for them).
fn plain_title(title: &str) -> Option<String> {
    let marked = title.bytes().any(|b| b == b'[' || b == b'<') || title.contains("://");
    marked.then(|| prose(title))
}

/// The words of a tag, for matching against an item's: as [`for_words`] makes them, but
/// keeping stopwords, so that `does_not_work` is not proposed for every item about work.
fn tag_parts(tag: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for token in tag.split(|c: char| !c.is_alphanumeric()) {
        if token.chars().count() < 3 || token.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let mut w: String = token.chars().flat_map(char::to_lowercase).collect();
        if w.len() > 4 && w.ends_with('s') && !w.ends_with("ss") {
            w.pop();
        }
        parts.push(w);
    }
    parts
}

/// Call `f` with each word of `text` worth comparing: lowercased, three letters or more,
/// not only digits, not a stopword, a plural `s` dropped.
fn for_words(text: &str, f: impl FnMut(&str)) {
    normalized(text, true, f)
}

/// The words of `text` as [`for_words`] makes them, stopwords included: for the walk over
/// every title of the notes, where a stopword finds no item's word anyway and looking it up
/// in the list would cost more than looking it up among the items' words.
fn for_walk_words(text: &str, f: impl FnMut(&str)) {
    normalized(text, false, f)
}

/// One buffer for all the words of `text`, and no allocation per word: this runs on every
/// title of the notes.
fn normalized(text: &str, skip_stopwords: bool, mut f: impl FnMut(&str)) {
    let mut buf = String::new();
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        if token.len() < 3 || token.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        buf.clear();
        if token.is_ascii() {
            buf.push_str(token);
            buf.make_ascii_lowercase();
        } else {
            buf.extend(token.chars().flat_map(char::to_lowercase));
        }
        if skip_stopwords && STOPWORDS.binary_search(&buf.as_str()).is_ok() {
            continue;
        }
        if buf.len() > 4 && buf.ends_with('s') && !buf.ends_with("ss") {
            buf.pop();
        }
        f(&buf);
    }
}

/// A possible refile target, as the ranking needs it.
struct Target {
    r: NodeRef,
    project: bool,
}

/// What the walk over the notes gathered: the targets sharing a word with some item, a
/// posting list per item word, and the tag vocabulary.
struct Outline {
    targets: Vec<Target>,
    /// Each word of any item, by its number.
    word_ids: FxHashMap<String, u32>,
    /// Per word number: the targets (indexes into `targets`, ascending) whose title or own
    /// tags have it.
    postings: Vec<Vec<u32>>,
    /// How many targets there were in all, sharing a word or not: the `N` of the weights.
    candidates: usize,
    /// Own tags of the headlines outside the inbox, with how many carry each.
    tags: FxHashMap<String, usize>,
    /// Each proposable tag with its words (`@home` → `home`), in name order.
    tag_words: Vec<(String, Vec<String>)>,
}

impl Outline {
    /// One walk over the headlines the scan covers: the vocabulary from all of them, the
    /// word index from the targets. Only the items' words are indexed, so the walk allocates
    /// nothing per headline.
    fn build(cx: &Cx, inbox: &Inbox, items: &[ItemWords]) -> Outline {
        let mut word_ids: FxHashMap<String, u32> = FxHashMap::default();
        for w in items {
            for (word, _) in &w.words {
                let next = word_ids.len() as u32;
                word_ids.entry(word.clone()).or_insert(next);
            }
        }
        let mut postings: Vec<Vec<u32>> = vec![Vec::new(); word_ids.len()];
        let mut targets = Vec::new();
        let mut tags: FxHashMap<String, usize> = FxHashMap::default();
        let mut candidates = 0;
        let mut matched: Vec<u32> = Vec::new();
        for doc in cx.files() {
            let archive_file = doc.path.ends_with(".org_archive");
            for index in 1..doc.nodes.len() as u32 {
                let n = &doc.nodes[index as usize];
                let c = &n.content;
                if c.kind != NodeKind::Headline {
                    continue;
                }
                let r = Cx::at(doc, index);
                if inbox.contains(&r) || !cx.shows(&r) {
                    continue;
                }
                for t in &c.tags {
                    match tags.get_mut(t.as_str()) {
                        Some(count) => *count += 1,
                        None => {
                            tags.insert(t.clone(), 1);
                        }
                    }
                }
                let project = c.has_tag("project") && c.todo_type != Some(TodoType::Done);
                // A place in the outline: a project, or a headline near the top that is
                // neither done, archived, a lone task (a task with children is a project
                // for many), nor a paragraph written as a title.
                let target = !archive_file
                    && c.todo_type != Some(TodoType::Done)
                    && (project || u32::from(c.level) <= MAX_TARGET_LEVEL)
                    && (project || c.todo.is_none() || doc.has_children(index))
                    && c.title.len() <= MAX_TARGET_TITLE
                    && !n.has_tag("ARCHIVE");
                if !target {
                    continue;
                }
                candidates += 1;
                matched.clear();
                let mut note = |w: &str| {
                    if let Some(&id) = word_ids.get(w) {
                        if !matched.contains(&id) {
                            matched.push(id);
                        }
                    }
                };
                match plain_title(&c.title) {
                    Some(plain) => for_walk_words(&plain, &mut note),
                    None => for_walk_words(&c.title, &mut note),
                }
                for t in &c.tags {
                    for_walk_words(t, &mut note);
                }
                if matched.is_empty() {
                    continue;
                }
                let at = targets.len() as u32;
                for &id in &matched {
                    postings[id as usize].push(at);
                }
                targets.push(Target { r, project });
            }
        }
        let mut tag_words: Vec<(String, Vec<String>)> = tags
            .keys()
            .filter(|t| !STRUCTURAL_TAGS.contains(&t.as_str()))
            .filter_map(|t| {
                let parts = tag_parts(t);
                (!parts.is_empty()).then(|| (t.clone(), parts))
            })
            .collect();
        tag_words.sort();
        Outline {
            targets,
            word_ids,
            postings,
            candidates,
            tags,
            tag_words,
        }
    }

    /// How much a shared `word` says, 0 when it is too common to say anything.
    fn weight(&self, word: u32) -> f64 {
        let df = self.postings[word as usize].len();
        let cap = ((self.candidates as f64 * MAX_DF_SHARE) as usize).max(MIN_DF_CAP);
        if df == 0 || df > cap {
            return 0.0;
        }
        (1.0 + self.candidates as f64 / df as f64).ln()
    }

    /// The best targets for an item, best first, with the words each shares with it.
    fn rank<'a>(&'a self, cx: &Cx, item: &'a ItemWords) -> Vec<(&'a Target, Vec<&'a str>)> {
        let mut scores: FxHashMap<u32, f64> = FxHashMap::default();
        for (word, weight) in &item.words {
            let Some(&id) = self.word_ids.get(word) else {
                continue;
            };
            let w = self.weight(id) * weight;
            if w == 0.0 {
                continue;
            }
            for &t in &self.postings[id as usize] {
                *scores.entry(t).or_insert(0.0) += w;
            }
        }
        let mut ranked: Vec<(u32, f64)> = scores
            .into_iter()
            .map(|(t, s)| {
                let bonus = if self.targets[t as usize].project {
                    1.5
                } else {
                    1.0
                };
                (t, s * bonus)
            })
            .collect();
        ranked.sort_by(|(a, sa), (b, sb)| {
            let (ta, tb) = (&self.targets[*a as usize], &self.targets[*b as usize]);
            sb.total_cmp(sa)
                .then(tb.project.cmp(&ta.project))
                .then(ta.r.node().content.level.cmp(&tb.r.node().content.level))
                .then(ta.r.doc.path.cmp(&tb.r.doc.path))
                .then(ta.r.index.cmp(&tb.r.index))
        });
        ranked
            .into_iter()
            // An untrusted headline's title is text from outside: not a place to file the
            // user's own items, and naming it here would pass that text on unmarked.
            .filter(|(t, _)| cx.notes.untrusted(&self.targets[*t as usize].r).is_none())
            .take(MAX_TARGETS)
            .map(|(t, _)| {
                let shared = item
                    .words
                    .iter()
                    .filter(|(w, _)| {
                        self.word_ids.get(w).is_some_and(|&id| {
                            self.weight(id) > 0.0
                                && self.postings[id as usize].binary_search(&t).is_ok()
                        })
                    })
                    .map(|(w, _)| w.as_str())
                    .collect();
                (&self.targets[t as usize], shared)
            })
            .collect()
    }
}

impl Outline {
    /// The finding for `item`: its targets, tags and whether it reads like a task.
    fn finding(&self, cx: &Cx, item: &NodeRef, words: &ItemWords) -> Finding {
        let n = item.node();
        let ranked = self.rank(cx, words);
        let mut detail = String::new();
        if ranked.is_empty() {
            detail.push_str(
                "refile: no headline of the outline shares a word with it (ask where it \
                 goes, or leave it)",
            );
        } else {
            detail.push_str("refile under: ");
            let shown: Vec<String> = ranked
                .iter()
                .enumerate()
                .map(|(i, (t, shared))| {
                    let c = &t.r.node().content;
                    let mut place = vec![file_name(&t.r.doc.path).to_string()];
                    place.extend(t.r.outline_path());
                    format!(
                        "{}) \"{}\" (id {}{}, in {}) sharing {}",
                        i + 1,
                        shorten(&c.title),
                        t.r.node().id,
                        if t.project { ", active project" } else { "" },
                        place.join(" > "),
                        shared.join(", ")
                    )
                })
                .collect();
            detail.push_str(&shown.join("; "));
        }
        let first = ranked.first().map(|(t, _)| t.r.node());
        let tags = self.tags_for(words, |t| {
            n.has_tag(t) || first.is_some_and(|f| f.has_tag(t))
        });
        if tags.is_empty() {
            detail.push_str(". tags: none of the tags in use is one of its words");
        } else {
            let shown: Vec<String> = tags
                .iter()
                .map(|(t, count)| match count {
                    1 => format!("{t} (on 1 headline)"),
                    _ => format!("{t} (on {count} headlines)"),
                })
                .collect();
            detail.push_str(&format!(". tags: {}", shown.join(", ")));
        }
        let (task, todo) = task(n);
        detail.push_str(&format!(". task: {task}"));
        let mut fix = Vec::new();
        if let Some((t, _)) = ranked.first() {
            fix.push(format!("refile with target_id {}", t.r.node().id));
        }
        if !tags.is_empty() {
            let all: Vec<&str> = n
                .content
                .tags
                .iter()
                .map(String::as_str)
                .chain(tags.iter().map(|(t, _)| t.as_str()))
                .collect();
            fix.push(format!("set_tags [{}] (its own tags kept)", all.join(", ")));
        }
        if todo {
            fix.push("set_todo TODO, and schedule it if it names a day".into());
        }
        Finding {
            kind: "inbox-item",
            node: item.clone(),
            detail,
            fix: (!fix.is_empty()).then(|| fix.join("; ")),
        }
    }

    /// Tags in use whose words are all the item's, minus those `has` (the item's own or
    /// inherited ones, those its first target would give it), most used first.
    fn tags_for(&self, item: &ItemWords, has: impl Fn(&str) -> bool) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = self
            .tag_words
            .iter()
            .filter(|(tag, parts)| parts.iter().all(|p| item.has(p)) && !has(tag))
            .map(|(tag, _)| (tag.clone(), self.tags.get(tag).copied().unwrap_or(0)))
            .collect();
        out.sort_by(|(a, ca), (b, cb)| cb.cmp(ca).then(a.cmp(b)));
        // Spellings of one tag (`work`, `WORK`): the most used one stands for them.
        let mut seen: Vec<String> = Vec::new();
        out.retain(|(t, _)| {
            let lower = t.to_lowercase();
            let new = !seen.contains(&lower);
            seen.push(lower);
            new
        });
        out.truncate(MAX_TAGS);
        out
    }
}

/// `title`, cut to [`MAX_SHOWN_TITLE`] characters.
fn shorten(title: &str) -> String {
    let plain;
    let title = if title.contains("[[") {
        plain = prose(title);
        plain.trim()
    } else {
        title
    };
    match title.char_indices().nth(MAX_SHOWN_TITLE) {
        Some((cut, _)) => format!("{}…", &title[..cut]),
        None => title.to_string(),
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether the item reads like a task, in words, and whether to suggest a TODO keyword.
fn task(n: &crate::store::Node) -> (String, bool) {
    let c = &n.content;
    let planned = c.planning.scheduled.is_some() || c.planning.deadline.is_some();
    match (c.todo.as_deref(), c.todo_type) {
        (Some(k), Some(TodoType::Done)) => (format!("already {k}: file it, nothing to do"), false),
        (Some(k), _) if planned => (format!("already a task ({k}), planned"), false),
        (Some(k), _) => (
            format!("already a task ({k}), neither scheduled nor with a deadline"),
            false,
        ),
        (None, _) => {
            let first = c
                .title
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_matches(|ch: char| !ch.is_alphanumeric())
                .to_lowercase();
            if VERBS.binary_search(&first.as_str()).is_ok() {
                (
                    format!("it starts with the verb \"{first}\" but has no TODO keyword"),
                    true,
                )
            } else {
                (
                    "reads like a note (no TODO keyword, its first word is not a common verb)"
                        .into(),
                    false,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{run, Day, Report, Scan, ScanInput};
    use super::*;
    use crate::notes::{Notes, Privacy};
    use crate::store::{Config, Store};

    use super::super::test_notes as notes;

    fn scan(n: &Notes, inbox: Option<&str>) -> Result<Report, String> {
        let input = ScanInput {
            today: Day::parse("2026-11-24").unwrap(),
            file: None,
            inbox: inbox.map(str::to_string),
        };
        run(n, Scan::Inbox, &input)
    }

    fn privacy() -> Privacy {
        Privacy::new(["private".to_string()], ["diary.org".to_string()])
    }

    const INBOX: &str = "\
* Buy tomato seeds for the garden
* Call Anna about the Lisbon trip :travel:
* TODO Idea: compost bins
see the [[file:~/org/garden.org][garden layout]] at https://example.com/bins
* Thought about the garden :private:
";

    const PROJECTS: &str = "\
* Home
** TODO Garden :project:garden:
** Kitchen
* Travel
** TODO Lisbon trip :project:travel:
** DONE Lisbon hotel
* Secret garden and tomato plans :private:
* Garden clippings :web:
";

    const AREAS: &str = "\
* Seeds to order :garden:
* Recipes
** Tomato soup :tomato:cooking:
* People
** Anna's birthday :anna:
";

    const DIARY: &str = "* Garden diary, tomato seeds :tomato:\n";

    fn fixture() -> Notes {
        notes(
            &[
                ("/n/inbox.org", INBOX),
                ("/n/projects.org", PROJECTS),
                ("/n/areas.org", AREAS),
                ("/n/diary.org", DIARY),
            ],
            privacy(),
        )
    }

    fn id(n: &Notes, title: &str) -> String {
        n.store
            .query(&crate::store::Query::default())
            .into_iter()
            .find(|r| &*r.node().content.title == title)
            .map(|r| r.node().id.to_string())
            .unwrap()
    }

    #[test]
    fn each_item_gets_targets_tags_and_a_task_verdict() {
        let n = fixture();
        let report = scan(&n, None).unwrap();
        let titles: Vec<&str> = report
            .findings
            .iter()
            .map(|f| &*f.node.node().content.title)
            .collect();
        assert_eq!(
            titles,
            [
                "Buy tomato seeds for the garden",
                "Call Anna about the Lisbon trip",
                "Idea: compost bins"
            ]
        );
        assert_eq!(report.counts(), vec![("inbox-item", 3)]);
        let [seeds, anna, compost] = &report.findings[..] else {
            panic!("{}", report.text(10));
        };
        // The seeds: the garden project and the seeds list share words; the project wins
        // the tie on "garden" by being a project, "Seeds to order" shares two words.
        let garden = id(&n, "Garden");
        let order = id(&n, "Seeds to order");
        let soup = id(&n, "Tomato soup");
        assert!(
            seeds
                .detail
                .starts_with("refile under: 1) \"Seeds to order\""),
            "{}",
            seeds.detail
        );
        assert!(
            seeds
                .detail
                .contains(&format!("(id {order}, in areas.org) sharing seed, garden")),
            "{}",
            seeds.detail
        );
        assert!(
            seeds.detail.contains(&format!(
                "\"Garden\" (id {garden}, active project, in projects.org > Home) sharing garden"
            )),
            "{}",
            seeds.detail
        );
        assert!(
            seeds.detail.contains(&format!(
                "\"Tomato soup\" (id {soup}, in areas.org > Recipes) sharing tomato"
            )),
            "{}",
            seeds.detail
        );
        // garden comes with the first target; tomato is the vocabulary's.
        assert!(
            seeds.detail.contains("tags: tomato (on 1 headline)."),
            "{}",
            seeds.detail
        );
        assert!(seeds
            .detail
            .contains("task: it starts with the verb \"buy\""));
        assert_eq!(
            seeds.fix.as_deref(),
            Some(&*format!(
                "refile with target_id {order}; set_tags [tomato] (its own tags kept); \
                 set_todo TODO, and schedule it if it names a day"
            ))
        );
        let trip = id(&n, "Lisbon trip");
        assert!(anna.detail.starts_with(&format!("refile under: 1) \"Lisbon trip\" (id {trip}, active project, in projects.org > Travel) sharing lisbon, trip, travel")), "{}", anna.detail);
        assert!(
            !anna.detail.contains("Lisbon hotel"),
            "a done headline is no target"
        );
        assert!(
            anna.detail.contains("tags: anna (on 1 headline)"),
            "{}",
            anna.detail
        );
        // Body words count (a link's description, not its target nor a URL).
        assert!(
            compost.detail.contains("sharing garden"),
            "{}",
            compost.detail
        );
        assert!(
            !compost.detail.contains("sharing org"),
            "{}",
            compost.detail
        );
        assert!(compost
            .detail
            .contains("task: already a task (TODO), neither scheduled"));
        assert!(!compost.fix.as_deref().unwrap_or("").contains("set_todo"));
    }

    #[test]
    fn private_and_untrusted_notes_are_never_targets_nor_shown() {
        let n = fixture();
        let text = scan(&n, None).unwrap().text(10);
        for hidden in [
            "Thought about the garden",
            "Secret garden",
            "Garden diary",
            "Garden clippings",
        ] {
            assert!(!text.contains(hidden), "{hidden} in {text}");
        }
        // The private notes' tags are no vocabulary either: tomato is on one visible headline.
        assert!(text.contains("tomato (on 1 headline)"), "{text}");
    }

    #[test]
    fn the_inbox_is_found_or_named() {
        // Without inbox.org, refile.org wins over notes.org; a private inbox.org is no inbox.
        let n = notes(
            &[
                ("/n/notes.org", "* Buy milk\n"),
                ("/n/sub/refile.org", "* Call mum\n"),
                ("/n/inbox.org", "* Secret :private:\n"),
            ],
            privacy(),
        );
        let titles = |r: Report| -> Vec<String> {
            r.findings
                .iter()
                .map(|f| f.node.node().content.title.to_string())
                .collect()
        };
        // inbox.org is the user's inbox: its private item is not shown, and it stays the inbox.
        assert!(scan(&n, None).unwrap().findings.is_empty());
        assert_eq!(titles(scan(&n, Some("refile.org")).unwrap()), ["Call mum"]);
        assert_eq!(
            titles(scan(&n, Some("/n/notes.org")).unwrap()),
            ["Buy milk"]
        );
        let n = notes(
            &[
                ("/n/notes.org", "* Buy milk\n"),
                ("/n/sub/refile.org", "* Call mum\n"),
                ("/n/inbox.org", "#+FILETAGS: :private:\n* Secret\n"),
            ],
            privacy(),
        );
        assert_eq!(titles(scan(&n, None).unwrap()), ["Call mum"]);
        // A file+headline inbox, by FILE::Headline or by the headline's id; a container.
        let n = notes(
            &[
                (
                    "/n/gtd.org",
                    "* Projects\n** Garden :project:\n* Inbox\n** Water the garden\n",
                ),
                (
                    "/n/in/capture.org",
                    "* Inbox\n** Read the paper\n** Fix the bike\n",
                ),
            ],
            privacy(),
        );
        let found = scan(&n, None).unwrap();
        assert_eq!(
            titles(found.clone()),
            ["Water the garden"],
            "a top-level Inbox headline"
        );
        assert!(found.findings[0].detail.contains("\"Garden\""));
        assert!(
            !found.findings[0].detail.contains("\"Inbox\""),
            "the inbox is no target"
        );
        assert_eq!(
            titles(scan(&n, Some("gtd.org::*Inbox")).unwrap()),
            ["Water the garden"]
        );
        assert_eq!(
            titles(scan(&n, Some(&id(&n, "Projects"))).unwrap()),
            ["Garden"]
        );
        assert_eq!(
            titles(scan(&n, Some("capture.org")).unwrap()),
            ["Read the paper", "Fix the bike"],
            "a file whose one headline is a container"
        );
        // What is not there, or private, is refused in the same words.
        let none = notes(
            &[
                ("/n/a.org", "* Plan\n"),
                ("/n/diary.org", "* Inbox\n** x\n"),
            ],
            privacy(),
        );
        assert!(scan(&none, None).unwrap_err().contains("no inbox found"));
        let private = scan(&none, Some("/n/diary.org")).unwrap_err();
        let missing = scan(&none, Some("/n/other.org")).unwrap_err();
        assert_eq!(private.replace("diary", "other"), missing);
        assert!(scan(&none, Some("a.org::Nothing"))
            .unwrap_err()
            .contains("no headline"));
    }

    #[test]
    fn a_body_gives_its_prose_words_only() {
        let body = ":LOGBOOK:\nCLOCK: [2022-11-23 Wed 23:12]\n:END:\n[2022-11-24 Thu 02:30] \
                    Ask [[https://urbit.org/blog/x][https://urbit.org/blog/x]] and \
                    [[file:~/org/notes/garden.org][the garden plan]] <2026-12-01 Tue>\n";
        let mut words = Vec::new();
        for_words(&prose(body), |w| words.push(w.to_string()));
        assert_eq!(words, ["ask", "garden", "plan"]);
        assert_eq!(tag_parts("Does_not_work"), ["does", "not", "work"]);
        assert_eq!(tag_parts("@home"), ["home"]);
    }

    #[test]
    fn word_lists_are_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(VERBS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_large_outline_is_scanned_quickly() {
        // 100k headlines in 100 files, an inbox of 50 items.
        let store = Arc::new(Store::in_memory(Config::default()));
        let words = [
            "garden", "travel", "kitchen", "budget", "report", "meeting", "paper", "bike",
        ];
        for f in 0..100 {
            let mut text = String::new();
            for h in 0..250 {
                text.push_str(&format!(
                    "* Area {f} {} :{}:\n",
                    words[h % 8],
                    words[(h + f) % 8]
                ));
                for k in 0..3 {
                    text.push_str(&format!(
                        "** Topic {h} {k} {} note{}\n",
                        words[(h + k) % 8],
                        h * 3 + k
                    ));
                }
            }
            store
                .ingest_text(&format!("/n/f{f}.org"), &text, None, None, None)
                .unwrap();
        }
        let mut inbox = String::new();
        for i in 0..50 {
            inbox.push_str(&format!(
                "* Buy a new {} for the {} note{}\n",
                words[i % 8],
                words[(i + 3) % 8],
                i * 7
            ));
        }
        store
            .ingest_text("/n/inbox.org", &inbox, None, None, None)
            .unwrap();
        let n = Notes::new(store, Arc::new(Privacy::default()));
        let started = std::time::Instant::now();
        let report = scan(&n, None).unwrap();
        let took = started.elapsed();
        assert_eq!(report.findings.len(), 50);
        assert!(report.looked_at >= 100_000);
        // Its speed is the benchmark's (scripts/bench, section 12), not a timed test's.
        eprintln!("inbox scan over {} headlines: {took:?}", report.looked_at);
    }
}
