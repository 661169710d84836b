//! Real Emacs as the judge of what the reader and printer must agree with.

use std::process::Command;

/// What `emacs -Q --batch` printed evaluating `program`; Emacs failing fails the test.
pub fn batch_output(program: &str) -> Vec<u8> {
    let out = Command::new("emacs")
        .args(["-Q", "--batch", "--eval", program])
        .output()
        .expect("emacs must be installed for this test (scripts/deps installs it)");
    assert!(
        out.status.success(),
        "emacs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}
