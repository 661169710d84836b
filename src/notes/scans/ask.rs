//! Everyday questions the store answers exactly: what is waiting and on whom, what is
//! scheduled today, what is overdue or due soon, what was finished lately, a project's next
//! action, when something is due, a property's value, a tag's items, the active projects,
//! the open tasks — and how many of any of them.
//!
//! Symbolic first: a small local model reads a notes context badly (it answered "waiting is
//! a task that is not yet completed" with the waiting task in its prompt), but the store
//! knows these answers. [`understand`] reads a question into an [`Ask`] — words that say
//! which question, and the headline, tag or property it is about, matched against what the
//! notes hold — and [`answer`] computes the answer from the notes under the privacy rules,
//! as the scans do. The model only phrases it. Questions it does not understand go to the
//! model as before.

use super::briefing;
use super::gtd::{archived, is_active_project, is_next_action, is_open, is_waiting, names_someone};
use super::review::{planning_day, waiting_since};
use super::{days, Cx, Day, ScanInput};
use crate::notes::Notes;
use crate::store::{NodeKind, NodeRef, TodoType};

/// A question the store answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// Open WAITING tasks, with whom or what each waits for.
    Waiting,
    /// Headlines scheduled or due today (the overdue ones are named too).
    Today,
    /// Open tasks whose deadline or schedule is past.
    Overdue,
    /// Open tasks due or scheduled in the next `days` days, today included.
    Upcoming { days: i64 },
    /// Tasks closed on or after `since`; `label` says which span ("this week").
    Finished { since: Day, label: String },
    /// The next actions of a project (`None`: of every active project).
    NextAction { project: Option<String> },
    /// When the headline `id` is due (deadline and schedule).
    Due { id: String },
    /// The value of property `key`, of headline `id` or of every headline that has it.
    Property { key: String, id: Option<String> },
    /// The headlines tagged `tag` (own or inherited), open tasks first.
    Tagged { tag: String },
    /// The active projects.
    Projects,
    /// Open tasks (with this keyword, when given).
    OpenTasks { keyword: Option<String> },
}

/// A question as understood: what it asks, and whether only the number is wanted.
#[derive(Clone, Debug, PartialEq)]
pub struct Understood {
    pub ask: Ask,
    pub count: bool,
}

/// One headline of an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Its TODO keyword, title and tags as Org writes them (`NEXT Draft the slides :writing:`).
    pub headline: String,
    /// Its title alone.
    pub title: String,
    /// What was found about it (`DEADLINE 2026-12-01 Tue, in 5 days`), or nothing.
    pub detail: String,
    /// The name of the file it is in (not its path: the reader needs no more).
    pub file: String,
}

impl Item {
    pub(super) fn of(r: &NodeRef, detail: &str) -> Item {
        Item {
            headline: headline(r),
            title: r.node().content.title.to_string(),
            detail: detail.to_string(),
            file: r
                .doc
                .path
                .rsplit('/')
                .next()
                .unwrap_or(&r.doc.path)
                .to_string(),
        }
    }

    /// The item as the reader sees it (`full`) or as the phrasing model reads it: its title
    /// and what was found, no keyword, tags or file (a small model repeats what it sees).
    pub(super) fn line(&self, full: bool) -> String {
        let mut out = if full {
            self.headline.clone()
        } else {
            self.title.clone()
        };
        if !self.detail.is_empty() {
            out.push_str(" — ");
            out.push_str(&self.detail);
        }
        if full {
            out.push_str(&format!(" ({})", self.file));
        }
        out
    }
}

/// The store's answer: what was looked up, in words, and what was found, one line each.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreAnswer {
    /// What was looked up ("tasks waiting on someone"), for the reader and the model.
    pub asked: String,
    /// The items found, in the order they answer.
    pub items: Vec<Item>,
    /// More the reader should know (nothing scheduled today, but two overdue): a sentence,
    /// and items as in `items`.
    pub also: Vec<(String, Vec<Item>)>,
    /// Only the number was asked.
    pub count: bool,
}

impl StoreAnswer {
    /// The answer as Org text: a sentence, then the items as a list.
    pub fn text(&self) -> String {
        self.text_limited(usize::MAX)
    }

    /// [`text`](Self::text) with at most `limit` items listed, and how many more there are.
    pub fn text_limited(&self, limit: usize) -> String {
        self.render(limit, true)
    }

    /// The answer as the model that phrases it reads it: at most `limit` items, without
    /// their files (a small model repeats whatever it is shown).
    pub fn for_model(&self, limit: usize) -> String {
        self.render(limit, false)
    }

    fn render(&self, limit: usize, files: bool) -> String {
        let mut out = match (self.items.len(), self.count) {
            (0, _) => format!("No {} in your notes.", self.asked),
            (n, true) => format!("{}: {n}", capitalised(&self.asked)),
            (n, false) if files => format!("{} ({n}):", capitalised(&self.asked)),
            (_, false) => format!("{}:", capitalised(&self.asked)),
        };
        for item in self.items.iter().take(limit) {
            out.push_str("\n- ");
            out.push_str(&item.line(files));
        }
        if self.items.len() > limit {
            out.push_str(&format!("\n- … and {} more", self.items.len() - limit));
        }
        for (said, items) in &self.also {
            out.push_str("\n\n");
            out.push_str(said);
            for item in items {
                out.push_str("\n- ");
                out.push_str(&item.line(files));
            }
        }
        out
    }
}

pub(super) fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Words too common to say what a question is about.
const STOP: &[&str] = &[
    "a",
    "about",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "by",
    "can",
    "did",
    "do",
    "does",
    "for",
    "from",
    "get",
    "got",
    "has",
    "have",
    "how",
    "i",
    "in",
    "is",
    "it",
    "its",
    "list",
    "many",
    "me",
    "my",
    "of",
    "on",
    "or",
    "our",
    "please",
    "show",
    "so",
    "tell",
    "that",
    "the",
    "their",
    "there",
    "this",
    "to",
    "up",
    "was",
    "we",
    "were",
    "what",
    "whats",
    "when",
    "where",
    "which",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "task",
    "tasks",
    "item",
    "items",
    "thing",
    "things",
    "note",
    "notes",
    "value",
    "property",
    "next",
    "action",
    "actions",
    "step",
    "steps",
    "due",
    "deadline",
    "scheduled",
    "schedule",
    "project",
    "projects",
    "tag",
    "tagged",
    "number",
    "count",
    "work",
    "should",
    "need",
    "date",
    "set",
    "s",
    "t",
    "today",
    "week",
    "waiting",
    "open",
    "done",
    "finished",
];

/// First words of a request for the model's own work (writing, explaining, judging).
const MODEL_WORK: &[&str] = &[
    "summarise",
    "summarize",
    "summary",
    "explain",
    "describe",
    "write",
    "draft",
    "rewrite",
    "translate",
    "suggest",
    "compare",
    "help",
    "brainstorm",
    "plan",
    "organise",
    "organize",
    "review",
    "analyse",
    "analyze",
    "improve",
    "create",
    "make",
    "add",
    "change",
    "move",
    "refile",
    "schedule",
    "mark",
    "close",
    "rename",
    "delete",
    "remove",
    "edit",
    "set",
];

/// The question's words: lowercase, letters and digits (a `@` or `_` kept inside a word).
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '@' || c == '_' || c == '-'))
        .map(|w| w.trim_matches('-').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// A word without a plural `s`, so "figures" meets "figure".
fn stem(w: &str) -> &str {
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        &w[..w.len() - 1]
    } else {
        w
    }
}

fn has(words: &[String], any: &[&str]) -> bool {
    words.iter().any(|w| any.contains(&w.as_str()))
}

fn has_phrase(text: &str, any: &[&str]) -> bool {
    any.iter().any(|p| text.contains(p))
}

/// Read `question` into an [`Ask`], as of `today`; `None` when it is not one the store
/// answers (the model reads the notes instead).
pub fn understand(notes: &Notes, question: &str, today: Day) -> Option<Understood> {
    let input = ScanInput {
        today,
        file: None,
        inbox: None,
    };
    let cx = Cx::new(notes, &input);
    let text = format!(" {} ", words(question).join(" "));
    let w = words(question);
    // Asked to write, explain or judge: the model's work, not a lookup.
    if w.first().is_some_and(|v| MODEL_WORK.contains(&v.as_str()))
        || has(&w, &["why", "how"]) && !text.contains(" how many ")
    {
        return None;
    }
    let count = has_phrase(&text, &[" how many ", " number of ", " count "]);
    if let Some(ask) = property_ask(&cx, &w, &text) {
        // "the phone number of the dentist" asks for a value, not a count.
        return Some(Understood { ask, count: false });
    }
    let ask = gtd_ask(&cx, &w, &text, today)
        .or_else(|| tag_ask(&cx, &w, &text))
        .or_else(|| open_tasks_ask(&cx, &w))?;
    Some(Understood { ask, count })
}

/// The GTD questions: waiting, overdue, finished, next actions, due, today, upcoming,
/// projects, open tasks.
fn gtd_ask(cx: &Cx, w: &[String], text: &str, today: Day) -> Option<Ask> {
    let future = has_phrase(
        text,
        &[
            " need to ",
            " should ",
            " have to ",
            " must ",
            " will ",
            " going to ",
        ],
    );
    if has(w, &["waiting", "wait", "blocked", "whom", "delegated"])
        || has_phrase(text, &[" waiting on ", " waiting for ", " held up "])
    {
        return Some(Ask::Waiting);
    }
    if has(w, &["overdue", "late", "missed", "behind", "slipped"])
        || has_phrase(text, &[" past due ", " past deadline "])
    {
        return Some(Ask::Overdue);
    }
    let finished_word = has(
        w,
        &[
            "finished",
            "finish",
            "completed",
            "complete",
            "closed",
            "accomplished",
            "achieved",
            "did",
            "done",
        ],
    );
    if finished_word && !future && !has(w, &["left", "remaining", "still"]) {
        let (since, label) = span(text, today);
        return Some(Ask::Finished { since, label });
    }
    if has_phrase(
        text,
        &[
            " next action",
            " next step",
            " work on next ",
            " do next ",
            " next for ",
            " whats next ",
            " what is next ",
            " next task",
        ],
    ) {
        let project = best_headline(cx, w, |r| is_active_project(r.node()));
        return Some(Ask::NextAction {
            project: project.map(|r| r.node().id.to_string()),
        });
    }
    let due_word = has(
        w,
        &["due", "deadline", "deadlines", "scheduled", "schedule"],
    );
    if due_word && has_phrase(text, &[" when ", " what date ", " which day "]) {
        if let Some(r) = best_headline(cx, w, |_| true) {
            return Some(Ask::Due {
                id: r.node().id.to_string(),
            });
        }
    }
    if has(w, &["today", "tonight"]) || has_phrase(text, &[" this morning ", " agenda "]) {
        return Some(Ask::Today);
    }
    if due_word
        || has(w, &["upcoming", "soon"])
        || has_phrase(text, &[" this week ", " coming up ", " next week "])
    {
        let days = if has_phrase(text, &[" next week ", " two weeks ", " fortnight "]) {
            14
        } else if has(w, &["month"]) {
            31
        } else {
            7
        };
        return Some(Ask::Upcoming { days });
    }
    if has_phrase(
        text,
        &[
            " my projects ",
            " which projects ",
            " what projects ",
            " active projects ",
            " many projects ",
            " list projects ",
            " projects do i ",
            " projects are ",
            " open projects ",
        ],
    ) {
        return Some(Ask::Projects);
    }
    None
}

/// "How many tasks are open?", "my NEXT tasks": the open tasks, with a keyword the notes use.
fn open_tasks_ask(cx: &Cx, w: &[String]) -> Option<Ask> {
    let keyword = w.iter().find_map(|word| {
        let upper = word.to_uppercase();
        cx.files()
            .any(|doc| doc.todo_index.contains_key(upper.as_str()))
            .then_some(upper)
            .filter(|k| k != "DONE" && k != "TODO")
    });
    (keyword.is_some() || has(w, &["task", "tasks", "todo", "todos", "open"]))
        .then_some(Ask::OpenTasks { keyword })
}

/// The day finished tasks are counted from, and the span in words.
fn span(text: &str, today: Day) -> (Day, String) {
    let monday = today.plus(-(today.weekday() as i64));
    if has_phrase(text, &[" yesterday "]) {
        (today.plus(-1), "since yesterday".into())
    } else if has_phrase(text, &[" today "]) {
        (today, "today".into())
    } else if has_phrase(text, &[" this week "]) {
        (monday, format!("this week (since Monday {monday})"))
    } else if has_phrase(text, &[" this month "]) {
        (today.plus(-(day_of_month(today) - 1)), "this month".into())
    } else if has_phrase(text, &[" month ", " 30 days "]) {
        (today.plus(-30), "in the last 30 days".into())
    } else {
        (today.plus(-7), "in the last 7 days".into())
    }
}

fn day_of_month(d: Day) -> i64 {
    d.to_string()
        .get(8..10)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// "What is the EFFORT of the website?", "the plumber's phone": a word that names a
/// property some visible headline has.
fn property_ask(cx: &Cx, w: &[String], text: &str) -> Option<Ask> {
    const NOT_ASKED: &[&str] = &["ID", "CUSTOM_ID", "STYLE", "CATEGORY", "VISIBILITY"];
    let mut keys: Vec<String> = Vec::new();
    for r in cx.headlines() {
        for (k, _) in r.node().content.properties.iter() {
            let k = k.to_uppercase();
            if !NOT_ASKED.contains(&k.as_str()) && !k.starts_with("ARCHIVE") && !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    // The longest key the question names: `WAITING_FOR` before `FOR`.
    keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let key = keys.into_iter().find(|k| {
        let spaced = format!(" {} ", k.to_lowercase().replace('_', " "));
        let plain = format!(" {} ", k.to_lowercase());
        text.contains(&spaced) || text.contains(&plain)
    })?;
    let key_words: Vec<String> = words(&key.replace('_', " "));
    let rest: Vec<String> = w
        .iter()
        .filter(|x| !key_words.contains(x))
        .cloned()
        .collect();
    let subject = best_headline(cx, &rest, |r| r.node().content.property(&key).is_some());
    Some(Ask::Property {
        key,
        id: subject.map(|r| r.node().id.to_string()),
    })
}

/// "What is tagged home?", "my errands": a word that is a tag of the notes.
fn tag_ask(cx: &Cx, w: &[String], text: &str) -> Option<Ask> {
    let mut tags: Vec<String> = Vec::new();
    for doc in cx.files() {
        for t in doc.tag_index.keys() {
            if !tags.iter().any(|x| x.eq_ignore_ascii_case(t)) {
                tags.push(t.to_string());
            }
        }
    }
    let tag = tags.into_iter().find(|t| {
        let t = t.to_lowercase();
        t != "project"
            && t != "archive"
            && w.iter().any(|x| x == &t || stem(x) == stem(&t))
            && (text.contains(" tag") || text.contains(" with ") || w.len() <= 6)
    })?;
    Some(Ask::Tagged { tag })
}

/// The visible headline whose title the question's words name best, among those `keep`
/// accepts: the most title words named (plural or not), then the larger share of its title.
fn best_headline(cx: &Cx, w: &[String], keep: impl Fn(&NodeRef) -> bool) -> Option<NodeRef> {
    let asked: Vec<&str> = w
        .iter()
        .map(|x| stem(x))
        .filter(|x| !STOP.contains(x) && x.len() > 1)
        .collect();
    if asked.is_empty() {
        return None;
    }
    let mut best: Option<(usize, f32, NodeRef)> = None;
    for r in cx.headlines() {
        if archived(&r.doc, r.node()) || !keep(&r) {
            continue;
        }
        let title = words(&r.node().content.title);
        let title: Vec<&str> = title
            .iter()
            .map(|x| stem(x))
            .filter(|x| !STOP.contains(x) && x.len() > 1)
            .collect();
        if title.is_empty() {
            continue;
        }
        let hits = title.iter().filter(|t| asked.contains(t)).count();
        if hits == 0 {
            continue;
        }
        let share = hits as f32 / title.len() as f32;
        if best
            .as_ref()
            .is_none_or(|(h, s, _)| hits > *h || (hits == *h && share > *s))
        {
            best = Some((hits, share, r));
        }
    }
    best.map(|(_, _, r)| r)
}

/// The answer to `u` from what `notes` may show, as of `today`.
pub fn answer(notes: &Notes, u: &Understood, today: Day) -> StoreAnswer {
    let input = ScanInput {
        today,
        file: None,
        inbox: None,
    };
    let cx = Cx::new(notes, &input);
    let live = |r: &NodeRef| !archived(&r.doc, r.node());
    let mut also = Vec::new();
    let (asked, found): (String, Vec<(NodeRef, String)>) = match &u.ask {
        Ask::Waiting => (
            "tasks waiting on someone or something".into(),
            cx.headlines()
                .filter(|r| live(r) && is_waiting(r.node()))
                .map(|r| {
                    let mut d = match who_waits(&r) {
                        Some(who) => format!("waiting for: {who}"),
                        None => "nothing in it says on whom".into(),
                    };
                    if let Some(since) = waiting_since(r.node()) {
                        d.push_str(&format!("; since {since}"));
                    }
                    (r, d)
                })
                .collect(),
        ),
        Ask::Today => {
            let found: Vec<_> = cx
                .headlines()
                .filter(|r| live(r) && r.node().content.todo_type != Some(TodoType::Done))
                .filter_map(|r| {
                    let p = &r.node().content.planning;
                    let d = if planning_day(&p.deadline) == Some(today) {
                        "DEADLINE today"
                    } else if planning_day(&p.scheduled) == Some(today) {
                        "SCHEDULED today"
                    } else {
                        return None;
                    };
                    Some((r, d.to_string()))
                })
                .collect();
            let late = overdue(&cx, today);
            if !late.is_empty() {
                also.push((
                    format!("Overdue, from before today ({}):", late.len()),
                    late.iter().map(|(r, d)| Item::of(r, d)).collect(),
                ));
            }
            (
                format!(
                    "headlines scheduled or due today ({} {today})",
                    today.weekday_name()
                ),
                found,
            )
        }
        Ask::Overdue => (
            format!(
                "open tasks overdue (before {} {today})",
                today.weekday_name()
            ),
            overdue(&cx, today),
        ),
        Ask::Upcoming { days: n } => {
            let last = today.plus(n - 1);
            let mut found: Vec<(Day, NodeRef, String)> = cx
                .headlines()
                .filter(|r| live(r) && is_open(r.node()))
                .filter_map(|r| {
                    let p = &r.node().content.planning;
                    let hit = |ts: &Option<String>, label: &str| {
                        planning_day(ts)
                            .filter(|d| *d >= today && *d <= last)
                            .map(|d| (d, format!("{label} {d} {}", d.weekday_name())))
                    };
                    let (d, detail) =
                        hit(&p.deadline, "DEADLINE").or_else(|| hit(&p.scheduled, "SCHEDULED"))?;
                    Some((d, r, detail))
                })
                .collect();
            found.sort_by_key(|(d, _, _)| *d);
            (
                format!("open tasks due or scheduled from {today} to {last}"),
                found.into_iter().map(|(_, r, d)| (r, d)).collect(),
            )
        }
        Ask::Finished { since, label } => {
            let mut found: Vec<(Day, NodeRef, String)> = cx
                .headlines()
                .filter(|r| r.node().content.todo_type == Some(TodoType::Done))
                .filter_map(|r| {
                    let closed = planning_day(&r.node().content.planning.closed)?;
                    (closed >= *since).then(|| {
                        let d = format!("CLOSED {closed} {}", closed.weekday_name());
                        (closed, r, d)
                    })
                })
                .collect();
            // The latest first, as a look back reads.
            found.sort_by_key(|(d, _, _)| std::cmp::Reverse(*d));
            (
                format!("tasks finished {label}"),
                found.into_iter().map(|(_, r, d)| (r, d)).collect(),
            )
        }
        Ask::NextAction { project } => next_actions(notes, &cx, project.as_deref()),
        Ask::Due { id } => match notes.node(id) {
            Ok(r) => {
                let p = &r.node().content.planning;
                let mut d = Vec::new();
                for (label, ts) in [("DEADLINE", &p.deadline), ("SCHEDULED", &p.scheduled)] {
                    if let Some(day) = planning_day(ts) {
                        d.push(format!(
                            "{label} {day} {}, {}",
                            day.weekday_name(),
                            when(day, today)
                        ));
                    }
                }
                let title = r.node().content.title.to_string();
                if d.is_empty() {
                    also.push((
                        format!("\"{title}\" has no deadline and no schedule."),
                        vec![],
                    ));
                    (format!("dates of \"{title}\""), Vec::new())
                } else {
                    (format!("dates of \"{title}\""), vec![(r, d.join("; "))])
                }
            }
            Err(_) => ("dates of that headline".into(), Vec::new()),
        },
        Ask::Property { key, id } => {
            let found: Vec<_> = cx
                .headlines()
                .filter(|r| id.as_deref().is_none_or(|id| *r.node().id == *id))
                .filter_map(|r| {
                    let v = r.node().content.property(key)?.trim().to_string();
                    Some((
                        r,
                        format!("{key}: {}", if v.is_empty() { "(empty)" } else { &v }),
                    ))
                })
                .collect();
            (format!("headlines with the property {key}"), found)
        }
        Ask::Tagged { tag } => {
            let mut found: Vec<(NodeRef, String)> = cx
                .headlines()
                .filter(|r| live(r) && r.node().has_tag(tag))
                .map(|r| (r, String::new()))
                .collect();
            // Open tasks first, then the rest, each in the notes' order.
            found.sort_by_key(|(r, _)| !is_open(r.node()));
            (format!("headlines tagged :{tag}:"), found)
        }
        Ask::Projects => (
            "active projects".into(),
            cx.headlines()
                .filter(|r| live(r) && is_active_project(r.node()))
                .map(|r| (r, String::new()))
                .collect(),
        ),
        Ask::OpenTasks { keyword } => (
            match keyword {
                Some(k) => format!("open {k} tasks"),
                None => "open tasks".into(),
            },
            cx.headlines()
                .filter(|r| live(r) && is_open(r.node()))
                .filter(|r| {
                    keyword
                        .as_deref()
                        .is_none_or(|k| r.node().content.todo.as_deref() == Some(k))
                })
                .map(|r| (r, String::new()))
                .collect(),
        ),
    };
    notes.note_reads(found.iter().map(|(r, _)| r));
    StoreAnswer {
        asked,
        items: found.iter().map(|(r, d)| Item::of(r, d)).collect(),
        also,
        count: u.count,
    }
}

/// Open tasks whose deadline or schedule (not a habit's) is before `today`.
fn overdue(cx: &Cx, today: Day) -> Vec<(NodeRef, String)> {
    cx.headlines()
        .filter(|r| !archived(&r.doc, r.node()))
        .filter_map(|r| briefing::overdue(r.node(), today).map(|late| (r, late)))
        .collect()
}

/// The next actions under `project` (an id), or under every active project: the open tasks
/// below it that are not parked and not projects, NEXT ones first.
fn next_actions(notes: &Notes, cx: &Cx, project: Option<&str>) -> (String, Vec<(NodeRef, String)>) {
    let projects: Vec<NodeRef> = match project.map(|id| notes.node(id)) {
        Some(Ok(r)) => vec![r],
        Some(Err(_)) => Vec::new(),
        None => cx
            .headlines()
            .filter(|r| !archived(&r.doc, r.node()) && is_active_project(r.node()))
            .collect(),
    };
    let mut found = Vec::new();
    for p in &projects {
        let end = crate::store::node::subtree_end(&p.doc.nodes, p.index);
        let mut below: Vec<NodeRef> = (p.index + 1..end)
            .map(|index| NodeRef {
                doc: p.doc.clone(),
                index,
            })
            .filter(|r| cx.shows(r) && is_next_action(r.node()))
            .collect();
        // NEXT first, then by priority as Org sorts it, then in the notes' order.
        below.sort_by_key(|r| {
            let c = &r.node().content;
            (c.todo.as_deref() != Some("NEXT"), c.priority.unwrap_or('B'))
        });
        let detail = if projects.len() > 1 {
            format!("in the project \"{}\"", p.node().content.title)
        } else {
            String::new()
        };
        found.extend(below.into_iter().take(3).map(|r| (r, detail.clone())));
    }
    let asked = match projects.as_slice() {
        [one] if project.is_some() => {
            format!(
                "next actions of the project \"{}\"",
                one.node().content.title
            )
        }
        _ => "next actions of the active projects".into(),
    };
    (asked, found)
}

/// Whom or what the waiting task waits for: a property naming someone, else the first line
/// of its notes that says something (not a drawer, clock line or bare log entry).
fn who_waits(r: &NodeRef) -> Option<String> {
    let c = &r.node().content;
    for (k, v) in c.properties.iter() {
        if names_someone(k) && !v.trim().is_empty() {
            return Some(v.trim().to_string());
        }
    }
    let body = c.body_or_notice();
    let mut in_drawer = false;
    for l in body.lines().map(str::trim) {
        if l.starts_with(':') && l.ends_with(':') && !l.contains(' ') {
            in_drawer = !l.eq_ignore_ascii_case(":END:");
            continue;
        }
        if in_drawer || l.is_empty() || l.starts_with("CLOCK:") || l.starts_with('#') {
            continue;
        }
        if ["SCHEDULED:", "DEADLINE:", "CLOSED:"]
            .iter()
            .any(|p| l.starts_with(p))
        {
            continue;
        }
        let entry = l.strip_prefix("- ").unwrap_or(l);
        if entry.starts_with("State \"") && !entry.ends_with("\\\\") {
            continue;
        }
        let said = entry.trim_end_matches("\\\\").trim();
        if !said.is_empty() {
            return Some(shortened(said, 120));
        }
    }
    None
}

fn shortened(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// "in 3 days", "today", "2 days ago".
fn when(day: Day, today: Day) -> String {
    match day.0 - today.0 {
        0 => "today".into(),
        n if n > 0 => format!("in {}", days(n)),
        n => format!("{} ago", days(-n)),
    }
}

/// A headline's keyword, title and tags as Org writes them.
fn headline(r: &NodeRef) -> String {
    let c = &r.node().content;
    let mut out = String::new();
    if let Some(k) = &c.todo {
        out.push_str(k);
        out.push(' ');
    }
    out.push_str(&c.title);
    if c.kind == NodeKind::Headline && !c.tags.is_empty() {
        out.push_str(&format!(" :{}:", c.tags.join(":")));
    }
    out
}

#[cfg(test)]
mod tests;
