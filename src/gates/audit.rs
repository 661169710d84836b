//! The audit log: every gate decision, appended to an Org file in the state directory, so
//! the user can read (and org-agent can ingest) what the agent was allowed to do and why.

use super::{Outcome, Verdict};
use crate::action::Action;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct AuditLog {
    path: PathBuf,
    /// The skill whose run proposes the actions (a background run), named in each entry.
    skill: Option<String>,
}

/// `[2026-11-22 Sun 14:03]` for `secs` since the epoch, in local time.
pub fn org_timestamp(secs: i64) -> String {
    // SAFETY: localtime_r writes only into the zeroed struct we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let t = secs as libc::time_t;
        if libc::localtime_r(&t, &mut tm).is_null() {
            return format!("[{secs}]");
        }
        tm
    };
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    format!(
        "[{:04}-{:02}-{:02} {} {:02}:{:02}]",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        DAYS[(tm.tm_wday.rem_euclid(7)) as usize],
        tm.tm_hour,
        tm.tm_min
    )
}

/// Text fit for one property line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

impl AuditLog {
    pub fn new(path: impl Into<PathBuf>) -> AuditLog {
        AuditLog {
            path: path.into(),
            skill: None,
        }
    }

    /// The same log, each entry naming `skill` as the proposer.
    pub fn for_skill(self, skill: impl Into<String>) -> AuditLog {
        AuditLog {
            skill: Some(skill.into()),
            ..self
        }
    }

    /// The `:SKILL:` property line, when a skill proposed the action.
    fn skill_line(&self) -> String {
        self.skill
            .as_deref()
            .map(|s| format!(":SKILL:    {}\n", one_line(s)))
            .unwrap_or_default()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append the decision about `action`. Each entry is written with one `write` to a file
    /// opened for appending, so concurrent entries never interleave.
    pub fn append(&self, action: &Action, verdict: &Verdict, time: i64) -> std::io::Result<()> {
        let decision = match &verdict.outcome {
            Outcome::Allow(_) => "allow",
            Outcome::Ask { .. } => "ask",
            Outcome::Deny { .. } => "deny",
        };
        let deciding = verdict
            .steps
            .iter()
            .find(|s| s.decision == decision)
            .or_else(|| verdict.steps.last());
        let mut entry = format!(
            "* {} {decision} {}\n:PROPERTIES:\n:ACTION:   {}\n:DECISION: {decision}\n",
            org_timestamp(time),
            action.kind(),
            one_line(&crate::sexp::print(action.to_sexp().value())),
        );
        if let Some(step) = deciding {
            entry.push_str(&format!(":GATE:     {}\n", step.gate));
            if !step.reason.is_empty() {
                entry.push_str(&format!(":REASON:   {}\n", one_line(&step.reason)));
            }
        }
        entry.push_str(&self.skill_line());
        entry.push_str(":END:\n");
        for step in &verdict.steps {
            entry.push_str(&format!("- {}: {}", step.gate, step.decision));
            if !step.reason.is_empty() {
                entry.push_str(&format!(" — {}", one_line(&step.reason)));
            }
            entry.push('\n');
        }
        self.write(entry)
    }

    /// Append what the user answered when the gates asked about `action`.
    pub fn append_answer(&self, action: &Action, answer: &str, time: i64) -> std::io::Result<()> {
        self.write(format!(
            "* {} user {answer} {}\n:PROPERTIES:\n:ACTION:   {}\n:DECISION: user {answer}\n{}:END:\n",
            org_timestamp(time),
            action.kind(),
            one_line(&crate::sexp::print(action.to_sexp().value())),
            self.skill_line(),
        ))
    }

    /// Append that the secret gate withheld secrets from a request: how many, by rule (never
    /// the secrets themselves).
    pub fn append_redaction(
        &self,
        hits: &[(&'static str, usize)],
        time: i64,
    ) -> std::io::Result<()> {
        let total: usize = hits.iter().map(|(_, n)| n).sum();
        let rules: Vec<String> = hits.iter().map(|(k, n)| format!("{k} {n}")).collect();
        self.write(format!(
            "* {} redacted {total} secret{}\n:PROPERTIES:\n:DECISION: redact\n:GATE:     secrets\n:REDACTED: {}\n{}:END:\n",
            org_timestamp(time),
            if total == 1 { "" } else { "s" },
            one_line(&rules.join(", ")),
            self.skill_line(),
        ))
    }

    fn write(&self, mut entry: String) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        if file.metadata()?.len() == 0 {
            entry.insert_str(0, "#+TITLE: org-agent audit log\n\n");
        }
        file.write_all(entry.as_bytes())
    }
}
