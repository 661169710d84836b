//! Tools the LLM can call: a registry of named tools with JSON-schema parameters, exported
//! as function schemas, and the built-in tools that read the object store.
//!
//! Tool bodies here run on worker threads against a store snapshot; they only read. Results
//! are Org text, the language the rest of the prompt is in. Arguments come from the LLM and
//! are checked against the schema's names and types before a body sees them.

pub(crate) mod builtin;
pub mod emacs;
pub mod files;
pub mod sandbox;
pub mod shell;

use crate::llm::http::CancelToken;
use crate::notes::{Confinement, Notes};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ToolError {
    #[error("no tool named {0}")]
    Unknown(String),
    #[error("{tool}: {message}")]
    BadArguments { tool: String, message: String },
    #[error("{tool}: {message}")]
    Failed { tool: String, message: String },
}

/// The type of one parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
}

impl ParamType {
    /// The JSON schema type.
    pub fn json_name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }

    /// The type JSON schema calls `name`.
    pub fn from_json_name(name: &str) -> Option<ParamType> {
        [
            ParamType::String,
            ParamType::Integer,
            ParamType::Number,
            ParamType::Boolean,
        ]
        .into_iter()
        .find(|t| t.json_name() == name)
    }

    /// `text`, a value as Org writes it (a property of a skill's tool heading), as this
    /// type's JSON value; booleans are written `t`/`nil`, `true`/`false` or `yes`/`no`.
    pub fn read_text(self, text: &str) -> Result<Value, String> {
        let wrong = || format!("{text:?} is not {}", self.json_name());
        Ok(match self {
            ParamType::String => Value::String(text.to_owned()),
            ParamType::Integer => Value::from(text.parse::<i64>().map_err(|_| wrong())?),
            ParamType::Number => text
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
                .ok_or_else(wrong)?,
            ParamType::Boolean => match text {
                "t" | "true" | "yes" => Value::Bool(true),
                "nil" | "false" | "no" => Value::Bool(false),
                _ => return Err(format!("{text:?} is not t or nil")),
            },
        })
    }

    fn admits(self, value: &Value) -> bool {
        match self {
            ParamType::String => value.is_string(),
            ParamType::Integer => value.is_i64(),
            ParamType::Number => value.is_number(),
            ParamType::Boolean => value.is_boolean(),
        }
    }
}

/// One parameter of a tool. Names are owned when a tool is declared at run time (a skill's
/// tools), borrowed for the tools written in Rust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: Cow<'static, str>,
    pub kind: ParamType,
    pub description: Cow<'static, str>,
    pub required: bool,
}

impl Param {
    /// A parameter of a tool written in Rust.
    pub const fn new(
        name: &'static str,
        kind: ParamType,
        description: &'static str,
        required: bool,
    ) -> Param {
        Param {
            name: Cow::Borrowed(name),
            kind,
            description: Cow::Borrowed(description),
            required,
        }
    }
}

/// Checked arguments of one call, and the turn's cancellation when the caller passes it
/// (a body that runs long, `run_command`, stops when it is cancelled).
#[derive(Debug, Default)]
pub struct Args(Map<String, Value>, Option<CancelToken>);

impl Args {
    /// The arguments as the JSON object they came in.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.0.get(name).and_then(Value::as_i64)
    }

    pub fn bool(&self, name: &str) -> bool {
        self.0.get(name).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The call's cancellation, if the caller gave one.
    pub fn cancel(&self) -> Option<&CancelToken> {
        self.1.as_ref()
    }
}

/// A tool: its name, what it is for, its parameters, and its body.
pub struct Tool {
    pub name: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub params: Vec<Param>,
    #[allow(clippy::type_complexity)]
    pub body: Box<dyn Fn(&Notes, &Args) -> Result<String, String> + Send + Sync>,
}

impl Tool {
    /// The JSON schema of the parameters.
    pub fn schema(&self) -> Value {
        params_schema(&self.params)
    }

    /// The tool as an OpenAI-style function declaration.
    pub fn function_schema(&self) -> Value {
        function_declaration(&self.name, &self.description, self.schema())
    }

    /// Check `args` (a JSON object; `null` means none) against the parameters.
    pub fn check(&self, args: &Value) -> Result<Args, ToolError> {
        check_args(&self.name, &self.params, args)
    }
}

/// The JSON schema of an argument object with `params`.
pub fn params_schema(params: &[Param]) -> Value {
    let mut props = Map::new();
    for p in params {
        props.insert(
            p.name.to_string(),
            json!({"type": p.kind.json_name(), "description": p.description}),
        );
    }
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| &*p.name)
        .collect();
    object_schema(props, &required)
}

/// Check `args` of a call of `tool` (a JSON object; `null` means none) against `params`:
/// known names only, each of its type, the required ones given.
pub fn check_args(tool: &str, params: &[Param], args: &Value) -> Result<Args, ToolError> {
    let bad = |message: String| ToolError::BadArguments {
        tool: tool.to_string(),
        message,
    };
    let map = match args {
        Value::Null => Map::new(),
        Value::Object(m) => m.clone(),
        other => return Err(bad(format!("arguments must be an object, not {other}"))),
    };
    for (key, value) in &map {
        let Some(p) = params.iter().find(|p| p.name == key.as_str()) else {
            let known: Vec<&str> = params.iter().map(|p| &*p.name).collect();
            return Err(bad(format!(
                "unknown argument {key:?} (known: {})",
                known.join(", ")
            )));
        };
        if !p.kind.admits(value) && !value.is_null() {
            return Err(bad(format!(
                "argument {key:?} must be a {:?}, not {value}",
                p.kind
            )));
        }
    }
    for p in params.iter().filter(|p| p.required) {
        if map.get(&*p.name).is_none_or(Value::is_null) {
            return Err(bad(format!("argument {:?} is required", p.name)));
        }
    }
    Ok(Args(map, None))
}

/// Between a namespace and a tool's own name in the names the model calls: a skill's tools
/// (`SKILL__TOOL`) and an MCP server's (`SERVER__TOOL`). No built-in, edit or skill-loading
/// tool has it in its name, and neither a skill's name (kebab-case) nor a server's prefix
/// can hold it, so a namespaced tool is never named like a built-in.
pub const SEPARATOR: &str = "__";

/// The longest tool name every provider takes (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME: usize = 64;

/// The name the model calls tool `tool` of `namespace` (a skill, an MCP server) by.
pub fn namespaced(namespace: &str, tool: &str) -> String {
    format!("{namespace}{SEPARATOR}{tool}")
}

/// An OpenAI-style function declaration: how every tool is offered to the LLM.
pub fn function_declaration(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": parameters,
        }
    })
}

/// The schema of an argument object with `properties`, of which `required` must be given,
/// and nothing else.
pub fn object_schema(properties: Map<String, Value>, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Tools from one source, offered together: the built-in tools, `use_skill`, a skill's
/// tools.
pub struct ToolSet {
    /// Where the tools come from ("built-in", a skill's name).
    pub source: String,
    pub registry: Registry,
}

impl ToolSet {
    /// The built-in tools: they read the notes, never change them.
    pub fn builtins() -> ToolSet {
        ToolSet {
            source: "built-in".into(),
            registry: Registry::with_builtins(),
        }
    }

    /// `read_file` and `list_directory`, confined by `confinement` (read-only).
    pub fn files(confinement: Arc<Confinement>) -> ToolSet {
        ToolSet::of(files::READS_SOURCE, files::reading_tools(confinement))
    }

    /// `write_file`, confined by `confinement`: it changes files, so its calls ask.
    pub fn file_writes(confinement: Arc<Confinement>) -> ToolSet {
        ToolSet::of(files::WRITES_SOURCE, files::writing_tools(confinement))
    }

    fn of(source: &str, tools: Vec<Tool>) -> ToolSet {
        let mut registry = Registry::default();
        for t in tools {
            registry.register(t);
        }
        ToolSet {
            source: source.into(),
            registry,
        }
    }

    /// Whether the set's tools only read (their calls need no approval): all but the file
    /// writes.
    pub fn read_only(&self) -> bool {
        self.source != files::WRITES_SOURCE
    }
}

/// The tools an agent has.
#[derive(Default, Clone)]
pub struct Registry {
    tools: BTreeMap<String, Arc<Tool>>,
}

impl Registry {
    /// A registry with the built-in tools.
    pub fn with_builtins() -> Registry {
        let mut r = Registry::default();
        for t in builtin::all() {
            r.register(t);
        }
        r
    }

    /// The built-in tools and those only a skill's alias offers ([`builtin::for_aliases`]):
    /// what a skill's `:ALIAS:` may name.
    pub fn for_aliases() -> Registry {
        let mut r = Registry::with_builtins();
        for t in builtin::for_aliases() {
            r.register(t);
        }
        r
    }

    /// Add `tool`, replacing one of the same name.
    pub fn register(&mut self, tool: Tool) {
        self.tools.insert(tool.name.to_string(), Arc::new(tool));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// Every tool as a function declaration, sorted by name.
    pub fn function_schemas(&self) -> Vec<Value> {
        self.tools.values().map(|t| t.function_schema()).collect()
    }

    /// Check the arguments and run tool `name` on `notes`.
    pub fn call(&self, notes: &Notes, name: &str, args: &Value) -> Result<String, ToolError> {
        self.call_cancellable(notes, name, args, None)
    }

    /// [`Registry::call`], the body told to stop when `cancel` is cancelled.
    pub fn call_cancellable(
        &self,
        notes: &Notes,
        name: &str,
        args: &Value,
        cancel: Option<CancelToken>,
    ) -> Result<String, ToolError> {
        let tool = self
            .get(name)
            .ok_or_else(|| ToolError::Unknown(name.to_string()))?;
        let mut args = tool.check(args)?;
        args.1 = cancel;
        (tool.body)(notes, &args).map_err(|message| ToolError::Failed {
            tool: name.to_string(),
            message,
        })
    }
}
