//! The weekly-review skill's scan: what a GTD weekly review goes through, as of
//! `cx.input.today`.
//!
//! - `stuck-project`: an active project with no next action (Org's stuck projects; the rule
//!   of the gtd-integrity scan, [`super::gtd::NextActions`]).
//! - `stale-waiting`: a WAITING (or WAIT) task waiting for more than [`STALE_DAYS`] days.
//!   It has waited since the date of its last `- State "WAITING"` log entry, or, with none,
//!   the latest inactive timestamp in its body (a `- Note taken on [..]` entry, "asked on
//!   [..]"). A task with neither has no known start and is not reported (the briefing lists
//!   every waiting task).
//! - `overdue-deadline`: an open task whose DEADLINE is before today.
//! - `scheduled-in-the-past`: an open task SCHEDULED before today whose deadline is not
//!   already overdue. Repeaters count: Org moves a repeating task's date only when it is
//!   done, so one still on a past date was missed. Habits (`:STYLE: habit`) do not: the
//!   habit graph tracks them.
//! - `done-without-closed`: a DONE-type headline without a CLOSED date, in a file where some
//!   done headline has one (the file logs closing, `org-log-done`; in one that never does,
//!   every done task would be reported and none of it would be news).
//! - `project-closed-this-week`: a project (own tag `project`) closed within the seven days
//!   up to today.
//!
//! Archived headlines (`ARCHIVE` tag, `.org_archive` files) are left out, as the agenda
//! leaves them out. One pass over the headlines with a keyword or a `project` tag (the
//! files' indexes); allocation per file and for findings.

use super::gtd::{each_task, in_order, is_active_project, is_open, is_waiting};
use super::{days, Cx, Day, Finding};
use crate::store::{FileDoc, Node, TodoType};
use std::sync::Arc;

/// Days a task may wait before the review asks about it.
pub const STALE_DAYS: i64 = 14;

/// The kinds in the order a headline's findings are listed.
const KINDS: [&str; 6] = [
    "stuck-project",
    "stale-waiting",
    "overdue-deadline",
    "scheduled-in-the-past",
    "done-without-closed",
    "project-closed-this-week",
];

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let today = cx.input.today;
    let mut out = Vec::new();
    for doc in cx.files() {
        let start = out.len();
        // Whether the file logs closing is known only once all its done tasks are seen:
        // the done tasks without a CLOSED line wait here until then.
        let mut logs_closing = false;
        let mut unclosed: Vec<usize> = Vec::new();
        each_task(doc, |i, n, actions| {
            let mut found = Found {
                cx,
                doc,
                i,
                out: &mut out,
            };
            if is_active_project(n) && !actions.below(i) {
                found.push(
                    "stuck-project",
                    "an active project with no next action below it".into(),
                    "ask what the next step is and add_headline it as NEXT, or close or park \
                     the project",
                );
            }
            if is_open(n) {
                open_task(&mut found, n, today);
            } else if n.content.todo_type == Some(TodoType::Done) {
                if n.content.planning.closed.is_none() {
                    unclosed.push(i);
                    return;
                }
                logs_closing = true;
                let closed = planning_day(&n.content.planning.closed);
                if let Some(day) = closed.filter(|d| *d <= today && *d > today.plus(-7)) {
                    if n.content.has_tag("project") {
                        found.push(
                            "project-closed-this-week",
                            format!("closed on {day} ({})", day.weekday_name()),
                            "",
                        );
                    }
                }
            }
        });
        if logs_closing {
            for i in unclosed {
                let n = &doc.nodes[i];
                Found {
                    cx,
                    doc,
                    i,
                    out: &mut out,
                }
                .push(
                    "done-without-closed",
                    format!(
                        "{} without a CLOSED date, though this file logs closing",
                        keyword(n)
                    ),
                    "none needed unless the date matters; the reviews and the agenda's log \
                     cannot count it",
                );
            }
        }
        in_order(&mut out[start..], &KINDS);
    }
    out
}

fn open_task(found: &mut Found, n: &Node, today: Day) {
    let p = &n.content.planning;
    if is_waiting(n) {
        if let Some(since) = waiting_since(n) {
            let days = today.0 - since.0;
            if days > STALE_DAYS {
                found.push(
                    "stale-waiting",
                    format!("waiting for {days} days, since {since}"),
                    "follow up (add_note with what was done), or decide whether it is still \
                     worth waiting for",
                );
            }
        }
    }
    let deadline = planning_day(&p.deadline);
    if let Some(d) = deadline.filter(|d| *d < today) {
        found.push(
            "overdue-deadline",
            format!("DEADLINE {d}, {} ago", days(today.0 - d.0)),
            "do it, renegotiate the deadline with whoever set it, or drop it",
        );
        return;
    }
    let habit = n
        .content
        .property("STYLE")
        .is_some_and(|s| s.trim() == "habit");
    if let Some(s) = planning_day(&p.scheduled).filter(|s| *s < today && !habit) {
        found.push(
            "scheduled-in-the-past",
            format!(
                "SCHEDULED {s}, {} ago{}",
                days(today.0 - s.0),
                if repeats(p.scheduled.as_deref().unwrap_or("")) {
                    " (a repeater: the repeats missed since then are not done)"
                } else {
                    ""
                }
            ),
            "schedule it for a day it will really happen, or remove the date",
        );
    }
}

/// Where a finding goes: its node and the list.
struct Found<'a, 'c> {
    cx: &'a Cx<'c>,
    doc: &'a Arc<FileDoc>,
    i: usize,
    out: &'a mut Vec<Finding>,
}

impl Found<'_, '_> {
    /// Report the node, unless the model may not see it; an empty fix is none.
    fn push(&mut self, kind: &'static str, detail: String, fix: &str) {
        let r = Cx::at(self.doc, self.i as u32);
        if !self.cx.shows(&r) {
            return;
        }
        self.out.push(Finding {
            kind,
            node: r,
            detail,
            fix: (!fix.is_empty()).then(|| fix.to_string()),
        });
    }
}

fn keyword(n: &Node) -> &str {
    n.content.todo.as_deref().unwrap_or("")
}

/// The day of a planning timestamp, `None` when absent or not a real date.
pub(super) fn planning_day(ts: &Option<String>) -> Option<Day> {
    ts.as_deref().and_then(Day::parse)
}

/// Whether a timestamp has a repeater (`+1w`, `++1d`, `.+2m`).
pub(super) fn repeats(ts: &str) -> bool {
    ts.split_whitespace().any(|w| {
        let w = w.trim_end_matches(['>', ']']);
        let digits = w.trim_start_matches(['.', '+']);
        w.len() > digits.len()
            && w.starts_with(['.', '+'])
            && digits.len() >= 2
            && digits[..digits.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_digit())
            && digits.ends_with(['h', 'd', 'w', 'm', 'y'])
    })
}

/// Since when the waiting task `n` has waited (the module's rule), `None` when its notes do
/// not say.
pub(super) fn waiting_since(n: &Node) -> Option<Day> {
    let kw = n.content.todo.as_deref().unwrap_or("");
    let mut state: Option<Day> = None;
    let mut latest: Option<Day> = None;
    for line in n.content.body_or_notice().lines() {
        let l = line.trim_start();
        let is_state = l
            .strip_prefix('-')
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix("State \""))
            .and_then(|rest| rest.strip_prefix(kw))
            .is_some_and(|rest| rest.starts_with('"'));
        for day in inactive_days(l) {
            if is_state {
                state = state.max(Some(day));
            }
            latest = latest.max(Some(day));
        }
    }
    state.or(latest)
}

/// The dates of the inactive timestamps (`[2026-11-02 Mon 10:00]`) in `line`.
fn inactive_days(line: &str) -> impl Iterator<Item = Day> + '_ {
    line.match_indices('[').filter_map(|(at, _)| {
        let ts = &line[at..];
        // `[[` opens a link, not a timestamp; Day::parse reads `[YYYY-MM-DD` only.
        Day::parse(ts.get(..11)?)
    })
}

#[cfg(test)]
mod tests {
    use super::super::gtd::tests::{input, notes};
    use super::super::{run, Scan};
    use super::*;
    use crate::notes::Privacy;

    const KW: &str = "#+TODO: TODO NEXT WAITING | DONE CANCELLED\n";

    #[test]
    fn each_kind_is_found_as_of_the_given_day() {
        // Tuesday 2026-11-24.
        let text = format!(
            "{KW}* Garden :project:\n** DONE Dig\nCLOSED: [2026-11-01 Sun]\n\
             * House :project:\n** NEXT Paint\nSCHEDULED: <2026-11-20 Fri>\n\
             ** TODO Pay the roofer\nDEADLINE: <2026-11-23 Mon> SCHEDULED: <2026-11-10 Tue>\n\
             ** TODO Water plants\nSCHEDULED: <2026-11-22 Sun +1d>\n\
             ** TODO Run\nSCHEDULED: <2026-11-01 Sun .+1d>\n:PROPERTIES:\n:STYLE: habit\n:END:\n\
             ** TODO Tomorrow\nSCHEDULED: <2026-11-25 Wed> DEADLINE: <2026-11-24 Tue>\n\
             * WAITING Quote\n:LOGBOOK:\n- State \"WAITING\"  from \"TODO\"  [2026-11-01 Sun 09:00]\n- Note taken on [2026-11-20 Fri 10:00] \\\\\n  asked again\n:END:\n\
             * WAITING Parcel\n- Note taken on [2026-11-15 Sun 10:00] \\\\\n  courier\n\
             * WAITING Visa\nThe embassy, since [2026-10-01 Thu].\n\
             * WAITING Someone\n\
             * DONE Launch :project:\nCLOSED: [2026-11-18 Wed 17:00]\n\
             * DONE Old launch :project:\nCLOSED: [2026-11-17 Tue 17:00]\n\
             * DONE Unlogged\n\
             * DONE Archived :ARCHIVE:\n"
        );
        let n = notes(&[("/n/a.org", &text)], Privacy::default());
        let report = run(&n, Scan::WeeklyReview, &input("2026-11-24")).unwrap();
        assert_eq!(
            report.counts(),
            vec![
                ("stuck-project", 1),
                ("scheduled-in-the-past", 2),
                ("overdue-deadline", 1),
                ("stale-waiting", 2),
                ("project-closed-this-week", 1),
                ("done-without-closed", 1),
            ],
            "{}",
            report.text(30)
        );
        let titles: Vec<(&str, &str)> = report
            .findings
            .iter()
            .map(|f| (f.kind, &*f.node.node().content.title))
            .collect();
        assert_eq!(
            titles,
            [
                ("stuck-project", "Garden"),
                ("scheduled-in-the-past", "Paint"),
                ("overdue-deadline", "Pay the roofer"),
                ("scheduled-in-the-past", "Water plants"),
                ("stale-waiting", "Quote"),
                ("stale-waiting", "Visa"),
                ("project-closed-this-week", "Launch"),
                ("done-without-closed", "Unlogged"),
            ]
        );
        assert!(report.findings[4]
            .detail
            .contains("23 days, since 2026-11-01"));
        assert!(report.findings[3].detail.contains("a repeater"));
    }

    #[test]
    fn a_file_that_never_logs_closing_is_not_told_so() {
        let n = notes(
            &[("/n/a.org", "* DONE One\n* DONE Two\n")],
            Privacy::default(),
        );
        let report = run(&n, Scan::WeeklyReview, &input("2026-11-24")).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }

    #[test]
    fn private_notes_are_left_out() {
        let privacy = Privacy::new(["private".to_string()], []);
        let text = "* TODO Secret :private:\nDEADLINE: <2026-01-01 Thu>\n\
                    * Hidden :project:private:\n\
                    * DONE Shown\nCLOSED: [2026-11-20 Fri]\n";
        let n = notes(&[("/n/a.org", text)], privacy);
        let report = run(&n, Scan::WeeklyReview, &input("2026-11-24")).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }

    #[test]
    fn repeaters_are_told_from_other_words() {
        assert!(repeats("<2026-11-22 Sun +1d>"));
        assert!(repeats("<2026-11-22 Sun 10:00 .+2w>"));
        assert!(repeats("<2026-11-22 Sun ++1m -2d>"));
        assert!(!repeats("<2026-11-22 Sun -2d>"));
        assert!(!repeats("<2026-11-22 Sun 10:00>"));
    }
}
