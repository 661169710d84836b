//! Hostile input: texts built to make a parser or a store go quadratic. Each input is large
//! enough that quadratic work would take minutes (the harness would hang), while the linear
//! code takes well under a second; the assertions are about what Org makes of the text.

use crate::support::store::*;
use org_agent::store::{Config, Query, Store, TodoType};

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
        assert_eq!(many.node().inherited(), ["file"]);
        // As `org-get-tags` has them: each at its last place (t0 and t7 are written again).
        let mut expected: Vec<&str> = vec!["file"];
        expected.extend(tags.iter().map(String::as_str).filter(|t| *t != "t7"));
        expected.push("t7");
        let child = by_title(store, F, "Child");
        assert_eq!(child.node().inherited(), expected);
        for title in ["Other child", "Grandchild"] {
            assert_eq!(by_title(store, F, title).node().inherited(), expected);
        }
        let doc = store.state().files.get(F).expect("the file").clone();
        assert_eq!(doc.tag_index.len(), n + 2, "every distinct tag once");
        assert_eq!(doc.tag_index["t7"], [1], "the nodes that carry it");
        assert_eq!(doc.tagged("t7").collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(doc.tagged("t0").collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(doc.tagged("own").collect::<Vec<_>>(), [2]);
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
    let c = by_title(&store, F, "C");
    let inherited = c.node().inherited();
    assert_eq!(inherited.len(), 49_998);
    assert!(!inherited.iter().any(|t| *t == "t3" || *t == "t49999"));
}

/// Many tags over many children that pass tags of their own down: the inherited tags are
/// shared chains, so the store holds about the tags written, not tags × descendants (one
/// list per parent was 3,001 strings for each of the 3,000 children here, 9 million), and
/// the tag index lists the nodes that carry a tag, not every one that inherits it. The
/// excluded tag and queries by inherited tag read as before, ingested and reopened.
#[test]
fn inherited_tags_take_memory_by_the_tags_written() {
    let n = 3_000;
    let tags = many_tags(n);
    let mut text = format!("#+FILETAGS: :file:\n* P :{}:\n", tags.join(":"));
    for i in 0..n {
        text.push_str(&format!("** C{i} :c{i}:\n*** G{i}\n"));
    }
    let written = 1 + n + n;
    let cfg = || Config {
        no_inherit_tags: vec!["t9".into()],
        ..config()
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let check = |store: &Store| {
        let stats = store.stats();
        // Each list written once, and once more without the excluded tag (P's), and the
        // log's record of which tag that is.
        assert!(
            stats.tag_strings <= 2 * written + 2,
            "{} tag strings for {written} written",
            stats.tag_strings
        );
        assert!(stats.tag_index_entries <= written);
        let g = by_title(store, F, "G1234");
        let inherited = g.node().inherited();
        assert_eq!(inherited.len(), 1 + (n - 1) + 1);
        assert_eq!(inherited[..2], ["file", "t0"]);
        assert_eq!(inherited.last(), Some(&"c1234"));
        assert!(!g.node().has_tag("t9") && g.node().has_tag("t8"));
        let q = |tag: &str| {
            let hits = Query {
                tag: Some(tag.into()),
                ..Default::default()
            }
            .run(&store.state());
            hits.iter()
                .map(|r| r.node().content.title.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(q("t2999").len(), 1 + 2 * n);
        assert_eq!(q("t9"), ["P"]);
        assert_eq!(q("c17"), ["C17", "G17"]);
        assert_eq!(q("file").len(), 2 + 2 * n);
    };
    {
        let (store, _) = Store::open(dir.path(), cfg()).expect("open");
        ingest(&store, F, &text);
        check(&store);
        store.flush().expect("flush");
    }
    let (store, report) = Store::open(dir.path(), cfg()).expect("reopen");
    assert_eq!(report.nodes, 2 + 2 * n);
    check(&store);
}
