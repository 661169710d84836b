//! Tools whose bodies run in Emacs, on the main thread, through the actuator: the edit
//! vocabulary (set a TODO state, a property, tags, planning; replace or append to a body;
//! add a headline; refile, archive, give an ID, link, add a note; create a note file; show
//! a node; draft a skill) and tools defined in Elisp with
//! `org-agent-define-tool`.
//!
//! The LLM calls them like any tool; a call becomes an [`EmacsAction`] (typed, checked
//! here, so a bad argument is an error the LLM sees before anything is asked or run).

use super::{function_declaration, object_schema};
use crate::action::{EmacsAction, Offered, VerbSpec, EVAL_ELISP_TOOL, VERBS};
use serde_json::{json, Map, Value};

/// A tool defined in Elisp: its declaration and whether its calls ask the user first.
#[derive(Clone, Debug, PartialEq)]
pub struct ElispTool {
    pub name: String,
    pub description: String,
    /// The JSON schema of the parameters (an object schema).
    pub parameters: Value,
    /// `:confirm` in `org-agent-define-tool`: ask before each call.
    pub confirm: bool,
}

impl ElispTool {
    pub fn function_schema(&self) -> Value {
        function_declaration(&self.name, &self.description, self.parameters.clone())
    }
}

/// The JSON schema (a function declaration) of the tool that offers `verb`: its
/// description and its arguments' are the table's docs (src/action/verbs.rs).
fn schema(verb: &VerbSpec) -> Value {
    let mut props = Map::new();
    for arg in verb.args {
        props.insert(arg.name.to_string(), arg.kind.json_schema(arg.doc()));
    }
    let parameters = object_schema(props, &verb.required_arguments());
    function_declaration(&verb.tool_name(), verb.doc(), parameters)
}

/// The verbs offered as edit tools, in the table's order.
fn edit_verbs() -> impl Iterator<Item = &'static VerbSpec> {
    VERBS.iter().filter(|v| v.offered == Offered::AsEditTool)
}

/// The row of `eval_elisp`.
fn eval_verb() -> Option<&'static VerbSpec> {
    EmacsAction::offered_as(EVAL_ELISP_TOOL).filter(|v| v.offered == Offered::AsOwnTool)
}

/// The edit tools as OpenAI-style function declarations.
pub fn edit_schemas() -> Vec<Value> {
    edit_verbs().map(schema).collect()
}

/// The Elisp evaluation tool's declaration: offered only when the user's permissions
/// enable it, and asked about every time (see [`crate::gates::ElispEval`]).
pub fn eval_schema() -> Value {
    match eval_verb() {
        Some(verb) => schema(verb),
        // The table's test sees that it has the row; a declaration of nothing is harmless.
        None => json!(null),
    }
}

/// The Emacs action for a call of `eval_elisp` with JSON `args`, or why it is wrong.
pub fn eval_action(args: &Value) -> Result<EmacsAction, String> {
    match eval_verb() {
        Some(verb) => EmacsAction::from_tool_call(verb, args),
        None => Err(format!("{EVAL_ELISP_TOOL}: not a tool of this version")),
    }
}

/// The row of edit tool `name`, `None` when it is not an edit tool.
fn edit_verb(name: &str) -> Option<&'static VerbSpec> {
    EmacsAction::offered_as(name).filter(|v| v.offered == Offered::AsEditTool)
}

/// The arguments edit tool `name` requires, `None` when it is not an edit tool.
pub fn required_arguments(name: &str) -> Option<Vec<&'static str>> {
    Some(edit_verb(name)?.required_arguments())
}

/// Whether `name` is one of the edit tools.
pub fn is_edit(name: &str) -> bool {
    edit_verb(name).is_some()
}

/// The Emacs action for a call of edit tool `name` with JSON `args`, or why it is wrong.
/// `None` when `name` is not an edit tool.
pub fn edit_action(name: &str, args: &Value) -> Option<Result<EmacsAction, String>> {
    Some(EmacsAction::from_tool_call(edit_verb(name)?, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edit_tool_has_a_schema_and_builds_its_action() {
        let schemas = edit_schemas();
        assert_eq!(schemas.len(), edit_verbs().count());
        for s in &schemas {
            let name = s["function"]["name"].as_str().unwrap();
            assert!(is_edit(name));
            assert_eq!(s["function"]["parameters"]["type"], "object");
        }
        let a = edit_action("set_todo", &json!({"id": "x", "state": "DONE"}))
            .unwrap()
            .unwrap();
        assert_eq!(
            a,
            EmacsAction::SetTodo {
                id: "x".into(),
                state: Some("DONE".into())
            }
        );
        let a = edit_action(
            "add_headline",
            &json!({"parent": "p", "title": "T", "tags": ["a", ":b:"],
                    "properties": {"EFFORT": "1:00"}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            a,
            EmacsAction::AddHeadline {
                file: None,
                parent: Some("p".into()),
                title: "T".into(),
                todo: None,
                tags: vec!["a".into(), "b".into()],
                properties: vec![("EFFORT".into(), "1:00".into())],
                body: None
            }
        );
        assert!(edit_action("query_notes", &json!({})).is_none());
        let a = edit_action(
            "create_skill",
            &json!({"name": "tidy", "text": "#+SKILL_NAME: tidy\n"}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            a,
            EmacsAction::CreateSkill {
                name: "tidy".into(),
                text: "#+SKILL_NAME: tidy\n".into()
            }
        );
        assert_eq!(
            required_arguments("create_skill"),
            Some(vec!["name", "text"])
        );
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let err = |name: &str, args: Value| edit_action(name, &args).unwrap().unwrap_err();
        assert!(err("set_todo", json!({"state": "DONE"})).contains("\"id\" is required"));
        assert!(err("set_todo", json!({"id": 3})).contains("must be a string"));
        assert!(err("set_tags", json!({"id": "x", "tags": [1]})).contains("list of strings"));
        assert!(err("schedule", json!({"id": "x", "when": "now"})).contains("unknown argument"));
        assert!(err("add_headline", json!({"title": "T"})).contains("exactly one"));
        assert!(err("append_body", json!([1])).contains("must be an object"));
        assert!(err("create_skill", json!({"name": "tidy"})).contains("\"text\" is required"));
        assert!(err("refile", json!({"id": "x"})).contains("exactly one of target_id"));
        assert!(err(
            "refile",
            json!({"id": "x", "target_id": "p", "target_file": "/a.org"})
        )
        .contains("exactly one of target_id"));
        assert!(err("create_note", json!({"file": "a.txt", "title": "A"})).contains(".org"));
        assert!(err("create_note", json!({"file": "a.org", "title": "A\nB"})).contains("one line"));
        assert!(err("insert_link", json!({"id": "x"})).contains("\"target_id\" is required"));
        assert!(err("add_note", json!({"id": "x"})).contains("\"text\" is required"));
    }

    #[test]
    fn the_new_verbs_build_their_actions() {
        let build = |name: &str, args: Value| edit_action(name, &args).unwrap().unwrap();
        assert_eq!(
            build("refile", json!({"id": "x", "target_file": "/org/b.org"})),
            EmacsAction::Refile {
                id: "x".into(),
                target_id: None,
                target_file: Some("/org/b.org".into())
            }
        );
        assert_eq!(
            build("archive", json!({"id": "x"})),
            EmacsAction::Archive { id: "x".into() }
        );
        assert_eq!(
            build("ensure_id", json!({"id": "oa-1"})),
            EmacsAction::EnsureId { id: "oa-1".into() }
        );
        assert_eq!(
            build(
                "create_note",
                json!({"file": "ideas/g.org", "title": "Garden", "filetags": ["idea"]})
            ),
            EmacsAction::CreateNote {
                file: "ideas/g.org".into(),
                title: "Garden".into(),
                filetags: vec!["idea".into()],
                body: None
            }
        );
        assert_eq!(
            build("insert_link", json!({"id": "x", "target_id": "y"})),
            EmacsAction::InsertLink {
                id: "x".into(),
                target_id: "y".into(),
                description: None
            }
        );
        assert_eq!(
            build("add_note", json!({"id": "x", "text": "Called."})),
            EmacsAction::AddNote {
                id: "x".into(),
                text: "Called.".into()
            }
        );
        assert_eq!(required_arguments("refile"), Some(vec!["id"]));
        assert_eq!(
            required_arguments("create_note"),
            Some(vec!["file", "title"])
        );
    }

    /// Every verb a tool offers: its schema names the table's arguments and requires the
    /// required ones, and a call with the same values builds the action the plist reads.
    #[test]
    fn every_offered_verb_s_schema_and_call_agree_with_its_plist() {
        let mut schemas = edit_schemas();
        schemas.push(eval_schema());
        let mut offered = 0;
        for verb in VERBS.iter().filter(|v| v.offered != Offered::NotAsTool) {
            offered += 1;
            let tool = verb.tool_name();
            let schema = schemas
                .iter()
                .find(|s| s["function"]["name"] == tool.as_str())
                .unwrap_or_else(|| panic!("no schema for {tool}"));
            let parameters = &schema["function"]["parameters"];
            let mut properties: Vec<&str> = parameters["properties"]
                .as_object()
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            properties.sort_unstable();
            let mut args: Vec<&str> = verb.args.iter().map(|a| a.name).collect();
            args.sort_unstable();
            assert_eq!(properties, args, "{tool}");
            assert_eq!(parameters["required"], json!(verb.required_arguments()));
            assert_eq!(schema["function"]["description"], verb.doc());
            assert!(!verb.doc().is_empty() && verb.args.iter().all(|a| !a.doc().is_empty()));
            let (action, call) = crate::action::samples::sample(verb);
            let built = match verb.offered {
                Offered::AsOwnTool => eval_action(&call),
                _ => edit_action(&tool, &call).unwrap_or_else(|| panic!("{tool} is no edit")),
            };
            assert_eq!(built, Ok(action), "{tool} {call}");
        }
        assert_eq!(offered, schemas.len());
        assert_eq!(
            eval_verb().map(VerbSpec::tool_name).as_deref(),
            Some(EVAL_ELISP_TOOL)
        );
    }
}
