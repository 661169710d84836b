//! No message carries a run of stray spaces from a string broken across lines (issue 12): a
//! Rust literal broken without a trailing `\` keeps the newline and the next line's
//! indentation, and so does an Elisp string whose `\`-newline is followed by indentation
//! (Emacs drops the backslash and the newline, not the spaces).

use std::path::{Path, PathBuf};

/// Where a Rust file's non-raw string literals hold a newline followed by indentation,
/// outside its `#[cfg(test)]` part (test data is written that way on purpose): line numbers.
fn rust_breaks(text: &str) -> Vec<usize> {
    let code = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let b = code.as_bytes();
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = code[i..].find('\n').map_or(b.len(), |n| i + n);
            }
            b'\'' => {
                // A character literal ('"', '\'', '\\') or a lifetime.
                let rest = &code[i..];
                let len = if let Some(escaped) = rest.strip_prefix("'\\") {
                    // The escaped character, then the closing quote.
                    let after = escaped.chars().next().map_or(0, char::len_utf8);
                    escaped[after..].find('\'').map_or(1, |n| n + 3 + after)
                } else if rest.chars().nth(2) == Some('\'') {
                    rest.chars().take(3).map(char::len_utf8).sum()
                } else {
                    1
                };
                i += len;
            }
            b'r' if (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                // A raw string: its text is what it shows, newlines included.
                let hashes = code[i + 1..].bytes().take_while(|&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let end = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                i = code[body..]
                    .find(&end)
                    .map_or(b.len(), |n| body + n + end.len());
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    if b[j] == b'\\' {
                        j += 2;
                        continue;
                    }
                    if b[j] == b'\n' && matches!(b.get(j + 1), Some(b' ' | b'\t')) {
                        found.push(line_of(j));
                    }
                    j += 1;
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    found
}

/// Where an Elisp file's strings have a `\`-newline followed by indentation: line numbers.
fn elisp_breaks(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let line_of = |i: usize| text[..i].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        match (in_string, b[i]) {
            (false, b';') => i = text[i..].find('\n').map_or(b.len(), |n| i + n),
            // A character: ?" ?\" ?\\ are not string quotes.
            (false, b'?') => i += if b.get(i + 1) == Some(&b'\\') { 3 } else { 2 },
            (false, b'\\') => i += 2,
            (false, b'"') | (true, b'"') => {
                in_string = !in_string;
                i += 1;
            }
            (true, b'\\') => {
                if b.get(i + 1) == Some(&b'\n') && matches!(b.get(i + 2), Some(b' ' | b'\t')) {
                    found.push(line_of(i));
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    found
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn the_scanners_find_a_broken_string() {
    let rust = "fn f() -> String {\n    let c = '\"'; let q = '\\''; let d = \"'\";\n    format!(\"a \\\n     b\");\n    \
                fail(\"the local model\n        serves only itself\")\n}\n";
    assert_eq!(rust_breaks(rust), [5]);
    assert!(rust_breaks("let s = r\"a\n   b\";\n").is_empty());
    assert!(rust_breaks("#[cfg(test)]\nconst T: &str = \"a\n  b\";\n").is_empty());
    let elisp = "(user-error \"No backend: the local \\\n     model serves only itself\")\n\
                 (message \"fine \\\nstart of line\" ?\\\")\n";
    assert_eq!(elisp_breaks(elisp), [1]);
}

#[test]
fn no_message_breaks_a_string_across_indented_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut rust = Vec::new();
    files(&root.join("src"), "rs", &mut rust);
    for path in rust {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in rust_breaks(&text) {
            found.push(format!("{}:{line}", path.display()));
        }
    }
    let mut elisp = Vec::new();
    files(&root.join("elisp"), "el", &mut elisp);
    for path in elisp {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in elisp_breaks(&text) {
            found.push(format!("{}:{line}", path.display()));
        }
    }
    assert!(
        found.is_empty(),
        "strings broken across lines keep the indentation as spaces: {found:?}"
    );
}
