//! Agent Skills interoperability: a `NAME/SKILL.md` folder (YAML front matter, a Markdown
//! body, `references/`, `scripts/`) read as an imported skill, or converted into a
//! `SKILL.org`.
//!
//! An imported skill is prompt only (DESIGN.md §6): its body is the prompt,
//! `references/*.md` are its references (loaded on demand, by file name), and it has no
//! tools, no gate rows and no triggers beyond the model and the user. Its `scripts/` never
//! run: the prompt says they are not available, so the model tells the user instead of
//! pretending. `allowed-tools` pre-approve tools where the skill comes from; a skill here
//! cannot allow anything, so the conversion makes each an `ask` rule.
//!
//! The front matter is read by a small, strict reader of the YAML the specification uses:
//! `key: value` lines with plain, quoted or block (`|`, `>`) scalars, a list (`- item` lines
//! or `[a, b]`), and one level of `key: value` lines under `metadata`. Anything else
//! (anchors, tags, flow maps, deeper nesting, multi-line quoted strings) is an error that
//! names its line; keys the specification does not define are read and ignored, except
//! Claude Code's `disable-model-invocation` and `user-invocable`, which say who may start
//! the skill.

use super::parse::{check_name, tool_words, trim_blank_lines};
use super::MAX_DESCRIPTION;
use super::{parse_skill, run_gate_tests, On, Skill, SkillError, Source, Trigger};
use crate::store::text::escape_org_code;
use crate::tools::emacs::required_arguments;
use std::path::{Path, PathBuf};

/// Longest `compatibility` (the Agent Skills limit).
pub const MAX_COMPATIBILITY: usize = 500;

/// Read the `SKILL.md` `text` (the contents of `file`, in a folder named as the skill) into
/// an imported skill: the body is the prompt. Its folder is not read (see
/// [`read_skill_md`]).
pub fn parse_skill_md(file: &str, text: &str) -> Result<Skill, SkillError> {
    Ok(SkillMd::read(file, text)?.skill(&Folder::default()))
}

/// Read the skill of `path` (a `SKILL.md`, or the folder holding one) with its folder:
/// `references/*.md` become its references, and its prompt says which of its `scripts/`
/// are not available.
pub fn read_skill_md(path: &Path) -> Result<Skill, SkillError> {
    let (file, text) = read_file(path)?;
    let md = SkillMd::read(&file, &text)?;
    Ok(md.skill(&Folder::read(Path::new(&file))?))
}

/// The `SKILL.org` text for the `SKILL.md` `text` (the contents of `file`): its body
/// verbatim in a `markdown` block, its allowed tools as `ask` rules, each with a gate test
/// where it names an edit. Its folder is not read (see [`import_skill_md`]).
pub fn skill_md_to_org(file: &str, text: &str) -> Result<String, SkillError> {
    Ok(SkillMd::read(file, text)?.org(&Folder::default()))
}

/// The `SKILL.org` text for the skill of `path` (a `SKILL.md`, or the folder holding one),
/// its `references/*.md` as `:reference:` parts; checked to read and pass its own tests
/// before it is returned.
pub fn import_skill_md(path: &Path) -> Result<String, SkillError> {
    let (file, text) = read_file(path)?;
    let org = SkillMd::read(&file, &text)?.org(&Folder::read(Path::new(&file))?);
    parse_skill(&file, &org, Source::User).and_then(|s| run_gate_tests(&s))?;
    Ok(org)
}

/// The name of `path`'s `SKILL.md` (`path` itself, or in the folder `path`) and its text.
fn read_file(path: &Path) -> Result<(String, String), SkillError> {
    let path: PathBuf = if path.is_dir() {
        path.join("SKILL.md")
    } else {
        path.to_path_buf()
    };
    let file = path.to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&path).map_err(|e| SkillError {
        file: file.clone(),
        line: 0,
        message: e.to_string(),
    })?;
    Ok((file, text))
}

/// What a `SKILL.md` says.
#[derive(Debug)]
struct SkillMd {
    file: String,
    name: String,
    /// The body's first `# ` heading, else the name.
    title: String,
    description: String,
    license: Option<String>,
    compatibility: Option<String>,
    allowed_tools: Vec<String>,
    metadata: Vec<(String, String)>,
    on: Vec<On>,
    /// The Markdown body without its leading blank lines and trailing white space.
    body: String,
}

/// What a skill's folder holds besides `SKILL.md`.
#[derive(Debug, Default)]
struct Folder {
    /// `references/*.md`: (file name, text), sorted.
    references: Vec<(String, String)>,
    /// The entries of `scripts/`, sorted.
    scripts: Vec<String>,
}

impl Folder {
    /// The folder of `file` (a `SKILL.md`).
    fn read(file: &Path) -> Result<Folder, SkillError> {
        let dir = file.parent().unwrap_or(Path::new("."));
        let mut folder = Folder {
            scripts: entry_names(&dir.join("scripts")),
            ..Folder::default()
        };
        for name in entry_names(&dir.join("references")) {
            let path = dir.join("references").join(&name);
            if !name.ends_with(".md") || !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(|e| SkillError {
                file: path.to_string_lossy().into_owned(),
                line: 0,
                message: e.to_string(),
            })?;
            folder
                .references
                .push((name, trim_blank_lines(&text).to_owned()));
        }
        Ok(folder)
    }

    /// What the prompt says of the scripts: they are not run here.
    fn scripts_note(&self) -> Option<String> {
        if self.scripts.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .scripts
            .iter()
            .map(|s| format!("scripts/{s}"))
            .collect();
        Some(format!(
            "Note: this skill was imported from an Agent Skills SKILL.md; its scripts ({}) \
             are not available here (org-agent runs no imported code). Where a step needs \
             one, tell the user to run it.",
            names.join(", ")
        ))
    }
}

/// The names in `dir`, sorted; none when it does not read.
fn entry_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

impl SkillMd {
    fn read(file: &str, text: &str) -> Result<SkillMd, SkillError> {
        let error = |line: usize, message: String| SkillError {
            file: file.to_owned(),
            line,
            message,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let text = text.replace("\r\n", "\n");
        let (entries, body) = front_matter(&text).map_err(|(line, m)| error(line, m))?;
        let find = |key: &str| entries.iter().find(|e| e.key == key);
        let string = |key: &str| -> Result<Option<(String, usize)>, SkillError> {
            match find(key) {
                None => Ok(None),
                Some(Entry {
                    value: Yaml::Text(s),
                    line,
                    ..
                }) => Ok(Some((one_line(s), *line))),
                Some(e) => Err(error(e.line, format!("{key} is a string"))),
            }
        };
        let flag = |key: &str| -> Result<Option<bool>, SkillError> {
            match string(key)? {
                None => Ok(None),
                Some((v, line)) => match v.to_ascii_lowercase().as_str() {
                    "true" => Ok(Some(true)),
                    "false" => Ok(Some(false)),
                    _ => Err(error(line, format!("{key} is true or false, not {v:?}"))),
                },
            }
        };

        let (name, name_line) =
            string("name")?.ok_or_else(|| error(1, "the front matter has no name:".into()))?;
        check_name(&name).map_err(|m| error(name_line, m))?;
        let folder = Path::new(file)
            .parent()
            .and_then(Path::file_name)
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if folder != name {
            return Err(error(
                name_line,
                format!(
                    "the name {name:?} is not its folder's, {folder:?}: an Agent Skill's name \
                     is the name of the folder that holds its SKILL.md"
                ),
            ));
        }
        let (description, description_line) = string("description")?
            .ok_or_else(|| error(1, "the front matter has no description:".into()))?;
        if description.is_empty() {
            return Err(error(description_line, "the description is empty".into()));
        }
        if description.chars().count() > MAX_DESCRIPTION {
            return Err(error(
                description_line,
                format!("the description is over {MAX_DESCRIPTION} characters"),
            ));
        }
        let compatibility = string("compatibility")?;
        if let Some((c, line)) = &compatibility {
            if c.chars().count() > MAX_COMPATIBILITY {
                return Err(error(
                    *line,
                    format!("compatibility is over {MAX_COMPATIBILITY} characters"),
                ));
            }
        }
        let allowed_tools = match find("allowed-tools") {
            None => Vec::new(),
            Some(e) => {
                let tools = match &e.value {
                    Yaml::Null => Vec::new(),
                    Yaml::Text(s) => tool_words(s),
                    Yaml::List(items) => items.iter().flat_map(|i| tool_words(i)).collect(),
                    Yaml::Map(_) => {
                        return Err(error(e.line, "allowed-tools is a string or a list".into()))
                    }
                };
                if let Some(bad) = tools.iter().find(|t| t.contains('|')) {
                    return Err(error(e.line, format!("the tool {bad:?} has a |")));
                }
                tools
            }
        };
        let metadata = match find("metadata") {
            None => Vec::new(),
            Some(e) => match &e.value {
                Yaml::Null => Vec::new(),
                Yaml::Map(pairs) => pairs.clone(),
                _ => {
                    return Err(error(
                        e.line,
                        "metadata is a map: key: value lines indented under it".into(),
                    ))
                }
            },
        };
        let mut on = Vec::new();
        if flag("disable-model-invocation")? != Some(true) {
            on.push(On::Model);
        }
        if flag("user-invocable")? != Some(false) {
            on.push(On::User);
        }
        let body = trim_blank_lines(&body).to_owned();
        let title = first_heading(&body).unwrap_or(&name).to_owned();
        Ok(SkillMd {
            file: file.to_owned(),
            title,
            description,
            license: string("license")?.map(|(v, _)| v),
            compatibility: compatibility.map(|(v, _)| v),
            allowed_tools,
            metadata,
            on,
            body,
            name,
        })
    }

    /// The prompt: the body, then what the folder's scripts are not.
    fn prompt(&self, folder: &Folder) -> String {
        match folder.scripts_note() {
            Some(note) if self.body.is_empty() => note,
            Some(note) => format!("{}\n\n{note}", self.body),
            None => self.body.clone(),
        }
    }

    fn skill(self, folder: &Folder) -> Skill {
        Skill {
            prompt: self.prompt(folder),
            name: self.name,
            title: self.title,
            description: self.description,
            depends_on: Vec::new(),
            allowed_tools: self.allowed_tools,
            trigger: Trigger {
                on: self.on,
                ..Trigger::default()
            },
            references: folder.references.clone(),
            gate: Vec::new(),
            tools: Vec::new(),
            tests: Vec::new(),
            file: self.file,
            source: Source::Imported,
            always: false,
            org: None,
        }
    }

    /// The `SKILL.org` text.
    fn org(&self, folder: &Folder) -> String {
        let mut out = format!(
            "#+TITLE: {}\n#+SKILL_NAME: {}\n#+DESCRIPTION: {}\n",
            one_line(&self.title),
            self.name,
            self.description
        );
        // Not #+ALLOWED_TOOLS: that is a ceiling here, and these name another ecosystem's
        // tools, which they pre-approved there; they become ask rules (org_gate).
        out.push_str(&self.org_why(folder));
        let on: Vec<&str> = On::ALL
            .iter()
            .filter(|(_, on)| self.on.contains(on))
            .map(|(n, _)| *n)
            .collect();
        out.push_str(&format!(
            "* Trigger\n:PROPERTIES:\n:ON: {}\n:END:\n* Prompt\n",
            on.join(" ")
        ));
        out.push_str(&markdown_block(&self.body));
        if let Some(note) = folder.scripts_note() {
            out.push_str(&format!("\n{note}\n"));
        }
        for (title, text) in &folder.references {
            out.push_str(&format!("** {} :reference:\n", one_line(title)));
            out.push_str(&markdown_block(text));
        }
        out.push_str(&self.org_gate());
        out
    }

    /// `* Why`: where the skill comes from and what its front matter said besides.
    fn org_why(&self, folder: &Folder) -> String {
        let mut out = format!(
            "* Why\nImported from {} (an Agent Skills SKILL.md) by org-agent-import-skill. \
             The prompt is its Markdown body, unchanged.\n",
            one_line(&self.file)
        );
        let mut facts: Vec<String> = Vec::new();
        if let Some(l) = &self.license {
            facts.push(format!("License: {l}"));
        }
        if let Some(c) = &self.compatibility {
            facts.push(format!("Compatibility: {c}"));
        }
        for (k, v) in &self.metadata {
            facts.push(format!("{k}: {}", one_line(v)));
        }
        for fact in facts {
            out.push_str(&format!("- {fact}\n"));
        }
        if !self.allowed_tools.is_empty() {
            out.push_str(&format!(
                "\nIts allowed-tools ({}) pre-approved those tools where it came from. A skill \
                 here cannot allow anything, so each is an ask rule in the Gate below; a name \
                 that is not one of org-agent's tools matches nothing here.\n",
                self.allowed_tools.join(" ")
            ));
        }
        if !folder.scripts.is_empty() {
            out.push_str(
                "\nIts scripts were not imported: org-agent runs no imported code, and the \
                 prompt says so.\n",
            );
        }
        out
    }

    /// `* Gate` (one ask row per allowed tool) and `* Tests` (a gate test per row that
    /// names an edit org-agent has, which the loader runs).
    fn org_gate(&self) -> String {
        if self.allowed_tools.is_empty() {
            return String::new();
        }
        let reason = "in the imported allowed-tools: asked, never allowed";
        let width = self
            .allowed_tools
            .iter()
            .map(|t| t.chars().count())
            .max()
            .unwrap_or(0)
            .max("action".len());
        let reason_width = reason.len();
        let mut out = format!(
            "* Gate\n| {:width$} | condition | decision | {:reason_width$} |\n\
             |-{}-+-----------+----------+-{}-|\n",
            "action",
            "reason",
            "-".repeat(width),
            "-".repeat(reason_width),
        );
        let mut tests = String::new();
        for tool in &self.allowed_tools {
            out.push_str(&format!(
                "| {tool:width$} | -         | ask      | {reason} |\n"
            ));
            tests.push_str(&gate_test(tool));
        }
        if !tests.is_empty() {
            out.push_str("* Tests\n");
            out.push_str(&tests);
        }
        out
    }
}

/// A `:gate:` test that `tool`'s row asks, when `tool` is an edit with a target; else
/// nothing (the loader's gate tests run edits on a headline).
fn gate_test(tool: &str) -> String {
    let action = tool.replace('-', "_");
    let Some(required) = required_arguments(&action) else {
        return String::new();
    };
    if !required.contains(&"id") {
        return String::new();
    }
    let args: Vec<String> = required
        .iter()
        .filter(|a| **a != "id")
        .map(|a| format!("{a}=x"))
        .collect();
    let args = if args.is_empty() {
        String::new()
    } else {
        format!(":ARGS: {}\n", args.join(" "))
    };
    format!(
        "** {action} asks :gate:\n:PROPERTIES:\n:ACTION: {action}\n:TARGET: A task\n{args}\
         :EXPECT: ask\n:END:\n#+begin_example\n,* TODO A task\n#+end_example\n"
    )
}

/// `text` in a `#+begin_src markdown` block, escaped as Org escapes a block's lines, with
/// `-i` when all its lines are indented (so Org keeps that indentation).
fn markdown_block(text: &str) -> String {
    let indented = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .all(|l| l.starts_with([' ', '\t']))
        && !text.trim().is_empty();
    let mut out = format!(
        "#+begin_src markdown{}\n",
        if indented { " -i" } else { "" }
    );
    for line in text.lines() {
        out.push_str(&escape_org_code(line));
        out.push('\n');
    }
    out.push_str("#+end_src\n");
    out
}

/// The text of the first `# ` heading of the Markdown `body`, outside code fences.
fn first_heading(body: &str) -> Option<&str> {
    let mut fenced = false;
    for line in body.lines() {
        if line.starts_with("```") || line.starts_with("~~~") {
            fenced = !fenced;
        } else if let Some(heading) = line.strip_prefix("# ").filter(|_| !fenced) {
            return Some(heading.trim()).filter(|h| !h.is_empty());
        }
    }
    None
}

/// `s` on one line, its runs of white space one space each.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// The YAML front matter.

/// A front-matter value.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Yaml {
    Null,
    Text(String),
    List(Vec<String>),
    Map(Vec<(String, String)>),
}

#[derive(Debug)]
struct Entry {
    key: String,
    value: Yaml,
    line: usize,
}

/// What is wrong, and on which line of the file.
type Fail = (usize, String);

/// A line of the front matter: its number in the file and its text.
#[derive(Clone, Copy)]
struct Line<'t> {
    n: usize,
    text: &'t str,
}

/// The entries of the front matter that opens `text`, and the body after it.
fn front_matter(text: &str) -> Result<(Vec<Entry>, String), Fail> {
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err((
            1,
            "a SKILL.md begins with a --- line, then its YAML front matter".into(),
        ));
    }
    let mut offset = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut front = Vec::new();
    for (i, line) in lines.enumerate() {
        offset += line.len();
        if line.trim_end() == "---" {
            return Ok((read_mapping(&front)?, text[offset..].to_owned()));
        }
        front.push(Line {
            n: i + 2,
            text: line.trim_end_matches('\n'),
        });
    }
    Err((1, "the front matter has no closing --- line".into()))
}

fn indent(text: &str) -> usize {
    text.len() - text.trim_start_matches(' ').len()
}

fn blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn comment(text: &str) -> bool {
    text.trim_start().starts_with('#')
}

fn list_item(text: &str) -> bool {
    let t = text.trim_start();
    t == "-" || t.starts_with("- ")
}

/// `key: rest` (rest trimmed), when `text` starts so; a key is letters, digits, `-`, `_`
/// and `.`.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let at = text
        .char_indices()
        .find(|&(i, c)| c == ':' && text[i + 1..].chars().next().is_none_or(|n| n == ' '))
        .map(|(i, _)| i)?;
    let key = text[..at].trim();
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| (key, text[at + 1..].trim()))
}

/// The top-level `key: value` entries.
fn read_mapping(lines: &[Line]) -> Result<Vec<Entry>, Fail> {
    let mut out: Vec<Entry> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Line { n, text } = lines[i];
        i += 1;
        if text.trim_start_matches(' ').starts_with('\t') {
            return Err((
                n,
                "a tab in the indentation: YAML indents with spaces".into(),
            ));
        }
        if blank(text) || comment(text) {
            continue;
        }
        if indent(text) > 0 {
            return Err((n, "an indented line that belongs to no key".into()));
        }
        let (key, rest) = split_key(text).ok_or_else(|| {
            (
                n,
                "expected key: value (a key is letters, digits, - and _)".to_string(),
            )
        })?;
        if out.iter().any(|e| e.key == key) {
            return Err((n, format!("{key} is given twice")));
        }
        // The lines under the key: indented ones, or `- ` items at the key's own column.
        let start = i;
        let compact = rest.is_empty()
            && lines[i..]
                .iter()
                .find(|l| !blank(l.text))
                .is_some_and(|l| indent(l.text) == 0 && list_item(l.text));
        while i < lines.len() {
            let t = lines[i].text;
            if blank(t) || indent(t) > 0 || (compact && list_item(t)) {
                i += 1;
            } else {
                break;
            }
        }
        let nested = &lines[start..i];
        let value = if rest.is_empty() {
            nested_value(nested)?
        } else if rest.starts_with(['|', '>']) {
            Yaml::Text(block_scalar(n, rest, nested)?)
        } else {
            match inline(n, rest)? {
                Inline::List(_) if has_content(nested) => {
                    return Err((
                        first_content(nested),
                        "nothing may follow a [..] list on the lines below it".into(),
                    ))
                }
                Inline::List(items) => Yaml::List(items),
                Inline::Quoted(_) if has_content(nested) => {
                    return Err((
                        first_content(nested),
                        "a quoted value ends on its line: multi-line quoted strings are not \
                         supported (use | or >)"
                            .into(),
                    ));
                }
                Inline::Quoted(s) => Yaml::Text(s),
                Inline::Plain(s) => Yaml::Text(plain_continued(s, nested)?),
            }
        };
        out.push(Entry {
            key: key.to_owned(),
            value,
            line: n,
        });
    }
    Ok(out)
}

fn has_content(lines: &[Line]) -> bool {
    lines.iter().any(|l| !blank(l.text))
}

fn first_content(lines: &[Line]) -> usize {
    lines.iter().find(|l| !blank(l.text)).map_or(0, |l| l.n)
}

/// A plain scalar with its continuation lines (indented below it), folded as YAML folds
/// them: a line break is a space, a blank line a line break.
fn plain_continued(first: String, nested: &[Line]) -> Result<String, Fail> {
    let mut out = first;
    let mut pending_breaks = 0;
    for line in nested {
        if blank(line.text) {
            pending_breaks += 1;
            continue;
        }
        if comment(line.text) || list_item(line.text) {
            return Err((
                line.n,
                "a continued value cannot go on with this line".into(),
            ));
        }
        let Inline::Plain(part) = inline(line.n, line.text.trim())? else {
            return Err((
                line.n,
                "a continuation line of a plain value is plain text".into(),
            ));
        };
        if pending_breaks == 0 {
            out.push(' ');
        } else {
            out.push_str(&"\n".repeat(pending_breaks));
        }
        pending_breaks = 0;
        out.push_str(&part);
    }
    Ok(out)
}

/// The value of a key whose line ends at its colon: nothing, a list or a map.
fn nested_value(nested: &[Line]) -> Result<Yaml, Fail> {
    let content: Vec<Line> = nested
        .iter()
        .copied()
        .filter(|l| !blank(l.text) && !comment(l.text))
        .collect();
    let Some(first) = content.first() else {
        return Ok(Yaml::Null);
    };
    let column = indent(first.text);
    if let Some(l) = content.iter().find(|l| indent(l.text) != column) {
        return Err((
            l.n,
            "indented differently from the line above: only one level of nesting is \
             supported"
                .into(),
        ));
    }
    if list_item(first.text) {
        let mut items = Vec::new();
        for l in &content {
            let item = l.text.trim_start();
            let Some(rest) = item.strip_prefix("- ").map(str::trim) else {
                return Err((l.n, "a list holds - items only".into()));
            };
            items.push(match inline(l.n, rest)? {
                Inline::Plain(s) | Inline::Quoted(s) if !s.is_empty() => s,
                Inline::Plain(_) | Inline::Quoted(_) => {
                    return Err((l.n, "an empty list item".into()))
                }
                Inline::List(_) => return Err((l.n, "a list in a list is not supported".into())),
            });
        }
        return Ok(Yaml::List(items));
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    for l in &content {
        let (key, rest) = split_key(l.text.trim_start())
            .ok_or_else(|| (l.n, "expected key: value".to_string()))?;
        if pairs.iter().any(|(k, _)| k == key) {
            return Err((l.n, format!("{key} is given twice")));
        }
        if rest.is_empty() || rest.starts_with(['|', '>']) {
            return Err((
                l.n,
                format!("{key}: only one level of key: value with a one-line value is supported"),
            ));
        }
        let value = match inline(l.n, rest)? {
            Inline::Plain(s) | Inline::Quoted(s) => s,
            Inline::List(_) => return Err((l.n, format!("{key}: the value is a string"))),
        };
        pairs.push((key.to_owned(), value));
    }
    Ok(Yaml::Map(pairs))
}

/// A `|` or `>` block scalar whose header is `header` (on line `n`) and whose lines are
/// `nested`.
fn block_scalar(n: usize, header: &str, nested: &[Line]) -> Result<String, Fail> {
    let folded = header.starts_with('>');
    let indicator = header[1..].split(" #").next().unwrap_or("").trim();
    let chomp = match indicator {
        "" => Chomp::Clip,
        "-" => Chomp::Strip,
        "+" => Chomp::Keep,
        other => {
            return Err((
                n,
                format!("the block indicator {other:?} is not supported (|, |-, |+, >, >-, >+)"),
            ))
        }
    };
    let column = nested
        .iter()
        .find(|l| !blank(l.text))
        .map_or(0, |l| indent(l.text));
    let mut lines: Vec<&str> = Vec::new();
    for l in nested {
        if blank(l.text) {
            lines.push("");
        } else if indent(l.text) < column {
            return Err((l.n, "less indented than the block's first line".into()));
        } else {
            lines.push(&l.text[column..]);
        }
    }
    let trailing = lines.iter().rev().take_while(|l| l.is_empty()).count();
    let content = &lines[..lines.len() - trailing];
    // Folding joins lines of text with a space; a blank line between them is the break,
    // and more indented lines keep theirs.
    let text = |l: &str| !l.is_empty() && !l.starts_with(' ');
    let mut out = String::new();
    for (i, line) in content.iter().enumerate() {
        if i > 0 {
            let previous = content[i - 1];
            if folded && text(previous) && text(line) {
                out.push(' ');
            } else if !(folded && text(previous) && line.is_empty()) {
                out.push('\n');
            }
        }
        out.push_str(line);
    }
    if !content.is_empty() {
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => out.push('\n'),
            Chomp::Keep => out.push_str(&"\n".repeat(trailing + 1)),
        }
    }
    Ok(out)
}

/// What a block scalar keeps of its final line breaks.
enum Chomp {
    /// One.
    Clip,
    /// None (`-`).
    Strip,
    /// All (`+`).
    Keep,
}

/// A value on its key's line.
enum Inline {
    Plain(String),
    Quoted(String),
    List(Vec<String>),
}

/// The value `text` (trimmed, not empty) on line `n`.
fn inline(n: usize, text: &str) -> Result<Inline, Fail> {
    match text.chars().next() {
        Some('"' | '\'') => {
            let (value, rest) = quoted(n, text)?;
            end_of_value(n, rest)?;
            Ok(Inline::Quoted(value))
        }
        Some('[') => flow_list(n, text).map(Inline::List),
        Some('{') => Err((
            n,
            "flow maps ({...}) are not supported: write key: value lines".into(),
        )),
        Some('&' | '*' | '!' | '%' | '@' | '`' | '?' | '|' | '>') => Err((
            n,
            format!(
                "{:?} begins YAML this reader does not support (anchors, aliases, tags): quote \
                 the value",
                &text[..1]
            ),
        )),
        _ if list_item(text) => Err((n, "a list goes on the lines below its key".into())),
        _ => plain(n, text).map(Inline::Plain),
    }
}

/// A plain scalar: up to a ` #` comment; `: ` in it would make YAML read a map.
fn plain(n: usize, text: &str) -> Result<String, Fail> {
    let value = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    }
    .trim();
    if value.contains(": ") || value.ends_with(':') {
        return Err((
            n,
            "the value holds \": \" or ends with \":\": quote it, or YAML reads a map".into(),
        ));
    }
    Ok(value.to_owned())
}

/// Nothing but a comment may follow a quoted value or a list.
fn end_of_value(n: usize, rest: &str) -> Result<(), Fail> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err((n, format!("{rest:?} after the value")))
    }
}

/// A quoted scalar at the start of `text`: its value and what follows it.
fn quoted(n: usize, text: &str) -> Result<(String, &str), Fail> {
    let unterminated = || {
        (
            n,
            "a quoted value ends on its line: multi-line quoted strings are not supported \
             (use | or >)"
                .to_string(),
        )
    };
    let mut chars = text.char_indices();
    let quote = chars.next().map(|(_, c)| c).ok_or_else(unterminated)?;
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            ('\'', '\'') => {
                if text[i + 1..].starts_with('\'') {
                    chars.next();
                    out.push('\'');
                } else {
                    return Ok((out, &text[i + 1..]));
                }
            }
            ('"', '"') => return Ok((out, &text[i + 1..])),
            ('"', '\\') => {
                let (_, e) = chars.next().ok_or_else(unterminated)?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '"' | '\\' | '/' | ' ' => out.push(e),
                    'x' | 'u' | 'U' => {
                        let digits = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.by_ref().take(digits).map(|(_, c)| c).collect();
                        let c = u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == digits)
                            .and_then(char::from_u32)
                            .ok_or_else(|| (n, format!("\\{e}{hex} is not a character")))?;
                        out.push(c);
                    }
                    other => return Err((n, format!("the escape \\{other} is not supported"))),
                }
            }
            _ => out.push(c),
        }
    }
    Err(unterminated())
}

/// A `[a, "b", c]` list of scalars, on one line.
fn flow_list(n: usize, text: &str) -> Result<Vec<String>, Fail> {
    let mut items = Vec::new();
    let mut rest = &text[1..];
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix(']') {
            end_of_value(n, after)?;
            return Ok(items);
        }
        let (item, after) = if rest.starts_with(['"', '\'']) {
            quoted(n, rest)?
        } else {
            let end = rest
                .find([',', ']'])
                .ok_or_else(|| (n, "a [..] list ends with ] on its line".to_string()))?;
            let item = rest[..end].trim();
            if item.starts_with(['[', '{']) {
                return Err((n, "a list in a list is not supported".into()));
            }
            if item.is_empty() {
                return Err((n, "an empty item in a [..] list".into()));
            }
            (plain(n, item)?, &rest[end..])
        };
        items.push(item);
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with(']') {
            return Err((n, "items of a [..] list are separated by commas".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &str = "---
name: pdf-tools
description: >-
  Extracts text and tables from PDF files.
  Use when the user mentions PDFs.
license: Apache-2.0
compatibility: 'Needs pdftotext (poppler)'
allowed-tools: Read Bash(pdftotext:*) set_todo
metadata:
  author: example-org
  version: \"1.0\"
---

# PDF tools

Run `pdftotext` first.

* a Markdown list item
#+not an Org keyword
,* already a comma
    indented code
";

    fn md(text: &str) -> Result<Skill, SkillError> {
        parse_skill_md("/s/pdf-tools/SKILL.md", text)
    }

    fn body(text: &str) -> &str {
        trim_blank_lines(text.split("\n---\n").nth(1).unwrap())
    }

    #[test]
    fn a_skill_md_reads_as_an_imported_prompt_only_skill() {
        let s = md(PDF).unwrap();
        assert_eq!(s.name, "pdf-tools");
        assert_eq!(s.title, "PDF tools");
        assert_eq!(
            s.description,
            "Extracts text and tables from PDF files. Use when the user mentions PDFs."
        );
        assert_eq!(s.allowed_tools, ["Read", "Bash(pdftotext:*)", "set_todo"]);
        assert_eq!(s.source, Source::Imported);
        assert_eq!(s.trigger.on, [On::Model, On::User]);
        assert!(s.gate.is_empty() && s.tools.is_empty() && s.tests.is_empty());
        assert_eq!(s.prompt, body(PDF));
        assert!(s.prompt.starts_with("# PDF tools\n\nRun"));
        assert!(s.prompt.ends_with("    indented code"));
    }

    #[test]
    fn the_title_is_the_first_heading_outside_code() {
        assert_eq!(
            first_heading("```sh\n# install\n```\n# Real\n"),
            Some("Real")
        );
        assert_eq!(first_heading("## Sub\ntext\n"), None);
        let s = md("---\nname: pdf-tools\ndescription: d\n---\nNo heading.\n").unwrap();
        assert_eq!(s.title, "pdf-tools");
    }

    #[test]
    fn front_matter_forms() {
        let with = |front: &str| md(&format!("---\nname: pdf-tools\n{front}\n---\nBody\n"));
        let description = |front: &str| with(front).unwrap().description;
        assert_eq!(
            description("description: \"Say \\\"hi\\\"\\u00e9\""),
            "Say \"hi\"é"
        );
        assert_eq!(
            description("description: 'it''s # not a comment'"),
            "it's # not a comment"
        );
        assert_eq!(description("description: plain # a comment"), "plain");
        assert_eq!(description("description: |\n  one\n  two\n"), "one two");
        assert_eq!(
            description("description: first\n  and more"),
            "first and more"
        );
        assert_eq!(
            description("# a comment\ndescription: d\nversion: 1.0"),
            "d"
        );
        let tools = |front: &str| {
            with(&format!("description: d\n{front}"))
                .unwrap()
                .allowed_tools
        };
        assert_eq!(
            tools("allowed-tools: [Read, \"Bash(git add:*)\"]"),
            ["Read", "Bash(git add:*)"]
        );
        assert_eq!(
            tools("allowed-tools:\n  - Read\n  - Write"),
            ["Read", "Write"]
        );
        assert_eq!(tools("allowed-tools:\n- Read\n- Write"), ["Read", "Write"]);
        assert_eq!(tools("allowed-tools: Read, Grep"), ["Read", "Grep"]);
        assert!(tools("allowed-tools:").is_empty());
        let on = |front: &str| {
            with(&format!("description: d\n{front}"))
                .unwrap()
                .trigger
                .on
        };
        assert_eq!(on("disable-model-invocation: true"), [On::User]);
        assert_eq!(on("user-invocable: false"), [On::Model]);

        let block = |header: &str, lines: &[&str]| {
            let nested: Vec<Line> = lines
                .iter()
                .enumerate()
                .map(|(i, t)| Line { n: i + 3, text: t })
                .collect();
            block_scalar(2, header, &nested).unwrap()
        };
        assert_eq!(block("|", &["  a", "   b", "", "  c", ""]), "a\n b\n\nc\n");
        assert_eq!(block("|-", &["  a", "  b"]), "a\nb");
        assert_eq!(block("|+", &["  a", "", ""]), "a\n\n\n");
        assert_eq!(block(">", &["  a", "  b", "", "  c"]), "a b\nc\n");
        assert_eq!(block(">-", &["  a", "    code", "  b"]), "a\n  code\nb");
    }

    #[test]
    fn every_front_matter_error_names_its_line() {
        for (front, line, says) in [
            ("description: d", 1, "no name"),
            ("name: pdf-tools", 1, "no description"),
            ("name: PDF\ndescription: d", 2, "not kebab-case"),
            ("name: pdf--tools\ndescription: d", 2, "not kebab-case"),
            (
                "name: other\ndescription: d",
                2,
                "not its folder's, \"pdf-tools\"",
            ),
            (
                "name: pdf-tools\ndescription: Use when: PDFs",
                3,
                "quote it",
            ),
            (
                "name: pdf-tools\ndescription: \"open",
                3,
                "multi-line quoted",
            ),
            ("name: pdf-tools\ndescription: &a d", 3, "anchors"),
            ("name: pdf-tools\ndescription: {a: b}", 3, "flow maps"),
            (
                "name: pdf-tools\ndescription: d\nmetadata:\n  a:\n    b: c",
                6,
                "one level",
            ),
            (
                "name: pdf-tools\ndescription: d\nmetadata:\n  a: b\n   c: d",
                6,
                "indented differently",
            ),
            (
                "name: pdf-tools\ndescription: d\nmetadata: x",
                4,
                "metadata is a map",
            ),
            ("name: pdf-tools\ndescription: d\nname: x", 4, "given twice"),
            ("name: pdf-tools\n  description: d", 3, "quote it"),
            (
                "  stray\nname: pdf-tools\ndescription: d",
                2,
                "belongs to no key",
            ),
            ("name: pdf-tools\ndescription: d\n\tx: y", 4, "tab"),
            (
                "name: pdf-tools\ndescription: d\njust words",
                4,
                "expected key: value",
            ),
            ("name: pdf-tools\ndescription: |2\n  d", 3, "not supported"),
            ("name: pdf-tools\ndescription: \"bad \\q\"", 3, "escape \\q"),
            ("name: pdf-tools\ndescription: \"\"", 3, "empty"),
            (
                "name: pdf-tools\ndescription: d\nuser-invocable: maybe",
                4,
                "true or false",
            ),
            (
                "name: pdf-tools\ndescription: d\nallowed-tools: [a, [b]]",
                4,
                "list in a list",
            ),
            (
                "name: pdf-tools\ndescription: d\nallowed-tools:\n  a: b",
                4,
                "a string or a list",
            ),
        ] {
            let e = md(&format!("---\n{front}\n---\nBody\n")).expect_err(front);
            assert_eq!(e.file, "/s/pdf-tools/SKILL.md");
            assert_eq!(
                (e.line, e.message.contains(says)),
                (line, true),
                "{front}: {e}"
            );
        }
        let long = format!(
            "---\nname: pdf-tools\ndescription: {}\n---\n",
            "a".repeat(1025)
        );
        assert!(md(&long).unwrap_err().message.contains("over 1024"));
        let long = format!(
            "---\nname: pdf-tools\ndescription: d\ncompatibility: {}\n---\n",
            "a".repeat(501)
        );
        assert_eq!(md(&long).unwrap_err().line, 4);
        assert!(md("# No front matter\n")
            .unwrap_err()
            .message
            .contains("begins with a ---"));
        assert!(md("---\nname: pdf-tools\n")
            .unwrap_err()
            .message
            .contains("no closing ---"));
        let long = format!("---\nname: {}\ndescription: d\n---\n", "a".repeat(65));
        assert!(md(&long).unwrap_err().message.contains("over 64"));
    }

    #[test]
    fn the_conversion_reads_back_as_the_same_skill_and_passes_its_tests() {
        let org = skill_md_to_org("/s/pdf-tools/SKILL.md", PDF).unwrap();
        assert!(org.contains("#+SKILL_NAME: pdf-tools\n"), "{org}");
        assert!(org.contains("\n,* a Markdown list item\n,#+not an Org keyword\n,,* already"));
        assert!(org.contains("- License: Apache-2.0\n- Compatibility: Needs pdftotext"));
        assert!(org.contains("- author: example-org\n- version: 1.0\n"));
        assert!(!org.contains("allow |"), "never an allow row");
        let s = parse_skill("/u/pdf-tools/SKILL.org", &org, Source::User).unwrap();
        let imported = md(PDF).unwrap();
        assert_eq!(s.prompt, imported.prompt);
        assert_eq!(s.prompt, body(PDF));
        assert_eq!(s.description, imported.description);
        assert_eq!(s.title, "PDF tools");
        // No ceiling: the imported names pre-approved another ecosystem's tools.
        assert!(s.allowed_tools.is_empty(), "{:?}", s.allowed_tools);
        assert!(org.contains("Its allowed-tools (Read Bash(pdftotext:*) set_todo) pre-approved"));
        assert_eq!(s.trigger.on, [On::Model, On::User]);
        let rows: Vec<(&str, super::super::Decision)> = s
            .gate
            .iter()
            .map(|r| (r.action.as_str(), r.decision))
            .collect();
        use super::super::Decision::Ask;
        assert_eq!(
            rows,
            [("Read", Ask), ("Bash(pdftotext:*)", Ask), ("set_todo", Ask)]
        );
        // One test, for the one row that names an edit; the loader runs it.
        assert_eq!(s.tests.len(), 1);
        assert_eq!(run_gate_tests(&s), Ok(1));

        // Edited in Org (C-c ' indents a block's lines), the prompt is still the body.
        let indented = org.replace("\n# PDF tools\n", "\n  # PDF tools\n");
        let indented: String = {
            let (head, tail) = indented.split_once("#+begin_src markdown\n").unwrap();
            let (block, rest) = tail.split_once("#+end_src").unwrap();
            let block: String = block
                .lines()
                .map(|l| {
                    if l.is_empty() || l.starts_with("  # PDF") {
                        format!("{l}\n")
                    } else {
                        format!("  {l}\n")
                    }
                })
                .collect();
            format!("{head}#+begin_src markdown\n{block}#+end_src{rest}")
        };
        let s = parse_skill("/u/pdf-tools/SKILL.org", &indented, Source::User).unwrap();
        assert_eq!(s.prompt, body(PDF));

        // A body whose every line is indented keeps its indentation (-i).
        let code = "---\nname: pdf-tools\ndescription: d\n---\n    code\n      more\n";
        let org = skill_md_to_org("/s/pdf-tools/SKILL.md", code).unwrap();
        assert!(org.contains("#+begin_src markdown -i\n"));
        let s = parse_skill("/u/x.org", &org, Source::User).unwrap();
        assert_eq!(s.prompt, "    code\n      more");
        assert!(s.tests.is_empty() && s.gate.is_empty());
    }

    #[test]
    fn the_folder_brings_references_and_says_its_scripts_do_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("pdf-tools");
        std::fs::create_dir_all(folder.join("references")).unwrap();
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::write(folder.join("SKILL.md"), PDF).unwrap();
        std::fs::write(
            folder.join("references/FORMS.md"),
            "# Forms\n\n* Fill them.\n",
        )
        .unwrap();
        std::fs::write(folder.join("references/notes.txt"), "not markdown").unwrap();
        std::fs::write(folder.join("scripts/extract.py"), "print()").unwrap();

        let s = read_skill_md(&folder).unwrap();
        assert_eq!(
            s.references,
            [(
                "FORMS.md".to_string(),
                "# Forms\n\n* Fill them.".to_string()
            )]
        );
        assert!(s.prompt.starts_with(body(PDF)));
        assert!(s
            .prompt
            .contains("scripts (scripts/extract.py) are not available"));

        let org = import_skill_md(&folder.join("SKILL.md")).unwrap();
        assert!(org.contains("** FORMS.md :reference:\n#+begin_src markdown\n# Forms\n"));
        let converted = parse_skill("/u/pdf-tools/SKILL.org", &org, Source::User).unwrap();
        assert_eq!(converted.prompt, s.prompt);
        assert_eq!(converted.references.len(), 1);
        assert!(converted.references[0]
            .1
            .ends_with("# Forms\n\n* Fill them."));

        let e = read_skill_md(&dir.path().join("nothing")).unwrap_err();
        assert!(e.file.ends_with("/nothing"), "{e}");
    }
}
