//! The approvals queue: what a background run (a skill with no user waiting) would have asked
//! the user, kept until the user approves or denies it. It lives in an Org file in the state
//! directory — one headline per proposal, the action in its properties, the reasons and the
//! diff in its body — so it survives restarts and the user can read it with Org.

use crate::sexp::{Sexp, Value};
use crate::store::parse::parse_with_defaults;
use crate::store::text::{escape_org_code, unescape_org_code};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};

/// The queue's file in the state directory.
pub const FILE: &str = "approvals.org";

/// Settled proposals kept in the file, newest last; pending ones are never dropped.
const KEEP_SETTLED: usize = 200;

/// Where a proposal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Pending,
    Approved,
    Denied,
}

impl State {
    /// As the file's TODO keywords and Elisp name it.
    pub fn keyword(self) -> &'static str {
        match self {
            State::Pending => "PENDING",
            State::Approved => "APPROVED",
            State::Denied => "DENIED",
        }
    }

    fn from_keyword(k: &str) -> Option<State> {
        [State::Pending, State::Approved, State::Denied]
            .into_iter()
            .find(|s| s.keyword() == k)
    }
}

/// One action a background run proposed and the gates asked about.
#[derive(Clone, Debug, PartialEq)]
pub struct Proposal {
    pub id: u64,
    pub state: State,
    /// The skill whose run proposed it.
    pub skill: String,
    /// The tool or actuator verb (`set_todo`, `add_headline`…).
    pub tool: String,
    /// The action plist, printed (one line: the printer escapes newlines).
    pub action: String,
    /// Why the gates asked.
    pub reasons: Vec<String>,
    /// What started the run (`save of notes/inbox.org`, `cron`, `user`…).
    pub provenance: String,
    /// Seconds since the epoch.
    pub created: i64,
    /// A unified diff of what it would change, once Emacs previewed it.
    pub diff: Option<String>,
    /// What came of it (the actuator's message, or who denied it), once settled.
    pub outcome: Option<String>,
}

/// What may go wrong with the queue.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("no proposal #{0} in the approvals queue")]
    Unknown(u64),
    #[error("proposal #{id} is already {state}")]
    Settled { id: u64, state: &'static str },
    #[error("the approvals queue {path} does not read: {message}")]
    Unreadable { path: String, message: String },
}

struct Queue {
    items: Vec<Proposal>,
    next: u64,
}

/// The approvals queue of one state directory (or in memory, with no file).
pub struct Approvals {
    path: Option<PathBuf>,
    queue: Mutex<Queue>,
    /// Held while the file is written, so writes happen one at a time and each writes the
    /// queue as it is then: the last write is always the newest state.
    writing: Mutex<()>,
    /// How many proposals were settled so far: whoever waits for a user's answer (an MCP
    /// client's call) wakes when it changes instead of polling the queue.
    settled: tokio::sync::watch::Sender<u64>,
}

impl Approvals {
    pub fn in_memory() -> Approvals {
        Approvals::with(None, Vec::new())
    }

    fn with(path: Option<PathBuf>, items: Vec<Proposal>) -> Approvals {
        let next = items.iter().map(|p| p.id).max().unwrap_or(0) + 1;
        Approvals {
            path,
            queue: Mutex::new(Queue { items, next }),
            writing: Mutex::new(()),
            settled: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The queue kept in `dir`'s approvals file (empty when there is none yet). A file that
    /// does not read is set aside (never overwritten), and the queue starts empty.
    pub fn open(dir: &Path) -> (Approvals, Option<String>) {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                let warning = set_aside(&path, &e.to_string());
                return (Approvals::with(Some(path), Vec::new()), Some(warning));
            }
        };
        match read(&path, &text) {
            Ok(items) => (Approvals::with(Some(path), items), None),
            Err(e) => {
                let warning = set_aside(&path, &e.to_string());
                (Approvals::with(Some(path), Vec::new()), Some(warning))
            }
        }
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Queue a new pending proposal; its id. The file is not written: call [`save`].
    ///
    /// [`save`]: Approvals::save
    pub fn push(&self, mut proposal: Proposal) -> u64 {
        let mut q = self.queue.lock();
        proposal.id = q.next;
        proposal.state = State::Pending;
        q.next += 1;
        let id = proposal.id;
        q.items.push(proposal);
        id
    }

    /// Every proposal still pending, oldest first.
    pub fn pending(&self) -> Vec<Proposal> {
        self.all()
            .into_iter()
            .filter(|p| p.state == State::Pending)
            .collect()
    }

    /// Every proposal, pending and settled, oldest first.
    pub fn all(&self) -> Vec<Proposal> {
        self.queue.lock().items.clone()
    }

    pub fn get(&self, id: u64) -> Option<Proposal> {
        self.queue.lock().items.iter().find(|p| p.id == id).cloned()
    }

    /// A receiver that sees a change each time a proposal is settled. Take it before
    /// looking at the proposal waited for, so that a settling in between is not missed.
    pub fn watch_settled(&self) -> tokio::sync::watch::Receiver<u64> {
        self.settled.subscribe()
    }

    /// Record the diff Emacs previewed for pending proposal `id`.
    pub fn set_diff(&self, id: u64, diff: String) -> Result<(), ApprovalError> {
        self.update(id, |p| p.diff = Some(diff))
    }

    /// Settle pending proposal `id` as `state` with `outcome`. A proposal is settled once.
    pub fn settle(&self, id: u64, state: State, outcome: String) -> Result<(), ApprovalError> {
        self.update(id, |p| {
            p.state = state;
            p.outcome = Some(outcome);
        })?;
        self.settled.send_modify(|n| *n += 1);
        let mut q = self.queue.lock();
        let settled = q.items.iter().filter(|p| p.state != State::Pending).count();
        if settled > KEEP_SETTLED {
            let mut drop = settled - KEEP_SETTLED;
            q.items.retain(|p| {
                let old = p.state != State::Pending && drop > 0;
                drop -= usize::from(old);
                !old
            });
        }
        Ok(())
    }

    fn update(&self, id: u64, f: impl FnOnce(&mut Proposal)) -> Result<(), ApprovalError> {
        let mut q = self.queue.lock();
        let p = q
            .items
            .iter_mut()
            .find(|p| p.id == id)
            .ok_or(ApprovalError::Unknown(id))?;
        if p.state != State::Pending {
            return Err(ApprovalError::Settled {
                id,
                state: p.state.keyword(),
            });
        }
        f(p);
        Ok(())
    }

    /// Write the queue to its file (atomically). Call it off the main thread.
    pub fn save(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let _one_at_a_time = self.writing.lock();
        let text = render(&self.all());
        crate::store::vectors::write_atomic(path, text.as_bytes()).map_err(|e| {
            format!(
                "could not write the approvals queue {}: {e}",
                path.display()
            )
        })
    }
}

/// Move an unreadable queue file aside; the warning to show.
fn set_aside(path: &Path, why: &str) -> String {
    let secs = super::runs::now_secs();
    let aside = path.with_file_name(format!("approvals.unreadable-{secs}.org"));
    match std::fs::rename(path, &aside) {
        Ok(()) => format!(
            "the approvals queue did not read ({why}); it was set aside as {}",
            aside.display()
        ),
        Err(e) => {
            format!("the approvals queue did not read ({why}) and could not be set aside: {e}")
        }
    }
}

const HEADER: &str = "#+TITLE: org-agent approvals\n#+TODO: PENDING | APPROVED DENIED\n\
#+STARTUP: overview\n\
# Written by org-agent: what background skills proposed. Use M-x org-agent-approvals.\n";

/// `text` as it goes into a block: each line Org would read as structure gets a comma.
fn escape_block(text: &str) -> String {
    text.split_inclusive('\n').map(escape_org_code).collect()
}

/// A block's contents as they were before [`escape_block`].
fn unescape_block(text: &str) -> String {
    text.split_inclusive('\n').map(unescape_org_code).collect()
}

/// Text fit for one headline or property line.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn render(items: &[Proposal]) -> String {
    let mut out = String::from(HEADER);
    for p in items {
        out.push_str(&format!(
            "* {} {} (skill {})\n:PROPERTIES:\n:APPROVAL: {}\n:SKILL:    {}\n:TOOL:     {}\n\
             :CREATED:  {}\n:FROM:     {}\n:ACTION:   {}\n",
            p.state.keyword(),
            one_line(&p.tool),
            one_line(&p.skill),
            p.id,
            one_line(&p.skill),
            one_line(&p.tool),
            p.created,
            one_line(&p.provenance),
            one_line(&p.action),
        ));
        if let Some(outcome) = &p.outcome {
            out.push_str(&format!(":OUTCOME:  {}\n", one_line(outcome)));
        }
        out.push_str(":END:\n");
        out.push_str(&format!(
            "Proposed {} after {}.\n",
            crate::gates::audit::org_timestamp(p.created),
            one_line(&p.provenance)
        ));
        for reason in &p.reasons {
            out.push_str(&format!("- {}\n", one_line(reason)));
        }
        if let Some(diff) = &p.diff {
            out.push_str("#+begin_src diff\n");
            out.push_str(&escape_block(diff));
            if !diff.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("#+end_src\n");
        }
    }
    out
}

/// The proposals of a queue file, read with the store's Org parser.
fn read(path: &Path, text: &str) -> Result<Vec<Proposal>, ApprovalError> {
    let unreadable = |message: String| ApprovalError::Unreadable {
        path: path.display().to_string(),
        message,
    };
    let parsed = parse_with_defaults(text, path).map_err(|e| unreadable(e.to_string()))?;
    let mut items = Vec::new();
    for node in parsed.nodes.iter().filter(|n| n.content.level == 1) {
        let c = &node.content;
        let prop = |key: &str| {
            c.properties
                .iter()
                .find(|(k, _)| &**k == key)
                .map(|(_, v)| v.trim().to_owned())
        };
        let line = text[..(node.begin as usize).min(text.len())]
            .lines()
            .count()
            + 1;
        let need =
            |key: &str| prop(key).ok_or_else(|| unreadable(format!("line {line}: no :{key}:")));
        let state = c
            .todo
            .as_deref()
            .and_then(State::from_keyword)
            .ok_or_else(|| unreadable(format!("line {line}: not PENDING, APPROVED or DENIED")))?;
        let number = |key: &str| -> Result<i64, ApprovalError> {
            need(key)?
                .parse()
                .map_err(|_| unreadable(format!("line {line}: :{key}: is not a number")))
        };
        let action = need("ACTION")?;
        crate::sexp::read(&action)
            .map_err(|e| unreadable(format!("line {line}: the action does not read: {e}")))?;
        let body = c.body_or_notice();
        items.push(Proposal {
            id: number("APPROVAL")?.max(0) as u64,
            state,
            skill: need("SKILL")?,
            tool: need("TOOL")?,
            action,
            reasons: body
                .lines()
                .filter_map(|l| l.strip_prefix("- "))
                .map(str::to_owned)
                .collect(),
            provenance: prop("FROM").unwrap_or_default(),
            created: number("CREATED")?,
            diff: block(&body, "#+begin_src diff").map(|d| unescape_block(&d)),
            outcome: prop("OUTCOME"),
        });
    }
    Ok(items)
}

/// The text of the first block opened by `opening` in `body`.
fn block(body: &str, opening: &str) -> Option<String> {
    let mut lines = body.split_inclusive('\n');
    lines.find(|l| l.trim().eq_ignore_ascii_case(opening))?;
    let mut out = String::new();
    for line in lines {
        if line.trim().eq_ignore_ascii_case("#+end_src") {
            return Some(out);
        }
        out.push_str(line);
    }
    Some(out)
}

impl Proposal {
    /// `(:id N :state pending :skill S :tool T :action PLIST :reasons (…) :provenance P
    /// :created SECS :diff D-or-nil :outcome O-or-nil)`, as `org-agent-approvals-list`
    /// returns it.
    pub fn to_sexp(&self) -> Sexp {
        let text = |s: &Option<String>| s.as_deref().map(Value::string).unwrap_or(Value::Nil);
        let action = crate::sexp::read(&self.action)
            .map(|a| a.value().clone())
            .unwrap_or_else(|_| Value::string(self.action.as_str()));
        Sexp::from(Value::list(vec![
            Value::keyword("id"),
            Value::from(self.id),
            Value::keyword("state"),
            Value::symbol(self.state.keyword().to_ascii_lowercase().as_str()),
            Value::keyword("skill"),
            Value::string(self.skill.as_str()),
            Value::keyword("tool"),
            Value::string(self.tool.as_str()),
            Value::keyword("action"),
            action,
            Value::keyword("reasons"),
            Value::list(
                self.reasons
                    .iter()
                    .map(|r| Value::string(r.as_str()))
                    .collect::<Vec<_>>(),
            ),
            Value::keyword("provenance"),
            Value::string(self.provenance.as_str()),
            Value::keyword("created"),
            Value::from(self.created),
            Value::keyword("diff"),
            text(&self.diff),
            Value::keyword("outcome"),
            text(&self.outcome),
        ]))
    }
}

/// The action of `proposal` as a plist value.
pub fn action_of(proposal: &Proposal) -> Result<Sexp, String> {
    crate::sexp::read(&proposal.action).map_err(|e| format!("the action does not read: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(tool: &str) -> Proposal {
        Proposal {
            id: 0,
            state: State::Pending,
            skill: "inbox".into(),
            tool: tool.into(),
            action: "(:type :request :target :emacs :action :add-headline :id \"a\" \
                     :title \"Call\\n* Bob\")"
                .into(),
            reasons: vec!["it edits an Org file".into()],
            provenance: "save of /notes/inbox.org".into(),
            created: 1_763_900_000,
            diff: None,
            outcome: None,
        }
    }

    #[test]
    fn proposals_survive_a_restart_with_their_diff_and_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let (q, warning) = Approvals::open(dir.path());
        assert!(warning.is_none());
        let a = q.push(proposal("add_headline"));
        let b = q.push(proposal("set_todo"));
        assert_eq!((a, b), (1, 2));
        // A diff whose lines Org would read as headlines and keywords.
        let diff =
            "--- a/inbox.org\n+++ b/inbox.org\n@@ -1 +1,2 @@\n* Inbox\n+** Call\n#+TITLE: x\n";
        q.set_diff(a, diff.into()).unwrap();
        q.settle(b, State::Denied, "denied by the user".into())
            .unwrap();
        q.save().unwrap();

        let (again, warning) = Approvals::open(dir.path());
        assert!(warning.is_none(), "{warning:?}");
        assert_eq!(again.all(), q.all());
        assert_eq!(again.get(a).unwrap().diff.as_deref(), Some(diff));
        assert_eq!(again.pending().len(), 1);
        // Ids go on from the highest kept.
        assert_eq!(again.push(proposal("archive")), 3);
        assert!(action_of(&again.get(a).unwrap()).is_ok());
    }

    #[test]
    fn a_proposal_is_settled_once() {
        let q = Approvals::in_memory();
        let id = q.push(proposal("set_todo"));
        q.settle(id, State::Approved, "ok".into()).unwrap();
        assert!(matches!(
            q.settle(id, State::Denied, "no".into()),
            Err(ApprovalError::Settled { .. })
        ));
        assert!(matches!(
            q.set_diff(99, String::new()),
            Err(ApprovalError::Unknown(99))
        ));
    }

    #[test]
    fn an_unreadable_queue_is_set_aside_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE),
            "* PENDING x\n:PROPERTIES:\n:APPROVAL: 1\n:END:\n",
        )
        .unwrap();
        let (q, warning) = Approvals::open(dir.path());
        assert!(warning
            .unwrap()
            .contains("line 1: not PENDING, APPROVED or DENIED"));
        assert!(q.all().is_empty());
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("unreadable"))
            .collect();
        assert_eq!(aside.len(), 1);
    }

    #[test]
    fn old_settled_proposals_are_dropped_but_pending_ones_kept() {
        let q = Approvals::in_memory();
        let first = q.push(proposal("keep-me"));
        for _ in 0..KEEP_SETTLED + 5 {
            let id = q.push(proposal("x"));
            q.settle(id, State::Approved, "ok".into()).unwrap();
        }
        let all = q.all();
        assert_eq!(all.len(), KEEP_SETTLED + 1);
        assert_eq!(all[0].id, first);
        assert_eq!(q.pending().len(), 1);
    }
}
