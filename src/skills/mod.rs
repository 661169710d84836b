//! Skills: literate Org files that teach the agent (a prompt), trigger it (events as data),
//! bound it (gate rules) and test themselves (DESIGN.md §6).
//!
//! This module reads skill files into [`Skill`]s — parsed with the store's own Org parser,
//! never evaluated — checks them (every error names the file and line), and orders a set of
//! skills by their dependencies. Loading them into turns, firing triggers and running their
//! tests build on this.

mod check;
pub mod disclosure;
mod gate;
pub mod import;
pub mod load;
mod order;
mod parse;
pub mod prompt;
mod rules;

pub use check::run_gate_tests;
pub use gate::{Condition, Decision, GateRow, Test};
pub use import::{import_skill_md, parse_skill_md, read_skill_md, skill_md_to_org};
pub use order::{load_order, Ordered};
pub use parse::parse_skill;
pub use rules::gate_rules;

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

    /// Whether a run started this way has no user waiting (a background run).
    pub fn is_background(self) -> bool {
        !matches!(self, On::Model | On::User)
    }
}

/// When a skill runs: data, never code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trigger {
    pub on: Vec<On>,
    /// Org's tags/property match syntax (as `org-map-entries` takes it).
    pub matcher: Option<String>,
    /// File globs the events must concern.
    pub paths: Vec<String>,
    /// A 5-field cron expression (with `cron`).
    pub schedule: Option<String>,
    /// An interval (with `every`).
    pub every: Option<Duration>,
}

/// A tool a skill brings: an alias of a built-in with fixed arguments, or Elisp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillTool {
    pub name: String,
    /// The built-in it aliases (`:ALIAS:`), with its fixed arguments (the other
    /// properties, keys lowercased); `None`: an `emacs-lisp` block.
    pub alias: Option<String>,
    pub arguments: Vec<(String, String)>,
    /// The Elisp body, for a tool that is not an alias.
    pub elisp: Option<String>,
    pub line: usize,
}

/// A skill as its file says.
#[derive(Clone, Debug, PartialEq)]
pub struct Skill {
    pub name: String,
    pub title: String,
    pub description: String,
    pub depends_on: Vec<String>,
    /// A ceiling on the tools the skill may use (empty: no ceiling beyond the user's).
    pub allowed_tools: Vec<String>,
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
