//! What the LLM is shown of the notes at each step, besides tool results ("peripheral
//! vision"), rendered as Org from the store as it is at that step (so an edit the agent just
//! made shows in its next request):
//!
//! 1. the foveal node — the node the user was on — in full: outline path, planning,
//!    properties, body and one line per child;
//! 2. notes related to it by meaning (when the caller found some), with their bodies;
//! 3. the active projects' skeleton (each project and its children: depth ≤ 2);
//! 4. tasks completed recently.
//!
//! Everything goes through [`Notes`], so private subtrees never appear. A token budget is
//! filled in that order of priority, one whole item at a time: nothing is cut mid-node, and
//! the foveal node is always shown (even alone over the budget: without it the request
//! makes no sense).
//!
//! In a request the notes are [spotlighted](spotlight): each node or section stands in a
//! marked block ([`assemble_marked`]), which says where the text comes from, and the
//! untrusted nodes shown are listed for the gates.

pub mod added;
pub mod spotlight;

use crate::llm::estimate_tokens;
use crate::notes::{brief, summary, Notes};
use crate::store::{NodeKind, NodeRef, Query, TodoType};
use spotlight::{Source, Spotlight};

/// Most active projects listed (before the budget has its say).
const MAX_PROJECTS: usize = 30;
/// Most children shown under one project.
const MAX_PROJECT_CHILDREN: usize = 8;
/// Most recently completed tasks listed.
const MAX_RECENT_DONE: usize = 15;
/// Most open tasks listed as scheduled or due soon.
const MAX_DUE: usize = 20;
/// Longest body of a related note, in characters.
const MAX_RELATED_BODY: usize = 1_500;

/// What to put in the context and how much of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSpec<'a> {
    /// The foveal node's id.
    pub focus: Option<&'a str>,
    /// Whether the focus is the node the user was on (else the node the last tool was
    /// about), which its heading says.
    pub focus_is_users: bool,
    /// Nodes related by meaning, best first, with their similarity (already above the
    /// caller's threshold).
    pub related: &'a [(String, f32)],
    /// Tasks closed on or after this date (YYYY-MM-DD) are listed as recently completed.
    pub done_since: Option<&'a str>,
    /// Today's date as the user's calendar has it ("2026-11-23 Mon"): relative questions
    /// ("what is due this week?") need it, and no model knows it.
    pub today: Option<&'a str>,
    /// Open tasks scheduled or due before this date (overdue ones too) are shown.
    pub due_before: Option<&'a str>,
    /// The most tokens the context may take (estimated, see [`estimate_tokens`]).
    pub budget_tokens: usize,
    /// Lines without ids and paths ([`brief`]): for a model offered no tools, which cannot
    /// use an id and has few tokens to spend.
    pub brief: bool,
}

impl Default for ContextSpec<'_> {
    fn default() -> Self {
        ContextSpec {
            focus: None,
            focus_is_users: true,
            related: &[],
            done_since: None,
            today: None,
            due_before: None,
            budget_tokens: DEFAULT_BUDGET_TOKENS,
            brief: false,
        }
    }
}

/// The context budget when a backend says nothing of its model: a quarter of an 8k window
/// would starve the notes, a quarter of 32k is a fair share.
pub const DEFAULT_BUDGET_TOKENS: usize = 8_000;

/// The context section of the system prompt with the default budget and nothing related;
/// empty when there is nothing to show.
pub fn render(notes: &Notes, focus: Option<&str>) -> String {
    assemble(
        notes,
        &ContextSpec {
            focus,
            ..ContextSpec::default()
        },
    )
}

/// One item of a section: its text and the untrusted nodes it shows (provenance lines).
struct Item {
    text: String,
    untrusted: Vec<String>,
}

impl Item {
    fn of(notes: &Notes, text: String, refs: &[&NodeRef]) -> Item {
        Item {
            text,
            untrusted: refs.iter().filter_map(|r| notes.untrusted(r)).collect(),
        }
    }
}

/// The context section of a request: the text, its notes in marked blocks, and where the
/// untrusted nodes it shows come from.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Assembled {
    pub text: String,
    pub untrusted: Vec<String>,
}

/// Fills text section by section while the budget lasts.
struct Filler<'s> {
    out: String,
    budget: usize,
    used: usize,
    /// Marks the notes' text as data, when it goes to a model.
    spot: Option<&'s Spotlight>,
    untrusted: Vec<String>,
}

impl Filler<'_> {
    /// Adds `text` if it fits; returns whether it did.
    fn add(&mut self, text: &str) -> bool {
        let cost = estimate_tokens(text);
        if self.used + cost > self.budget {
            return false;
        }
        self.used += cost;
        self.out.push_str(text);
        true
    }

    /// Adds `text` whatever the budget says.
    fn force(&mut self, text: &str) {
        self.used += estimate_tokens(text);
        self.out.push_str(text);
    }

    /// `text` from `source` as the model is to see it: in a block when spotlighting.
    fn block(&self, source: Source, text: &str) -> String {
        match self.spot {
            Some(spot) => spot.wrap(source, text),
            None => text.to_owned(),
        }
    }

    fn shown(&mut self, item: &Item) {
        for line in &item.untrusted {
            if !self.untrusted.contains(line) {
                self.untrusted.push(line.clone());
            }
        }
    }

    /// A section: its heading and as many items as fit, whole; the heading only if at least
    /// one item fits. When spotlighting, the items stand in one block from `source`, or
    /// each in its own (`None`: the items are blocks already). Returns how many items were
    /// left out.
    fn section(&mut self, heading: &str, source: Option<Source>, items: &[Item]) -> usize {
        let mark = (self.out.len(), self.used);
        let (open, close) = match (self.spot, source) {
            (Some(spot), Some(source)) => {
                let open = spot.open(source);
                (open, spot.close())
            }
            _ => (String::new(), String::new()),
        };
        let close_cost = estimate_tokens(&close);
        if items.is_empty() || !self.add(&format!("{heading}{open}")) {
            return items.len();
        }
        // The block's end is paid for before its items: it is always written.
        self.used += close_cost;
        let mut shown = 0;
        for item in items {
            // Items are tried in priority order; a big one may not fit where a smaller later
            // one does, but skipping ahead would reorder priorities, so stop at the first miss.
            let text = match self.spot {
                Some(spot) if source.is_some() => spot.neutral(&item.text).into_owned(),
                _ => item.text.clone(),
            };
            if !self.add(&text) {
                break;
            }
            self.shown(item);
            shown += 1;
        }
        if shown == 0 {
            self.out.truncate(mark.0);
            self.used = mark.1;
        } else {
            self.out.push_str(&close);
        }
        items.len() - shown
    }
}

/// The context section of the system prompt for `spec`; empty when there is nothing to show.
pub fn assemble(notes: &Notes, spec: &ContextSpec) -> String {
    fill(notes, spec, None).text
}

/// The context section of a request for `spec`, its notes in `spot`'s marked blocks, with
/// the untrusted nodes it shows.
pub fn assemble_marked(notes: &Notes, spec: &ContextSpec, spot: &Spotlight) -> Assembled {
    fill(notes, spec, Some(spot))
}

fn fill(notes: &Notes, spec: &ContextSpec, spot: Option<&Spotlight>) -> Assembled {
    let mut f = Filler {
        out: String::new(),
        budget: spec.budget_tokens,
        used: 0,
        spot,
        untrusted: Vec::new(),
    };
    if let Some(today) = spec.today {
        f.force(&format!("* Today is {today}\n"));
    }
    let focus = spec.focus.and_then(|id| notes.node(id).ok());
    if let Some(r) = &focus {
        let mut text = String::from(if spec.focus_is_users {
            "* The node the user is on\n"
        } else {
            "* The node in focus (the last tool was about it)\n"
        });
        let mut node = notes.render(r);
        if !node.ends_with('\n') {
            node.push('\n');
        }
        text.push_str(&f.block(Source::Notes(&r.doc.path), &node));
        // Always shown: it is what the user asked about.
        f.force(&text);
        let children = notes.children(r);
        let shown: Vec<&NodeRef> = std::iter::once(r).chain(&children).collect();
        f.shown(&Item::of(notes, String::new(), &shown));
    }
    let focus_id = focus.as_ref().map(|r| r.node().id.clone());

    let related: Vec<Item> = spec
        .related
        .iter()
        .filter(|(id, _)| focus_id.as_deref() != Some(id.as_str()))
        .filter_map(|(id, score)| notes.node(id).ok().map(|r| (r, *score)))
        .map(|(r, score)| {
            let text = f.block(Source::Notes(&r.doc.path), &related_item(spec, &r, score));
            Item::of(notes, text, &[&r])
        })
        .collect();
    f.section("* Related notes (by meaning)\n", None, &related);

    let listing = Some(Source::Notes("notes"));
    if let Some(before) = spec.due_before {
        let items: Vec<Item> = due_soon(notes, before)
            .iter()
            .map(|r| Item::of(notes, format!("{}\n", line(spec, r)), &[r]))
            .collect();
        f.section(
            &format!("* Open tasks scheduled or due before {before}, earliest first\n"),
            listing,
            &items,
        );
    }

    let projects = notes.query(&Query {
        kind: Some(NodeKind::Headline),
        projects: true,
        ..Query::default()
    });
    let total_projects = projects.len();
    let items: Vec<Item> = projects
        .iter()
        .take(MAX_PROJECTS)
        .map(|p| project_item(notes, spec, p))
        .collect();
    let left = f.section(
        &format!("* Active projects ({total_projects})\n"),
        listing,
        &items,
    ) + total_projects.saturating_sub(MAX_PROJECTS);
    if left > 0 && left < total_projects {
        f.add(&format!(
            "- … {left} more projects (query_notes with projects: true)\n"
        ));
    }

    if let Some(since) = spec.done_since {
        let mut done = notes.query(&Query {
            kind: Some(NodeKind::Headline),
            closed_since: Some(since.to_owned()),
            ..Query::default()
        });
        // Most recent first: CLOSED timestamps sort as text.
        done.sort_by(|a, b| {
            b.node()
                .content
                .planning
                .closed
                .cmp(&a.node().content.planning.closed)
        });
        let items: Vec<Item> = done
            .iter()
            .take(MAX_RECENT_DONE)
            .map(|r| Item::of(notes, format!("{}\n", line(spec, r)), &[r]))
            .collect();
        f.section("* Recently completed\n", listing, &items);
    }
    Assembled {
        text: f.out,
        untrusted: f.untrusted,
    }
}

/// The first `MAX_DUE` open tasks scheduled or with a deadline before `before` (overdue ones
/// included), by their earliest such date, then title. One pass over the open tasks; only
/// the ones shown are sorted.
fn due_soon(notes: &Notes, before: &str) -> Vec<NodeRef> {
    /// The `YYYY-MM-DD` of a timestamp, as bytes (no allocation per task).
    fn day(ts: &Option<String>) -> Option<[u8; 10]> {
        let t = ts.as_deref()?.trim_start_matches(['<', '[']);
        t.as_bytes().get(..10)?.try_into().ok()
    }
    let bound: [u8; 10] = match before.as_bytes().get(..10).and_then(|b| b.try_into().ok()) {
        Some(b) => b,
        None => return Vec::new(),
    };
    let open_tasks = Query {
        kind: Some(NodeKind::Headline),
        todo_type: Some(TodoType::Todo),
        ..Query::default()
    };
    let mut due = notes.query_picking(&open_tasks, |r| {
        let p = &r.node().content.planning;
        [day(&p.scheduled), day(&p.deadline)]
            .into_iter()
            .flatten()
            .filter(|d| *d < bound)
            .min()
    });
    let order = |(a, x): &([u8; 10], NodeRef), (b, y): &([u8; 10], NodeRef)| {
        a.cmp(b)
            .then_with(|| x.node().content.title.cmp(&y.node().content.title))
    };
    if due.len() > MAX_DUE {
        due.select_nth_unstable_by(MAX_DUE, order);
        due.truncate(MAX_DUE);
    }
    due.sort_by(order);
    due.into_iter().map(|(_, r)| r).collect()
}

/// A node's line as `spec` wants it.
fn line(spec: &ContextSpec, r: &NodeRef) -> String {
    if spec.brief {
        brief(r)
    } else {
        summary(r)
    }
}

fn project_item(notes: &Notes, spec: &ContextSpec, p: &NodeRef) -> Item {
    let mut text = line(spec, p);
    text.push('\n');
    let children = notes.children(p);
    for c in children.iter().take(MAX_PROJECT_CHILDREN) {
        text.push_str("  ");
        text.push_str(&line(spec, c));
        text.push('\n');
    }
    if children.len() > MAX_PROJECT_CHILDREN {
        text.push_str(&format!(
            "  - … {} more\n",
            children.len() - MAX_PROJECT_CHILDREN
        ));
    }
    let shown: Vec<&NodeRef> = std::iter::once(p)
        .chain(children.iter().take(MAX_PROJECT_CHILDREN))
        .collect();
    Item::of(notes, text, &shown)
}

fn related_item(spec: &ContextSpec, r: &NodeRef, score: f32) -> String {
    let mut text = line(spec, r);
    text.push_str(&format!(" (similarity {score:.2})\n"));
    let body = r.node().content.body_or_notice();
    let body = body.trim();
    if !body.is_empty() {
        let cut: String = body.chars().take(MAX_RELATED_BODY).collect();
        for line in cut.lines() {
            text.push_str("  ");
            text.push_str(line);
            text.push('\n');
        }
        if body.chars().count() > MAX_RELATED_BODY {
            text.push_str("  […]\n");
        }
    }
    text
}
