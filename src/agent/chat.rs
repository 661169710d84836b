//! Chat turns on the runtime: Emacs as the operator of a turn (questions to the chat buffer,
//! actions to the actuator, as events), the equipment a chat turn gets, the turn run on the
//! workers with its events sent to the chat and counted, and the request preview.

use super::answer::AnswerText;
use super::equipment::Equipment;
use super::event::{ChatUpdate, Event};
use super::operator::{Approval, BoxFuture, Operator, Question};
use super::options::ChatSetup;
use super::runtime::{panic_message, Pending, Runtime};
use super::turn::store_first::{answer_from_store, prepare, Source};
use super::turn::{
    related_notes, run_turn, step_request, Conversation, StepView, TurnConfig, TurnEvent,
};
use crate::action::{Action, EmacsAction};
use crate::context::added;
use crate::gates::audit::AuditLog;
use crate::gates::budget::Budget;
use crate::gates::command::CommandRules;
use crate::llm::cascade::{Cascade, Policy};
use crate::llm::completion::{Delta, ToolCall};
use crate::llm::http::{Backend, CancelToken, ChatClient, Message};
use crate::notes::scans::Scan;
use crate::notes::Notes;
use crate::sexp::Sexp;
use crate::skills::prompt::PromptFragment;
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Emacs as the operator of one chat turn: questions go to the chat buffer and Emacs
/// actions to the actuator, as events; the answers come back through [`Runtime::answer`]
/// and [`Runtime::actuated`].
struct EmacsOperator {
    rt: &'static Runtime,
    request: u64,
    conversation: String,
    interactive: bool,
}

impl Operator for EmacsOperator {
    fn ask(&self, call: &ToolCall, action: &Action, reasons: &[String]) -> BoxFuture<Approval> {
        self.ask_about(Question {
            call,
            action,
            reasons,
            once_only: false,
        })
    }

    fn ask_about(&self, question: Question<'_>) -> BoxFuture<Approval> {
        let Question {
            call,
            action,
            reasons,
            once_only,
        } = question;
        if !self.interactive {
            return Box::pin(async { Approval::Deny });
        }
        let (tx, rx) = oneshot::channel();
        let reply = self.rt.expect_reply(self.request, Pending::Answer(tx));
        self.rt.push(Event::Chat {
            request: self.request,
            conversation: self.conversation.clone(),
            update: ChatUpdate::Ask {
                reply,
                name: call.name.clone(),
                arguments: call.arguments.to_string(),
                action: action.to_sexp(),
                reasons: reasons.to_vec(),
                once_only,
            },
        });
        // A question nobody answers (the buffer was killed) is a refusal.
        Box::pin(async move { rx.await.unwrap_or(Approval::Deny) })
    }

    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        self.rt.actuate_in_emacs(self.request, action)
    }
}

fn chat_clients(backends: Vec<Backend>) -> Result<Vec<ChatClient>, String> {
    backends
        .into_iter()
        .map(ChatClient::new)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

impl Runtime {
    /// Offer the MCP servers' tools in `eq` (those not running start now, each within its
    /// timeout) and the skills' aliases of them; what to tell the user of the servers and
    /// tools left out ([`Equipment::offer_mcp`]).
    async fn offer_mcp(&self, eq: &mut Equipment) -> Vec<String> {
        let (offered, mut left_out) = self.mcp().offered().await;
        left_out.extend(eq.offer_mcp(offered));
        left_out
    }

    /// The equipment of a chat turn: the cascade of `backends`, the notes as they are now
    /// under the privacy rules in force, the edit tools, and what `setup` brings.
    pub(super) fn chat_equipment(
        &'static self,
        backends: Vec<Backend>,
        policy: Policy,
        setup: ChatSetup,
        operator: Arc<dyn Operator>,
    ) -> Result<Equipment, String> {
        let clients = chat_clients(backends)?;
        if clients.is_empty() {
            return Err("no backend is configured".to_string());
        }
        // Without limits the budget still keeps the day's ledger (`org-agent-status`).
        let (limits, fallback) = setup.budget.unwrap_or_default();
        let budget = Some(Budget {
            limits,
            ledger: self.ledger(),
            fallback: match fallback {
                None => None,
                Some(backends) => Some(Cascade::new(
                    chat_clients(backends)?,
                    self.health().clone(),
                    policy,
                )),
            },
        });
        let skill = setup.skill.clone();
        let llm = Cascade::new(clients, self.health().clone(), policy);
        // Where files may be read besides the notes: the directories the user's file rules
        // name, and the folder of messages set aside as files.
        let mut roots = setup.permissions.file_roots();
        roots.extend(setup.paste_dir.clone());
        let mut eq = Equipment::with(llm, notes_with_roots(self.notes(), &roots));
        if let Some(prompt) = setup.system_prompt {
            eq.prompts = vec![PromptFragment::users(prompt)];
        }
        eq.budget = budget;
        eq.prices = setup.prices;
        eq.semantic = self.semantic(setup.embedding)?;
        eq.operator = operator;
        eq.edit_tools = true;
        eq.offer_file_writes();
        eq.elisp_tools = setup.elisp_tools;
        eq.audit = setup.audit_file.map(AuditLog::new);
        eq.set_permissions(setup.permissions);
        if let Some(mut shell) = setup.shell {
            // Off unless the user's rules name it; then judged by the defaults and the
            // user's command rules together, in the notes and the directories rules name.
            if eq.permissions.enables("run_command") {
                for root in eq.permissions.file_roots() {
                    let root = PathBuf::from(root);
                    if !shell.roots.contains(&root) {
                        shell.roots.push(root);
                    }
                }
                let rules = CommandRules::with_user(eq.permissions.command_rules());
                eq.offer_shell(shell, rules);
            }
        }
        let skills = self.skills();
        if let Some(name) = skill {
            let Some(skill) = skills.iter().find(|s| s.name == name) else {
                return Err(format!("no active skill is named {name}"));
            };
            eq.use_skill_from_start(skill);
        }
        eq.attach_skills(skills)?;
        Ok(eq)
    }

    /// Compute what the next turn of conversation `id` would send for `text` to `backend`
    /// (the context as it is now, related notes by meaning included, which takes an
    /// embedding request): an [`Event::Preview`] with the exact request body. Nothing is
    /// sent to the LLM. Returns the request id at once.
    pub fn preview_async(
        &'static self,
        id: String,
        text: String,
        backend: Backend,
        cfg: TurnConfig,
        setup: ChatSetup,
    ) -> u64 {
        let request = self.next_id();
        let messages = self.conversation_messages(&id).unwrap_or_default();
        let skills_in_use = self.conversation_skills(&id);
        let plist_results = self.conversation_plist_results(&id);
        let skill = setup.skill.clone();
        self.run_async(request, |cancel| async move {
            let source = if cfg.store_first {
                Some(store_first_source(skill.as_deref(), &text)?)
            } else {
                None
            };
            let policy = Policy::default();
            let mut setup = setup;
            let given = std::mem::take(&mut setup.context_items);
            let eq = self.chat_equipment(
                vec![backend.clone()],
                policy,
                setup,
                Arc::new(super::operator::Unattended),
            )?;
            let (added, _left_out) = added::shown_all(&eq.notes, &given);
            // A store-first turn sends the phrasing request, not the notes context.
            if let Some(source) = source {
                if let Some(prepared) =
                    prepare(&eq, &text, source, &cfg).map_err(|e| e.to_string())?
                {
                    return Ok(preview_event(request, &backend, &prepared.request));
                }
            }
            let mut cfg = cfg;
            cfg.added = added;
            if cfg.related.is_empty() {
                cfg.related = related_notes(&eq, &text, &cfg, &cancel)
                    .await
                    .unwrap_or_default();
            }
            let mut conversation = Conversation {
                messages,
                plist_results,
                ..Conversation::default()
            };
            // The skills it loaded: their tools are in the request too.
            conversation.context.skills_in_use = skills_in_use;
            conversation.messages.push(Message::User(text));
            let step = StepView {
                // As the first step of a real turn: no tools when none are offered.
                tools_off: cfg.tool_rounds == Some(0),
                ..StepView::default()
            };
            let chat = step_request(&eq, &conversation, &cfg, step);
            Ok(preview_event(request, &backend, &chat))
        })
    }

    /// Why the text of `pasted` (a file's absolute name, or a buffer's name) is untrusted:
    /// a buffer with no file, a file outside the notes, a note with an untrusted node.
    /// `None` for a note the user wrote.
    fn pasted_provenance(&self, pasted: &str) -> Option<String> {
        if pasted.starts_with('/') {
            self.notes().path_provenance(pasted)
        } else {
            Some(format!("the buffer {pasted}, given with the question"))
        }
    }

    /// Run one chat turn of conversation `id` for `text` on the workers, asking `backends`
    /// in cascade order; updates arrive as [`Event::Chat`]. Returns the request id at once.
    pub fn chat_async(
        &'static self,
        id: String,
        text: String,
        backends: Vec<Backend>,
        policy: Policy,
        cfg: TurnConfig,
        setup: ChatSetup,
    ) -> u64 {
        let request = self.next_id();
        let cancel = CancelToken::new();
        self.register_chat(request, cancel.clone());
        let conversation = self.conversation(&id);
        self.log_turn_start(&id, &backends);
        let operator = Arc::new(EmacsOperator {
            rt: self,
            request,
            conversation: id.clone(),
            interactive: setup.interactive,
        });
        let send = move |update: ChatUpdate| {
            self.push(Event::Chat {
                request,
                conversation: id.clone(),
                update,
            })
        };
        let pasted = setup
            .pasted
            .as_deref()
            .and_then(|p| self.pasted_provenance(p));
        let skill = setup.skill.clone();
        let mut shown = match setup.answer_level {
            Some(level) => AnswerText::under(setup.answer_format, level),
            None => AnswerText::new(setup.answer_format),
        };
        self.spawn_future(async move {
            let outcome = AssertUnwindSafe(async {
                let source = if cfg.store_first {
                    Some(store_first_source(skill.as_deref(), &text)?)
                } else {
                    None
                };
                let mut setup = setup;
                let given = std::mem::take(&mut setup.context_items);
                let blind = backends
                    .first()
                    .filter(|b| !b.vision)
                    .map(|b| b.endpoint.name.clone());
                let mut eq = self.chat_equipment(backends, policy, setup, operator)?;
                let mut notices = self.offer_mcp(&mut eq).await;
                let (added, left_out) = added_for(&eq.notes, &given, blind.as_deref());
                let mut cfg = cfg;
                cfg.added = added;
                notices.extend(left_out);
                for why in notices {
                    send(ChatUpdate::Notice(why));
                }
                let mut conv = conversation.lock().await;
                conv.context.read_untrusted(pasted);
                let mut on_event = |e: TurnEvent| {
                    for e in shown.events(e) {
                        self.count(&e);
                        if let Some(u) = chat_update(e) {
                            send(u)
                        }
                    }
                };
                let before = conv.messages.len();
                let outcome = match source {
                    Some(source) => {
                        answer_from_store(
                            &eq,
                            &mut conv,
                            &text,
                            source,
                            &cfg,
                            &cancel,
                            &mut on_event,
                        )
                        .await
                    }
                    None => Ok(None),
                };
                let outcome = match outcome {
                    Ok(None) => run_turn(&eq, &mut conv, &text, &cfg, &cancel, on_event)
                        .await
                        .map(Some),
                    other => other,
                };
                if outcome.is_err() {
                    // A failed turn drops out of what the next one sends: a message too
                    // large for the backend would otherwise fail every turn after it.
                    conv.forget_from(before);
                }
                if let Some(rest) = shown.finish() {
                    send(ChatUpdate::Text(rest));
                }
                // The conversation keeps the model's words; the chat shows (and saves) them
                // as it showed them while they streamed.
                outcome
                    .map(|a| shown.answer(a.unwrap_or_default()))
                    .map_err(|e| e.to_string())
            })
            .catch_unwind()
            .await;
            // Whatever this turn still waited for from Emacs is dropped.
            self.end_chat(request);
            send(match outcome {
                Ok(Ok(answer)) => ChatUpdate::Done(answer),
                Ok(Err(_)) if cancel.is_cancelled() => ChatUpdate::Interrupted,
                Ok(Err(message)) => ChatUpdate::Error(message),
                Err(p) => {
                    ChatUpdate::Error(format!("internal error (panic): {}", panic_message(&*p)))
                }
            });
        });
        request
    }

    /// Log which backends a turn of conversation `id` starts with.
    fn log_turn_start(&self, id: &str, backends: &[Backend]) {
        let names: Vec<String> = backends
            .iter()
            .map(|b| {
                format!(
                    "{} ({} @ {})",
                    b.endpoint.name, b.endpoint.model, b.endpoint.base_url
                )
            })
            .collect();
        self.with_telemetry(|t| {
            t.log(
                "chat",
                format!("{id}: turn started with {}", names.join(", then ")),
            )
        });
    }

    /// Count a turn event in the telemetry: requests per backend, failures, tool calls.
    fn count(&self, e: &TurnEvent) {
        self.with_telemetry(|t| match e {
            TurnEvent::Request {
                backend: Some(backend),
                took,
                prompt_tokens,
                completion_tokens,
                ..
            } => t.llm_request(backend, true, *took, (*prompt_tokens, *completion_tokens)),
            TurnEvent::Failover { backend, error, .. } | TurnEvent::Failed { backend, error } => {
                t.llm_request(backend, false, Default::default(), (0, 0));
                t.log("chat", format!("{backend} failed: {error}"));
            }
            TurnEvent::ToolResult { name, ok, took, .. } => t.tool_call(name, *ok, *took),
            TurnEvent::Warning(m) => t.log("warning", m.clone()),
            _ => {}
        })
    }
}

/// The preview of `chat` sent to `backend`, exactly as it would be: past the secret gate,
/// with the backend's own cap on answer tokens.
fn preview_event(request: u64, backend: &Backend, chat: &crate::llm::http::ChatRequest) -> Event {
    let (chat, _) = crate::llm::http::redact_request(&crate::secrets::SecretGate::shared(), chat);
    let body = backend.request_body(&chat);
    Event::Preview {
        request,
        backend: backend.endpoint.name.clone(),
        url: backend.url(chat.stream),
        body: serde_json::to_string_pretty(&body).unwrap_or_default(),
    }
}

/// What a store-first turn answers from: the scan of a `/NAME` skill that is one, else the
/// question. A skill that needs tools is refused at once, before any request: the model
/// that answers store-first (the local one) calls none.
fn store_first_source<'a>(skill: Option<&str>, text: &'a str) -> Result<Source<'a>, String> {
    match skill {
        None => Ok(Source::Question(text)),
        Some(name) => scan_of_skill(name).map(Source::Scan).ok_or_else(|| {
            format!(
                "the skill {name} needs a model that calls tools, and the local model cannot: \
                 set `org-agent-backends' to a real backend (README.org, \"LLM backends and \
                 API keys\"). /daily-briefing, /inbox, /weekly-review, /gtd-integrity, \
                 /gardener, /ids and /secret-sentinel work here: the notes answer them."
            )
        }),
    }
}

/// The scan whose findings are the answer of the shipped skill `name`.
fn scan_of_skill(name: &str) -> Option<Scan> {
    match name {
        "gardener" => Some(Scan::Garden),
        "secret-sentinel" => Some(Scan::Secrets),
        other => Scan::from_name(other),
    }
}

/// What of a turn event the chat buffer shows.
fn chat_update(e: TurnEvent) -> Option<ChatUpdate> {
    Some(match e {
        TurnEvent::Delta(Delta::Text(t)) => ChatUpdate::Text(t),
        TurnEvent::Delta(Delta::Reasoning(t)) => ChatUpdate::Reasoning(t),
        // What a request used is reported once it ended, priced (below).
        TurnEvent::Delta(_) => return None,
        TurnEvent::Proposed {
            call,
            decision,
            reasons,
        } => ChatUpdate::Tool {
            name: call.name,
            arguments: call.arguments.to_string(),
            decision: decision.to_string(),
            reasons,
        },
        TurnEvent::ToolResult {
            name, ok, content, ..
        } => ChatUpdate::ToolResult { name, ok, content },
        TurnEvent::ErrorFedBack(m) => ChatUpdate::Retrying(m),
        TurnEvent::Retry {
            backend,
            after,
            error,
        } => ChatUpdate::Retrying(format!(
            "{backend}: {error}; asking it again in {:.1} s",
            after.as_secs_f64()
        )),
        TurnEvent::Failover {
            backend,
            error,
            streamed,
            next,
        } => ChatUpdate::Failover {
            backend,
            error,
            next,
            discard: streamed,
        },
        TurnEvent::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        } => ChatUpdate::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        },
        TurnEvent::Warning(m) => ChatUpdate::Notice(m),
        TurnEvent::Request {
            spent: Some(spent), ..
        } => ChatUpdate::Usage(spent),
        TurnEvent::Request { .. } | TurnEvent::Failed { .. } => return None,
    })
}

/// `notes` with the directories the user's file rules name (`(allow read_file "~/src/**")`
/// `notes` with `extra` directories added to where files may be read and written (the
/// ones the user's file rules name: `(allow read_file "~/src/**")` opens `~/src`).
fn notes_with_roots(notes: crate::notes::Notes, extra: &[String]) -> crate::notes::Notes {
    match notes.confinement() {
        Some(c) if !extra.is_empty() => {
            let mut c = (**c).clone();
            for root in extra {
                c.add_root(root);
            }
            notes.confined(Arc::new(c))
        }
        _ => notes,
    }
}

/// What the user added, as the notes show it, and a line for the user on each item left
/// out. An image goes only to a model that sees images: with `blind` (the name of a first
/// backend that does not), images are left out and said to be, rather than letting the
/// answer pretend to have seen them.
fn added_for(
    notes: &Notes,
    given: &[added::GivenItem],
    blind: Option<&str>,
) -> (Vec<added::AddedItem>, Vec<String>) {
    let (mut items, mut left_out) = added::shown_all(notes, given);
    if let Some(name) = blind {
        items.retain(|item| {
            if item.image.is_none() {
                return true;
            }
            left_out.push(format!(
                "{}: the backend {name} is not marked as seeing images (:vision t): left out",
                item.label
            ));
            false
        });
    }
    (items, left_out)
}
