//! What a turn works with: the LLM cascade, the notes, the attachments (prompt fragments,
//! tool sets, gate rules), the operator, the audit log, semantic search and the budget.

use crate::action::{Action, EmacsAction, EVAL_ELISP_TOOL};
use crate::agent::operator::{Operator, Unattended};
use crate::agent::semantic::{self, Semantic};
use crate::gates::audit::AuditLog;
use crate::gates::budget::Budget;
use crate::gates::command::CommandRules;
use crate::gates::paths::path_rules;
use crate::gates::permissions::{PermissionGate, Permissions};
use crate::gates::{Context, GateRules, Pipeline};
use crate::llm::cascade::Cascade;
use crate::llm::completion::ToolCall;
use crate::llm::http::ChatClient;
use crate::llm::prices::Prices;
use crate::mcp::client::Offered;
use crate::notes::{Notes, Privacy};
use crate::sexp::{self, Sexp};
use crate::skills::check_draft;
use crate::skills::draft_rules;
use crate::skills::prompt::PromptFragment;
use crate::skills::tools::SkillTools;
use crate::skills::{ceiling_rules, disclosure, gate_rules, Skill};
use crate::store::Store;
use crate::tools::emacs::{self as emacs_tools, ElispTool};
use crate::tools::shell::ShellConfig;
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
    /// The tools the skills bring, each skill's offered while it is in use.
    pub skill_tools: Vec<SkillTools>,
    /// The skills in use from the start of the turn (`/NAME`, a skill's own run, the skills
    /// always in use); those the model loads with `use_skill` are the conversation's
    /// ([`Context::skills_in_use`]).
    pub skills_in_use: Vec<String>,
    /// Where every gate decision and user answer is appended.
    pub audit: Option<AuditLog>,
    /// Semantic search over the notes (the `semantic_search` tool, related notes in the
    /// context), when an embedding server is configured.
    pub semantic: Option<Semantic>,
    /// Token and cost limits, checked before every request.
    pub budget: Option<Budget>,
    /// What each backend charges (the built-in table under `org-agent-prices`): the cost
    /// the chat shows and the budget counts.
    pub prices: Prices,
    /// Nobody waits for this turn (a skill's background run): the user's rules scoped to
    /// background runs hold, those scoped to the chat do not.
    pub background: bool,
    /// The user's permissions (`org-agent-permissions`), also attached to the gates.
    pub permissions: Arc<Permissions>,
    /// The tools of the MCP servers that are up (`SERVER__TOOL`): never read-only, so each
    /// call asks unless the user's rules say otherwise; what they return is untrusted.
    pub mcp: Offered,
}

impl Equipment {
    /// One backend over `store` under the default privacy rules (see [`Equipment::with`]).
    pub fn new(client: ChatClient, store: Arc<Store>) -> Equipment {
        Equipment::with(
            Cascade::single(client),
            Notes::new(store, Arc::new(Privacy::default())),
        )
    }

    /// `llm` over `notes` with the default prompt, the built-in tools (and the reading file
    /// tools, when the notes are confined to directories) and the default policy (and the
    /// rules of skill drafts, the path gate), with no Emacs and no audit log. The notes are
    /// watched: the turn learns which untrusted nodes each action read.
    pub fn with(llm: Cascade, notes: Notes) -> Equipment {
        // Tool paths and edit targets judged by where they really lead.
        let paths = path_rules(notes.clone());
        let mut eq = Equipment {
            llm,
            notes: notes.watching(),
            prompts: vec![PromptFragment::default()],
            tools: vec![Arc::new(ToolSet::builtins())],
            gates: Pipeline::from_rules(vec![GateRules::default_policy(), draft_rules(), paths]),
            operator: Arc::new(Unattended),
            edit_tools: false,
            elisp_tools: Vec::new(),
            skill_tools: Vec::new(),
            skills_in_use: Vec::new(),
            audit: None,
            semantic: None,
            budget: None,
            prices: Prices::default(),
            background: false,
            permissions: Arc::new(Permissions::default()),
            mcp: Offered::default(),
        };
        if let Some(c) = eq.file_roots() {
            eq.tools.push(Arc::new(ToolSet::files(c)));
        }
        eq
    }

    /// The notes' confinement, when its roots are configured (the file tools need them).
    fn file_roots(&self) -> Option<Arc<crate::notes::Confinement>> {
        self.notes
            .confinement()
            .filter(|c| !c.roots().is_empty())
            .cloned()
    }

    /// Offer `write_file` (which asks), confined like the other file tools: for a turn that
    /// offers the edit tools.
    pub fn offer_file_writes(&mut self) {
        if let Some(c) = self.file_roots() {
            self.tools.push(Arc::new(ToolSet::file_writes(c)));
        }
    }

    /// Judge actions by the user's `permissions` too (they may loosen the default policy's
    /// asks, never a wall; see [`crate::gates::permissions`]).
    pub fn set_permissions(&mut self, permissions: Arc<Permissions>) {
        if !permissions.is_empty() {
            self.gates
                .attach(permission_rules(permissions.clone(), &self.notes));
        }
        self.permissions = permissions;
    }

    /// Attach the active `skills`: their catalog to the prompt, `use_skill` and their tools
    /// to the tools, their gate tables and ceilings after the user's policy. The skills
    /// always in use are in use.
    pub fn attach_skills(&mut self, skills: Arc<[Skill]>) -> Result<(), String> {
        if let Some(catalog) = disclosure::catalog(&skills, &self.notes) {
            self.prompts.push(catalog);
        }
        for skill in skills.iter() {
            for rules in skill_gates(skill, &self.notes) {
                self.gates.attach(rules);
            }
            let tools = SkillTools::shown(skill, &self.notes)?;
            if !tools.is_empty() {
                self.skill_tools.push(tools);
            }
            if skill.always && !self.skills_in_use.contains(&skill.name) {
                self.skills_in_use.push(skill.name.clone());
            }
        }
        // Skills always in use (the agent's own, safety) are never loaded on demand.
        if disclosure::offered(&skills).next().is_some() {
            self.tools
                .push(Arc::new(disclosure::use_skill_tools(skills)));
        }
        Ok(())
    }

    /// Offer the shell tool `run_command` under `config`, its calls judged by `rules`: the
    /// tool and its gate come together, so the tool is never offered ungated (as a worker
    /// tool it would otherwise pass as read-only). Lines `rules` allow exactly may run with
    /// a shell.
    /// When the configuration names no notes directories, every root is taken for one: a
    /// command sees it through the notes layer's view.
    pub fn offer_shell(&mut self, mut config: ShellConfig, rules: CommandRules) {
        if config.notes_dirs.is_empty() {
            config.notes_dirs = config.roots.clone();
        }
        for line in rules.exact_allowed_lines() {
            if !config.exact_forms.contains(&line) {
                config.exact_forms.push(line);
            }
        }
        self.tools.push(Arc::new(ToolSet::shell(config)));
        self.gates.attach(GateRules::commands(rules));
    }

    /// Offer the MCP servers' tools `offered` (listed for this turn), and the skills' aliases
    /// of them; the notices of what is left out. An MCP tool named like a skill's tool is
    /// left out rather than shadow it. Aliases resolve for every skill, so one loaded
    /// mid-conversation finds its own; only those of the skills in use from the start are
    /// worth a notice.
    pub fn offer_mcp(&mut self, mut offered: Offered) -> Vec<String> {
        let mut left_out = Vec::new();
        offered.tools.retain(|(server, tool)| {
            let taken = self.worker_tool(&tool.exposed).is_some()
                || self.elisp_tool(&tool.exposed).is_some()
                || self
                    .skill_tools
                    .iter()
                    .any(|t| t.names().contains(&tool.exposed.as_str()));
            if taken {
                left_out.push(format!(
                    "The tool {} of the MCP server {} is left out: a skill's tool has that name",
                    tool.exposed, server.spec.name
                ));
            }
            !taken
        });
        for tools in &mut self.skill_tools {
            let notices = tools.resolve_mcp(&offered);
            if self.skills_in_use.contains(&tools.skill) {
                left_out.extend(notices);
            }
        }
        self.mcp = offered;
        left_out
    }

    /// Put `skill` in use from the start of the turn: its prompt in the system prompt, its
    /// tools offered, its ceiling enforced.
    pub fn use_skill_from_start(&mut self, skill: &Skill) {
        self.prompts.push(disclosure::in_use(skill, &self.notes));
        if !self.skills_in_use.contains(&skill.name) {
            self.skills_in_use.push(skill.name.clone());
        }
    }

    /// The skills' tools offered in a conversation at `ctx`: those of the skills in use.
    fn skill_tools_in_use<'s>(&'s self, ctx: &'s Context) -> impl Iterator<Item = &'s SkillTools> {
        self.skill_tools.iter().filter(move |t| {
            self.skills_in_use.contains(&t.skill) || ctx.skills_in_use.contains(&t.skill)
        })
    }

    /// The tool set holding the worker tool `name`, and the tool (a skill's too, in use or
    /// not: the gates refuse a tool not offered).
    pub(super) fn worker_tool(&self, name: &str) -> Option<(&Arc<ToolSet>, &Arc<Tool>)> {
        self.tools
            .iter()
            .chain(self.skill_tools.iter().map(|t| &t.worker))
            .find_map(|set| set.registry.get(name).map(|tool| (set, tool)))
    }

    /// The Elisp tool called `name` (a skill's first), unless a built-in or edit tool has
    /// that name.
    pub(super) fn elisp_tool(&self, name: &str) -> Option<&ElispTool> {
        if self.worker_tool(name).is_some()
            || (self.edit_tools && emacs_tools::is_edit(name))
            || (self.eval_elisp() && name == EVAL_ELISP_TOOL)
            || self.semantic_tool(name)
            || self.mcp.get(name).is_some()
        {
            return None;
        }
        self.skill_tools
            .iter()
            .find_map(|t| t.elisp_tool(name).map(|t| &t.declaration))
            .or_else(|| self.elisp_tools.iter().find(|t| t.name == name))
    }

    /// Whether `name` is the semantic search tool and it is available.
    pub(super) fn semantic_tool(&self, name: &str) -> bool {
        self.semantic.is_some() && name == semantic::SEMANTIC_TOOL
    }

    /// Every tool's declaration for a request of a conversation at `ctx`.
    pub(super) fn schemas(&self, ctx: &Context) -> Vec<serde_json::Value> {
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
        if self.eval_elisp() {
            all.push(emacs_tools::eval_schema());
        }
        for tools in self.skill_tools_in_use(ctx) {
            all.extend(tools.function_schemas());
        }
        all.extend(self.mcp.function_schemas());
        for t in &self.elisp_tools {
            if self
                .elisp_tool(&t.name)
                .is_some_and(|found| std::ptr::eq(found, t))
            {
                all.push(t.function_schema());
            }
        }
        all
    }

    /// The gate context for a conversation at `approved` (what the user approved, the skills
    /// it loaded): the tools offered — worker tools all read-only (they only read), Elisp
    /// tools read-only unless they ask to confirm — and the skills in use.
    pub(super) fn gate_context(&self, approved: &Context) -> Context {
        let mut ctx = approved.clone();
        // Tools that change things (write_file, every MCP server's tool) are offered, and ask.
        for set in self.tools.iter().filter(|set| !set.read_only()) {
            ctx.tools
                .extend(set.registry.names().into_iter().map(str::to_string));
        }
        ctx.tools.extend(self.mcp.names().map(str::to_string));
        ctx.mcp_tools.extend(self.mcp.names().map(str::to_string));
        let mut read_only = |name: &str| {
            ctx.tools.insert(name.to_string());
            ctx.read_only_tools.insert(name.to_string());
        };
        for set in self.tools.iter().filter(|set| set.read_only()) {
            for name in set.registry.names() {
                read_only(name);
            }
        }
        if self.semantic.is_some() {
            read_only(semantic::SEMANTIC_TOOL);
        }
        let mut elisp: Vec<&ElispTool> = Vec::new();
        for tools in self.skill_tools_in_use(approved) {
            for name in tools.worker.registry.names() {
                read_only(name);
            }
            elisp.extend(tools.elisp.iter().map(|t| &t.declaration));
        }
        elisp.extend(&self.elisp_tools);
        for t in elisp {
            if self
                .elisp_tool(&t.name)
                .is_some_and(|found| std::ptr::eq(found, t))
            {
                ctx.tools.insert(t.name.clone());
                if !t.confirm {
                    ctx.read_only_tools.insert(t.name.clone());
                }
            }
        }
        ctx.skills_in_use.extend(self.skills_in_use.iter().cloned());
        ctx.background = self.background;
        if self.eval_elisp() {
            // Offered, so not refused as unknown; the gates ask before each call.
            ctx.tools.insert(EVAL_ELISP_TOOL.to_string());
        }
        ctx
    }

    /// Whether `eval_elisp` is offered: only with Emacs to run it and when the user's
    /// permissions enable it.
    pub(super) fn eval_elisp(&self) -> bool {
        self.edit_tools && self.permissions.enables(EVAL_ELISP_TOOL)
    }

    /// Check a call of a skill's tool `name` offered at `ctx` with JSON `args` against its
    /// parameters, before it is gated (a skill's Elisp tool runs in Emacs, which does not
    /// check them). Other tools pass (the gates refuse those not offered).
    pub(super) fn check_skill_call(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &Context,
    ) -> Result<(), String> {
        match self
            .skill_tools_in_use(ctx)
            .find_map(|t| t.check(name, args))
        {
            Some(Err(e)) => Err(e.to_string()),
            Some(Ok(_)) | None => Ok(()),
        }
    }

    /// The action the LLM's `call` in a conversation at `ctx` stands for, or why its
    /// arguments are wrong. An edit of a private node (or in a private file) is refused here,
    /// before anyone is asked: the LLM should not even learn what is there.
    pub(super) fn action(&self, call: &ToolCall, ctx: &Context) -> Result<Action, String> {
        if self.edit_tools {
            if let Some(edit) = emacs_tools::edit_action(&call.name, &call.arguments) {
                let edit = edit?;
                self.may_touch(&edit)?;
                return Ok(Action::Emacs(edit));
            }
        }
        if self.eval_elisp() && call.name == EVAL_ELISP_TOOL {
            return emacs_tools::eval_action(&call.arguments).map(Action::Emacs);
        }
        if let Some(expanded) = self.expand_mcp_alias(&call.name, &call.arguments, ctx) {
            return expanded;
        }
        if let Some(checked) = self.mcp.check(&call.name, &call.arguments) {
            checked?;
        }
        self.check_skill_call(&call.name, &call.arguments, ctx)?;
        Ok(Action::Tool {
            name: call.name.clone(),
            args: Sexp::from(sexp::json::from_json(&call.arguments)),
        })
    }

    /// A call of a skill's alias of an MCP tool (`name`, in use at `ctx`) as the call of the
    /// server's tool it stands for, its arguments merged and checked against the server's
    /// schema: what the gates judge, the audit records and the turn runs.
    pub(super) fn expand_mcp_alias(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &Context,
    ) -> Option<Result<Action, String>> {
        let alias = self
            .skill_tools_in_use(ctx)
            .find_map(|t| t.mcp_alias(name))?;
        Some(alias.expand(args).and_then(|merged| {
            if let Some(checked) = self.mcp.check(&alias.target, &merged) {
                checked?;
            }
            Ok(Action::Tool {
                name: alias.target.clone(),
                args: Sexp::from(sexp::json::from_json(&merged)),
            })
        }))
    }

    /// Whether an Emacs action may run at all: only when edits are offered, and never on a
    /// private node or in a private file. Every way an action arrives (a native tool call, an
    /// action plist) passes here. A file must be one of the notes, named as the store names
    /// it (absolute, expanded), so a pattern cannot be dodged with `~`, `..` or a relative
    /// path, and a file private by `#+FILETAGS` is caught too; its real path must not be
    /// private or protected, and must lie in the directories when they are configured. A
    /// skill draft must load as an agent skill and pass its own tests: one that does not goes
    /// back to the model with the reason, and the user never sees it.
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
        if id.is_none() && file.is_none() && action.new_file().is_none() {
            // Messages and tool calls: not about the notes.
            return Ok(());
        }
        if !self.edit_tools {
            return Err("editing the notes is not offered in this conversation".to_string());
        }
        // The note's file judged by where it really is: a link to a private file, to a
        // protected one or out of the directories is refused (`Notes::edit_target`).
        self.notes.edit_target(action).map(|_| ())
    }

    /// Where the result of running `action` comes from, when that alone makes it untrusted
    /// (what it reads through the notes is judged node by node, see [`Notes::watching`]):
    /// an Elisp tool's result (mail, the web, anything Emacs can reach), a command's
    /// output, a file read outside the notes, any tool the agent does not know to read only
    /// the notes (a web tool). The notes' tools, semantic search, `use_skill` and the edits'
    /// status plists are the agent's own.
    pub(super) fn untrusted_source(&self, action: &Action) -> Option<String> {
        let Action::Tool { name, args } = action else {
            return None;
        };
        let arg = |key: &str| {
            sexp::plist_get(args.value(), key)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        match name.as_str() {
            "run_command" => Some(format!(
                "the output of run_command {}",
                arg("command").unwrap_or_default()
            )),
            "eval_elisp" => Some("the value of eval_elisp".into()),
            "read_file" | "list_directory" => {
                let path = arg("path").or_else(|| arg("directory"))?;
                self.notes.path_provenance(&path)
            }
            "write_file" => None,
            _ if self.mcp.get(name).is_some() => {
                Some(format!("the result of the tool {name} of an MCP server"))
            }
            _ if self.elisp_tool(name).is_some() => {
                Some(format!("the result of the Elisp tool {name}"))
            }
            _ if self.worker_tool(name).is_some() || self.semantic_tool(name) => None,
            _ => Some(format!("the result of the tool {name}")),
        }
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

/// A skill's gate table and its ceiling, as the gates judge with them.
fn skill_gates(skill: &Skill, notes: &Notes) -> Vec<GateRules> {
    let mut rules = Vec::new();
    if !skill.gate.is_empty() {
        rules.push(gate_rules(skill, notes.clone()));
    }
    rules.extend(ceiling_rules(skill));
    rules
}

/// What the gates of a turn would decide about `action`, and why, for the user
/// (`M-x org-agent-permissions-explain`): the default policy, the rules of skill drafts, the
/// active `skills`' tables and ceilings and the user's `permissions`, in the chat or a
/// `background` run, with `skill` in use besides those always in use; `mcp_tools` are the MCP
/// servers' tools (the `mcp` rules name those).
pub fn explain_action(
    notes: Notes,
    skills: &[Skill],
    permissions: Arc<Permissions>,
    action: Action,
    background: bool,
    skill: Option<&str>,
    mcp_tools: &[String],
) -> String {
    let mut pipeline = Pipeline::from_rules(vec![GateRules::default_policy(), draft_rules()]);
    let mut ctx = Context {
        background,
        mcp_tools: mcp_tools.iter().cloned().collect(),
        ..Context::default()
    };
    for name in ToolSet::builtins().registry.names() {
        ctx.tools.insert(name.to_string());
        ctx.read_only_tools.insert(name.to_string());
    }
    if permissions.enables(EVAL_ELISP_TOOL) {
        ctx.tools.insert(EVAL_ELISP_TOOL.to_string());
    }
    if let Action::Tool { name, .. } = &action {
        // A tool of the user's own (an Elisp tool) is judged as if offered: the question is
        // what the rules say. The shell and eval_elisp are offered only when a rule names
        // them, and a real call of them otherwise is refused as an unknown tool; so is this.
        if name != "run_command" && name != EVAL_ELISP_TOOL {
            ctx.tools.insert(name.clone());
        }
    }
    for s in skills {
        for rules in skill_gates(s, &notes) {
            pipeline.attach(rules);
        }
        if s.always || Some(s.name.as_str()) == skill {
            ctx.skills_in_use.insert(s.name.clone());
        }
    }
    if !permissions.is_empty() {
        pipeline.attach(permission_rules(permissions.clone(), &notes));
    }
    if permissions.enables("run_command") {
        // As offered: a worker tool, judged by the command gate.
        ctx.tools.insert("run_command".into());
        ctx.read_only_tools.insert("run_command".into());
        let rules = CommandRules::with_user(permissions.command_rules());
        pipeline.attach(GateRules::commands(rules));
    }
    crate::gates::permissions::explain(&pipeline, &permissions, action, &ctx, Some(&notes))
}

/// The user's permissions as gate rules.
fn permission_rules(permissions: Arc<Permissions>, notes: &Notes) -> GateRules {
    GateRules {
        source: "org-agent-permissions".into(),
        gates: vec![Box::new(PermissionGate {
            permissions,
            notes: Some(notes.clone()),
        })],
    }
}
