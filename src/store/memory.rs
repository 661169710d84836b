//! Handing the memory freed by loads and ingests back to the system (mimalloc keeps a
//! thread's freed pages until the thread allocates again, and ingest threads end).

/// Hand back to the system the memory this thread, and threads that have ended, freed.
/// Loading frees as much as it keeps (decoded batches, file records), and a directory
/// ingest about as much (parse trees, texts), spread over pages the allocator would
/// otherwise hold: at 100,000 headlines, 70 MB of resident memory nothing uses each.
pub(super) fn release_freed_memory() {
    extern "C" {
        // mimalloc's, linked as the global allocator (src/lib.rs).
        fn mi_collect(force: bool);
    }
    // SAFETY: takes no pointers; mimalloc collects the calling thread's heap and the
    // abandoned ones, which is always allowed.
    unsafe {
        mi_collect(true);
        // Not always enough alone: in some runs a reload's collection left what it freed
        // resident (+80 MB at 100,000 headlines, twice what the store holds) until a
        // second one, made right after, handed it back. A second pass finds little to do.
        mi_collect(true);
    }
}
