//! The shipped skills' deterministic scans: questions about the whole of the notes (duplicate
//! ids, dangling links, stuck projects, overdue tasks, pasted credentials…) answered by
//! walking the store's nodes and indexes in Rust, never by asking a model to read text.
//! A scan sees what the model may see: private notes are left out, and every node a finding
//! names counts as read (an untrusted one then makes edits ask).
//!
//! The model reaches a scan through the `scan_notes` tool (`src/tools/builtin.rs`), which the
//! skills alias with the scan fixed; `scripts/skill-report` runs the same scans on a
//! directory and prints what they found.

pub mod ask;
pub mod briefing;
pub mod garden;
pub mod gtd;
pub mod ids;
pub mod inbox;
pub mod review;
pub mod sentinel;

pub use crate::store::date::{days, Day};

use super::{summary, Notes};
use crate::store::{FileDoc, NodeKind, NodeRef, State};
use std::sync::Arc;

/// One scan: a skill's deterministic question.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scan {
    Ids,
    GtdIntegrity,
    Inbox,
    WeeklyReview,
    DailyBriefing,
    Garden,
    Secrets,
}

impl Scan {
    pub const ALL: [Scan; 7] = [
        Scan::Ids,
        Scan::GtdIntegrity,
        Scan::Inbox,
        Scan::WeeklyReview,
        Scan::DailyBriefing,
        Scan::Garden,
        Scan::Secrets,
    ];

    /// The name the tool takes and the skills fix (`scan: ids`).
    pub fn name(self) -> &'static str {
        match self {
            Scan::Ids => "ids",
            Scan::GtdIntegrity => "gtd-integrity",
            Scan::Inbox => "inbox",
            Scan::WeeklyReview => "weekly-review",
            Scan::DailyBriefing => "daily-briefing",
            Scan::Garden => "garden",
            Scan::Secrets => "secrets",
        }
    }

    pub fn from_name(name: &str) -> Option<Scan> {
        Scan::ALL.into_iter().find(|s| s.name() == name)
    }

    /// What it looks for, in a few words (the tool's description lists these).
    pub fn about(self) -> &'static str {
        match self {
            Scan::Ids => "duplicate :ID:s and id: links that lead nowhere",
            Scan::GtdIntegrity => {
                "DONE over open children, projects with no next action, WAITING with no note"
            }
            Scan::Inbox => "the items of the inbox, with refile targets and the tag vocabulary",
            Scan::WeeklyReview => {
                "stuck projects, stale WAITING, overdue deadlines, DONE without CLOSED, \
                 scheduled in the past, projects closed this week"
            }
            Scan::DailyBriefing => {
                "today's schedule and deadlines, overdue, closed yesterday, waiting-for"
            }
            Scan::Garden => {
                "file: links to files that do not exist, empty headlines, duplicate titles \
                 among siblings, timestamps that do not parse, tag spelling variants"
            }
            Scan::Secrets => "credentials pasted into notes",
        }
    }
}

/// What a scan is asked about beyond the notes.
#[derive(Clone, Debug)]
pub struct ScanInput {
    /// The day "today" means (local time).
    pub today: Day,
    /// Only this file (as the store names it).
    pub file: Option<String>,
    /// The inbox: a file, or `FILE::Headline` / a headline's id (the inbox scan).
    pub inbox: Option<String>,
}

impl ScanInput {
    pub fn today() -> ScanInput {
        ScanInput {
            today: Day::local_today(),
            file: None,
            inbox: None,
        }
    }
}

/// One problem (or, for the read-only briefings, one item) a scan found.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its kind, a fixed word per scan (`duplicate-id`, `overdue`…): what reports count.
    pub kind: &'static str,
    pub node: NodeRef,
    /// What is wrong or worth saying, in a sentence.
    pub detail: String,
    /// A fix the model may propose with its edit tools, when there is an obvious one.
    pub fix: Option<String>,
}

/// What one scan found, in the order of the notes.
#[derive(Clone, Debug)]
pub struct Report {
    pub scan: Scan,
    pub findings: Vec<Finding>,
    /// Headlines the scan looked at.
    pub looked_at: usize,
}

impl Report {
    /// Findings per kind, kinds in the order they first appear.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        let mut out: Vec<(&'static str, usize)> = Vec::new();
        for f in &self.findings {
            match out.iter_mut().find(|(k, _)| *k == f.kind) {
                Some((_, n)) => *n += 1,
                None => out.push((f.kind, 1)),
            }
        }
        out
    }

    /// The report as the model reads it: the counts, then at most `limit` findings.
    pub fn text(&self, limit: usize) -> String {
        if self.findings.is_empty() {
            return format!(
                "{}: nothing found in {} headlines.",
                self.scan.name(),
                self.looked_at
            );
        }
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let mut out = format!(
            "{}: {} found in {} headlines ({})",
            self.scan.name(),
            self.findings.len(),
            self.looked_at,
            counts.join(", ")
        );
        if self.findings.len() > limit {
            out.push_str(&format!("; the first {limit}"));
        }
        out.push_str(":\n");
        for f in self.findings.iter().take(limit) {
            out.push_str(&format!(
                "[{}] {}\n  {}",
                f.kind,
                summary(&f.node),
                f.detail
            ));
            if let Some(fix) = &f.fix {
                out.push_str(&format!("\n  fix: {fix}"));
            }
            out.push('\n');
        }
        out
    }
}

impl Report {
    /// The report as a person reads it, and as the model that phrases it does (`files`
    /// false): per kind, its count and its headlines with what was found, no ids and no
    /// paths; at most `limit` headlines in all.
    pub fn brief(&self, limit: usize, files: bool) -> String {
        if self.findings.is_empty() {
            return format!("Nothing found ({}).", self.scan.name());
        }
        let mut out = String::new();
        let mut shown = 0;
        for (kind, n) in self.counts() {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            let words = kind.replace('-', " ");
            out.push_str(&format!("{} ({n}):", ask::capitalised(&words)));
            for f in self.findings.iter().filter(|f| f.kind == kind) {
                if shown == limit {
                    out.push_str("\n- …");
                    break;
                }
                shown += 1;
                out.push_str("\n- ");
                out.push_str(&ask::Item::of(&f.node, &f.detail).line(files));
            }
        }
        out
    }
}

/// Run `scan` over what `notes` may show.
pub fn run(notes: &Notes, scan: Scan, input: &ScanInput) -> Result<Report, String> {
    let cx = Cx::new(notes, input);
    let findings = match scan {
        Scan::Ids => ids::scan(&cx),
        Scan::GtdIntegrity => gtd::scan(&cx),
        Scan::Inbox => inbox::scan(&cx)?,
        Scan::WeeklyReview => review::scan(&cx),
        Scan::DailyBriefing => briefing::scan(&cx),
        Scan::Garden => garden::scan(&cx),
        Scan::Secrets => sentinel::scan(&cx),
    };
    notes.note_reads(findings.iter().map(|f| &f.node));
    Ok(Report {
        scan,
        findings,
        looked_at: cx.looked_at(),
    })
}

/// What every scan works from: one state of the store, the privacy of the notes, the input.
pub struct Cx<'a> {
    pub notes: &'a Notes,
    pub input: &'a ScanInput,
    pub state: Arc<State>,
}

impl<'a> Cx<'a> {
    fn new(notes: &'a Notes, input: &'a ScanInput) -> Cx<'a> {
        Cx {
            notes,
            input,
            state: notes.store.state(),
        }
    }

    /// The files the scan covers (the input's file alone, when it names one), private
    /// files left out.
    pub fn files(&self) -> impl Iterator<Item = &Arc<FileDoc>> + '_ {
        self.state
            .files
            .values()
            .filter(|doc| self.input.file.as_deref().is_none_or(|f| *doc.path == *f))
            .filter(|doc| !self.notes.privacy.hides_file(&doc.path))
    }

    /// Every headline the scan covers that the model may see, in document order.
    pub fn headlines(&self) -> impl Iterator<Item = NodeRef> + '_ {
        self.files().flat_map(move |doc| {
            (1..doc.nodes.len() as u32)
                .map(move |index| NodeRef {
                    doc: doc.clone(),
                    index,
                })
                .filter(|r| r.node().content.kind == NodeKind::Headline)
                .filter(move |r| self.shows(r))
        })
    }

    /// Whether the model may see `r`.
    pub fn shows(&self, r: &NodeRef) -> bool {
        self.notes.shows(r)
    }

    /// The node `index` of `doc`.
    pub fn at(doc: &Arc<FileDoc>, index: u32) -> NodeRef {
        NodeRef {
            doc: doc.clone(),
            index,
        }
    }

    /// Headlines in the files covered (private ones included in the count: the number says
    /// how much was looked at, not what).
    fn looked_at(&self) -> usize {
        self.files()
            .map(|doc| doc.nodes.len().saturating_sub(1))
            .sum()
    }
}

impl Finding {
    /// The finding as Emacs reads it: `(:kind K :id ID :file F :begin POS :level N :todo T
    /// :title TITLE :detail D :fix FIX)`, `:todo` and `:fix` nil when there is none.
    pub fn to_sexp(&self) -> crate::sexp::Value {
        use crate::sexp::Value;
        let n = self.node.node();
        let c = &n.content;
        let text = |s: Option<&str>| s.map(Value::string).unwrap_or(Value::Nil);
        Value::list(vec![
            Value::keyword("kind"),
            Value::string(self.kind),
            Value::keyword("id"),
            Value::string(&*n.id),
            Value::keyword("file"),
            Value::string(&*self.node.doc.path),
            Value::keyword("begin"),
            Value::from(i64::from(n.begin_pos)),
            Value::keyword("level"),
            Value::from(i64::from(c.level)),
            Value::keyword("todo"),
            text(c.todo.as_deref()),
            Value::keyword("title"),
            Value::string(&*c.title),
            Value::keyword("detail"),
            Value::string(self.detail.as_str()),
            Value::keyword("fix"),
            text(self.fix.as_deref()),
        ])
    }
}

/// Notes of `files` (path, Org text) under `privacy`, for the scans' tests.
#[cfg(test)]
pub(crate) fn test_notes(files: &[(&str, &str)], privacy: super::Privacy) -> Notes {
    let store = Arc::new(crate::store::Store::in_memory(
        crate::store::Config::default(),
    ));
    for (path, text) in files {
        if let Err(e) = store.ingest_text(path, text, None, None, None) {
            panic!("{path} does not read: {e}");
        }
    }
    Notes::new(store, Arc::new(privacy))
}
