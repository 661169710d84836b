//! Org text into the store: a buffer's text, a file from disk, every Org file under some
//! directories (parsed in parallel, committed in groups). An unchanged text or file is not
//! parsed again; an ingest superseded by a newer one of its file is not stored. Reading and
//! parsing happen outside the commit lock; only linking the documents in holds it.

use super::error::{Result, StoreError};
use super::file_doc::{settings_digest, text_digest, FileDoc};
use super::ids::IdChanges;
use super::memory::release_freed_memory;
use super::persist::{FileEntry, Record};
use super::state::IdUpdates;
use super::todo::TodoKeywords;
use super::{filename, now, parse, text, Store};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// What one ingest did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IngestReport {
    pub file: String,
    pub nodes: usize,
    /// False when the text was the same as what the store had (nothing written).
    pub changed: bool,
    pub new_versions: usize,
}

impl IngestReport {
    fn unchanged(file: &str, nodes: usize) -> IngestReport {
        IngestReport {
            file: file.to_string(),
            nodes,
            changed: false,
            new_versions: 0,
        }
    }

    /// The report of an ingest not stored: a newer ingest or a removal of the file was
    /// requested while it was read, and that one decides what the store holds.
    fn superseded(file: &str) -> IngestReport {
        IngestReport::unchanged(file, 0)
    }
}

/// A directory ingest commits the files a worker parsed once they hold this many nodes
/// (or [`COMMIT_GROUP_FILES`] files): few enough that a group's documents wait in memory
/// only briefly, and that the last group, committed after all parsing, adds little. At
/// 16,384 the memex's directory ingest took a fifth longer.
pub(super) const COMMIT_GROUP_NODES: usize = 4096;
pub(super) const COMMIT_GROUP_FILES: usize = 256;

/// An ingest read and parsed, before its commit.
pub(super) enum Prepared {
    /// The store has this text (or file) already.
    Unchanged(IngestReport),
    Parsed(Parsed),
}

/// A file's new document, to commit unless a newer ingest of the file was requested since
/// `generation` was taken.
pub(super) struct Parsed {
    pub(super) doc: Arc<FileDoc>,
    pub(super) generation: Option<u64>,
    /// Whether storing it supersedes the ingests of the file read before (as one without
    /// a generation always does): a reconcile's read of the disk is newer than theirs.
    pub(super) supersede: bool,
}

pub(super) fn file_meta(path: &Path) -> std::io::Result<(i64, u64)> {
    let md = std::fs::metadata(path)?;
    let mtime = md
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    Ok((mtime, md.len()))
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirReport {
    pub files: usize,
    pub ingested: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub nodes: usize,
    /// Versions the ingest added to the store: their bodies are in memory (see
    /// [`Store::reload_from_log`]).
    pub new_versions: usize,
    pub errors: Vec<String>,
    pub cancelled: bool,
}

impl Store {
    /// Ingest `text` as the contents of `file`. `todo` is the keyword set Org computed for the
    /// buffer, if the text comes from one. With a `generation`, the result is dropped (and
    /// `None` returned) when a newer ingest of the same file was requested meanwhile.
    pub fn ingest_text(
        &self,
        file: &str,
        text: &str,
        todo: Option<&TodoKeywords>,
        meta: Option<(i64, u64)>,
        generation: Option<u64>,
    ) -> Result<Option<IngestReport>> {
        match self.prepare_text(file, text, todo, meta, generation)? {
            Prepared::Unchanged(report) => Ok(Some(report)),
            Prepared::Parsed(parsed) => Ok(self
                .commit_parsed(vec![parsed], IdUpdates::Apply)
                .pop()
                .flatten()),
        }
    }

    /// `text` parsed as the new contents of `file`, to commit; or the report of a file whose
    /// text and settings are what the store has.
    pub(super) fn prepare_text(
        &self,
        file: &str,
        text: &str,
        todo: Option<&TodoKeywords>,
        meta: Option<(i64, u64)>,
        generation: Option<u64>,
    ) -> Result<Prepared> {
        let config = self.config();
        let settings = settings_digest(todo, &config);
        let digest = text_digest(text, &settings);
        let path: Arc<str> = Arc::from(file);
        if let Some(old) = self.state().files.get(&path) {
            if old.text_hash == digest && meta.is_none_or(|m| (old.mtime, old.size) == m) {
                return Ok(Prepared::Unchanged(IngestReport::unchanged(
                    file,
                    old.nodes.len(),
                )));
            }
        }
        let opts = parse::ParseOptions {
            todo,
            default_todo: &config.default_todo,
            dialect: config.dialect,
            no_inherit_tags: &config.no_inherit_tags,
            inlinetask_min_level: config.inlinetask_min_level,
        };
        let mut parsed = parse::parse(text, &filename::to_path(file), &opts)?;
        self.archive.lock().share_with(&mut parsed.nodes);
        let (mtime, size) = meta.unwrap_or((0, text.len() as u64));
        let doc = Arc::new(FileDoc::new(
            path,
            mtime,
            size,
            digest,
            settings,
            parsed.file_tags,
            parsed.nodes,
        ));
        Ok(Prepared::Parsed(Parsed {
            doc,
            generation,
            supersede: false,
        }))
    }

    /// Store parsed files in one commit: one change of the state and one log batch for all
    /// of them. Each gets its report, or `None` when a newer ingest (or removal) of its file
    /// was requested since it was read. Each file is in `parsed` at most once.
    ///
    /// The current state changes only under the commit lock, held here. So the versions,
    /// the history and what each document changes in the id index are worked out against
    /// it first, with no lock readers take; readers then wait only for the changes to be
    /// applied, and the documents replaced are freed after. `ids` says how the id index
    /// follows.
    pub(super) fn commit_parsed(
        &self,
        parsed: Vec<Parsed>,
        ids: IdUpdates,
    ) -> Vec<Option<IngestReport>> {
        let guard = self.commit_lock.lock();
        let time = now();
        let mut reports = Vec::with_capacity(parsed.len());
        let mut records = Vec::new();
        let mut links = Vec::with_capacity(parsed.len());
        let current = self.state();
        for Parsed {
            doc,
            generation,
            supersede,
        } in parsed
        {
            if !self.is_latest(&doc.path, generation) {
                reports.push(None);
                continue;
            }
            if generation.is_none() || supersede {
                // Stored now, so an ingest of the file read before is superseded by it.
                self.reserve_generation(&doc.path);
            }
            debug_assert!(
                links
                    .iter()
                    .all(|(_, d): &(IdChanges, Arc<FileDoc>)| d.path != doc.path),
                "{} twice in one commit",
                doc.path
            );
            let old = current.files.get(&doc.path).map(|d| &**d);
            let new_versions = {
                let mut archive = self.archive.lock();
                let before = archive.versions.len();
                archive.add(&doc, old, time, &mut records);
                archive.versions.len() - before
            };
            reports.push(Some(IngestReport {
                file: doc.path.to_string(),
                nodes: doc.nodes.len(),
                changed: true,
                new_versions,
            }));
            records.push(Record::File(FileEntry::Doc(doc.clone())));
            links.push((IdChanges::between(old, &doc), doc));
        }
        let (gone, new) = links.iter().fold((0, 0), |(gone, new), (changes, _)| {
            (gone + changes.gone.len(), new + changes.new.len())
        });
        let resized_ids = current.ids_resized_for(gone, new);
        // Held here, the state would be copied rather than changed in place.
        drop(current);
        if links.is_empty() {
            return reports;
        }
        let warm = self.to_warm(links.iter().map(|(_, doc)| doc));
        let replaced = self.change_in_place(ids, |state| {
            let ids_replaced = resized_ids.map(|resized| state.set_ids(resized));
            let links = links.into_iter();
            let docs_replaced: Vec<Option<Arc<FileDoc>>> = links
                .map(|(changes, doc)| state.link_file_updating(doc, changes, ids))
                .collect();
            (docs_replaced, ids_replaced)
        });
        let commit = self.commit(records);
        drop(guard);
        commit.write();
        drop(replaced);
        self.warm_committed(warm);
        reports
    }

    /// `text` parsed as the contents of `file` with the store's settings, without storing it
    /// (to look at a buffer's nodes, e.g. to leave out its private subtrees).
    pub fn parse_unstored(&self, file: &str, text: &str) -> Result<Arc<FileDoc>> {
        let config = self.config();
        let settings = settings_digest(None, &config);
        let opts = parse::ParseOptions {
            todo: None,
            default_todo: &config.default_todo,
            dialect: config.dialect,
            no_inherit_tags: &config.no_inherit_tags,
            inlinetask_min_level: config.inlinetask_min_level,
        };
        let parsed = parse::parse(text, &filename::to_path(file), &opts)?;
        Ok(Arc::new(FileDoc::new(
            Arc::from(file),
            0,
            text.len() as u64,
            text_digest(text, &settings),
            settings,
            parsed.file_tags,
            parsed.nodes,
        )))
    }

    /// Ingest a file from disk. Unchanged files (same mtime and size as stored) are not read
    /// again unless `force`. A file that no longer exists leaves the store.
    pub fn ingest_file(&self, file: &str, force: bool) -> Result<IngestReport> {
        Ok(match self.prepare_file(file, force)? {
            Prepared::Unchanged(report) => report,
            Prepared::Parsed(parsed) => self
                .commit_parsed(vec![parsed], IdUpdates::Apply)
                .pop()
                .flatten()
                .unwrap_or_else(|| IngestReport::superseded(file)),
        })
    }

    /// Ingest `file` as Emacs just wrote a buffer to it (`written`), with the buffer's `todo`
    /// keywords: the text stored is the buffer's, read back from disk off the thread that
    /// saved it. `generation` was reserved when the save happened, so of racing saves the
    /// newest is stored; `None` when a newer ingest of the file was asked for meanwhile.
    pub fn ingest_saved(
        &self,
        file: &str,
        written: text::Written,
        todo: Option<&TodoKeywords>,
        generation: u64,
    ) -> Result<Option<IngestReport>> {
        let path = &filename::to_path(file);
        let read = |source: std::io::Error| StoreError::Read {
            file: path.to_path_buf(),
            source,
        };
        // Taken before the read: a write after it makes the next reconcile read again.
        let meta = file_meta(path).map_err(read)?;
        let bytes = std::fs::read(path).map_err(read)?;
        let text = text::from_emacs_written(bytes, written);
        self.ingest_text(file, &text, todo, Some(meta), Some(generation))
    }

    /// A file from disk, read and parsed to commit (see [`Store::ingest_file`]).
    fn prepare_file(&self, file: &str, force: bool) -> Result<Prepared> {
        let path = &filename::to_path(file);
        let meta = match file_meta(path) {
            Ok(m) => m,
            Err(source) => {
                if source.kind() == std::io::ErrorKind::NotFound {
                    self.remove_file(file);
                }
                return Err(StoreError::Read {
                    file: path.to_path_buf(),
                    source,
                });
            }
        };
        if !force {
            let settings = settings_digest(None, &self.config());
            if let Some(old) = self.state().files.get(file) {
                if (old.mtime, old.size) == meta && old.settings == settings {
                    return Ok(Prepared::Unchanged(IngestReport::unchanged(
                        file,
                        old.nodes.len(),
                    )));
                }
            }
        }
        // Reserved before the read, not after: a reconcile that read the file later and
        // stored it supersedes this read then, instead of this older text replacing it.
        let gen = self.reserve_generation(file);
        let bytes = std::fs::read(path).map_err(|source| StoreError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        let text = text::decode_owned(bytes);
        self.prepare_text(file, &text, None, Some(meta), Some(gen))
    }

    /// Drop a file from the store. Returns whether it was there. An ingest of the file read
    /// before is superseded: its result is not stored.
    pub fn remove_file(&self, file: &str) -> bool {
        self.remove_file_if_latest(file, None)
    }

    /// [`Store::remove_file`], unless an ingest or removal of `file` was requested since
    /// `generation` was observed (see [`Store::observed_generation`]).
    pub(super) fn remove_file_if_latest(&self, file: &str, generation: Option<u64>) -> bool {
        let guard = self.commit_lock.lock();
        if !self.is_latest(file, generation) {
            return false;
        }
        self.reserve_generation(file);
        let mut state = (*self.state()).clone();
        let removed = state.remove_file(&Arc::from(file));
        if removed {
            let commit = self.publish(state, vec![Record::RemoveFile(file.to_string())]);
            drop(guard);
            commit.write();
        }
        removed
    }

    /// The `.org` files under `dirs` (hidden directories and Emacs lock/backup files skipped),
    /// sorted.
    pub fn org_files_under(dirs: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack: Vec<PathBuf> = dirs.to_vec();
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with('.') || name.starts_with('#') {
                    continue;
                }
                let Ok(ft) = entry.file_type() else { continue };
                let path = entry.path();
                if ft.is_dir() {
                    stack.push(path);
                } else if name.ends_with(".org") && (ft.is_file() || path.is_file()) {
                    out.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Have an id index that a first directory ingest left to its first reader built now,
    /// on a thread of its own, rather than on a reader's first lookup (on Emacs's main
    /// thread, perhaps): for when no reload from the log follows to build it. Nothing when
    /// it is ready or being built.
    pub(super) fn build_id_index_now_in_background(&self) {
        self.state().build_ids_now_in_background();
    }

    /// Ingest every Org file under `dirs`, skipping unchanged ones, and drop files under
    /// those directories that are gone. `progress` is called after each file.
    ///
    /// Directory ingests run one after the other. Side by side, both read and parsed each
    /// file, the first to start on it was superseded by the other's newer generation, and
    /// could report the file done before the other had stored it. One after the other, the
    /// second finds what the first stored unchanged, so done means every file is stored.
    pub fn ingest_directories(
        &self,
        dirs: &[PathBuf],
        progress: impl FnMut(usize, usize, &str) + Send,
        cancelled: impl Fn() -> bool + Sync,
    ) -> DirReport {
        let _one_at_a_time = self.directory_ingest.lock();
        let files = Store::org_files_under(dirs);
        let report = DirReport {
            files: files.len(),
            ..DirReport::default()
        };
        // A first ingest (or one of far more files than are stored) adds most of the ids
        // the store will hold: the index is left to its first reader (see `IdUpdates`).
        let ids = match self.state().files.len() * 2 < files.len() {
            true => IdUpdates::WhenRead,
            false => IdUpdates::Apply,
        };
        // Files are parsed in parallel (commits stay serialised by `commit_lock`), one
        // thread per core: reading and parsing dominate a first ingest.
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 4)
            .min(files.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let shared = Mutex::new((report, 0usize, progress));
        let tally = |results: Vec<(String, Result<IngestReport>)>| {
            let mut guard = shared.lock();
            let (report, done, progress) = &mut *guard;
            for (name, result) in results {
                match result {
                    Ok(r) if r.changed => {
                        report.ingested += 1;
                        report.nodes += r.nodes;
                        report.new_versions += r.new_versions;
                    }
                    Ok(r) => {
                        report.unchanged += 1;
                        report.nodes += r.nodes;
                    }
                    Err(e) => report.errors.push(e.to_string()),
                }
                *done += 1;
                progress(*done, files.len(), &name);
            }
        };
        // Each worker commits the files it parsed in groups: one log batch, one wake-up of
        // the writer and one fdatasync per group, not per file. For a directory of small
        // files that was a third of the ingest.
        let commit_group = |group: &mut Vec<Parsed>| {
            if group.is_empty() {
                return;
            }
            let names: Vec<String> = group.iter().map(|p| p.doc.path.to_string()).collect();
            let stored = self.commit_parsed(std::mem::take(group), ids);
            let results = names
                .into_iter()
                .zip(stored)
                .map(|(name, stored)| {
                    let report = stored.unwrap_or_else(|| IngestReport::superseded(&name));
                    (name, Ok(report))
                })
                .collect();
            tally(results);
        };
        std::thread::scope(|scope| {
            let work = || {
                let mut group: Vec<Parsed> = Vec::new();
                let mut group_nodes = 0;
                loop {
                    if cancelled() {
                        shared.lock().0.cancelled = true;
                        break;
                    }
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(f) = files.get(i) else { break };
                    let name = filename::key(f);
                    match self.prepare_file(&name, false) {
                        Ok(Prepared::Parsed(parsed)) => {
                            group_nodes += parsed.doc.nodes.len();
                            group.push(parsed);
                            if group_nodes >= COMMIT_GROUP_NODES
                                || group.len() >= COMMIT_GROUP_FILES
                            {
                                commit_group(&mut group);
                                group_nodes = 0;
                            }
                        }
                        Ok(Prepared::Unchanged(r)) => tally(vec![(name.into_owned(), Ok(r))]),
                        Err(e) => tally(vec![(name.into_owned(), Err(e))]),
                    }
                }
                // What was parsed is stored, cancelled or not.
                commit_group(&mut group);
            };
            for _ in 1..workers {
                // Parsing recurses per headline level: the same stack as the runtime's workers.
                let spawned = std::thread::Builder::new()
                    .name("org-agent-ingest".into())
                    .stack_size(16 << 20)
                    .spawn_scoped(scope, move || {
                        // Only the threads started here: the calling thread may be any
                        // caller's (a test's, say), and keeps its own scheduling.
                        crate::start_module_thread();
                        work()
                    });
                if spawned.is_err() {
                    break;
                }
            }
            work();
        });
        // What parsing freed sits in the workers' pages, and the allocator hands pages back
        // only when their thread allocates again: the ingest threads are gone, and this one
        // may idle for hours. At 100k headlines that was 70 MB of resident memory nothing
        // used (+158 MB after a first ingest, +88 MB with this; `reload_from_log` then
        // leaves the bodies parsed in the log).
        release_freed_memory();
        let (mut report, _, _) = shared.into_inner();
        if ids == IdUpdates::WhenRead && !self.worth_reloading(report.new_versions) {
            // No reload follows to index the ids on a thread of its own.
            self.build_id_index_now_in_background();
        }
        if !report.cancelled {
            let found: std::collections::HashSet<String> = files
                .iter()
                .map(|f| filename::key(f).into_owned())
                .collect();
            let gone: Vec<String> = self
                .state()
                .files
                .keys()
                .filter(|p| {
                    let path = filename::to_path(p);
                    dirs.iter().any(|d| path.starts_with(d))
                })
                .filter(|p| !found.contains(&***p))
                .map(|p| p.to_string())
                .collect();
            for p in gone {
                if self.remove_file(&p) {
                    report.removed += 1;
                }
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::State;
    use crate::store::Config;

    /// `text` parsed for `file` under a generation of its own, as a directory ingest holds it.
    fn parsed(store: &Store, file: &str, text: &str) -> Parsed {
        let generation = store.reserve_generation(file);
        match store.prepare_text(file, text, None, None, Some(generation)) {
            Ok(Prepared::Parsed(p)) => p,
            Ok(Prepared::Unchanged(_)) => panic!("{file} is unchanged"),
            Err(e) => panic!("{file}: {e}"),
        }
    }

    fn titles(store: &Store, file: &str) -> Vec<String> {
        let state = store.state();
        let doc = state.files.get(file);
        let nodes = doc.map(|d| &d.nodes[1..]).unwrap_or_default();
        nodes.iter().map(|n| n.content.title.to_string()).collect()
    }

    #[test]
    fn a_group_stores_its_files_but_those_read_again_or_removed_since() {
        let store = Store::in_memory(Config::default());
        let kept = parsed(&store, "/a.org", "* A\n");
        let read_again = parsed(&store, "/b.org", "* B old\n");
        let removed = parsed(&store, "/c.org", "* C\n");
        store
            .ingest_text("/b.org", "* B new\n", None, None, None)
            .expect("ingest");
        store.remove_file("/c.org");
        let reports = store.commit_parsed(vec![kept, read_again, removed], IdUpdates::Apply);
        let stored: Vec<Option<&str>> = reports
            .iter()
            .map(|r| r.as_ref().map(|r| r.file.as_str()))
            .collect();
        assert_eq!(stored, [Some("/a.org"), None, None]);
        assert_eq!(titles(&store, "/a.org"), ["A"]);
        assert_eq!(titles(&store, "/b.org"), ["B new"]);
        assert!(titles(&store, "/c.org").is_empty());
        // The id index agrees with the files.
        let state = store.state();
        for (path, doc) in state.files.iter() {
            for (i, n) in doc.nodes.iter().enumerate() {
                let node = state.node(&n.id).expect("indexed");
                assert_eq!((&*node.doc.path, node.index), (&**path, i as u32));
            }
        }
        assert_eq!(
            state.ids_and_places().count(),
            4,
            "two file nodes and two headlines"
        );
    }

    /// Every node of every file is where the id index says, each id once per place.
    fn assert_ids_agree_with_files(state: &State) {
        state
            .check_id_index()
            .expect("the id index agrees with the files");
        for (path, doc) in state.files.iter() {
            for (i, n) in doc.nodes.iter().enumerate() {
                assert!(
                    state
                        .id_places(&n.id)
                        .any(|l| (&*l.file, l.index) == (&**path, i as u32)),
                    "{} at {path}:{i}",
                    n.id
                );
            }
        }
    }

    #[test]
    fn ids_left_to_their_first_reader_are_indexed_when_read_then_kept_up_to_date() {
        let store = Store::in_memory(Config::default());
        let a = parsed(
            &store,
            "/a.org",
            "* A
:PROPERTIES:
:ID: same
:END:
* A2
",
        );
        store.commit_parsed(vec![a], IdUpdates::WhenRead);
        assert!(!store.state().ids_ready(), "no reader has asked yet");
        let b = parsed(
            &store,
            "/b.org",
            "* B
:PROPERTIES:
:ID: same
:END:
",
        );
        store.commit_parsed(vec![b], IdUpdates::WhenRead);
        let state = store.state();
        assert!(!state.ids_ready());
        // The first reader builds it, from every file: the id both files carry has both
        // places, in (file, position) order.
        let places: Vec<(&str, u32)> = state
            .id_places("same")
            .map(|l| (&*l.file, l.index))
            .collect();
        assert_eq!(places, [("/a.org", 1), ("/b.org", 1)]);
        assert_ids_agree_with_files(&state);
        drop(state);
        // Built, it is kept up to date as commits come, whichever way they ask.
        let c = parsed(
            &store,
            "/c.org",
            "* C
:PROPERTIES:
:ID: c
:END:
",
        );
        store.commit_parsed(vec![c], IdUpdates::WhenRead);
        assert!(store.state().ids_ready());
        let a = parsed(
            &store,
            "/a.org",
            "* A moved
:PROPERTIES:
:ID: other
:END:
",
        );
        store.commit_parsed(vec![a], IdUpdates::Apply);
        let state = store.state();
        assert!(state.node("c").is_some());
        assert_eq!(state.id_places("same").count(), 1);
        assert_ids_agree_with_files(&state);
    }

    /// `files` Org files `n0.org`… in `dir`, each of `headlines` headlines `H{file}-{n}`
    /// with the `:ID:` `id-{file}-{n}`.
    fn write_files_with_ids(dir: &Path, files: usize, headlines: usize) {
        for f in 0..files {
            let text: String = (0..headlines)
                .map(|h| format!("* H{f}-{h}\n:PROPERTIES:\n:ID: id-{f}-{h}\n:END:\n"))
                .collect();
            std::fs::write(dir.join(format!("n{f}.org")), text).expect("write");
        }
    }

    #[test]
    fn a_first_directory_ingest_indexes_every_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_files_with_ids(dir.path(), 6, 20);
        let store = Store::in_memory(Config::default());
        let report = store.ingest_directories(&[dir.path().to_path_buf()], |_, _, _| {}, || false);
        assert_eq!(report.ingested, 6);
        let state = store.state();
        assert_ids_agree_with_files(&state);
        assert_eq!(
            state.ids_and_places().count(),
            6 + 6 * 20,
            "each file node and each headline"
        );
        let node = state.node("id-3-7").expect("found");
        assert_eq!(&*node.node().content.title, "H3-7");
    }

    /// A first ingest big enough to be reloaded leaves its id index to the reload; when the
    /// reload cannot be done (here, a snapshot holds the state before), the index is built
    /// on a thread of its own, not left to the first lookup.
    #[test]
    fn an_id_index_left_for_a_reload_that_is_refused_is_built_in_the_background() {
        let org = tempfile::tempdir().expect("tempdir");
        let dir = tempfile::tempdir().expect("tempdir");
        write_files_with_ids(org.path(), 250, 40);
        let (store, _) = Store::open(dir.path(), Config::default()).expect("open");
        store.snapshot("before");
        let dirs = [org.path().to_path_buf()];
        let report = store.ingest_directories(&dirs, |_, _, _| {}, || false);
        assert_eq!(report.ingested, 250);
        assert!(store.worth_reloading(report.new_versions));
        assert!(
            store.state().ids_left_to_first_reader(),
            "left to the reload that follows"
        );
        let reload = store.begin_reload();
        assert!(reload.is_none(), "refused while a snapshot is kept");
        assert!(!store.reload_or_index_ids(reload));
        let state = store.state();
        assert!(!state.ids_left_to_first_reader(), "being built, or built");
        assert_ids_agree_with_files(&state);
        assert_eq!(state.ids_and_places().count(), 250 + 250 * 40);
    }

    #[test]
    fn a_removal_supersedes_an_ingest_of_the_file_read_before_it() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/a.org", "* Stored\n", None, None, None)
            .expect("ingest");
        let stale = parsed(&store, "/a.org", "* Read before the removal\n");
        assert!(store.remove_file("/a.org"));
        assert_eq!(
            store.commit_parsed(vec![stale], IdUpdates::Apply).pop(),
            Some(None)
        );
        assert!(store.state().files.get("/a.org").is_none());
    }

    #[test]
    fn a_rollback_supersedes_an_ingest_of_a_file_it_restores() {
        let store = Store::in_memory(Config::default());
        store
            .ingest_text("/a.org", "* First\n", None, None, None)
            .expect("ingest");
        store.snapshot("first");
        store
            .ingest_text("/a.org", "* Second\n", None, None, None)
            .expect("ingest");
        let stale = parsed(&store, "/a.org", "* Read before the rollback\n");
        store.rollback(0).expect("rollback");
        assert_eq!(
            store.commit_parsed(vec![stale], IdUpdates::Apply).pop(),
            Some(None)
        );
        assert_eq!(titles(&store, "/a.org"), ["First"]);
    }
}
