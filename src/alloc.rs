//! The module's allocator: mimalloc, and heaps of their own for what one piece of work
//! allocates ([`Heap`]).
//!
//! Parsing allocates many small strings and tree nodes; mimalloc makes that roughly twice as
//! fast as glibc malloc here. It serves the module's own Rust allocations only; Emacs keeps
//! its allocator.
//!
//! Built without asking for transparent huge pages (`no_thp`): the first write to a fresh
//! huge page has the kernel zero all 2 MiB of it, and a store that grows file by file keeps
//! touching fresh ones. Ingesting a million headlines one file at a time took a fifth longer
//! with them, and a store open was no faster. Where the system gives huge pages to every
//! process, it still does; Emacs's own memory is not the module's to decide.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;

extern "C" {
    // mimalloc's first-class heaps, in the library the `mimalloc` crate links.
    fn mi_heap_new() -> *mut c_void;
    fn mi_heap_malloc_aligned(heap: *mut c_void, size: usize, alignment: usize) -> *mut c_void;
    fn mi_heap_zalloc_aligned(heap: *mut c_void, size: usize, alignment: usize) -> *mut c_void;
    fn mi_heap_realloc_aligned(
        heap: *mut c_void,
        p: *mut c_void,
        newsize: usize,
        alignment: usize,
    ) -> *mut c_void;
}

thread_local! {
    /// The heap the calling thread allocates from ([`Heap::enter`]); null: mimalloc's main
    /// heap. A plain `Cell` with a constant start: reading it never allocates.
    static ENTERED: Cell<*mut c_void> = const { Cell::new(std::ptr::null_mut()) };
}

fn entered() -> *mut c_void {
    // During a thread's teardown the slot may be gone: the main heap then.
    ENTERED.try_with(Cell::get).unwrap_or(std::ptr::null_mut())
}

/// mimalloc, allocating from its main heap.
static MAIN: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc, allocating from the heap the calling thread entered, if any.
pub struct Allocator;

// SAFETY: every call goes to mimalloc, which returns memory of the layout asked for (or
// null), from the main heap or a heap entered, which is never deleted (see `Heap`); mimalloc
// frees blocks of any heap, from any thread.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let heap = entered();
        if heap.is_null() {
            MAIN.alloc(layout)
        } else {
            mi_heap_malloc_aligned(heap, layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let heap = entered();
        if heap.is_null() {
            MAIN.alloc_zeroed(layout)
        } else {
            mi_heap_zalloc_aligned(heap, layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // mimalloc frees a block of any heap, from any thread.
        MAIN.dealloc(ptr, layout);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let heap = entered();
        if heap.is_null() {
            MAIN.realloc(ptr, layout, new_size)
        } else {
            mi_heap_realloc_aligned(heap, ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// A heap of its own: the pages of what threads allocate while they have it entered hold
/// nothing else.
///
/// A store's open makes the whole store in one. When the store it replaces is still being
/// freed (on a thread of its own, between opens), its pages are half empty, and an open that
/// filled their holes (free lists in the order things were freed, each allocation a cache
/// miss) took a third longer at a million headlines than one given fresh pages.
///
/// A heap is never deleted (`mi_heap_delete`): mimalloc frees a deleted heap's records
/// while a thread that allocated from it may still be ending and writing to them, which
/// crashed Emacs in one of ten exits right after an open. What is left of a heap is a few
/// kilobytes of records, one heap per open; its pages go back as their blocks are freed.
pub struct Heap(*mut c_void);

// SAFETY: mimalloc's first-class heaps may be allocated from and freed into from any thread.
unsafe impl Send for Heap {}
unsafe impl Sync for Heap {}

thread_local! {
    /// The heap entered, held, so that threads started meanwhile can enter it too
    /// ([`Heap::current`]).
    static CURRENT: std::cell::RefCell<Option<Arc<Heap>>> = const { std::cell::RefCell::new(None) };
}

impl Heap {
    /// A new heap; `None` when mimalloc cannot make one (then the main heap serves).
    pub fn new() -> Option<Arc<Heap>> {
        // SAFETY: takes no pointers.
        let heap = unsafe { mi_heap_new() };
        (!heap.is_null()).then(|| Arc::new(Heap(heap)))
    }

    /// The heap the calling thread has entered, if any: for the threads it starts to enter.
    pub fn current() -> Option<Arc<Heap>> {
        CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
    }

    /// Allocate from this heap on the calling thread until the guard is dropped.
    pub fn enter(self: &Arc<Heap>) -> Entered {
        let before = entered();
        let held = CURRENT
            .try_with(|c| c.replace(Some(self.clone())))
            .ok()
            .flatten();
        let _ = ENTERED.try_with(|e| e.set(self.0));
        Entered {
            before,
            held,
            _not_send: std::marker::PhantomData,
        }
    }
}

/// A thread's stay in a [`Heap`]; dropping it goes back to the heap it allocated from before.
pub struct Entered {
    before: *mut c_void,
    held: Option<Arc<Heap>>,
    /// Left on the thread that entered: the heap it goes back to is that thread's.
    _not_send: std::marker::PhantomData<*mut ()>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _ = ENTERED.try_with(|e| e.set(self.before));
        let _ = CURRENT.try_with(|c| c.replace(self.held.take()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn mi_heap_contains(heap: *const c_void, p: *const c_void) -> bool;
    }

    fn in_heap(heap: &Heap, b: &[u8]) -> bool {
        // SAFETY: both pointers are alive; mimalloc only looks the block's page up.
        unsafe { mi_heap_contains(heap.0, b.as_ptr().cast()) }
    }

    #[test]
    fn what_a_thread_allocates_in_a_heap_it_entered_is_in_that_heap_alone() {
        let heap = Heap::new().expect("a heap");
        let before = vec![1u8; 100];
        let (inside, grown) = {
            let _in = heap.enter();
            let inside = vec![2u8; 100];
            let mut grown = before.clone();
            grown.resize(100_000, 3);
            (inside, grown)
        };
        let after = vec![4u8; 100];
        assert!(in_heap(&heap, &inside) && in_heap(&heap, &grown));
        assert!(!in_heap(&heap, &before) && !in_heap(&heap, &after));
        assert!(Heap::current().is_none(), "the thread left the heap");
        // Its handle dropped with blocks still alive: they stay readable and are freed as
        // any other.
        drop(heap);
        assert!(inside.iter().all(|&b| b == 2) && grown[99_999] == 3);
    }

    #[test]
    fn a_thread_started_meanwhile_enters_the_heap_its_starter_is_in_and_leaves_it_after() {
        let heap = Heap::new().expect("a heap");
        let outer = Heap::new().expect("another heap");
        let _in_outer = outer.enter();
        {
            let _in = heap.enter();
            let current = Heap::current().expect("entered");
            assert!(Arc::ptr_eq(&current, &heap));
            let (made, left) = std::thread::scope(|s| {
                s.spawn(|| {
                    let _in = current.enter();
                    let made = vec![5u8; 64];
                    drop(_in);
                    (made, vec![6u8; 64])
                })
                .join()
                .expect("ran")
            });
            assert!(in_heap(&heap, &made) && !in_heap(&heap, &left));
        }
        // Back in the heap entered before.
        let again = vec![7u8; 64];
        assert!(in_heap(&outer, &again) && !in_heap(&heap, &again));
        assert!(Arc::ptr_eq(&Heap::current().expect("outer"), &outer));
    }
}
