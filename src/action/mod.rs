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

mod verb_table;
mod verbs;

pub use verb_table::{ArgKind, ArgSpec, Offered, OrgEdit, VerbSpec};
pub use verbs::{EmacsAction, VERBS};

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
    /// Whether the action may change an Org file (gates ask before those). An Elisp tool
    /// may do anything, so a `:call-tool` that reaches the gates as such counts (fail
    /// closed); the loop turns the LLM's `:call-tool` into the tool call it names
    /// ([`Action::as_proposed`]) and gates it by the tool's `:confirm`. A new skill is an
    /// Org file too, so whatever limits edits limits it.
    pub fn edits_org(&self) -> bool {
        self.spec().edits != OrgEdit::None
    }

    /// The row of the tool called `tool`, if a tool offers a verb under that name.
    pub fn offered_as(tool: &str) -> Option<&'static VerbSpec> {
        VERBS.iter().find(|v| v.is_tool(tool))
    }

    /// The row of the verb `name` (`add-note`), if there is one.
    pub fn verb(name: &str) -> Option<&'static VerbSpec> {
        VERBS.iter().find(|v| v.name == name)
    }
}

/// Sample actions for the tests of the table: one of every verb, all its arguments given.
#[cfg(test)]
pub(crate) mod samples {
    use super::{Action, ArgKind, EmacsAction, VerbSpec};
    use crate::sexp::read;
    use serde_json::{json, Map, Value as Json};

    /// `verb` with every argument given a value of its kind (a string ends in `.org`, so
    /// that a new note's file is one), but for those in `left_out`: as a plist's text and
    /// as a tool call's JSON arguments.
    fn texts(verb: &VerbSpec, left_out: &[String]) -> (String, Json) {
        let mut plist = format!("(:type :request :target :emacs :action :{}", verb.name);
        let mut args = Map::new();
        for arg in verb
            .args
            .iter()
            .filter(|a| !left_out.contains(&a.wire_name()))
        {
            let (lisp, value) = match arg.kind {
                ArgKind::String | ArgKind::OptString => {
                    let text = format!("{}.org", arg.name);
                    (format!("{text:?}"), json!(text))
                }
                ArgKind::Strings | ArgKind::OptStrings => {
                    ("(\"a\" \"b\")".to_owned(), json!(["a", "b"]))
                }
                ArgKind::Pairs => ("((\"K\" . \"v\"))".to_owned(), json!({"K": "v"})),
                ArgKind::Plist => ("(:k \"v\")".to_owned(), Json::Null),
            };
            plist.push_str(&format!(" :{} {lisp}", arg.wire_name()));
            args.insert(arg.name.to_owned(), value);
        }
        plist.push(')');
        (plist, Json::Object(args))
    }

    /// `verb` with every argument given (the second of two alternatives left out, when
    /// the verb takes exactly one of them), as an action and as a tool call's arguments.
    pub(crate) fn sample(verb: &VerbSpec) -> (EmacsAction, Json) {
        let mut left_out = Vec::new();
        loop {
            let (plist, json) = texts(verb, &left_out);
            let value = read(&plist).unwrap_or_else(|e| panic!("{plist}: {e}"));
            match Action::from_sexp(value.value()) {
                Ok(Action::Emacs(action)) => return (action, json),
                Ok(other) => panic!("{plist} is not an Emacs action: {other:?}"),
                Err(e) => {
                    let message = e.to_string();
                    let second = message
                        .contains("exactly one of")
                        .then(|| message.rsplit(" and :").next())
                        .flatten();
                    match second {
                        Some(name) if left_out.is_empty() => left_out.push(name.to_owned()),
                        _ => panic!("{plist}: {message}"),
                    }
                }
            }
        }
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

    #[test]
    fn every_verb_reads_prints_and_reads_back_the_same() {
        assert_eq!(EmacsAction::NAMES.len(), VERBS.len());
        for verb in &VERBS {
            let (action, _) = samples::sample(verb);
            assert!(std::ptr::eq(action.spec(), verb), "{}", verb.name);
            assert_eq!(action.name(), verb.name);
            assert!(EmacsAction::NAMES.contains(&verb.name));
            assert_eq!(
                EmacsAction::verb(verb.name).map(|v| v.name),
                Some(verb.name)
            );
            assert_eq!(action.edits_org(), verb.edits != OrgEdit::None);
            let printed = print(action.to_sexp().value());
            for arg in verb.args {
                assert!(
                    printed.contains(&format!(":{} ", arg.wire_name())),
                    "{printed} lacks {}",
                    arg.name
                );
            }
            let back = Action::from_sexp(read(&printed).unwrap().value());
            assert_eq!(back, Ok(Action::Emacs(action.clone())), "{printed}");
            // The places the gates judge are the row's: a verb that names none has none.
            let places = [action.target(), action.destination()]
                .iter()
                .any(|(node, file)| node.is_some() || file.is_some())
                || action.new_file().is_some();
            assert_eq!(places, verb.judges_places, "{}", verb.name);
        }
    }
}
