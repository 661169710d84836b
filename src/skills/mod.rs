//! Skills: literate Org files that teach the agent (a prompt), trigger it (events as data),
//! bound it (gate rules) and test themselves (DESIGN.md §6).
//!
//! This module reads skill files into [`Skill`]s — parsed with the store's own Org parser,
//! never evaluated — checks them (every error names the file and line), and orders a set of
//! skills by their dependencies. A skill's own `:gate:` and `:trigger:` tests run when it
//! loads; [`fires`] says whether an event (a save, a cron tick…) runs it. A skill the agent
//! drafts is checked the same way before the user is asked about it ([`draft`]).

mod check;
mod cron;
pub mod disclosure;
pub mod draft;
mod gate;
pub mod import;
pub mod load;
pub mod mcp_alias;
mod order;
mod org_match;
mod parse;
pub mod prompt;
mod rules;
mod shown;
pub mod tools;
pub mod trigger;
pub mod turns;

pub use check::{run_gate_tests, run_tests, run_trigger_tests, Passed};
pub use cron::{Civil, Cron};
pub use draft::{check_draft, draft_rules, Draft};
pub use gate::{Condition, Decision, GateRow, Test};
pub use import::{import_skill_md, parse_skill_md, read_skill_md, skill_md_to_org};
pub use order::{load_order, Ordered};
pub use org_match::{MatchNode, OrgMatch};
pub use parse::parse_skill;
pub use rules::{ceiling_rules, gate_rules};
pub use trigger::{changed_nodes, file_events, fires, Changes, TriggerEvent};

use crate::tools::Param;
use std::fmt;
use std::time::Duration;

/// Longest skill name (the Agent Skills limit).
pub const MAX_NAME: usize = 64;
/// Longest description: what the model sees before it loads the skill.
pub const MAX_DESCRIPTION: usize = 1024;

/// Where a skill comes from, which bounds what it may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// In the package's `skills/`.
    Shipped,
    /// Written by the user.
    User,
    /// A `SKILL.md` from the Agent Skills ecosystem: prompt only.
    Imported,
    /// A draft written by the agent (`create_skill`): no code, only deny/ask rules.
    Agent,
}

impl Source {
    pub fn from_name(name: &str) -> Option<Source> {
        match name {
            "shipped" => Some(Source::Shipped),
            "user" => Some(Source::User),
            "imported" => Some(Source::Imported),
            "agent" => Some(Source::Agent),
            _ => None,
        }
    }

    /// The name Emacs knows it by (`from_name`'s inverse).
    pub fn name(self) -> &'static str {
        match self {
            Source::Shipped => "shipped",
            Source::User => "user",
            Source::Imported => "imported",
            Source::Agent => "agent",
        }
    }
}

/// What makes a skill run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// The model chose it (`use_skill`).
    Model,
    /// The user invoked it (`/NAME`, `org-agent-run-skill`).
    User,
    /// A note matching `:MATCH:` changed in a save.
    Save,
    TodoChange,
    Capture,
    /// On the 5-field cron `:SCHEDULE:`.
    Cron,
    /// Every `:EVERY:`.
    Every,
    Idle,
    Startup,
}

impl On {
    pub const ALL: [(&'static str, On); 9] = [
        ("model", On::Model),
        ("user", On::User),
        ("save", On::Save),
        ("todo-change", On::TodoChange),
        ("capture", On::Capture),
        ("cron", On::Cron),
        ("every", On::Every),
        ("idle", On::Idle),
        ("startup", On::Startup),
    ];

    pub fn from_name(name: &str) -> Option<On> {
        On::ALL.iter().find(|(n, _)| *n == name).map(|(_, on)| *on)
    }

    /// The word `:ON:` uses for it.
    pub fn name(self) -> &'static str {
        On::ALL
            .iter()
            .find(|(_, on)| *on == self)
            .map(|(n, _)| *n)
            .unwrap_or("model")
    }

    /// Whether a run started this way has no user waiting (a background run).
    pub fn is_background(self) -> bool {
        !matches!(self, On::Model | On::User)
    }
}

/// When a skill runs: data, never code (the grammar: [`trigger`]; whether an event runs
/// it: [`fires`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    pub on: Vec<On>,
    /// `:MATCH:`, compiled (Org's tags/property match syntax, as `org-map-entries` takes
    /// it; [`OrgMatch::source`] is the text).
    pub matcher: Option<OrgMatch>,
    /// File globs the events must concern.
    pub paths: Vec<String>,
    /// `:SCHEDULE:`, a 5-field cron expression (with `cron`; [`Cron::source`] is the text).
    pub schedule: Option<Cron>,
    /// An interval (with `every`).
    pub every: Option<Duration>,
}

/// A tool a skill brings (a subheading of `* Tools`), read and checked when the skill loads
/// ([`tools`]); offered as [`tools::tool_name`] while the skill is in use.
#[derive(Clone, Debug, PartialEq)]
pub struct SkillTool {
    /// The heading's title: the tool's name within the skill.
    pub name: String,
    /// What the model reads about it: the text under the heading (source blocks left out).
    pub description: String,
    pub kind: SkillToolKind,
    pub line: usize,
}

/// What a skill's tool runs.
#[derive(Clone, Debug, PartialEq)]
pub enum SkillToolKind {
    /// A built-in tool (`:ALIAS:`) with some of its arguments fixed or defaulted (the other
    /// properties).
    Alias {
        builtin: String,
        arguments: Vec<AliasArgument>,
    },
    /// An MCP server's tool (`:ALIAS: SERVER__TOOL`) with some of its arguments fixed or
    /// defaulted, their values as written (strings): the server's schema, which types them,
    /// is known only once the server lists it ([`mcp_alias`]).
    McpAlias {
        tool: String,
        arguments: Vec<AliasArgument>,
    },
    /// An `emacs-lisp` block: in Emacs, the body of a function of `params` in order (the
    /// properties); `confirm` (`:CONFIRM: t`): ask before each call. Shipped and user
    /// skills only.
    Elisp {
        code: String,
        params: Vec<Param>,
        confirm: bool,
    },
}

/// An argument an alias gives its built-in: fixed (the model cannot change it), or a
/// default (`default:` before the value: the model may give another).
#[derive(Clone, Debug, PartialEq)]
pub struct AliasArgument {
    /// The built-in's parameter.
    pub name: String,
    /// Of the parameter's type.
    pub value: serde_json::Value,
    pub default: bool,
    pub line: usize,
}

/// A skill as its file says.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub title: String,
    pub description: String,
    pub depends_on: Vec<String>,
    /// A ceiling on the tools the skill may use while it is in use (empty: no ceiling
    /// beyond the user's; see [`ceiling_rules`]).
    pub allowed_tools: Vec<String>,
    /// Always in use (`#+ALWAYS: t`), not loaded on demand: the catalog does not list it.
    pub always: bool,
    pub trigger: Trigger,
    /// Sent while the skill is in use.
    pub prompt: String,
    /// `:reference:` subtrees of the prompt, by title: loaded only when asked for.
    pub references: Vec<(String, String)>,
    pub gate: Vec<GateRow>,
    pub tools: Vec<SkillTool>,
    pub tests: Vec<Test>,
    pub file: String,
    pub source: Source,
    /// The Org text the skill was read from (`None` for an imported `SKILL.md`): its parts
    /// are read again from it under the privacy rules in force when they are shown (see
    /// [`Skill::as_shown`]).
    pub org: Option<std::sync::Arc<str>>,
}

/// What is wrong with a skill file, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct SkillError {
    pub file: String,
    /// 1-based; 0 when the whole file is concerned.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}
