//! The store brought back to the files on disk without a save: files changed, deleted and
//! added behind the store's back (while it was closed, or open) are in step after one pass
//! of `Store::reconcile`, whether the store opened cleanly, with a torn tail, or rebuilt.

use crate::support::store::*;
use org_agent::store::{Config, OpenReport, ReconcileReport, Store, LOG_NAME};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn open(dir: &Path) -> (Store, OpenReport) {
    Store::open(dir, config()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

fn pass(store: &Store, dirs: &[PathBuf]) -> ReconcileReport {
    let r = store.reconcile(dirs, || false);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r
}

/// Each file's headline titles: what a fresh store reads from the Org files under `dir`.
fn on_disk(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let fresh = Store::in_memory(Config::default());
    let r = fresh.ingest_directories(&[dir.to_path_buf()], |_, _, _| {}, || false);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    in_store(&fresh)
}

fn in_store(store: &Store) -> BTreeMap<String, Vec<String>> {
    let files: Vec<String> = store.state().files.keys().map(|k| k.to_string()).collect();
    files
        .into_iter()
        .map(|f| {
            let t = titles(store, &f);
            (f, t)
        })
        .collect()
}

fn names(report: &ReconcileReport) -> (Vec<String>, Vec<String>) {
    let mut ingested: Vec<String> = report.ingested.iter().map(|r| r.file.clone()).collect();
    let mut removed: Vec<String> = report.removed.iter().map(|r| r.0.clone()).collect();
    ingested.sort();
    removed.sort();
    (ingested, removed)
}

/// Notes in `root`: a.org, b.org and sub/c.org.
fn notes(root: &Path) -> (String, String, String) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let a = path_in(root, "a.org");
    let b = path_in(root, "b.org");
    let c = path_in(&root.join("sub"), "c.org");
    std::fs::write(&a, "* A old\n:PROPERTIES:\n:ID: a-1\n:END:\n").unwrap();
    std::fs::write(&b, "* B\n:PROPERTIES:\n:ID: b-1\n:END:\n** B child\n").unwrap();
    std::fs::write(&c, "* C\n").unwrap();
    (a, b, c)
}

#[test]
fn one_pass_after_reopening_takes_in_what_changed_while_the_store_was_closed() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, b, c) = notes(&root);
    let dirs = vec![root.clone()];
    {
        let (store, _) = open(state.path());
        store.ingest_directories(&dirs, |_, _, _| {}, || false);
        store.flush().unwrap();
    }
    // Behind the store's back: one file changed, one deleted, two new (one in a folder).
    std::fs::write(
        &a,
        "* A new title\n:PROPERTIES:\n:ID: a-1\n:END:\n* A second\n",
    )
    .unwrap();
    std::fs::remove_file(&b).unwrap();
    let d = path_in(&root, "d.org");
    std::fs::write(&d, "* D\n").unwrap();
    std::fs::create_dir_all(root.join("new")).unwrap();
    let e = path_in(&root.join("new"), "e.org");
    std::fs::write(&e, "* E\n").unwrap();

    let (store, report) = open(state.path());
    assert!(report.rebuilt.is_none() && !report.torn_tail);
    assert_eq!(titles(&store, &a), ["A old"], "the store as it was closed");
    let r = pass(&store, &dirs);
    assert_eq!(
        names(&r),
        (vec![a.clone(), d.clone(), e.clone()], vec![b.clone()])
    );
    assert_eq!(
        r.files, 5,
        "the store's four files and the two new ones, b once"
    );
    assert_eq!(in_store(&store), on_disk(&root));
    assert_eq!(titles(&store, &a), ["A new title", "A second"]);
    assert_eq!(titles(&store, &c), ["C"]);
    // The deleted file's nodes are gone, ids and all.
    assert!(nodes(&store, &b).is_empty());
    assert!(store.node("b-1").is_none());
    assert_eq!(
        &*store.node("a-1").expect("a-1").node().content.title,
        "A new title"
    );
    // A second pass finds nothing to do, and reads nothing.
    let again = pass(&store, &dirs);
    assert!(!again.changed());
    assert_eq!(again.confirmed, 0);
    // What the pass stored is in the log.
    store.flush().unwrap();
    drop(store);
    let (store, _) = open(state.path());
    assert_eq!(in_store(&store), on_disk(&root));
}

#[test]
fn a_torn_tail_and_a_rebuilt_store_are_brought_up_to_date_by_one_pass() {
    let org = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, b, _) = notes(&root);
    let dirs = vec![root.clone()];

    // A torn tail: the last commit (a's newer text) never reached the log whole, and the
    // crash came before the seal was rewritten for it (a crash cannot tear what the seal
    // says was committed: that is damage, see store_persist).
    let state = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(state.path());
        store.ingest_directories(&dirs, |_, _, _| {}, || false);
        store.flush().unwrap();
        let log = state.path().join(LOG_NAME);
        let seal = org_agent::store::seal::path_for(&log);
        let before = std::fs::metadata(&log).unwrap().len();
        let sealed_before = std::fs::read(&seal).unwrap();
        std::fs::write(&a, "* A saved before the crash\n").unwrap();
        store.ingest_file(&a, false).unwrap();
        store.flush().unwrap();
        drop(store);
        let len = std::fs::metadata(&log).unwrap().len();
        assert!(len > before + 12);
        let f = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
        f.set_len(len - 5).unwrap();
        std::fs::write(&seal, sealed_before).unwrap();
    }
    let (store, report) = open(state.path());
    assert!(report.torn_tail, "{report:?}");
    assert_eq!(titles(&store, &a), ["A old"]);
    let r = pass(&store, &dirs);
    assert_eq!(names(&r), (vec![a.clone()], vec![]));
    assert_eq!(in_store(&store), on_disk(&root));
    drop(store);

    // Damage set aside: the store opens empty and one pass adds every file.
    let state = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(state.path());
        store.ingest_directories(&dirs, |_, _, _| {}, || false);
        store.flush().unwrap();
    }
    let log = state.path().join(LOG_NAME);
    let mut bytes = std::fs::read(&log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    std::fs::write(&log, &bytes).unwrap();
    std::fs::remove_file(&b).unwrap();
    let (store, report) = open(state.path());
    assert!(report.rebuilt.is_some(), "{report:?}");
    assert!(store.state().files.is_empty());
    let r = pass(&store, &dirs);
    assert_eq!(r.ingested.len(), 2);
    assert_eq!(in_store(&store), on_disk(&root));
}

#[test]
fn changes_while_the_store_is_open_need_no_save() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, b, c) = notes(&root);
    // A file outside the directories, read once: it is kept in step too.
    let outside = path_in(org.path(), "outside.org");
    std::fs::write(&outside, "* Outside\n").unwrap();
    let dirs = vec![root.clone()];
    let (store, _) = open(state.path());
    store.ingest_file(&outside, false).unwrap();
    let r = pass(&store, &dirs);
    assert_eq!(r.ingested.len(), 3, "the directories' files are new");

    // A `git pull`: one changed, one deleted, one added; the file outside changed too.
    std::fs::write(&c, "* C pulled\n** C child\n").unwrap();
    std::fs::remove_file(&b).unwrap();
    let n = path_in(&root, "n.org");
    std::fs::write(&n, "* N\n").unwrap();
    std::fs::write(&outside, "* Outside edited elsewhere\n").unwrap();
    let r = pass(&store, &dirs);
    assert_eq!(
        names(&r),
        (vec![n.clone(), c.clone(), outside.clone()], vec![b.clone()])
    );
    assert_eq!(r.removed, [(b.clone(), 3)]);
    assert_eq!(titles(&store, &c), ["C pulled", "C child"]);
    assert_eq!(titles(&store, &outside), ["Outside edited elsewhere"]);
    assert_eq!(titles(&store, &a), ["A old"]);
    assert!(nodes(&store, &b).is_empty());

    // Deleted outside the directories: it leaves the store as well.
    std::fs::remove_file(&outside).unwrap();
    let r = pass(&store, &dirs);
    assert_eq!(names(&r), (vec![], vec![outside.clone()]));
    assert!(!pass(&store, &dirs).changed());
}

#[test]
fn a_file_rewritten_with_the_same_text_is_read_but_not_stored_again() {
    let org = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, _, _) = notes(&root);
    let dirs = vec![root.clone()];
    let store = mem_store();
    pass(&store, &dirs);
    let versions = store.stats().versions;
    let doc = store.state().files.get(a.as_str()).cloned().expect("a");
    // The same text again, a later modification time (a sync tool touching it).
    let text = std::fs::read(&a).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::write(&a, &text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let r = pass(&store, &dirs);
    assert!(!r.changed(), "{r:?}");
    assert_eq!(r.confirmed, 1);
    assert_eq!(store.stats().versions, versions);
    let now = store.state().files.get(a.as_str()).cloned().expect("a");
    assert!(std::sync::Arc::ptr_eq(&doc, &now), "not parsed again");
    // Remembered: the next pass does not read it again.
    assert_eq!(pass(&store, &dirs).confirmed, 0);
}

#[test]
fn a_buffers_text_stays_until_the_file_on_disk_changes() {
    let org = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, _, _) = notes(&root);
    let dirs = vec![root.clone()];
    let store = mem_store();
    pass(&store, &dirs);
    // An unsaved buffer's text (e.g. ingested to find the node at point), and a new buffer
    // whose file was never written.
    ingest(&store, &a, "* A unsaved edit\n");
    let unsaved = path_in(&root, "not-yet-saved.org");
    ingest(&store, &unsaved, "* Not yet saved\n");
    let r = pass(&store, &dirs);
    assert!(!r.changed(), "{r:?}");
    assert_eq!(titles(&store, &a), ["A unsaved edit"]);
    assert_eq!(titles(&store, &unsaved), ["Not yet saved"]);
    // Once the disk changes, the disk wins.
    std::fs::write(&a, "* A written by another program\n").unwrap();
    let r = pass(&store, &dirs);
    assert_eq!(names(&r), (vec![a.clone()], vec![]));
    assert_eq!(titles(&store, &a), ["A written by another program"]);
    // The buffer's file written, then deleted: it leaves.
    std::fs::write(&unsaved, "* Not yet saved\n").unwrap();
    pass(&store, &dirs);
    std::fs::remove_file(&unsaved).unwrap();
    let r = pass(&store, &dirs);
    assert_eq!(names(&r).1, [unsaved]);
}

#[test]
fn saves_racing_with_passes_leave_the_last_save_in_the_store() {
    let org = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    let (a, _, _) = notes(&root);
    let dirs = vec![root.clone()];
    let store = mem_store();
    pass(&store, &dirs);
    let done = std::sync::atomic::AtomicBool::new(false);
    let last = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                pass(&store, &dirs);
            }
        });
        // As Emacs saves: the file is written, then its buffer's text is ingested under a
        // generation reserved after the write.
        let mut last = String::new();
        for i in 0..300 {
            last = format!("* Save {i}\n{}\n", "x".repeat(i % 7));
            std::fs::write(&a, &last).unwrap();
            let generation = store.reserve_generation(&a);
            store
                .ingest_text(&a, &last, None, None, Some(generation))
                .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        last
    });
    assert_eq!(titles(&store, &a), titles_of(&last));
    assert!(!pass(&store, &dirs).changed());
}

fn titles_of(text: &str) -> Vec<String> {
    let store = mem_store();
    ingest(&store, "/t.org", text);
    titles(&store, "/t.org")
}
