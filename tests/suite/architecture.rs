//! The architecture's invariants, checked on the source: the layer order written in
//! ARCHITECTURE.md (a module of `src/` uses only modules below it, so there is no cycle),
//! only `src/emacs/` touches the Emacs API, and no function of the turn or the Emacs skin
//! grows past what one reads at once.

use std::collections::BTreeSet;
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
