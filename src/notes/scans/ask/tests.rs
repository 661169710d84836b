use super::*;
use crate::notes::scans::test_notes;
use crate::notes::Privacy;

const WORK: &str = include_str!("../../../../tests/fixtures/everyday/work.org");
const HOME: &str = include_str!("../../../../tests/fixtures/everyday/home.org");
const QUESTIONS: &str = include_str!("../../../../tests/fixtures/everyday/questions.tsv");

/// The fixture's `{d+N}` / `{d-N}` as the Org date N days from `today`.
fn expand(template: &str, today: Day) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(at) = rest.find("{d") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').map(|e| at + e).unwrap_or(rest.len());
        let n: i64 = rest[at + 2..end].parse().unwrap_or(0);
        let day = today.plus(n);
        out.push_str(&format!("{day} {}", day.weekday_name()));
        rest = &rest[(end + 1).min(rest.len())..];
    }
    out.push_str(rest);
    out
}

fn fixture(today: Day) -> Notes {
    test_notes(
        &[
            ("/n/work.org", &expand(WORK, today)),
            ("/n/home.org", &expand(HOME, today)),
        ],
        Privacy::new(["private".to_string()], []),
    )
}

fn ask(notes: &Notes, q: &str, today: Day) -> Option<String> {
    let u = understand(notes, q, today)?;
    Some(answer(notes, &u, today).text())
}

#[test]
fn the_everyday_questions_are_answered_from_the_notes() {
    // On several weekdays: the fixture's dates move with today.
    for today in ["2026-11-26", "2026-11-30", "2027-03-01"] {
        let today = Day::parse(today).unwrap();
        let notes = fixture(today);
        let mut asked = 0;
        for line in QUESTIONS
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let mut cols = line.split('\t');
            let q = cols.next().unwrap();
            let must = cols.next().unwrap_or("");
            let must_not = cols.next().unwrap_or("");
            let Some(text) = ask(&notes, q, today) else {
                panic!("not understood: {q}");
            };
            for fact in must.split('|').filter(|f| !f.is_empty()) {
                // A date is checked by its day, whatever weekday name follows.
                let fact = match fact.contains("{d") {
                    true => expand(fact, today)[..10].to_string(),
                    false => fact.to_string(),
                };
                assert!(text.contains(&fact), "{q}: {fact:?} missing from\n{text}");
            }
            for fact in must_not.split('|').filter(|f| !f.is_empty()) {
                assert!(!text.contains(fact), "{q}: {fact:?} shown in\n{text}");
            }
            asked += 1;
        }
        assert_eq!(asked, 10);
    }
}

#[test]
fn answers_name_files_not_paths_nor_ids() {
    let today = Day::parse("2026-11-26").unwrap();
    let notes = fixture(today);
    let text = ask(&notes, "What is overdue?", today).unwrap();
    assert!(text.contains("(work.org)"), "{text}");
    assert!(!text.contains("/n/"), "{text}");
    assert!(!text.contains("id:"), "{text}");
}

#[test]
fn private_notes_never_answer() {
    let today = Day::parse("2026-11-26").unwrap();
    let notes = fixture(today);
    for q in [
        "What is waiting?",
        "How many tasks are waiting?",
        "What is tagged private?",
    ] {
        let text = ask(&notes, q, today).unwrap_or_default();
        assert!(!text.contains("adoption"), "{q}: {text}");
    }
    let u = understand(&notes, "How many tasks are waiting?", today).unwrap();
    assert!(u.count);
    assert_eq!(answer(&notes, &u, today).items.len(), 3);
}

#[test]
fn nothing_today_says_what_is_overdue() {
    let today = Day::parse("2026-11-26").unwrap();
    let notes = test_notes(
        &[(
            "/n/a.org",
            "* TODO Late one\nDEADLINE: <2026-11-20 Fri>\n* TODO Later\nSCHEDULED: <2026-12-20 Sun>\n",
        )],
        Privacy::default(),
    );
    let text = ask(&notes, "What is scheduled for today?", today).unwrap();
    assert!(
        text.starts_with("No headlines scheduled or due today"),
        "{text}"
    );
    assert!(
        text.contains("Overdue, from before today (1):\n- TODO Late one"),
        "{text}"
    );
}

#[test]
fn questions_the_store_cannot_answer_go_to_the_model() {
    let today = Day::parse("2026-11-26").unwrap();
    let notes = fixture(today);
    for q in [
        "Write me a poem about autumn",
        "Summarise my thoughts on sensors",
        "hello",
    ] {
        assert_eq!(understand(&notes, q, today), None, "{q}");
    }
}

#[test]
fn finished_spans_follow_the_words() {
    let today = Day::parse("2026-11-26").unwrap(); // a Thursday
    let notes = fixture(today);
    let u = |q| understand(&notes, q, today).unwrap().ask;
    assert!(matches!(u("What did I finish this week?"),
        Ask::Finished { since, .. } if since == Day::parse("2026-11-23").unwrap()));
    assert!(matches!(u("What got done yesterday?"),
        Ask::Finished { since, .. } if since == today.plus(-1)));
    assert!(matches!(
        u("What do I need to finish this week?"),
        Ask::Upcoming { days: 7 }
    ));
}

#[test]
fn paraphrases_are_read_as_the_same_questions() {
    let today = Day::parse("2026-11-26").unwrap();
    let notes = fixture(today);
    let u = |q: &str| understand(&notes, q, today).map(|u| (u.ask, u.count));
    assert_eq!(u("Anything overdue?"), Some((Ask::Overdue, false)));
    assert_eq!(
        u("What's due this week?"),
        Some((Ask::Upcoming { days: 7 }, false))
    );
    assert_eq!(
        u("Which tasks are tagged errand?"),
        Some((
            Ask::Tagged {
                tag: "errand".into()
            },
            false
        ))
    );
    assert_eq!(
        u("How many tasks are open?"),
        Some((Ask::OpenTasks { keyword: None }, true))
    );
    assert_eq!(
        u("What are my HOLD tasks?"),
        Some((
            Ask::OpenTasks {
                keyword: Some("HOLD".into())
            },
            false
        ))
    );
    assert!(matches!(
        u("What did I do yesterday?"),
        Some((Ask::Finished { .. }, false))
    ));
    assert!(matches!(
        u("What's the effort for the conference talk?"),
        Some((Ask::Property { ref key, id: Some(_) }, false)) if key == "EFFORT"
    ));
    let Some((Ask::Due { id }, _)) = u("When is the sensor firmware due?") else {
        panic!("not a due date");
    };
    assert_eq!(
        &*notes.node(&id).unwrap().node().content.title,
        "Sensor firmware 2.0"
    );
    assert_eq!(u("What do I have today?"), Some((Ask::Today, false)));
    assert_eq!(
        u("Show me everything tagged home"),
        Some((Ask::Tagged { tag: "home".into() }, false))
    );
}
