//! What a turn works with: the LLM cascade, the notes, the attachments (prompt fragments,
//! tool sets, gate rules), the operator, the audit log, semantic search and the budget.

use crate::action::{Action, EmacsAction};
use crate::agent::operator::{Operator, Unattended};
use crate::agent::semantic::{self, Semantic};
use crate::gates::audit::AuditLog;
use crate::gates::budget::Budget;
use crate::gates::{Context, GateRules, Pipeline};
use crate::llm::cascade::Cascade;
use crate::llm::completion::ToolCall;
use crate::llm::http::ChatClient;
use crate::notes::{Notes, Privacy};
use crate::sexp::{self, Sexp};
use crate::skills::check_draft;
use crate::skills::draft_rules;
use crate::skills::prompt::PromptFragment;
use crate::store::Store;
use crate::tools::emacs::{self as emacs_tools, ElispTool};
use crate::tools::{Tool, ToolSet};
use std::sync::Arc;

/// The agent's equipment for a turn.
pub struct Equipment {
    /// The backends to ask, in order.
    pub llm: Cascade,
    /// The notes as the LLM may see them (context, tool results, edit targets).
    pub notes: Notes,
    /// The system prompt's fragments, in order: the user's prompt first.
    pub prompts: Vec<PromptFragment>,
    /// The tools run on workers, by source: the built-in tools first.
    pub tools: Vec<Arc<ToolSet>>,
    /// The gate rules, by source: the default policy first, then the rules of skill drafts
    /// (a `create_skill` asks with its tests' results).
    pub gates: Pipeline,
    /// Who answers questions and runs Emacs actions ([`Unattended`] when nobody waits).
    pub operator: Arc<dyn Operator>,
    /// Offer the edit tools (the actuator's vocabulary); needs an operator that actuates.
    pub edit_tools: bool,
    /// Tools defined in Elisp, run by the operator.
    pub elisp_tools: Vec<ElispTool>,
    /// Where every gate decision and user answer is appended.
    pub audit: Option<AuditLog>,
    /// Semantic search over the notes (the `semantic_search` tool, related notes in the
    /// context), when an embedding server is configured.
    pub semantic: Option<Semantic>,
    /// Token and cost limits, checked before every request.
    pub budget: Option<Budget>,
}

impl Equipment {
    /// One backend over `store` under the default privacy rules (see [`Equipment::with`]).
    pub fn new(client: ChatClient, store: Arc<Store>) -> Equipment {
        Equipment::with(
            Cascade::single(client),
            Notes::new(store, Arc::new(Privacy::default())),
        )
    }

    /// `llm` over `notes` with the default prompt, the built-in tools and the default
    /// policy (and the rules of skill drafts), with no Emacs and no audit log.
    pub fn with(llm: Cascade, notes: Notes) -> Equipment {
        Equipment {
            llm,
            notes,
            prompts: vec![PromptFragment::default()],
            tools: vec![Arc::new(ToolSet::builtins())],
            gates: Pipeline::from_rules(vec![GateRules::default_policy(), draft_rules()]),
            operator: Arc::new(Unattended),
            edit_tools: false,
            elisp_tools: Vec::new(),
            audit: None,
            semantic: None,
            budget: None,
        }
    }

    /// The tool set holding the worker tool `name`, and the tool.
    pub(super) fn worker_tool(&self, name: &str) -> Option<(&Arc<ToolSet>, &Arc<Tool>)> {
        self.tools
            .iter()
            .find_map(|set| set.registry.get(name).map(|tool| (set, tool)))
    }

    /// The Elisp tool called `name`, unless a built-in or edit tool has that name.
    pub(super) fn elisp_tool(&self, name: &str) -> Option<&ElispTool> {
        if self.worker_tool(name).is_some()
            || (self.edit_tools && emacs_tools::is_edit(name))
            || self.semantic_tool(name)
        {
            return None;
        }
        self.elisp_tools.iter().find(|t| t.name == name)
    }

    /// Whether `name` is the semantic search tool and it is available.
    pub(super) fn semantic_tool(&self, name: &str) -> bool {
        self.semantic.is_some() && name == semantic::SEMANTIC_TOOL
    }

    /// Every tool's declaration, for the request.
    pub(super) fn schemas(&self) -> Vec<serde_json::Value> {
        let mut all: Vec<serde_json::Value> = self
            .tools
            .iter()
            .flat_map(|set| set.registry.function_schemas())
            .collect();
        if self.semantic.is_some() {
            all.push(semantic::tool_declaration());
        }
        if self.edit_tools {
            all.extend(emacs_tools::edit_schemas());
        }
        for t in &self.elisp_tools {
            if self.elisp_tool(&t.name).is_some() {
                all.push(t.function_schema());
            }
        }
        all
    }

    /// The gate context for a conversation that approved `approved`: the worker tools, all
    /// read-only (they only read), Elisp tools (read-only unless they ask to confirm).
    pub(super) fn gate_context(&self, approved: &Context) -> Context {
        let mut ctx = approved.clone();
        let mut read_only = |name: &str| {
            ctx.tools.insert(name.to_string());
            ctx.read_only_tools.insert(name.to_string());
        };
        for set in &self.tools {
            for name in set.registry.names() {
                read_only(name);
            }
        }
        if self.semantic.is_some() {
            read_only(semantic::SEMANTIC_TOOL);
        }
        for t in &self.elisp_tools {
            if self.elisp_tool(&t.name).is_some() {
                ctx.tools.insert(t.name.clone());
                if !t.confirm {
                    ctx.read_only_tools.insert(t.name.clone());
                }
            }
        }
        ctx
    }

    /// The action the LLM's `call` stands for, or why its arguments are wrong. An edit of a
    /// private node (or in a private file) is refused here, before anyone is asked: the LLM
    /// should not even learn what is there.
    pub(super) fn action(&self, call: &ToolCall) -> Result<Action, String> {
        if self.edit_tools {
            if let Some(edit) = emacs_tools::edit_action(&call.name, &call.arguments) {
                let edit = edit?;
                self.may_touch(&edit)?;
                return Ok(Action::Emacs(edit));
            }
        }
        Ok(Action::Tool {
            name: call.name.clone(),
            args: Sexp::from(sexp::json::from_json(&call.arguments)),
        })
    }

    /// Whether an Emacs action may run at all: only when edits are offered, and never on a
    /// private node or in a private file. Every way an action arrives (a native tool call, an
    /// action plist) passes here. A file must be one of the notes, named as the store names
    /// it (absolute, expanded), so a pattern cannot be dodged with `~`, `..` or a relative
    /// path, and a file private by `#+FILETAGS` is caught too. A skill draft must load as
    /// an agent skill and pass its own tests: one that does not goes back to the model with
    /// the reason, and the user never sees it.
    pub(super) fn may_touch(&self, action: &EmacsAction) -> Result<(), String> {
        if let EmacsAction::CreateSkill { name, text } = action {
            if !self.edit_tools {
                return Err("creating skills is not offered in this conversation".to_string());
            }
            return check_draft(name, text).map(|_| ()).map_err(|e| {
                format!(
                    "the skill draft was not shown to the user, since it does not load: {e}. \
                     Fix it and call create_skill again."
                )
            });
        }
        let (id, file) = action.target();
        if id.is_none() && file.is_none() {
            // Messages and tool calls: not about the notes.
            return Ok(());
        }
        if !self.edit_tools {
            return Err("editing the notes is not offered in this conversation".to_string());
        }
        if let Some(id) = id {
            self.notes.node(id)?;
        }
        if let Some(file) = file {
            self.notes.file(file)?;
        }
        Ok(())
    }

    /// Append to the audit log, if there is one; `Err` with a warning when it failed.
    pub(super) fn audit(
        &self,
        write: impl FnOnce(&AuditLog, i64) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let Some(log) = &self.audit else {
            return Ok(());
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        write(log, now).map_err(|e| {
            format!(
                "could not write the audit log {}: {e}",
                log.path().display()
            )
        })
    }
}
