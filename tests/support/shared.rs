//! `../shared` beside the checkout: what this project's machines and CI have, and a user's
//! clone has not (the real-world Org corpus, recorded LLM responses). A test that needs it
//! asks here first; without it the test says what it skipped, and why, and passes.

use std::io::Write;
use std::path::{Path, PathBuf};

/// `../shared/<sub>` when that directory is beside this checkout.
pub fn dir(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(sub);
    dir.is_dir().then_some(dir)
}

/// `../shared/<sub>`, or `None` after a line saying that `test` is skipped without it.
pub fn require(sub: &str, test: &str) -> Option<PathBuf> {
    let found = dir(sub);
    if found.is_none() {
        say(&format!(
            "skipped: ../shared/{sub} is not beside this checkout ({test})"
        ));
    }
    found
}

/// Prints `line` straight to stderr, past the test harness's capture, so that `cargo test`
/// shows it for a test that passes.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
