//! The user's permissions (`org-agent-permissions`): rules that allow, ask or deny an action
//! by the tool or actuator verb it names, its subject (a path, a command, code) and the scope
//! it runs in.
//!
//! A rule reads `(DECISION TOOL [PATTERN…] [:scope SCOPE] [:match EXAMPLES] [:not-match
//! EXAMPLES] [:reason TEXT])`. `TOOL` is a tool name (`run_command`, `read_file`) or an
//! actuator verb (`add-headline`), `*` standing for any run of characters. The patterns say
//! which subjects the rule is about: globs over resolved paths for the file tools and for the
//! edit verbs (the file they edit), MCP tools' whole names for `mcp` (`(allow mcp
//! "files__read_*" :match ("files__read_text_file"))`; a rule may also name one MCP tool,
//! `(deny files__write_file)`), argvs for `run_command` (an allow covers exactly its words, or more after a trailing `*`; ask and deny are prefixes), globs over the code for
//! `eval_elisp`; a rule without patterns is about every subject. Among the rules that match,
//! deny wins over ask over allow, whatever their order.
//!
//! The user's policy may loosen the defaults (an `allow` lifts the default policy's asks for
//! what it matches) but never the walls: writes into buffers, new skills, protected paths,
//! edits after reading untrusted text and Elisp evaluation ask or deny whatever a rule says;
//! skills' gate tables only ever tighten. Examples in `:match` and `:not-match` are subjects
//! the rule must and must not match; they are checked when the rules load, and a rule whose
//! examples fail does not load (so a pattern that does not say what its author meant is found
//! before it decides anything).

use super::command::{self, CommandDecision, CommandRule};
use super::{Context, Decision, Gate};
use crate::action::{Action, EmacsAction};
use crate::notes::privacy::Glob;
use crate::notes::Notes;
use crate::sexp::{self, Value};
use std::fmt;
use thiserror::Error;

/// What a rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permit {
    Allow,
    Ask,
    Deny,
}

impl Permit {
    fn command_decision(self) -> CommandDecision {
        match self {
            Permit::Allow => CommandDecision::Allow,
            Permit::Ask => CommandDecision::Ask,
            Permit::Deny => CommandDecision::Deny,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Permit::Allow => "allow",
            Permit::Ask => "ask",
            Permit::Deny => "deny",
        }
    }
}

/// Where a rule holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everywhere.
    Any,
    /// A conversation with the user (the chat, a command).
    Chat,
    /// A run nobody waits for (a skill's trigger, a script).
    Background,
    /// While the named skill is in use.
    Skill(String),
}

impl Scope {
    fn holds(&self, ctx: &Context) -> bool {
        match self {
            Scope::Any => true,
            Scope::Chat => !ctx.background,
            Scope::Background => ctx.background,
            Scope::Skill(name) => ctx.skills_in_use.contains(name),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Any => f.write_str("anywhere"),
            Scope::Chat => f.write_str("in the chat"),
            Scope::Background => f.write_str("in background runs"),
            Scope::Skill(name) => write!(f, "while skill {name} is in use"),
        }
    }
}

/// What a tool's patterns are matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubjectKind {
    /// A file: the file tools' `path`, the file an edit verb changes.
    Path,
    /// A command line, matched part by part by argv (see `CommandRule::user`).
    Command,
    /// Elisp code, matched as a glob over the text.
    Code,
    /// An MCP server's tool, by its whole name `SERVER__TOOL` (the rule's tool is `mcp`;
    /// which tools are MCP's, the gate context says: [`Context::mcp_tools`]).
    McpTool,
}

/// The kind of subject `tool` has, if its rules may name one.
pub fn subject_kind(tool: &str) -> Option<SubjectKind> {
    // Rules write `eval_elisp` or `eval-elisp`, `add-headline` or `add_headline`.
    let tool = tool.replace('_', "-");
    match tool.as_str() {
        "run-command" => Some(SubjectKind::Command),
        "eval-elisp" => Some(SubjectKind::Code),
        "mcp" => Some(SubjectKind::McpTool),
        "read-file" | "write-file" | "list-directory" => Some(SubjectKind::Path),
        verb if EmacsAction::verb(verb).is_some_and(|v| v.judges_places) => Some(SubjectKind::Path),
        _ => None,
    }
}

/// The kind of subject every tool and verb a name pattern (`set-*`) matches has, if they
/// agree: only then may its rules name patterns.
fn glob_subject_kind(pattern: &str) -> Option<SubjectKind> {
    if !pattern.contains(['*', '?', '[']) {
        return subject_kind(pattern);
    }
    let glob = Glob::new(&pattern.replace('_', "-"));
    let mut kinds = [
        "run-command",
        "eval-elisp",
        "read-file",
        "write-file",
        "list-directory",
    ]
    .into_iter()
    .chain(EmacsAction::NAMES)
    .filter(|name| glob.matches(name))
    .map(subject_kind);
    let first = kinds.next()?;
    kinds.all(|k| k == first).then_some(first).flatten()
}

#[derive(Clone, Debug)]
enum Pattern {
    Path(Glob, String),
    /// A command rule as `run_command`'s rules read it, and its text.
    Command(Box<CommandRule>, String),
    Code(Glob, String),
    /// A glob over an MCP tool's whole name.
    Name(Glob, String),
}

impl Pattern {
    fn matches(&self, subject: &str) -> bool {
        match self {
            Pattern::Path(glob, _) => glob.matches(subject),
            Pattern::Code(glob, _) | Pattern::Name(glob, _) => glob.matches(subject),
            // Some part of the line matches (each part is judged on its own by the command
            // gate), or the whole line is the exact form.
            Pattern::Command(rule, _) => match &rule.pattern {
                command::Pattern::Exact(line) => line == subject.trim(),
                command::Pattern::Prefix(_) => command::parse(subject)
                    .map(|c| c.parts.iter().any(|argv| rule.matches(argv)))
                    .unwrap_or(false),
            },
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Path(_, text)
            | Pattern::Code(_, text)
            | Pattern::Name(_, text)
            | Pattern::Command(_, text) => {
                write!(f, "{text:?}")
            }
        }
    }
}

/// One rule of the user's policy.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Its place in `org-agent-permissions`, from 1.
    pub number: usize,
    pub permit: Permit,
    /// The tool or verb it is about (`*` for any run of characters).
    pub tool: String,
    tool_glob: Glob,
    patterns: Vec<Pattern>,
    pub scope: Scope,
    /// The user's own words for why, shown in the explanation (never to the model).
    pub reason: Option<String>,
}

impl Rule {
    /// Whether the rule names `tool` (a tool name or verb).
    pub fn names(&self, tool: &str) -> bool {
        self.tool_glob.matches(&tool.replace('_', "-"))
    }

    /// Whether the rule matches a subject (a rule without patterns matches every one).
    fn matches_subject(&self, subject: Option<&str>) -> Option<String> {
        if self.patterns.is_empty() {
            return Some("it names no pattern, so every use matches".into());
        }
        let subject = subject?;
        self.patterns
            .iter()
            .find(|p| p.matches(subject))
            .map(|p| format!("{p} matches"))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({} {}", self.permit.name(), self.tool)?;
        for p in &self.patterns {
            write!(f, " {p}")?;
        }
        if self.scope != Scope::Any {
            write!(f, " [{}]", self.scope)?;
        }
        f.write_str(")")
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PermissionError {
    #[error("org-agent-permissions must be a list of rules, not {0}")]
    NotAList(String),
    #[error("org-agent-permissions, rule {number} {rule}: {message}")]
    Rule {
        number: usize,
        rule: String,
        message: String,
    },
}

/// A rule that matched an action, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    pub number: usize,
    pub permit: Permit,
    /// The rule as written (for the user; it may name private paths, so never for the model).
    pub rule: String,
    pub why: String,
}

/// The user's rules, read and checked.
#[derive(Clone, Debug, Default)]
pub struct Permissions {
    rules: Vec<Rule>,
}

impl Permissions {
    /// Read `org-agent-permissions` (a list of rules); every rule's examples are checked.
    pub fn from_sexp(value: &Value) -> Result<Permissions, PermissionError> {
        let items =
            sexp::list_items(value).map_err(|v| PermissionError::NotAList(sexp::print(v)))?;
        let mut rules = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let number = i + 1;
            rules.push(
                read_rule(number, item).map_err(|message| PermissionError::Rule {
                    number,
                    rule: sexp::print(item),
                    message,
                })?,
            );
        }
        Ok(Permissions { rules })
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule names `tool` itself (not through a `*`) and allows or asks for it:
    /// tools that are off by default (`run_command`, `eval_elisp`) are offered only then.
    pub fn enables(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.permit != Permit::Deny && r.tool.replace('_', "-") == tool.replace('_', "-"))
    }

    /// The rules with command patterns, as `run_command`'s rules (judged part by part with
    /// the defaults by the command gate, see [`command::CommandRules::with_user`]).
    pub fn command_rules(&self) -> Vec<CommandRule> {
        self.rules
            .iter()
            .filter(|r| r.names("run_command"))
            .flat_map(|r| {
                r.patterns.iter().filter_map(move |p| match p {
                    Pattern::Command(rule, _) => Some(CommandRule {
                        reason: format!("rule {} of org-agent-permissions", r.number),
                        ..(**rule).clone()
                    }),
                    _ => None,
                })
            })
            .collect()
    }

    /// The directories the rules open to the file tools beyond the notes: the fixed part of
    /// each `allow`/`ask` path pattern of a file tool (`~/src/**` opens `~/src`).
    pub fn file_roots(&self) -> Vec<String> {
        let mut roots = Vec::new();
        for rule in self.rules.iter().filter(|r| r.permit != Permit::Deny) {
            if !["read_file", "write_file", "list_directory"]
                .iter()
                .any(|t| rule.names(t))
            {
                continue;
            }
            for p in &rule.patterns {
                if let Pattern::Path(_, text) = p {
                    let fixed: String = expand_home(text)
                        .split('/')
                        .take_while(|part| !part.contains(['*', '?', '[']))
                        .collect::<Vec<_>>()
                        .join("/");
                    if fixed.starts_with('/') && !roots.contains(&fixed) {
                        roots.push(fixed);
                    }
                }
            }
        }
        roots
    }

    /// Every rule that matches `tool` with `subject` in `ctx`, and why. An MCP server's tool
    /// (one of `ctx.mcp_tools`) is named by the `mcp` rules, its subject its whole name.
    pub fn matches(&self, tool: &str, subject: Option<&str>, ctx: &Context) -> Vec<Match> {
        let mcp = ctx.mcp_tools.contains(tool);
        let subject = if mcp { Some(tool) } else { subject };
        self.rules
            .iter()
            .filter(|r| {
                let named = if r.tool == "mcp" { mcp } else { r.names(tool) };
                named && r.scope.holds(ctx)
            })
            .filter_map(|r| {
                let why = r.matches_subject(subject)?;
                let scope = match r.scope {
                    Scope::Any => String::new(),
                    ref s => format!(", {s}"),
                };
                Some(Match {
                    number: r.number,
                    permit: r.permit,
                    rule: r.to_string(),
                    why: format!("{tool} is named{scope}; {why}"),
                })
            })
            .collect()
    }

    /// The strictest rule that matches (deny > ask > allow), if one does.
    pub fn decide(&self, tool: &str, subject: Option<&str>, ctx: &Context) -> Option<Match> {
        self.matches(tool, subject, ctx)
            .into_iter()
            .max_by_key(|m| (m.permit, std::cmp::Reverse(m.number)))
    }
}

/// The strings a value gives: one string (or symbol), or a list of them.
fn strings(value: &Value, what: &str) -> Result<Vec<String>, String> {
    let one = |v: &Value| match v {
        Value::String(s) | Value::Symbol(s) => Ok(s.to_string()),
        other => Err(format!(
            "{what} must be strings, not {}",
            sexp::print(other)
        )),
    };
    match value {
        Value::String(_) | Value::Symbol(_) => Ok(vec![one(value)?]),
        _ => sexp::list_items(value)
            .map_err(|v| format!("{what} must be a string or a list, not {}", sexp::print(v)))?
            .into_iter()
            .map(one)
            .collect(),
    }
}

/// A pattern or example with `~` written out as the user's home (the home every path check
/// resolves `~` with).
fn expand_home(path: &str) -> String {
    let home = crate::notes::paths::home_dir();
    match (path.strip_prefix('~'), home.to_str()) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", home.trim_end_matches('/'))
        }
        _ => path.to_string(),
    }
}

fn pattern(kind: SubjectKind, permit: Permit, text: &str) -> Result<Pattern, String> {
    Ok(match kind {
        SubjectKind::Path => {
            let expanded = expand_home(text);
            if !expanded.starts_with('/') {
                return Err(format!(
                    "the path pattern {text:?} must be absolute (start with / or ~/)"
                ));
            }
            Pattern::Path(Glob::new(&expanded), text.to_string())
        }
        SubjectKind::Code => Pattern::Code(Glob::across(text), text.to_string()),
        SubjectKind::McpTool => Pattern::Name(Glob::across(text), text.to_string()),
        SubjectKind::Command => {
            if text.trim().is_empty() {
                return Err("an empty command pattern would match every command".into());
            }
            let rule = CommandRule::user(permit.command_decision(), text, String::new());
            Pattern::Command(Box::new(rule), text.to_string())
        }
    })
}

fn read_rule(number: usize, item: &Value) -> Result<Rule, String> {
    let items = sexp::list_items(item).map_err(|_| {
        "a rule is a list (DECISION TOOL [PATTERN…] [:scope …] [:match …])".to_string()
    })?;
    let mut it = items.into_iter();
    let permit = match it.next() {
        Some(Value::Symbol(s)) => match &**s {
            "allow" => Permit::Allow,
            "ask" => Permit::Ask,
            "deny" => Permit::Deny,
            other => return Err(format!("the decision is allow, ask or deny, not {other}")),
        },
        Some(other) => {
            return Err(format!(
                "the decision is allow, ask or deny, not {}",
                sexp::print(other)
            ))
        }
        None => return Err("the rule is empty".into()),
    };
    let tool = match it.next() {
        Some(Value::String(s) | Value::Symbol(s)) if !s.is_empty() => s.to_string(),
        Some(other) => {
            return Err(format!(
                "the tool or verb must be a name, not {}",
                sexp::print(other)
            ))
        }
        None => return Err("it names no tool or verb".into()),
    };
    let rest: Vec<&Value> = it.collect();
    let patterns_end = rest
        .iter()
        .position(|v| matches!(v, Value::Keyword(_)))
        .unwrap_or(rest.len());
    let kind = glob_subject_kind(&tool);
    let mut patterns = Vec::new();
    for v in &rest[..patterns_end] {
        let Value::String(text) = v else {
            return Err(format!(
                "a pattern must be a string, not {}",
                sexp::print(v)
            ));
        };
        let Some(kind) = kind else {
            return Err(format!(
                "{tool} has no path, command or code to match, so it takes no pattern"
            ));
        };
        patterns.push(pattern(kind, permit, text)?);
    }
    let mut rule = Rule {
        number,
        permit,
        tool_glob: Glob::new(&tool.replace('_', "-")),
        tool,
        patterns,
        scope: Scope::Any,
        reason: None,
    };
    let mut examples = (Vec::new(), Vec::new());
    let mut keys = rest[patterns_end..].chunks(2);
    for pair in keys.by_ref() {
        let (Value::Keyword(key), Some(value)) = (pair[0], pair.get(1)) else {
            return Err(format!(
                "after the patterns come :keyword value pairs; {} has no value",
                sexp::print(pair[0])
            ));
        };
        match &**key {
            "scope" => rule.scope = scope(value)?,
            "reason" => rule.reason = strings(value, ":reason")?.into_iter().next(),
            "match" => examples.0 = strings(value, ":match examples")?,
            "not-match" => examples.1 = strings(value, ":not-match examples")?,
            other => {
                return Err(format!(
                    "unknown key :{other} (the keys are :scope, :match, :not-match, :reason)"
                ))
            }
        }
    }
    check_examples(&rule, kind, &examples.0, &examples.1)?;
    Ok(rule)
}

fn scope(value: &Value) -> Result<Scope, String> {
    match value {
        Value::Symbol(s) if &**s == "chat" => Ok(Scope::Chat),
        Value::Symbol(s) if &**s == "background" => Ok(Scope::Background),
        Value::Symbol(s) if &**s == "t" || &**s == "any" => Ok(Scope::Any),
        Value::String(s) if !s.is_empty() => Ok(Scope::Skill(s.to_string())),
        other => Err(format!(
            ":scope is chat, background or a skill's name as a string, not {}",
            sexp::print(other)
        )),
    }
}

/// A rule's examples, as subjects of its tool: each `:match` must match it, no `:not-match`
/// may.
fn check_examples(
    rule: &Rule,
    kind: Option<SubjectKind>,
    matching: &[String],
    not_matching: &[String],
) -> Result<(), String> {
    if kind.is_none() && !(matching.is_empty() && not_matching.is_empty()) {
        return Err(format!(
            "{} has no subject, so it takes no examples",
            rule.tool
        ));
    }
    let subject = |example: &str| match kind {
        Some(SubjectKind::Path) => expand_home(example),
        _ => example.to_string(),
    };
    for example in matching {
        if rule.matches_subject(Some(&subject(example))).is_none() {
            return Err(format!(
                "its example {example:?} (:match) does not match it"
            ));
        }
    }
    for example in not_matching {
        if rule.matches_subject(Some(&subject(example))).is_some() {
            return Err(format!("its example {example:?} (:not-match) matches it"));
        }
    }
    Ok(())
}

/// Where `path` (absolute or `~/…`) really leads, or `path` itself when it cannot be
/// resolved (a dangling link, a loop: the path gate refuses those).
fn real(path: &str) -> String {
    use crate::notes::paths::{home_dir, resolve};
    // Resolved as the path gate resolves it (`~`, `..`, links, a file not written yet), so
    // a rule sees the same file the confinement judged.
    resolve(path, &home_dir())
        .map(|r| r.real_key())
        .unwrap_or_else(|_| path.to_string())
}

/// The file an edit at the node `id`, or in `file`, changes, as the store names it.
fn file_of(id: Option<&str>, file: Option<&str>, notes: Option<&Notes>) -> Option<String> {
    file.map(str::to_string)
        .or_else(|| notes?.node(id?).ok().map(|r| r.doc.path.to_string()))
}

/// What an action is about, for the rules: the tool or verb it names and its subject, a
/// path as it really leads.
pub fn subject_of(action: &Action, notes: Option<&Notes>) -> (String, Option<String>) {
    match action {
        Action::Tool { name, args } => {
            let arg = |key: &str| match sexp::plist_get(args.value(), key) {
                Some(Value::String(s)) => Some(s.to_string()),
                _ => None,
            };
            let subject = match subject_kind(name) {
                Some(SubjectKind::Path) => arg("path").map(|p| real(&p)),
                Some(SubjectKind::Command) => arg("command"),
                Some(SubjectKind::Code) => arg("code"),
                Some(SubjectKind::McpTool) | None => None,
            };
            (name.clone(), subject)
        }
        Action::Emacs(e) => {
            let (id, file) = e.target();
            let file = file_of(id, file, notes);
            (e.name().to_string(), file.map(|f| real(&f)))
        }
    }
}

/// The other file an edit touches, for the rules: where a refile moves a subtree, the file
/// of the node a link points to, a new note's file (as it really leads).
pub fn second_subject(action: &Action, notes: Option<&Notes>) -> Option<String> {
    let Action::Emacs(e) = action else {
        return None;
    };
    if e.new_file().is_some() {
        return notes?.edit_target(e).ok().flatten().map(|t| real(&t.file));
    }
    let (id, file) = e.destination();
    Some(real(&file_of(id, file, notes)?))
}

/// The user's rules for an edit at two places: a deny or an ask at either end holds (the
/// strictest wins); an allow holds only when a rule allows both ends.
fn both_ends(first: Option<Match>, second: Option<Match>) -> Option<Match> {
    let strict = |m: &Option<Match>| {
        m.as_ref()
            .filter(|m| m.permit != Permit::Allow)
            .map(|m| m.permit)
    };
    match (strict(&first), strict(&second)) {
        (Some(a), Some(b)) if b > a => second,
        (Some(_), _) => first,
        (None, Some(_)) => second,
        (None, None) if first.is_some() && second.is_some() => first,
        (None, None) => None,
    }
}

/// The user's policy as a gate: a matching `deny` denies, `ask` asks (unless the kind was
/// approved for the conversation), `allow` permits — the gates after it see the action as
/// approved by the user (see [`Decision::Permit`]), so only the walls still ask.
pub struct PermissionGate {
    pub permissions: std::sync::Arc<Permissions>,
    pub notes: Option<Notes>,
}

impl Gate for PermissionGate {
    fn name(&self) -> &str {
        "permissions"
    }

    fn user_policy(&self) -> bool {
        true
    }

    fn check(&self, action: &Action, ctx: &Context) -> Result<Decision, String> {
        let (tool, subject) = subject_of(action, self.notes.as_ref());
        let found = if subject_kind(&tool) == Some(SubjectKind::Command) {
            // Rules with command patterns are the command gate's, which judges each part of
            // a line; here only those about every command (`(ask run_command)`).
            self.permissions.decide(&tool, None, ctx)
        } else {
            let first = self.permissions.decide(&tool, subject.as_deref(), ctx);
            match second_subject(action, self.notes.as_ref()) {
                Some(other) => both_ends(first, self.permissions.decide(&tool, Some(&other), ctx)),
                None => first,
            }
        };
        let Some(m) = found else {
            return Ok(Decision::Allow);
        };
        // The model reads this: the rule's number, never its patterns (they may name private
        // paths).
        let said = format!("rule {} of org-agent-permissions", m.number);
        Ok(match m.permit {
            Permit::Deny => Decision::Deny(format!("{said} denies {tool} here")),
            Permit::Ask if ctx.approved.contains(&action.kind()) => Decision::Allow,
            Permit::Ask => Decision::Ask(format!("{said} asks before {tool}")),
            Permit::Allow => Decision::Permit(format!("{said} allows {tool} here")),
        })
    }
}

#[cfg(test)]
mod tests;

/// For the user (`M-x org-agent-permissions-explain`): what `pipeline` decides about `action`
/// in `ctx`, every rule of `permissions` that matched and why, and each gate's part.
pub fn explain(
    pipeline: &super::Pipeline,
    permissions: &Permissions,
    action: Action,
    ctx: &Context,
    notes: Option<&Notes>,
) -> String {
    let (tool, subject) = subject_of(&action, notes);
    let mut out = match &subject {
        Some(s) => format!("Action: {tool} on {s:?}\n"),
        None => format!("Action: {tool}\n"),
    };
    let scope = if ctx.background {
        "a background run"
    } else {
        "the chat"
    };
    out.push_str(&format!("Scope: {scope}"));
    let mut skills: Vec<&String> = ctx.skills_in_use.iter().collect();
    skills.sort();
    if !skills.is_empty() {
        let names: Vec<&str> = skills.iter().map(|s| s.as_str()).collect();
        out.push_str(&format!(", skills in use: {}", names.join(", ")));
    }
    out.push_str("\n\nRules of org-agent-permissions that match:\n");
    let matches = permissions.matches(&tool, subject.as_deref(), ctx);
    if matches.is_empty() {
        out.push_str("  none: the default policy and the skills decide\n");
    }
    for m in &matches {
        out.push_str(&format!(
            "  rule {} {}: {} ({})\n",
            m.number,
            m.rule,
            m.permit.name(),
            m.why
        ));
    }
    let verdict = pipeline.decide(action, ctx);
    out.push_str("\nGates, in order:\n");
    for step in &verdict.steps {
        out.push_str(&format!("  {:<22} {}", step.gate, step.decision));
        if !step.reason.is_empty() {
            out.push_str(&format!(": {}", step.reason));
        }
        out.push('\n');
    }
    let (decision, reasons) = match &verdict.outcome {
        super::Outcome::Allow(_) => ("allow", Vec::new()),
        super::Outcome::Ask { reasons, .. } => ("ask", reasons.clone()),
        super::Outcome::Deny { reasons } => ("deny", reasons.clone()),
    };
    out.push_str(&format!("\nDecision: {decision}"));
    if !reasons.is_empty() {
        out.push_str(&format!(" ({})", reasons.join("; ")));
    }
    out.push('\n');
    out
}
