//! The architecture's invariants, checked on the source: the layer order written in
//! ARCHITECTURE.md (a module of `src/` uses only modules below it, so there is no cycle),
//! no circle between the files of any folder of `src/`, only `src/emacs/` touches the Emacs
//! API, no function of the turn or the Emacs skin grows past what one reads at once, and
//! ARCHITECTURE.md names every folder of `src/` and every Elisp file, and only paths that exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The layers, bottom first, from ARCHITECTURE.md's line "Layers, bottom to top: a → b → …".
fn layers() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let line = doc
        .lines()
        .find_map(|l| l.strip_prefix("Layers, bottom to top: "))
        .expect("ARCHITECTURE.md states the layer order");
    line.trim_end_matches('.')
        .split('→')
        .map(|s| s.trim().trim_matches('`').to_owned())
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file of `src/` belongs to (`src/agent/turn/act.rs` → `agent`);
/// `None` for the crate root.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_owned();
    (name != "lib").then_some(name)
}

/// The top-level modules `text` names through `crate::` (paths and `use crate::{…}`).
fn crate_uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
        rest = after;
    }
    out.retain(|n| !n.is_empty() && n != "self");
    out
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let order = layers();
    let rank = |m: &str| order.iter().position(|l| l == m);
    let mut modules = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src")) {
        let Some(module) = module_of(&file) else {
            continue;
        };
        modules.insert(module.clone());
        let Some(own) = rank(&module) else {
            wrong.push(format!(
                "src/{module} is not in ARCHITECTURE.md's layer order"
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for used in crate_uses(&text) {
            match rank(&used) {
                Some(r) if r > own => wrong.push(format!(
                    "{} uses crate::{used}, a layer above {module}",
                    file.strip_prefix(root()).unwrap().display()
                )),
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The order names nothing that is not there (it stays a map of the code).
    for layer in &order {
        assert!(
            modules.contains(layer),
            "ARCHITECTURE.md names a layer {layer} src/ lacks"
        );
    }
}

/// The module path of a file of `src/` (`src/agent/turn/act.rs` → `agent::turn::act`,
/// `src/agent/turn/mod.rs` → `agent::turn`, `src/lib.rs` → the crate root).
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut path: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
        path.pop();
    }
    path
}

/// `text` without its test code: each `#[cfg(test)]` item, up to the line that closes it at
/// the attribute's indentation (rustfmt's layout), and without comment lines (an intra-doc
/// link is not a use).
fn without_tests_and_comments(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            let indent = &line[..line.len() - trimmed.len()];
            let item = lines[i + 1..]
                .iter()
                .position(|l| !l.trim_start().starts_with("#["));
            let Some(item) = item.map(|k| i + 1 + k) else {
                break;
            };
            i = if lines[item].trim_end().ends_with(';') {
                item + 1
            } else {
                let close = format!("{indent}}}");
                lines[item..]
                    .iter()
                    .position(|l| *l == close)
                    .map_or(lines.len(), |k| item + k + 1)
            };
            continue;
        }
        if !trimmed.starts_with("//") {
            out.push((i + 1, line));
        }
        i += 1;
    }
    out
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The modules `code` (a line of the module at `module`) names through `crate::`, `super::`
/// or `self::` paths, as absolute paths of at most two segments past the prefix, e.g.
/// `super::{b, c::D}` in `x::a` → `x::b`, `x::c`. Only the first segment after the
/// resolved prefix matters to the folder check; the second is kept for nested folders.
fn module_uses(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while from < code.len() {
        let rest = &code[from..];
        let starts = ["crate::", "super::", "self::"]
            .iter()
            .filter_map(|p| rest.find(p).map(|i| (i, *p)))
            .filter(|(i, _)| {
                // A path's start, not the tail of another name (`my_crate::`).
                !rest[..*i]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            })
            .min();
        let Some((at, prefix)) = starts else {
            break;
        };
        let mut base: Vec<String> = match prefix {
            "crate::" => Vec::new(),
            "self::" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        let mut tail = &rest[at + prefix.len()..];
        if prefix == "super::" {
            while let Some(t) = tail.strip_prefix("super::") {
                base.pop();
                tail = t;
            }
        }
        let mut heads: Vec<&str> = Vec::new();
        if let Some(group) = tail.strip_prefix('{') {
            // The group's items at depth 0: `{a, b::{C, D}, e}` → a, b, e.
            let mut depth = 0;
            let mut start = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        heads.push(group[start..k].trim());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        heads.push(group[start..k].trim());
                        start = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            heads.push(tail);
        }
        for head in heads {
            let first = ident(head);
            if first.is_empty() || first == "self" {
                continue;
            }
            let mut path = base.clone();
            path.push(first.to_owned());
            if let Some(second) = head[first.len()..].strip_prefix("::") {
                let second = ident(second);
                if !second.is_empty() {
                    path.push(second.to_owned());
                }
            }
            out.push(path);
        }
        from += at + prefix.len();
    }
    out
}

/// The folders of `src/` (the crate root's too), each with the units its files make: a
/// child file `b.rs` is unit `b`, a child folder `c/` with everything under it is unit `c`.
/// The folder's own `mod.rs` (or `lib.rs`) is no unit: what it defines is the folder's.
/// Returns, per folder, each unit's uses of the others: (user, used) → (file, line).
type Uses = BTreeMap<(String, String), (PathBuf, usize)>;

fn folder_uses() -> BTreeMap<Vec<String>, (BTreeSet<String>, Uses)> {
    let files = rust_files(&root().join("src"));
    // Files of modules declared `#[cfg(test)] mod name;` are test code too.
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            let item = lines[i + 1..].iter().find(|l| !l.starts_with("#["));
            if let Some(name) = item.and_then(|l| l.strip_prefix("mod ")?.strip_suffix(';')) {
                let mut path = module_path(file);
                path.push(name.to_owned());
                test_modules.push(path);
            }
        }
    }
    let modules: Vec<(PathBuf, Vec<String>)> = files
        .iter()
        .map(|f| (f.clone(), module_path(f)))
        .filter(|(_, path)| !test_modules.iter().any(|t| path.starts_with(t)))
        .collect();
    let mut folders: BTreeMap<Vec<String>, (BTreeSet<String>, Uses)> = BTreeMap::new();
    for (_, path) in &modules {
        for depth in 0..path.len() {
            let entry = folders.entry(path[..depth].to_vec()).or_default();
            entry.0.insert(path[depth].clone());
        }
    }
    for (file, path) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, code) in without_tests_and_comments(&text) {
            for used in module_uses(code, path) {
                for (folder, (units, uses)) in folders.iter_mut() {
                    let n = folder.len();
                    let inside = |p: &[String]| p.len() > n && p[..n] == folder[..];
                    if !inside(path) || !inside(&used) {
                        continue;
                    }
                    let (user, target) = (&path[n], &used[n]);
                    if user != target && units.contains(target) {
                        uses.entry((user.clone(), target.clone()))
                            .or_insert((file.clone(), line));
                    }
                }
            }
        }
    }
    folders
}

/// The circles of a graph: each strongly connected set of more than one node, as one
/// cycle through all of them found by walking edges inside the set (first node repeated
/// at the end), e.g. `[a, b, a]`.
fn circles(nodes: &BTreeSet<String>, edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::from([from.clone()]);
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for (a, b) in edges {
                if *a == n && seen.insert(b.clone()) {
                    todo.push(b.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in nodes {
        if done.contains(n) {
            continue;
        }
        let set: BTreeSet<String> = reaches[n]
            .iter()
            .filter(|m| reaches[*m].contains(n))
            .cloned()
            .collect();
        done.extend(set.iter().cloned());
        if set.len() < 2 {
            continue;
        }
        // A closed walk from `n` that visits the whole set: go, each time, to the nearest
        // member not yet visited (or back to `n` at the end), by a shortest path inside it.
        let path_to = |from: &String, to: &String| -> Vec<String> {
            let mut prev: BTreeMap<String, String> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([from.clone()]);
            while let Some(x) = queue.pop_front() {
                if x == *to && x != *from {
                    break;
                }
                for (a, b) in edges {
                    if *a == x && set.contains(b) && !prev.contains_key(b) {
                        prev.insert(b.clone(), x.clone());
                        queue.push_back(b.clone());
                    }
                }
            }
            let mut path = vec![to.clone()];
            let mut at = to.clone();
            while let Some(p) = prev.get(&at) {
                if p == from {
                    break;
                }
                path.push(p.clone());
                at = p.clone();
            }
            path.reverse();
            path
        };
        let mut walk = vec![n.clone()];
        let mut left: BTreeSet<String> = set.iter().filter(|m| *m != n).cloned().collect();
        while let Some(next) = left.iter().next().cloned() {
            let from = walk.last().cloned().unwrap_or_else(|| n.clone());
            let step = path_to(&from, &next);
            for s in &step {
                left.remove(s);
            }
            walk.extend(step);
        }
        let from = walk.last().cloned().unwrap_or_else(|| n.clone());
        walk.extend(path_to(&from, n));
        out.push(walk);
    }
    out
}

#[test]
fn no_folder_of_src_has_a_circle_between_its_files() {
    let mut wrong = Vec::new();
    for (folder, (units, uses)) in folder_uses() {
        let edges: BTreeSet<(String, String)> = uses.keys().cloned().collect();
        let dir = if folder.is_empty() {
            "src/".to_owned()
        } else {
            format!("src/{}/", folder.join("/"))
        };
        let file = |unit: &str| {
            if root().join(&dir).join(format!("{unit}.rs")).is_file() {
                format!("{dir}{unit}.rs")
            } else {
                format!("{dir}{unit}/")
            }
        };
        for circle in circles(&units, &edges) {
            let names: Vec<String> = circle.iter().map(|u| file(u)).collect();
            let mut message = format!("a circle in {dir}: {}", names.join(" → "));
            for pair in circle.windows(2) {
                if let Some((at, line)) = uses.get(&(pair[0].clone(), pair[1].clone())) {
                    let at = at.strip_prefix(root()).unwrap_or(at);
                    message.push_str(&format!(
                        "\n    {} uses {} ({}:{line})",
                        file(&pair[0]),
                        file(&pair[1]),
                        at.display()
                    ));
                }
            }
            wrong.push(message);
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether `line` names the `emacs` crate: `::emacs::…`, `use emacs…`, `extern crate emacs`,
/// or a bare `emacs::…` in a file with no `emacs` module of its own.
fn names_the_emacs_crate(line: &str, has_emacs_module: bool) -> bool {
    let code = line.split("//").next().unwrap_or("");
    if code.contains("extern crate emacs") || code.trim_start().starts_with("use emacs") {
        return true;
    }
    let mut from = 0;
    while let Some(i) = code[from..].find("emacs::") {
        let at = from + i;
        let before = &code[..at];
        let crate_rooted = before.ends_with("::")
            && !before[..before.len() - 2]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let bare = !before.ends_with("::")
            && !before
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if crate_rooted || (bare && !has_emacs_module) {
            return true;
        }
        from = at + "emacs::".len();
    }
    false
}

#[test]
fn only_the_emacs_skin_touches_the_emacs_api() {
    let skin = root().join("src/emacs");
    let mut wrong = Vec::new();
    for file in rust_files(&root().join("src")) {
        if file.starts_with(&skin) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let has_emacs_module = text.contains("mod emacs;");
        for (n, line) in text.lines().enumerate() {
            if names_the_emacs_crate(line, has_emacs_module) || line.contains("#[defun") {
                wrong.push(format!(
                    "{}:{}: {}",
                    file.strip_prefix(root()).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the Emacs API outside src/emacs/:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_checks_see_what_they_look_for() {
    // Each check above would pass trivially if its reader saw nothing.
    assert!(names_the_emacs_crate("use ::emacs::{defun, Env};", false));
    assert!(names_the_emacs_crate("fn f(env: &emacs::Env) {}", false));
    assert!(!names_the_emacs_crate(
        "use crate::tools::emacs::ElispTool;",
        false
    ));
    assert!(!names_the_emacs_crate("    emacs::edit_schemas()", true));
    assert_eq!(
        crate_uses("use crate::{gates::Context, llm::Wire};\n[`crate::notes::Notes`]"),
        ["gates", "llm", "notes"].map(String::from).into()
    );
    assert!(layers().len() >= 8);
    let path = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let here = path("store::ingest");
    assert_eq!(
        module_uses(
            "use super::{state::State, file_doc::{FileDoc, NodeRef}};",
            &here
        ),
        [path("store::state::State"), path("store::file_doc")]
    );
    assert_eq!(
        module_uses(
            "x = crate::agent::runtime::Runtime::global(); self::y::z",
            &here
        ),
        [path("agent::runtime"), path("store::ingest::y::z")]
    );
    assert!(module_uses("use my_crate::a; // super::b", &here).len() <= 1);
    let hidden = "fn a() {}
#[cfg(test)]
mod tests {
    use super::b;
}
// super::c
fn d() {}
";
    let kept: Vec<&str> = without_tests_and_comments(hidden)
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert_eq!(kept, ["fn a() {}", "fn d() {}"]);
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let edge = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    let edges = BTreeSet::from([
        edge("a", "b"),
        edge("b", "c"),
        edge("c", "a"),
        edge("c", "d"),
    ]);
    assert_eq!(
        circles(&names(&["a", "b", "c", "d"]), &edges),
        [["a", "b", "c", "a"]]
    );
    assert!(circles(&names(&["a", "b"]), &BTreeSet::from([edge("a", "b")])).is_empty());
    let long = "fn f() {\n".to_owned() + &"    x();\n".repeat(130) + "}\n";
    assert_eq!(long_functions(&long, 120).len(), 1);
}

/// Functions of `text` longer than `max` lines, as (line, name, length). rustfmt puts a
/// function's closing brace alone on a line at the indentation of its `fn`.
fn long_functions(text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "fn") else {
            continue;
        };
        let qualifiers_only = words[..at]
            .iter()
            .all(|w| w.starts_with("pub") || matches!(*w, "async" | "const" | "unsafe"));
        if !qualifiers_only || trimmed.ends_with(';') {
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        let close = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == close) {
            let len = end + 2;
            if len > max {
                let name: String = words
                    .get(at + 1)
                    .unwrap_or(&"?")
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((i + 1, name, len));
            }
        }
    }
    out
}

#[test]
fn no_function_of_the_turn_or_the_skin_is_over_120_lines() {
    let mut wrong = Vec::new();
    for dir in ["src/agent", "src/emacs"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (line, name, len) in long_functions(&text, 120) {
                wrong.push(format!(
                    "{}:{line}: fn {name} is {len} lines",
                    file.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every path ARCHITECTURE.md names in backquotes (`src/…`, `elisp/…`, `tests/…`, or a file
/// name under a code-map heading) exists in the tree, so the map cannot drift from the code
/// unnoticed when a file is renamed, split or removed.
#[test]
fn the_map_names_only_paths_that_exist() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    let mut folder: Option<String> = None;
    for line in doc.lines() {
        // A code-map heading (### `src/store/` — …) is the folder its bare file names sit in.
        if line.starts_with('#') {
            folder = line
                .strip_prefix("### `")
                .and_then(|h| h.split('`').next())
                .map(str::to_owned);
        }
        for (i, quoted) in line.split('`').enumerate() {
            if i % 2 == 0 || quoted.contains(char::is_whitespace) {
                continue;
            }
            let Some(path) = named_path(quoted, folder.as_deref()) else {
                continue;
            };
            checked += 1;
            if !exists(&path) {
                missing.push(format!("{quoted} ({path})"));
            }
        }
    }
    assert!(
        checked > 50,
        "the map names only {checked} paths: is the check still reading it?"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

/// The repository path a backquoted word of the map stands for: a path from the root
/// (`src/…`, `elisp/…`), or a file (`verbs.rs`, `sandbox/view.rs`) under its section's folder.
fn named_path(word: &str, folder: Option<&str>) -> Option<String> {
    const ROOTS: [&str; 8] = [
        "src/",
        "elisp/",
        "tests/",
        "skills/",
        "scripts/",
        "examples/",
        "bench/",
        "demo/",
    ];
    let word = word.trim_end_matches(['.', ',', ':']);
    if ROOTS.iter().any(|r| word.starts_with(r)) || word.starts_with(".ci/") {
        return Some(word.to_owned());
    }
    let is_file = [".rs", ".el", ".org", ".md"]
        .iter()
        .any(|e| word.ends_with(e))
        && !word.contains(['<', '(', '#']);
    match folder {
        _ if !is_file || word == "SKILL.org" || word == "SKILL.md" => None,
        Some(dir) if dir.ends_with('/') => Some(format!("{dir}{word}")),
        _ => Some(word.to_owned()),
    }
}

/// Whether `path` exists; a `*` in its last part matches any run of characters.
fn exists(path: &str) -> bool {
    let Some((prefix, suffix)) = path.split_once('*') else {
        return root().join(path).exists();
    };
    let (dir, start) = prefix.rsplit_once('/').unwrap_or(("", prefix));
    std::fs::read_dir(root().join(dir)).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(start) && name.ends_with(suffix)
        })
    })
}

/// The map misses no part: every folder of `src/` has its section, and every Elisp file is
/// named.
#[test]
fn the_map_covers_every_folder_and_elisp_file() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let listed = |dir: &str, keep: fn(&Path) -> bool| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| keep(p))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let folders = listed("src", |p| p.is_dir());
    let elisp = listed("elisp", |p| p.extension().is_some_and(|e| e == "el"));
    assert!(
        folders.len() > 10 && elisp.len() > 10,
        "{folders:?} {elisp:?}"
    );
    let mut missing: Vec<String> = folders
        .iter()
        .filter(|f| !doc.contains(&format!("### `src/{f}/`")))
        .map(|f| format!("a section ### `src/{f}/`"))
        .collect();
    missing.extend(
        elisp
            .iter()
            .filter(|f| !doc.contains(&format!("`{f}`")))
            .cloned(),
    );
    assert!(missing.is_empty(), "ARCHITECTURE.md misses: {missing:?}");
}
