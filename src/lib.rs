//! org-agent: an AI agent that lives inside Emacs. This crate is both the Emacs dynamic
//! module (`src/emacs/`, the only code that touches Emacs) and a plain Rust library whose
//! core (`store`, …) is tested with `cargo test` without Emacs.

pub mod action;
pub mod agent;
pub mod alloc;
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

/// Prepare the calling thread, one the module started, to run beside Emacs. Called first
/// thing in every such thread: the runtime's workers, and the threads the store starts.
pub fn start_module_thread() {
    block_sigpipe();
    never_preempt_on_wakeup();
}

/// Block `SIGPIPE` in the calling thread, so that writing to the wake-up pipe after Emacs
/// closed it returns `EPIPE` instead of killing Emacs.
fn block_sigpipe() {
    // SAFETY: plain libc calls on a local, zero-initialised signal set; pthread_sigmask only
    // changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether `SIGPIPE` is blocked in the calling thread, as [`start_module_thread`] leaves it.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn sigpipe_blocked_here() -> bool {
    // SAFETY: a zeroed set is a valid out-parameter; a null new set only reads.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut set);
        libc::sigismember(&set, libc::SIGPIPE) == 1
    }
}

/// Schedule the calling thread as batch work (`SCHED_BATCH`, sched(7)): the same share of
/// the CPUs, but waking up never takes a CPU from the thread running on it.
///
/// Emacs's main thread hands work over by waking a worker (a save's ingest, a chat turn),
/// and the kernel often gave the woken worker the main thread's own CPU at once: the main
/// thread then waited out the worker's time slice before it could go on. Of 400 saves of a
/// 1 MB file (`org-agent--after-save', a median of 0.1 ms), up to 13 took over 0.5 ms and
/// the worst 1.4-5.3 ms, in 6 runs of 8; with batch workers none did in 8 runs, the worst
/// 0.26 ms. Where there is no such policy, the thread stays as it was.
fn never_preempt_on_wakeup() {
    #[cfg(target_os = "linux")]
    set_scheduling_policy(libc::SCHED_BATCH);
}

/// Move the calling thread to `policy`, one of the policies without a static priority
/// (`SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`); a failure leaves it as it was.
#[cfg(target_os = "linux")]
fn set_scheduling_policy(policy: libc::c_int) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` outlives the call; pid 0 is the calling thread, and any thread may
    // move itself between these policies.
    unsafe {
        libc::sched_setscheduler(0, policy, &param);
    }
}

/// Give the calling thread the lowest priority, for work nobody waits for (warming caches,
/// freeing a closed store): on a busy machine, what the user waits for comes first.
///
/// Nice 19 alone is not enough beside [`start_module_thread`]'s batch workers: a batch
/// thread that wakes never takes a CPU from the thread running on it, even one at nice 19,
/// so a hand-over between workers could wait out a background thread's time slice. A
/// thread of the idle policy (`SCHED_IDLE`) gives its CPU up to any other that wakes.
pub fn lower_thread_priority() {
    // On Linux a thread id names that thread alone (setpriority(2)); elsewhere it would be
    // the whole process, which must keep its priority.
    #[cfg(target_os = "linux")]
    {
        set_scheduling_policy(libc::SCHED_IDLE);
        // SAFETY: takes no pointers; a failure leaves the priority as it was.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
        }
    }
}

// mimalloc, with heaps of their own for a store's open (src/alloc.rs).
#[global_allocator]
static ALLOCATOR: alloc::Allocator = alloc::Allocator;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    fn priority_of(tid: libc::pid_t) -> libc::c_int {
        // SAFETY: takes no pointers.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
    }

    #[test]
    fn a_module_thread_alone_is_scheduled_as_batch_work_with_sigpipe_blocked() {
        // SAFETY: pid 0 is the calling thread; takes no pointers.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let before = policy();
        let (started, sigpipe_blocked) = std::thread::spawn(move || {
            super::start_module_thread();
            (policy(), super::sigpipe_blocked_here())
        })
        .join()
        .expect("the thread ran");
        assert_eq!(started, libc::SCHED_BATCH);
        assert!(sigpipe_blocked);
        assert_eq!(policy(), before, "the rest of the process keeps its policy");
    }

    #[test]
    fn a_lowered_thread_alone_runs_at_the_lowest_priority() {
        // SAFETY: gettid takes nothing and cannot fail.
        let this = unsafe { libc::gettid() };
        let before = priority_of(this);
        let (lowered, policy) = std::thread::spawn(|| {
            super::start_module_thread();
            super::lower_thread_priority();
            // SAFETY: as above; pid 0 is the calling thread.
            unsafe { (priority_of(libc::gettid()), libc::sched_getscheduler(0)) }
        })
        .join()
        .expect("the thread ran");
        assert_eq!(lowered, 19);
        assert_eq!(
            policy,
            libc::SCHED_IDLE,
            "any thread that wakes comes first"
        );
        assert_eq!(
            priority_of(this),
            before,
            "the rest of the process keeps its priority"
        );
    }
}
