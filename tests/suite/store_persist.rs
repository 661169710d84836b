//! Persistence: the append-only log under the state directory survives reopening, torn
//! tails from crashes, corruption (set aside and rebuilt from the Org files), compaction,
//! and directory scans that notice deleted and renamed files.

use crate::support::store::*;
use crate::support::Rng;
use org_agent::store::sizes::{self, Sizes};
use org_agent::store::{persist, Config, OpenReport, Store, LOG_NAME, RELOAD_MIN_VERSIONS};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn open(dir: &Path) -> (Store, OpenReport) {
    Store::open(dir, config()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Flushes and closes `store`, then opens `dir` again: the log must read back cleanly (no
/// rebuild, no torn tail) into the same store, which is returned. `what` names the moment.
fn reopen(store: Store, dir: &Path, what: &str) -> Store {
    store.flush().unwrap();
    let before = store_fp(&store);
    drop(store);
    let (store, report) = open(dir);
    assert!(report.rebuilt.is_none(), "{what}: {:?}", report.rebuilt);
    assert!(!report.torn_tail, "{what}: torn tail");
    assert_eq!(store_fp(&store), before, "{what}: reopened");
    store
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join(LOG_NAME)
}

fn seal_path(dir: &Path) -> PathBuf {
    dir.join(format!("{LOG_NAME}.seal"))
}

fn log_len(dir: &Path) -> u64 {
    std::fs::metadata(log_path(dir))
        .map(|m| m.len())
        .unwrap_or(0)
}

/// Files in `dir` whose name starts with `store.corrupt-`.
fn corrupt_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("store.corrupt-"))
        })
        .collect();
    v.sort();
    v
}

const A: &str = "/org/a.org";
const B: &str = "/org/b.org";
const C: &str = "/org/c.org";

fn text_a(n: usize) -> String {
    format!(
        "#+FILETAGS: :fa:\n#+TODO: TODO NEXT | DONE\n* NEXT Task {n} :work:\nSCHEDULED: <2024-01-0{} Mon +1w>\n:PROPERTIES:\n:ID: task-a\n:EMPTY:\n:END:\nbody é {n}\n** Sub\n*** Deep :x:\n* Other\n",
        1 + n % 9
    )
}

#[test]
fn reopen_restores_nodes_ids_hashes_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let (fp, stats) = {
        let (store, report) = open(dir.path());
        assert!(report.rebuilt.is_none());
        assert!(!report.torn_tail);
        assert_eq!((report.files, report.nodes), (0, 0));
        for i in 0..3 {
            ingest(&store, A, &text_a(i));
        }
        ingest(&store, B, "* Bee\n** Bee child\n");
        ingest(&store, C, "* Sea\n");
        assert!(store.remove_file(C));
        store.flush().unwrap();
        let stats = store.stats();
        assert!(stats.write_error.is_none());
        assert_eq!(stats.bytes_on_disk, log_len(dir.path()));
        assert_eq!(
            stats.path.as_deref(),
            Some(&*log_path(dir.path()).to_string_lossy())
        );
        (store_fp(&store), stats)
    };
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert!(!report.torn_tail);
    assert_eq!(report.files, 2);
    assert_eq!(report.nodes, stats.nodes);
    assert_eq!(store_fp(&store), fp);
    assert_eq!(store.stats(), stats);
    assert_eq!(store.history("task-a").len(), 3);
    let bodies: Vec<String> = store
        .history("task-a")
        .iter()
        .map(|v| v.content.body().expect("body").into_owned())
        .collect();
    assert_eq!(bodies, ["body é 0\n", "body é 1\n", "body é 2\n"]);
    assert!(nodes(&store, C).is_empty());
    assert_eq!(
        &*store.node("task-a").unwrap().node().content.title,
        "Task 2"
    );

    // Keep going after a reopen: appends land after the loaded batches.
    ingest(&store, A, &text_a(7));
    ingest(&store, C, "* Sea again\n");
    let store = reopen(store, dir.path(), "after more commits");
    assert_eq!(store.history("task-a").len(), 4);
}

/// An open leaves how large the store is beside the log, for the next to reserve its
/// tables once; a hint that is stale, forged or garbage changes nothing an open reads.
#[test]
fn the_size_hint_left_by_an_open_sizes_the_next_and_no_hint_changes_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let fp = {
        let (store, _) = open(dir.path());
        for i in 0..3 {
            ingest(&store, A, &text_a(i));
        }
        ingest(&store, B, "* Bee\n** Bee child\n");
        store.flush().unwrap();
        store_fp(&store)
    };
    let log = log_path(dir.path());
    assert_eq!(
        sizes::read(&log),
        Some(Sizes::default()),
        "the first open found nothing, and ingesting leaves the hint as it was"
    );
    let store = reopen(open(dir.path()).0, dir.path(), "with no hint");
    let left = sizes::read(&log).expect("the open left a hint");
    // Every version and id of two files of three and five headlines, task-a's three bodies.
    assert!(left.versions >= left.ids && left.ids >= 6, "{left:?}");
    assert_eq!(store_fp(&store), fp);
    drop(store);
    for (what, hint) in [
        ("a forged huge hint", Some(sizes_bytes(u64::MAX, u64::MAX))),
        ("a hint of nothing", Some(sizes_bytes(0, 0))),
        ("garbage", None),
    ] {
        std::fs::write(
            sizes::path_for(&log),
            hint.unwrap_or_else(|| b"not a hint".to_vec()),
        )
        .unwrap();
        if what == "a forged huge hint" {
            let capped = sizes::read(&log).expect("a well-formed hint");
            assert!(capped.versions <= log_len(dir.path()) / 32, "{capped:?}");
        }
        let (store, report) = open(dir.path());
        assert!(report.rebuilt.is_none(), "{what}");
        assert_eq!(store_fp(&store), fp, "{what}");
        assert_eq!(
            sizes::read(&log),
            Some(left),
            "{what}: the open put it right"
        );
    }
}

/// The bytes of a hint of `versions` and `ids`, as `sizes::write` leaves them.
fn sizes_bytes(versions: u64, ids: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    std::fs::write(&log, b"").unwrap();
    sizes::write(&log, sizes::Sizes { versions, ids });
    std::fs::read(sizes::path_for(&log)).unwrap()
}

#[test]
fn removed_files_stay_gone_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(dir.path());
        ingest(&store, A, &text_a(1));
        ingest(&store, B, "* Bee\n");
        assert!(store.remove_file(A));
        assert!(!store.remove_file(A), "already gone");
        assert!(!store.remove_file("/org/never.org"));
        store.flush().unwrap();
    }
    let (store, report) = open(dir.path());
    assert_eq!(report.files, 1);
    assert!(nodes(&store, A).is_empty());
    assert!(store.node("task-a").is_none());
    assert_eq!(titles(&store, B), ["Bee"]);
    // History outlives the file.
    assert_eq!(store.history("task-a").len(), 1);
}

#[test]
fn store_directory_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("deeper/state");
    {
        let (store, _) = open(&state);
        ingest(&store, A, "* A\n");
        store.flush().unwrap();
    }
    assert!(log_path(&state).is_file());
    let (store, _) = open(&state);
    assert_eq!(titles(&store, A), ["A"]);
}

/// Commits change the current state in place when no reader holds it. A state a reader
/// holds (a query under way, a snapshot) stays as it was: its files, nodes and ids, also for
/// a commit right after an open, while the id index is still built, and for the group
/// commits of a directory ingest.
#[test]
fn a_state_a_reader_holds_stays_as_it_was_through_commits() {
    let dir = tempfile::tempdir().unwrap();
    let org = tempfile::tempdir().unwrap();
    let heading = |title: &str, id: &str| format!("* {title}\n:PROPERTIES:\n:ID: {id}\n:END:\n");
    let titles_in = |state: &org_agent::store::State, file: &str| -> Vec<String> {
        state
            .files
            .get(file)
            .map(|doc| {
                doc.nodes[1..]
                    .iter()
                    .map(|n| n.content.title.to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let place = |state: &org_agent::store::State, id: &str| {
        state.node(id).map(|n| (n.doc.path.to_string(), n.index))
    };
    let (store, _) = open(dir.path());
    ingest(&store, A, &(heading("One", "one") + &heading("Two", "two")));
    store.flush().unwrap();
    drop(store);

    let (store, _) = open(dir.path());
    let held = store.state();
    ingest(
        &store,
        A,
        &(heading("Two", "two") + &heading("Three", "three")),
    );
    ingest(&store, B, &heading("Four", "four"));
    assert_eq!(titles_in(&held, A), ["One", "Two"]);
    assert!(held.files.get(B).is_none());
    assert_eq!(place(&held, "one"), Some((A.to_string(), 1)));
    assert_eq!(place(&held, "two"), Some((A.to_string(), 2)));
    assert_eq!(place(&held, "three"), None);
    assert_eq!(place(&held, "four"), None);
    let now = store.state();
    assert_eq!(titles_in(&now, A), ["Two", "Three"]);
    assert_eq!(place(&now, "one"), None);
    assert_eq!(place(&now, "two"), Some((A.to_string(), 1)));
    assert_eq!(place(&now, "three"), Some((A.to_string(), 2)));
    assert_eq!(place(&now, "four"), Some((B.to_string(), 1)));
    drop(now);

    let c = path_in(org.path(), "c.org");
    std::fs::write(&c, heading("Five", "five")).unwrap();
    let held_before_dir = store.state();
    let r = store.ingest_directories(&[org.path().to_path_buf()], |_, _, _| {}, || false);
    assert_eq!(r.ingested, 1);
    assert!(held_before_dir.files.get(c.as_str()).is_none());
    assert_eq!(place(&held_before_dir, "five"), None);
    assert_eq!(place(&store.state(), "five"), Some((c.clone(), 1)));
    // The state held first is still the first one.
    assert_eq!(titles_in(&held, A), ["One", "Two"]);
    drop((held, held_before_dir));
    reopen(store, dir.path(), "after commits in place");
}

/// A directory ingest stores the files each worker parsed in groups: one log batch for many
/// small files, where a commit per file wrote one each. A file is reported once, when it is
/// in the store; the log reads back the same.
#[test]
fn a_directory_of_small_files_is_committed_in_groups() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let files = small_files(org.path(), 500);
    let (store, _) = open(state.path());
    let mut seen = Vec::new();
    let r = store.ingest_directories(
        &[org.path().to_path_buf()],
        |_, total, f| {
            assert_eq!(total, 500);
            assert!(
                store.state().files.contains_key(f),
                "{f} reported, not stored"
            );
            seen.push(f.to_string());
        },
        || false,
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!((r.files, r.ingested, r.nodes), (500, 500, 500 * 41));
    seen.sort();
    assert_eq!(seen, files);
    for (i, f) in files.iter().enumerate() {
        let t = titles(&store, f);
        assert_eq!(t.len(), 40, "{f}");
        assert_eq!(t[0], format!("H{i} 0"));
    }
    let store = reopen(store, state.path(), "after the directory ingest");
    drop(store);

    let mut batches = 0;
    persist::load(&log_path(state.path()), |_| {
        batches += 1;
        Ok(())
    })
    .expect("the log reads");
    // 20,500 nodes: each worker (at most 4) commits a group of 4,096 nodes or more at least
    // once beside its last, so a group that never filled would show as 4 batches or fewer.
    assert!(
        (5..=50).contains(&batches),
        "{batches} log batches for 500 files"
    );
}

/// A directory ingest cancelled halfway stores every file it reported, what it parsed but
/// had not committed included, and removes nothing.
#[test]
fn a_cancelled_directory_ingest_stores_what_it_reported() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let files = small_files(org.path(), 1000);
    let (store, _) = open(state.path());
    let reported = std::sync::atomic::AtomicUsize::new(0);
    let r = store.ingest_directories(
        &[org.path().to_path_buf()],
        |done, _, _| reported.store(done, std::sync::atomic::Ordering::SeqCst),
        || reported.load(std::sync::atomic::Ordering::SeqCst) >= 120,
    );
    assert!(r.cancelled);
    let stored = files
        .iter()
        .filter(|f| titles(&store, f).len() == 40)
        .count();
    assert_eq!(stored, r.ingested);
    // Files are reported when their group (100 of these files) is stored. Once 120 are,
    // each worker (at most 4) stops at its next file, a few hundred files in, and stores
    // the group it holds.
    assert!((120..1000).contains(&stored), "{stored} of 1000 stored");
    assert_eq!(
        r.ingested,
        reported.load(std::sync::atomic::Ordering::SeqCst)
    );
    drop(reopen(
        store,
        state.path(),
        "after a cancelled directory ingest",
    ));
}

/// After a large directory ingest the store is loaded again from its log: the bodies the
/// ingest parsed are then read from there, as after an open, and nothing else changes.
#[test]
fn reloading_from_the_log_leaves_ingested_bodies_there_and_changes_nothing_else() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let files = small_files(org.path(), 300);
    let linked = path_in(org.path(), "linked.org");
    std::fs::write(
        &linked,
        "* Linked\nSee [[id:x][x]].\n* Plain\nSome words.\n",
    )
    .unwrap();
    let (store, _) = open(state.path());
    let dirs = [org.path().to_path_buf()];
    let r = store.ingest_directories(&dirs, |_, _, _| {}, || false);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Each of the 301 files has a file node and headlines of titles of its own.
    assert_eq!(r.new_versions, 300 * 41 + 3);
    assert!(store.worth_reloading(r.new_versions));
    let content = |store: &Store, file: &str, title: &str| {
        by_title(store, file, title).node().content.clone()
    };
    assert_eq!(
        content(&store, &files[7], "H7 3").body.resident(),
        Some("body 3\n")
    );
    let held = store.state();
    let before = store_fp(&store);
    let history = |store: &Store| -> Vec<_> {
        let id = by_title(store, &files[7], "H7 3").node().id.clone();
        store
            .history(&id)
            .iter()
            .map(|v| (v.hash, v.time))
            .collect()
    };
    let versions = history(&store);

    assert!(store.reload_from_log());
    assert_eq!(store_fp(&store), before);
    let plain = content(&store, &files[7], "H7 3");
    assert!(plain.body.resident().is_none(), "{:?}", plain.body);
    assert_eq!(plain.body().unwrap(), "body 3\n");
    assert!(content(&store, &linked, "Plain").body.resident().is_none());
    // What a load reads stays in memory, as after an open: bodies with links.
    assert_eq!(
        content(&store, &linked, "Linked").body.resident(),
        Some("See [[id:x][x]].\n")
    );
    assert_eq!(store.state().files[linked.as_str()].links.len(), 1);
    assert_eq!(history(&store), versions);
    // A reader's state is the one it took.
    let old = &held.files[files[7].as_str()];
    assert!(old
        .nodes
        .iter()
        .any(|n| n.content.body.resident() == Some("body 3\n")));

    // Commits go on, and reopen to the same store.
    ingest(&store, &files[7], "* H7 3\nbody changed\n");
    assert_eq!(
        content(&store, &files[7], "H7 3").body.resident(),
        Some("body changed\n")
    );
    let store = reopen(store, state.path(), "after a reload and a commit");
    // An ingest that finds nothing new is not worth one.
    let again = store.ingest_directories(&dirs, |_, _, _| {}, || false);
    assert_eq!((again.new_versions, again.unchanged), (0, 300));
    assert!(!store.worth_reloading(again.new_versions));
    // A flush asked for once a reload is begun waits for it.
    let reload = store
        .begin_reload()
        .expect("a persisted store, no snapshots");
    let flushed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            store.flush().unwrap();
            flushed.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!flushed.load(std::sync::atomic::Ordering::SeqCst));
        assert!(reload.run());
    });
    assert!(flushed.load(std::sync::atomic::Ordering::SeqCst));
    // Not while a snapshot holds the state before (a rollback compares documents), nor
    // once the store is being closed.
    store.snapshot("before");
    assert!(store.begin_reload().is_none());
    drop(store);
    let (store, _) = open(state.path());
    store.mark_closed();
    assert!(!store.reload_from_log());
    // Nor is anything in a store without a log.
    let memory = Store::in_memory(config());
    ingest(&memory, A, "* Plain\nSome words.\n");
    assert!(!memory.worth_reloading(RELOAD_MIN_VERSIONS) && !memory.reload_from_log());
}

/// `n` Org files of 40 headlines each in `dir`, sorted.
/// A reload after an ingest keeps what was found of each document's credentials: the same
/// file read back from the log holds the same node versions, so the warm-up need not read
/// them all again. What was not found yet stays to be found.
#[test]
fn reloading_from_the_log_keeps_the_credentials_found_so_far() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let files = small_files(org.path(), 300);
    let keys = path_in(org.path(), "keys.org");
    std::fs::write(
        &keys,
        "* Plain\nnothing\n* Token\nghp_16C7e42F292c6912E7710c838347Ae178B4a\n",
    )
    .unwrap();
    let (store, _) = open(state.path());
    let dirs = [org.path().to_path_buf()];
    let r = store.ingest_directories(&dirs, |_, _, _| {}, || false);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let unasked = files[3].as_str();
    let found: Vec<(String, Vec<u32>)> = store
        .state()
        .files
        .iter()
        .filter(|(path, _)| &***path != unasked)
        .map(|(path, doc)| {
            let flagged = doc.credentials().iter().map(|f| f.index).collect();
            (path.to_string(), flagged)
        })
        .collect();
    assert!(found.contains(&(keys.clone(), vec![2])), "the token's node");

    assert!(store.reload_from_log());
    let reloaded = store.state();
    assert!(!reloaded.files[unasked].credentials_known());
    for (path, flagged) in &found {
        let doc = &reloaded.files[path.as_str()];
        assert!(doc.credentials_known(), "{path}");
        let again: Vec<u32> = doc.credentials().iter().map(|f| f.index).collect();
        assert_eq!(&again, flagged, "{path}");
    }
}

fn small_files(dir: &Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let f = path_in(dir, &format!("f{i:04}.org"));
            let text: String = (0..40).map(|j| format!("* H{i} {j}\nbody {j}\n")).collect();
            std::fs::write(&f, text).unwrap();
            f
        })
        .collect()
}

#[test]
fn ingest_directories_drops_deleted_and_renamed_files() {
    let org = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let root = org.path().join("notes");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(org.path().join("notes2")).unwrap();
    let a = path_in(&root, "a.org");
    let b = path_in(&root, "b.org");
    let c = path_in(&root.join("sub"), "c.org");
    let outside = path_in(&org.path().join("notes2"), "o.org");
    std::fs::write(&a, "* A\n").unwrap();
    std::fs::write(&b, "* B\n** B1\n").unwrap();
    std::fs::write(&c, "* C\n").unwrap();
    std::fs::write(root.join("readme.txt"), "* not org\n").unwrap();
    std::fs::write(&outside, "* Outside\n").unwrap();
    let dirs = vec![root.clone()];
    {
        let (store, _) = open(state.path());
        // A file in a sibling directory whose name shares the prefix must survive the scan.
        store.ingest_file(&outside, false).unwrap();
        let mut seen = Vec::new();
        let r =
            store.ingest_directories(&dirs, |i, n, f| seen.push((i, n, f.to_string())), || false);
        assert_eq!(r.files, 3);
        assert_eq!(r.ingested, 3);
        assert_eq!(r.nodes, 2 + 3 + 2);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(seen.len(), 3);
        assert_eq!(seen.last().map(|s| (s.0, s.1)), Some((3, 3)));
        let r = store.ingest_directories(&dirs, |_, _, _| {}, || false);
        assert_eq!((r.ingested, r.unchanged, r.removed), (0, 3, 0));

        std::fs::remove_file(&a).unwrap();
        let b2 = path_in(&root, "b-renamed.org");
        std::fs::rename(&b, &b2).unwrap();
        let r = store.ingest_directories(&dirs, |_, _, _| {}, || false);
        assert_eq!((r.files, r.ingested, r.unchanged, r.removed), (2, 1, 1, 2));
        let mut files: Vec<String> = store.state().files.keys().map(|k| k.to_string()).collect();
        files.sort();
        let mut want = vec![b2.clone(), c.clone(), outside.clone()];
        want.sort();
        assert_eq!(files, want);
        assert!(nodes(&store, &a).is_empty());
        assert!(nodes(&store, &b).is_empty());
        assert_eq!(titles(&store, &b2), ["B", "B1"]);

        // A cancelled scan removes nothing.
        std::fs::remove_file(&c).unwrap();
        let r = store.ingest_directories(&dirs, |_, _, _| {}, || true);
        assert!(r.cancelled);
        assert_eq!(r.removed, 0);
        assert_eq!(titles(&store, &c), ["C"]);
        std::fs::write(&c, "* C\n").unwrap();
        store.flush().unwrap();
    }
    let (store, report) = open(state.path());
    assert_eq!(report.files, 3);
    assert!(nodes(&store, &a).is_empty());
    assert!(nodes(&store, &b).is_empty());
    assert_eq!(titles(&store, &outside), ["Outside"]);
}

/// A log built by a sequence of commits: the log length and the full state after each.
struct Recorded {
    log: Vec<u8>,
    /// (log length, state) after opening and after every commit, in order.
    prefixes: Vec<(u64, StateFp)>,
    /// The seal beside the log at each of `prefixes`.
    seals: Vec<Vec<u8>>,
    /// The final text of each live file.
    final_texts: BTreeMap<String, String>,
}

fn record_commits() -> Recorded {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let mut prefixes = vec![(log_len(dir.path()), store_fp(&store))];
    let seal = || std::fs::read(seal_path(dir.path())).expect("a sealed log");
    let mut seals = vec![seal()];
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let mut commit = |store: &Store,
                      texts: &mut BTreeMap<String, String>,
                      op: &dyn Fn(&Store, &mut BTreeMap<String, String>)| {
        op(store, texts);
        store.flush().unwrap();
        prefixes.push((log_len(dir.path()), store_fp(store)));
        seals.push(seal());
    };
    let put = |file: &'static str, text: String| {
        move |s: &Store, t: &mut BTreeMap<String, String>| {
            assert!(ingest(s, file, &text).changed);
            t.insert(file.to_string(), text.clone());
        }
    };
    commit(&store, &mut texts, &put(A, text_a(0)));
    commit(
        &store,
        &mut texts,
        &put(B, "* Bee\n** Child\nwords\n".into()),
    );
    commit(&store, &mut texts, &put(A, text_a(1)));
    store.snapshot("mid");
    commit(&store, &mut texts, &put(C, "* Sea :c:\n".into()));
    commit(
        &store,
        &mut texts,
        &|s: &Store, t: &mut BTreeMap<String, String>| {
            assert!(s.remove_file(B));
            t.remove(B);
        },
    );
    commit(&store, &mut texts, &put(A, text_a(2)));
    commit(
        &store,
        &mut texts,
        &|s: &Store, t: &mut BTreeMap<String, String>| {
            // Back to the snapshot: A at version 1, B back, C gone.
            s.rollback(0).unwrap();
            t.insert(A.into(), text_a(1));
            t.insert(B.into(), "* Bee\n** Child\nwords\n".into());
            t.remove(C);
        },
    );
    let big: String = (0..200).map(|i| format!("* H{i}\nline {i}\n")).collect();
    commit(&store, &mut texts, &put(C, big));
    commit(
        &store,
        &mut texts,
        &put(B, "* Bee\n** Child\nmore words\n".into()),
    );
    drop(store);
    let log = std::fs::read(log_path(dir.path())).unwrap();
    assert_eq!(log.len() as u64, prefixes.last().unwrap().0);
    // Every commit wrote something.
    assert!(prefixes.windows(2).all(|w| w[0].0 < w[1].0));
    Recorded {
        log,
        prefixes,
        seals,
        final_texts: texts,
    }
}

#[test]
fn commit_sequence_reopens_to_its_final_state() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &rec.log).unwrap();
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert!(!report.torn_tail);
    assert_eq!(store_fp(&store), rec.prefixes.last().unwrap().1);
    assert_eq!(titles(&store, A), ["Task 1", "Sub", "Deep", "Other"]);
}

#[test]
fn truncated_log_opens_to_a_committed_prefix() {
    let rec = record_commits();
    let len = rec.log.len() as u64;
    let mut offsets: Vec<u64> = vec![0, 1, 8, 15, 16, 17, 20, 27, 28, 29, len - 1, len];
    for (b, _) in &rec.prefixes {
        for d in [0i64, -1, 1, 4, 11, 12, 13] {
            let o = *b as i64 + d;
            if (0..=len as i64).contains(&o) {
                offsets.push(o as u64);
            }
        }
    }
    let mut rng = Rng::new(0x5eed_1234);
    for _ in 0..150 {
        offsets.push(rng.below(len + 1));
    }
    offsets.sort();
    offsets.dedup();
    for off in offsets {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), &rec.log[..off as usize]).unwrap();
        let (store, report) = open(dir.path());
        assert!(
            report.rebuilt.is_none(),
            "offset {off}: a truncated log is not corrupt: {:?}",
            report.rebuilt
        );
        // The longest committed prefix that fits.
        let k = rec
            .prefixes
            .iter()
            .rposition(|(b, _)| *b <= off)
            .unwrap_or(0);
        let (boundary, want) = &rec.prefixes[k];
        let torn = off != *boundary && off != 0;
        assert_eq!(
            report.torn_tail, torn,
            "offset {off} (prefix {k} ends at {boundary})"
        );
        assert_eq!(&store_fp(&store), want, "offset {off}: state of prefix {k}");
        assert!(corrupt_files(dir.path()).is_empty());
        // The torn tail is cut off, so later commits append cleanly.
        assert_eq!(log_len(dir.path()), (*boundary).max(16), "offset {off}");
        ingest(&store, "/org/after.org", "* After crash\n");
        reopen(
            store,
            dir.path(),
            &format!("offset {off}, after a new commit"),
        );
    }
}

#[test]
fn zero_filled_tail_is_a_torn_write() {
    let rec = record_commits();
    let n = rec.prefixes.len();
    let (last_good, want) = &rec.prefixes[n - 2];
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = rec.log.clone();
    for b in &mut bytes[*last_good as usize..] {
        *b = 0;
    }
    // And some extra zeros, as a file system may leave after a crash.
    bytes.extend_from_slice(&[0; 4096]);
    std::fs::write(log_path(dir.path()), &bytes).unwrap();
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert!(report.torn_tail);
    assert_eq!(&store_fp(&store), want);
    assert_eq!(log_len(dir.path()), *last_good);
}

#[test]
fn last_batch_with_zero_filled_payload_is_a_torn_write() {
    let rec = record_commits();
    let n = rec.prefixes.len();
    let (last_good, want) = &rec.prefixes[n - 2];
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = rec.log.clone();
    // The 12-byte batch header reached the disk, the rest of the batch did not.
    for b in &mut bytes[*last_good as usize + 12..] {
        *b = 0;
    }
    std::fs::write(log_path(dir.path()), &bytes).unwrap();
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none(), "{:?}", report.rebuilt);
    assert!(report.torn_tail);
    assert_eq!(&store_fp(&store), want);
}

#[test]
fn flipped_bytes_are_detected_and_the_store_is_rebuilt() {
    let rec = record_commits();
    let final_files = {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), &rec.log).unwrap();
        let (store, _) = open(dir.path());
        files_fp(&store.state())
    };
    let len = rec.log.len() as u64;
    let mut rng = Rng::new(42);
    let mut cases: Vec<(u64, u8)> = (0..60)
        .map(|_| (16 + rng.below(len - 16), 1 + rng.below(255) as u8))
        .collect();
    // Each part of a batch: marker, length, header checksum, payload, payload checksum.
    let first_batch = rec.prefixes[0].0;
    for d in [0u64, 3, 4, 7, 8, 11, 12, 20] {
        cases.push((first_batch + d, 0x01));
    }
    cases.push((len - 1, 0x80));
    cases.push((len - 4, 0xff));
    for (off, mask) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = rec.log.clone();
        bytes[off as usize] ^= mask;
        std::fs::write(log_path(dir.path()), &bytes).unwrap();
        let (store, report) = open(dir.path());
        assert!(
            report.rebuilt.is_some(),
            "offset {off} mask {mask:#04x}: corruption must be detected"
        );
        assert_eq!((report.files, report.nodes), (0, 0));
        assert_eq!(
            store.stats().files,
            0,
            "offset {off}: the store opens empty"
        );
        assert!(store.query(&Default::default()).is_empty());
        let aside = corrupt_files(dir.path());
        assert_eq!(aside.len(), 1, "offset {off}: the bad log is set aside");
        assert_eq!(
            std::fs::read(&aside[0]).unwrap(),
            bytes,
            "set aside unchanged"
        );
        // Org files are the source of truth: re-ingesting them gives the same nodes back.
        for (file, text) in &rec.final_texts {
            ingest(&store, file, text);
        }
        assert_eq!(
            files_fp(&store.state()),
            final_files,
            "offset {off}: rebuilt state"
        );
        let store = reopen(store, dir.path(), &format!("offset {off}, the new log"));
        assert_eq!(files_fp(&store.state()), final_files);
    }
}

#[test]
fn foreign_file_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        log_path(dir.path()),
        b"this is not an org-agent log at all\n",
    )
    .unwrap();
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_some());
    assert_eq!(corrupt_files(dir.path()).len(), 1);
    ingest(&store, A, "* A\n");
    let store = reopen(store, dir.path(), "after the rebuild");
    assert_eq!(titles(&store, A), ["A"]);
}

#[test]
fn empty_or_partial_magic_is_a_fresh_store() {
    for content in [&b""[..], b"ORG-AG"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), content).unwrap();
        let (store, report) = open(dir.path());
        assert!(report.rebuilt.is_none());
        assert_eq!(report.torn_tail, !content.is_empty());
        assert_eq!(store.stats().files, 0);
        ingest(&store, A, "* A\n");
        let store = reopen(store, dir.path(), "after the torn tail");
        assert_eq!(titles(&store, A), ["A"]);
    }
}

#[test]
fn set_aside_logs_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::write(log_path(dir.path()), format!("garbage number {i}")).unwrap();
        let (store, report) = open(dir.path());
        assert!(report.rebuilt.is_some());
        drop(store);
    }
    let aside = corrupt_files(dir.path());
    let mut contents: Vec<String> = aside
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    contents.sort();
    assert_eq!(
        contents,
        ["garbage number 0", "garbage number 1", "garbage number 2"],
        "every unusable log must be kept"
    );
}

#[test]
fn compaction_keeps_the_state() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(dir.path());
        // Many commits of one file: many dead file records in the log.
        for i in 0..80 {
            ingest(&store, A, &text_a(i));
            ingest(&store, B, &format!("* B {}\n", i % 3));
        }
        store.flush().unwrap();
    }
    let before_len = log_len(dir.path());
    let fp = {
        let dir2 = tempfile::tempdir().unwrap();
        std::fs::copy(log_path(dir.path()), log_path(dir2.path())).unwrap();
        // Reading a copy gives the reference state (opening compacts it as well).
        let (s, _) = open(dir2.path());
        store_fp(&s)
    };
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert_eq!(store_fp(&store), fp);
    store.flush().unwrap();
    // The bodies are read from the compacted log, not the one it replaced.
    let new_log = std::fs::read(log_path(dir.path())).unwrap();
    let task = by_title(&store, A, "Task 79").node().content.clone();
    let (path, at) = task.body.location().expect("a body in the log");
    assert_eq!(path, log_path(dir.path()));
    let text = task.body().unwrap();
    let at = at as usize;
    assert_eq!(new_log.get(at..at + text.len()), Some(text.as_bytes()));
    let after_len = log_len(dir.path());
    assert!(
        after_len < before_len,
        "opening a log with many dead records compacts it ({after_len} >= {before_len})"
    );
    assert!(!dir.path().join("store.compact").exists());
    ingest(&store, A, "* After compaction\n");
    store.compact().expect("compacts");
    ingest(&store, C, "* C\n");
    let store = reopen(store, dir.path(), "after compaction");
    assert_eq!(store.history("task-a").len(), 80);
}

#[test]
fn bodies_stay_in_the_log_until_read_and_a_changed_log_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "* Plain\nSome words here.\n* Linked\nSee [[id:x][x]].\n* Blank\n  \n";
    let (store, _) = open(dir.path());
    ingest(&store, A, text);
    let body = |store: &Store, title: &str| by_title(store, A, title).node().content.clone();
    assert_eq!(
        body(&store, "Plain").body.resident(),
        Some("Some words here.\n"),
        "a parsed body is in memory"
    );
    let store = reopen(store, dir.path(), "bodies");
    let plain = body(&store, "Plain");
    assert!(plain.body.resident().is_none(), "{:?}", plain.body);
    assert_eq!(plain.body().unwrap(), "Some words here.\n");
    // What the store reads on every load stays in memory: bodies with links, blank ones.
    assert_eq!(
        body(&store, "Linked").body.resident(),
        Some("See [[id:x][x]].\n")
    );
    assert!(body(&store, "Blank").body.is_blank());
    let links = &store.state().files[A].links;
    assert_eq!(links.iter().map(|l| &*l.target).collect::<Vec<_>>(), ["x"]);
    // The same text again keeps the stored versions, so the body stays in the log.
    ingest(&store, A, text);
    assert!(body(&store, "Plain").body.resident().is_none());

    // Another program writes over the body, in place and at the same length.
    let mut log = std::fs::read(log_path(dir.path())).unwrap();
    let at = log
        .windows(16)
        .position(|w| w == b"Some words here.")
        .expect("the body is in the log");
    log[at..at + 16].copy_from_slice(b"Some WORDS here.");
    std::fs::write(log_path(dir.path()), &log).unwrap();
    let e = plain.body().expect_err("the log changed").to_string();
    assert!(
        e.contains(&format!("byte {at} of")) && e.contains(LOG_NAME) && e.contains("other text"),
        "{e}"
    );
    assert!(plain
        .body_or_notice()
        .starts_with("[org-agent: the body stored at byte"));
    // Compaction cannot write that version back: it leaves the log as it is rather than
    // write one without it (or without the records batched with it), and says so.
    let e = store.compact().expect_err("a version cannot be written");
    assert!(e.contains("not done") && e.contains("other text"), "{e}");
    store.flush().unwrap();
    assert_eq!(std::fs::read(log_path(dir.path())).unwrap(), log);
    let write_error = store.stats().write_error.unwrap_or_default();
    assert!(write_error.contains("compacting"), "{write_error}");
    // Nor is the store loaded again from a log it could not write.
    assert!(!store.reload_from_log());
    // Opening it again finds the damage and rebuilds rather than read the changed text.
    drop(store);
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_some());
    assert_eq!(store.state().node_count(), 0);
}

#[test]
fn rollback_is_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let want = {
        let (store, _) = open(dir.path());
        ingest(&store, A, &text_a(0));
        ingest(&store, B, "* B\n");
        store.snapshot("s");
        let want = files_fp(&store.state());
        ingest(&store, A, &text_a(1));
        ingest(&store, C, "* C\n");
        store.remove_file(B);
        store.rollback(0).unwrap();
        assert_eq!(files_fp(&store.state()), want);
        store.flush().unwrap();
        // A no-op rollback writes nothing.
        let len = log_len(dir.path());
        store.rollback(0).unwrap();
        store.flush().unwrap();
        assert_eq!(log_len(dir.path()), len);
        want
    };
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert_eq!(files_fp(&store.state()), want);
    let hist = store.history("task-a");
    assert_eq!(hist.len(), 3, "v0, v1, and the rollback to v0");
    assert_eq!(hist[2].hash, hist[0].hash);
    assert!(
        store.snapshots().is_empty(),
        "snapshots live in memory only"
    );
}

#[test]
fn in_memory_store_has_no_log() {
    let store = Store::in_memory(Config::default());
    ingest(&store, A, "* A\n");
    assert!(store.flush().is_ok());
    let s = store.stats();
    assert_eq!(s.path, None);
    assert_eq!(s.bytes_on_disk, 0);
}

/// Random commits, snapshots, rollbacks, compactions and reopenings: the store always equals
/// what ingesting the current Org texts afresh gives, and reopening changes nothing.
#[test]
fn random_operations_survive_reopening() {
    let pool: Vec<String> = vec![
        "* A\n".into(),
        "* A\nbody\n** A1 :t:\n".into(),
        "#+FILETAGS: :ft:\n* TODO A :x:\nSCHEDULED: <2024-01-01 Mon +1d>\n".into(),
        "* B\n:PROPERTIES:\n:EMPTY:\n:OWNER: me\n:END:\n* B\n* B\n".into(),
        "Preamble é 😀\n* Ü\n** ß\n*** 日本\n".into(),
        String::new(),
        (0..50).map(|i| format!("* H{i}\ntext {i}\n")).collect(),
    ];
    let files = ["/org/1.org", "/org/2.org", "/org/sub/3.org"];
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(2024);
    let (mut store, _) = open(dir.path());
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut snaps: Vec<BTreeMap<String, String>> = Vec::new();
    for step in 0..300 {
        let op = rng.below(100);
        let file = files[rng.below(files.len() as u64) as usize];
        let what;
        if op < 55 {
            let text = &pool[rng.below(pool.len() as u64) as usize];
            ingest(&store, file, text);
            model.insert(file.to_string(), text.clone());
            what = "ingest";
        } else if op < 65 {
            assert_eq!(store.remove_file(file), model.remove(file).is_some());
            what = "remove";
        } else if op < 75 {
            store.snapshot(&format!("step {step}"));
            snaps.insert(0, model.clone());
            snaps.truncate(20);
            what = "snapshot";
        } else if op < 85 {
            let k = rng.below(snaps.len() as u64 + 1) as usize;
            match store.rollback(k) {
                Ok(()) => model = snaps[k].clone(),
                Err(_) => assert!(k >= snaps.len()),
            }
            what = "rollback";
        } else if op < 90 {
            store.compact().expect("compacts");
            what = "compact";
        } else {
            store = reopen(store, dir.path(), &format!("step {step}"));
            snaps.clear();
            what = "reopen";
        }
        let fresh = mem_store();
        for (f, t) in &model {
            ingest(&fresh, f, t);
        }
        assert_eq!(
            files_fp(&store.state()),
            files_fp(&fresh.state()),
            "step {step} after {what}"
        );
        for r in store.query(&Default::default()) {
            let hist = store.history(&r.node().id);
            assert_eq!(
                hist.last().map(|v| v.hash),
                Some(r.node().hash()),
                "step {step}: the current version ends the history"
            );
        }
    }
    reopen(store, dir.path(), "the end");
}

/// Writers on several threads and a reader that checks every state it sees is whole.
#[test]
fn concurrent_writers_and_readers() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    std::thread::scope(|s| {
        for w in 0..2 {
            let store = &store;
            s.spawn(move || {
                for i in 0..60 {
                    let file = format!("/org/w{w}-{}.org", i % 3);
                    ingest(store, &file, &format!("* W{w} {i}\n** child {i}\n"));
                }
            });
        }
        s.spawn(|| {
            for _ in 0..300 {
                let state = store.state();
                for doc in state.files.values() {
                    assert_eq!(doc.nodes.len(), 3);
                    let title = &doc.nodes[1].content.title;
                    let n = title.rsplit(' ').next().unwrap();
                    assert_eq!(&*doc.nodes[2].content.title, format!("child {n}"));
                }
                if let Err(e) = state.check_id_index() {
                    panic!("the id index of a state a reader holds: {e}");
                }
            }
        });
    });
    for w in 0..2 {
        for k in 0..3 {
            let file = format!("/org/w{w}-{k}.org");
            assert_eq!(
                titles(&store, &file),
                [format!("W{w} {}", 57 + k), format!("child {}", 57 + k)]
            );
        }
    }
    reopen(store, dir.path(), "after the writers");
}

/// Commits encode their batches outside the commit lock; the log must still replay in commit
/// order. Many threads ingest files that share node versions (the first file to commit a
/// version writes it, the others only refer to it), so any reordering makes a file record
/// name a version the log has not yet defined, and the reopened store would be unusable.
#[test]
fn concurrent_commits_sharing_versions_replay_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    std::thread::scope(|s| {
        for t in 0..4 {
            let store = &store;
            s.spawn(move || {
                for i in 0..40 {
                    let text = format!("* Shared {}\n** Same child\nbody\n* Own {t} {i}\n", i % 5);
                    ingest(store, &format!("/org/t{t}-{i}.org"), &text);
                }
            });
        }
    });
    let store = reopen(store, dir.path(), "after the commits");
    assert_eq!(store.stats().files, 160);
}

/// Commits encode into buffers the writer thread hands back once written: a large batch
/// followed by small ones into the same buffer must leave nothing of the large one behind.
#[test]
fn batches_encoded_into_reused_buffers_replay_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    let big: String = (0..2000)
        .map(|i| format!("* Big {i}\nbody {i}\n"))
        .collect();
    for round in 0..3 {
        ingest(&store, A, &big);
        store.flush().unwrap();
        ingest(&store, B, &format!("* Small {round}\n"));
        store.flush().unwrap();
        ingest(&store, A, &text_a(round));
        store.flush().unwrap();
    }
    let store = reopen(store, dir.path(), "after reused buffers");
    assert_eq!(titles(&store, B), ["Small 2"]);
    assert_eq!(store.history("task-a").len(), 3);
}

/// The writer hands a written batch's buffer back for the next commit, emptied; buffers
/// beyond a megabyte are freed instead, so that little is held between ingests. Both
/// batches are in the log.
#[test]
fn the_writer_hands_back_small_batch_buffers_only() {
    let dir = tempfile::tempdir().unwrap();
    let writer = persist::LogWriter::open(
        &log_path(dir.path()),
        org_agent::store::seal::Tally::empty(0),
    )
    .unwrap();
    let empty_log = log_len(dir.path());
    let records = [persist::Record::RemoveFile("/notes/a.org".into())];
    let mut batch = writer.batch_buffer();
    assert_eq!(batch.capacity(), 0, "nothing was written yet");
    persist::append_batch(&records, &mut batch).expect("encodes");
    let written = batch.len();
    writer.append(writer.ticket(), batch);
    writer.flush().unwrap();
    let reused = writer.batch_buffer();
    assert!(
        reused.is_empty() && reused.capacity() >= written,
        "{}",
        reused.capacity()
    );

    let mut huge = Vec::with_capacity(2 << 20);
    persist::append_batch(&records, &mut huge).expect("encodes");
    writer.append(writer.ticket(), huge);
    writer.flush().unwrap();
    assert_eq!(
        writer.batch_buffer().capacity(),
        0,
        "a 2 MiB buffer was kept"
    );
    drop(writer);
    assert_eq!(log_len(dir.path()), empty_log + 2 * written as u64);
}

/// Batches appended one after another into one buffer (how compaction writes) are the
/// batches encoded one by one.
#[test]
fn appended_batches_are_the_batches_encoded_alone() {
    let a = [persist::Record::RemoveFile("/notes/a.org".into())];
    let b = [
        persist::Record::RemoveFile("/notes/b.org".into()),
        persist::Record::RemoveFile("/notes/c.org".into()),
    ];
    let mut both = Vec::new();
    persist::append_batch(&a, &mut both).expect("encodes");
    persist::append_batch(&b, &mut both).expect("encodes");
    assert_eq!(
        both,
        [persist::encode_batch(&a), persist::encode_batch(&b)].concat()
    );
}

/// The records of a log, batch by batch, read with decode groups of about `group` bytes.
fn load_batches(path: &Path, group: usize) -> (Vec<usize>, persist::Loaded) {
    let mut sizes = Vec::new();
    let loaded = persist::load_in_groups(path, group, |batch| {
        sizes.push(batch.len());
        Ok(())
    })
    .unwrap_or_else(|e| panic!("load {}: {e}", path.display()));
    (sizes, loaded)
}

/// A gigabyte of zeros after the last batch (a file system's leftovers after a crash) is a
/// torn tail, read in bounded memory: opening once took 1.1 GB for it.
#[test]
fn gigabyte_zero_tail_is_read_in_bounded_memory() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    let path = log_path(dir.path());
    std::fs::write(&path, &rec.log).unwrap();
    let good = rec.log.len() as u64;
    // Sparse: the test costs no disk space.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(good + (1 << 30)).unwrap();
    drop(file);

    let (sizes, loaded) = load_batches(&path, persist::DECODE_GROUP);
    assert_eq!(sizes.len(), rec.prefixes.len() - 1, "one batch per commit");
    assert!(loaded.torn_tail);
    assert_eq!(loaded.valid_len, good);
    // Only the real batches were ever held, never the zeros.
    assert!(
        loaded.peak_buffered < rec.log.len(),
        "held {} bytes",
        loaded.peak_buffered
    );

    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none());
    assert!(report.torn_tail);
    assert_eq!(&store_fp(&store), &rec.prefixes.last().unwrap().1);
    assert_eq!(log_len(dir.path()), good, "the zeros are cut off");
}

/// Zeros followed by anything else are not a torn write but damage: set aside.
#[test]
fn zeros_then_garbage_is_corruption() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = rec.log.clone();
    bytes.extend_from_slice(&vec![0; 3 * persist::READ_BUFFER + 5]);
    bytes.push(1);
    bytes.extend_from_slice(&[0; 100]);
    std::fs::write(log_path(dir.path()), &bytes).unwrap();
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_some());
    assert_eq!(corrupt_files(dir.path()).len(), 1);
    assert_eq!(store.stats().files, 0);
    drop(store);

    // The same with the zeros a hole of a sparse file, which is skipped, not read.
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &rec.log).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(log_path(dir.path()))
        .unwrap();
    file.seek(SeekFrom::Start(rec.log.len() as u64 + (256 << 20)))
        .unwrap();
    file.write_all(b"\x01").unwrap();
    drop(file);
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_some());
    assert_eq!(store.stats().files, 0);
}

/// Batches are decoded and applied group by group: the loader never holds much more than
/// one group, and the state is the same whatever the group size.
#[test]
fn loading_holds_one_group_of_batches_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(dir.path());
        for i in 0..300 {
            let text: String = (0..20).map(|j| format!("* H{i} {j}\nbody {i}\n")).collect();
            ingest(&store, &format!("/org/f{}.org", i % 50), &text);
        }
        store.flush().unwrap();
    }
    let path = log_path(dir.path());
    let total = std::fs::metadata(&path).unwrap().len() as usize;
    let (whole, loaded_whole) = load_batches(&path, usize::MAX);
    assert_eq!(whole.len(), 300);
    assert!(loaded_whole.peak_buffered > total / 2);
    let group = 16 << 10;
    let (grouped, loaded) = load_batches(&path, group);
    assert_eq!(grouped, whole);
    assert_eq!(loaded.valid_len, loaded_whole.valid_len);
    assert!(
        loaded.peak_buffered < group + (8 << 10),
        "held {} bytes for groups of {group} in a log of {total}",
        loaded.peak_buffered
    );
}

/// `store.log` that is a directory could not be read and stopped org-agent. It is set aside
/// (never deleted), a fresh log takes its place, and that one persists.
#[test]
fn log_that_is_a_directory_is_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_path(dir.path());
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("keep.txt"), "mine").unwrap();
    let (store, report) = open(dir.path());
    let reason = report.rebuilt.clone().expect("a reason");
    assert!(reason.contains("store.log"), "{reason}");
    let aside = report.set_aside.clone().expect("set aside");
    assert_eq!(aside.parent(), Some(dir.path()));
    assert!(aside
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("store.unusable-")));
    assert_eq!(
        std::fs::read_to_string(aside.join("keep.txt")).unwrap(),
        "mine"
    );
    assert_eq!(report.log.as_deref(), Some(path.as_path()));
    ingest(&store, A, "* A\n");
    store.flush().unwrap();
    drop(store);
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_none() && report.set_aside.is_none());
    assert_eq!(titles(&store, A), ["A"]);
}

/// When no log can be opened at all (here the "state directory" is a file), the store still
/// opens, in memory, and says why.
#[test]
fn no_writable_log_leaves_a_working_store_in_memory() {
    let parent = tempfile::tempdir().unwrap();
    let not_a_dir = parent.path().join("state");
    std::fs::write(&not_a_dir, "a file, not a directory").unwrap();
    let (store, report) = open(&not_a_dir);
    assert!(report.rebuilt.is_some());
    assert_eq!(report.log, None);
    assert_eq!(report.set_aside, None);
    assert_eq!(store.stats().path, None);
    ingest(&store, A, "* A\n");
    assert_eq!(titles(&store, A), ["A"]);
    assert!(store.flush().is_ok());
    assert_eq!(
        std::fs::read_to_string(&not_a_dir).unwrap(),
        "a file, not a directory"
    );
}

/// Two directory ingests started together (a start on a corrupt store did this): when
/// either reports done, every file is in the store. Side by side, the one superseded on a
/// file reported it while the other was still parsing it.
#[test]
fn concurrent_directory_ingests_report_done_only_when_stored() {
    let org = tempfile::tempdir().unwrap();
    let files: Vec<String> = (0..60)
        .map(|i| {
            let f = path_in(org.path(), &format!("f{i:02}.org"));
            let text: String = (0..300).map(|j| format!("* H{i} {j}\nbody\n")).collect();
            std::fs::write(&f, text).unwrap();
            f
        })
        .collect();
    let dirs = vec![org.path().to_path_buf()];
    for round in 0..6 {
        let store = mem_store();
        let missing_at_done = |store: &Store| -> Vec<String> {
            let r = store.ingest_directories(&dirs, |_, _, _| {}, || false);
            assert!(r.errors.is_empty(), "{:?}", r.errors);
            files
                .iter()
                .filter(|f| nodes(store, f).len() != 301)
                .cloned()
                .collect()
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| missing_at_done(&store));
            let b = s.spawn(|| missing_at_done(&store));
            (a.join().unwrap(), b.join().unwrap())
        });
        assert!(
            a.is_empty() && b.is_empty(),
            "round {round}: reported done without {a:?} / {b:?}"
        );
    }
}

/// Makes a file immutable (`chattr +i`) for as long as it lives: even root can then neither
/// write it nor move it. `None` where the file system or the privileges do not allow it.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

/// A log that can be neither used nor moved aside: the store uses a fresh log beside it,
/// and finds it again at the next start.
#[test]
fn log_that_cannot_be_moved_leads_to_the_fallback_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = log_path(dir.path());
    std::fs::write(&path, "not a log, and stuck").unwrap();
    let Some(_stuck) = Immutable::set(&path) else {
        eprintln!("chattr +i is not available here: cannot make a log that cannot be moved");
        return;
    };
    let fallback = dir.path().join(org_agent::store::FALLBACK_LOG_NAME);
    {
        let (store, report) = open(dir.path());
        let reason = report.rebuilt.clone().expect("a reason");
        assert!(reason.contains("cannot be moved aside"), "{reason}");
        assert_eq!(report.set_aside, None);
        assert_eq!(report.log.as_deref(), Some(fallback.as_path()));
        ingest(&store, A, "* A\n");
        store.flush().unwrap();
    }
    let (store, report) = open(dir.path());
    assert!(report.rebuilt.is_some(), "store.log is still unusable");
    assert_eq!(report.log.as_deref(), Some(fallback.as_path()));
    assert_eq!(titles(&store, A), ["A"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "not a log, and stuck"
    );
}

/// Opening leaves the id index building on a thread of its own: readers and a commit made
/// at once, from several threads, all see the index the store had, and the commit's change.
#[test]
fn the_id_index_built_after_opening_is_the_one_the_store_had() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(dir.path());
    for f in 0..40 {
        let mut text = String::new();
        for h in 0..50 {
            // Every file repeats :ID: shared, so it has 40 places in store order.
            let id = if h == 0 {
                "shared".to_string()
            } else {
                format!("id-{f}-{h}")
            };
            text.push_str(&format!("* H{h}\n:PROPERTIES:\n:ID: {id}\n:END:\n"));
        }
        ingest(&store, &format!("/org/f{f:02}.org"), &text);
    }
    let expected: Vec<(String, Vec<(String, u32)>)> = id_places(&store.state());
    // 49 own ids a file, one shared, and the files themselves.
    assert_eq!(expected.len(), 40 * 49 + 1 + 40);
    // What the index is with one more file, built by commits, not by opening.
    let new_text = "* N\n:PROPERTIES:\n:ID: id-new\n:END:\n";
    ingest(&store, "/org/new.org", new_text);
    let with_new = id_places(&store.state());
    assert_eq!(with_new.len(), expected.len() + 2);
    store.remove_file("/org/new.org");
    assert!(id_places(&store.state()) == expected);
    store.flush().unwrap();
    drop(store);

    for round in 0..3 {
        let (store, _) = open(dir.path());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    // Before or after the commit racing it, never anything else.
                    let places = id_places(&store.state());
                    assert!(
                        places == expected || places == with_new,
                        "round {round}: {} ids",
                        places.len()
                    );
                    let shared = store.state().node("shared#40").expect("the 40th copy");
                    assert_eq!(&*shared.doc.path, "/org/f39.org");
                });
            }
            s.spawn(|| ingest(&store, "/org/new.org", new_text));
        });
        assert!(id_places(&store.state()) == with_new, "round {round}");
        drop(store);
        let (store, _) = open(dir.path());
        assert!(
            id_places(&store.state()) == with_new,
            "round {round}, reopened"
        );
        store.remove_file("/org/new.org");
        store.flush().unwrap();
    }
}

/// Each id with its places (file, node index), in id order.
fn id_places(state: &org_agent::store::State) -> Vec<(String, Vec<(String, u32)>)> {
    let mut ids: Vec<(String, Vec<(String, u32)>)> = state
        .ids_and_places()
        .map(|(id, locs)| {
            let places = locs.iter().map(|l| (l.file.to_string(), l.index)).collect();
            (id.to_string(), places)
        })
        .collect();
    ids.sort();
    ids
}

/// Records are applied on a thread of their own while later batches are decoded: a record
/// that cannot be applied is still the error reported, and nothing after it is applied, even
/// when a later batch cannot be decoded either.
#[test]
fn the_first_bad_record_is_reported_though_later_batches_are_decoded_meanwhile() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    let path = log_path(dir.path());
    let mut log = rec.log.clone();
    // A batch whose checksums are right but whose payload is not records.
    let payload = [0xffu8; 16];
    let mut header = b"OAB1".to_vec();
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let header_crc = crc32fast::hash(&header);
    log.extend_from_slice(&header);
    log.extend_from_slice(&header_crc.to_le_bytes());
    log.extend_from_slice(&payload);
    log.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    std::fs::write(&path, &log).unwrap();

    // Every batch its own group, so decoding runs ahead of applying.
    for stop_at in [0, 1, 3] {
        let mut applied = 0;
        let err = persist::load_in_groups(&path, 1, |_| {
            if applied == stop_at {
                return Err(format!("record {stop_at} is bad"));
            }
            applied += 1;
            Ok(())
        })
        .expect_err("a bad record");
        assert!(
            err.to_string()
                .contains(&format!("record {stop_at} is bad")),
            "{err}"
        );
        assert_eq!(applied, stop_at);
    }
    // With every record good, the undecodable batch is the error.
    let err = persist::load_in_groups(&path, 1, |_| Ok(())).expect_err("undecodable");
    assert!(err.to_string().contains("undecodable batch"), "{err}");
}

/// The `:ID:` value of `node`'s content, which must be the very allocation of its id.
fn id_value_is_the_id(node: &org_agent::store::Node) -> bool {
    node.content
        .properties
        .iter()
        .any(|(k, v)| &**k == "ID" && std::sync::Arc::ptr_eq(v, &node.id))
}

#[test]
fn ids_property_keys_and_unchanged_versions_are_held_once() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let text = |n: u32| {
        format!(
            "* One\n:PROPERTIES:\n:ID: id-one\n:created: [2024-01-01]\n:END:\n* Two {n}\n\
             :PROPERTIES:\n:ID: id-two\n:CREATED: [2024-01-02]\n:END:\n* Spaced\n\
             :PROPERTIES:\n:ID:   id-spaced  \n:END:\n"
        )
    };
    let (store, _) = open(dir.path());
    ingest(&store, A, &text(1));
    let first = store.node("id-one").unwrap().node().content.clone();
    ingest(&store, A, &text(2));
    let check = |store: &Store, what: &str| {
        let one = store.node("id-one").unwrap();
        let two = store.node("id-two").unwrap();
        for node in [one.node(), two.node()] {
            assert!(id_value_is_the_id(node), "{what}: {}", node.id);
        }
        // Keys are upcased and shared, whatever case the drawer used. (Loading shares them per
        // decoding thread, and the two commits may be decoded on two.)
        let key = |n: &org_agent::store::Node, at: usize| n.content.properties[at].0.clone();
        assert_eq!(&*key(one.node(), 1), "CREATED");
        assert_eq!(key(one.node(), 1), key(two.node(), 1));
        if what == "ingested" {
            assert!(Arc::ptr_eq(&key(one.node(), 1), &key(two.node(), 1)));
            assert!(Arc::ptr_eq(&key(one.node(), 0), &key(two.node(), 0)));
        }
        // The history holds the same id and versions as the nodes.
        let history = store.history("id-two");
        assert_eq!(history.len(), 2, "{what}");
        assert!(
            Arc::ptr_eq(&history[1].content, &two.node().content),
            "{what}"
        );
        // A value with blanks around it is trimmed for the id, and kept as written.
        let spaced = store.node("id-spaced").unwrap();
        assert_eq!(spaced.node().content.property("ID"), Some("id-spaced"));
    };
    check(&store, "ingested");
    // Re-ingesting kept the unchanged headline's stored version rather than a copy.
    assert!(Arc::ptr_eq(
        &first,
        &store.node("id-one").unwrap().node().content
    ));
    assert!(Arc::ptr_eq(
        &store.history("id-one")[0].content,
        &store.node("id-one").unwrap().node().content
    ));
    // Each version of id-two shares its id as compaction writes them (each history's
    // versions and entries together, then the file). Replayed as committed, the second
    // version is read a commit after the first entry, and shares its id with the node:
    // the history, built after the open, keys the id by the first. (So an id changed since
    // the log was last compacted may hold its text more than once: at most once a commit.)
    let versions_share_the_id = |store: &Store, what: &str, all: bool| {
        let id = store.node("id-two").unwrap().node().id.clone();
        let history = store.history("id-two");
        for (i, version) in history.iter().enumerate() {
            let value = version.content.properties[0].1.clone();
            assert_eq!(*value, *id, "{what}");
            if all || i + 1 == history.len() {
                assert!(Arc::ptr_eq(&value, &id), "{what}: version {i}");
            }
        }
    };
    let store = reopen(store, dir.path(), "reopened");
    check(&store, "reopened");
    versions_share_the_id(&store, "reopened", false);
    store.compact().expect("compacts");
    let store = reopen(store, dir.path(), "compacted");
    check(&store, "compacted");
    versions_share_the_id(&store, "compacted", true);
}

/// Nodes keep no list of children: the children of a node are read from the order of the
/// file's nodes and their parents. A file record whose nodes are not an outline in document
/// order (a log written by something else) would give wrong children, so it is refused and
/// the store is rebuilt from the Org files, as for any bad record.
#[test]
fn a_file_record_that_is_not_an_outline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = "* a\n** b\n* c\n** d\n";
    let (store, _) = open(dir.path());
    ingest(&store, A, text);
    let state = store.state();
    let doc = state.files.get(A).expect("ingested").clone();
    let children = |doc: &org_agent::store::FileDoc| -> Vec<Vec<u32>> {
        (0..doc.nodes.len() as u32)
            .map(|i| doc.children(i).collect())
            .collect()
    };
    let want = vec![vec![1, 3], vec![2], vec![], vec![4], vec![]];
    assert_eq!(children(&doc), want);
    let store = reopen(store, dir.path(), "as ingested");
    assert_eq!(
        children(store.state().files.get(A).expect("reopened")),
        want
    );
    drop(store);

    // The record the store wrote, again, with `d` under `a`, which it does not follow.
    let mut written = None;
    persist::load(&log_path(dir.path()), |records| {
        for r in records {
            if let persist::Record::File(persist::FileEntry::Read(rec)) = r {
                written = Some(rec);
            }
        }
        Ok(())
    })
    .expect("the log reads");
    let mut record = written.expect("the file's record");
    assert_eq!(record.nodes[4].parent, Some(3));
    record.nodes[4].parent = Some(1);
    let mut log = std::fs::read(log_path(dir.path())).unwrap();
    log.extend(persist::encode_batch(&[persist::Record::File(
        persist::FileEntry::Read(record),
    )]));
    std::fs::write(log_path(dir.path()), &log).unwrap();
    let (store, report) = open(dir.path());
    let reason = report.rebuilt.expect("the record is refused");
    assert!(
        reason.contains("not an outline in document order") && reason.contains(A),
        "{reason}"
    );
    assert_eq!(store.stats().files, 0);
    ingest(&store, A, text);
    assert_eq!(children(store.state().files.get(A).expect("rebuilt")), want);
}

/// Where each batch of `log` starts and ends.
fn batch_spans(log: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 16;
    while at + 12 <= log.len() {
        let len = u32::from_le_bytes(log[at + 4..at + 8].try_into().unwrap()) as usize;
        let end = at + 12 + len + 4;
        spans.push((at, end));
        at = end;
    }
    assert_eq!(at, log.len(), "whole batches");
    spans
}

/// `log` with the payload byte at `off` changed by `mask` and its batch's checksum
/// recomputed, so that only what the payload means can show the change.
fn forge(log: &[u8], off: usize, mask: u8) -> Vec<u8> {
    let (start, end) = batch_spans(log)
        .into_iter()
        .find(|&(s, e)| s + 12 <= off && off < e - 4)
        .unwrap_or_else(|| panic!("byte {off} is in no payload"));
    let mut forged = log.to_vec();
    forged[off] ^= mask;
    let crc = crc32fast::hash(&forged[start + 12..end - 4]);
    forged[end - 4..end].copy_from_slice(&crc.to_le_bytes());
    forged
}

/// Open `dir`, whose log is damaged: the damage is reported, the log (`log`, unchanged) is
/// set aside, the store opens empty, and re-ingesting the Org files of `rec` gives back the
/// final state, which then reopens cleanly. Returns the reason given.
fn assert_rebuilt(dir: &Path, rec: &Recorded, log: &[u8], what: &str) -> String {
    let final_files = {
        let clean = tempfile::tempdir().unwrap();
        std::fs::write(log_path(clean.path()), &rec.log).unwrap();
        files_fp(&open(clean.path()).0.state())
    };
    let (store, report) = open(dir);
    let reason = report
        .rebuilt
        .clone()
        .unwrap_or_else(|| panic!("{what}: the damage is not reported"));
    assert!(!report.torn_tail, "{what}");
    assert_eq!((report.files, report.nodes), (0, 0), "{what}");
    assert_eq!(store.stats().files, 0, "{what}: the store opens empty");
    let aside = corrupt_files(dir);
    assert_eq!(aside.len(), 1, "{what}: the damaged log is set aside");
    assert_eq!(
        std::fs::read(&aside[0]).unwrap(),
        log,
        "{what}: set aside unchanged"
    );
    assert_eq!(report.set_aside.as_deref(), Some(&*aside[0]), "{what}");
    for (file, text) in &rec.final_texts {
        ingest(&store, file, text);
    }
    assert_eq!(files_fp(&store.state()), final_files, "{what}: rebuilt");
    reopen(store, dir, &format!("{what}, rebuilt"));
    reason
}

/// A crash tears only the batch being written. A log that stops short of what its seal
/// says was committed was cut: at half its length, at zero bytes, on any batch boundary
/// (a well-formed shorter log) or inside an earlier batch, it is damage, not a torn tail.
#[test]
fn a_log_cut_short_of_its_seal_is_damage_set_aside_and_rebuilt() {
    let rec = record_commits();
    let seal = rec.seals.last().unwrap();
    let len = rec.log.len();
    let mut cuts = vec![0, 8, len / 2, len - 1];
    // Every batch boundary before the end, the bare file magic (16) among them.
    cuts.extend(
        rec.prefixes[..rec.prefixes.len() - 1]
            .iter()
            .map(|(b, _)| *b as usize),
    );
    for cut in cuts {
        let dir = tempfile::tempdir().unwrap();
        let log = &rec.log[..cut];
        std::fs::write(log_path(dir.path()), log).unwrap();
        std::fs::write(seal_path(dir.path()), seal).unwrap();
        let reason = assert_rebuilt(dir.path(), &rec, log, &format!("cut at {cut} of {len}"));
        assert!(
            reason.contains("cut, not torn by a crash"),
            "cut at {cut}: {reason}"
        );
        // The seal went aside with its log; the new log has its own.
        let seals_aside: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("store.log.corrupt-"))
            })
            .map(|p| std::fs::read(p).unwrap())
            .collect();
        assert_eq!(seals_aside, std::slice::from_ref(seal), "cut at {cut}");
    }
}

/// The log gone and its seal left: what was committed is lost, which is damage too. The
/// whole state directory gone is a fresh start.
#[test]
fn a_lost_log_beside_its_seal_is_damage_and_a_removed_state_directory_a_fresh_start() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(seal_path(dir.path()), rec.seals.last().unwrap()).unwrap();
    let (store, report) = open(dir.path());
    let reason = report.rebuilt.expect("a lost log is reported");
    assert!(reason.contains("cut, not torn"), "{reason}");
    let aside = report.set_aside.expect("the seal is set aside");
    assert_eq!(std::fs::read(&aside).unwrap(), *rec.seals.last().unwrap());
    assert_eq!(store.stats().files, 0);
    ingest(&store, A, "* A\n");
    reopen(store, dir.path(), "after the lost log");

    let state = tempfile::tempdir().unwrap();
    let gone = state.path().join("state");
    {
        let (store, _) = open(&gone);
        ingest(&store, A, "* A\n");
        store.flush().unwrap();
    }
    std::fs::remove_dir_all(&gone).unwrap();
    let (store, report) = open(&gone);
    assert!(report.rebuilt.is_none(), "{:?}", report.rebuilt);
    assert!(report.set_aside.is_none() && !report.torn_tail);
    assert_eq!(store.stats().files, 0);
}

/// The log may run ahead of its seal (a crash after a batch was synced, before the seal
/// was replaced): a batch torn after the sealed length, partly written or zero-filled, is
/// still a torn tail, dropped quietly; a whole one is kept and sealed.
#[test]
fn a_torn_write_after_the_seal_is_still_a_quiet_torn_tail() {
    let rec = record_commits();
    let n = rec.prefixes.len();
    let (sealed_len, sealed_state) = &rec.prefixes[n - 2];
    let sealed_len = *sealed_len as usize;
    let older_seal = &rec.seals[n - 2];
    let partial = rec.log[..rec.log.len() - 7].to_vec();
    let mut zero_filled = rec.log.clone();
    zero_filled[sealed_len + 12..].fill(0);
    let mut zeros_after = rec.log[..sealed_len].to_vec();
    zeros_after.extend_from_slice(&[0; 4096]);
    for (what, log) in [
        ("partial", &partial),
        ("zero-filled payload", &zero_filled),
        ("zeros after the sealed batches", &zeros_after),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), log).unwrap();
        std::fs::write(seal_path(dir.path()), older_seal).unwrap();
        let (store, report) = open(dir.path());
        assert!(report.rebuilt.is_none(), "{what}: {:?}", report.rebuilt);
        assert!(report.torn_tail, "{what}");
        assert_eq!(&store_fp(&store), sealed_state, "{what}");
        assert_eq!(log_len(dir.path()), sealed_len as u64, "{what}: cut off");
        assert!(corrupt_files(dir.path()).is_empty(), "{what}");
        ingest(&store, "/org/after.org", "* After crash\n");
        reopen(store, dir.path(), &format!("{what}, after a new commit"));
    }
    // The whole last batch is there: the log is ahead of its seal, which catches up.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &rec.log).unwrap();
    std::fs::write(seal_path(dir.path()), older_seal).unwrap();
    let store = reopen_clean(dir.path(), "a log ahead of its seal");
    assert_eq!(&store_fp(&store), &rec.prefixes[n - 1].1);
    assert_eq!(
        &std::fs::read(seal_path(dir.path())).unwrap(),
        rec.seals.last().unwrap()
    );
    // But the same torn batch when the seal says it was committed is damage.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &partial).unwrap();
    std::fs::write(seal_path(dir.path()), rec.seals.last().unwrap()).unwrap();
    assert_rebuilt(dir.path(), &rec, &partial, "a committed batch torn");
}

/// Open `dir`, which must open with no damage and no torn tail.
fn reopen_clean(dir: &Path, what: &str) -> Store {
    let (store, report) = open(dir);
    assert!(report.rebuilt.is_none(), "{what}: {:?}", report.rebuilt);
    assert!(!report.torn_tail, "{what}: torn tail");
    store
}

/// A store from before seals (or whose seal was lost) opens as it is, and is sealed.
#[test]
fn an_old_store_without_a_seal_opens_cleanly_and_is_sealed() {
    let rec = record_commits();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &rec.log).unwrap();
    assert!(!seal_path(dir.path()).exists());
    let store = reopen_clean(dir.path(), "no seal");
    assert_eq!(&store_fp(&store), &rec.prefixes.last().unwrap().1);
    assert_eq!(
        &std::fs::read(seal_path(dir.path())).unwrap(),
        rec.seals.last().unwrap()
    );
    drop(store);
    // Sealed now: cut on a batch boundary, it is damage.
    let cut = &rec.log[..rec.prefixes[2].0 as usize];
    std::fs::write(log_path(dir.path()), cut).unwrap();
    assert_rebuilt(dir.path(), &rec, cut, "cut after sealing");
}

/// A seal that does not read back (it is replaced atomically, so no crash leaves one torn)
/// is damage: the log cannot be vouched for.
#[test]
fn an_unreadable_seal_is_damage() {
    let rec = record_commits();
    for seal in [&b""[..], b"OASEAL1\n garbage"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), &rec.log).unwrap();
        std::fs::write(seal_path(dir.path()), seal).unwrap();
        let reason = assert_rebuilt(dir.path(), &rec, &rec.log, "a bad seal");
        assert!(reason.contains("seal"), "{reason}");
    }
}

/// One payload byte forged, the batch's checksum recomputed to match: with the seal, any
/// byte anywhere (every byte of one batch, and bytes across the log) is damage, since the
/// seal chains every batch's checksum.
#[test]
fn forged_payload_bytes_with_checksums_recomputed_are_damage() {
    let rec = record_commits();
    let spans = batch_spans(&rec.log);
    // The batch removing B: small, so every byte of it is tried.
    let (start, end) = spans[4];
    let mut offsets: Vec<usize> = (start + 12..end - 4).collect();
    let mut rng = Rng::new(0xf0_12ed);
    for _ in 0..12 {
        let (s, e) = spans[rng.below(spans.len() as u64) as usize];
        offsets.push(s + 12 + rng.below((e - s - 16) as u64) as usize);
    }
    for off in offsets {
        let forged = forge(&rec.log, off, 0x20);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), &forged).unwrap();
        std::fs::write(seal_path(dir.path()), rec.seals.last().unwrap()).unwrap();
        let (_, report) = open(dir.path());
        assert!(report.rebuilt.is_some(), "forged byte {off}: not reported");
        assert_eq!(corrupt_files(dir.path()).len(), 1, "forged byte {off}");
    }
}

/// Without a seal (a store from before seals), a forged byte of a node version still shows:
/// every version must hash to the hash it is stored by, and each file's outline must have
/// the children its versions were hashed with. Titles, bodies, tags, properties,
/// planning and child hashes, each at a different offset.
#[test]
fn forged_node_versions_are_damage_without_a_seal() {
    let rec = record_commits();
    let find = |needle: &[u8], nth: usize| {
        rec.log
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle)
            .map(|(i, _)| i)
            .nth(nth)
            .unwrap_or_else(|| panic!("{:?} in the log", String::from_utf8_lossy(needle)))
    };
    let mut offsets = vec![
        find(b"Task 0", 0) + 5,
        find(b"Task 1", 0),
        find(b"body \xc3\xa9 0", 0) + 2,
        find(b"body \xc3\xa9 2", 0) + 8,
        find(b"work", 0),
        find(b"EMPTY", 0) + 1,
        find(b"2024-01-0", 0) + 3,
        find(b"Bee", 0),
        find(b"words", 0),
        find(b"more words", 0),
        find(b"Sea", 0) + 2,
        find(b"H17", 0),
        find(b"line 199", 0) + 7,
        find(b"Deep", 0),
    ];
    // A child hash inside its parent's version, and the hash a version is stored by.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(log_path(dir.path()), &rec.log).unwrap();
    let (store, _) = open(dir.path());
    let sub = by_title(&store, A, "Sub").node().hash();
    offsets.push(find(&sub.0, 0) + 31);
    offsets.push(find(&sub.0, 1) + 3);
    drop(store);
    for (i, off) in offsets.iter().enumerate() {
        for (j, earlier) in offsets[..i].iter().enumerate() {
            assert_ne!(off, earlier, "offsets {i} and {j} differ");
        }
        let forged = forge(&rec.log, *off, 0x01);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(log_path(dir.path()), &forged).unwrap();
        let reason = assert_rebuilt(dir.path(), &rec, &forged, &format!("forged byte {off}"));
        assert!(
            [
                "does not hash to it",
                "other children",
                "unknown node version"
            ]
            .iter()
            .any(|r| reason.contains(r)),
            "forged byte {off}: {reason}"
        );
    }
}

/// Compaction replaces the log and its seal together: the seal accepts the new log, and
/// while it renames, either. After it, the new log cut short is damage.
#[test]
fn compaction_reseals_the_log() {
    use org_agent::store::seal::{self, Seal};
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(dir.path());
        for i in 0..80 {
            ingest(&store, A, &text_a(i));
        }
        store.flush().unwrap();
    }
    let old_log = std::fs::read(log_path(dir.path())).unwrap();
    let old = persist::load(&log_path(dir.path()), |_| Ok(()))
        .unwrap()
        .tally;
    // Opening compacts it.
    let store = reopen_clean(dir.path(), "compacting");
    store.flush().unwrap();
    let fp = store_fp(&store);
    drop(store);
    let new_log = std::fs::read(log_path(dir.path())).unwrap();
    assert!(new_log.len() < old_log.len());
    let new = persist::load(&log_path(dir.path()), |_| Ok(()))
        .unwrap()
        .tally;
    let store = reopen_clean(dir.path(), "after compaction");
    assert_eq!(store_fp(&store), fp);
    drop(store);
    // A crash while the new log was renamed in: the seal accepts the one or the other.
    let either = Seal {
        committed: old,
        or: Some(new),
    };
    for log in [&old_log, &new_log] {
        std::fs::write(log_path(dir.path()), log).unwrap();
        seal::write(&log_path(dir.path()), &either).unwrap();
        let store = reopen_clean(dir.path(), "a crash during compaction");
        drop(store);
    }
    std::fs::write(log_path(dir.path()), &new_log).unwrap();
    seal::write(&log_path(dir.path()), &Seal::at(new)).unwrap();
    let cut = &new_log[..new_log.len() / 2];
    std::fs::write(log_path(dir.path()), cut).unwrap();
    let (_, report) = open(dir.path());
    assert!(report.rebuilt.is_some_and(|r| r.contains("cut")));
}
