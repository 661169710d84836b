//! Queries over the store: kind, tags, TODO, properties, planning dates, projects, sparse
//! trees, limits and outline paths.

use crate::support::store::*;
use org_agent::store::query::timestamp_date;
use org_agent::store::{NodeKind, NodeRef, Query, Store, TodoType};

const W: &str = "/org/work.org";
const H: &str = "/org/home.org";

const WORK: &str = "\
#+FILETAGS: :job:
#+TODO: TODO NEXT WAIT | DONE CANCELLED
* Alpha :project:
:PROPERTIES:
:OWNER: ann
:EMPTY:
:END:
** TODO Write spec :writing:
SCHEDULED: <2024-03-01 Fri> DEADLINE: <2024-03-10 Sun>
** DONE Kickoff
CLOSED: [2024-02-15 Thu 10:00]
** NEXT Review :writing:review:
SCHEDULED: <2024-03-05 Tue +1w>
*** WAIT Feedback
DEADLINE: <2024-02-28 Wed -2d>
:PROPERTIES:
:OWNER: bob
:END:
* TODO Beta :project:
** CANCELLED Old idea
CLOSED: [2024-01-10 Wed]
* DONE Gamma :project:
CLOSED: [2024-03-01 Fri 09:00]
* Notes
** Meeting :writing:
";

const HOME: &str = "\
* TODO Groceries :errand:
SCHEDULED: <2024-02-20 Tue>
* House :project:
** DONE Paint
CLOSED: [2024-03-02 Sat]
** TODO Fix sink
DEADLINE: <2024-04-01 Mon>
";

fn store() -> Store {
    let s = mem_store();
    ingest(&s, W, WORK);
    ingest(&s, H, HOME);
    s
}

/// The titles of what `s` finds for the default query as `set` changes it, in result order.
fn run(s: &Store, set: impl FnOnce(&mut Query)) -> Vec<String> {
    let mut q = Query::default();
    set(&mut q);
    s.query(&q)
        .iter()
        .map(|r| r.node().content.title.to_string())
        .collect()
}

fn q() -> Query {
    Query::default()
}

#[test]
fn by_file_and_kind() {
    let s = store();
    assert_eq!(s.query(&q()).len(), 11 + 5);
    assert_eq!(
        run(&s, |q| q.kind = Some(NodeKind::File)),
        ["home", "work"],
        "files come in path order"
    );
    assert_eq!(
        run(&s, |q| {
            q.file = Some(H.into());
            q.kind = Some(NodeKind::Headline);
        }),
        ["Groceries", "House", "Paint", "Fix sink"]
    );
    assert!(run(&s, |q| q.file = Some("/org/none.org".into())).is_empty());
    assert_eq!(
        run(&s, |q| {
            q.file = Some(W.into());
            q.level = Some(3);
        }),
        ["Feedback"]
    );
}

#[test]
fn by_tag_own_or_inherited() {
    let s = store();
    assert_eq!(
        run(&s, |q| q.tag = Some("writing".into())),
        ["Write spec", "Review", "Feedback", "Meeting"]
    );
    assert_eq!(
        run(&s, |q| q.own_tag = Some("writing".into())),
        ["Write spec", "Review", "Meeting"]
    );
    // FILETAGS: every node of the file, the file node by its own tags.
    let job = run(&s, |q| q.tag = Some("job".into()));
    assert_eq!(job.len(), 11);
    assert_eq!(run(&s, |q| q.own_tag = Some("job".into())), ["work"]);
    assert_eq!(
        run(&s, |q| {
            q.tag = Some("project".into());
            q.file = Some(H.into());
        }),
        ["House", "Paint", "Fix sink"]
    );
    assert!(run(&s, |q| q.tag = Some("nope".into())).is_empty());
    // Tags are case-sensitive, like Org's.
    assert!(run(&s, |q| q.tag = Some("Writing".into())).is_empty());
}

#[test]
fn by_todo_keyword_and_type() {
    let s = store();
    assert_eq!(
        run(&s, |q| q.todo = Some("TODO".into())),
        ["Groceries", "Fix sink", "Write spec", "Beta"]
    );
    assert_eq!(run(&s, |q| q.todo = Some("WAIT".into())), ["Feedback"]);
    assert_eq!(
        run(&s, |q| q.todo_type = Some(TodoType::Done)),
        ["Paint", "Kickoff", "Old idea", "Gamma"]
    );
    assert_eq!(
        run(&s, |q| {
            q.todo_type = Some(TodoType::Todo);
            q.file = Some(W.into());
        }),
        ["Write spec", "Review", "Feedback", "Beta"]
    );
    assert_eq!(
        run(&s, |q| {
            q.todo = Some("TODO".into());
            q.tag = Some("writing".into());
        }),
        ["Write spec"]
    );
}

#[test]
fn by_property() {
    let s = store();
    assert_eq!(
        run(&s, |q| q.property = Some(("OWNER".into(), None))),
        ["Alpha", "Feedback"]
    );
    assert_eq!(
        run(&s, |q| q.property =
            Some(("owner".into(), Some("bob".into())))),
        ["Feedback"]
    );
    assert!(run(&s, |q| q.property =
        Some(("OWNER".into(), Some("carl".into()))))
    .is_empty());
    assert_eq!(
        run(&s, |q| q.property =
            Some(("EMPTY".into(), Some(String::new())))),
        ["Alpha"]
    );
    assert_eq!(
        run(&s, |q| q.property = Some(("EMPTY".into(), None))),
        ["Alpha"]
    );
}

#[test]
fn by_planning_dates() {
    let s = store();
    let sched_before = |d: &str| run(&s, |q| q.scheduled_before = Some(d.into()));
    // Strictly before.
    assert_eq!(sched_before("2024-03-05"), ["Groceries", "Write spec"]);
    assert_eq!(sched_before("2024-03-01"), ["Groceries"]);
    assert_eq!(
        run(&s, |q| q.scheduled_after = Some("2024-03-01".into())),
        ["Review"]
    );
    assert_eq!(
        run(&s, |q| {
            q.scheduled_after = Some("2024-02-01".into());
            q.scheduled_before = Some("2024-03-03".into());
        }),
        ["Groceries", "Write spec"]
    );
    assert_eq!(
        run(&s, |q| q.deadline_before = Some("2024-03-10".into())),
        ["Feedback"]
    );
    assert_eq!(
        run(&s, |q| q.deadline_after = Some("2024-03-01".into())),
        ["Fix sink", "Write spec"]
    );
    // CLOSED on or after.
    assert_eq!(
        run(&s, |q| q.closed_since = Some("2024-03-01".into())),
        ["Paint", "Gamma"]
    );
    assert_eq!(
        run(&s, |q| {
            q.closed_since = Some("2024-02-15".into());
            q.file = Some(W.into());
        }),
        ["Kickoff", "Gamma"]
    );
    assert_eq!(timestamp_date("<2024-03-05 Tue +1w>"), Some("2024-03-05"));
    assert_eq!(timestamp_date("[2024-02-15 Thu 10:00]"), Some("2024-02-15"));
    assert_eq!(timestamp_date("<2000-9-02 Mon +1w>"), None);
    assert_eq!(timestamp_date("<%%(diary-float t 4 2)>"), None);
}

#[test]
fn projects_are_own_project_tag_and_not_done() {
    let s = store();
    assert_eq!(run(&s, |q| q.projects = true), ["House", "Alpha", "Beta"]);
    // A project closed with another done keyword is not active either.
    let s2 = mem_store();
    ingest(
        &s2,
        W,
        "#+TODO: TODO | DONE CANCELLED\n* CANCELLED Dropped :project:\n* Kept :project:\n** Child\n",
    );
    assert_eq!(run(&s2, |q| q.projects = true), ["Kept"]);
    // A file tagged project is not itself a project.
    let s3 = mem_store();
    ingest(&s3, W, "#+FILETAGS: :project:\n* Inherits only\n");
    assert!(run(&s3, |q| q.projects = true).is_empty());
}

#[test]
fn sparse_tree_adds_ancestors_in_document_order() {
    let s = store();
    let got = s.query(&Query {
        file: Some(W.into()),
        todo: Some("WAIT".into()),
        sparse: true,
        ..q()
    });
    let t: Vec<(u32, String)> = got
        .iter()
        .map(|r| (r.index, r.node().content.title.to_string()))
        .collect();
    assert_eq!(
        t,
        [
            (0, "work".to_string()),
            (1, "Alpha".into()),
            (4, "Review".into()),
            (5, "Feedback".into()),
        ]
    );
    // Shared ancestors appear once, everything stays in document order.
    let got = s.query(&Query {
        own_tag: Some("writing".into()),
        sparse: true,
        ..q()
    });
    let t: Vec<String> = got
        .iter()
        .map(|r| r.node().content.title.to_string())
        .collect();
    assert_eq!(
        t,
        ["work", "Alpha", "Write spec", "Review", "Notes", "Meeting"]
    );
    let idx: Vec<u32> = got.iter().map(|r| r.index).collect();
    assert!(idx.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn limit_counts_results_across_files() {
    let s = store();
    let all = run(&s, |q| q.kind = Some(NodeKind::Headline));
    for n in [0, 1, 3, 4, 5, 17, 100] {
        let got = run(&s, |q| {
            q.kind = Some(NodeKind::Headline);
            q.limit = Some(n);
        });
        assert_eq!(got, all[..n.min(all.len())], "limit {n}");
    }
    let got = run(&s, |q| {
        q.todo = Some("TODO".into());
        q.sparse = true;
        q.limit = Some(3);
    });
    assert_eq!(got, ["home", "Groceries", "House"]);
}

#[test]
fn outline_paths() {
    let s = store();
    let path = |title: &str| -> Vec<String> {
        let r: NodeRef = by_title(&s, W, title);
        r.outline_path()
    };
    assert_eq!(path("Feedback"), ["Alpha", "Review"]);
    assert_eq!(path("Review"), ["Alpha"]);
    assert!(path("Alpha").is_empty());
    assert!(nodes(&s, W)[0].outline_path().is_empty());
    let fb = by_title(&s, W, "Feedback");
    let parent = fb.parent().unwrap();
    assert_eq!(&*parent.node().content.title, "Review");
    assert_eq!(parent.outline_path(), ["Alpha"]);
}

#[test]
fn queries_follow_reingest_and_removal() {
    let s = store();
    ingest(&s, H, &HOME.replace("* TODO Groceries", "* DONE Groceries"));
    assert_eq!(
        run(&s, |q| {
            q.todo = Some("TODO".into());
            q.file = Some(H.into());
        }),
        ["Fix sink"]
    );
    assert!(s.remove_file(W));
    assert!(run(&s, |q| q.tag = Some("writing".into())).is_empty());
    assert!(Query {
        tag: Some("errand".into()),
        ..q()
    }
    .matches(by_title(&s, H, "Groceries").node()));
}

#[test]
fn a_count_is_the_length_of_the_query_it_counts() {
    let s = store();
    counts_are_query_lengths(&s);
    // Tags excluded from inheritance: a tag query's count is then its holders, not their
    // subtrees (`#+FILETAGS` included, held by the file node).
    let excluded = Store::in_memory(org_agent::store::Config {
        no_inherit_tags: vec!["writing".into(), "project".into(), "job".into()],
        ..config()
    });
    ingest(&excluded, W, WORK);
    ingest(&excluded, H, HOME);
    counts_are_query_lengths(&excluded);
    let count = |s: &Store, tag: &str| {
        s.count(&Query {
            tag: Some(tag.into()),
            ..q()
        })
    };
    assert!(
        count(&excluded, "project") < count(&s, "project"),
        "excluded, a tag counts only its holders"
    );
    assert_eq!(count(&excluded, "project"), 4, "Alpha, Beta, Gamma, House");
}

/// Every count of a set of queries over `s` is the length of the query's results.
fn counts_are_query_lengths(s: &Store) {
    // A file whose headline repeats its tag: counted once, as the query returns it once.
    ingest(
        s,
        "/org/repeat.org",
        "* TODO Twice :writing:x:writing:\n** TODO Child\n*** Grandchild :writing:\n",
    );
    let mut queries: Vec<Query> = Vec::new();
    for file in [None, Some(W.to_string()), Some("/org/none.org".to_string())] {
        for limit in [None, Some(0), Some(1), Some(3), Some(100)] {
            let base = Query {
                file: file.clone(),
                limit,
                ..q()
            };
            let each: [fn(&mut Query); 12] = [
                |_| {},
                |q| q.todo = Some("TODO".into()),
                |q| q.todo = Some("NOPE".into()),
                |q| q.own_tag = Some("writing".into()),
                |q| q.tag = Some("job".into()),
                |q| q.tag = Some("writing".into()),
                |q| q.tag = Some("project".into()),
                |q| q.tag = Some("absent".into()),
                |q| q.projects = true,
                |q| {
                    q.own_tag = Some("writing".into());
                    q.todo = Some("NEXT".into());
                },
                |q| {
                    q.todo = Some("TODO".into());
                    q.kind = Some(NodeKind::Headline);
                    q.level = Some(1);
                },
                |q| {
                    q.todo_type = Some(TodoType::Done);
                    q.sparse = true;
                },
            ];
            for set in each {
                let mut query = base.clone();
                set(&mut query);
                queries.push(query);
            }
        }
    }
    for query in &queries {
        assert_eq!(s.count(query), s.query(query).len(), "{query:?}");
    }
    // The counts are not all alike: the queries above tell the nodes apart.
    let mut counts: Vec<usize> = queries.iter().map(|q| s.count(q)).collect();
    counts.sort_unstable();
    counts.dedup();
    assert!(counts.len() >= 6, "{counts:?}");
}
