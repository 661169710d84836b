//! A skill file → a [`Skill`], read with the store's Org parser (never evaluated). Every
//! error names the file and the line.

use super::gate::{Condition, Decision, GateRow, Test};
use super::tools::{read_tool, ToolText};
use super::{
    Cron, On, OrgMatch, Skill, SkillError, SkillTool, Source, Trigger, MAX_DESCRIPTION, MAX_NAME,
};
use crate::store::node::children;
use crate::store::parse::parse_with_defaults;
use crate::store::text::unescape_org_code;
use crate::store::{Node, StoreError};
use std::borrow::Cow;
use std::path::Path;
use std::time::Duration;

/// The file's text and its nodes, for errors with lines.
struct Doc<'t> {
    file: &'t str,
    text: &'t str,
    nodes: Vec<Node>,
}

impl Doc<'_> {
    fn error(&self, line: usize, message: impl Into<String>) -> SkillError {
        SkillError {
            file: self.file.to_owned(),
            line,
            message: message.into(),
        }
    }

    /// The 1-based line of byte `offset`.
    fn line_at(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    }

    fn line_of(&self, node: &Node) -> usize {
        self.line_at(node.begin as usize)
    }

    /// The subtree text of `node`, headline included.
    fn subtree(&self, node: &Node) -> &str {
        &self.text[node.begin as usize..(node.end as usize).min(self.text.len())]
    }

    /// The line inside `node`'s subtree that starts with `prefix` (a property), else the
    /// headline's.
    fn line_of_prefix(&self, node: &Node, prefix: &str) -> usize {
        let sub = self.subtree(node);
        let mut offset = 0;
        for line in sub.split_inclusive('\n') {
            if line.trim_start().to_ascii_uppercase().starts_with(prefix) {
                return self.line_at(node.begin as usize + offset);
            }
            offset += line.len();
        }
        self.line_of(node)
    }

    /// The index of `node`, one of this file's nodes (a skill file has a few dozen, so
    /// finding it by address costs nothing).
    fn index_of(&self, node: &Node) -> Option<usize> {
        self.nodes.iter().position(|n| std::ptr::eq(n, node))
    }

    /// The children of `node`, one of this file's nodes.
    fn children<'a>(&'a self, node: &'a Node) -> impl Iterator<Item = &'a Node> + 'a {
        self.index_of(node)
            .into_iter()
            .flat_map(move |i| children(&self.nodes, i as u32))
            .map(move |c| &self.nodes[c as usize])
    }

    /// Whether `hidden` (by index) says `node` is private; a node not of this file is.
    fn is_hidden(&self, node: &Node, hidden: &dyn Fn(usize) -> bool) -> bool {
        self.index_of(node).is_none_or(hidden)
    }

    /// The subtree text of `node` (headline included) with each outermost subtree below it
    /// that `hidden` says is private replaced by a line saying so.
    fn subtree_shown(&self, node: &Node, hidden: &dyn Fn(usize) -> bool) -> Cow<'_, str> {
        let whole = self.subtree(node);
        let Some(index) = self.index_of(node) else {
            return Cow::Borrowed(whole);
        };
        let (begin, end) = (node.begin as usize, node.begin as usize + whole.len());
        let mut out = String::new();
        let mut from = begin;
        for (i, n) in self.nodes.iter().enumerate().skip(index + 1) {
            let (b, e) = (n.begin as usize, (n.end as usize).min(end));
            if b >= end {
                break;
            }
            if b < from || !hidden(i) {
                continue;
            }
            out.push_str(self.text.get(from..b).unwrap_or_default());
            out.push_str(&left_out(n));
            out.push('\n');
            from = e;
        }
        if from == begin {
            return Cow::Borrowed(whole);
        }
        out.push_str(self.text.get(from..end).unwrap_or_default());
        Cow::Owned(out)
    }
}

/// The nodes of Org `text` as the store parses them (index 0 is the file node), with
/// Org's default settings: the file's own `#+TODO:` and `#+FILETAGS:` apply.
pub(super) fn org_nodes(file: &str, text: &str) -> Result<Vec<Node>, StoreError> {
    Ok(parse_with_defaults(text, Path::new(file))?.nodes)
}

/// Read the skill in `text` (the contents of `file`), of `source`.
pub fn parse_skill(file: &str, text: &str, source: Source) -> Result<Skill, SkillError> {
    let nodes = org_nodes(file, text).map_err(|e| SkillError {
        file: file.to_owned(),
        line: 0,
        message: e.to_string(),
    })?;
    let doc = Doc { file, text, nodes };
    let keywords = keywords(&doc);
    let keyword = |name: &str| keywords.iter().find(|(k, _, _)| k == name);
    let Some((_, name, name_line)) = keyword("SKILL_NAME") else {
        return Err(doc.error(1, "no #+SKILL_NAME: (a kebab-case name)"));
    };
    check_name(name).map_err(|m| doc.error(*name_line, m))?;
    let Some((_, description, description_line)) = keyword("DESCRIPTION") else {
        return Err(doc.error(
            1,
            "no #+DESCRIPTION: (when to use the skill: what the model sees)",
        ));
    };
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(doc.error(
            *description_line,
            format!("the description is over {MAX_DESCRIPTION} characters"),
        ));
    }
    let words = |k: &str| -> Vec<String> {
        keyword(k)
            .map(|(_, v, _)| {
                v.split_whitespace()
                    .map(|w| w.trim_start_matches("id:").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let always = match keyword("ALWAYS") {
        None => false,
        Some((_, value, line)) => match value.as_str() {
            "t" if matches!(source, Source::Shipped | Source::User) => true,
            "t" => {
                return Err(doc.error(
                    *line,
                    "only shipped and user skills may be always in use (#+ALWAYS: t)",
                ))
            }
            "nil" => false,
            other => return Err(doc.error(*line, format!("#+ALWAYS: is t or nil, not {other:?}"))),
        },
    };
    let mut skill = Skill {
        name: name.clone(),
        title: keyword("TITLE")
            .map(|(_, v, _)| v.clone())
            .unwrap_or_else(|| name.clone()),
        description: description.clone(),
        depends_on: words("DEPENDS_ON"),
        allowed_tools: keyword("ALLOWED_TOOLS")
            .map(|(_, v, _)| tool_words(v))
            .unwrap_or_default(),
        always,
        trigger: Trigger::default(),
        prompt: String::new(),
        references: Vec::new(),
        gate: Vec::new(),
        tools: Vec::new(),
        tests: Vec::new(),
        file: file.to_owned(),
        source,
        org: Some(text.into()),
    };
    let sections: Vec<&Node> = doc.nodes.iter().filter(|n| n.content.level == 1).collect();
    for section in sections {
        match section.content.title.trim().to_ascii_lowercase().as_str() {
            "trigger" => skill.trigger = trigger(&doc, section)?,
            "prompt" => prompt(
                &doc,
                section,
                &|_| false,
                &mut skill.prompt,
                &mut skill.references,
            ),
            "gate" => skill.gate = gate(&doc, section)?,
            "tools" => skill.tools = tools(&doc, section, &skill.name, source)?,
            "tests" => skill.tests = tests(&doc, section)?,
            // Prose for people (Why, Notes…): not sent to the model.
            _ => {}
        }
    }
    if skill.always && source != Source::Shipped && !skill.prompt.is_empty() {
        return Err(doc.error(
            keyword("ALWAYS").map_or(0, |(_, _, line)| *line),
            "a skill always in use is never offered to the model, so its prompt would never \
             be sent: drop #+ALWAYS: or the * Prompt",
        ));
    }
    if source == Source::Agent && !skill.tests.iter().any(|t| t.kind == "gate") {
        return Err(doc.error(0, "a skill the agent writes needs at least one :gate: test"));
    }
    Ok(skill)
}

/// `#+KEY: value` lines before the first headline: (KEY uppercased, value, line).
fn keywords(doc: &Doc) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    for (i, line) in doc.text.lines().enumerate() {
        if line.starts_with('*') {
            break;
        }
        let Some(rest) = line.trim_start().strip_prefix("#+") else {
            continue;
        };
        if let Some((key, value)) = rest.split_once(':') {
            out.push((
                key.trim().to_ascii_uppercase(),
                value.trim().to_owned(),
                i + 1,
            ));
        }
    }
    out
}

/// The tools of an allowed-tools list: words split at spaces and commas, except inside
/// parentheses, so Agent Skills' `Bash(git add:*), Read` is two tools.
pub(super) fn tool_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A kebab-case name within the Agent Skills limits: a-z and 0-9 in parts joined by single
/// hyphens, at most [`MAX_NAME`] characters.
pub(super) fn check_name(name: &str) -> Result<(), String> {
    let kebab = !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if !kebab {
        return Err(format!(
            "the skill name {name:?} is not kebab-case (a-z, 0-9, single -)"
        ));
    }
    if name.len() > MAX_NAME {
        return Err(format!("the skill name is over {MAX_NAME} characters"));
    }
    Ok(())
}

fn property<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    node.content
        .properties
        .iter()
        .find(|(k, _)| &**k == key)
        .map(|(_, v)| v.trim())
}

fn trigger(doc: &Doc, section: &Node) -> Result<Trigger, SkillError> {
    let mut t = Trigger::default();
    for word in property(section, "ON")
        .unwrap_or_default()
        .split_whitespace()
    {
        let on = On::from_name(word).ok_or_else(|| {
            let known: Vec<&str> = On::ALL.iter().map(|(n, _)| *n).collect();
            doc.error(
                doc.line_of_prefix(section, ":ON:"),
                format!(
                    "unknown trigger {word:?} in :ON: (known: {})",
                    known.join(", ")
                ),
            )
        })?;
        t.on.push(on);
    }
    if let Some(m) = property(section, "MATCH") {
        let line = doc.line_of_prefix(section, ":MATCH:");
        t.matcher = Some(
            OrgMatch::parse(m).map_err(|e| doc.error(line, format!("in :MATCH: {m:?}: {e}")))?,
        );
    }
    t.paths = property(section, "PATHS")
        .map(|p| p.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(s) = property(section, "SCHEDULE") {
        let line = doc.line_of_prefix(section, ":SCHEDULE:");
        t.schedule = Some(Cron::parse(s).map_err(|m| doc.error(line, m))?);
    }
    if let Some(e) = property(section, "EVERY") {
        t.every =
            Some(interval(e).map_err(|m| doc.error(doc.line_of_prefix(section, ":EVERY:"), m))?);
    }
    let line = doc.line_of(section);
    if t.on.contains(&On::Cron) != t.schedule.is_some() {
        return Err(doc.error(line, "cron in :ON: and :SCHEDULE: go together"));
    }
    if t.on.contains(&On::Every) != t.every.is_some() {
        return Err(doc.error(line, "every in :ON: and :EVERY: go together"));
    }
    let about_files = [On::Save, On::TodoChange, On::Capture];
    if !t.on.iter().any(|on| about_files.contains(on)) {
        for (key, given) in [
            (":MATCH:", t.matcher.is_some()),
            (":PATHS:", !t.paths.is_empty()),
        ] {
            if given {
                return Err(doc.error(
                    doc.line_of_prefix(section, key),
                    format!("{key} applies to save, todo-change and capture, none of them in :ON:"),
                ));
            }
        }
    }
    Ok(t)
}

/// `30s`, `15m`, `1h`, `1d`.
pub(super) fn interval(s: &str) -> Result<Duration, String> {
    let unit_len = s.chars().last().map_or(0, char::len_utf8);
    let (n, unit) = s.split_at(s.len() - unit_len);
    let n: u64 = n
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?} is not an interval (30s, 15m, 1h, 1d)"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("{s:?} is not an interval (30s, 15m, 1h, 1d)")),
    };
    Ok(Duration::from_secs(secs))
}

/// The prompt of the `* Prompt` section `section` into `prompt`, its `:reference:` parts
/// added to `references`, leaving out the subtrees `hidden` (a node's index) says are
/// private: a hidden reference part is absent, title and all; a hidden part of the prompt
/// is a line saying a private part is left out; a hidden `* Prompt` is that line alone.
fn prompt(
    doc: &Doc,
    section: &Node,
    hidden: &dyn Fn(usize) -> bool,
    prompt: &mut String,
    references: &mut Vec<(String, String)>,
) {
    if doc.is_hidden(section, hidden) {
        *prompt = PRIVATE_PART.to_owned();
        return;
    }
    let mut text = markdown_unwrapped(&section.content.body_or_notice())
        .trim_end()
        .to_owned();
    for child in doc.children(section) {
        let reference = child.content.tags.iter().any(|t| t == "reference");
        if doc.is_hidden(child, hidden) {
            if !reference {
                text.push_str("\n\n");
                text.push_str(&left_out(child));
            }
            continue;
        }
        let sub = markdown_unwrapped(doc.subtree_shown(child, hidden).trim_end());
        if reference {
            references.push((child.content.title.to_string(), sub.trim_end().to_owned()));
        } else {
            text.push_str("\n\n");
            text.push_str(sub.trim_end());
        }
    }
    *prompt = trim_blank_lines(&text).to_owned();
}

/// What the model reads instead of a skill's prompt that is private as a whole.
pub(super) const PRIVATE_PART: &str = "[a private part of the skill is left out]";

/// The line that stands for the private subtree `node`, as the notes write it.
fn left_out(node: &Node) -> String {
    format!(
        "{} [a private subtree is left out]",
        "*".repeat(node.content.level.max(1) as usize)
    )
}

/// The parts of a skill the model reads, as the privacy rules let it see them (see
/// [`shown_parts`]).
pub(super) struct ShownParts {
    pub prompt: String,
    pub references: Vec<(String, String)>,
    /// The tools whose headings are private: not offered.
    pub hidden_tools: Vec<String>,
}

/// The prompt, reference parts and private tools of the skill in `text` (the contents of
/// `file`, which read as a skill before), read again leaving out the nodes `hides` says
/// are private (given the file's nodes and an index): what the model may see of it. `None`
/// when the whole file is private, or it no longer reads as Org.
pub(super) fn shown_parts(
    file: &str,
    text: &str,
    hides: impl Fn(&[Node], u32) -> bool,
) -> Option<ShownParts> {
    let nodes = org_nodes(file, text).ok()?;
    let hidden: Vec<bool> = (0..nodes.len() as u32).map(|i| hides(&nodes, i)).collect();
    if hidden.first().copied().unwrap_or(true) {
        return None;
    }
    let doc = Doc { file, text, nodes };
    let hidden = |i: usize| hidden.get(i).copied().unwrap_or(true);
    let mut shown = ShownParts {
        prompt: String::new(),
        references: Vec::new(),
        hidden_tools: Vec::new(),
    };
    for section in doc.nodes.iter().filter(|n| n.content.level == 1) {
        match section.content.title.trim().to_ascii_lowercase().as_str() {
            "prompt" => prompt(
                &doc,
                section,
                &hidden,
                &mut shown.prompt,
                &mut shown.references,
            ),
            "tools" => {
                for tool in doc.children(section) {
                    if doc.is_hidden(tool, &hidden) {
                        shown
                            .hidden_tools
                            .push(tool.content.title.trim().to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    Some(shown)
}

/// `text` without its leading blank lines and trailing white space; the first line keeps
/// its indentation (in Markdown it can matter).
pub(super) fn trim_blank_lines(text: &str) -> &str {
    let text = text.trim_end();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    &text[start..]
}

/// `text` with each `#+begin_src markdown` block replaced by its contents as Org reads
/// them: unescaped (see [`unescape_org_code`]) and, unless the block says `-i`, without the
/// indentation its lines share (Org indents a block's lines when it is edited with C-c ').
/// An imported `SKILL.md` body lives in such a block, and its prompt is the body as
/// written.
fn markdown_unwrapped(text: &str) -> String {
    let mut out = String::new();
    let mut block: Option<(bool, Vec<String>)> = None;
    for line in text.split_inclusive('\n') {
        let words: Vec<String> = line
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect();
        match block.as_mut() {
            None if words.len() >= 2 && words[0] == "#+begin_src" && words[1] == "markdown" => {
                block = Some((words[2..].iter().any(|w| w == "-i"), Vec::new()));
            }
            None => out.push_str(line),
            Some(_) if words.first().map(String::as_str) == Some("#+end_src") => {
                if let Some((preserve, lines)) = block.take() {
                    out.push_str(&dedented(&lines, preserve));
                }
            }
            Some((_, lines)) => lines.push(unescape_org_code(line)),
        }
    }
    // A block without its end line: Org reads no block there, so neither do we.
    if block.is_some() {
        return text.to_owned();
    }
    out
}

/// `lines` joined, without the indentation all their non-blank lines share (unless
/// `preserve`).
fn dedented(lines: &[String], preserve: bool) -> String {
    let indent = |l: &String| l.len() - l.trim_start_matches([' ', '\t']).len();
    let common = if preserve {
        0
    } else {
        lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(indent)
            .min()
            .unwrap_or(0)
    };
    lines
        .iter()
        .map(|l| l.get(common.min(indent(l))..).unwrap_or(""))
        .collect()
}

fn gate(doc: &Doc, section: &Node) -> Result<Vec<GateRow>, SkillError> {
    let sub = doc.subtree(section);
    let mut rows = Vec::new();
    let mut header_seen = false;
    let mut offset = section.begin as usize;
    for line in sub.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        let l = line.trim();
        if !l.starts_with('|') || l.starts_with("|-") {
            continue;
        }
        let n = doc.line_at(at);
        let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
        if !header_seen {
            header_seen = true;
            let header: Vec<String> = cells.iter().map(|c| c.to_ascii_lowercase()).collect();
            if header != ["action", "condition", "decision", "reason"] {
                return Err(doc.error(
                    n,
                    "the gate table's columns are action | condition | decision | reason",
                ));
            }
            continue;
        }
        let [action, condition, decision, reason] = cells[..] else {
            return Err(doc.error(
                n,
                format!("a gate row has 4 cells, this one {}", cells.len()),
            ));
        };
        if action.is_empty() {
            return Err(doc.error(n, "a gate row names no action"));
        }
        let decision = match decision {
            "deny" => Decision::Deny,
            "ask" => Decision::Ask,
            "allow" => {
                return Err(doc.error(
                    n,
                    "a skill cannot allow: it only tightens the user's policy (deny or ask)",
                ))
            }
            other => {
                return Err(doc.error(n, format!("the decision is deny or ask, not {other:?}")))
            }
        };
        rows.push(GateRow {
            action: action.to_owned(),
            condition: Condition::parse(condition).map_err(|m| doc.error(n, m))?,
            decision,
            reason: reason.to_owned(),
            line: n,
        });
    }
    Ok(rows)
}

fn tools(
    doc: &Doc,
    section: &Node,
    skill: &str,
    source: Source,
) -> Result<Vec<SkillTool>, SkillError> {
    let mut out: Vec<SkillTool> = Vec::new();
    for child in doc.children(section) {
        let line = doc.line_of(child);
        let body = child.content.body_or_notice();
        let text = ToolText {
            name: child.content.title.trim(),
            line,
            properties: child
                .content
                .properties
                .iter()
                .map(|(k, v)| {
                    let at = doc.line_of_prefix(child, &format!(":{}:", k.to_ascii_uppercase()));
                    (&**k, v.trim(), at)
                })
                .collect(),
            prose: prose(&body),
            elisp: elisp_block(&body),
        };
        let tool = read_tool(skill, &text, source).map_err(|(at, m)| doc.error(at, m))?;
        if let Some(first) = out.iter().find(|t| t.name == tool.name) {
            return Err(doc.error(
                line,
                format!(
                    "a second tool named {} (the first is on line {})",
                    tool.name, first.line
                ),
            ));
        }
        out.push(tool);
    }
    Ok(out)
}

/// The text of `body` outside its blocks and `#+` keyword lines: what a tool heading says of
/// the tool.
fn prose(body: &str) -> String {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in body.lines() {
        let l = line.trim();
        let lower = l.to_ascii_lowercase();
        if lower.starts_with("#+begin_") {
            in_block = true;
        } else if lower.starts_with("#+end_") {
            in_block = false;
        } else if !in_block && !lower.starts_with("#+") {
            out.push(l);
        }
    }
    out.join("\n").trim().to_owned()
}

/// The body of the first `#+begin_src emacs-lisp` block of `body`.
fn elisp_block(body: &str) -> Option<String> {
    let mut lines = body.lines();
    lines.find(|l| {
        let l = l.trim().to_ascii_lowercase();
        l.starts_with("#+begin_src emacs-lisp") || l.starts_with("#+begin_src elisp")
    })?;
    let code: Vec<&str> = lines
        .take_while(|l| !l.trim().to_ascii_lowercase().starts_with("#+end_src"))
        .collect();
    Some(code.join("\n"))
}

fn tests(doc: &Doc, section: &Node) -> Result<Vec<Test>, SkillError> {
    let mut out = Vec::new();
    for child in doc.children(section) {
        let line = doc.line_of(child);
        let kind = child
            .content
            .tags
            .iter()
            .find(|t| matches!(t.as_str(), "gate" | "trigger" | "turn"))
            .ok_or_else(|| {
                doc.error(
                    line,
                    format!(
                        "test {:?} is tagged none of :gate: :trigger: :turn:",
                        child.content.title
                    ),
                )
            })?;
        out.push(Test {
            title: child.content.title.to_string(),
            kind: kind.clone(),
            properties: child
                .content
                .properties
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: child.content.body_or_notice().into_owned(),
            line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GTD: &str = "#+TITLE: GTD integrity
#+SKILL_NAME: gtd-integrity
#+DESCRIPTION: Keeps projects and tasks consistent. Use when closing tasks.
#+DEPENDS_ON: ids
#+ALLOWED_TOOLS: query_notes read_node set_todo
* Why
People close projects with open tasks.
* Trigger
:PROPERTIES:
:ON:       model todo-change cron
:MATCH:    TODO=\"DONE\"
:SCHEDULE: 0 16 * * 5
:END:
* Prompt
Check the children before closing a task.
** Conventions :reference:
Projects have the :project: tag.
* Gate
| action   | condition                    | decision | reason                   |
|----------+------------------------------+----------+--------------------------|
| set_todo | state=DONE & open-children>0 | deny     | close its children first |
| set-*    | file~*/archive/*             | ask      | archived notes           |
* Tools
** stale-waiting
:PROPERTIES:
:ALIAS: query_notes
:TODO: WAITING
:END:
* Tests
** a parent with an open child cannot be closed :gate:
:PROPERTIES:
:ACTION: set_todo
:TARGET: Parent
:ARGS: state=DONE
:EXPECT: deny
:END:
#+begin_example
,* TODO Parent
,** TODO Child
#+end_example
";

    fn broken(text: &str) -> SkillError {
        parse_skill("/s/x.org", text, Source::User).expect_err("accepted")
    }

    #[test]
    fn a_whole_skill_reads() {
        let s = parse_skill("/s/gtd.org", GTD, Source::Shipped).unwrap();
        assert_eq!(s.name, "gtd-integrity");
        assert_eq!(s.title, "GTD integrity");
        assert_eq!(s.depends_on, ["ids"]);
        assert_eq!(s.allowed_tools.len(), 3);
        assert!(!s.always);
        assert_eq!(s.trigger.on, [On::Model, On::TodoChange, On::Cron]);
        assert_eq!(
            s.trigger.matcher.as_ref().map(OrgMatch::source),
            Some("TODO=\"DONE\"")
        );
        assert_eq!(
            s.trigger.schedule.as_ref().map(Cron::source),
            Some("0 16 * * 5")
        );
        assert_eq!(s.prompt, "Check the children before closing a task.");
        assert_eq!(s.references[0].0, "Conventions");
        assert!(
            !s.prompt.contains("project: tag"),
            "references load on demand"
        );
        assert_eq!(s.gate.len(), 2);
        assert_eq!(s.gate[0].decision, Decision::Deny);
        assert_eq!(s.gate[0].line, 21);
        assert_eq!(s.gate[1].condition.0.len(), 1);
        assert_eq!(s.tools[0].name, "stale-waiting");
        assert_eq!(
            s.tools[0].kind,
            crate::skills::SkillToolKind::Alias {
                builtin: "query_notes".into(),
                arguments: vec![crate::skills::AliasArgument {
                    name: "todo".into(),
                    value: "WAITING".into(),
                    default: false,
                    line: 27,
                }]
            }
        );
        assert_eq!(s.tests[0].kind, "gate");
        assert!(s.tests[0].body.contains("TODO Child"));
    }

    #[test]
    fn every_error_names_the_file_and_line() {
        for (from, to, line, says) in [
            (
                "#+SKILL_NAME: gtd-integrity",
                "#+SKILL_NAME: GTD Integrity",
                2,
                "not kebab-case",
            ),
            (
                "#+DESCRIPTION: Keeps projects and tasks consistent. Use when closing tasks.\n",
                "",
                1,
                "no #+DESCRIPTION",
            ),
            (
                ":ON:       model todo-change cron",
                ":ON:       model sunrise cron",
                10,
                "unknown trigger \"sunrise\"",
            ),
            (
                ":SCHEDULE: 0 16 * * 5",
                ":SCHEDULE: 0 25 * * 5",
                12,
                "not within 0-23",
            ),
            (
                ":SCHEDULE: 0 16 * * 5",
                ":SCHEDULE: 0 16 * *",
                12,
                "5-field",
            ),
            (
                ":ON:       model todo-change cron",
                ":ON:       model",
                8,
                "go together",
            ),
            (
                ":MATCH:    TODO=\"DONE\"",
                ":MATCH:    TODO=DONE",
                11,
                "in :MATCH: \"TODO=DONE\": the value at column 6",
            ),
            (
                ":ON:       model todo-change cron",
                ":ON:       model cron",
                11,
                ":MATCH: applies to save, todo-change and capture",
            ),
            (
                "state=DONE & open-children>0",
                "colour=red                  ",
                21,
                "unknown condition",
            ),
            (
                "| deny     | close its",
                "| allow    | close its",
                21,
                "cannot allow",
            ),
            (
                "| set_todo | state=DONE",
                "| set_todo | state=DONE | x",
                21,
                "4 cells",
            ),
            (":ALIAS: query_notes\n", "", 24, "neither :ALIAS:"),
            (":gate:", ":nice:", 30, "tagged none of"),
        ] {
            assert!(GTD.contains(from), "{from}");
            let e = broken(&GTD.replacen(from, to, 1));
            assert_eq!(e.file, "/s/x.org");
            assert_eq!(
                (e.line, e.message.contains(says)),
                (line, true),
                "{from}: {e}"
            );
            assert!(
                e.to_string().starts_with(&format!("/s/x.org:{line}:")) || line == 0,
                "{e}"
            );
        }
        let long = GTD.replace("gtd-integrity", &"a".repeat(65));
        assert!(broken(&long).message.contains("over 64"));
        let e = broken("* Prompt\nHello\n");
        assert_eq!((e.line, e.message.contains("#+SKILL_NAME")), (1, true));
    }

    #[test]
    fn imported_and_agent_skills_are_bounded() {
        let elisp = GTD.replace(
            ":PROPERTIES:\n:ALIAS: query_notes\n:TODO: WAITING\n:END:\n",
            "Say hello.\n#+begin_src emacs-lisp\n(message \"hi\")\n#+end_src\n",
        );
        let user = parse_skill("/s/u.org", &elisp, Source::User).unwrap();
        assert_eq!(user.tools[0].description, "Say hello.");
        assert!(matches!(
            &user.tools[0].kind,
            crate::skills::SkillToolKind::Elisp { code, .. } if code == "(message \"hi\")"
        ));
        let e = parse_skill("/s/i.org", &elisp, Source::Imported).unwrap_err();
        assert!(e.message.contains("only shipped and user skills"), "{e}");
        let untested = GTD.replace(":gate:", ":trigger:");
        let e = parse_skill("/s/a.org", &untested, Source::Agent).unwrap_err();
        assert!(e.message.contains(":gate: test"), "{e}");
        assert!(parse_skill("/s/a.org", GTD, Source::Agent).is_ok());
    }

    #[test]
    fn always_in_use_is_for_shipped_and_user_skills() {
        let always = GTD.replace("#+DEPENDS_ON: ids", "#+ALWAYS: t");
        assert!(
            parse_skill("/s/a.org", &always, Source::Shipped)
                .unwrap()
                .always
        );
        // A user's skill always in use has no prompt: nothing would ever send it.
        let e = parse_skill("/s/a.org", &always, Source::User).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("never be sent"), "{e}");
        let rules_only = always.replace(
            "Check the children before closing a task.\n** Conventions :reference:\nProjects have the :project: tag.\n",
            "",
        );
        assert!(
            parse_skill("/s/a.org", &rules_only, Source::User)
                .unwrap()
                .always
        );
        let e = parse_skill("/s/a.org", &always, Source::Agent).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("only shipped and user skills"), "{e}");
        let never = GTD.replace("#+DEPENDS_ON: ids", "#+ALWAYS: nil");
        assert!(
            !parse_skill("/s/a.org", &never, Source::Agent)
                .unwrap()
                .always
        );
        let e = broken(&GTD.replace("#+DEPENDS_ON: ids", "#+ALWAYS: yes"));
        assert_eq!((e.line, e.message.contains("t or nil")), (4, true), "{e}");
    }

    #[test]
    fn intervals() {
        assert_eq!(interval("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(interval("1d"), Ok(Duration::from_secs(86_400)));
        for bad in ["0h", "soon", "", "1é", "h"] {
            assert!(interval(bad).is_err(), "{bad}");
        }
    }
}
