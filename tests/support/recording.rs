//! Recorded responses (../shared/llm-fixtures) as the parsers see them. They are beside this
//! project's checkouts, not in a user's clone: a test that reads them starts with
//! `if !recording::available("its name") { return; }`.

use std::path::{Path, PathBuf};

/// Whether the recordings are beside this checkout; when not, says that `test` is skipped.
pub fn available(test: &str) -> bool {
    super::shared::require("llm-fixtures", test).is_some()
}

/// The recordings of `provider` (`openai`, `anthropic`, `gemini`).
pub fn dir(provider: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/llm-fixtures")
        .join(provider)
}

/// The names of `provider`'s recordings, sorted.
pub fn names(provider: &str) -> Vec<String> {
    let dir = dir(provider);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| {
            e.unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// Recording `name` of `provider`, as recorded.
pub fn raw(provider: &str, name: &str) -> Vec<u8> {
    std::fs::read(dir(provider).join(name))
        .unwrap_or_else(|e| panic!("recording {provider}/{name}: {e}"))
}

/// A recording's response body: gptel-test recordings may start with the HTTP status line
/// and headers (`HTTP/2 200`, or `### HTTP/2 200`), which the HTTP client strips before the
/// body reaches a parser; they end at the first blank line.
pub fn body(raw: &[u8]) -> &[u8] {
    if !raw.starts_with(b"HTTP/") && !raw.starts_with(b"### HTTP/") {
        return raw;
    }
    for sep in [&b"\r\n\r\n"[..], &b"\n\n"[..]] {
        if let Some(pos) = raw.windows(sep.len()).position(|w| w == sep) {
            return &raw[pos + sep.len()..];
        }
    }
    raw
}
