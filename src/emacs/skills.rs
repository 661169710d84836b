//! The functions of skills' background runs and the approvals queue.

use super::convert::list;
use super::{config_from, fail, lisp_sexp, runtime, turn_setup};
use crate::agent::approvals::State;
use crate::sexp::Value as SexpValue;
use ::emacs::{defun, Env, IntoLisp, Result, Value};

/// Run the active skill NAME in the background for TEXT (a string or nil), because of
/// PROVENANCE (what fired it, e.g. "save of notes/inbox.org"), with BACKEND and OPTIONS as
/// for `org-agent--stimulus' (also :run-timeout, in seconds, and :max-failures).  What the
/// gates would ask goes to the approvals queue.  Return a request id at once; `skill-run'
/// events follow (:kind started, queued, finished).  A skill that is running already takes
/// it in its next run, whose id is returned.
#[defun]
fn skill_run(
    env: &Env,
    name: String,
    text: Value,
    provenance: String,
    backend: Value,
    options: Value,
) -> Result<i64> {
    let text: Option<String> = text.into_rust()?;
    let limits = config_from(env, options, crate::agent::options::run_limits)?;
    let setup = turn_setup(env, backend, options, None)?;
    let rt = runtime(env)?;
    match rt.skill_run_async(&name, text.unwrap_or_default(), provenance, setup, limits) {
        Ok(request) => Ok(request as i64),
        Err(message) => fail(env, message),
    }
}

/// Return each skill's runs as plists (:name :runs :failures :failures-in-a-row :last-run
/// :seconds :suspended :running), for skills that ran or are running.
#[defun]
fn skill_stats<'e>(env: &'e Env) -> Result<Value<'e>> {
    let mut out = Vec::new();
    for (name, stats) in runtime(env)?.runs().stats() {
        let mut items = vec![SexpValue::keyword("name"), SexpValue::string(name.as_str())];
        items.extend(stats.to_sexp());
        out.push(lisp_sexp::to_lisp(env, &SexpValue::list(items))?);
    }
    list(env, out)
}

/// Return the proposals of the approvals queue, oldest first: only the pending ones unless
/// ALL.  Each is a plist (:id :state :skill :tool :action :reasons :provenance :created
/// :diff :outcome).
#[defun]
fn approvals<'e>(env: &'e Env, all: Value<'e>) -> Result<Value<'e>> {
    let queue = runtime(env)?.approvals();
    let items = if all.is_not_nil() {
        queue.all()
    } else {
        queue.pending()
    };
    let mut out = Vec::with_capacity(items.len());
    for p in items {
        out.push(lisp_sexp::to_lisp(env, p.to_sexp().value())?);
    }
    list(env, out)
}

/// Record DIFF, what pending proposal ID would change, in the approvals queue.
#[defun]
fn approval_diff(env: &Env, id: i64, diff: String) -> Result<()> {
    match runtime(env)?.approval_diff(id.max(0) as u64, diff) {
        Ok(()) => Ok(()),
        Err(message) => fail(env, message),
    }
}

/// Settle pending proposal ID as STATE (`approved' once Emacs ran it, or `denied') with
/// OUTCOME (what came of it), and record the answer in AUDIT-FILE unless it is nil.
/// STATE `applying', before Emacs runs a proposal the user approved, settles nothing: it
/// says that what the proposal edits is the edit of the skill that proposed it, so the
/// save that follows does not fire that skill's save triggers again (OUTCOME and
/// AUDIT-FILE are ignored).
#[defun]
fn approval_settle(
    env: &Env,
    id: i64,
    state: Value,
    outcome: String,
    audit_file: Value,
) -> Result<()> {
    let name: String = env.call("symbol-name", [state])?.into_rust()?;
    let rt = runtime(env)?;
    let state = match name.as_str() {
        "approved" => State::Approved,
        "denied" => State::Denied,
        "applying" => {
            return match rt.approval_applying(id.max(0) as u64) {
                Ok(_) => Ok(()),
                Err(message) => fail(env, message),
            }
        }
        _ => {
            return fail(
                env,
                format!("a proposal is applying, approved or denied, not {name}"),
            )
        }
    };
    let audit: Option<String> = audit_file.into_rust()?;
    match rt.settle_approval(id.max(0) as u64, state, outcome, audit.map(Into::into)) {
        Ok(()) => Ok(()),
        Err(message) => fail(env, message),
    }
}

/// The approvals queue's file, or nil while the store is in memory only.
#[defun]
fn approvals_file<'e>(env: &'e Env) -> Result<Value<'e>> {
    match runtime(env)?.approvals().path() {
        Some(path) => path.display().to_string().into_lisp(env),
        None => ().into_lisp(env),
    }
}

/// Let the triggers of the shipped skills NAMES fire, or of all of them when NAMES is t
/// (`org-agent-shipped-skill-triggers'); nil: none, as when org-agent starts.  A trigger
/// that may not fire is no `skill-triggered' event and no line of the log.  The user's own
/// skills' triggers always fire.
#[defun]
fn set_shipped_triggers(env: &Env, names: Value) -> Result<()> {
    use crate::agent::trigger_state::ShippedTriggers;
    let shipped = if names == env.intern("t")? {
        ShippedTriggers::All
    } else {
        ShippedTriggers::Named(super::convert::string_list(env, names)?)
    };
    runtime(env)?.set_shipped_triggers(shipped);
    Ok(())
}

/// Fire the skills' triggers of an Emacs event: KIND is `idle', `startup' or `capture'
/// (of the node at position POS in FILE, as last ingested).  Return the names of the skills
/// it fired; each run starts with a `skill-triggered' event.
#[defun]
fn fire_trigger<'e>(
    env: &'e Env,
    kind: Value<'e>,
    file: Value<'e>,
    pos: Value<'e>,
) -> Result<Value<'e>> {
    let name: String = env.call("symbol-name", [kind])?.into_rust()?;
    let on = match crate::skills::On::from_name(&name) {
        Some(
            on
            @ (crate::skills::On::Idle | crate::skills::On::Startup | crate::skills::On::Capture),
        ) => on,
        _ => {
            return fail(
                env,
                format!("Emacs fires idle, startup or capture triggers, not {name}"),
            )
        }
    };
    let file = if file.is_not_nil() {
        Some(super::convert::file_arg(env, file)?)
    } else {
        None
    };
    let pos: Option<i64> = pos.into_rust()?;
    let capture = file
        .as_deref()
        .zip(pos.map(|p| p.clamp(0, u32::MAX as i64) as u32));
    let fired = runtime(env)?.fire_emacs_trigger(on, capture);
    let names = fired
        .into_iter()
        .map(|n| n.into_lisp(env))
        .collect::<Result<Vec<_>>>()?;
    list(env, names)
}

/// The names of the skills' scans, in the order `org-agent-scan' offers them: the list
/// `org-agent--scan' takes, owned here so that Elisp never keeps a copy.
#[defun]
fn scan_names(env: &Env) -> Result<Value<'_>> {
    use crate::notes::scans::Scan;
    let names = Scan::ALL
        .iter()
        .map(|s| s.name().into_lisp(env))
        .collect::<Result<Vec<_>>>()?;
    list(env, names)
}

/// Run the skills' scan NAME (`ids', `gtd-integrity', `inbox', `weekly-review',
/// `daily-briefing', `garden', `secrets') over the notes and return its findings as plists
/// (:kind :id :file :begin :level :todo :title :detail :fix), in the order of the notes.
/// This is the user asking, so private notes are included.  FILE, when non-nil, limits it
/// to that file; INBOX names the inbox for the inbox scan.
#[defun]
fn scan<'e>(env: &'e Env, name: String, file: Value<'e>, inbox: Value<'e>) -> Result<Value<'e>> {
    use crate::notes::scans::{self, Scan, ScanInput};
    use crate::notes::{Notes, Privacy};
    let Some(scan) = Scan::from_name(&name) else {
        let names: Vec<&str> = Scan::ALL.iter().map(|s| s.name()).collect();
        return fail(
            env,
            format!("no scan {name:?}; the scans are {}", names.join(", ")),
        );
    };
    let mut input = ScanInput::today();
    input.file = file.into_rust()?;
    input.inbox = inbox.into_rust()?;
    let notes = Notes::new(runtime(env)?.store(), std::sync::Arc::new(Privacy::none()));
    let report = match scans::run(&notes, scan, &input) {
        Ok(r) => r,
        Err(message) => return fail(env, message),
    };
    let mut out = Vec::with_capacity(report.findings.len());
    for f in &report.findings {
        out.push(lisp_sexp::to_lisp(env, &f.to_sexp())?);
    }
    list(env, out)
}

/// Return where the credentials of TEXT are, as the secret detector (the one that redacts
/// what goes to a model) finds them: a list of (BEG END RULE), BEG and END character offsets
/// into TEXT as `substring' takes them, RULE the name of the rule that found it; nil when
/// there is none.  The secret-sentinel skill moves a credential out of a note with it: the
/// text is judged here and never leaves Emacs otherwise.
#[defun]
fn secret_spans<'e>(env: &'e Env, text: String) -> Result<Value<'e>> {
    let gate = crate::secrets::SecretGate::shared();
    let spans = gate.detector().spans(&text);
    let mut out = Vec::with_capacity(spans.len());
    // Byte offsets to character offsets, in one pass: the spans are in order.
    let (mut byte, mut chars) = (0usize, 0i64);
    let mut char_at = |target: usize| -> i64 {
        if let Some(between) = text.get(byte..target) {
            chars += between.chars().count() as i64;
            byte = target;
        }
        chars
    };
    for s in spans {
        let item = SexpValue::list(vec![
            SexpValue::from(char_at(s.start)),
            SexpValue::from(char_at(s.end)),
            SexpValue::string(s.rule),
        ]);
        out.push(lisp_sexp::to_lisp(env, &item)?);
    }
    list(env, out)
}
