//! The file tools: `read_file`, `list_directory` (read-only) and `write_file` (asks), confined
//! to the roots they are built with.
//!
//! Every path is resolved before it is judged (`~`, `..`, symbolic links: see
//! [`crate::notes::paths`]): it must lie in the roots, not be protected and not be a private
//! file, by its name or by where it really leads. The path gate refuses the same before a
//! body runs; the bodies judge again, since a tool may be called without the gates (a
//! skill's alias, a test). Every text is shown as the notes layer shows it
//! ([`Notes::text_as_shown`]), whatever its name: private subtrees cut out (a copy of a note
//! as `notes.txt` is a note), withheld properties and secrets replaced; a file private as a
//! whole ([`Notes::why_private`]: by its name, as an Emacs backup, copy or archive of a
//! private file, by its tags, as a hard link to a private file) is refused, and a listing
//! leaves it out. `write_file` never writes an Org file (notes change through the edit
//! tools, which show a diff and keep Org's structure) and writes atomically, to the real
//! file.

use super::{Args, Param, ParamType, Tool};
use crate::notes::Refusal;
use crate::notes::{Confinement, Notes, Resolved};
use crate::store::filename;
use std::path::Path;
use std::sync::Arc;

/// The most text one `read_file` call returns.
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// Files larger than this are not read at all.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Lines one `read_file` call returns unless it asks for fewer.
const DEFAULT_LINES: i64 = 2000;
/// The most `write_file` writes.
pub const MAX_WRITE_BYTES: usize = 1024 * 1024;
/// Entries one `list_directory` call shows.
const MAX_ENTRIES: usize = 1000;

/// Where the tool sets of the file tools come from: the reading ones, and `write_file`,
/// which asks (see `ToolSet::read_only`).
pub const READS_SOURCE: &str = "files";
pub const WRITES_SOURCE: &str = "file writes";

/// `path` judged for `notes` within `confinement`: resolved, inside the roots, not
/// protected, not private by its name or its real path.
fn judge(notes: &Notes, confinement: &Confinement, path: &str) -> Result<Resolved, String> {
    notes
        .judge_path_in(confinement, path)
        .map_err(|r| r.to_string())
}

/// Whether a file is Org text (a note, or one the notes could hold).
fn is_org(r: &Resolved) -> bool {
    [r.given(), r.real()].into_iter().any(|p| {
        p.extension()
            .is_some_and(|e| e == "org" || e == "org_archive")
    })
}

/// Why the file `r` is private as a whole, by its given or its real path, if it is: the
/// refusal names the rule, never the path.
fn private_file(notes: &Notes, r: &Resolved) -> Result<(), String> {
    match notes
        .why_private(&r.given_key())
        .or_else(|| notes.why_private(&r.real_key()))
    {
        Some(why) => Err(format!(
            "that file is private ({why}): the agent may not read or change it"
        )),
        None => Ok(()),
    }
}

fn read_file(notes: &Notes, confinement: &Confinement, args: &Args) -> Result<String, String> {
    let path = args.str("path").unwrap_or_default();
    let r = judge(notes, confinement, path)?;
    private_file(notes, &r)?;
    let meta = std::fs::metadata(r.real()).map_err(|_| format!("there is no file {path:?}"))?;
    if meta.is_dir() {
        return Err(format!("{path:?} is a directory: use list_directory"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{path:?} is too large to read ({} bytes; at most {MAX_FILE_BYTES})",
            meta.len()
        ));
    }
    let bytes = std::fs::read(r.real()).map_err(|e| format!("cannot read {path:?}: {e}"))?;
    if bytes.contains(&0) {
        return Err(format!("{path:?} is a binary file, not text"));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(format!("{path:?} is not UTF-8 text (a binary file?)"));
    };
    // Every text as the notes layer shows it, whatever its name: private subtrees cut out
    // (a copy of a note is a note), withheld properties and secrets replaced; a file private
    // by its tags is refused in the words of any private file.
    let text = notes
        .text_as_shown(&r.given_key(), &text)
        .ok_or_else(|| Refusal::Private.to_string())?;
    Ok(page(path, &text, args))
}

/// Lines `offset` (1-based) to `offset + limit - 1` of `text`, at most [`MAX_READ_BYTES`],
/// with a line saying which they are and where to go on.
fn page(path: &str, text: &str, args: &Args) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let first = args.int("offset").unwrap_or(1).max(1) as usize;
    let limit = args.int("limit").unwrap_or(DEFAULT_LINES).max(1) as usize;
    let mut out = String::new();
    let mut last = first.saturating_sub(1);
    for line in lines.iter().skip(first - 1).take(limit) {
        if out.len() + line.len() > MAX_READ_BYTES {
            break;
        }
        out.push_str(line);
        last += 1;
    }
    if total == 0 {
        return format!("{path} is empty.");
    }
    if first > total {
        return format!("{path} has {total} lines; offset {first} is past the end.");
    }
    let mut head = format!("{path}, lines {first}-{last} of {total}");
    if last < total {
        head.push_str(&format!(" (read on with offset {})", last + 1));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    format!("{head}:\n{out}")
}

fn list_directory(notes: &Notes, confinement: &Confinement, args: &Args) -> Result<String, String> {
    let path = args.str("path").unwrap_or_default();
    let r = judge(notes, confinement, path)?;
    let entries =
        std::fs::read_dir(r.real()).map_err(|_| format!("{path:?} is not a directory"))?;
    let mut shown: Vec<String> = Vec::new();
    let mut hidden = 0usize;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let child = r.real().join(&name);
        // Each entry judged as a path of its own: a link in the directory is judged by
        // where it leads; private, protected and outside ones are counted, never named.
        let child_r = match judge(notes, confinement, &filename::key(&child)) {
            Ok(r) if private_file(notes, &r).is_ok() => r,
            _ => {
                hidden += 1;
                continue;
            }
        };
        let kind = match std::fs::metadata(child_r.real()) {
            Ok(m) if m.is_dir() => "directory".to_string(),
            Ok(m) => format!("{} bytes", m.len()),
            Err(_) => "unreadable".to_string(),
        };
        let link = if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            ", a link"
        } else {
            ""
        };
        let name = filename::key(Path::new(&name)).into_owned();
        let slash = if kind == "directory" { "/" } else { "" };
        shown.push(format!("- {name}{slash} ({kind}{link})"));
    }
    shown.sort();
    let total = shown.len();
    let mut out = format!("{path}: {total} entries");
    if total > MAX_ENTRIES {
        out.push_str(&format!(", first {MAX_ENTRIES}"));
        shown.truncate(MAX_ENTRIES);
    }
    if hidden > 0 {
        out.push_str(&format!(
            "; {hidden} hidden (private, protected, or leading outside the directories)"
        ));
    }
    out.push_str(":\n");
    for line in shown {
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

fn write_file(notes: &Notes, confinement: &Confinement, args: &Args) -> Result<String, String> {
    let path = args.str("path").unwrap_or_default();
    let content = args.str("content").unwrap_or_default();
    if content.len() > MAX_WRITE_BYTES {
        return Err(format!(
            "the content is too large ({} bytes; at most {MAX_WRITE_BYTES})",
            content.len()
        ));
    }
    let r = judge(notes, confinement, path)?;
    // Nor a file the notes layer hides (a backup of a private note, another name of one).
    private_file(notes, &r)?;
    if is_org(&r) {
        return Err(
            "write_file does not write Org files: change the notes with the edit tools \
             (add_headline, replace_body…), which show the user a diff"
                .to_string(),
        );
    }
    if std::fs::metadata(r.real()).is_ok_and(|m| m.is_dir()) {
        return Err(format!("{path:?} is a directory"));
    }
    let real = r.real();
    let dir = real
        .parent()
        .ok_or_else(|| format!("{path:?} names no file"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create the directory: {e}"))?;
    // The directory may have been swapped for a link meanwhile: judge where it is now.
    let again = judge(notes, confinement, &filename::key(real))?;
    if again.real() != real {
        return Err(format!(
            "{path:?} changed while it was written; nothing was written"
        ));
    }
    let before = std::fs::metadata(real).ok();
    crate::store::vectors::write_atomic(real, content.as_bytes())
        .map_err(|e| format!("cannot write {path:?}: {}", io_reason(&e)))?;
    if let Some(meta) = before {
        // Keep the permissions of the file it replaced.
        let _ = std::fs::set_permissions(real, meta.permissions());
    }
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

/// Why a write failed, without the temporary file's name.
fn io_reason(e: &crate::store::vectors::VectorError) -> String {
    match e {
        crate::store::vectors::VectorError::Io { source, .. } => source.kind().to_string(),
        other => other.to_string(),
    }
}

/// `read_file` and `list_directory` over `confinement`.
pub fn reading_tools(confinement: Arc<Confinement>) -> Vec<Tool> {
    use ParamType::*;
    let param = Param::new;
    let (c1, c2) = (confinement.clone(), confinement);
    vec![
        Tool {
            name: "read_file".into(),
            description: "Read a text file in the user's directories (absolute path or ~/…), a \
                          page of lines at a time, as the notes are shown: private parts \
                          left out, secrets replaced."
                .into(),
            params: vec![
                param(
                    "path",
                    String,
                    "the file: absolute, or starting with ~/",
                    true,
                ),
                param(
                    "offset",
                    Integer,
                    "the first line to read (1-based, default 1)",
                    false,
                ),
                param(
                    "limit",
                    Integer,
                    "at most this many lines (default 2000)",
                    false,
                ),
            ],
            body: Box::new(move |notes, args| read_file(notes, &c1, args)),
        },
        Tool {
            name: "list_directory".into(),
            description: "List a directory in the user's directories (absolute path or ~/…): \
                          its files with sizes, and its subdirectories."
                .into(),
            params: vec![param(
                "path",
                String,
                "the directory: absolute, or starting with ~/",
                true,
            )],
            body: Box::new(move |notes, args| list_directory(notes, &c2, args)),
        },
    ]
}

/// `write_file` over `confinement` (it asks the user: see `ToolSet::read_only`).
pub fn writing_tools(confinement: Arc<Confinement>) -> Vec<Tool> {
    use ParamType::*;
    let param = Param::new;
    vec![Tool {
        name: "write_file".into(),
        description: "Write a text file in the user's directories (absolute path or ~/…), \
                      replacing it whole. Not for Org files: change notes with the edit tools."
            .into(),
        params: vec![
            param(
                "path",
                String,
                "the file: absolute, or starting with ~/",
                true,
            ),
            param("content", String, "the whole new text of the file", true),
        ],
        body: Box::new(move |notes, args| write_file(notes, &confinement, args)),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notes::Privacy;
    use crate::store::{Config, Store};
    use crate::tools::Registry;
    use serde_json::json;
    use std::path::PathBuf;

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        notes_dir: PathBuf,
        registry: Registry,
        notes: Notes,
    }

    fn key(p: &Path) -> String {
        filename::key(p).into_owned()
    }

    /// A home with notes (one private subtree, one private file, a link to a private file,
    /// a link out), a directory outside them, and the file tools confined to the notes.
    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let notes_dir = root.join("notes");
        std::fs::create_dir_all(notes_dir.join("sub")).unwrap();
        std::fs::create_dir_all(notes_dir.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(
            notes_dir.join("mixed.org"),
            "* Shopping\nmilk\n* Health :private:\nthe secret diagnosis\n* After\nbread\n",
        )
        .unwrap();
        std::fs::write(notes_dir.join("diary.org"), "* Dear diary\nmy secret\n").unwrap();
        std::fs::write(
            notes_dir.join("tagged.org"),
            "#+FILETAGS: :private:\n* x\nhidden words\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(notes_dir.join("diary.org"), notes_dir.join("innocent.org"))
            .unwrap();
        std::os::unix::fs::symlink(notes_dir.join("diary.org"), notes_dir.join("innocent.txt"))
            .unwrap();
        std::fs::write(root.join("outside/x.txt"), "outside text").unwrap();
        std::os::unix::fs::symlink(root.join("outside/x.txt"), notes_dir.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(root.join(".ssh"), notes_dir.join("keys")).unwrap();
        std::fs::write(notes_dir.join("sub/readme.txt"), "line 1\nline 2\nline 3\n").unwrap();
        std::fs::write(notes_dir.join("blob.bin"), b"\x00\x01\x02").unwrap();
        let confinement = Arc::new(Confinement::new(&root, [key(&notes_dir)], None, [""; 0]));
        let mut registry = Registry::default();
        for t in reading_tools(confinement.clone())
            .into_iter()
            .chain(writing_tools(confinement.clone()))
        {
            registry.register(t);
        }
        let privacy = Privacy::new(["private".to_string()], ["diary.org".to_string()]);
        let notes = Notes::new(
            Arc::new(Store::in_memory(Config::default())),
            Arc::new(privacy),
        )
        .confined(confinement);
        Fixture {
            _dir: dir,
            root,
            notes_dir,
            registry,
            notes,
        }
    }

    impl Fixture {
        fn call(&self, tool: &str, args: serde_json::Value) -> Result<String, String> {
            self.registry
                .call(&self.notes, tool, &args)
                .map_err(|e| e.to_string())
        }
        fn read(&self, path: &Path) -> Result<String, String> {
            self.call("read_file", json!({ "path": key(path) }))
        }
    }

    #[test]
    fn read_file_shows_org_files_as_the_notes_do_and_refuses_what_it_must() {
        let f = fixture();
        let text = f.read(&f.notes_dir.join("mixed.org")).unwrap();
        assert!(text.contains("milk") && text.contains("bread"), "{text}");
        assert!(!text.contains("secret diagnosis"), "{text}");
        assert!(text.contains("private subtree is left out"), "{text}");
        for (path, rule) in [
            (f.notes_dir.join("diary.org"), "private"),
            (f.notes_dir.join("innocent.org"), "private"),
            (f.notes_dir.join("innocent.txt"), "private"),
            (f.notes_dir.join("tagged.org"), "private"),
            (f.notes_dir.join("out.txt"), "outside the directories"),
            (f.root.join("outside/x.txt"), "outside the directories"),
            (f.notes_dir.join("keys/id_rsa"), "protected"),
            (f.notes_dir.join(".git/config"), "protected"),
            (f.notes_dir.join("blob.bin"), "binary"),
            (f.notes_dir.join("sub"), "directory"),
            (f.notes_dir.join("missing.txt"), "no file"),
        ] {
            let e = f.read(&path).unwrap_err();
            assert!(e.contains(rule), "{}: {e}", path.display());
            for secret in ["secret", "diary", "x.txt", "id_rsa", "hidden words"] {
                if !key(&path).contains(secret) {
                    assert!(!e.contains(secret), "{}: {e}", path.display());
                }
            }
        }
        let e = f
            .call("read_file", json!({"path": "~/.ssh/id_rsa"}))
            .unwrap_err();
        assert!(e.contains("protected") && !e.contains("PRIVATE KEY"), "{e}");
        let e = f
            .call("read_file", json!({"path": "notes/mixed.org"}))
            .unwrap_err();
        assert!(e.contains("relative"), "{e}");
    }

    #[test]
    fn read_file_pages_by_lines() {
        let f = fixture();
        let path = key(&f.notes_dir.join("sub/readme.txt"));
        let page = f
            .call("read_file", json!({"path": path, "offset": 2, "limit": 1}))
            .unwrap();
        assert!(
            page.contains("lines 2-2 of 3 (read on with offset 3)"),
            "{page}"
        );
        assert!(page.contains("line 2\n") && !page.contains("line 1") && !page.contains("line 3"));
        let all = f.call("read_file", json!({"path": path})).unwrap();
        assert!(
            all.contains("lines 1-3 of 3:\nline 1\nline 2\nline 3\n"),
            "{all}"
        );
        let past = f
            .call("read_file", json!({"path": path, "offset": 9}))
            .unwrap();
        assert!(past.contains("past the end"), "{past}");
        // A long file is cut at the byte cap, on a line boundary.
        let long = f.notes_dir.join("long.txt");
        std::fs::write(&long, "x".repeat(1000).add_lines(600)).unwrap();
        let page = f.read(&long).unwrap();
        assert!(page.len() <= MAX_READ_BYTES + 200, "{}", page.len());
        assert!(page.contains("read on with offset"), "{}", &page[..100]);
    }

    trait Lines {
        fn add_lines(self, n: usize) -> String;
    }
    impl Lines for String {
        fn add_lines(self, n: usize) -> String {
            (0..n).map(|_| format!("{self}\n")).collect()
        }
    }

    #[test]
    fn list_directory_counts_what_it_hides() {
        let f = fixture();
        let list = f
            .call("list_directory", json!({"path": key(&f.notes_dir)}))
            .unwrap();
        assert!(list.contains("- mixed.org ("), "{list}");
        assert!(list.contains("- sub/ (directory)"), "{list}");
        for hidden in ["diary", "innocent", ".git", "keys", "out.txt"] {
            assert!(!list.contains(hidden), "{hidden}: {list}");
        }
        // diary.org, innocent.org, innocent.txt, .git, keys, out.txt; and tagged.org once the
        // notes hold it (private by its #+FILETAGS, which only its text says).
        assert!(list.contains("6 hidden"), "{list}");
        assert!(list.contains("- tagged.org"), "{list}");
        let store = Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_file(&key(&f.notes_dir.join("tagged.org")), false)
            .unwrap();
        let notes = Notes::new(store, Arc::new(f.notes.privacy().clone()))
            .confined(f.notes.confinement().unwrap().clone());
        let list = f
            .registry
            .call(
                &notes,
                "list_directory",
                &json!({"path": key(&f.notes_dir)}),
            )
            .unwrap();
        assert!(
            list.contains("7 hidden") && !list.contains("tagged"),
            "{list}"
        );
        let e = f
            .call("list_directory", json!({"path": key(&f.root)}))
            .unwrap_err();
        assert!(e.contains("outside"), "{e}");
    }

    #[test]
    fn write_file_writes_atomically_inside_the_roots_only() {
        let f = fixture();
        let target = f.notes_dir.join("sub/new/out.txt");
        let done = f
            .call(
                "write_file",
                json!({"path": key(&target), "content": "hello\n"}),
            )
            .unwrap();
        assert!(done.contains("wrote 6 bytes"), "{done}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "hello\n");
        // Replacing keeps the permissions, leaves no temporary file.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        f.call(
            "write_file",
            json!({"path": key(&target), "content": "again"}),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "again");
        let meta = std::fs::metadata(&target).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        for (path, rule) in [
            (f.notes_dir.join("mixed.org"), "Org files"),
            (f.notes_dir.join("fresh.org"), "Org files"),
            (f.notes_dir.join("out.txt"), "outside"),
            (f.notes_dir.join("keys/authorized_keys"), "protected"),
            (f.notes_dir.join(".git/hooks/post-commit"), "protected"),
            (f.notes_dir.join("innocent.txt"), "private"),
            (f.root.join("outside/new.txt"), "outside"),
        ] {
            let e = f
                .call("write_file", json!({"path": key(&path), "content": "x"}))
                .unwrap_err();
            assert!(e.contains(rule), "{}: {e}", path.display());
        }
        assert_eq!(
            std::fs::read_to_string(f.root.join("outside/x.txt")).unwrap(),
            "outside text"
        );
        assert!(!f.root.join("outside/new.txt").exists());
        assert!(!f.root.join(".ssh/authorized_keys").exists());
    }

    /// `f`'s file tools over `notes` (other rules, another store).
    fn call_with(f: &Fixture, notes: &Notes, tool: &str, path: &Path) -> Result<String, String> {
        f.registry
            .call(notes, tool, &json!({ "path": key(path) }))
            .map_err(|e| e.to_string())
    }

    /// A refusal that names the privacy rule and neither the private text nor the file.
    fn assert_private_refusal(e: &str, rule: &str, secrets: &[&str]) {
        assert!(e.contains("private") && e.contains(rule), "{e}");
        for s in secrets {
            assert!(!e.contains(s), "{s}: {e}");
        }
    }

    const MIXED: &str =
        "* Shopping\nmilk\n* Health :private:\nthe secret diagnosis\n* After\nbread\n";

    /// [`MIXED`] written to the notes as `name` and read back: the shared text is there,
    /// the private subtree is not.
    fn read_mixed_as(f: &Fixture, name: &str) -> String {
        let path = f.notes_dir.join(name);
        std::fs::write(&path, MIXED).unwrap();
        let text = f.read(&path).unwrap();
        assert!(
            text.contains("milk") && text.contains("bread"),
            "{name}: {text}"
        );
        assert!(!text.contains("secret diagnosis"), "{name}: {text}");
        text
    }

    #[test]
    fn emacs_backups_auto_saves_and_locks_are_shown_as_their_original() {
        let f = fixture();
        let d = &f.notes_dir;
        // Copies of a note with a private subtree: the subtree is cut, as in the note.
        for name in ["mixed.org~", "mixed.org.~3~", "#mixed.org#", ".#mixed.org"] {
            let text = read_mixed_as(&f, name);
            assert!(
                text.contains("private subtree is left out"),
                "{name}: {text}"
            );
        }
        // Copies of a file private by its name: private as a whole, whatever they hold.
        for name in ["diary.org~", "diary.org.~12~", "#diary.org#", ".#diary.org"] {
            std::fs::write(d.join(name), "* Dear diary\nmy secret\n").unwrap();
            let e = f.read(&d.join(name)).unwrap_err();
            assert_private_refusal(&e, "backup", &["my secret", "diary"]);
        }
        // Emacs's lock is usually a link to nothing: refused, its target never read.
        std::fs::remove_file(d.join(".#diary.org")).unwrap();
        std::os::unix::fs::symlink("user@host.1234:1700000000", d.join(".#diary.org")).unwrap();
        let e = f.read(&d.join(".#diary.org")).unwrap_err();
        assert!(!e.contains("user@host"), "{e}");
        assert!(f.notes.hides_path(&key(&d.join(".#diary.org"))));
        // And a listing leaves them all out, counting them.
        let list = f.call("list_directory", json!({"path": key(d)})).unwrap();
        assert!(!list.contains("diary"), "{list}");
        assert!(list.contains("- mixed.org~ ("), "{list}");
        assert!(list.contains("10 hidden"), "{list}");
    }

    #[test]
    fn archived_subtrees_keep_their_privacy() {
        let f = fixture();
        let d = &f.notes_dir;
        let archive = format!(
            "#    -*- mode: org -*-\n\nArchived entries from file {tasks}\n\n\
             * Old health note\n:PROPERTIES:\n:ARCHIVE_TIME: 2024-01-01 Mon 10:00\n\
             :ARCHIVE_FILE: {tasks}\n:ARCHIVE_OLPATH: Health\n:ARCHIVE_ITAGS: work private\n\
             :END:\nthe archived diagnosis\n\
             * Old diary entry\n:PROPERTIES:\n:ARCHIVE_FILE: {diary}\n:END:\n\
             dear diary, archived\n\
             * Old shopping\n:PROPERTIES:\n:ARCHIVE_FILE: {tasks}\n:ARCHIVE_ITAGS: work\n\
             :END:\neggs\n",
            tasks = key(&d.join("tasks.org")),
            diary = key(&d.join("diary.org")),
        );
        let file = d.join("tasks.org_archive");
        std::fs::write(&file, &archive).unwrap();
        let text = f.read(&file).unwrap();
        assert!(
            text.contains("eggs") && text.contains("Old shopping"),
            "{text}"
        );
        for hidden in [
            "archived diagnosis",
            "Old health",
            "dear diary",
            "Old diary",
        ] {
            assert!(!text.contains(hidden), "{hidden}: {text}");
        }
        // The archive of a file private by its name is private as a whole.
        std::fs::write(d.join("diary.org_archive"), "* Old\nold secret\n").unwrap();
        let e = f.read(&d.join("diary.org_archive")).unwrap_err();
        assert_private_refusal(&e, "archive", &["old secret", "diary"]);
        // The whole notes layer hides them too: queries and lookups, once the store holds it.
        let store = Arc::new(Store::in_memory(Config::default()));
        store.ingest_file(&key(&file), false).unwrap();
        let notes = Notes::new(store, Arc::new(f.notes.privacy().clone()));
        let titles: Vec<String> = notes
            .query(&crate::store::Query::default())
            .iter()
            .map(|r| r.node().content.title.to_string())
            .collect();
        assert!(titles.contains(&"Old shopping".to_string()), "{titles:?}");
        assert!(
            !titles
                .iter()
                .any(|t| t.contains("health") || t.contains("diary")),
            "{titles:?}"
        );
    }

    #[test]
    fn org_text_is_redacted_whatever_the_file_is_called() {
        let f = fixture();
        let d = &f.notes_dir;
        for name in ["notes.txt", "tasks.bak", "x.org.orig", "README"] {
            read_mixed_as(&f, name);
        }
        // A copy of a private file by a copy's name is private as its original.
        std::fs::write(d.join("diary.org.bak"), "* Dear diary\nmy secret\n").unwrap();
        let e = f.read(&d.join("diary.org.bak")).unwrap_err();
        assert_private_refusal(&e, "copy", &["my secret", "diary"]);
        // A copy carrying its #+FILETAGS is private by them.
        std::fs::write(
            d.join("tagged.txt"),
            "#+FILETAGS: :private:\n* x\nhidden words\n",
        )
        .unwrap();
        let e = f.read(&d.join("tagged.txt")).unwrap_err();
        assert_private_refusal(&e, "tags", &["hidden words"]);
        // Text that is not Org is shown as it is, but for the values of withheld properties.
        std::fs::write(
            d.join("plain.md"),
            "# Title\n- a list * with stars\n:PASSWORD: hunter2\n",
        )
        .unwrap();
        let text = f.read(&d.join("plain.md")).unwrap();
        assert!(
            text.ends_with(":\n# Title\n- a list * with stars\n:PASSWORD: [withheld]\n"),
            "{text}"
        );
    }

    #[test]
    fn a_renamed_copy_of_a_private_note_is_private() {
        let f = fixture();
        let d = &f.notes_dir;
        let store = Arc::new(Store::in_memory(Config::default()));
        store
            .ingest_file(&key(&d.join("diary.org")), false)
            .unwrap();
        let notes = Notes::new(store, Arc::new(f.notes.privacy().clone()))
            .confined(f.notes.confinement().unwrap().clone());
        // `cp diary.org notes.txt`: a name that says nothing of its original.
        std::fs::copy(d.join("diary.org"), d.join("sub/notes.txt")).unwrap();
        let e = call_with(&f, &notes, "read_file", &d.join("sub/notes.txt")).unwrap_err();
        assert!(e.contains("private") && !e.contains("my secret"), "{e}");
        // The limit: one byte changed, it is no longer the note's text, and is shown as any
        // text (read as Org: no private headline in it).
        std::fs::write(d.join("sub/notes.txt"), "* Dear diary\nmy secreT\n").unwrap();
        let text = call_with(&f, &notes, "read_file", &d.join("sub/notes.txt")).unwrap();
        assert!(text.contains("my secreT"), "{text}");
    }

    #[test]
    fn hard_links_to_private_files_are_private() {
        let f = fixture();
        let d = &f.notes_dir;
        // A private file by its pattern in the roots, never ingested: found by the walk.
        std::fs::hard_link(d.join("diary.org"), d.join("sub/plain.txt")).unwrap();
        let e = f.read(&d.join("sub/plain.txt")).unwrap_err();
        assert_private_refusal(&e, "hard link", &["my secret", "diary"]);
        // A private directory outside the roots, named by an absolute pattern.
        let vault = f.root.join("vault");
        std::fs::create_dir_all(&vault).unwrap();
        std::fs::write(vault.join("keys.txt"), "the vault's words\n").unwrap();
        std::fs::hard_link(vault.join("keys.txt"), d.join("harmless.txt")).unwrap();
        let privacy = Privacy::new(
            ["private".to_string()],
            ["diary.org".to_string(), format!("{}/**", key(&vault))],
        );
        let store = Arc::new(Store::in_memory(Config::default()));
        let notes = Notes::new(store.clone(), Arc::new(privacy))
            .confined(f.notes.confinement().unwrap().clone());
        let e = call_with(&f, &notes, "read_file", &d.join("harmless.txt")).unwrap_err();
        assert_private_refusal(&e, "hard link", &["vault"]);
        // A file private by its #+FILETAGS once the store holds it: the link's own text has
        // lost them (the note changed since, or the link is to a copy Org rewrote).
        std::fs::write(
            d.join("filed.org"),
            "#+FILETAGS: :private:\n* y\nfiled words\n",
        )
        .unwrap();
        store
            .ingest_file(&key(&d.join("filed.org")), false)
            .unwrap();
        std::fs::hard_link(d.join("filed.org"), d.join("other.txt")).unwrap();
        std::fs::write(d.join("filed.org"), "* y\nfiled words\n").unwrap();
        let e = call_with(&f, &notes, "read_file", &d.join("other.txt")).unwrap_err();
        assert_private_refusal(&e, "hard link", &["filed words", "filed.org"]);
        let list = call_with(&f, &notes, "list_directory", d).unwrap();
        for hidden in ["harmless", "other.txt", "filed.org"] {
            assert!(!list.contains(hidden), "{hidden}: {list}");
        }
        // Nor is it written: the private file's other name is not the agent's to replace.
        let e = f
            .registry
            .call(
                &notes,
                "write_file",
                &json!({"path": key(&d.join("harmless.txt")), "content": "x"}),
            )
            .unwrap_err()
            .to_string();
        assert_private_refusal(&e, "hard link", &["vault"]);
        assert_eq!(
            std::fs::read_to_string(vault.join("keys.txt")).unwrap(),
            "the vault's words\n"
        );
        // Two names of an ordinary file are both shown.
        std::fs::write(d.join("a.txt"), "shared words\n").unwrap();
        std::fs::hard_link(d.join("a.txt"), d.join("b.txt")).unwrap();
        let text = call_with(&f, &notes, "read_file", &d.join("b.txt")).unwrap();
        assert!(text.contains("shared words"), "{text}");
        assert!(notes.hides_path(&key(&d.join("other.txt"))));
        assert!(!notes.hides_path(&key(&d.join("b.txt"))));
    }

    #[test]
    fn read_file_replaces_secrets() {
        let f = fixture();
        let file = f.notes_dir.join("deploy.txt");
        std::fs::write(
            &file,
            "token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok\n\
             db postgres://app:S3cr3t!pw@db.example.com:5432/app\n",
        )
        .unwrap();
        let text = f.read(&file).unwrap();
        assert!(text.contains("token [REDACTED:github-token] ok"), "{text}");
        assert!(text.contains("[REDACTED:url-password]"), "{text}");
        assert!(
            !text.contains("ghp_16C7") && !text.contains("S3cr3t"),
            "{text}"
        );
        // In an Org note as well, after its private subtrees are cut.
        let note = f.notes_dir.join("ops.org");
        std::fs::write(
            &note,
            "* Deploy\ntoken ghp_16C7e42F292c6912E7710c838347Ae178B4a\n* Mine :private:\nx\n",
        )
        .unwrap();
        let text = f.read(&note).unwrap();
        assert!(text.contains("[REDACTED:github-token]"), "{text}");
        assert!(!text.contains("ghp_") && !text.contains("Mine"), "{text}");
    }
}
