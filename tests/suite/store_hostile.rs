//! Hostile input: texts built to make a parser or a store go quadratic. Each input is large
//! enough that quadratic work would take minutes (the harness would hang), while the linear
//! code takes well under a second; the assertions are about what Org makes of the text.

use crate::support::store::*;
use org_agent::store::{Config, Store, TodoType};

const F: &str = "/notes/hostile.org";

/// `n` copies of `line` under one headline, then a second headline.
fn repeated(line: &str, n: usize) -> String {
    let mut text = String::with_capacity(n * line.len() + 32);
    text.push_str("* Top\n");
    for _ in 0..n {
        text.push_str(line);
    }
    text.push_str("* After\nlast words\n");
    text
}

/// 100,000 block or drawer openings with no end took orgize more than five minutes (each one
/// scanned the rest of the section for its end). Org reads such lines as a paragraph: the
/// headlines, their bodies and offsets are those of plain text.
#[test]
fn unclosed_blocks_and_drawers_are_plain_text() {
    for line in [
        "#+begin_quote\n",
        "#+BEGIN_SRC emacs-lisp :tangle yes\n",
        ":LOGBOOK:\n",
        "#+begin_example\n:PROPERTIES:\n\\begin{equation}\n#+BEGIN: clocktable\n",
    ] {
        let n = 100_000;
        let text = repeated(line, n);
        assert!(text.len() >= 1_000_000, "{} bytes", text.len());
        let store = mem_store();
        let report = ingest(&store, F, &text);
        assert_eq!(report.nodes, 3, "{line:?}");
        let top = by_title(&store, F, "Top");
        assert_eq!(
            &*top.node().content.body().expect("body"),
            line.repeat(n),
            "{line:?}"
        );
        assert!(top.node().content.properties.is_empty());
        let after = by_title(&store, F, "After");
        let begin = text.find("* After").expect("second headline");
        assert_eq!(after.node().begin as usize, begin);
        assert_eq!(after.node().begin_pos, char_pos(&text, begin));
        assert_eq!(&*after.node().content.body().expect("body"), "last words\n");
    }
}

/// A keyword line after a block that never ends is a keyword, as in Org: the open block is
/// a paragraph. A block does not reach across a headline either, so an end line after one
/// closes nothing. Many unclosed begin lines keep this linear.
#[test]
fn keywords_after_unclosed_blocks_count() {
    let mut text = String::new();
    for _ in 0..100_000 {
        text.push_str("#+begin_src org\n");
    }
    text.push_str("#+TODO: OPEN | SHUT\n* OPEN a\n* SHUT b\n");
    let store = mem_store();
    ingest(&store, F, &text);
    assert_eq!(
        by_title(&store, F, "a").node().content.todo_type,
        Some(TodoType::Todo)
    );
    assert_eq!(
        by_title(&store, F, "b").node().content.todo_type,
        Some(TodoType::Done)
    );

    let across = "#+begin_example\n* H\n#+TODO: OPEN | SHUT\n#+end_example\n* SHUT c\n";
    ingest(&store, "/notes/across.org", across);
    let c = by_title(&store, "/notes/across.org", "c");
    assert_eq!(c.node().content.todo.as_deref(), Some("SHUT"));

    // A closed block still hides its keyword lines, and its end must be the whole line.
    let closed = "#+begin_src org\n#+TODO: OPEN | SHUT\n#+END_SRC  \n* OPEN d\n";
    ingest(&store, "/notes/closed.org", closed);
    let d = by_title(&store, "/notes/closed.org", "OPEN d");
    assert_eq!(d.node().content.todo, None);
    let not_an_end = "#+begin_src org\n#+end_src x\n#+TODO: OPEN | SHUT\n* OPEN e\n";
    ingest(&store, "/notes/not-an-end.org", not_an_end);
    let e = by_title(&store, "/notes/not-an-end.org", "e");
    assert_eq!(e.node().content.todo.as_deref(), Some("OPEN"));
}

fn many_tags(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

/// One headline with 200,000 tags (1.3 MB), and children that inherit them all: ingest and
/// opening the store again were quadratic in the tags (2 s for 50,000, at every start).
#[test]
fn a_headline_with_very_many_tags_ingests_and_reopens() {
    let n = 200_000;
    let tags = many_tags(n);
    // A repeated tag is one tag for the index, but stays as written among the own tags.
    let text = format!(
        "#+FILETAGS: :t0:file:\n* Many :{}:t7:\n** Child :own:\n** Other child\n*** Grandchild\n",
        tags.join(":")
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let check = |store: &Store| {
        let many = by_title(store, F, "Many");
        assert_eq!(many.node().content.tags.len(), n + 1);
        assert_eq!(*many.node().inherited_tags, ["t0", "file"]);
        let mut expected: Vec<String> = vec!["t0".into(), "file".into()];
        expected.extend(tags[1..].iter().cloned());
        let child = by_title(store, F, "Child");
        assert_eq!(*child.node().inherited_tags, expected);
        assert_eq!(
            *by_title(store, F, "Other child").node().inherited_tags,
            expected
        );
        assert_eq!(
            *by_title(store, F, "Grandchild").node().inherited_tags,
            expected
        );
        let doc = store.state().files.get(F).expect("the file").clone();
        assert_eq!(doc.tag_index.len(), n + 2, "every distinct tag once");
        assert_eq!(doc.tag_index["t7"], [1, 2, 3, 4]);
        assert_eq!(doc.tag_index["t0"], [0, 1, 2, 3, 4]);
        assert_eq!(doc.tag_index["own"], [2]);
    };
    {
        let (store, _) = Store::open(dir.path(), config()).expect("open");
        ingest(&store, F, &text);
        check(&store);
        store.flush().expect("flush");
    }
    let (store, report) = Store::open(dir.path(), config()).expect("reopen");
    assert_eq!(report.nodes, 5);
    check(&store);
}

/// Tags that are never inherited are left out of every child, however many tags there are.
#[test]
fn excluded_tags_among_many() {
    let tags = many_tags(50_000);
    let store = Store::in_memory(Config {
        no_inherit_tags: vec!["t3".into(), "t49999".into()],
        ..config()
    });
    let text = format!("* P :{}:\n** C\n", tags.join(":"));
    ingest(&store, F, &text);
    let inherited = by_title(&store, F, "C").node().inherited_tags.to_vec();
    assert_eq!(inherited.len(), 49_998);
    assert!(!inherited.iter().any(|t| t == "t3" || t == "t49999"));
}
