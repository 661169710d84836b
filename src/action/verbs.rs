//! The verbs of the Elisp actuator, one row each: the one place a verb is declared.
//!
//! From this table come the [`EmacsAction`] enum, its reading from a plist and printing
//! back, its names, what the gates judge of it, the JSON schema and builder of the tool
//! that offers it (`tools::emacs`), and the argument specs the actuator checks
//! (`org-agent--verb-specs`). A new verb is a row here and its body in
//! elisp/org-agent-actuator.el (`org-agent-actuator-define`); see `verb_table!` for the
//! row's syntax. Docs are the model's: a verb's is its tool's description, an argument's
//! the description of the tool's argument.

use super::verb_table::{
    verb_any, verb_arg_kind, verb_arg_type, verb_check, verb_places, verb_table,
};

verb_table! {
    /// Set the TODO state of a headline (the user approves edits first).
    SetTodo "set-todo" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// a TODO keyword of the node's file, e.g. TODO or DONE; omit to remove the state
        state: opt_string,
    }

    /// Set a property of a headline (in its property drawer).
    SetProperty "set-property" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the property name
        key: string,
        /// the property value
        value: string,
    }

    /// Delete a property of a headline.
    DeleteProperty "delete-property" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the property name
        key: string,
    }

    /// Set the tags of a headline (replacing its own tags).
    SetTags "set-tags" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the new tags, without colons; an empty list removes them
        tags: strings,
    }

    /// Schedule a headline on a date, or remove its schedule.
    Schedule "schedule" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// YYYY-MM-DD, optionally followed by a time HH:MM; omit to unschedule
        date: opt_string,
    }

    /// Set a headline's deadline, or remove it.
    Deadline "deadline" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// YYYY-MM-DD, optionally followed by a time HH:MM; omit to remove
        date: opt_string,
    }

    /// Replace the body text of a headline (after its planning and property drawer; its
    /// children stay).
    ReplaceBody "replace-body" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the new body, in Org markup
        body: string,
    }

    /// Append text to the body of a headline.
    AppendBody "append-body" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the text to add, in Org markup
        text: string,
    }

    /// Add a headline as the last child of a node (parent) or at the end of a file (file);
    /// give exactly one of them.
    AddHeadline "add-headline" edits(InPlace) offered(AsEditTool)
        target(node parent, file file) checks(exactly_one_of(file, parent))
    {
        /// an Org file (from list_files), for a top-level headline
        file: opt_string,
        /// id of the parent node (from the tools)
        parent: opt_string,
        /// the headline's title, one line
        title: string,
        /// a TODO keyword, e.g. TODO
        todo: opt_string,
        /// tags, without colons
        tags: opt_strings,
        /// properties as an object of strings, e.g. {"EFFORT": "1:00"}
        properties: pairs,
        /// body text, in Org markup
        body: opt_string,
    }

    /// Move a headline with its subtree under another node (target_id) or to the top level
    /// of an Org file (target_file), as org-refile does; its ID goes with it. Give exactly
    /// one of them.
    Refile "refile" edits(Move) offered(AsEditTool)
        target(node id) destination(node target_id, file target_file)
        checks(exactly_one_of(target_id, target_file))
    {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// id of the node to move it under
        target_id: opt_string,
        /// an Org file (from list_files), to move it to the top level
        target_file: opt_string,
    }

    /// Archive a headline with its subtree, as org-archive-subtree does (where the user's
    /// org-archive-location says).
    Archive "archive" edits(Move) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
    }

    /// Give a headline an :ID: property if it has none (org-id-get-create); the result
    /// says the ID. Nodes without one have an id from the tools all the same: pass that.
    EnsureId "ensure-id" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
    }

    /// Create a new Org file with a #+TITLE (and #+FILETAGS, a body). Never over an
    /// existing file; only .org files inside the user's notes directories.
    CreateNote "create-note" edits(NewFile) offered(AsEditTool)
        new_file(file) checks(org_file(file), one_line(title))
    {
        /// the new file: relative to the first notes directory (e.g. ideas/garden.org), or
        /// absolute inside the notes directories
        file: string,
        /// the note's title, one line
        title: string,
        /// file tags, without colons
        filetags: opt_strings,
        /// the text after the header, in Org markup
        body: opt_string,
    }

    /// Append an id: link to another node at the end of a headline's body (the target node
    /// gets an :ID: if it has none).
    InsertLink "insert-link" edits(InPlace) offered(AsEditTool)
        target(node id) destination(node target_id)
    {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// id of the node the link points to
        target_id: string,
        /// the link's text; omit for the target's title
        description: opt_string,
    }

    /// Add a time-stamped note to a headline, as org-add-note does (into its LOGBOOK
    /// drawer when the user logs into drawers).
    AddNote "add-note" edits(InPlace) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
        /// the note, in Org markup
        text: string,
    }

    /// Show a node to the user in its file.
    VisitNode "visit-node" edits(None) offered(AsEditTool) target(node id) {
        /// the node's id (from query_notes, search_notes or read_node)
        id: string,
    }

    /// Draft a new skill: an Org file the user reads in full and approves before it is
    /// active. It starts with #+SKILL_NAME: NAME and #+DESCRIPTION: (when to use it); then
    /// a * Prompt section (what the model is told), a * Gate table of rules (| action |
    /// condition | decision | reason |, decision deny or ask) and a * Tests section with
    /// at least one :gate: test (a subheading tagged :gate: with the properties :ACTION:
    /// :TARGET: :ARGS: :EXPECT: and an example block holding the Org text it runs on). No
    /// emacs-lisp tools. Its tests run first: a draft that does not load comes back with
    /// the reason.
    CreateSkill "create-skill" edits(NewFile) offered(AsEditTool) {
        /// the skill's name, kebab-case (a-z, 0-9, single -), as its #+SKILL_NAME: says
        name: string,
        /// the whole skill file, in Org markup
        text: string,
    }

    /// Evaluate Emacs Lisp code in the user's Emacs and return the printed value. The user
    /// reads the code and approves each call; it runs with a time limit. Prefer the other
    /// tools: use this only for what they cannot do.
    EvalElisp "eval-elisp" edits(None) offered(AsOwnTool) {
        /// one Emacs Lisp form (wrap several in progn), evaluated with lexical binding
        code: string,
    }

    /// Insert text where the answer grows in an org-agent chat buffer.
    Insert "insert" edits(None) offered(NotAsTool) {
        /// the chat buffer's name
        buffer: string,
        /// the text, written as it is (lines Org would read as headings escaped)
        text: string,
    }

    /// Append a piece of a streamed answer where the answer grows in a chat buffer.
    StreamAppend "stream-append" edits(None) offered(NotAsTool) {
        /// the chat buffer's name
        buffer: string,
        /// the piece of the answer
        text: string,
    }

    /// Show a message in the echo area.
    Message "message" edits(None) offered(NotAsTool) {
        /// the message
        text: string,
    }

    /// Call a tool defined in Elisp (`org-agent-define-tool` or a skill's) with an
    /// argument plist. The model calls such a tool by its name; a `call-tool` it proposes
    /// is judged as that call (`Action::as_proposed`).
    CallTool "call-tool" edits(Unknown) offered(NotAsTool) {
        /// the Elisp tool's name
        name: string,
        /// its arguments, a plist
        args: plist,
    }
}
