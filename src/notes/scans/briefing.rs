//! The daily-briefing skill's scan: the day ahead as of `cx.input.today`, read-only.
//!
//! - `scheduled-today`: a headline not done, SCHEDULED today (a plain headline too: the
//!   agenda shows it).
//! - `deadline-today`: a headline not done whose DEADLINE is today.
//! - `deadline-soon`: an open task whose DEADLINE falls in the days ahead: within its own
//!   warning period when the timestamp has one (`-3d`, `-1w`), else within
//!   [`SOON_DAYS`] days (shorter than Org's 14-day `org-deadline-warning-days`: a morning
//!   briefing names what is close, the agenda shows the rest).
//! - `overdue`: an open task whose DEADLINE or SCHEDULED date is before today (a habit's
//!   past schedule is not: the habit graph tracks it). Org moves a repeater only when it is
//!   done, so a repeater still on a past date is overdue too.
//! - `closed-yesterday`: a headline CLOSED yesterday.
//! - `waiting-for`: every open WAITING (or WAIT) task, with since when when its notes say.
//!
//! Each headline is one finding, the first kind that fits in this order: overdue,
//! deadline-today, scheduled-today, deadline-soon. Archived headlines are left out.

use super::gtd::{archived, is_open, is_waiting};
use super::review::{planning_day, waiting_since};
use super::{days, Cx, Day, Finding};
use crate::store::{Node, NodeKind, TodoType};

/// How many days ahead a deadline without a warning period of its own is "soon".
pub const SOON_DAYS: i64 = 3;

pub(super) fn scan(cx: &Cx) -> Vec<Finding> {
    let today = cx.input.today;
    let mut out = Vec::new();
    for doc in cx.files() {
        for i in 1..doc.nodes.len() {
            let n = &doc.nodes[i];
            let c = &n.content;
            if c.kind != NodeKind::Headline {
                continue;
            }
            let p = &c.planning;
            // Most headlines have no date and no keyword: nothing to look at.
            if c.todo_type.is_none() && p.scheduled.is_none() && p.deadline.is_none() {
                continue;
            }
            if archived(doc, n) {
                continue;
            }
            let done = c.todo_type == Some(TodoType::Done);
            let deadline = planning_day(&p.deadline);
            let scheduled = planning_day(&p.scheduled);
            let item: Option<(&'static str, String)> = if done {
                planning_day(&p.closed)
                    .filter(|d| *d == today.plus(-1))
                    .map(|_| ("closed-yesterday", "closed yesterday".to_string()))
            } else if let Some(late) = overdue(n, today) {
                Some(("overdue", late))
            } else if deadline == Some(today) {
                Some(("deadline-today", "DEADLINE today".to_string()))
            } else if scheduled == Some(today) {
                Some((
                    "scheduled-today",
                    format!("SCHEDULED today{}", time_of(p.scheduled.as_deref())),
                ))
            } else if let Some(d) = deadline.filter(|d| {
                *d > today && is_open(n) && d.0 - today.0 <= warning_days(p.deadline.as_deref())
            }) {
                Some((
                    "deadline-soon",
                    format!(
                        "DEADLINE {d} ({}), in {}",
                        d.weekday_name(),
                        days(d.0 - today.0)
                    ),
                ))
            } else {
                None
            };
            let waiting = is_waiting(n).then(|| match waiting_since(n) {
                Some(since) => format!("waiting since {since}"),
                None => "waiting".to_string(),
            });
            for (kind, detail) in item.into_iter().chain(waiting.map(|w| ("waiting-for", w))) {
                let r = Cx::at(doc, i as u32);
                if cx.shows(&r) {
                    out.push(Finding {
                        kind,
                        node: r,
                        detail,
                        fix: None,
                    });
                }
            }
        }
    }
    out
}

/// Why the task `n` is overdue on `today`, if it is: open, and its DEADLINE or SCHEDULED
/// date is past (a habit's past schedule is not: the habit graph tracks it).
pub(super) fn overdue(n: &Node, today: Day) -> Option<String> {
    if !is_open(n) {
        return None;
    }
    let c = &n.content;
    if let Some(d) = planning_day(&c.planning.deadline).filter(|d| *d < today) {
        return Some(format!("DEADLINE was {d}, {} ago", days(today.0 - d.0)));
    }
    let habit = c.property("STYLE").is_some_and(|s| s.trim() == "habit");
    let s = planning_day(&c.planning.scheduled).filter(|s| *s < today && !habit)?;
    Some(format!(
        "SCHEDULED {s}, {} ago, not done",
        days(today.0 - s.0)
    ))
}

/// The time of day a timestamp gives (` at 10:00`), or nothing.
fn time_of(ts: Option<&str>) -> String {
    ts.and_then(|ts| {
        ts.split_whitespace().nth(2).filter(|w| {
            let b = w.as_bytes();
            b.len() >= 4 && b[0].is_ascii_digit() && w.contains(':')
        })
    })
    .map(|w| format!(" at {}", w.trim_end_matches(['>', ']'])))
    .unwrap_or_default()
}

/// The warning period a deadline's timestamp gives (`-3d`, `--1w`), in days; [`SOON_DAYS`]
/// when it gives none.
fn warning_days(ts: Option<&str>) -> i64 {
    let Some(ts) = ts else {
        return SOON_DAYS;
    };
    for w in ts.split_whitespace() {
        let w = w.trim_end_matches(['>', ']']);
        let Some(rest) = w.strip_prefix('-') else {
            continue;
        };
        let rest = rest.trim_start_matches('-');
        let Some(unit) = rest.chars().last() else {
            continue;
        };
        let Ok(count) = rest[..rest.len() - unit.len_utf8()].parse::<i64>() else {
            continue;
        };
        let per = match unit {
            'd' => 1,
            'w' => 7,
            'm' => 30,
            'y' => 365,
            _ => continue,
        };
        return count.saturating_mul(per);
    }
    SOON_DAYS
}

#[cfg(test)]
mod tests {
    use super::super::gtd::tests::{input, notes};
    use super::super::{run, Scan};
    use super::*;
    use crate::notes::Privacy;

    #[test]
    fn the_day_ahead_is_listed_once_per_headline() {
        // Tuesday 2026-11-24.
        let text = "#+TODO: TODO NEXT WAITING | DONE\n\
                    * TODO Call the bank\nSCHEDULED: <2026-11-24 Tue 10:00>\n\
                    * Dentist\nSCHEDULED: <2026-11-24 Tue>\n\
                    * TODO Tax return\nDEADLINE: <2026-11-24 Tue>\n\
                    * TODO Report\nDEADLINE: <2026-11-26 Thu>\n\
                    * TODO Grant\nDEADLINE: <2026-12-01 Tue -1w>\n\
                    * TODO Far away\nDEADLINE: <2026-12-01 Tue>\n\
                    * TODO Late\nDEADLINE: <2026-11-20 Fri> SCHEDULED: <2026-11-24 Tue>\n\
                    * NEXT Missed\nSCHEDULED: <2026-11-23 Mon +1w>\n\
                    * TODO Floss\nSCHEDULED: <2026-11-20 Fri .+1d>\n:PROPERTIES:\n:STYLE: habit\n:END:\n\
                    * DONE Shipped\nCLOSED: [2026-11-23 Mon 18:00]\n\
                    * DONE Older\nCLOSED: [2026-11-22 Sun 18:00]\n\
                    * DONE Was due today\nDEADLINE: <2026-11-24 Tue>\n\
                    * WAITING Quote\n- State \"WAITING\" from \"TODO\" [2026-11-10 Tue]\n\
                    * WAITING Visa\nSCHEDULED: <2026-11-24 Tue>\n\
                    * TODO Old :ARCHIVE:\nDEADLINE: <2026-01-01 Thu>\n";
        let n = notes(&[("/n/a.org", text)], Privacy::default());
        let report = run(&n, Scan::DailyBriefing, &input("2026-11-24")).unwrap();
        let got: Vec<(&str, &str)> = report
            .findings
            .iter()
            .map(|f| (f.kind, &*f.node.node().content.title))
            .collect();
        assert_eq!(
            got,
            [
                ("scheduled-today", "Call the bank"),
                ("scheduled-today", "Dentist"),
                ("deadline-today", "Tax return"),
                ("deadline-soon", "Report"),
                ("deadline-soon", "Grant"),
                ("overdue", "Late"),
                ("overdue", "Missed"),
                ("closed-yesterday", "Shipped"),
                ("waiting-for", "Quote"),
                ("scheduled-today", "Visa"),
                ("waiting-for", "Visa"),
            ],
            "{}",
            report.text(30)
        );
        assert!(report.findings[0].detail.contains("at 10:00"));
        assert!(report.findings[8].detail.contains("since 2026-11-10"));
        assert_eq!(report.findings[10].detail, "waiting");
    }

    #[test]
    fn private_notes_are_left_out() {
        let privacy = Privacy::new(["private".to_string()], []);
        let text = "* TODO Secret :private:\nSCHEDULED: <2026-11-24 Tue>\n\
                    * Journal :private:\n** DONE Hidden\nCLOSED: [2026-11-23 Mon]\n";
        let n = notes(&[("/n/a.org", text)], privacy);
        let report = run(&n, Scan::DailyBriefing, &input("2026-11-24")).unwrap();
        assert!(report.findings.is_empty(), "{}", report.text(10));
    }

    #[test]
    fn warning_periods_are_read_from_the_timestamp() {
        assert_eq!(warning_days(Some("<2026-12-01 Tue -1w>")), 7);
        assert_eq!(warning_days(Some("<2026-12-01 Tue +1m --2d>")), 2);
        assert_eq!(
            warning_days(Some("<2026-12-01 Tue 10:00-11:00>")),
            SOON_DAYS
        );
        assert_eq!(warning_days(None), SOON_DAYS);
    }
}
