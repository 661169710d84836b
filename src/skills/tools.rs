//! A skill's tools (`* Tools`): each subheading an alias of a built-in tool with some of its
//! arguments fixed or defaulted, or an `emacs-lisp` block (shipped and user skills only) run
//! in Emacs like a tool of `org-agent-define-tool`. Read and checked when the skill loads
//! (every error names its line); offered to the model, as `SKILL__TOOL`, while the skill is in
//! use.
//!
//! An alias is a [`Tool`] of its own: its parameters are the built-in's minus the fixed ones
//! (the model cannot give those: the schema refuses them), its defaulted ones optional, and its
//! body the built-in's with the arguments merged. An Elisp tool is an [`ElispTool`] with its
//! parameters kept here, so a call is checked against them before it is gated or sent to
//! Emacs, which defines the function from the block's text when the skills load
//! ([`elisp_code`]).

use super::mcp_alias::{McpAliasTool, PendingMcpAlias};
use super::{AliasArgument, Skill, SkillTool, SkillToolKind, Source};
use crate::mcp::client::Offered;
use crate::notes::Notes;
use crate::tools::emacs::ElispTool;
use crate::tools::{
    check_args, params_schema, Args, Param, ParamType, Registry, Tool, ToolError, ToolSet,
    MAX_TOOL_NAME,
};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Before an alias argument's value, it is a default the model may change, not fixed.
pub const DEFAULT_PREFIX: &str = "default:";

/// The name the model calls tool `tool` of skill `skill` by.
pub fn tool_name(skill: &str, tool: &str) -> String {
    crate::tools::namespaced(skill, tool)
}

/// What a skill file says of one tool heading.
pub(super) struct ToolText<'a> {
    /// The heading's title.
    pub name: &'a str,
    pub line: usize,
    /// Its properties: (key as written, value, line).
    pub properties: Vec<(&'a str, &'a str, usize)>,
    /// The text under the heading, blocks left out.
    pub prose: String,
    /// The first `emacs-lisp` block's contents.
    pub elisp: Option<String>,
}

/// The tool `text` describes in skill `skill` of `source`, checked: its name, what it aliases
/// and the arguments it fixes, or its Elisp parameters. An error is `(line, message)`.
pub(super) fn read_tool(
    skill: &str,
    text: &ToolText,
    source: Source,
) -> Result<SkillTool, (usize, String)> {
    let name = text.name;
    check_tool_name(skill, name).map_err(|m| (text.line, m))?;
    let alias = text
        .properties
        .iter()
        .find(|(k, _, _)| k.eq_ignore_ascii_case("ALIAS"));
    let kind = match (alias, &text.elisp) {
        (Some(_), Some(_)) => {
            return Err((text.line, format!("tool {name} is both an alias and Elisp")))
        }
        (None, None) => {
            return Err((
                text.line,
                format!("tool {name} has neither :ALIAS: nor an emacs-lisp block"),
            ))
        }
        (Some(&(_, builtin, line)), None) => alias_kind(name, builtin, line, text)?,
        (None, Some(_)) if matches!(source, Source::Imported | Source::Agent) => {
            return Err((
                text.line,
                format!("tool {name}: only shipped and user skills may run Elisp"),
            ))
        }
        (None, Some(code)) => elisp_kind(name, code, text)?,
    };
    if matches!(kind, SkillToolKind::Elisp { .. }) && text.prose.is_empty() {
        return Err((
            text.line,
            format!("tool {name}: say what it does under its heading (the model reads it)"),
        ));
    }
    Ok(SkillTool {
        name: name.to_owned(),
        description: text.prose.clone(),
        kind,
        line: text.line,
    })
}

/// A tool's name: letters, digits, `_` and `-`, and with its skill's name a name every
/// provider takes.
fn check_tool_name(skill: &str, name: &str) -> Result<(), String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || !name.chars().all(valid) {
        return Err(format!(
            "the tool name {name:?} is not letters, digits, _ and - only"
        ));
    }
    let full = tool_name(skill, name);
    if full.len() > MAX_TOOL_NAME {
        return Err(format!(
            "the tool's name as the model calls it, {full}, is over {MAX_TOOL_NAME} characters"
        ));
    }
    if !skill.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(format!(
            "tool {name}: a skill whose name starts with a digit cannot bring tools (some \
             providers want a tool's name to start with a letter)"
        ));
    }
    Ok(())
}

/// An alias of `builtin` (on line `line`), its other properties the arguments it gives.
fn alias_kind(
    name: &str,
    builtin: &str,
    line: usize,
    text: &ToolText,
) -> Result<SkillToolKind, (usize, String)> {
    let builtins = Registry::for_aliases();
    let Some(tool) = builtins.get(builtin) else {
        if is_mcp_name(builtin) {
            return Ok(mcp_alias_kind(builtin, text));
        }
        return Err((
            line,
            format!(
                "tool {name}: :ALIAS: {builtin:?} is neither a built-in tool (they are: {}) \
                 nor an MCP server's tool (SERVER__TOOL)",
                builtins.names().join(", ")
            ),
        ));
    };
    let mut arguments = Vec::new();
    for &(key, value, at) in &text.properties {
        if key.eq_ignore_ascii_case("ALIAS") {
            continue;
        }
        let key = key.to_ascii_lowercase();
        let Some(param) = tool.params.iter().find(|p| p.name == key.as_str()) else {
            let known: Vec<&str> = tool.params.iter().map(|p| &*p.name).collect();
            return Err((
                at,
                format!(
                    "tool {name}: {builtin} takes no argument {key} (it takes: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let (default, value) = match value.strip_prefix(DEFAULT_PREFIX) {
            Some(rest) => (true, rest.trim()),
            None => (false, value),
        };
        let value = typed(param.kind, value)
            .map_err(|m| (at, format!("tool {name}: argument {key}: {m}")))?;
        arguments.push(AliasArgument {
            name: key,
            value,
            default,
            line: at,
        });
    }
    Ok(SkillToolKind::Alias {
        builtin: builtin.to_owned(),
        arguments,
    })
}

/// Whether `name` can name an MCP server's tool as the model calls it: `SERVER__TOOL`, of the
/// characters every provider takes.
fn is_mcp_name(name: &str) -> bool {
    name.split_once(crate::tools::SEPARATOR)
        .is_some_and(|(server, tool)| !server.is_empty() && !tool.is_empty())
        && name.len() <= MAX_TOOL_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// An alias of the MCP tool `target`, its other properties kept as written: only the
/// server's schema, listed at a turn, says what they are ([`super::mcp_alias`]).
fn mcp_alias_kind(target: &str, text: &ToolText) -> SkillToolKind {
    let arguments = text
        .properties
        .iter()
        .filter(|(key, _, _)| !key.eq_ignore_ascii_case("ALIAS"))
        .map(|&(key, value, line)| {
            let (default, value) = match value.strip_prefix(DEFAULT_PREFIX) {
                Some(rest) => (true, rest.trim()),
                None => (false, value),
            };
            AliasArgument {
                name: key.to_owned(),
                value: Value::String(value.to_owned()),
                default,
                line,
            }
        })
        .collect();
    SkillToolKind::McpAlias {
        tool: target.to_owned(),
        arguments,
    }
}

/// A property's `text` as a value of type `kind`.
fn typed(kind: ParamType, text: &str) -> Result<Value, String> {
    if text.is_empty() {
        return Err("no value".into());
    }
    kind.read_text(text)
}

/// An Elisp tool of `code`: each property but `:CONFIRM:` a parameter, `[optional] TYPE
/// DESCRIPTION`, in the order of the function's arguments.
fn elisp_kind(name: &str, code: &str, text: &ToolText) -> Result<SkillToolKind, (usize, String)> {
    if code.trim().is_empty() {
        return Err((
            text.line,
            format!("tool {name}: its emacs-lisp block is empty"),
        ));
    }
    let mut params: Vec<Param> = Vec::new();
    let mut confirm = false;
    for &(key, value, at) in &text.properties {
        if key.eq_ignore_ascii_case("CONFIRM") {
            confirm = match value {
                "t" => true,
                "nil" => false,
                other => {
                    return Err((
                        at,
                        format!("tool {name}: :CONFIRM: is t or nil, not {other:?}"),
                    ))
                }
            };
            continue;
        }
        let param = elisp_param(&key.to_ascii_lowercase(), value)
            .map_err(|m| (at, format!("tool {name}: {m}")))?;
        params.push(param);
    }
    Ok(SkillToolKind::Elisp {
        code: code.to_owned(),
        params,
        confirm,
    })
}

/// The words that make an Elisp tool's parameter optional, before its type.
const OPTIONAL: [&str; 2] = ["optional", "[optional]"];

/// What an Elisp tool's parameter may say, for errors.
const PARAM_FORMS: &str = "a parameter is TYPE DESCRIPTION, or optional TYPE DESCRIPTION \
     (also written [optional] TYPE DESCRIPTION), the type string, integer, number or boolean";

/// The parameter `key` declares with `value`: `TYPE DESCRIPTION`, or `optional TYPE
/// DESCRIPTION` (`[optional]` as the README writes it). Its name is an argument of an Elisp
/// function and a JSON property.
fn elisp_param(key: &str, value: &str) -> Result<Param, String> {
    let symbol = key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !symbol || key == "nil" || key == "t" {
        return Err(format!(
            "the parameter {key:?} is not a name (a letter, then letters, digits, _ or -)"
        ));
    }
    let mut words = value.split_whitespace().peekable();
    let required = words
        .next_if(|w| OPTIONAL.contains(&w.to_ascii_lowercase().as_str()))
        .is_none();
    let Some(kind_word) = words.next() else {
        return Err(format!("the parameter {key} says no type: {PARAM_FORMS}"));
    };
    let kind = ParamType::from_json_name(kind_word)
        .ok_or_else(|| format!("the parameter {key}'s type is not {kind_word:?}: {PARAM_FORMS}"))?;
    Ok(Param {
        name: key.to_owned().into(),
        kind,
        description: words.collect::<Vec<_>>().join(" ").into(),
        required,
    })
}

/// The tools of one skill as a turn offers them: while the skill is in use.
pub struct SkillTools {
    pub skill: String,
    /// Its aliases of built-in tools, run on workers like them.
    pub worker: Arc<ToolSet>,
    /// Its Elisp tools, run in Emacs by the operator.
    pub elisp: Vec<SkillElispTool>,
    /// Its aliases of MCP servers' tools, as written…
    pub mcp_pending: Vec<PendingMcpAlias>,
    /// …and those the servers offer in this turn ([`SkillTools::resolve_mcp`]).
    pub mcp: Vec<McpAliasTool>,
}

/// An Elisp tool of a skill: its declaration, and its parameters, against which a call is
/// checked before anything else happens to it.
pub struct SkillElispTool {
    pub declaration: ElispTool,
    pub params: Vec<Param>,
}

impl SkillTools {
    /// The tools of `skill` the model may see under `notes`' privacy rules, to offer: those
    /// whose headings are not private, described as the notes layer shows text (see
    /// [`Skill::as_shown`]); none when the skill's file is private as a whole.
    pub fn shown(skill: &Skill, notes: &Notes) -> Result<SkillTools, String> {
        match skill.as_shown(notes) {
            Some(shown) => SkillTools::of(&shown),
            None => SkillTools::of(&Skill {
                tools: Vec::new(),
                ..skill.clone()
            }),
        }
    }

    /// The tools of `skill`, which the loader checked; `Err` when a built-in it aliases is
    /// gone. All of them, private or not: for the rules that bound the skill; a turn offers
    /// [`SkillTools::shown`].
    pub fn of(skill: &Skill) -> Result<SkillTools, String> {
        let builtins = Registry::for_aliases();
        let mut registry = Registry::default();
        let mut elisp = Vec::new();
        let mut mcp_pending = Vec::new();
        for tool in &skill.tools {
            let name = tool_name(&skill.name, &tool.name);
            match &tool.kind {
                SkillToolKind::Alias { builtin, arguments } => {
                    let Some(builtin) = builtins.get(builtin) else {
                        return Err(format!(
                            "skill {}: tool {} aliases {builtin}, which is not a built-in tool",
                            skill.name, tool.name
                        ));
                    };
                    registry.register(alias(name, &tool.description, builtin.clone(), arguments));
                }
                SkillToolKind::Elisp {
                    params, confirm, ..
                } if matches!(skill.source, Source::Shipped | Source::User) => {
                    elisp.push(SkillElispTool {
                        declaration: ElispTool {
                            name,
                            description: tool.description.clone(),
                            parameters: params_schema(params),
                            confirm: *confirm,
                        },
                        params: params.clone(),
                    })
                }
                // The parser refuses Elisp in other skills; a skill built otherwise gets none.
                SkillToolKind::Elisp { .. } => {}
                SkillToolKind::McpAlias {
                    tool: target,
                    arguments,
                } => mcp_pending.push(PendingMcpAlias {
                    name,
                    description: tool.description.clone(),
                    target: target.clone(),
                    arguments: arguments.clone(),
                }),
            }
        }
        Ok(SkillTools {
            skill: skill.name.clone(),
            worker: Arc::new(ToolSet {
                source: format!("skill {}", skill.name),
                registry,
            }),
            elisp,
            mcp_pending,
            mcp: Vec::new(),
        })
    }

    /// Make the aliases of MCP tools the tools `offered` in this turn allows; the notices of
    /// those left out, and why.
    pub fn resolve_mcp(&mut self, offered: &Offered) -> Vec<String> {
        let mut notices = Vec::new();
        self.mcp = self
            .mcp_pending
            .iter()
            .filter_map(|alias| alias.resolve(offered).map_err(|m| notices.push(m)).ok())
            .collect();
        notices
    }

    /// The alias of an MCP tool the model calls `name`, if it is one of these and offered.
    pub fn mcp_alias(&self, name: &str) -> Option<&McpAliasTool> {
        self.mcp.iter().find(|t| t.name == name)
    }

    /// Whether the skill brings no tool.
    pub fn is_empty(&self) -> bool {
        self.worker.registry.names().is_empty()
            && self.elisp.is_empty()
            && self.mcp_pending.is_empty()
    }

    /// Every tool's name, as the model calls it (the aliases of MCP tools too, offered or
    /// not: no MCP tool may take their names).
    pub fn names(&self) -> Vec<&str> {
        let mut names = self.worker.registry.names();
        names.extend(self.elisp.iter().map(|t| t.declaration.name.as_str()));
        names.extend(self.mcp_pending.iter().map(|t| t.name.as_str()));
        names
    }

    /// Every tool's declaration, for a request.
    pub fn function_schemas(&self) -> Vec<Value> {
        let mut all = self.worker.registry.function_schemas();
        all.extend(self.elisp.iter().map(|t| t.declaration.function_schema()));
        all.extend(self.mcp.iter().map(McpAliasTool::function_schema));
        all
    }

    /// The Elisp tool called `name`, if it is one of these.
    pub fn elisp_tool(&self, name: &str) -> Option<&SkillElispTool> {
        self.elisp.iter().find(|t| t.declaration.name == name)
    }

    /// Check a call of tool `name` with `args` against its parameters; `None` when `name` is
    /// not one of these tools.
    pub fn check(&self, name: &str, args: &Value) -> Option<Result<Args, ToolError>> {
        if let Some(tool) = self.worker.registry.get(name) {
            return Some(tool.check(args));
        }
        let tool = self.elisp_tool(name)?;
        Some(check_args(name, &tool.params, args))
    }
}

/// The alias `name` of `builtin` with `arguments`, described by `prose` (the built-in's
/// description when there is none).
fn alias(name: String, prose: &str, builtin: Arc<Tool>, arguments: &[AliasArgument]) -> Tool {
    let value_of = |a: &AliasArgument| match &a.value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let fixed: Map<String, Value> = arguments
        .iter()
        .filter(|a| !a.default)
        .map(|a| (a.name.clone(), a.value.clone()))
        .collect();
    let defaults: Map<String, Value> = arguments
        .iter()
        .filter(|a| a.default)
        .map(|a| (a.name.clone(), a.value.clone()))
        .collect();
    let params = builtin
        .params
        .iter()
        .filter(|p| !fixed.contains_key(&*p.name))
        .map(
            |p| match arguments.iter().find(|a| a.default && a.name == p.name) {
                Some(a) => Param {
                    required: false,
                    description: format!("{} (default {})", p.description, value_of(a)).into(),
                    ..p.clone()
                },
                None => p.clone(),
            },
        )
        .collect();
    let mut description = if prose.is_empty() {
        builtin.description.to_string()
    } else {
        prose.to_owned()
    };
    let given: Vec<String> = arguments
        .iter()
        .filter(|a| !a.default)
        .map(|a| format!("{}={}", a.name, value_of(a)))
        .collect();
    if !given.is_empty() {
        description.push_str(&format!(" ({} with {})", builtin.name, given.join(", ")));
    }
    Tool {
        name: name.into(),
        description: description.into(),
        params,
        body: Box::new(move |notes: &Notes, args: &Args| {
            let mut merged = args.as_map().clone();
            merged.retain(|_, v| !v.is_null());
            for (key, value) in &defaults {
                merged.entry(key.clone()).or_insert_with(|| value.clone());
            }
            merged.extend(fixed.clone());
            let args = builtin
                .check(&Value::Object(merged))
                .map_err(|e| e.to_string())?;
            (builtin.body)(notes, &args)
        }),
    }
}

/// An Elisp tool as Emacs defines it when the skills load: the name the model calls, the
/// names of its parameters in order (the function's arguments) and the block's text (the
/// function's body, read in Emacs, never evaluated here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElispCode {
    pub name: String,
    pub args: Vec<String>,
    pub code: String,
}

/// The Elisp tools of `skill` for Emacs to define: none unless it is a shipped or user skill.
pub fn elisp_code(skill: &Skill) -> Vec<ElispCode> {
    if !matches!(skill.source, Source::Shipped | Source::User) {
        return Vec::new();
    }
    skill
        .tools
        .iter()
        .filter_map(|t| match &t.kind {
            SkillToolKind::Elisp { code, params, .. } => Some(ElispCode {
                name: tool_name(&skill.name, &t.name),
                args: params.iter().map(|p| p.name.to_string()).collect(),
                code: code.clone(),
            }),
            SkillToolKind::Alias { .. } | SkillToolKind::McpAlias { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::Privacy;
    use crate::skills::{parse_skill, SkillError};
    use crate::store::{Config, Store};
    use serde_json::json;

    const SKILL: &str = "#+SKILL_NAME: waiting
#+DESCRIPTION: Use when the user asks what waits.
* Tools
** stale
:PROPERTIES:
:ALIAS: query_notes
:TODO:  WAITING
:LIMIT: default: 1
:END:
What waits on someone else.
** count
:PROPERTIES:
:FILE: string the file
:DAYS: optional integer how many days back
:CONFIRM: t
:END:
Count the words of a file.
#+begin_src emacs-lisp
(length file)
#+end_src
";

    fn skill(text: &str) -> Result<Skill, SkillError> {
        parse_skill("/s/waiting.org", text, Source::User)
    }

    fn notes() -> Notes {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text(
                "/n/a.org",
                "#+TODO: TODO WAITING | DONE\n* WAITING Reply from the bank\n* WAITING Parts for the bike\n* TODO Call mum\n",
                None,
                None,
                None,
            )
            .unwrap();
        Notes::new(Arc::new(store), Arc::new(Privacy::none()))
    }

    #[test]
    fn an_alias_runs_its_built_in_with_the_fixed_arguments() {
        let tools = SkillTools::of(&skill(SKILL).unwrap()).unwrap();
        assert_eq!(tools.names(), ["waiting__stale", "waiting__count"]);
        let stale = tools.worker.registry.get("waiting__stale").unwrap();
        assert!(stale.description.starts_with("What waits on someone else."));
        assert!(stale.description.contains("query_notes with todo=WAITING"));
        let schema = stale.schema();
        let props = schema["properties"].as_object().unwrap();
        assert!(
            !props.contains_key("todo"),
            "a fixed argument is not offered"
        );
        assert!(props.contains_key("tag") && props.contains_key("file"));
        assert!(props["limit"]["description"]
            .as_str()
            .unwrap()
            .ends_with("(default 1)"));
        assert_eq!(schema["required"], json!([]));
        let notes = notes();
        let call = |args| tools.worker.registry.call(&notes, "waiting__stale", &args);
        // The default applies when the model gives none; the fixed TODO state always.
        let out = call(json!({})).unwrap();
        assert!(out.starts_with("2 matching headlines, first 1:"), "{out}");
        assert!(!out.contains("Call mum"), "{out}");
        let out = call(json!({"limit": 5})).unwrap();
        assert!(out.contains("Reply from the bank") && out.contains("Parts for the bike"));
        assert!(!out.contains("Call mum"), "{out}");
        // The model cannot give a fixed argument: the schema refuses it before the body.
        let e = call(json!({"todo": "TODO"})).unwrap_err();
        assert!(
            matches!(&e, ToolError::BadArguments { message, .. }
                     if message.contains("unknown argument \"todo\"")),
            "{e}"
        );
        let e = call(json!({"limit": "many"})).unwrap_err();
        assert!(e.to_string().contains("must be a Integer"), "{e}");
    }

    #[test]
    fn an_alias_with_nothing_to_say_says_what_its_built_in_does() {
        let text = SKILL.replace("What waits on someone else.\n", "");
        let tools = SkillTools::of(&skill(&text).unwrap()).unwrap();
        let stale = tools.worker.registry.get("waiting__stale").unwrap();
        assert!(
            stale
                .description
                .starts_with("Find headlines in the user's Org notes"),
            "{}",
            stale.description
        );
        // A required parameter of the built-in given a default is optional.
        let text = SKILL.replace(
            ":ALIAS: query_notes\n:TODO:  WAITING\n:LIMIT: default: 1\n",
            ":ALIAS: search_notes\n:TEXT: default:bank\n",
        );
        let tools = SkillTools::of(&skill(&text).unwrap()).unwrap();
        let search = tools.worker.registry.get("waiting__stale").unwrap();
        assert_eq!(search.schema()["required"], json!([]));
        let out = tools
            .worker
            .registry
            .call(&notes(), "waiting__stale", &json!({}))
            .unwrap();
        assert!(
            out.contains("Reply from the bank") && !out.contains("bike"),
            "{out}"
        );
    }

    #[test]
    fn an_elisp_tool_is_declared_with_its_parameters_and_checked() {
        let s = skill(SKILL).unwrap();
        let tools = SkillTools::of(&s).unwrap();
        let count = tools.elisp_tool("waiting__count").unwrap();
        assert!(count.declaration.confirm);
        assert_eq!(count.declaration.description, "Count the words of a file.");
        let p = &count.declaration.parameters;
        assert_eq!(p["required"], json!(["file"]));
        assert_eq!(p["properties"]["days"]["type"], "integer");
        assert_eq!(p["properties"]["days"]["description"], "how many days back");
        assert!(tools
            .check("waiting__count", &json!({"file": "/a"}))
            .unwrap()
            .is_ok());
        let e = tools
            .check("waiting__count", &json!({"days": 3}))
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("\"file\" is required"), "{e}");
        let e = tools
            .check("waiting__count", &json!({"file": "/a", "days": "3"}))
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("must be a Integer"), "{e}");
        assert!(tools.check("query_notes", &json!({})).is_none());
        assert_eq!(
            elisp_code(&s),
            [ElispCode {
                name: "waiting__count".into(),
                args: vec!["file".into(), "days".into()],
                code: "(length file)".into(),
            }]
        );
    }

    #[test]
    fn an_optional_parameter_is_written_as_the_readme_writes_it() {
        // skills/README.org: `[optional] TYPE DESCRIPTION`; `optional` bare is the same.
        for optional in ["[optional]", "optional", "OPTIONAL"] {
            let text = SKILL.replace(
                ":DAYS: optional integer",
                &format!(":DAYS: {optional} integer"),
            );
            let tools = SkillTools::of(&skill(&text).unwrap()).unwrap();
            let p = &tools
                .elisp_tool("waiting__count")
                .unwrap()
                .declaration
                .parameters;
            assert_eq!(p["required"], json!(["file"]), "{optional}");
            assert_eq!(p["properties"]["days"]["type"], "integer", "{optional}");
            assert_eq!(p["properties"]["days"]["description"], "how many days back");
        }
        // Any other word before the type is refused, saying what is accepted.
        for bad in [
            ":DAYS: (optional) integer",
            ":DAYS: [opt] integer",
            ":DAYS:  [optional]",
        ] {
            let e = skill(&SKILL.replace(":DAYS: optional integer", bad)).expect_err(bad);
            assert_eq!(e.line, 14, "{bad}: {e}");
            for says in [
                "TYPE DESCRIPTION, or optional TYPE DESCRIPTION",
                "[optional] TYPE DESCRIPTION",
                "string, integer, number or boolean",
            ] {
                assert!(e.message.contains(says), "{bad}: {e}");
            }
        }
    }

    #[test]
    fn mistakes_are_load_errors_on_their_line() {
        for (from, to, line, says) in [
            (
                ":ALIAS: query_notes",
                ":ALIAS: shell",
                6,
                "\"shell\" is neither a built-in tool",
            ),
            (
                ":ALIAS: query_notes",
                ":ALIAS: files__",
                6,
                "nor an MCP server's tool (SERVER__TOOL)",
            ),
            (
                ":TODO:  WAITING",
                ":COLOUR: red",
                7,
                "query_notes takes no argument colour",
            ),
            (
                ":LIMIT: default: 1",
                ":LIMIT: ten",
                8,
                "\"ten\" is not integer",
            ),
            (
                ":TODO:  WAITING",
                ":PROJECTS: maybe",
                7,
                "\"maybe\" is not t or nil",
            ),
            (":TODO:  WAITING", ":TODO:", 7, "no value"),
            (
                "** stale",
                "** stale one",
                4,
                "not letters, digits, _ and -",
            ),
            (
                "** count",
                "** stale",
                11,
                "a second tool named stale (the first is on line 4)",
            ),
            (
                ":DAYS: optional integer",
                ":DAYS: optional date",
                14,
                "not \"date\"",
            ),
            (
                ":DAYS: optional integer",
                ":T: integer",
                14,
                "\"t\" is not a name",
            ),
            (
                ":CONFIRM: t",
                ":CONFIRM: please",
                15,
                ":CONFIRM: is t or nil",
            ),
            ("Count the words of a file.\n", "", 11, "say what it does"),
            ("(length file)\n", "", 11, "block is empty"),
        ] {
            assert!(SKILL.contains(from), "{from}");
            let e = skill(&SKILL.replacen(from, to, 1)).expect_err(to);
            assert_eq!(
                (e.line, e.message.contains(says)),
                (line, true),
                "{to}: {e}"
            );
        }
        let long = SKILL.replace("** stale", &format!("** {}", "s".repeat(60)));
        assert!(skill(&long)
            .unwrap_err()
            .message
            .contains("over 64 characters"));
        let digit = SKILL.replace("#+SKILL_NAME: waiting", "#+SKILL_NAME: 2fa");
        assert!(skill(&digit)
            .unwrap_err()
            .message
            .contains("starts with a digit"));
    }

    #[test]
    fn skill_tool_names_cannot_be_another_tools() {
        let mut names: Vec<String> = Registry::for_aliases()
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        names.extend(
            crate::tools::emacs::edit_schemas()
                .iter()
                .map(|s| s["function"]["name"].as_str().unwrap().to_owned()),
        );
        names.push(super::super::disclosure::USE_SKILL.to_owned());
        for name in &names {
            assert!(!name.contains(crate::tools::SEPARATOR), "{name}");
        }
        assert!(!tool_name("a-b", "c_d")
            .trim_start_matches("a-b__")
            .contains("a-b"));
    }
}
