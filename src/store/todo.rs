//! TODO keywords and other per-file settings that Org reads from `#+` keyword lines.

use rustc_hash::FxHashMap as HashMap;
use std::path::{Path, PathBuf};

/// The TODO keywords in force for one file: Org's `org-todo-keywords-1` split by type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TodoKeywords {
    pub todo: Vec<String>,
    pub done: Vec<String>,
}

impl Default for TodoKeywords {
    fn default() -> Self {
        TodoKeywords {
            todo: vec!["TODO".into()],
            done: vec!["DONE".into()],
        }
    }
}

impl TodoKeywords {
    pub fn is_done(&self, kw: &str) -> bool {
        self.done.iter().any(|d| d == kw)
    }

    /// All keywords, longest first so that a keyword that is a prefix of another one does not
    /// shadow it.
    pub fn by_length(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .todo
            .iter()
            .chain(self.done.iter())
            .map(String::as_str)
            .collect();
        all.sort_by_key(|k| std::cmp::Reverse(k.len()));
        all
    }

    /// Parse the value of one `#+TODO:` line (`TODO(t) NEXT | DONE(d!)`) the way Org does: a
    /// `|` separates the done states; without one the last word is the only done state.
    fn add_sequence(&mut self, value: &str) {
        let words: Vec<String> = value
            .split_whitespace()
            .map(|w| match w.find('(') {
                Some(i) if w.ends_with(')') && i > 0 => w[..i].to_string(),
                _ => w.to_string(),
            })
            .collect();
        let (todo, done): (Vec<String>, Vec<String>) = match words.iter().position(|w| w == "|") {
            Some(bar) => (
                words[..bar].to_vec(),
                words[bar + 1..]
                    .iter()
                    .filter(|w| *w != "|")
                    .cloned()
                    .collect(),
            ),
            None => match words.split_last() {
                Some((last, rest)) => (rest.to_vec(), vec![last.clone()]),
                None => (vec![], vec![]),
            },
        };
        for k in todo {
            if !self.todo.contains(&k) && !self.done.contains(&k) {
                self.todo.push(k);
            }
        }
        // A keyword in the done part of any sequence is a done state, wherever else it is
        // written: `org-done-keywords` has it, and `org-element` asks that list.
        for k in done {
            self.todo.retain(|t| *t != k);
            if !self.done.contains(&k) {
                self.done.push(k);
            }
        }
    }
}

/// Settings collected from a file's keyword lines (and its local `#+SETUPFILE`s).
#[derive(Clone, Debug, Default)]
pub struct FileSettings {
    /// `Some` when the file (or a setup file) declares its own TODO sequences.
    pub todo: Option<TodoKeywords>,
    pub file_tags: Vec<String>,
    pub title: Option<String>,
}

/// How deep `#+SETUPFILE` may nest before we stop following it (Org itself guards cycles only).
const MAX_SETUP_DEPTH: usize = 8;

/// Collect `#+TODO`, `#+SEQ_TODO`, `#+TYP_TODO`, `#+FILETAGS` and `#+TITLE` from `text`,
/// following local `#+SETUPFILE` lines when `file` is known. Keyword lines inside blocks do
/// not count, as in Org.
pub fn collect_settings(text: &str, file: Option<&Path>) -> FileSettings {
    let mut settings = FileSettings::default();
    let mut seen: Vec<PathBuf> = file.map(|f| vec![f.to_path_buf()]).unwrap_or_default();
    collect_into(&mut settings, text, file, 0, &mut seen);
    settings
}

fn collect_into(
    settings: &mut FileSettings,
    text: &str,
    file: Option<&Path>,
    depth: usize,
    seen: &mut Vec<PathBuf>,
) {
    let lines: Vec<&str> = text.lines().collect();
    let block_ends = block_ends(&lines);
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start_matches([' ', '\t']);
        if let Some(&end) = block_ends.get(&i) {
            i = end + 1;
            continue;
        }
        i += 1;
        if !trimmed.starts_with("#+") || block_name(trimmed).is_some() {
            continue;
        }
        let Some(colon) = trimmed.find(':') else {
            continue;
        };
        let key = trimmed[2..colon].to_uppercase();
        let value = trimmed[colon + 1..].trim();
        match key.as_str() {
            "TODO" | "SEQ_TODO" | "TYP_TODO" => settings
                .todo
                .get_or_insert_with(|| TodoKeywords {
                    todo: vec![],
                    done: vec![],
                })
                .add_sequence(value),
            // As `org-file-tags` has them in Org 9.5 to 9.8: every line's, repeats kept.
            "FILETAGS" => {
                let blank = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
                for word in value.split(blank).filter(|w| !w.is_empty()) {
                    settings
                        .file_tags
                        .extend(split_at_colons(word).into_iter().map(str::to_string));
                }
            }
            "TITLE" => {
                settings.title = Some(match settings.title.take() {
                    Some(prev) if !value.is_empty() => format!("{prev} {value}"),
                    Some(prev) => prev,
                    None => value.to_string(),
                })
            }
            "SETUPFILE" => {
                if depth >= MAX_SETUP_DEPTH {
                    continue;
                }
                let Some(base) = file.and_then(Path::parent) else {
                    continue;
                };
                let name = value.trim_matches('"');
                // Remote setup files are not fetched: ingest never touches the network.
                if name.is_empty() || name.contains("://") {
                    continue;
                }
                let path = base.join(name);
                if seen.contains(&path) {
                    continue;
                }
                seen.push(path.clone());
                if let Ok(bytes) = std::fs::read(&path) {
                    let sub = crate::store::text::decode(&bytes);
                    collect_into(settings, &sub, Some(&path), depth + 1, seen);
                }
            }
            _ => {}
        }
    }
}

/// `org-split-string` at ":": one colon at either end is dropped, empty tags between two
/// colons are kept.
fn split_at_colons(word: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = word.split(':').collect();
    if parts.len() > 1 {
        if parts.last() == Some(&"") {
            parts.pop();
        }
        if parts.first() == Some(&"") {
            parts.remove(0);
        }
    }
    parts
}

/// The name of the block a `#+begin_NAME` line (without its indentation) opens.
fn block_name(trimmed: &str) -> Option<&str> {
    let rest = strip_prefix_ci(trimmed, "#+begin_")?;
    let name = &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())];
    (!name.is_empty()).then_some(name)
}

/// Line index of each `#+begin_NAME` line that a `#+end_NAME` closes → index of that end line.
/// As in Org, a block ends at the first matching end line of its section; one without is no
/// block at all (a paragraph), so keyword lines after it count. One pass from the bottom,
/// remembering the nearest end line of each name, keeps this linear however many begin lines
/// are left open.
fn block_ends(lines: &[&str]) -> HashMap<usize, usize> {
    let mut nearest_end: HashMap<String, usize> = HashMap::default();
    let mut ends = HashMap::default();
    for (i, line) in lines.iter().enumerate().rev() {
        if headline_level(line).is_some() {
            // No block reaches across a headline.
            nearest_end.clear();
            continue;
        }
        let trimmed = line.trim_start_matches([' ', '\t']);
        if let Some(name) = strip_prefix_ci(trimmed, "#+end_") {
            let name = name.trim_end_matches([' ', '\t']);
            if !name.is_empty() && !name.contains(char::is_whitespace) {
                nearest_end.insert(name.to_ascii_lowercase(), i);
            }
        } else if let Some(name) = block_name(trimmed) {
            if let Some(&end) = nearest_end.get(&name.to_ascii_lowercase()) {
                ends.insert(i, end);
            }
        }
    }
    ends
}

/// The level of `line` if it is a headline: stars followed by a space, as Org's
/// `org-outline-regexp-bol` has it.
pub fn headline_level(line: &str) -> Option<usize> {
    let stars = line.bytes().take_while(|&b| b == b'*').count();
    (stars > 0 && line.as_bytes().get(stars) == Some(&b' ')).then_some(stars)
}

/// `s` without `prefix`, compared ASCII-case-insensitively (Org keywords are ASCII).
pub fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}
