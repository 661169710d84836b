//! What turns the table of verbs ([`super::verbs`]) into code: the `verb_table!` macro,
//! the kinds of argument a verb takes, and how each kind is read from a plist or a tool
//! call's JSON and printed back.
//!
//! A verb used to be written out in ten places in three spellings (`AddNote`, `:add-note`,
//! `add_note`): the enum, its reading and printing, the gates' places, the tools' JSON
//! schemas and builder, the actuator's argument specs. The table is the one place now;
//! everything else is derived from it here, so the spellings cannot drift apart.

use crate::sexp::fields::Fields;
use crate::sexp::{self, Sexp, SexpError, Value};
use serde_json::{json, Map, Value as Json};

/// How a verb changes the Org files, as the gates and the previews see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrgEdit {
    /// Changes no Org file: the display verbs, and `eval-elisp`, which its own gate
    /// (`gates::ElispEval`) asks about every time instead.
    None,
    /// Edits one Org buffer in place: previewed by running it on a scratch copy.
    InPlace,
    /// Moves a subtree out of its file, into another or the same (refile, archive).
    Move,
    /// Writes a new Org file (a note, a skill draft).
    NewFile,
    /// Runs code that may change anything (an Elisp tool): counted as an edit, so the
    /// gates fail closed, and never previewed.
    Unknown,
}

impl OrgEdit {
    /// The symbol the actuator dispatches its previews on (`in-place`…), nil for none.
    pub fn lisp_name(self) -> Option<&'static str> {
        match self {
            OrgEdit::None => None,
            OrgEdit::InPlace => Some("in-place"),
            OrgEdit::Move => Some("move"),
            OrgEdit::NewFile => Some("new-file"),
            OrgEdit::Unknown => Some("unknown"),
        }
    }
}

/// Which tool, if any, offers a verb to the model. The tool is named as the verb with
/// `_` for `-` (`add-note` → `add_note`), its arguments as the verb's with `_` for `-`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// Not a tool: the loop itself proposes it (display), or it has its own way in
    /// (`call-tool` is the call of an Elisp tool, which is offered under its own name).
    NotAsTool,
    /// One of the edit tools, offered together when edits are.
    AsEditTool,
    /// A tool offered on its own terms (`eval_elisp`, only when the user's permissions
    /// enable it).
    AsOwnTool,
}

/// The kinds of argument a verb takes. In a plist nil is the empty list, so a list kind
/// is never missing there; a tool's JSON schema still requires what the model must give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgKind {
    /// A string that must be given (`String`).
    String,
    /// A string that may be omitted (`Option<String>`).
    OptString,
    /// A list of strings the model must give, possibly empty (`Vec<String>`).
    Strings,
    /// A list of strings that may be omitted (`Vec<String>`).
    OptStrings,
    /// Key–value strings: an alist or plist in Lisp, an object in JSON (`Vec<(String,
    /// String)>`); may be omitted.
    Pairs,
    /// A plist passed on as it is (`Sexp`); may be omitted.
    Plist,
}

impl ArgKind {
    /// Whether a tool call must give the argument.
    pub fn required(self) -> bool {
        matches!(self, ArgKind::String | ArgKind::Strings)
    }

    /// The actuator's type of the argument (`org-agent-actuator--check` checks it).
    pub fn lisp_type(self) -> &'static str {
        match self {
            ArgKind::String | ArgKind::OptString => "string",
            ArgKind::Strings | ArgKind::OptStrings => "strings",
            ArgKind::Pairs => "pairs",
            ArgKind::Plist => "plist",
        }
    }

    /// Whether the actuator lets the argument be nil (every kind but a required string:
    /// nil is the empty list).
    pub fn lisp_optional(self) -> bool {
        self != ArgKind::String
    }

    /// The JSON schema of an argument of this kind, described by `description`.
    pub fn json_schema(self, description: &str) -> Json {
        match self {
            ArgKind::String | ArgKind::OptString => {
                json!({"type": "string", "description": description})
            }
            ArgKind::Strings | ArgKind::OptStrings => json!({
                "type": "array", "description": description, "items": {"type": "string"}
            }),
            ArgKind::Pairs => json!({
                "type": "object", "description": description,
                "additionalProperties": {"type": "string"}
            }),
            ArgKind::Plist => json!({"type": "object", "description": description}),
        }
    }
}

/// One argument of a verb, as the table declares it.
#[derive(Debug)]
pub struct ArgSpec {
    /// The Rust field's name, which is also the tool call's (`target_id`).
    pub name: &'static str,
    pub kind: ArgKind,
    /// The table's doc lines, concatenated (see [`ArgSpec::doc`]).
    pub(super) doc_lines: &'static str,
}

impl ArgSpec {
    /// The plist key without its colon (`target-id`).
    pub fn wire_name(&self) -> String {
        self.name.replace('_', "-")
    }

    /// What the argument is, for the model: the doc comment of its row.
    pub fn doc(&self) -> &'static str {
        self.doc_lines.trim()
    }
}

/// One verb, as the table declares it.
#[derive(Debug)]
pub struct VerbSpec {
    /// Its `:action` keyword without the colon (`add-note`).
    pub name: &'static str,
    /// The table's doc lines, concatenated (see [`VerbSpec::doc`]).
    pub(super) doc_lines: &'static str,
    pub edits: OrgEdit,
    pub offered: Offered,
    pub args: &'static [ArgSpec],
    /// Whether its row names a place the gates judge (a target, a destination, a new
    /// file): then permission rules may name paths for it.
    pub judges_places: bool,
}

impl VerbSpec {
    /// What the verb does, for the model (the tool's description): its row's doc comment.
    pub fn doc(&self) -> &'static str {
        self.doc_lines.trim()
    }

    /// The name of the tool that offers it (`add_note`), whether or not one does.
    pub fn tool_name(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Whether `tool` is the name of the tool that offers this verb.
    pub fn is_tool(&self, tool: &str) -> bool {
        self.offered != Offered::NotAsTool
            && tool.len() == self.name.len()
            && tool
                .bytes()
                .zip(self.name.bytes())
                .all(|(t, v)| t == v || (t == b'_' && v == b'-'))
    }

    /// The names of the arguments a tool call must give.
    pub fn required_arguments(&self) -> Vec<&'static str> {
        self.args
            .iter()
            .filter(|a| a.kind.required())
            .map(|a| a.name)
            .collect()
    }
}

/// How an error names a verb and its arguments: as the plist spells them (`add-headline`,
/// `:file`) or as the tool call does (`add_headline`, `file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Spelling {
    Plist,
    Json,
}

impl Spelling {
    pub(super) fn verb(self, wire: &str) -> String {
        match self {
            Spelling::Plist => wire.to_owned(),
            Spelling::Json => wire.replace('-', "_"),
        }
    }

    pub(super) fn arg(self, field: &str) -> String {
        match self {
            Spelling::Plist => format!(":{}", field.replace('_', "-")),
            Spelling::Json => field.to_owned(),
        }
    }
}

/// The checks a row may ask for beyond its arguments' kinds; each says what is wrong in
/// the spelling of whoever gave the arguments.
pub(super) mod checks {
    use super::Spelling;

    /// Exactly one of two alternative places (a parent or a file) is given.
    pub fn exactly_one_of(
        sp: Spelling,
        verb: &str,
        (a, a_value): (&str, &Option<String>),
        (b, b_value): (&str, &Option<String>),
    ) -> Result<(), String> {
        if a_value.is_some() == b_value.is_some() {
            return Err(format!(
                "{}: give exactly one of {} and {}",
                sp.verb(verb),
                sp.arg(a),
                sp.arg(b)
            ));
        }
        Ok(())
    }

    /// A new note is an `.org` file.
    pub fn org_file(sp: Spelling, verb: &str, file: &str) -> Result<(), String> {
        if !file.ends_with(".org") {
            return Err(format!("{}: {file:?} is not an .org file", sp.verb(verb)));
        }
        Ok(())
    }

    /// A title is one line.
    pub fn one_line(sp: Spelling, verb: &str, field: &str, text: &str) -> Result<(), String> {
        if text.contains('\n') {
            return Err(format!("{}: a {field} is one line", sp.verb(verb)));
        }
        Ok(())
    }
}

/// A place the gates judge, whether the row's field holds it always or maybe.
pub(super) trait Place {
    fn place(&self) -> Option<&str>;
}

impl Place for String {
    fn place(&self) -> Option<&str> {
        Some(self)
    }
}

impl Place for Option<String> {
    fn place(&self) -> Option<&str> {
        self.as_deref()
    }
}

/// The arguments of a tool call, with the tool's name for its errors.
pub(super) struct JsonArgs<'a> {
    pub tool: &'a str,
    pub map: &'a Map<String, Json>,
}

impl JsonArgs<'_> {
    /// The value of `key`; JSON null is the same as leaving it out.
    fn get(&self, key: &str) -> Option<&Json> {
        self.map.get(key).filter(|v| !v.is_null())
    }
}

/// The Rust type of an argument kind: read from a plist or a tool call, printed back.
pub(super) trait VerbArg: Sized {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError>;
    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String>;
    fn to_lisp(&self) -> Value;
}

impl VerbArg for Option<String> {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError> {
        a.opt_string(key)
    }

    /// Models send "" for "none" as often as they leave the argument out: both are none.
    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String> {
        match args.get(key) {
            None => Ok(None),
            Some(Json::String(s)) if s.is_empty() => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "{}: argument {key:?} must be a string, not {other}",
                args.tool
            )),
        }
    }

    fn to_lisp(&self) -> Value {
        self.as_deref().map(Value::string).unwrap_or(Value::Nil)
    }
}

impl VerbArg for String {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError> {
        a.string(key)
    }

    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String> {
        match args.get(key) {
            // A given empty string is an argument, unlike an optional one's.
            Some(Json::String(s)) => Ok(s.clone()),
            None => Err(format!("{}: argument {key:?} is required", args.tool)),
            Some(other) => Err(format!(
                "{}: argument {key:?} must be a string, not {other}",
                args.tool
            )),
        }
    }

    fn to_lisp(&self) -> Value {
        Value::string(self.as_str())
    }
}

impl VerbArg for Vec<String> {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError> {
        a.strings(key)
    }

    /// Tags as models write them: `":b:"` is `b`, and a single string `"a:b"` or `"a b"`
    /// is several.
    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String> {
        match args.get(key) {
            None => Ok(vec![]),
            Some(Json::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Json::String(s) => Ok(s.trim_matches(':').to_string()),
                    other => Err(format!(
                        "{}: {key:?} must be a list of strings, found {other}",
                        args.tool
                    )),
                })
                .collect(),
            Some(Json::String(s)) => Ok(s
                .split(|c: char| c == ':' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()),
            Some(other) => Err(format!(
                "{}: {key:?} must be a list of strings, not {other}",
                args.tool
            )),
        }
    }

    fn to_lisp(&self) -> Value {
        Value::list(
            self.iter()
                .map(|x| Value::string(x.as_str()))
                .collect::<Vec<_>>(),
        )
    }
}

impl VerbArg for Vec<(String, String)> {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError> {
        a.pairs(key)
    }

    /// An object of strings; a number is taken as its text (`{"EFFORT": 2}`).
    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String> {
        match args.get(key) {
            None => Ok(vec![]),
            Some(Json::Object(pairs)) => pairs
                .iter()
                .map(|(k, v)| match v {
                    Json::String(s) => Ok((k.clone(), s.clone())),
                    Json::Number(n) => Ok((k.clone(), n.to_string())),
                    other => Err(format!(
                        "{}: property {k:?} must be a string, not {other}",
                        args.tool
                    )),
                })
                .collect(),
            Some(other) => Err(format!(
                "{}: {key} must be an object of strings, not {other}",
                args.tool
            )),
        }
    }

    fn to_lisp(&self) -> Value {
        Value::list(
            self.iter()
                .map(|(k, v)| Value::cons(Value::string(k.as_str()), Value::string(v.as_str())))
                .collect::<Vec<_>>(),
        )
    }
}

impl VerbArg for Sexp {
    fn from_plist(a: &Fields, key: &str) -> Result<Self, SexpError> {
        Ok(Sexp::from(match a.get(key) {
            None => Value::Nil,
            Some(plist) => {
                Fields::new(plist, "tool arguments")?;
                sexp::clone_value(plist)
            }
        }))
    }

    /// No tool takes a plist: an Elisp tool is called under its own name, with its own
    /// schema, and never through `call-tool` from JSON.
    fn from_json(args: &JsonArgs, key: &str) -> Result<Self, String> {
        Err(format!(
            "{}: argument {key:?} is a plist, which no tool call gives",
            args.tool
        ))
    }

    fn to_lisp(&self) -> Value {
        sexp::clone_value(self.value())
    }
}

/// The JSON arguments of a call of the tool that offers `verb`, checked to be an object
/// of known arguments (null is no arguments).
pub(super) fn json_object<'a>(
    verb: &VerbSpec,
    tool: &str,
    args: &'a Json,
    empty: &'a Map<String, Json>,
) -> Result<&'a Map<String, Json>, String> {
    let map = match args {
        Json::Object(m) => m,
        Json::Null => empty,
        other => return Err(format!("{tool}: arguments must be an object, not {other}")),
    };
    for key in map.keys() {
        if !verb.args.iter().any(|a| a.name == key) {
            let known: Vec<&str> = verb.args.iter().map(|a| a.name).collect();
            return Err(format!(
                "{tool}: unknown argument {key:?} (known: {})",
                known.join(", ")
            ));
        }
    }
    Ok(map)
}

/// The Rust type of a table kind.
macro_rules! verb_arg_type {
    (string) => { String };
    (opt_string) => { Option<String> };
    (strings) => { Vec<String> };
    (opt_strings) => { Vec<String> };
    (pairs) => { Vec<(String, String)> };
    (plist) => { $crate::sexp::Sexp };
}

/// The [`ArgKind`] of a table kind.
macro_rules! verb_arg_kind {
    (string) => {
        $crate::action::verb_table::ArgKind::String
    };
    (opt_string) => {
        $crate::action::verb_table::ArgKind::OptString
    };
    (strings) => {
        $crate::action::verb_table::ArgKind::Strings
    };
    (opt_strings) => {
        $crate::action::verb_table::ArgKind::OptStrings
    };
    (pairs) => {
        $crate::action::verb_table::ArgKind::Pairs
    };
    (plist) => {
        $crate::action::verb_table::ArgKind::Plist
    };
}

/// A row's extra check, on the arguments read into variables of their names.
macro_rules! verb_check {
    ($sp:expr, $verb:expr; exactly_one_of($a:ident, $b:ident)) => {
        $crate::action::verb_table::checks::exactly_one_of(
            $sp,
            $verb,
            (stringify!($a), &$a),
            (stringify!($b), &$b),
        )
    };
    ($sp:expr, $verb:expr; org_file($f:ident)) => {
        $crate::action::verb_table::checks::org_file($sp, $verb, &$f)
    };
    ($sp:expr, $verb:expr; one_line($f:ident)) => {
        $crate::action::verb_table::checks::one_line($sp, $verb, stringify!($f), &$f)
    };
}

/// The (node, file) pair of a row's `target(…)` or `destination(…)`, from the fields
/// bound to their names.
macro_rules! verb_places {
    () => {
        (None::<&str>, None::<&str>)
    };
    (node $n:ident) => {
        ($crate::action::verb_table::Place::place($n), None::<&str>)
    };
    (file $f:ident) => {
        (None::<&str>, $crate::action::verb_table::Place::place($f))
    };
    (node $n:ident, file $f:ident) => {
        (
            $crate::action::verb_table::Place::place($n),
            $crate::action::verb_table::Place::place($f),
        )
    };
}

/// Whether anything was given (a row names a place).
macro_rules! verb_any {
    () => {
        false
    };
    ($($given:tt)+) => {
        true
    };
}

/// The table of verbs: one row per verb, from which the enum and all that must agree with
/// it are derived. A row is
///
/// ```text
/// /// What the verb does (the tool's description for the model).
/// Variant "wire-name" edits(OrgEdit variant) offered(Offered variant)
///     [target(node FIELD[, file FIELD])] [destination(node FIELD[, file FIELD])]
///     [new_file(FIELD)] [checks(exactly_one_of(A, B), org_file(F), one_line(F))]
/// {
///     /// What the argument is (its description for the model).
///     field: kind,   // string, opt_string, strings, opt_strings, pairs or plist
/// }
/// ```
macro_rules! verb_table {
    ($(
        $(#[doc = $doc:literal])*
        $Variant:ident $wire:literal edits($edits:ident) offered($offered:ident)
            $(target($($t_role:ident $t_field:ident),+))?
            $(destination($($d_role:ident $d_field:ident),+))?
            $(new_file($new_file:ident))?
            $(checks($($check:ident($($check_arg:ident),+)),+))?
        {
            $($(#[doc = $arg_doc:literal])* $field:ident: $kind:ident),* $(,)?
        }
    )*) => {
        /// An edit or display action run on the main thread by the Elisp actuator: one
        /// variant per row of the table of verbs (src/action/verbs.rs).
        #[derive(Clone, Debug, PartialEq)]
        pub enum EmacsAction {$(
            $(#[doc = $doc])*
            $Variant { $($(#[doc = $arg_doc])* $field: verb_arg_type!($kind)),* },
        )*}

        /// The rows' positions in [`VERBS`], one per variant.
        #[allow(dead_code)]
        enum VerbIndex {
            $($Variant),*
        }

        /// The table, as data: what the tools, the gates and the actuator read of it.
        pub static VERBS: [$crate::action::verb_table::VerbSpec; [$($wire),*].len()] = [$(
            $crate::action::verb_table::VerbSpec {
                name: $wire,
                doc_lines: concat!("" $(, $doc)*),
                edits: $crate::action::verb_table::OrgEdit::$edits,
                offered: $crate::action::verb_table::Offered::$offered,
                args: &[$($crate::action::verb_table::ArgSpec {
                    name: stringify!($field),
                    kind: verb_arg_kind!($kind),
                    doc_lines: concat!("" $(, $arg_doc)*),
                }),*],
                judges_places: verb_any!(
                    $($($t_role)+)? $($($d_role)+)? $($new_file)?
                ),
            },
        )*];

        impl EmacsAction {
            /// Every Emacs action's name: the vocabulary the Elisp actuator implements (a
            /// test checks that both sides name the same set).
            pub const NAMES: [&'static str; [$($wire),*].len()] = [$($wire),*];

            /// The row of the table this action is.
            pub fn spec(&self) -> &'static $crate::action::verb_table::VerbSpec {
                match self {$(
                    EmacsAction::$Variant { .. } => &VERBS[VerbIndex::$Variant as usize],
                )*}
            }

            /// The action's name, its `:action` keyword without the colon.
            pub fn name(&self) -> &'static str {
                self.spec().name
            }

            /// The node the action reads or changes (an edit's `id`, a new headline's
            /// parent), and the file a new top-level headline goes to.
            #[allow(unused_variables)]
            pub fn target(&self) -> (Option<&str>, Option<&str>) {
                match self {$(
                    EmacsAction::$Variant { $($field),* } => {
                        verb_places!($($($t_role $t_field),+)?)
                    }
                )*}
            }

            /// The second place an action touches, judged as its
            /// [`target`](Self::target) is: the node or file a refile moves into, the
            /// node a link points to (which gets an ID).
            #[allow(unused_variables)]
            pub fn destination(&self) -> (Option<&str>, Option<&str>) {
                match self {$(
                    EmacsAction::$Variant { $($field),* } => {
                        verb_places!($($($d_role $d_field),+)?)
                    }
                )*}
            }

            /// The file a `create-note` would write (not a note yet, so not a target the
            /// store knows): absolute, or relative to the first of `org-agent-directories`.
            #[allow(unused_variables)]
            pub fn new_file(&self) -> Option<&str> {
                match self {$(
                    EmacsAction::$Variant { $($field),* } => {
                        verb_places!($(file $new_file)?).1
                    }
                )*}
            }

            /// The action of the plist `a`, whose `:action` names the verb.
            pub(super) fn from_args(
                a: &$crate::sexp::fields::Fields,
            ) -> Result<EmacsAction, $crate::sexp::SexpError> {
                use $crate::action::verb_table::{Spelling, VerbArg};
                match a.keyword("action")? {
                    $($wire => {
                        $(let $field = <verb_arg_type!($kind) as VerbArg>::from_plist(
                            a,
                            &stringify!($field).replace('_', "-"),
                        )?;)*
                        $($(verb_check!(Spelling::Plist, $wire; $check($($check_arg),+))
                            .map_err($crate::sexp::SexpError::Shape)?;)+)?
                        Ok(EmacsAction::$Variant { $($field),* })
                    })*
                    other => Err($crate::sexp::SexpError::Shape(format!(
                        "action: unknown Emacs action :{other}"
                    ))),
                }
            }

            /// The action of a call of the tool that offers `verb` with JSON `args`, or
            /// why they are wrong (in the tool's spelling).
            pub fn from_tool_call(
                verb: &$crate::action::verb_table::VerbSpec,
                args: &serde_json::Value,
            ) -> Result<EmacsAction, String> {
                use $crate::action::verb_table::{json_object, JsonArgs, Spelling, VerbArg};
                let tool = verb.tool_name();
                let empty = serde_json::Map::new();
                let map = json_object(verb, &tool, args, &empty)?;
                let args = JsonArgs { tool: &tool, map };
                match verb.name {
                    $($wire => {
                        $(let $field =
                            <verb_arg_type!($kind) as VerbArg>::from_json(&args, stringify!($field))?;)*
                        $($(verb_check!(Spelling::Json, $wire; $check($($check_arg),+))?;)+)?
                        Ok(EmacsAction::$Variant { $($field),* })
                    })*
                    other => Err(format!("{other}: not a verb")),
                }
            }

            /// The action as the plist the Elisp actuator receives.
            pub fn to_sexp(&self) -> $crate::sexp::Sexp {
                use $crate::action::verb_table::VerbArg;
                use $crate::sexp::Value;
                let mut items = vec![
                    Value::keyword("type"),
                    Value::keyword("request"),
                    Value::keyword("target"),
                    Value::keyword("emacs"),
                    Value::keyword("action"),
                    Value::keyword(self.name()),
                ];
                match self {$(
                    EmacsAction::$Variant { $($field),* } => {
                        $(items.push(Value::keyword(stringify!($field).replace('_', "-")));
                        items.push($field.to_lisp());)*
                    }
                )*}
                $crate::sexp::Sexp::from(Value::list(items))
            }
        }
    };
}

pub(super) use {verb_any, verb_arg_kind, verb_arg_type, verb_check, verb_places, verb_table};
