//! The gtd-integrity skill's scan, and the GTD notions the review and briefing scans share:
//! what an open task, an active project, a next action and a waiting task are.
//!
//! - `done-over-open-children`: a DONE-type headline with open tasks below it, as
//!   `org-enforce-todo-dependencies` forbids. Org blocks on every open descendant; the scan
//!   reports a violation once, at the nearest done headline above the open task (a plain
//!   headline between them is looked through, a TODO-keyword one is not), and honours the
//!   `:NOBLOCKING: t` property Org honours.
//! - `project-without-next-action`: an active project (own tag `project`, not done, as
//!   `Query.projects` has it) with no next action: no open task anywhere below it whose
//!   keyword is not a waiting one and which is not a project itself (Org's stuck projects,
//!   `org-stuck-projects`). A project that is itself WAITING/HOLD/SOMEDAY is parked, not
//!   reported.
//! - `waiting-without-note`: a WAITING (or WAIT) task that does not say who or what it waits
//!   for: no text in its body but drawer lines, clock lines, bare timestamps and log lines
//!   without a note (`- State "WAITING" from "TODO" [date]` with no `\\`), and no property
//!   naming someone (`WAITING_FOR`, `DELEGATED_TO`, `WHO`, `ASSIGNEE`…). A `- Note taken on`
//!   entry or a state change logged with a note (`\\` at its end) counts as saying it.
//!
//! Archived headlines (`ARCHIVE` tag, `.org_archive` files) are left out.
//!
//! Every pass visits the headlines with a TODO keyword or a `project` tag, found in each
//! file's indexes, in document order; it allocates per file and for what it reports. A
//! subtree is the run of nodes after its headline whose text starts inside it.

use super::{Cx, Finding};
use crate::store::{FileDoc, Node, NodeKind, TodoType};
use std::sync::Arc;

/// The kinds in the order a headline's findings are listed.
const KINDS: [&str; 3] = [
    "done-over-open-children",
    "waiting-without-note",
    "project-without-next-action",
];

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let mut out = Vec::new();
    for doc in cx.files() {
        let start = out.len();
        each_task(doc, |i, n, actions| {
            match n.content.todo_type {
                Some(TodoType::Done) => done_over_open(cx, doc, i, &mut out),
                Some(TodoType::Todo) if is_waiting(n) && !says_who(n) => {
                    let r = Cx::at(doc, i as u32);
                    if cx.shows(&r) {
                        out.push(Finding {
                            kind: "waiting-without-note",
                            node: r,
                            detail: format!(
                                "{} but nothing in it says who or what it waits for",
                                keyword(n)
                            ),
                            fix: Some(
                                "add_note with who or what it waits for, and since when".into(),
                            ),
                        });
                    }
                }
                _ => {}
            }
            if is_active_project(n) && !actions.below(i) {
                let r = Cx::at(doc, i as u32);
                if cx.shows(&r) {
                    out.push(Finding {
                        kind: "project-without-next-action",
                        node: r,
                        detail: "an active project with no open task below it that is not \
                                 waiting: nothing moves it forward"
                            .into(),
                        fix: Some(
                            "add_headline a next action under it (todo NEXT or TODO), or close \
                             the project if it is finished"
                                .into(),
                        ),
                    });
                }
            }
        });
        in_order(&mut out[start..], &KINDS);
    }
    out
}

/// Each task headline of `doc` outside archived trees, last to first, with what
/// [`NextActions`] knows at that point: a project's tasks are all seen before it is, so
/// `actions.below(i)` is final when `i` comes.
pub(super) fn each_task(doc: &FileDoc, mut f: impl FnMut(usize, &Node, &NextActions)) {
    let mut actions = NextActions::of(doc);
    for &i in tasks(doc).iter().rev() {
        let i = i as usize;
        let n = &doc.nodes[i];
        actions.visit(doc, i);
        // Archived trees are done with, as the agenda has it.
        if n.content.kind != NodeKind::Headline || archived(doc, n) {
            continue;
        }
        f(i, n, &actions);
    }
}

/// A file's findings in document order, each headline's in the order of `kinds`.
pub(super) fn in_order(findings: &mut [Finding], kinds: &[&str]) {
    findings.sort_by_key(|f| {
        (
            f.node.index,
            kinds
                .iter()
                .position(|k| *k == f.kind)
                .unwrap_or(kinds.len()),
        )
    });
}

/// `done-over-open-children` for the done headline `i`, when it has open tasks below.
fn done_over_open(cx: &Cx, doc: &Arc<FileDoc>, i: usize, out: &mut Vec<Finding>) {
    let n = &doc.nodes[i];
    if n.content
        .property("NOBLOCKING")
        .is_some_and(|v| v.trim() == "t")
    {
        return;
    }
    let mut open = 0usize;
    let mut first: Option<usize> = None;
    let end = doc.subtree_end(i as u32) as usize;
    let mut k = i + 1;
    while k < end {
        let c = &doc.nodes[k];
        match c.content.todo_type {
            None => k += 1,
            Some(t) => {
                // Only the open tasks the model may see are counted: a private one is
                // neither named nor hinted at.
                if t == TodoType::Todo && cx.shows(&Cx::at(doc, k as u32)) {
                    open += 1;
                    first.get_or_insert(k);
                }
                // Below a task, it is that task's own business (reported at it).
                k = doc.subtree_end(k as u32) as usize;
            }
        }
    }
    let Some(first) = first else {
        return;
    };
    let r = Cx::at(doc, i as u32);
    if !cx.shows(&r) {
        return;
    }
    let f = &doc.nodes[first].content;
    out.push(Finding {
        kind: "done-over-open-children",
        node: r,
        detail: format!(
            "{} while {open} task{} below {} still open (first: {} \"{}\"), which \
             org-enforce-todo-dependencies forbids",
            keyword(n),
            if open == 1 { "" } else { "s" },
            if open == 1 { "is" } else { "are" },
            f.todo.as_deref().unwrap_or(""),
            f.title
        ),
        fix: Some(
            "close or cancel the open tasks (set_todo), or reopen this one with set_todo TODO"
                .into(),
        ),
    });
}

/// The keyword of `n`, for the findings' words.
fn keyword(n: &Node) -> &str {
    n.content.todo.as_deref().unwrap_or("")
}

/// Keywords of a task that waits on someone or something else.
const WAITING: [&str; 2] = ["WAITING", "WAIT"];
/// Keywords of open tasks that are not next actions: waiting, on hold, some day.
const PARKED: [&str; 6] = ["WAITING", "WAIT", "HOLD", "SOMEDAY", "MAYBE", "DEFERRED"];

/// An open task (a TODO-type keyword of its file).
pub(super) fn is_open(n: &Node) -> bool {
    n.content.todo_type == Some(TodoType::Todo)
}

/// An open task waiting on someone else.
pub(super) fn is_waiting(n: &Node) -> bool {
    is_open(n)
        && n.content
            .todo
            .as_deref()
            .is_some_and(|k| WAITING.contains(&k))
}

/// A project in play: own tag `project`, not done (as `Query.projects`), and not parked
/// (waiting, on hold, some day).
pub(super) fn is_active_project(n: &Node) -> bool {
    n.content.kind == NodeKind::Headline
        && n.content.has_tag("project")
        && n.content.todo_type != Some(TodoType::Done)
        && !n
            .content
            .todo
            .as_deref()
            .is_some_and(|k| PARKED.contains(&k))
}

/// Archived: in an `.org_archive` file or under the `ARCHIVE` tag, which the agenda skips.
pub(super) fn archived(doc: &FileDoc, n: &Node) -> bool {
    doc.path.ends_with("_archive") || n.has_tag("ARCHIVE")
}

/// A next action: an open task, not parked, not a project itself, not archived.
pub(super) fn is_next_action(n: &Node) -> bool {
    is_open(n)
        && !n
            .content
            .todo
            .as_deref()
            .is_some_and(|k| PARKED.contains(&k))
        && !n.content.has_tag("project")
        && !n.has_tag("ARCHIVE")
}

/// The headlines of `doc` with a TODO keyword or the `project` tag, in document order: all
/// the GTD scans look at, from the file's indexes, so the many headlines that are neither
/// are never touched.
pub(super) fn tasks(doc: &FileDoc) -> Vec<u32> {
    let mut v: Vec<u32> = doc.todo_index.values().flatten().copied().collect();
    if let Some(p) = doc.tag_index.get("project") {
        v.extend(p);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether a next action is below each headline of a file, learnt as its [`tasks`] are
/// visited last to first: a headline's descendants come after it, so they are all visited
/// before it is asked about. Each action marks its ancestors up to the first one already
/// marked, so nested projects cost no more than flat ones. Private actions count too:
/// saying a project has none would be wrong, and saying nothing tells nothing.
pub(super) struct NextActions(Vec<bool>);

impl NextActions {
    /// Empty for a file with no project: nothing will ask.
    pub(super) fn of(doc: &FileDoc) -> NextActions {
        NextActions(if doc.tag_index.contains_key("project") {
            vec![false; doc.nodes.len()]
        } else {
            Vec::new()
        })
    }

    /// Visit task `k`: when it is a next action, its ancestors have one below them.
    pub(super) fn visit(&mut self, doc: &FileDoc, k: usize) {
        if self.0.is_empty() || !is_next_action(&doc.nodes[k]) {
            return;
        }
        let mut up = doc.nodes[k].parent();
        while let Some(p) = up {
            match self.0.get_mut(p as usize) {
                Some(mark) if !*mark => *mark = true,
                _ => break,
            }
            up = doc.nodes[p as usize].parent();
        }
    }

    /// Whether a next action is below headline `i`, once every task after it was visited.
    pub(super) fn below(&self, i: usize) -> bool {
        self.0.get(i).copied().unwrap_or(false)
    }
}

/// Property keys that name whom a task waits for.
pub(super) fn names_someone(key: &str) -> bool {
    let k = key.to_ascii_uppercase();
    k.contains("WAIT") || k.contains("DELEGAT") || matches!(k.as_str(), "WHO" | "ASSIGNEE")
}

/// Whether the waiting task `n` says who or what it waits for (the module's rule).
pub(super) fn says_who(n: &Node) -> bool {
    let c = &n.content;
    if c.properties
        .iter()
        .any(|(k, v)| names_someone(k) && !v.trim().is_empty())
    {
        return true;
    }
    c.body_or_notice().lines().any(|line| {
        let l = line.trim();
        if l.is_empty() || l.starts_with("CLOCK:") {
            return false;
        }
        // A drawer's delimiter (`:LOGBOOK:`, `:END:`).
        if l.len() > 2 && l.starts_with(':') && l.ends_with(':') && !l.contains(' ') {
            return false;
        }
        // A lone timestamp says when, not who.
        if (l.starts_with('<') && l.ends_with('>') || l.starts_with('[') && l.ends_with(']'))
            && l.len() <= 40
        {
            return false;
        }
        // Org writes `- State …`; older notes have `-  State …`.
        if let Some(entry) = l.strip_prefix("- ").map(str::trim_start) {
            if entry.starts_with("Note taken on") {
                return true;
            }
            // A logged change is a note only when Org took one (`\\` ends its line; the
            // note's text follows and counts by itself).
            if LOG_ENTRIES.iter().any(|p| entry.starts_with(p)) {
                return l.ends_with("\\\\");
            }
        }
        true
    })
}

/// How Org's log entries start (`org-log-note-headings`), but the note's own.
const LOG_ENTRIES: [&str; 7] = [
    "State \"",
    "CLOSING NOTE",
    "Rescheduled from",
    "Not scheduled, was",
    "New deadline from",
    "Removed deadline, was",
    "Refiled on",
];

#[cfg(test)]
pub(super) mod tests {
    use super::super::{run, Day, Scan, ScanInput};
    use crate::notes::Privacy;

    pub(crate) use crate::notes::scans::test_notes as notes;

    pub fn input(today: &str) -> ScanInput {
        ScanInput {
            today: Day::parse(today).unwrap(),
            file: None,
            inbox: None,
        }
    }

    const KW: &str = "#+TODO: TODO NEXT WAITING HOLD | DONE CANCELLED\n";

    #[test]
    fn done_over_open_children_is_reported_once_at_the_nearest_done() {
        let text = format!(
            "{KW}* DONE Launch\n** Notes\n*** TODO Write the press release\n\
             ** DONE Site\n*** NEXT Fix the footer\n\
             * DONE Tidy\n:PROPERTIES:\n:NOBLOCKING: t\n:END:\n** TODO Later\n\
             * DONE All done\n** DONE Part\n** Plain\n\
             * DONE Archived :ARCHIVE:\n** TODO Left\n\
             * CANCELLED Trip\n** WAITING Visa\n:LOGBOOK:\n- Note taken on [2026-11-01 Sun] \\\\\n  embassy\n:END:\n"
        );
        let n = notes(&[("/n/a.org", &text)], Privacy::default());
        let report = run(&n, Scan::GtdIntegrity, &input("2026-11-24")).unwrap();
        assert_eq!(report.counts(), vec![("done-over-open-children", 3)]);
        let titles: Vec<&str> = report
            .findings
            .iter()
            .map(|f| &*f.node.node().content.title)
            .collect();
        assert_eq!(titles, ["Launch", "Site", "Trip"]);
        assert!(report.findings[0]
            .detail
            .contains("1 task below is still open"));
    }

    #[test]
    fn projects_need_a_next_action_and_waiting_needs_a_note() {
        let text = format!(
            "{KW}* Garden :project:\n** WAITING Seeds\n:PROPERTIES:\n:WAITING_FOR: the shop\n:END:\n\
             * NEXT House :project:\n** Rooms\n*** NEXT Paint the hall\n\
             * TODO Book :project:\n** DONE Outline\n** TODO Chapter one :ARCHIVE:\n\
             * HOLD Boat :project:\n\
             * DONE Old :project:\n\
             * WAITING Invoice\n:LOGBOOK:\n- State \"WAITING\"    from \"TODO\"   [2026-11-02 Mon 10:00]\n:END:\n\
             * WAITING Reply\n:LOGBOOK:\n- State \"WAITING\"    from \"TODO\"   [2026-11-02 Mon 10:00] \\\\\n  Bob, about the lease\n:END:\n\
             * WAITING Parcel\nThe courier, tracking 42.\n"
        );
        let n = notes(&[("/n/a.org", &text)], Privacy::default());
        let report = run(&n, Scan::GtdIntegrity, &input("2026-11-24")).unwrap();
        assert_eq!(
            report.counts(),
            vec![
                ("project-without-next-action", 2),
                ("waiting-without-note", 1)
            ],
            "{}",
            report.text(20)
        );
        let titles: Vec<&str> = report
            .findings
            .iter()
            .map(|f| &*f.node.node().content.title)
            .collect();
        assert_eq!(titles, ["Garden", "Book", "Invoice"]);
    }

    #[test]
    fn nested_projects_share_their_next_actions_but_are_none() {
        let text = format!(
            "{KW}* Outer :project:\n** Inner :project:\n*** Notes\n**** NEXT Act\n\
             * Alone :project:\n** TODO Sub :project:\n*** DONE Old\n"
        );
        let n = notes(&[("/n/a.org", &text)], Privacy::default());
        let report = run(&n, Scan::GtdIntegrity, &input("2026-11-24")).unwrap();
        let titles: Vec<&str> = report
            .findings
            .iter()
            .map(|f| &*f.node.node().content.title)
            .collect();
        assert_eq!(titles, ["Alone", "Sub"], "{}", report.text(10));
    }

    #[test]
    fn a_keyword_the_file_does_not_define_is_no_task() {
        // DONE is not among this file's keywords: "DONE Launch" is a title, not a done task.
        let text = "#+TODO: TODO | FINISHED\n* DONE Launch\n** TODO Write\n";
        let n = notes(&[("/n/a.org", text)], Privacy::default());
        let report = run(&n, Scan::GtdIntegrity, &input("2026-11-24")).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }

    #[test]
    fn private_notes_are_neither_reported_nor_hinted_at() {
        let privacy = Privacy::new(["private".to_string()], []);
        let text = format!(
            "{KW}* DONE Public\n** TODO Secret step :private:\n\
             * Diary :project:private:\n\
             * WAITING Hidden :private:\n\
             * Plan :project:\n** NEXT Private next :private:\n"
        );
        let n = notes(&[("/n/a.org", &text)], privacy);
        let report = run(&n, Scan::GtdIntegrity, &input("2026-11-24")).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }
}
