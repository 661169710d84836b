//! What workers report back to Emacs. Plain data: the Emacs layer turns each into a plist
//! when the main thread drains the queue.

use crate::sexp::{Sexp, Value};
use crate::skills::tools::ElispCode;
use crate::store::{DirReport, IngestReport, ReconcileReport};

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A buffer or file was ingested (or found unchanged).
    Ingested { request: u64, report: IngestReport },
    /// A file that no longer exists left the store (found by a reconcile), with its nodes.
    Removed {
        request: u64,
        file: String,
        nodes: usize,
    },
    /// A reconcile finished (its changes came first, each as `Ingested` or `Removed`).
    Reconciled {
        request: u64,
        report: ReconcileReport,
    },
    /// A newer ingest of the same file was requested before this one finished.
    Superseded { request: u64, file: String },
    /// Progress of a directory ingest.
    Progress {
        request: u64,
        done: usize,
        total: usize,
        file: String,
    },
    /// A directory ingest finished (or was cancelled).
    DirectoryDone { request: u64, report: DirReport },
    /// Something happened in a chat turn (see [`ChatUpdate`]).
    Chat {
        request: u64,
        conversation: String,
        update: ChatUpdate,
    },
    /// Run `action` (an Emacs action plist) with the actuator and send its result back
    /// with `org-agent--actuated` and `reply`.
    Actuate {
        request: u64,
        reply: u64,
        action: Sexp,
    },
    /// The vector index was brought up to date with the store.
    Embedded {
        request: u64,
        report: crate::agent::semantic::UpdateReport,
    },
    /// The notes closest in meaning to a search text: (id, similarity), best first.
    SearchResults {
        request: u64,
        hits: Vec<(String, f32)>,
    },
    /// The models a backend offers.
    Models {
        request: u64,
        backend: String,
        models: Vec<crate::llm::models::ModelInfo>,
    },
    /// What the next request would send (`org-agent-context-preview`).
    Preview {
        request: u64,
        backend: String,
        url: String,
        body: String,
    },
    /// The skill directories were loaded: the active skills (name, description, file,
    /// source) in dependency order, and the inactive ones with why.
    SkillsLoaded {
        request: u64,
        active: Vec<SkillSummary>,
        inactive: Vec<(String, String)>,
    },
    /// Something happened in a background run of `skill` (see [`RunUpdate`]).
    SkillRun {
        request: u64,
        skill: String,
        update: RunUpdate,
    },
    /// A trigger of `skill` fired in the store (a save changed a matching note, a schedule
    /// came round): Emacs starts the run (`org-agent-skill-run`), since the backends' keys
    /// live there. `provenance` says what fired.
    SkillTriggered { skill: String, provenance: String },
    /// What an MCP request (a restart, a listing, a read) came to.
    Mcp { request: u64, value: Sexp },
    /// A request failed; `file` when it concerns one.
    Failed {
        request: u64,
        file: Option<String>,
        message: String,
    },
}

/// An [`Event::Mcp`] as Emacs gets it: `(:type mcp :request N :value VALUE)`.
fn mcp_plist(request: u64, value: &Sexp) -> Sexp {
    Plist::new("mcp", request)
        .put("value", crate::sexp::clone_value(value.value()))
        .done()
}

/// An active skill as Emacs lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    pub file: String,
    pub source: &'static str,
    /// Its `:ON:` words.
    pub triggers: Vec<&'static str>,
    /// Its tests that ran at load (all passed, or it would not be active).
    pub tests: usize,
    /// Its Elisp tools, for Emacs to define (a shipped or user skill's only).
    pub elisp_tools: Vec<ElispCode>,
}

impl SkillSummary {
    pub fn of(skill: &crate::skills::Skill) -> SkillSummary {
        SkillSummary {
            name: skill.name.clone(),
            description: skill.description.clone(),
            file: skill.file.clone(),
            source: skill.source.name(),
            triggers: skill.trigger.on.iter().map(|on| on.name()).collect(),
            tests: skill
                .tests
                .iter()
                .filter(|t| t.kind == "gate" || t.kind == "trigger")
                .count(),
            elisp_tools: crate::skills::tools::elisp_code(skill),
        }
    }
}

/// What a background run of a skill reports.
#[derive(Clone, Debug, PartialEq)]
pub enum RunUpdate {
    /// The run began, because of `provenance`.
    Started { provenance: String },
    /// An action the gates asked about went to the approvals queue as `proposal`.
    Queued {
        proposal: u64,
        tool: String,
        action: Sexp,
    },
    /// The run ended: its answer, or why it failed; the proposals it queued.
    Finished {
        ok: bool,
        message: String,
        queued: Vec<u64>,
        took: std::time::Duration,
    },
}

/// What a chat turn reports to the chat buffer.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatUpdate {
    /// A piece of the answer.
    Text(String),
    /// A piece of the model's reasoning (shown folded).
    Reasoning(String),
    /// A tool call and what the gates decided.
    Tool {
        name: String,
        arguments: String,
        decision: String,
        reasons: Vec<String>,
    },
    /// A tool's result as sent back to the LLM.
    ToolResult {
        name: String,
        ok: bool,
        content: String,
    },
    /// The gates ask the user about an action; the answer goes back with
    /// `org-agent--answer` and `reply`.
    Ask {
        reply: u64,
        name: String,
        arguments: String,
        action: Sexp,
        reasons: Vec<String>,
        /// Approving for the conversation would spare no later question.
        once_only: bool,
    },
    /// An error was fed back to the LLM, or a backend is asked again after a wait.
    Retrying(String),
    /// A backend failed and the next is asked; `discard`: drop the answer text streamed in
    /// this step, it came from the failed backend.
    Failover {
        backend: String,
        error: String,
        next: Option<String>,
        discard: bool,
    },
    /// Several backends were asked (consensus mode): how many agreed, whether it was a tie
    /// (the user decides), and each one's proposal.
    Consensus {
        agreed: usize,
        answered: usize,
        tie: bool,
        proposals: Vec<String>,
    },
    /// Something the user should know about the turn (a request sent to a cheaper tier over
    /// budget, related notes unavailable).
    Notice(String),
    /// What the last request used and cost (see [`crate::llm::prices`]).
    Usage(crate::agent::turn::Spent),
    /// The turn ended with this answer.
    Done(String),
    /// The turn ended with an error.
    Error(String),
    /// The turn was interrupted by the user (`org-agent-interrupt`).
    Interrupted,
}

/// Builds one event plist: `(:type TYPE :request N …)`.
struct Plist(Vec<Value>);

impl Plist {
    fn new(kind: &str, request: u64) -> Plist {
        Plist(vec![
            Value::keyword("type"),
            Value::symbol(kind),
            Value::keyword("request"),
            Value::from(request),
        ])
    }

    fn put(mut self, key: &str, value: Value) -> Plist {
        self.0.push(Value::keyword(key));
        self.0.push(value);
        self
    }

    fn text(self, key: &str, text: &str) -> Plist {
        self.put(key, Value::string(text))
    }

    fn count(self, key: &str, n: usize) -> Plist {
        self.put(key, Value::from(n as u64))
    }

    fn done(self) -> Sexp {
        Sexp::from(Value::list(self.0))
    }
}

fn strings(items: &[String]) -> Value {
    Value::list(
        items
            .iter()
            .map(|s| Value::string(s.as_str()))
            .collect::<Vec<_>>(),
    )
}

fn opt_text(text: Option<&str>) -> Value {
    text.map(Value::string).unwrap_or(Value::Nil)
}

impl Event {
    /// The event as the plist Elisp dispatches on (`:type`, `:request`, then its fields).
    /// File names are the store's keys here; the Emacs layer turns the one under `:file`
    /// (see [`Event::file`]) into Emacs's own file name.
    pub fn to_sexp(&self) -> Sexp {
        match self {
            Event::Ingested { request, report } => Plist::new("ingested", *request)
                .text("file", &report.file)
                .count("nodes", report.nodes)
                .put("changed", Value::Bool(report.changed))
                .count("new-versions", report.new_versions)
                .done(),
            Event::Removed {
                request,
                file,
                nodes,
            } => Plist::new("removed", *request)
                .text("file", file)
                .count("nodes", *nodes)
                .done(),
            Event::Reconciled { request, report } => reconciled(*request, report),
            Event::Superseded { request, file } => {
                Plist::new("superseded", *request).text("file", file).done()
            }
            Event::Progress {
                request,
                done,
                total,
                file,
            } => Plist::new("progress", *request)
                .count("done", *done)
                .count("total", *total)
                .text("file", file)
                .done(),
            Event::DirectoryDone { request, report } => directory_done(*request, report),
            Event::Chat {
                request,
                conversation,
                update,
            } => update
                .fields(Plist::new("chat", *request).text("conversation", conversation))
                .done(),
            Event::Actuate {
                request,
                reply,
                action,
            } => Plist::new("actuate", *request)
                .put("reply", Value::from(*reply))
                .put("action", crate::sexp::clone_value(action.value()))
                .done(),
            Event::Embedded { request, report } => Plist::new("embedded", *request)
                .count("candidates", report.candidates)
                .count("embedded", report.embedded)
                .count("dropped", report.dropped)
                .count("refused", report.refused)
                .count("requests", report.requests)
                .count("indexed", report.indexed)
                .count("secrets-withheld", report.secrets_withheld)
                .done(),
            Event::SearchResults { request, hits } => {
                let hits = hits
                    .iter()
                    .map(|(id, score)| {
                        Value::cons(Value::string(id.as_str()), Value::from(*score as f64))
                    })
                    .collect::<Vec<_>>();
                Plist::new("search-results", *request)
                    .put("hits", Value::list(hits))
                    .done()
            }
            Event::Mcp { request, value } => mcp_plist(*request, value),
            Event::Models {
                request,
                backend,
                models,
            } => {
                let models = models
                    .iter()
                    .map(|m| {
                        Value::cons(
                            Value::string(m.id.as_str()),
                            opt_text(m.description.as_deref()),
                        )
                    })
                    .collect::<Vec<_>>();
                Plist::new("models", *request)
                    .text("backend", backend)
                    .put("models", Value::list(models))
                    .done()
            }
            Event::Preview {
                request,
                backend,
                url,
                body,
            } => Plist::new("preview", *request)
                .text("backend", backend)
                .text("url", url)
                .text("body", body)
                .done(),
            Event::SkillsLoaded {
                request,
                active,
                inactive,
            } => skills_loaded(*request, active, inactive),
            Event::SkillRun {
                request,
                skill,
                update,
            } => skill_run(*request, skill, update),
            Event::SkillTriggered { skill, provenance } => Plist::new("skill-triggered", 0)
                .text("skill", skill)
                .text("provenance", provenance)
                .done(),
            Event::Failed {
                request,
                file,
                message,
            } => Plist::new("failed", *request)
                .put("file", opt_text(file.as_deref()))
                .text("message", message)
                .done(),
        }
    }

    /// The file name under the event's `:file`, if it has one.
    pub fn file(&self) -> Option<&str> {
        match self {
            Event::Ingested { report, .. } => Some(&report.file),
            Event::Superseded { file, .. }
            | Event::Progress { file, .. }
            | Event::Removed { file, .. } => Some(file),
            Event::Failed { file, .. } => file.as_deref(),
            _ => None,
        }
    }
}

/// `(:type directory-done :request N :files N :ingested N …)`.
fn directory_done(request: u64, report: &DirReport) -> Sexp {
    Plist::new("directory-done", request)
        .count("files", report.files)
        .count("ingested", report.ingested)
        .count("unchanged", report.unchanged)
        .count("removed", report.removed)
        .count("nodes", report.nodes)
        .put("errors", strings(&report.errors))
        .put("cancelled", Value::Bool(report.cancelled))
        .done()
}

/// `(:type reconciled :request N :files N :confirmed N :ingested N :removed N …)`: counts
/// only; each file came as an event of its own, with its name as Emacs spells it.
fn reconciled(request: u64, report: &ReconcileReport) -> Sexp {
    Plist::new("reconciled", request)
        .count("files", report.files)
        .count("confirmed", report.confirmed)
        .count("ingested", report.ingested.len())
        .count("removed", report.removed.len())
        .put("errors", strings(&report.errors))
        .put("cancelled", Value::Bool(report.cancelled))
        .done()
}

/// `(:type skill-run :request N :skill NAME :kind started|queued|finished …)`.
fn skill_run(request: u64, skill: &str, update: &RunUpdate) -> Sexp {
    let p = Plist::new("skill-run", request).text("skill", skill);
    match update {
        RunUpdate::Started { provenance } => p
            .put("kind", Value::symbol("started"))
            .text("provenance", provenance),
        RunUpdate::Queued {
            proposal,
            tool,
            action,
        } => p
            .put("kind", Value::symbol("queued"))
            .put("proposal", Value::from(*proposal))
            .text("tool", tool)
            .put("action", action.value().clone()),
        RunUpdate::Finished {
            ok,
            message,
            queued,
            took,
        } => p
            .put("kind", Value::symbol("finished"))
            .put(
                "outcome",
                Value::symbol(if *ok { "done" } else { "failed" }),
            )
            .text("message", message)
            .put(
                "queued",
                Value::list(queued.iter().map(|&n| Value::from(n)).collect::<Vec<_>>()),
            )
            .put("seconds", Value::from(took.as_secs_f64())),
    }
    .done()
}

/// `(:type skills-loaded :request N :active ((:name :description :file :source :triggers
/// :tests-passed :elisp-tools)…)
/// :inactive ((NAME . REASON)…))`, `:source` a symbol (`user`, `shipped`, `imported`…).
fn skills_loaded(request: u64, active: &[SkillSummary], inactive: &[(String, String)]) -> Sexp {
    let active = active
        .iter()
        .map(|s| {
            Value::list(vec![
                Value::keyword("name"),
                Value::string(s.name.as_str()),
                Value::keyword("description"),
                Value::string(s.description.as_str()),
                Value::keyword("file"),
                Value::string(s.file.as_str()),
                Value::keyword("source"),
                Value::symbol(s.source),
                Value::keyword("triggers"),
                Value::list(
                    s.triggers
                        .iter()
                        .map(|t| Value::symbol(*t))
                        .collect::<Vec<_>>(),
                ),
                Value::keyword("tests-passed"),
                Value::from(s.tests as u64),
                Value::keyword("elisp-tools"),
                Value::list(s.elisp_tools.iter().map(elisp_code).collect::<Vec<_>>()),
            ])
        })
        .collect::<Vec<_>>();
    let inactive = inactive
        .iter()
        .map(|(name, why)| Value::cons(Value::string(name.as_str()), Value::string(why.as_str())))
        .collect::<Vec<_>>();
    Plist::new("skills-loaded", request)
        .put("active", Value::list(active))
        .put("inactive", Value::list(inactive))
        .done()
}

/// `(:name NAME :args ("ARG"…) :code TEXT)`: an Elisp tool of a skill for Emacs to define.
fn elisp_code(tool: &ElispCode) -> Value {
    Value::list(vec![
        Value::keyword("name"),
        Value::string(tool.name.as_str()),
        Value::keyword("args"),
        Value::list(
            tool.args
                .iter()
                .map(|a| Value::string(a.as_str()))
                .collect::<Vec<_>>(),
        ),
        Value::keyword("code"),
        Value::string(tool.code.as_str()),
    ])
}

impl ChatUpdate {
    /// `:kind KIND` and the update's own fields, after those of its event.
    fn fields(&self, p: Plist) -> Plist {
        let kind = |p: Plist, kind: &str| p.put("kind", Value::symbol(kind));
        match self {
            ChatUpdate::Text(t) => kind(p, "text").text("text", t),
            ChatUpdate::Reasoning(t) => kind(p, "reasoning").text("text", t),
            ChatUpdate::Tool {
                name,
                arguments,
                decision,
                reasons,
            } => kind(p, "tool")
                .text("name", name)
                .text("arguments", arguments)
                .text("decision", decision)
                .put("reasons", strings(reasons)),
            ChatUpdate::ToolResult { name, ok, content } => kind(p, "tool-result")
                .text("name", name)
                .put("ok", Value::Bool(*ok))
                .text("content", content),
            ChatUpdate::Ask {
                reply,
                name,
                arguments,
                action,
                reasons,
                once_only,
            } => kind(p, "ask")
                .put("reply", Value::from(*reply))
                .text("name", name)
                .text("arguments", arguments)
                .put("action", crate::sexp::clone_value(action.value()))
                .put("reasons", strings(reasons))
                .put("once-only", Value::Bool(*once_only)),
            ChatUpdate::Retrying(m) => kind(p, "retrying").text("message", m),
            ChatUpdate::Consensus {
                agreed,
                answered,
                tie,
                proposals,
            } => kind(p, "consensus")
                .count("agreed", *agreed)
                .count("answered", *answered)
                .put("tie", Value::Bool(*tie))
                .put("proposals", strings(proposals)),
            ChatUpdate::Notice(m) => kind(p, "notice").text("message", m),
            ChatUpdate::Failover {
                backend,
                error,
                next,
                discard,
            } => kind(p, "failover")
                .text("backend", backend)
                .text("message", error)
                .put("next", opt_text(next.as_deref()))
                .put("discard", Value::Bool(*discard)),
            ChatUpdate::Usage(spent) => kind(p, "usage")
                .put("prompt-tokens", Value::from(spent.tokens.prompt))
                .put("completion-tokens", Value::from(spent.tokens.completion))
                .put("cached-tokens", Value::from(spent.tokens.cached))
                .put("cost", spent.cost.map(Value::from).unwrap_or(Value::Nil))
                .put("estimated", Value::Bool(spent.estimated)),
            ChatUpdate::Done(answer) => kind(p, "done").text("answer", answer),
            ChatUpdate::Error(m) => kind(p, "error").text("message", m),
            ChatUpdate::Interrupted => kind(p, "interrupted"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sexp::print;

    #[test]
    fn events_print_as_the_plists_elisp_dispatches_on() {
        let chat = Event::Chat {
            request: 7,
            conversation: "c".into(),
            update: ChatUpdate::Failover {
                backend: "a".into(),
                error: "HTTP 500".into(),
                next: None,
                discard: true,
            },
        };
        assert_eq!(
            print(chat.to_sexp().value()),
            "(:type chat :request 7 :conversation \"c\" :kind failover :backend \"a\" \
             :message \"HTTP 500\" :next nil :discard t)"
        );
        let failed = Event::Failed {
            request: 3,
            file: Some("/n/a.org".into()),
            message: "gone".into(),
        };
        assert_eq!(
            print(failed.to_sexp().value()),
            "(:type failed :request 3 :file \"/n/a.org\" :message \"gone\")"
        );
        assert_eq!(failed.file(), Some("/n/a.org"));
        let usage = |cost| Event::Chat {
            request: 5,
            conversation: "c".into(),
            update: ChatUpdate::Usage(crate::agent::turn::Spent {
                tokens: crate::llm::prices::Tokens {
                    prompt: 1200,
                    completion: 30,
                    cached: 200,
                },
                cost,
                estimated: false,
            }),
        };
        assert_eq!(
            print(usage(Some(0.0042)).to_sexp().value()),
            "(:type chat :request 5 :conversation \"c\" :kind usage :prompt-tokens 1200 \
             :completion-tokens 30 :cached-tokens 200 :cost 0.0042 :estimated nil)"
        );
        assert!(print(usage(None).to_sexp().value()).contains(":cost nil"));
        let hits = Event::SearchResults {
            request: 1,
            hits: vec![("x".into(), 0.5)],
        };
        assert_eq!(
            print(hits.to_sexp().value()),
            "(:type search-results :request 1 :hits ((\"x\" . 0.5)))"
        );
        let done = Event::Chat {
            request: 2,
            conversation: "c".into(),
            update: ChatUpdate::Interrupted,
        };
        assert_eq!(
            print(done.to_sexp().value()),
            "(:type chat :request 2 :conversation \"c\" :kind interrupted)"
        );
        let loaded = Event::SkillsLoaded {
            request: 4,
            active: vec![SkillSummary {
                name: "words".into(),
                description: "d".into(),
                file: "/s/words.org".into(),
                source: "user",
                triggers: vec!["model"],
                tests: 0,
                elisp_tools: vec![ElispCode {
                    name: "words__count".into(),
                    args: vec!["file".into()],
                    code: "(length file)".into(),
                }],
            }],
            inactive: vec![],
        };
        assert_eq!(
            print(loaded.to_sexp().value()),
            "(:type skills-loaded :request 4 :active ((:name \"words\" :description \"d\" \
             :file \"/s/words.org\" :source user :triggers (model) :tests-passed 0 \
             :elisp-tools ((:name \"words__count\" :args (\"file\") :code \"(length file)\")))) \
             :inactive nil)"
        );
    }
}
