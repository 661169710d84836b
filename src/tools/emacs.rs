//! Tools whose bodies run in Emacs, on the main thread, through the actuator: the edit
//! vocabulary (set a TODO state, a property, tags, planning; replace or append to a body;
//! add a headline; refile, archive, give an ID, link, add a note; create a note file; show
//! a node; draft a skill) and tools defined in Elisp with
//! `org-agent-define-tool`.
//!
//! The LLM calls them like any tool; a call becomes an [`EmacsAction`] (typed, checked
//! here, so a bad argument is an error the LLM sees before anything is asked or run).

use super::{function_declaration, object_schema};
use crate::action::{EmacsAction, EVAL_ELISP_TOOL};
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

struct Edit {
    name: &'static str,
    description: &'static str,
    /// (name, JSON type, description, required)
    params: &'static [(&'static str, &'static str, &'static str, bool)],
}

const ID: (&str, &str, &str, bool) = (
    "id",
    "string",
    "the node's id (from query_notes, search_notes or read_node)",
    true,
);

const EDITS: &[Edit] = &[
    Edit {
        name: "set_todo",
        description: "Set the TODO state of a headline (the user approves edits first).",
        params: &[
            ID,
            (
                "state",
                "string",
                "a TODO keyword of the node's file, e.g. TODO or DONE; omit to remove the state",
                false,
            ),
        ],
    },
    Edit {
        name: "set_property",
        description: "Set a property of a headline (in its property drawer).",
        params: &[
            ID,
            ("key", "string", "the property name", true),
            ("value", "string", "the property value", true),
        ],
    },
    Edit {
        name: "delete_property",
        description: "Delete a property of a headline.",
        params: &[ID, ("key", "string", "the property name", true)],
    },
    Edit {
        name: "set_tags",
        description: "Set the tags of a headline (replacing its own tags).",
        params: &[
            ID,
            (
                "tags",
                "array",
                "the new tags, without colons; an empty list removes them",
                true,
            ),
        ],
    },
    Edit {
        name: "schedule",
        description: "Schedule a headline on a date, or remove its schedule.",
        params: &[
            ID,
            (
                "date",
                "string",
                "YYYY-MM-DD, optionally followed by a time HH:MM; omit to unschedule",
                false,
            ),
        ],
    },
    Edit {
        name: "deadline",
        description: "Set a headline's deadline, or remove it.",
        params: &[
            ID,
            (
                "date",
                "string",
                "YYYY-MM-DD, optionally followed by a time HH:MM; omit to remove",
                false,
            ),
        ],
    },
    Edit {
        name: "replace_body",
        description: "Replace the body text of a headline (after its planning and \
                      property drawer; its children stay).",
        params: &[ID, ("body", "string", "the new body, in Org markup", true)],
    },
    Edit {
        name: "append_body",
        description: "Append text to the body of a headline.",
        params: &[
            ID,
            ("text", "string", "the text to add, in Org markup", true),
        ],
    },
    Edit {
        name: "add_headline",
        description: "Add a headline as the last child of a node (parent) or at the end of \
                      a file (file); give exactly one of them.",
        params: &[
            (
                "parent",
                "string",
                "id of the parent node (from the tools)",
                false,
            ),
            (
                "file",
                "string",
                "an Org file (from list_files), for a top-level headline",
                false,
            ),
            ("title", "string", "the headline's title, one line", true),
            ("todo", "string", "a TODO keyword, e.g. TODO", false),
            ("tags", "array", "tags, without colons", false),
            (
                "properties",
                "object",
                "properties as an object of strings, e.g. {\"EFFORT\": \"1:00\"}",
                false,
            ),
            ("body", "string", "body text, in Org markup", false),
        ],
    },
    Edit {
        name: "refile",
        description: "Move a headline with its subtree under another node (target_id) or \
                      to the top level of an Org file (target_file), as org-refile does; \
                      its ID goes with it. Give exactly one of them.",
        params: &[
            ID,
            (
                "target_id",
                "string",
                "id of the node to move it under",
                false,
            ),
            (
                "target_file",
                "string",
                "an Org file (from list_files), to move it to the top level",
                false,
            ),
        ],
    },
    Edit {
        name: "archive",
        description: "Archive a headline with its subtree, as org-archive-subtree does \
                      (where the user's org-archive-location says).",
        params: &[ID],
    },
    Edit {
        name: "ensure_id",
        description: "Give a headline an :ID: property if it has none (org-id-get-create); \
                      the result says the ID. Nodes without one have an id from the tools \
                      all the same: pass that.",
        params: &[ID],
    },
    Edit {
        name: "create_note",
        description: "Create a new Org file with a #+TITLE (and #+FILETAGS, a body). Never \
                      over an existing file; only .org files inside the user's notes \
                      directories.",
        params: &[
            (
                "file",
                "string",
                "the new file: relative to the first notes directory (e.g. \
                 ideas/garden.org), or absolute inside the notes directories",
                true,
            ),
            ("title", "string", "the note's title, one line", true),
            ("filetags", "array", "file tags, without colons", false),
            (
                "body",
                "string",
                "the text after the header, in Org markup",
                false,
            ),
        ],
    },
    Edit {
        name: "insert_link",
        description: "Append an id: link to another node at the end of a headline's body \
                      (the target node gets an :ID: if it has none).",
        params: &[
            ID,
            (
                "target_id",
                "string",
                "id of the node the link points to",
                true,
            ),
            (
                "description",
                "string",
                "the link's text; omit for the target's title",
                false,
            ),
        ],
    },
    Edit {
        name: "add_note",
        description: "Add a time-stamped note to a headline, as org-add-note does (into \
                      its LOGBOOK drawer when the user logs into drawers).",
        params: &[ID, ("text", "string", "the note, in Org markup", true)],
    },
    Edit {
        name: "visit_node",
        description: "Show a node to the user in its file.",
        params: &[ID],
    },
    Edit {
        name: "create_skill",
        description: "Draft a new skill: an Org file the user reads in full and approves \
                      before it is active. It starts with #+SKILL_NAME: NAME and \
                      #+DESCRIPTION: (when to use it); then a * Prompt section (what the \
                      model is told), a * Gate table of rules (| action | condition | \
                      decision | reason |, decision deny or ask) and a * Tests section \
                      with at least one :gate: test (a subheading tagged :gate: with the \
                      properties :ACTION: :TARGET: :ARGS: :EXPECT: and an example block \
                      holding the Org text it runs on). No emacs-lisp tools. Its tests run \
                      first: a draft that does not load comes back with the reason.",
        params: &[
            (
                "name",
                "string",
                "the skill's name, kebab-case (a-z, 0-9, single -), as its #+SKILL_NAME: says",
                true,
            ),
            (
                "text",
                "string",
                "the whole skill file, in Org markup",
                true,
            ),
        ],
    },
];

/// Elisp evaluation: offered only when the user's permissions enable it, and asked about
/// every time (see [`crate::gates::ElispEval`]).
const EVAL_ELISP: Edit = Edit {
    name: EVAL_ELISP_TOOL,
    description: "Evaluate Emacs Lisp code in the user's Emacs and return the printed value. \
                  The user reads the code and approves each call; it runs with a time limit. \
                  Prefer the other tools: use this only for what they cannot do.",
    params: &[(
        "code",
        "string",
        "one Emacs Lisp form (wrap several in progn), evaluated with lexical binding",
        true,
    )],
};

fn schema(e: &Edit) -> Value {
    let mut props = Map::new();
    for (name, kind, description, _) in e.params {
        let mut p = json!({"type": kind, "description": description});
        if *kind == "array" {
            p["items"] = json!({"type": "string"});
        }
        if *kind == "object" {
            p["additionalProperties"] = json!({"type": "string"});
        }
        props.insert(name.to_string(), p);
    }
    let required: Vec<&str> = e.params.iter().filter(|p| p.3).map(|p| p.0).collect();
    function_declaration(e.name, e.description, object_schema(props, &required))
}

/// The edit tools as OpenAI-style function declarations.
pub fn edit_schemas() -> Vec<Value> {
    EDITS.iter().map(schema).collect()
}

/// The Elisp evaluation tool's declaration.
pub fn eval_schema() -> Value {
    schema(&EVAL_ELISP)
}

/// The Emacs action for a call of `eval_elisp` with JSON `args`, or why it is wrong.
pub fn eval_action(args: &Value) -> Result<EmacsAction, String> {
    build(&EVAL_ELISP, args)
}

/// The arguments edit tool `name` requires, `None` when it is not an edit tool.
pub fn required_arguments(name: &str) -> Option<Vec<&'static str>> {
    let edit = EDITS.iter().find(|e| e.name == name)?;
    Some(edit.params.iter().filter(|p| p.3).map(|p| p.0).collect())
}

/// Whether `name` is one of the edit tools.
pub fn is_edit(name: &str) -> bool {
    EDITS.iter().any(|e| e.name == name)
}

/// The Emacs action for a call of edit tool `name` with JSON `args`, or why it is wrong.
/// `None` when `name` is not an edit tool.
pub fn edit_action(name: &str, args: &Value) -> Option<Result<EmacsAction, String>> {
    let edit = EDITS.iter().find(|e| e.name == name)?;
    Some(build(edit, args))
}

fn build(edit: &Edit, args: &Value) -> Result<EmacsAction, String> {
    let empty = Map::new();
    let map = match args {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(format!(
                "{}: arguments must be an object, not {other}",
                edit.name
            ))
        }
    };
    for key in map.keys() {
        if !edit.params.iter().any(|p| p.0 == key) {
            let known: Vec<&str> = edit.params.iter().map(|p| p.0).collect();
            return Err(format!(
                "{}: unknown argument {key:?} (known: {})",
                edit.name,
                known.join(", ")
            ));
        }
    }
    let opt = |key: &str| -> Result<Option<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{}: argument {key:?} must be a string, not {other}",
                edit.name
            )),
        }
    };
    let req = |key: &str| -> Result<String, String> {
        opt(key)?.ok_or_else(|| format!("{}: argument {key:?} is required", edit.name))
    };
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(vec![]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim_matches(':').to_string()),
                    other => Err(format!(
                        "{}: {key:?} must be a list of strings, found {other}",
                        edit.name
                    )),
                })
                .collect(),
            // A single tag given as a string is taken as one tag or "a:b" as several.
            Some(Value::String(s)) => Ok(s
                .split(|c: char| c == ':' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()),
            Some(other) => Err(format!(
                "{}: {key:?} must be a list of strings, not {other}",
                edit.name
            )),
        }
    };
    Ok(match edit.name {
        "set_todo" => EmacsAction::SetTodo {
            id: req("id")?,
            state: opt("state")?.filter(|s| !s.is_empty()),
        },
        "set_property" => EmacsAction::SetProperty {
            id: req("id")?,
            key: req("key")?,
            value: req("value")?,
        },
        "delete_property" => EmacsAction::DeleteProperty {
            id: req("id")?,
            key: req("key")?,
        },
        "set_tags" => EmacsAction::SetTags {
            id: req("id")?,
            tags: strings("tags")?,
        },
        "schedule" => EmacsAction::Schedule {
            id: req("id")?,
            date: opt("date")?.filter(|s| !s.is_empty()),
        },
        "deadline" => EmacsAction::Deadline {
            id: req("id")?,
            date: opt("date")?.filter(|s| !s.is_empty()),
        },
        "replace_body" => EmacsAction::ReplaceBody {
            id: req("id")?,
            body: req("body")?,
        },
        "append_body" => EmacsAction::AppendBody {
            id: req("id")?,
            text: req("text")?,
        },
        "add_headline" => {
            let file = opt("file")?;
            let parent = opt("parent")?;
            if file.is_some() == parent.is_some() {
                return Err("add_headline: give exactly one of parent and file".into());
            }
            let properties = match map.get("properties") {
                None | Some(Value::Null) => vec![],
                Some(Value::Object(props)) => props
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => Ok((k.clone(), s.clone())),
                        Value::Number(n) => Ok((k.clone(), n.to_string())),
                        other => Err(format!(
                            "add_headline: property {k:?} must be a string, not {other}"
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => {
                    return Err(format!(
                        "add_headline: properties must be an object of strings, not {other}"
                    ))
                }
            };
            EmacsAction::AddHeadline {
                file,
                parent,
                title: req("title")?,
                todo: opt("todo")?.filter(|s| !s.is_empty()),
                tags: strings("tags")?,
                properties,
                body: opt("body")?,
            }
        }
        "visit_node" => EmacsAction::VisitNode { id: req("id")? },
        "create_skill" => EmacsAction::CreateSkill {
            name: req("name")?,
            text: req("text")?,
        },
        "refile" => {
            let target_id = opt("target_id")?;
            let target_file = opt("target_file")?;
            if target_id.is_some() == target_file.is_some() {
                return Err("refile: give exactly one of target_id and target_file".into());
            }
            EmacsAction::Refile {
                id: req("id")?,
                target_id,
                target_file,
            }
        }
        "archive" => EmacsAction::Archive { id: req("id")? },
        "ensure_id" => EmacsAction::EnsureId { id: req("id")? },
        "create_note" => {
            let file = req("file")?;
            if !file.ends_with(".org") {
                return Err(format!("create_note: {file:?} is not an .org file"));
            }
            let title = req("title")?;
            if title.contains('\n') {
                return Err("create_note: a title is one line".into());
            }
            EmacsAction::CreateNote {
                file,
                title,
                filetags: strings("filetags")?,
                body: opt("body")?,
            }
        }
        "insert_link" => EmacsAction::InsertLink {
            id: req("id")?,
            target_id: req("target_id")?,
            description: opt("description")?.filter(|s| !s.is_empty()),
        },
        "add_note" => EmacsAction::AddNote {
            id: req("id")?,
            text: req("text")?,
        },
        EVAL_ELISP_TOOL => EmacsAction::EvalElisp { code: req("code")? },
        other => return Err(format!("{other}: not an edit tool")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edit_tool_has_a_schema_and_builds_its_action() {
        let schemas = edit_schemas();
        assert_eq!(schemas.len(), EDITS.len());
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
}
