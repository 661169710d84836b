//! Symbolic links no longer defeat privacy and confinement (issue 12): a note that is a link
//! to a private file is private everywhere the notes are shown, and an edit of a note that
//! is a link is judged, confined and shown by the file it really changes.

use crate::support::llm_server::{LlmServer, Reply};
use crate::support::store::id_of;
use org_agent::action::{Action, EmacsAction};
use org_agent::agent::equipment::Equipment;
use org_agent::agent::operator::{Approval, BoxFuture, Operator};
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig};
use org_agent::context::render;
use org_agent::llm::cascade::Cascade;
use org_agent::llm::completion::ToolCall;
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::notes::{Confinement, Notes, Privacy};
use org_agent::sexp::Sexp;
use org_agent::store::{filename, Config, Store};
use org_agent::tools::Registry;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Words only the private file holds.
const SECRET: &str = "WOMBAT-LEDGER";

fn key(p: &Path) -> String {
    filename::key(p).into_owned()
}

/// A home with notes: `plain.org`, and `innocent.org`, a link to the private
/// `vault/diary.org` outside them (private by the pattern `diary.org`), and `journal.org`,
/// a link to `journal/day.org` (private by a directory pattern).
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    notes_dir: PathBuf,
    store: Arc<Store>,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let notes_dir = root.join("notes");
    for d in ["notes", "vault", "journal", "outside"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(
        notes_dir.join("plain.org"),
        "* TODO Buy stamps\nAt the post office.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("vault/diary.org"),
        format!("* TODO Pay the {SECRET} debt\nThe {SECRET} account is overdrawn.\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("journal/day.org"),
        format!("* TODO Call about {SECRET}-2\nFelt {SECRET}-2 today.\n"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("vault/diary.org"), notes_dir.join("innocent.org"))
        .unwrap();
    std::os::unix::fs::symlink(root.join("journal/day.org"), notes_dir.join("journal.org"))
        .unwrap();
    let store = Arc::new(Store::in_memory(Config::default()));
    let report = store.ingest_directories(std::slice::from_ref(&notes_dir), |_, _, _| {}, || false);
    assert_eq!(report.files, 3, "{:?}", report.errors);
    Home {
        _dir: dir,
        root,
        notes_dir,
        store,
    }
}

impl Home {
    fn privacy(&self) -> Privacy {
        Privacy::new(
            ["private".to_string()],
            [
                "diary.org".to_string(),
                format!("{}/journal/**", key(&self.root)),
            ],
        )
    }

    fn confinement(&self) -> Arc<Confinement> {
        Arc::new(Confinement::new(
            &self.root,
            [key(&self.notes_dir)],
            None,
            [""; 0],
        ))
    }

    fn notes(&self, privacy: Privacy) -> Notes {
        Notes::new(self.store.clone(), Arc::new(privacy)).confined(self.confinement())
    }
}

/// Every way the notes are shown, as one text: the built-in and file tools, the context
/// (with the private node as the focus), the embedding candidates.
fn everything_shown(h: &Home, notes: &Notes) -> String {
    let mut registry = Registry::with_builtins();
    for t in org_agent::tools::files::reading_tools(h.confinement()) {
        registry.register(t);
    }
    let secret_id = id_of(&h.store, &format!("Pay the {SECRET} debt"));
    let calls = [
        ("query_notes", json!({"todo": "TODO"})),
        ("search_notes", json!({"text": SECRET})),
        ("read_node", json!({"id": secret_id})),
        ("list_files", json!({})),
        (
            "read_file",
            json!({"path": key(&h.notes_dir.join("innocent.org"))}),
        ),
        (
            "read_file",
            json!({"path": key(&h.notes_dir.join("journal.org"))}),
        ),
        ("list_directory", json!({"path": key(&h.notes_dir)})),
    ];
    let mut out = String::new();
    for (tool, args) in calls {
        let result = match registry.call(notes, tool, &args) {
            Ok(text) => text,
            Err(e) => e.to_string(),
        };
        out.push_str(&format!("{tool}: {result}\n"));
    }
    out.push_str(&render(notes, Some(&secret_id)));
    for c in notes.embedding_candidates(true) {
        out.push_str(&c.text);
        out.push('\n');
    }
    out
}

#[test]
fn a_note_that_links_to_a_private_file_is_private_everywhere() {
    let h = home();
    // Without rules the linked text is there to be found, so the checks below can fail.
    let open = everything_shown(&h, &h.notes(Privacy::none()));
    assert!(open.contains(&format!("{SECRET} account")), "{open}");
    assert!(open.contains(&format!("{SECRET}-2 today")), "{open}");
    let shown = everything_shown(&h, &h.notes(h.privacy()));
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(
        !shown.contains("diary") && !shown.contains("vault"),
        "{shown}"
    );
    assert!(shown.contains("Buy stamps"), "{shown}");
    // The links are counted in the listing, never named.
    assert!(shown.contains("2 hidden"), "{shown}");
    // Nor is the link's own file node shown, by the name the store keys it with.
    let notes = h.notes(h.privacy());
    for link in ["innocent.org", "journal.org"] {
        assert!(notes.file(&key(&h.notes_dir.join(link))).is_err(), "{link}");
    }
}

/// Approves every question, records what it was asked and what Emacs was told to do.
#[derive(Default)]
struct Approver {
    asked: Mutex<Vec<Vec<String>>>,
    actuated: Mutex<Vec<String>>,
}

impl Operator for Approver {
    fn ask(&self, _: &ToolCall, _: &Action, reasons: &[String]) -> BoxFuture<Approval> {
        self.asked.lock().unwrap().push(reasons.to_vec());
        Box::pin(async { Approval::Once })
    }

    fn actuate(&self, action: &EmacsAction) -> BoxFuture<Result<Sexp, String>> {
        self.actuated
            .lock()
            .unwrap()
            .push(org_agent::sexp::print(action.to_sexp().value()));
        Box::pin(async { Ok(org_agent::sexp::read("(:status :ok :message \"done\")").unwrap()) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_through_a_link_is_confined_and_shown_by_the_real_file() {
    let h = home();
    // A note linking out of the directories (to a file that is not private), and one
    // linking to another note inside them.
    let target = h.root.join("outside/target.org");
    std::fs::write(&target, "* TODO Outside task\n").unwrap();
    let out_link = h.notes_dir.join("link.org");
    std::os::unix::fs::symlink(&target, &out_link).unwrap();
    let alias = h.notes_dir.join("alias.org");
    std::os::unix::fs::symlink(h.notes_dir.join("plain.org"), &alias).unwrap();
    for f in [&out_link, &alias] {
        h.store.ingest_file(&key(f), false).unwrap();
    }
    let outside_task = id_of(&h.store, "Outside task");
    let server = LlmServer::start().await;
    server.push(Reply::chat_sse(
        "Editing.",
        &[
            (
                "add_headline",
                json!({"file": key(&out_link), "title": "Transfer the money"}),
            ),
            ("set_todo", json!({"id": outside_task, "state": "DONE"})),
            (
                "add_headline",
                json!({"file": key(&h.notes_dir.join("innocent.org")), "title": "Leak"}),
            ),
            (
                "read_file",
                json!({"path": key(&h.notes_dir.join("innocent.org"))}),
            ),
            (
                "add_headline",
                json!({"file": key(&alias), "title": "Through the alias"}),
            ),
        ],
    ));
    server.push(Reply::chat_sse("Done.", &[]));
    let client = ChatClient::new(Backend::new(server.base_url(), "test")).unwrap();
    let mut eq = Equipment::with(Cascade::single(client), h.notes(h.privacy()));
    let operator = Arc::new(Approver::default());
    eq.operator = operator.clone();
    eq.edit_tools = true;
    eq.offer_file_writes();
    let result = run_turn(
        &eq,
        &mut Conversation::default(),
        "Tidy my notes.",
        &TurnConfig::default(),
        &CancelToken::new(),
        |_| {},
    )
    .await;
    result.unwrap();
    // Only the edit through the link inside the directories ran, after a question that
    // named the real file.
    let actuated = operator.actuated.lock().unwrap().clone();
    assert_eq!(actuated.len(), 1, "{actuated:?}");
    assert!(actuated[0].contains("Through the alias"), "{actuated:?}");
    let asked = operator.asked.lock().unwrap().clone();
    let real = format!("{} → {}", key(&alias), key(&h.notes_dir.join("plain.org")));
    assert!(
        asked.iter().flatten().any(|reason| reason.contains(&real)),
        "{asked:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "* TODO Outside task\n"
    );
    // The refusals fed back say the rule and name neither the link's target nor the
    // private file.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = String::from_utf8_lossy(&requests[1].body).to_string();
    assert!(second.contains("outside the directories"), "{second}");
    for hidden in [SECRET, "target.org", "outside/", "diary", "vault"] {
        assert!(!second.contains(hidden), "{hidden} in {second}");
    }
}
