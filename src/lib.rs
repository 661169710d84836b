//! org-agent: an AI agent that lives inside Emacs. This crate is both the Emacs dynamic
//! module (`src/emacs/`, the only code that touches Emacs) and a plain Rust library whose
//! core (`store`, …) is tested with `cargo test` without Emacs.

pub mod action;
pub mod agent;
pub mod context;
pub mod emacs;
pub mod gates;
pub mod llm;
pub mod markdown;
pub mod mcp;
pub mod notes;
pub mod secrets;
pub mod sexp;
pub mod skills;
pub mod store;
pub mod tools;

/// The crate version; the Elisp package refuses a module whose version differs.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Block `SIGPIPE` in the calling thread, so that writing to the wake-up pipe after Emacs
/// closed it returns `EPIPE` instead of killing Emacs. Called first thing in every thread
/// the module starts.
pub fn block_sigpipe() {
    // SAFETY: plain libc calls on a local, zero-initialised signal set; pthread_sigmask only
    // changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// `../shared/<sub>` when it is beside this checkout, for the crate's own tests (the
/// integration tests have `tests/support/shared.rs`): this project's machines have it, a
/// user's clone has not. Without it, says that `test` is skipped, and why.
#[cfg(test)]
pub(crate) fn shared_for_tests(sub: &str, test: &str) -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(sub);
    if dir.is_dir() {
        return Some(dir);
    }
    eprintln!("skipped: ../shared/{sub} is not beside this checkout ({test})");
    None
}

// Parsing allocates many small strings and tree nodes; mimalloc makes that roughly twice as
// fast as glibc malloc here. It serves the module's own Rust allocations only; Emacs keeps its
// allocator.
//
// Built without asking for transparent huge pages (`no_thp`): the first write to a fresh huge
// page has the kernel zero all 2 MiB of it, and a store that grows file by file keeps
// touching fresh ones. Ingesting a million headlines one file at a time took a fifth longer
// with them, and a store open was no faster. Where the system gives huge pages to every
// process, it still does; Emacs's own memory is not the module's to decide.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
