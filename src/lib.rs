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

/// The project's own test data beside the checkout, for the crate's unit tests: the
/// integration tests' helper, compiled into no module a user loads.
#[cfg(test)]
#[path = "../tests/support/shared.rs"]
mod shared;

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

/// Give the calling thread the lowest priority, for work nobody waits for (warming caches,
/// freeing a closed store): on a busy machine, what the user waits for comes first.
pub fn lower_thread_priority() {
    // On Linux a thread id names that thread alone (setpriority(2)); elsewhere it would be
    // the whole process, which must keep its priority.
    #[cfg(target_os = "linux")]
    // SAFETY: takes no pointers; a failure leaves the priority as it was.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn priority_of(tid: libc::pid_t) -> libc::c_int {
        // SAFETY: takes no pointers.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
    }

    #[test]
    fn a_lowered_thread_alone_runs_at_the_lowest_priority() {
        // SAFETY: gettid takes nothing and cannot fail.
        let this = unsafe { libc::gettid() };
        let before = priority_of(this);
        let lowered = std::thread::spawn(|| {
            super::lower_thread_priority();
            // SAFETY: as above.
            priority_of(unsafe { libc::gettid() })
        })
        .join()
        .expect("the thread ran");
        assert_eq!(lowered, 19);
        assert_eq!(
            priority_of(this),
            before,
            "the rest of the process keeps its priority"
        );
    }
}
