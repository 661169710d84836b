//! The context of a request: what is in it, in which priority, and the token budget.

use crate::support::store::{id_of, notes};
use org_agent::context::{assemble, ContextSpec};
use org_agent::llm::estimate_tokens;
use org_agent::store::{Config, Store};
use std::sync::Arc;

fn store() -> Arc<Store> {
    let store = Store::in_memory(Config::default());
    let mut text = String::from("#+TITLE: Work\n");
    for p in 0..12 {
        text.push_str(&format!("* TODO Project {p} :project:\n"));
        for c in 0..3 {
            text.push_str(&format!("** TODO Step {c} of project {p}\n"));
        }
    }
    text.push_str("* Garden\n** Tulips\nPlant them in October, 10 cm deep.\n");
    text.push_str("** DONE Mow the lawn\nCLOSED: [2026-11-20 Fri 10:00]\n");
    text.push_str("** DONE Rake leaves\nCLOSED: [2026-11-21 Sat 10:00]\n");
    text.push_str("** DONE Old chore\nCLOSED: [2026-01-02 Fri 10:00]\n");
    text.push_str("* The focus :focus:\n");
    text.push_str(&"A long body line about the focus.\n".repeat(40));
    store
        .ingest_text("/n/work.org", &text, None, None, None)
        .unwrap();
    Arc::new(store)
}

#[test]
fn sections_come_in_priority_order_and_whole() {
    let store = store();
    let notes = notes(&store);
    let focus = id_of(&store, "The focus");
    let related = vec![(id_of(&store, "Tulips"), 0.91f32)];
    let spec = ContextSpec {
        focus: Some(&focus),
        focus_is_users: true,
        related: &related,
        done_since: Some("2026-11-15"),
        budget_tokens: 100_000,
        ..ContextSpec::default()
    };
    let all = assemble(&notes, &spec);
    let at = |s: &str| all.find(s).unwrap_or_else(|| panic!("{s} missing:\n{all}"));
    assert!(at("* The node the user is on") < at("* Related notes"));
    assert!(at("* Related notes") < at("* Active projects (12)"));
    assert!(at("* Active projects (12)") < at("* Recently completed"));
    assert!(
        all.contains("Plant them in October"),
        "related bodies are shown"
    );
    assert!(all.contains("(similarity 0.91)"));
    // Most recent first, and only since the date.
    assert!(at("DONE Rake leaves") < at("DONE Mow the lawn"));
    assert!(!all.contains("Old chore"));

    // A budget that holds the focus and a few projects: later sections and the rest of the
    // projects go, whole items only, and the omission is said.
    let focus_only = assemble(
        &notes,
        &ContextSpec {
            budget_tokens: 0,
            ..spec.clone()
        },
    );
    assert!(focus_only.starts_with("* The node the user is on"));
    assert!(!focus_only.contains("* Active projects"));
    let budget = estimate_tokens(&focus_only) + 400;
    let some = assemble(
        &notes,
        &ContextSpec {
            budget_tokens: budget,
            ..spec.clone()
        },
    );
    assert!(estimate_tokens(&some) <= budget, "over budget");
    assert!(some.contains("* Related notes"));
    assert!(some.contains("* Active projects (12)"), "{some}");
    assert!(!some.contains("* Recently completed"), "{some}");
    assert!(some.contains("more projects (query_notes with projects: true)"));
    // Every project shown has all its children: nothing is cut mid-item.
    for p in 0..12 {
        if some.contains(&format!("TODO Project {p} :project:")) {
            for c in 0..3 {
                assert!(
                    some.contains(&format!("Step {c} of project {p} ")),
                    "{some}"
                );
            }
        }
    }
}

#[test]
fn the_focus_is_shown_even_over_budget_and_never_twice() {
    let store = store();
    let notes = notes(&store);
    let focus = id_of(&store, "The focus");
    let related = vec![(focus.clone(), 0.99f32)];
    let out = assemble(
        &notes,
        &ContextSpec {
            focus: Some(&focus),
            focus_is_users: true,
            related: &related,
            done_since: None,
            budget_tokens: 10,
            ..ContextSpec::default()
        },
    );
    assert!(out.contains("A long body line about the focus."));
    assert!(!out.contains("* Related notes"), "{out}");
}

#[test]
fn today_and_the_open_tasks_due_soon_are_shown_earliest_first() {
    // Asked "what should I do today?", a model knows neither the date nor the agenda.
    let store = Store::in_memory(Config::default());
    let text = "* TODO Renew the card\nSCHEDULED: <2026-11-23 Mon .+1w>\n\
                * TODO Overdue report\nDEADLINE: <2026-11-01 Sun>\n\
                * TODO Next month\nSCHEDULED: <2026-12-24 Thu>\n\
                * DONE Done already\nSCHEDULED: <2026-11-22 Sun>\n\
                * TODO Both dates\nSCHEDULED: <2026-11-25 Wed> DEADLINE: <2026-11-20 Fri>\n\
                * TODO Secret errand :private:\nSCHEDULED: <2026-11-23 Mon>\n\
                * No task at all\nSCHEDULED: <2026-11-23 Mon>\n";
    store
        .ingest_text("/n/tasks.org", text, None, None, None)
        .unwrap();
    let store = Arc::new(store);
    let notes = notes(&store);
    let out = assemble(
        &notes,
        &ContextSpec {
            today: Some("2026-11-23 Mon"),
            due_before: Some("2026-12-01"),
            ..ContextSpec::default()
        },
    );
    assert!(out.starts_with("* Today is 2026-11-23 Mon\n"), "{out}");
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("{s} missing:\n{out}"));
    at("* Open tasks scheduled or due before 2026-12-01, earliest first\n");
    assert!(at("Overdue report") < at("Both dates"));
    assert!(at("Both dates") < at("Renew the card"));
    for absent in [
        "Next month",
        "Done already",
        "Secret errand",
        "No task at all",
    ] {
        assert!(!out.contains(absent), "{absent} shown:\n{out}");
    }
    // Without the dates, neither section.
    let plain = assemble(&notes, &ContextSpec::default());
    assert!(
        !plain.contains("Today is") && !plain.contains("Open tasks"),
        "{plain}"
    );
}
