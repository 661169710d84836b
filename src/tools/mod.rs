//! Tools the LLM can call: a registry of named tools with JSON-schema parameters, exported
//! as function schemas, and the built-in tools that read the object store.
//!
//! Tool bodies here run on worker threads against a store snapshot; they only read. Results
//! are Org text, the language the rest of the prompt is in. Arguments come from the LLM and
//! are checked against the schema's names and types before a body sees them.

pub(crate) mod builtin;
pub mod emacs;

use crate::notes::Notes;
use serde_json::{json, Map, Value};
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
    Boolean,
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamType,
    pub description: &'static str,
    pub required: bool,
}

/// Checked arguments of one call.
#[derive(Debug, Default)]
pub struct Args(Map<String, Value>);

impl Args {
    pub fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.0.get(name).and_then(Value::as_i64)
    }

    pub fn bool(&self, name: &str) -> bool {
        self.0.get(name).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// A tool: its name, what it is for, its parameters, and its body.
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Vec<Param>,
    #[allow(clippy::type_complexity)]
    pub body: Box<dyn Fn(&Notes, &Args) -> Result<String, String> + Send + Sync>,
}

impl Tool {
    /// The JSON schema of the parameters.
    pub fn schema(&self) -> Value {
        let mut props = Map::new();
        for p in &self.params {
            let kind = match p.kind {
                ParamType::String => "string",
                ParamType::Integer => "integer",
                ParamType::Boolean => "boolean",
            };
            props.insert(
                p.name.to_string(),
                json!({"type": kind, "description": p.description}),
            );
        }
        let required: Vec<&str> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name)
            .collect();
        object_schema(props, &required)
    }

    /// The tool as an OpenAI-style function declaration.
    pub fn function_schema(&self) -> Value {
        function_declaration(self.name, self.description, self.schema())
    }

    /// Check `args` (a JSON object; `null` means none) against the parameters.
    pub fn check(&self, args: &Value) -> Result<Args, ToolError> {
        let bad = |message: String| ToolError::BadArguments {
            tool: self.name.to_string(),
            message,
        };
        let map = match args {
            Value::Null => Map::new(),
            Value::Object(m) => m.clone(),
            other => return Err(bad(format!("arguments must be an object, not {other}"))),
        };
        for (key, value) in &map {
            let Some(p) = self.params.iter().find(|p| p.name == key) else {
                let known: Vec<&str> = self.params.iter().map(|p| p.name).collect();
                return Err(bad(format!(
                    "unknown argument {key:?} (known: {})",
                    known.join(", ")
                )));
            };
            let ok = match p.kind {
                ParamType::String => value.is_string(),
                ParamType::Integer => value.is_i64(),
                ParamType::Boolean => value.is_boolean(),
            };
            if !ok && !value.is_null() {
                return Err(bad(format!(
                    "argument {key:?} must be a {:?}, not {value}",
                    p.kind
                )));
            }
        }
        for p in self.params.iter().filter(|p| p.required) {
            if map.get(p.name).is_none_or(Value::is_null) {
                return Err(bad(format!("argument {:?} is required", p.name)));
            }
        }
        Ok(Args(map))
    }
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

/// Tools from one source, offered together: the built-in tools today, a skill's tools later.
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
}

/// The tools an agent has.
#[derive(Default, Clone)]
pub struct Registry {
    tools: BTreeMap<&'static str, Arc<Tool>>,
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

    /// Add `tool`, replacing one of the same name.
    pub fn register(&mut self, tool: Tool) {
        self.tools.insert(tool.name, Arc::new(tool));
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.keys().copied().collect()
    }

    /// Every tool as a function declaration, sorted by name.
    pub fn function_schemas(&self) -> Vec<Value> {
        self.tools.values().map(|t| t.function_schema()).collect()
    }

    /// Check the arguments and run tool `name` on `notes`.
    pub fn call(&self, notes: &Notes, name: &str, args: &Value) -> Result<String, ToolError> {
        let tool = self
            .get(name)
            .ok_or_else(|| ToolError::Unknown(name.to_string()))?;
        let args = tool.check(args)?;
        (tool.body)(notes, &args).map_err(|message| ToolError::Failed {
            tool: name.to_string(),
            message,
        })
    }
}
