//! Stimuli and actions: the plists that flow through the loop, as typed Rust values.
//!
//! Plists are converted here, at the edge, and nowhere else: an unknown `:type`, sensor,
//! target or action, a missing argument or one of the wrong type is an error that says
//! which, never a silently ignored message. Keys are lowercase (the reader normalises them).
//!
//! ```text
//! (:type :event :payload (:sensor :chat-message :text "…") :meta (:session "s1") :depth 0)
//! (:type :request :target :emacs :action :set-todo :id "abc" :state "DONE")
//! (:type :request :target :tool :name "query" :args (:tag "work"))
//! ```

use crate::sexp::fields::Fields;
use crate::sexp::{self, Sexp, SexpError, Value};

/// What woke the agent up.
#[derive(Clone, Debug, PartialEq)]
pub enum Sensor {
    /// The user sent a message in the chat.
    ChatMessage { text: String },
    /// An M-x command, with the node at point as focus (if any).
    Command { name: String, focus: Option<String> },
    /// An Org buffer was saved.
    BufferSave { file: String },
    /// A timer fired.
    Timer { name: String },
    /// A tool finished; `ok` is false when it failed.
    ToolResult {
        call: String,
        ok: bool,
        content: String,
    },
    /// The Elisp actuator ran an action.
    ActuatorResult {
        call: String,
        ok: bool,
        message: String,
    },
}

/// A stimulus: a sensor reading, which conversation it belongs to, and how deep in the
/// chain of actions it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Stimulus {
    pub sensor: Sensor,
    pub session: Option<String>,
    pub depth: u32,
}

/// An edit or display action run on the main thread by the Elisp actuator.
#[derive(Clone, Debug, PartialEq)]
pub enum EmacsAction {
    Insert {
        buffer: String,
        text: String,
    },
    StreamAppend {
        buffer: String,
        text: String,
    },
    Message {
        text: String,
    },
    AddHeadline {
        /// Either a file (new top-level headline) or a parent node id.
        file: Option<String>,
        parent: Option<String>,
        title: String,
        todo: Option<String>,
        tags: Vec<String>,
        properties: Vec<(String, String)>,
        body: Option<String>,
    },
    SetTodo {
        id: String,
        state: Option<String>,
    },
    SetProperty {
        id: String,
        key: String,
        value: String,
    },
    DeleteProperty {
        id: String,
        key: String,
    },
    SetTags {
        id: String,
        tags: Vec<String>,
    },
    Schedule {
        id: String,
        date: Option<String>,
    },
    Deadline {
        id: String,
        date: Option<String>,
    },
    ReplaceBody {
        id: String,
        body: String,
    },
    AppendBody {
        id: String,
        text: String,
    },
    VisitNode {
        id: String,
    },
    /// Call a tool defined in Elisp (`org-agent-define-tool`) with an argument plist.
    CallTool {
        name: String,
        args: Sexp,
    },
    /// Write a skill the agent drafted (`create_skill`): `drafts/NAME/SKILL.org` under the
    /// user's first skill directory, where it loads with source `agent`.
    CreateSkill {
        name: String,
        text: String,
    },
    /// Evaluate Elisp code in the user's Emacs (`eval_elisp`, off unless the user's
    /// permissions enable it; it asks every time).
    EvalElisp {
        code: String,
    },
    /// Move node `id` under the node `target_id`, or to the top level of `target_file`, as
    /// `org-refile` does (its ID and subtree go with it).
    Refile {
        id: String,
        target_id: Option<String>,
        target_file: Option<String>,
    },
    /// Archive node `id` as `org-archive-subtree` does, where `org-archive-location` says.
    Archive {
        id: String,
    },
    /// Give node `id` an `:ID:` property if it has none (`org-id-get-create`). A node
    /// without one is addressed by the store's own id for it.
    EnsureId {
        id: String,
    },
    /// Write a new Org file (never over an existing one) inside `org-agent-directories`:
    /// `file` is absolute or relative to the first of them.
    CreateNote {
        file: String,
        title: String,
        filetags: Vec<String>,
        body: Option<String>,
    },
    /// Append an `id:` link to node `target_id` at the end of node `id`'s body.
    InsertLink {
        id: String,
        target_id: String,
        description: Option<String>,
    },
    /// Add a time-stamped note to node `id` as `org-add-note` does.
    AddNote {
        id: String,
        text: String,
    },
}

/// The tool that evaluates Elisp ([`EmacsAction::EvalElisp`]).
pub const EVAL_ELISP_TOOL: &str = "eval_elisp";

/// What the LLM proposes.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Emacs(EmacsAction),
    /// A tool call; `args` is the argument plist.
    Tool {
        name: String,
        args: Sexp,
    },
}

fn shape(msg: impl Into<String>) -> SexpError {
    SexpError::Shape(msg.into())
}

/// `:args`, a tool's argument plist (nil when absent).
fn tool_args(a: &Fields) -> Result<Sexp, SexpError> {
    Ok(Sexp::from(match a.get("args") {
        None => Value::Nil,
        Some(args) => {
            Fields::new(args, "tool arguments")?;
            sexp::clone_value(args)
        }
    }))
}

/// `:depth`, how deep in a chain of actions a stimulus is (0 when absent).
fn depth(a: &Fields) -> Result<u32, SexpError> {
    a.natural("depth").map(|d| d.unwrap_or(0))
}

impl Stimulus {
    pub fn from_sexp(v: &Value) -> Result<Stimulus, SexpError> {
        let top = Fields::new(v, "stimulus")?;
        match top.keyword("type")? {
            "event" => {}
            other => return Err(shape(format!("stimulus: unknown :type :{other}"))),
        }
        let payload = Fields::new(
            top.get("payload")
                .ok_or_else(|| shape("stimulus: :payload is missing"))?,
            "stimulus payload",
        )?;
        let sensor = match payload.keyword("sensor")? {
            "chat-message" => Sensor::ChatMessage {
                text: payload.string("text")?,
            },
            "command" => Sensor::Command {
                name: payload.string("name")?,
                focus: payload.opt_string("focus")?,
            },
            "buffer-save" => Sensor::BufferSave {
                file: payload.string("file")?,
            },
            "timer" => Sensor::Timer {
                name: payload.string("name")?,
            },
            "tool-result" => Sensor::ToolResult {
                call: payload.string("call")?,
                ok: payload.bool("ok", true),
                content: payload.string("content")?,
            },
            "actuator-result" => Sensor::ActuatorResult {
                call: payload.string("call")?,
                ok: match payload.get("status") {
                    Some(Value::Keyword(k)) if &**k == "ok" => true,
                    Some(Value::Keyword(k)) if &**k == "error" => false,
                    _ => return Err(shape("actuator result: :status must be :ok or :error")),
                },
                message: payload.opt_string("message")?.unwrap_or_default(),
            },
            other => return Err(shape(format!("stimulus: unknown :sensor :{other}"))),
        };
        let session = match top.get("meta") {
            Some(meta) => Fields::new(meta, "stimulus meta")?.opt_string("session")?,
            None => None,
        };
        Ok(Stimulus {
            sensor,
            session,
            depth: depth(&top)?,
        })
    }

    pub fn to_sexp(&self) -> Sexp {
        let s = |x: &str| Value::string(x);
        let payload: Vec<Value> = match &self.sensor {
            Sensor::ChatMessage { text } => {
                vec![kw("sensor"), kw("chat-message"), kw("text"), s(text)]
            }
            Sensor::Command { name, focus } => {
                let mut p = vec![kw("sensor"), kw("command"), kw("name"), s(name)];
                if let Some(f) = focus {
                    p.extend([kw("focus"), s(f)]);
                }
                p
            }
            Sensor::BufferSave { file } => {
                vec![kw("sensor"), kw("buffer-save"), kw("file"), s(file)]
            }
            Sensor::Timer { name } => vec![kw("sensor"), kw("timer"), kw("name"), s(name)],
            Sensor::ToolResult { call, ok, content } => vec![
                kw("sensor"),
                kw("tool-result"),
                kw("call"),
                s(call),
                kw("ok"),
                Value::Bool(*ok),
                kw("content"),
                s(content),
            ],
            Sensor::ActuatorResult { call, ok, message } => vec![
                kw("sensor"),
                kw("actuator-result"),
                kw("call"),
                s(call),
                kw("status"),
                kw(if *ok { "ok" } else { "error" }),
                kw("message"),
                s(message),
            ],
        };
        let mut top = vec![kw("type"), kw("event"), kw("payload"), Value::list(payload)];
        if let Some(session) = &self.session {
            top.extend([kw("meta"), Value::list(vec![kw("session"), s(session)])]);
        }
        top.extend([kw("depth"), Value::from(self.depth as u64)]);
        Sexp::from(Value::list(top))
    }
}

fn kw(name: &str) -> Value {
    Value::keyword(name)
}

impl Action {
    pub fn from_sexp(v: &Value) -> Result<Action, SexpError> {
        let a = Fields::new(v, "action")?;
        match a.keyword("type")? {
            "request" => {}
            other => return Err(shape(format!("action: unknown :type :{other}"))),
        }
        match a.keyword("target")? {
            "tool" => {
                let name = a.string("name")?;
                Ok(Action::Tool {
                    name,
                    args: tool_args(&a)?,
                })
            }
            "emacs" => Ok(Action::Emacs(EmacsAction::from_args(&a)?)),
            other => Err(shape(format!("action: unknown :target :{other}"))),
        }
    }
}

impl Action {
    /// The action as a plist.
    pub fn to_sexp(&self) -> Sexp {
        match self {
            Action::Emacs(e) => e.to_sexp(),
            Action::Tool { name, args } => Sexp::from(Value::list(vec![
                kw("type"),
                kw("request"),
                kw("target"),
                kw("tool"),
                kw("name"),
                Value::string(name.as_str()),
                kw("args"),
                sexp::clone_value(args.value()),
            ])),
        }
    }
}

impl Action {
    /// The action as the LLM's proposal is judged: a direct `:call-tool` plist is the call
    /// of the tool it names, so it is checked, gated (by the tool's `:confirm`) and approved
    /// exactly as the same call made as a tool call, not taken for an edit of an Org file.
    pub fn as_proposed(self) -> Action {
        match self {
            Action::Emacs(EmacsAction::CallTool { name, args }) => Action::Tool { name, args },
            other => other,
        }
    }

    /// What the gates and the user's approvals call the action: the Emacs action's name
    /// (`set-todo`), or `tool:NAME` for a tool call.
    pub fn kind(&self) -> String {
        match self {
            Action::Tool { name, .. } => format!("tool:{name}"),
            Action::Emacs(e) => e.name().to_string(),
        }
    }
}

impl EmacsAction {
    /// Every Emacs action's name: the vocabulary the Elisp actuator implements (a test
    /// checks that both sides name the same set).
    pub const NAMES: [&'static str; 22] = [
        "insert",
        "stream-append",
        "message",
        "add-headline",
        "set-todo",
        "set-property",
        "delete-property",
        "set-tags",
        "schedule",
        "deadline",
        "replace-body",
        "append-body",
        "visit-node",
        "call-tool",
        "create-skill",
        "eval-elisp",
        "refile",
        "archive",
        "ensure-id",
        "create-note",
        "insert-link",
        "add-note",
    ];

    /// The action's name, its `:action` keyword without the colon.
    pub fn name(&self) -> &'static str {
        match self {
            EmacsAction::Insert { .. } => "insert",
            EmacsAction::StreamAppend { .. } => "stream-append",
            EmacsAction::Message { .. } => "message",
            EmacsAction::AddHeadline { .. } => "add-headline",
            EmacsAction::SetTodo { .. } => "set-todo",
            EmacsAction::SetProperty { .. } => "set-property",
            EmacsAction::DeleteProperty { .. } => "delete-property",
            EmacsAction::SetTags { .. } => "set-tags",
            EmacsAction::Schedule { .. } => "schedule",
            EmacsAction::Deadline { .. } => "deadline",
            EmacsAction::ReplaceBody { .. } => "replace-body",
            EmacsAction::AppendBody { .. } => "append-body",
            EmacsAction::VisitNode { .. } => "visit-node",
            EmacsAction::CallTool { .. } => "call-tool",
            EmacsAction::CreateSkill { .. } => "create-skill",
            EmacsAction::EvalElisp { .. } => "eval-elisp",
            EmacsAction::Refile { .. } => "refile",
            EmacsAction::Archive { .. } => "archive",
            EmacsAction::EnsureId { .. } => "ensure-id",
            EmacsAction::CreateNote { .. } => "create-note",
            EmacsAction::InsertLink { .. } => "insert-link",
            EmacsAction::AddNote { .. } => "add-note",
        }
    }

    /// The node the action reads or changes (an edit's `id`, a new headline's parent), and
    /// the file a new top-level headline goes to.
    pub fn target(&self) -> (Option<&str>, Option<&str>) {
        match self {
            EmacsAction::SetTodo { id, .. }
            | EmacsAction::SetProperty { id, .. }
            | EmacsAction::DeleteProperty { id, .. }
            | EmacsAction::SetTags { id, .. }
            | EmacsAction::Schedule { id, .. }
            | EmacsAction::Deadline { id, .. }
            | EmacsAction::ReplaceBody { id, .. }
            | EmacsAction::AppendBody { id, .. }
            | EmacsAction::Refile { id, .. }
            | EmacsAction::Archive { id }
            | EmacsAction::EnsureId { id }
            | EmacsAction::InsertLink { id, .. }
            | EmacsAction::AddNote { id, .. }
            | EmacsAction::VisitNode { id } => (Some(id), None),
            EmacsAction::AddHeadline { file, parent, .. } => (parent.as_deref(), file.as_deref()),
            _ => (None, None),
        }
    }

    /// The second place an action touches, judged as its [`target`](Self::target) is: the
    /// node or file a refile moves into, the node a link points to (which gets an ID).
    pub fn destination(&self) -> (Option<&str>, Option<&str>) {
        match self {
            EmacsAction::Refile {
                target_id,
                target_file,
                ..
            } => (target_id.as_deref(), target_file.as_deref()),
            EmacsAction::InsertLink { target_id, .. } => (Some(target_id), None),
            _ => (None, None),
        }
    }

    /// The file a `create-note` would write (not a note yet, so not a target the store
    /// knows): absolute, or relative to the first of `org-agent-directories`.
    pub fn new_file(&self) -> Option<&str> {
        match self {
            EmacsAction::CreateNote { file, .. } => Some(file),
            _ => None,
        }
    }

    fn from_args(a: &Fields) -> Result<EmacsAction, SexpError> {
        Ok(match a.keyword("action")? {
            "insert" => EmacsAction::Insert {
                buffer: a.string("buffer")?,
                text: a.string("text")?,
            },
            "stream-append" => EmacsAction::StreamAppend {
                buffer: a.string("buffer")?,
                text: a.string("text")?,
            },
            "message" => EmacsAction::Message {
                text: a.string("text")?,
            },
            "add-headline" => {
                let file = a.opt_string("file")?;
                let parent = a.opt_string("parent")?;
                if file.is_some() == parent.is_some() {
                    return Err(shape("add-headline: give exactly one of :file and :parent"));
                }
                EmacsAction::AddHeadline {
                    file,
                    parent,
                    title: a.string("title")?,
                    todo: a.opt_string("todo")?,
                    tags: a.strings("tags")?,
                    properties: a.pairs("properties")?,
                    body: a.opt_string("body")?,
                }
            }
            "set-todo" => EmacsAction::SetTodo {
                id: a.string("id")?,
                state: a.opt_string("state")?,
            },
            "set-property" => EmacsAction::SetProperty {
                id: a.string("id")?,
                key: a.string("key")?,
                value: a.string("value")?,
            },
            "delete-property" => EmacsAction::DeleteProperty {
                id: a.string("id")?,
                key: a.string("key")?,
            },
            "set-tags" => EmacsAction::SetTags {
                id: a.string("id")?,
                tags: a.strings("tags")?,
            },
            "schedule" => EmacsAction::Schedule {
                id: a.string("id")?,
                date: a.opt_string("date")?,
            },
            "deadline" => EmacsAction::Deadline {
                id: a.string("id")?,
                date: a.opt_string("date")?,
            },
            "replace-body" => EmacsAction::ReplaceBody {
                id: a.string("id")?,
                body: a.string("body")?,
            },
            "append-body" => EmacsAction::AppendBody {
                id: a.string("id")?,
                text: a.string("text")?,
            },
            "visit-node" => EmacsAction::VisitNode {
                id: a.string("id")?,
            },
            "call-tool" => EmacsAction::CallTool {
                name: a.string("name")?,
                args: tool_args(a)?,
            },
            "create-skill" => EmacsAction::CreateSkill {
                name: a.string("name")?,
                text: a.string("text")?,
            },
            "eval-elisp" => EmacsAction::EvalElisp {
                code: a.string("code")?,
            },
            "refile" => {
                let target_id = a.opt_string("target-id")?;
                let target_file = a.opt_string("target-file")?;
                if target_id.is_some() == target_file.is_some() {
                    return Err(shape(
                        "refile: give exactly one of :target-id and :target-file",
                    ));
                }
                EmacsAction::Refile {
                    id: a.string("id")?,
                    target_id,
                    target_file,
                }
            }
            "archive" => EmacsAction::Archive {
                id: a.string("id")?,
            },
            "ensure-id" => EmacsAction::EnsureId {
                id: a.string("id")?,
            },
            "create-note" => EmacsAction::CreateNote {
                file: a.string("file")?,
                title: a.string("title")?,
                filetags: a.strings("filetags")?,
                body: a.opt_string("body")?,
            },
            "insert-link" => EmacsAction::InsertLink {
                id: a.string("id")?,
                target_id: a.string("target-id")?,
                description: a.opt_string("description")?,
            },
            "add-note" => EmacsAction::AddNote {
                id: a.string("id")?,
                text: a.string("text")?,
            },
            other => return Err(shape(format!("action: unknown Emacs action :{other}"))),
        })
    }

    /// Whether the action may change an Org file (gates ask before those). An Elisp tool
    /// may do anything, so a `:call-tool` that reaches the gates as such counts (fail
    /// closed); the loop turns the LLM's `:call-tool` into the tool call it names
    /// ([`Action::as_proposed`]) and gates it by the tool's `:confirm`. A new skill is an Org file too, so whatever
    /// limits edits limits it.
    pub fn edits_org(&self) -> bool {
        !matches!(
            self,
            EmacsAction::Insert { .. }
                | EmacsAction::StreamAppend { .. }
                | EmacsAction::Message { .. }
                | EmacsAction::VisitNode { .. }
                | EmacsAction::EvalElisp { .. }
        )
    }

    /// The action as the plist the Elisp actuator receives.
    pub fn to_sexp(&self) -> Sexp {
        let s = |x: &str| Value::string(x);
        let opt = |x: &Option<String>| x.as_deref().map(Value::string).unwrap_or(Value::Nil);
        let strs = |xs: &[String]| Value::list(xs.iter().map(|x| s(x)).collect::<Vec<_>>());
        let args: Vec<(&str, Value)> = match self {
            EmacsAction::Insert { buffer, text } => {
                vec![("buffer", s(buffer)), ("text", s(text))]
            }
            EmacsAction::StreamAppend { buffer, text } => {
                vec![("buffer", s(buffer)), ("text", s(text))]
            }
            EmacsAction::Message { text } => vec![("text", s(text))],
            EmacsAction::AddHeadline {
                file,
                parent,
                title,
                todo,
                tags,
                properties,
                body,
            } => vec![
                ("file", opt(file)),
                ("parent", opt(parent)),
                ("title", s(title)),
                ("todo", opt(todo)),
                ("tags", strs(tags)),
                (
                    "properties",
                    Value::list(
                        properties
                            .iter()
                            .map(|(k, v)| Value::cons(s(k), s(v)))
                            .collect::<Vec<_>>(),
                    ),
                ),
                ("body", opt(body)),
            ],
            EmacsAction::SetTodo { id, state } => {
                vec![("id", s(id)), ("state", opt(state))]
            }
            EmacsAction::SetProperty { id, key, value } => {
                vec![("id", s(id)), ("key", s(key)), ("value", s(value))]
            }
            EmacsAction::DeleteProperty { id, key } => {
                vec![("id", s(id)), ("key", s(key))]
            }
            EmacsAction::SetTags { id, tags } => {
                vec![("id", s(id)), ("tags", strs(tags))]
            }
            EmacsAction::Schedule { id, date } => {
                vec![("id", s(id)), ("date", opt(date))]
            }
            EmacsAction::Deadline { id, date } => {
                vec![("id", s(id)), ("date", opt(date))]
            }
            EmacsAction::ReplaceBody { id, body } => {
                vec![("id", s(id)), ("body", s(body))]
            }
            EmacsAction::AppendBody { id, text } => {
                vec![("id", s(id)), ("text", s(text))]
            }
            EmacsAction::VisitNode { id } => vec![("id", s(id))],
            EmacsAction::CallTool { name, args } => {
                vec![("name", s(name)), ("args", sexp::clone_value(args.value()))]
            }
            EmacsAction::CreateSkill { name, text } => {
                vec![("name", s(name)), ("text", s(text))]
            }
            EmacsAction::EvalElisp { code } => vec![("code", s(code))],
            EmacsAction::Refile {
                id,
                target_id,
                target_file,
            } => vec![
                ("id", s(id)),
                ("target-id", opt(target_id)),
                ("target-file", opt(target_file)),
            ],
            EmacsAction::Archive { id } | EmacsAction::EnsureId { id } => vec![("id", s(id))],
            EmacsAction::CreateNote {
                file,
                title,
                filetags,
                body,
            } => vec![
                ("file", s(file)),
                ("title", s(title)),
                ("filetags", strs(filetags)),
                ("body", opt(body)),
            ],
            EmacsAction::InsertLink {
                id,
                target_id,
                description,
            } => vec![
                ("id", s(id)),
                ("target-id", s(target_id)),
                ("description", opt(description)),
            ],
            EmacsAction::AddNote { id, text } => vec![("id", s(id)), ("text", s(text))],
        };
        let mut items = vec![
            kw("type"),
            kw("request"),
            kw("target"),
            kw("emacs"),
            kw("action"),
            kw(self.name()),
        ];
        for (k, v) in args {
            items.push(kw(k));
            items.push(v);
        }
        Sexp::from(Value::list(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sexp::{print, read};

    fn action(text: &str) -> Result<Action, SexpError> {
        Action::from_sexp(read(text).unwrap().value())
    }

    #[test]
    fn stimuli_convert_both_ways() {
        let text = "(:TYPE :event :payload (:sensor :chat-message :text \"What is due?\") :meta (:session \"s1\") :depth 2)";
        let st = Stimulus::from_sexp(read(text).unwrap().value()).unwrap();
        assert_eq!(
            st,
            Stimulus {
                sensor: Sensor::ChatMessage {
                    text: "What is due?".into()
                },
                session: Some("s1".into()),
                depth: 2
            }
        );
        let again = Stimulus::from_sexp(st.to_sexp().value()).unwrap();
        assert_eq!(again, st);
        for sensor in [
            Sensor::Command {
                name: "organize-subtree".into(),
                focus: Some("id-1".into()),
            },
            Sensor::BufferSave {
                file: "/org/a.org".into(),
            },
            Sensor::Timer {
                name: "daily".into(),
            },
            Sensor::ToolResult {
                call: "c1".into(),
                ok: false,
                content: "no such node".into(),
            },
            Sensor::ActuatorResult {
                call: "c2".into(),
                ok: true,
                message: "done".into(),
            },
        ] {
            let st = Stimulus {
                sensor,
                session: None,
                depth: 0,
            };
            let printed = print(st.to_sexp().value());
            let back = Stimulus::from_sexp(read(&printed).unwrap().value()).unwrap();
            assert_eq!(back, st, "{printed}");
        }
    }

    #[test]
    fn unknown_shapes_are_errors_that_say_why() {
        let cases = [
            (
                "(:type :event :payload (:sensor :telepathy))",
                "unknown :sensor :telepathy",
            ),
            ("(:type :gossip)", "unknown :type :gossip"),
            ("(:type :event)", ":payload is missing"),
            (
                "(:type :event :payload (:sensor :chat-message))",
                ":text is missing",
            ),
            (
                "(:type :event :payload (:sensor :chat-message :text 42))",
                ":text must be a string",
            ),
            (
                "(:type :event :payload (:sensor :timer :name \"t\") :depth -1)",
                ":depth must be a natural number",
            ),
            ("\"just a string\"", "expected a plist"),
        ];
        for (text, want) in cases {
            let err = Stimulus::from_sexp(read(text).unwrap().value()).unwrap_err();
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
        let cases = [
            (
                "(:type :request :target :emacs :action :launch-missiles)",
                "unknown Emacs action :launch-missiles",
            ),
            (
                "(:type :request :target :shell :cmd \"rm\")",
                "unknown :target :shell",
            ),
            (
                "(:type :request :target :emacs :action :set-todo)",
                ":id is missing",
            ),
            (
                "(:type :request :target :emacs :action :set-tags :id \"x\" :tags (1 2))",
                "list of strings",
            ),
            (
                "(:type :request :target :emacs :action :add-headline :title \"t\")",
                "exactly one of :file and :parent",
            ),
            (
                "(:type :request :target :emacs :action :refile :id \"x\")",
                "exactly one of :target-id and :target-file",
            ),
            (
                "(:type :request :target :emacs :action :insert-link :id \"x\")",
                ":target-id is missing",
            ),
            (
                "(:type :request :target :emacs :action :create-note :file \"a.org\")",
                ":title is missing",
            ),
            ("(:type :request :target :tool)", ":name is missing"),
            (
                "(:type :request :target :tool :name \"q\" :args 5)",
                "expected a plist",
            ),
        ];
        for (text, want) in cases {
            let err = action(text).unwrap_err();
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn emacs_actions_convert_both_ways() {
        let a = action(
            "(:type :request :target :emacs :action :add-headline :parent \"p1\" :title \"Call Ana\" \
             :todo \"TODO\" :tags (\"work\" call) :properties ((\"EFFORT\" . \"1h\") (:contact \"Ana\")) :body \"About the site.\")",
        );
        let a = a.unwrap_or_else(|e| panic!("{e}"));
        let Action::Emacs(e) = &a else {
            panic!("not an Emacs action")
        };
        assert_eq!(
            e,
            &EmacsAction::AddHeadline {
                file: None,
                parent: Some("p1".into()),
                title: "Call Ana".into(),
                todo: Some("TODO".into()),
                tags: vec!["work".into(), "call".into()],
                properties: vec![
                    ("EFFORT".into(), "1h".into()),
                    ("CONTACT".into(), "Ana".into())
                ],
                body: Some("About the site.".into()),
            }
        );
        assert!(e.edits_org());
        for e in [
            e.clone(),
            EmacsAction::Insert {
                buffer: "*org-agent-chat*".into(),
                text: "hi".into(),
            },
            EmacsAction::SetTodo {
                id: "x".into(),
                state: None,
            },
            EmacsAction::Schedule {
                id: "x".into(),
                date: Some("2026-12-01".into()),
            },
            EmacsAction::VisitNode { id: "x".into() },
            EmacsAction::CreateSkill {
                name: "weekly-review".into(),
                text: "#+SKILL_NAME: weekly-review\n* Prompt\n\"Review\" the week.\n".into(),
            },
            EmacsAction::Refile {
                id: "x".into(),
                target_id: Some("p".into()),
                target_file: None,
            },
            EmacsAction::Refile {
                id: "x".into(),
                target_id: None,
                target_file: Some("/org/b.org".into()),
            },
            EmacsAction::Archive { id: "x".into() },
            EmacsAction::EnsureId { id: "oa-1".into() },
            EmacsAction::CreateNote {
                file: "ideas/new.org".into(),
                title: "New".into(),
                filetags: vec!["idea".into()],
                body: Some("First thought.".into()),
            },
            EmacsAction::InsertLink {
                id: "x".into(),
                target_id: "y".into(),
                description: Some("see y".into()),
            },
            EmacsAction::AddNote {
                id: "x".into(),
                text: "Called Ana.".into(),
            },
        ] {
            let printed = print(e.to_sexp().value());
            let back = action(&printed).unwrap_or_else(|err| panic!("{printed}: {err}"));
            assert_eq!(back, Action::Emacs(e), "{printed}");
        }
        // A new skill is a new Org file: whatever limits edits limits it.
        let draft = EmacsAction::CreateSkill {
            name: "x".into(),
            text: String::new(),
        };
        assert!(draft.edits_org());
        assert_eq!(draft.target(), (None, None));
    }

    #[test]
    fn two_place_verbs_name_both_places() {
        let refile = EmacsAction::Refile {
            id: "x".into(),
            target_id: None,
            target_file: Some("/org/b.org".into()),
        };
        assert_eq!(refile.target(), (Some("x"), None));
        assert_eq!(refile.destination(), (None, Some("/org/b.org")));
        let link = EmacsAction::InsertLink {
            id: "x".into(),
            target_id: "y".into(),
            description: None,
        };
        assert_eq!(link.destination(), (Some("y"), None));
        let note = EmacsAction::CreateNote {
            file: "a.org".into(),
            title: "A".into(),
            filetags: vec![],
            body: None,
        };
        assert_eq!(note.new_file(), Some("a.org"));
        assert_eq!(note.target(), (None, None));
        for verb in [refile, link, note, EmacsAction::Archive { id: "x".into() }] {
            assert!(verb.edits_org(), "{}", verb.name());
        }
        assert_eq!(
            EmacsAction::VisitNode { id: "x".into() }.destination(),
            (None, None)
        );
    }

    #[test]
    fn the_vocabulary_is_what_the_reader_knows() {
        for name in EmacsAction::NAMES {
            let plist = format!("(:type :request :target :emacs :action :{name})");
            match action(&plist) {
                Ok(a) => panic!("{name} parsed without its arguments: {a:?}"),
                Err(e) => assert!(
                    !e.to_string().contains("unknown Emacs action"),
                    "{name} is in NAMES but the reader does not know it: {e}"
                ),
            }
        }
        let unknown = action("(:type :request :target :emacs :action :format-disk)");
        assert!(matches!(unknown, Err(e) if e.to_string().contains("unknown Emacs action")));
        let visit = EmacsAction::VisitNode { id: "x".into() };
        assert_eq!(visit.name(), "visit-node");
        assert_eq!(Action::Emacs(visit).kind(), "visit-node");
        let tool = Action::Tool {
            name: "query_notes".into(),
            args: Sexp::from(Value::Nil),
        };
        assert_eq!(tool.kind(), "tool:query_notes");
    }

    #[test]
    fn long_tool_arguments_do_not_overflow() {
        let text = format!(
            "(:type :request :target :tool :name \"q\" :args (:ids ({})))",
            "1 ".repeat(200_000)
        );
        let a = action(&text).unwrap();
        let Action::Tool { args, .. } = &a else {
            panic!("not a tool call")
        };
        let copy = args.clone();
        assert_eq!(&copy, args);
    }

    #[test]
    fn tool_calls_keep_their_argument_plist() {
        let a =
            action("(:type :request :target :tool :name \"query\" :args (:tag \"work\" :limit 5))")
                .unwrap();
        let Action::Tool { name, args } = a else {
            panic!("not a tool call")
        };
        assert_eq!(name, "query");
        assert_eq!(args.get("limit").and_then(Value::as_i64), Some(5));
    }
}
