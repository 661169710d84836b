//! The cascade: the backends a user has, tried in order, so the agent keeps working when one
//! is down, rate-limited or answering garbage.
//!
//! * A backend is tried; on a failure that another backend may not share (connection errors,
//!   timeouts, HTTP 401/403/404/408/409/429/5xx/529, malformed output, a provider error
//!   mid-stream) the next one is tried. Request errors that every backend would repeat (HTTP
//!   400/413/422, tool arguments the model got wrong) and cancellation end the request.
//! * When the server says to come back soon (`retry-after` ≤ [`Policy::retry_cap`]) the same
//!   backend is tried again first, once; a long wait is never waited for.
//! * A backend that failed is demoted for [`Policy::cooldown`]: meanwhile it is tried after
//!   the others. The demotions live in [`Health`], shared by every turn.
//! * A failure after part of an answer streamed is reported as [`CascadeEvent::Failover`]
//!   with `streamed: true`, so the caller can drop the partial answer before the next
//!   backend starts its own.
//!
//! Tiers ([`Tier`]) pick which backends (and models) a request may use.

use crate::llm::completion::{Completion, Delta};
use crate::llm::error::LlmError;
use crate::llm::http::{Backend, CancelToken, ChatClient, ChatRequest};
use crate::secrets::Hits;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How much thinking a request needs; each maps to backends in the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Quick, cheap answers (classification, short edits).
    Reflex,
    /// The default: conversation and tool use.
    Cognition,
    /// Hard problems worth a large model.
    Reasoning,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Reflex, Tier::Cognition, Tier::Reasoning];

    pub fn from_name(name: &str) -> Option<Tier> {
        Tier::ALL
            .into_iter()
            .find(|t| t.name() == name.trim_start_matches(':'))
    }

    pub fn name(self) -> &'static str {
        match self {
            Tier::Reflex => "reflex",
            Tier::Cognition => "cognition",
            Tier::Reasoning => "reasoning",
        }
    }
}

/// How the cascade retries and demotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long a failed backend is tried last.
    pub cooldown: Duration,
    /// The longest `retry-after` worth waiting for before trying the same backend again.
    pub retry_cap: Duration,
}

impl Default for Policy {
    /// Ten minutes of cool-down; waits of up to 10 s are waited for.
    fn default() -> Self {
        Policy {
            cooldown: Duration::from_secs(600),
            retry_cap: Duration::from_secs(10),
        }
    }
}

/// Which backends failed recently: backend name → end of its cool-down.
#[derive(Debug, Default)]
pub struct Health {
    demoted: Mutex<HashMap<String, Instant>>,
}

impl Health {
    pub fn demote(&self, backend: &str, cooldown: Duration) {
        self.demoted
            .lock()
            .insert(backend.to_owned(), Instant::now() + cooldown);
    }

    pub fn restore(&self, backend: &str) {
        self.demoted.lock().remove(backend);
    }

    /// Whether `backend` is in its cool-down now.
    pub fn is_demoted(&self, backend: &str) -> bool {
        let mut demoted = self.demoted.lock();
        match demoted.get(backend) {
            Some(&until) if until > Instant::now() => true,
            Some(_) => {
                demoted.remove(backend);
                false
            }
            None => false,
        }
    }
}

/// What happens while the cascade works, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum CascadeEvent {
    /// A piece of the answer of the backend now answering.
    Delta(Delta),
    /// The same backend is tried again after waiting what it asked for.
    Retry {
        backend: String,
        after: Duration,
        error: LlmError,
    },
    /// `backend` failed; the next one (if any) is tried. `streamed`: part of its answer had
    /// already been passed on as deltas, and must be dropped.
    Failover {
        backend: String,
        error: LlmError,
        streamed: bool,
        next: Option<String>,
    },
    /// `backend` failed in a way no other backend is asked about (the request itself is
    /// wrong: HTTP 400, 413, 422): the request ends with this error. Not sent for a
    /// cancellation.
    Failed { backend: String, error: LlmError },
    /// The secret gate withheld secrets from the request (counts by rule), before it was
    /// sent; reported once per request, whichever backends it went to.
    Redacted(Hits),
    /// Several backends were asked the same (consensus): how many agreed, of how many
    /// answered, and what each proposed.
    Consensus {
        agreed: usize,
        answered: usize,
        tie: bool,
        proposals: Vec<String>,
    },
}

/// The answer to [`Cascade::ask`], and why the user should decide about it when the
/// backends asked in consensus were split evenly.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub answer: Answer,
    pub tie: Option<String>,
}

/// A completion and who gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub completion: Completion,
    /// The backend's name.
    pub backend: String,
    pub model: String,
}

/// The backends of one request, in the order configured.
#[derive(Debug, Clone)]
pub struct Cascade {
    members: Vec<ChatClient>,
    health: Arc<Health>,
    policy: Policy,
}

impl Cascade {
    pub fn new(members: Vec<ChatClient>, health: Arc<Health>, policy: Policy) -> Cascade {
        Cascade {
            members,
            health,
            policy,
        }
    }

    /// A cascade of one backend (no cool-down to share).
    pub fn single(client: ChatClient) -> Cascade {
        Cascade::new(vec![client], Arc::default(), Policy::default())
    }

    /// The backends in the order they will be tried now: configured order, demoted ones
    /// last (in configured order among themselves).
    pub fn order(&self) -> Vec<&ChatClient> {
        let (mut fine, demoted): (Vec<&ChatClient>, Vec<&ChatClient>) = self
            .members
            .iter()
            .partition(|c| !self.health.is_demoted(&c.backend().endpoint.name));
        fine.extend(demoted);
        fine
    }

    /// The backend asked first now (for estimating a request's cost).
    pub fn first_backend(&self) -> Option<&Backend> {
        self.order().first().map(|c| c.backend())
    }

    /// The backend named `name` (the one that answered, for what it cost).
    pub fn backend_named(&self, name: &str) -> Option<&Backend> {
        self.members
            .iter()
            .map(|c| c.backend())
            .find(|b| b.endpoint.name == name)
    }

    pub fn members(&self) -> &[ChatClient] {
        &self.members
    }

    /// Asks for an answer to `request`: from `voters` backends at once when more than one
    /// may vote (the majority's proposal wins, its text passed on as if it had streamed),
    /// else down the cascade ([`Cascade::chat`]).
    pub async fn ask(
        &self,
        request: &ChatRequest,
        voters: usize,
        cancel: &CancelToken,
        mut on_event: impl FnMut(CascadeEvent),
    ) -> Result<Reply, LlmError> {
        let voters = voters.min(self.members.len());
        if voters <= 1 {
            let answer = self.chat(request, cancel, on_event).await?;
            return Ok(Reply { answer, tie: None });
        }
        let c = self.consensus(request, voters, cancel).await?;
        if !c.redacted.is_empty() {
            on_event(CascadeEvent::Redacted(c.redacted.clone()));
        }
        let tie = c
            .tie
            .then(|| format!("the backends disagreed ({})", c.proposals.join("; ")));
        on_event(CascadeEvent::Consensus {
            agreed: c.agreed,
            answered: c.answered,
            tie: c.tie,
            proposals: c.proposals,
        });
        let completion = &c.answer.completion;
        if !completion.reasoning.is_empty() {
            on_event(CascadeEvent::Delta(Delta::Reasoning(
                completion.reasoning.clone(),
            )));
        }
        if !completion.text.is_empty() {
            on_event(CascadeEvent::Delta(Delta::Text(completion.text.clone())));
        }
        Ok(Reply {
            answer: c.answer,
            tie,
        })
    }

    /// Sends `request` down the cascade until a backend answers. With one backend, its own
    /// error comes back as it is; with several, [`LlmError::AllFailed`] lists each one's.
    pub async fn chat(
        &self,
        request: &ChatRequest,
        cancel: &CancelToken,
        mut on_event: impl FnMut(CascadeEvent),
    ) -> Result<Answer, LlmError> {
        let order = self.order();
        if order.is_empty() {
            return Err(LlmError::Config("no backend is configured".to_owned()));
        }
        let mut failures: Vec<(String, LlmError)> = Vec::new();
        let mut redaction_reported = false;
        for (i, client) in order.iter().enumerate() {
            let b = client.backend();
            let mut retried = false;
            loop {
                let mut streamed = false;
                let mut withheld: Option<Hits> = None;
                let result = client
                    .chat_gated(
                        request,
                        cancel,
                        |hits| withheld = Some(hits.clone()),
                        |d| {
                            streamed = true;
                            on_event(CascadeEvent::Delta(d))
                        },
                    )
                    .await;
                if let Some(hits) = withheld.filter(|_| !redaction_reported) {
                    redaction_reported = true;
                    on_event(CascadeEvent::Redacted(hits));
                }
                let error = match result {
                    Ok(completion) => {
                        self.health.restore(&b.endpoint.name);
                        return Ok(Answer {
                            completion,
                            backend: b.endpoint.name.clone(),
                            model: b.endpoint.model.clone(),
                        });
                    }
                    Err(e) if !e.worth_another_backend() => {
                        if !matches!(e, LlmError::Cancelled) {
                            on_event(CascadeEvent::Failed {
                                backend: b.endpoint.name.clone(),
                                error: e.clone(),
                            });
                        }
                        return Err(e);
                    }
                    Err(e) => e,
                };
                if let Some(after) = error.retry_after() {
                    if !retried && !streamed && after <= self.policy.retry_cap {
                        retried = true;
                        on_event(CascadeEvent::Retry {
                            backend: b.endpoint.name.clone(),
                            after,
                            error,
                        });
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Err(LlmError::Cancelled),
                            () = tokio::time::sleep(after) => {}
                        }
                        continue;
                    }
                }
                self.health.demote(&b.endpoint.name, self.policy.cooldown);
                on_event(CascadeEvent::Failover {
                    backend: b.endpoint.name.clone(),
                    error: error.clone(),
                    streamed,
                    next: order.get(i + 1).map(|c| c.backend().endpoint.name.clone()),
                });
                failures.push((b.endpoint.name.clone(), error));
                break;
            }
        }
        if failures.len() == 1 {
            if let Some((_, e)) = failures.pop() {
                return Err(e);
            }
        }
        Err(LlmError::AllFailed(
            failures
                .into_iter()
                .map(|(name, e)| format!("{name}: {e}"))
                .collect(),
        ))
    }
}

/// A backend named in a tier, with the model to use instead of its own, if any.
pub type TierMember = (String, Option<String>);

/// The configured backends and which of them serve each tier.
#[derive(Debug, Clone, Default)]
pub struct Routing {
    /// The cascade: the backends asked in order, for a tier without an entry.
    pub backends: Vec<Backend>,
    /// Every configured backend, for tiers that name one left out of the cascade (empty:
    /// the cascade's backends are all there is).
    pub pool: Vec<Backend>,
    /// Per tier, the backends to use by name, each with an optional model override; a tier
    /// that is not listed uses every backend.
    pub tiers: Vec<(Tier, Vec<TierMember>)>,
}

impl Routing {
    /// The backends for `tier`, in order; an unknown name in the tier's list is an error
    /// (a typo must not silently route elsewhere).
    pub fn backends_for(&self, tier: Tier) -> Result<Vec<Backend>, LlmError> {
        let Some((_, names)) = self.tiers.iter().find(|(t, _)| *t == tier) else {
            return Ok(self.backends.clone());
        };
        names
            .iter()
            .map(|(name, model)| {
                let mut b = self
                    .backends
                    .iter()
                    .chain(&self.pool)
                    .find(|b| &b.endpoint.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        LlmError::Config(format!(
                            "tier {} names backend {name:?}, which is not configured",
                            tier.name()
                        ))
                    })?;
                if let Some(model) = model {
                    b.endpoint.model = model.clone();
                    // The same server with another model is another member for cool-downs.
                    b.endpoint.name = format!("{name}/{model}");
                }
                Ok(b)
            })
            .collect()
    }
}

/// What several backends proposed for the same request, and which proposal won.
#[derive(Debug, Clone, PartialEq)]
pub struct Consensus {
    /// The answer of the first backend (in cascade order) whose proposal won.
    pub answer: Answer,
    /// How many backends proposed the winning thing, of how many answered.
    pub agreed: usize,
    pub answered: usize,
    /// No proposal had more backers than every other: the user should decide.
    pub tie: bool,
    /// Each backend's proposal, in one line each ("name: proposal"), failures included.
    pub proposals: Vec<String>,
    /// What the secret gate withheld from the request (the same for every backend asked).
    pub redacted: Hits,
}

/// A proposal reduced to what must agree: the tool calls by name and canonical arguments
/// (order of calls and of keys does not matter, ids do not), or "an answer in prose" (two
/// prose answers never read the same, and need no vote).
pub fn proposal_key(c: &Completion) -> String {
    if c.tool_calls.is_empty() {
        return "(an answer in prose)".to_owned();
    }
    let mut calls: Vec<String> = c
        .tool_calls
        .iter()
        .map(|t| format!("{}({})", t.name, canonical_json(&t.arguments)))
        .collect();
    calls.sort();
    calls.join(", ")
}

/// JSON with object keys sorted and strings trimmed, so equal arguments print equal.
fn canonical_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    // Iterative: arguments come from the network.
    enum Step<'a> {
        Value(&'a Value),
        Text(&'static str),
        Key(&'a str),
    }
    let mut out = String::new();
    let mut stack = vec![Step::Value(v)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(t) => out.push_str(t),
            Step::Key(k) => {
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
            }
            Step::Value(Value::Object(map)) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                stack.push(Step::Text("}"));
                for (i, k) in keys.iter().enumerate().rev() {
                    if let Some(item) = map.get(*k) {
                        stack.push(Step::Value(item));
                    }
                    stack.push(Step::Key(k));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
                stack.push(Step::Text("{"));
            }
            Step::Value(Value::Array(items)) => {
                stack.push(Step::Text("]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
                stack.push(Step::Text("["));
            }
            Step::Value(Value::String(s)) => {
                out.push_str(&serde_json::to_string(s.trim()).unwrap_or_default())
            }
            Step::Value(other) => out.push_str(&other.to_string()),
        }
    }
    out
}

impl Cascade {
    /// Asks the first `k` backends (in the order [`Cascade::order`] gives) in parallel and
    /// takes the proposal most of them made. Deltas are not streamed (the answers race); the
    /// winner's text comes back whole. Fails only when every backend failed.
    pub async fn consensus(
        &self,
        request: &ChatRequest,
        k: usize,
        cancel: &CancelToken,
    ) -> Result<Consensus, LlmError> {
        let asked: Vec<&ChatClient> = self.order().into_iter().take(k.max(1)).collect();
        let withheld_slot: parking_lot::Mutex<Hits> = parking_lot::Mutex::default();
        let withheld = &withheld_slot;
        let results = futures_util::future::join_all(asked.iter().map(|c| async move {
            c.chat_gated(request, cancel, |h| *withheld.lock() = h.clone(), |_| {})
                .await
        }))
        .await;
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        let mut proposals = Vec::new();
        let mut answers: Vec<(String, Answer)> = Vec::new();
        let mut failures = Vec::new();
        for (client, result) in asked.iter().zip(results) {
            let b = client.backend();
            match result {
                Ok(completion) => {
                    self.health.restore(&b.endpoint.name);
                    let key = proposal_key(&completion);
                    proposals.push(format!("{}: {key}", b.endpoint.name));
                    answers.push((
                        key,
                        Answer {
                            completion,
                            backend: b.endpoint.name.clone(),
                            model: b.endpoint.model.clone(),
                        },
                    ));
                }
                Err(e) => {
                    if e.worth_another_backend() {
                        self.health.demote(&b.endpoint.name, self.policy.cooldown);
                    }
                    proposals.push(format!("{}: failed ({e})", b.endpoint.name));
                    failures.push(format!("{}: {e}", b.endpoint.name));
                }
            }
        }
        // Votes per proposal, in the order first proposed (so a tie goes to the earlier
        // backend, which the user put first).
        let mut votes: Vec<(String, usize)> = Vec::new();
        for (key, _) in &answers {
            match votes.iter_mut().find(|(k, _)| k == key) {
                Some((_, n)) => *n += 1,
                None => votes.push((key.clone(), 1)),
            }
        }
        let Some(best) = votes.iter().map(|(_, n)| *n).max() else {
            return Err(LlmError::AllFailed(failures));
        };
        let winners: Vec<&String> = votes
            .iter()
            .filter(|(_, n)| *n == best)
            .map(|(k, _)| k)
            .collect();
        let tie = winners.len() > 1;
        let key = winners[0].clone();
        let answered = answers.len();
        let answer = answers
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, a)| a)
            .ok_or_else(|| LlmError::AllFailed(failures.clone()))?;
        Ok(Consensus {
            redacted: withheld_slot.into_inner(),
            answer,
            agreed: best,
            answered,
            tie,
            proposals,
        })
    }
}
