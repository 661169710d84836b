//! The deterministic gates every proposed action passes before it runs.
//!
//! A [`Pipeline`] runs its gates in order. Each gate allows, asks the user, denies (with a
//! reason) or transforms the action (later gates see the transformed one). Deny wins over
//! ask, ask over allow; a gate that fails denies (fail closed). Every decision can be
//! appended to the [audit log](audit).

pub mod audit;
pub mod budget;
pub mod command;
pub mod paths;
pub mod permissions;
pub mod untrusted;

use crate::action::{Action, EmacsAction};
use std::collections::HashSet;

/// What one gate says about an action.
#[derive(Debug, PartialEq)]
pub enum Decision {
    Allow,
    Ask(String),
    Deny(String),
    /// Replace the action (for the gates after this one and for execution).
    Transform(Action, String),
    /// Allowed by the user's own policy: the gates after it see the action as approved by
    /// the user, so the asks that yield to an approval (the default policy's, a skill's
    /// `approved=no` rows) yield to it; denials and the walls' asks hold.
    Permit(String),
}

/// What a gate may know besides the action.
#[derive(Debug, Default, Clone)]
pub struct Context {
    /// Action kinds (see [`Action::kind`]) the user approved for this conversation.
    pub approved: HashSet<String>,
    /// Tools the agent has; calls to anything else are denied.
    pub tools: HashSet<String>,
    /// Tools that only read (their calls need no approval).
    pub read_only_tools: HashSet<String>,
    /// The MCP servers' tools offered (`SERVER__TOOL`), which the user's `mcp` rules name. A
    /// skill's tools are spelled the same way (`SKILL__TOOL`): only this says which are MCP's.
    pub mcp_tools: HashSet<String>,
    /// Skills in use in the conversation now (a skill's rules may hold only then).
    pub skills_in_use: HashSet<String>,
    /// Nobody waits for this run (a skill's trigger, a script): rules scoped to the chat do
    /// not hold, those scoped to background runs do.
    pub background: bool,
    /// Where the untrusted content the conversation has read comes from (provenance lines,
    /// first read first): once there is any, every edit asks ([`untrusted::UntrustedEdits`]).
    pub untrusted_read: Vec<String>,
}

impl Context {
    /// The conversation has read untrusted content from `provenance` (lines, first read
    /// first, each kept once): from now on every edit it proposes asks, and says why.
    pub fn read_untrusted(&mut self, provenance: impl IntoIterator<Item = String>) {
        for line in provenance {
            if !self.untrusted_read.contains(&line) {
                self.untrusted_read.push(line);
            }
        }
    }
}

pub trait Gate: Send + Sync {
    fn name(&self) -> &str;
    /// An `Err` is a failure of the gate itself: the action is denied.
    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String>;
    /// Whether the gate is the user's own policy (`org-agent-permissions`): it runs before
    /// the others, and what it permits they see as approved (see [`Decision::Permit`]).
    fn user_policy(&self) -> bool {
        false
    }
}

/// The final outcome for one action.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Allow(Action),
    Ask {
        action: Action,
        reasons: Vec<String>,
    },
    Deny {
        reasons: Vec<String>,
    },
}

/// One gate's part in a verdict, for the audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub gate: String,
    pub decision: &'static str,
    pub reason: String,
}

#[derive(Debug, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub steps: Vec<Step>,
}

/// Gate rules from one source, attached to the pipeline together: the default policy today,
/// a skill's gate table later. Rules are only ever added, and deny wins over ask over allow,
/// so added rules can tighten the policy, never loosen it.
pub struct GateRules {
    /// Where the rules come from ("default policy", a skill's name), for the audit log.
    pub source: String,
    pub gates: Vec<Box<dyn Gate>>,
}

impl GateRules {
    /// The default policy: known tools only, read-only tools allowed, echo-area messages
    /// allowed, buffer writes (`insert`, `stream-append`) denied, any edit of an Org file
    /// asks (unless approved for the conversation), a new skill asks every time, after
    /// untrusted content every edit asks, and Elisp evaluation is denied unless offered and
    /// then asks every time. The shell tool, when offered, brings its own rules
    /// ([`GateRules::commands`]).
    pub fn default_policy() -> GateRules {
        GateRules {
            source: "default policy".into(),
            gates: vec![
                Box::new(KnownTools),
                Box::new(ReadOnly),
                Box::new(BufferWrites),
                Box::new(OrgEdits),
                Box::new(NewSkills),
                Box::new(ElispEval),
                Box::new(untrusted::UntrustedEdits),
                Box::new(Placeholders),
            ],
        }
    }
}

#[derive(Default)]
pub struct Pipeline {
    rules: Vec<GateRules>,
}

impl Pipeline {
    /// A pipeline of `gates` alone (a policy of their own, for tests and scripts).
    pub fn new(gates: Vec<Box<dyn Gate>>) -> Pipeline {
        Pipeline::from_rules(vec![GateRules {
            source: "custom".into(),
            gates,
        }])
    }

    pub fn from_rules(rules: Vec<GateRules>) -> Pipeline {
        Pipeline { rules }
    }

    /// The default policy alone (see [`GateRules::default_policy`]).
    pub fn default_policy() -> Pipeline {
        Pipeline::from_rules(vec![GateRules::default_policy()])
    }

    /// Attach `rules` after the ones already there.
    pub fn attach(&mut self, rules: GateRules) {
        self.rules.push(rules);
    }

    /// Where the rules come from, in order.
    pub fn sources(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.source.as_str()).collect()
    }

    /// Pass `action` through every gate. The user's policy goes first: an action it permits
    /// counts as approved by the user (like an approval for the conversation) for the gates
    /// after it, so the default policy's asks and the skills' `approved=no` rows yield, and
    /// the walls, which never yield to an approval, hold.
    pub fn decide(&self, action: Action, ctx: &Context) -> Verdict {
        let gates = self.rules.iter().flat_map(|r| &r.gates);
        let (users, others): (Vec<_>, Vec<_>) = gates.partition(|g| g.user_policy());
        let mut run = Run {
            action,
            ctx: std::borrow::Cow::Borrowed(ctx),
            steps: Vec::new(),
            asks: Vec::new(),
            denies: Vec::new(),
        };
        for gate in users.into_iter().chain(others) {
            run.check(gate.as_ref());
        }
        let Run {
            action,
            steps,
            asks,
            denies,
            ..
        } = run;
        let outcome = if !denies.is_empty() {
            Outcome::Deny { reasons: denies }
        } else if !asks.is_empty() {
            Outcome::Ask {
                action,
                reasons: asks,
            }
        } else {
            Outcome::Allow(action)
        };
        Verdict { outcome, steps }
    }
}

/// One action on its way through the gates.
struct Run<'c> {
    action: Action,
    ctx: std::borrow::Cow<'c, Context>,
    steps: Vec<Step>,
    asks: Vec<String>,
    denies: Vec<String>,
}

impl Run<'_> {
    fn check(&mut self, gate: &dyn Gate) {
        let name = gate.name().to_string();
        // A panicking gate is a failing gate.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            gate.check(&self.action, &self.ctx)
        }))
        .unwrap_or_else(|_| Err("the gate panicked".to_string()));
        let (decision, reason) = match result {
            Ok(Decision::Allow) => ("allow", String::new()),
            Ok(Decision::Ask(reason)) => {
                self.asks.push(reason.clone());
                ("ask", reason)
            }
            Ok(Decision::Deny(reason)) => {
                self.denies.push(reason.clone());
                ("deny", reason)
            }
            Ok(Decision::Permit(reason)) => {
                let kind = self.action.kind();
                self.ctx.to_mut().approved.insert(kind);
                ("permit", reason)
            }
            Ok(Decision::Transform(new, reason)) => {
                self.action = new;
                ("transform", reason)
            }
            Err(failure) => {
                let reason = format!("gate {name} failed: {failure}");
                self.denies.push(reason.clone());
                ("deny", reason)
            }
        };
        self.steps.push(Step {
            gate: name,
            decision,
            reason,
        });
    }
}

/// Calls to tools the agent does not have are denied.
pub struct KnownTools;

impl Gate for KnownTools {
    fn name(&self) -> &str {
        "known-tools"
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Tool { name, .. } if !ctx.tools.contains(name) => {
                let mut known: Vec<&str> = ctx.tools.iter().map(String::as_str).collect();
                known.sort_unstable();
                Decision::Deny(format!(
                    "there is no tool named {name:?}; the tools are: {}",
                    known.join(", ")
                ))
            }
            _ => Decision::Allow,
        })
    }
}

/// Read-only tools run without asking; other tools ask unless approved.
pub struct ReadOnly;

impl Gate for ReadOnly {
    fn name(&self) -> &str {
        "read-only-tools"
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Tool { name, .. }
                if !ctx.read_only_tools.contains(name)
                    && !ctx.approved.contains(&action.kind()) =>
            {
                Decision::Ask(format!("tool {name} may change things"))
            }
            _ => Decision::Allow,
        })
    }
}

/// Any edit of an Org file asks, unless that kind of edit was approved for the conversation.
pub struct OrgEdits;

impl Gate for OrgEdits {
    fn name(&self) -> &str {
        "org-edits"
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Emacs(e) if e.edits_org() && !ctx.approved.contains(&action.kind()) => {
                Decision::Ask(format!("{} edits an Org file", action.kind()))
            }
            _ => Decision::Allow,
        })
    }
}

/// The model may not write into buffers: its answer reaches the chat's answer area as the
/// text it streams, so `insert` and `stream-append` could only write elsewhere — into a
/// note buffer the user then saves, or after the chat's `* You` where it would read back
/// as the user's own words. Approval for the conversation does not change that.
pub struct BufferWrites;

impl Gate for BufferWrites {
    fn name(&self) -> &str {
        "buffer-writes"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Emacs(e @ (EmacsAction::Insert { .. } | EmacsAction::StreamAppend { .. })) => {
                Decision::Deny(format!(
                    "{} writes into a buffer, which the model may not do: \
                     write the answer as text, it goes to the chat",
                    e.name()
                ))
            }
            _ => Decision::Allow,
        })
    }
}

/// A skill the agent drafted asks every time, whatever the user approved for the
/// conversation: each new skill changes what the agent does from then on, so each is read
/// and approved on its own.
pub struct NewSkills;

impl Gate for NewSkills {
    fn name(&self) -> &str {
        "new-skills"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Emacs(EmacsAction::CreateSkill { name, .. }) => Decision::Ask(format!(
                "create-skill adds the skill {name}: each new skill is approved on its own"
            )),
            _ => Decision::Allow,
        })
    }
}

/// Elisp evaluation runs only where the user's permissions enabled it (the tool is offered)
/// and then asks every time, whatever was approved for the conversation: code can do
/// anything Emacs can, so each piece is read before it runs.
pub struct ElispEval;

impl Gate for ElispEval {
    fn name(&self) -> &str {
        "elisp-eval"
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        Ok(match action {
            Action::Emacs(EmacsAction::EvalElisp { .. })
                if !ctx.tools.contains(crate::action::EVAL_ELISP_TOOL) =>
            {
                Decision::Deny("eval_elisp is off: the user's permissions do not enable it".into())
            }
            Action::Emacs(EmacsAction::EvalElisp { .. }) => {
                Decision::Ask("eval_elisp runs code in Emacs: each call is approved".into())
            }
            _ => Decision::Allow,
        })
    }
}

/// What the model saw in place of a secret (`[REDACTED:rule]`, the secret gate's) or of a
/// withheld property (`[withheld]`, the privacy rules'): written back into a note, it would
/// replace the real value the model never saw. An edit carrying one is refused, whatever
/// was approved: the model must leave that text as it is.
pub struct Placeholders;

impl Gate for Placeholders {
    fn name(&self) -> &str {
        "placeholders"
    }

    fn check(&self, action: &Action, _: &Context) -> Result<Decision, String> {
        let Action::Emacs(e) = action else {
            return Ok(Decision::Allow);
        };
        if !e.edits_org() || matches!(e, EmacsAction::CreateSkill { .. }) {
            return Ok(Decision::Allow);
        }
        let printed = crate::sexp::print(e.to_sexp().value());
        let marker = ["[REDACTED:", crate::notes::privacy::WITHHELD]
            .into_iter()
            .find(|m| printed.contains(m));
        Ok(match marker {
            Some(m) => Decision::Deny(format!(
                "the edit writes {m}…, the placeholder shown in place of a secret or a withheld \
                 value: it would destroy the real one; leave that text out of the edit"
            )),
            None => Decision::Allow,
        })
    }
}

#[cfg(test)]
mod tests;
