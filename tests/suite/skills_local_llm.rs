//! Each shipped domain skill in use in a turn against a REAL model (llama.cpp's server with
//! the small tool-calling model of scripts/local-llm), on the notes of the skill's own
//! `:turn:` test: the smoke run issue 13 asks for. Only structure is asserted, never
//! wording: the turn ends as a turn may end; every call the model made was decided by the
//! gates (or refused as not fitting its tool); no edit ran without the user (there is
//! none: asks are refused); and the scan tools of skills, called by the real model, ran
//! and their reports went back to it (for at least one skill: the small model does not
//! call every tool it is told of).

use crate::support::local_llm::start;
use org_agent::agent::equipment::Equipment;
use org_agent::agent::turn::{run_turn, Conversation, TurnConfig, TurnError, TurnEvent};
use org_agent::llm::error::LlmError;
use org_agent::llm::http::{Backend, CancelToken, ChatClient};
use org_agent::skills::load::load_dirs;
use org_agent::skills::turns::turn_scripts;
use org_agent::skills::{Skill, SkillToolKind, Source};
use org_agent::store::{Config, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The shipped skills the model may load (the base prompt and the default policy are in
/// every turn already).
fn domain_skills() -> Vec<Skill> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let loaded = load_dirs(&[(dir, Source::Shipped)], &[]);
    assert!(loaded.inactive.is_empty(), "{:?}", loaded.inactive);
    loaded.active.into_iter().filter(|s| !s.always).collect()
}

/// The skill's scan tools, as the model calls them.
fn scan_tools(skill: &Skill) -> Vec<String> {
    skill
        .tools
        .iter()
        .filter(
            |t| matches!(&t.kind, SkillToolKind::Alias { builtin, .. } if builtin == "scan_notes"),
        )
        .map(|t| format!("{}__{}", skill.name, t.name))
        .collect()
}

/// One turn of `skill` on the real model; the events, and how the turn ended.
fn smoke(base_url: &str, skill: &Skill) -> (Vec<TurnEvent>, Result<String, TurnError>) {
    let script = turn_scripts(skill)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{} has no :turn: test", skill.name));
    let store = Arc::new(Store::in_memory(Config::default()));
    store
        .ingest_text("/smoke/notes.org", &script.notes, None, None, None)
        .unwrap_or_else(|e| panic!("{}: the notes do not read: {e}", skill.name));
    let mut backend = Backend::new(base_url.to_string(), "local");
    // Shared 2-core machines: a request that takes 2 s idle can take 100 s under load.
    backend.endpoint.timeouts.first_byte = Duration::from_secs(240);
    backend.endpoint.timeouts.idle = Duration::from_secs(120);
    backend.endpoint.timeouts.total = Duration::from_secs(600);
    backend.max_tokens = Some(200);
    let mut eq = Equipment::new(ChatClient::new(backend).expect("a client"), store);
    // The edit tools' schemas would take the request past the server's 4,096-token
    // window (the skills' prompts are long); an edit the model proposes anyway is refused
    // as a tool it does not have, which the structure below still checks.
    eq.attach_skills(Arc::from(vec![skill.clone()]))
        .unwrap_or_else(|e| panic!("{}: {e}", skill.name));
    eq.use_skill_from_start(skill);
    let mut say = script.say.clone();
    if let Some(tool) = scan_tools(skill).first() {
        say.push_str(&format!(" Call {tool} first."));
    }
    let cfg = TurnConfig {
        temperature: Some(0.0),
        max_depth: 2,
        ..TurnConfig::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut events = Vec::new();
    let result = rt.block_on(run_turn(
        &eq,
        &mut Conversation::default(),
        &say,
        &cfg,
        &CancelToken::new(),
        |e| events.push(e),
    ));
    (events, result)
}

#[test]
fn every_domain_skill_runs_a_turn_on_the_real_model() {
    let server = start("qwen");
    let skills = domain_skills();
    assert!(!skills.is_empty(), "no domain skill is shipped");
    let mut failures = Vec::new();
    let (mut scans_ran, mut scans_missed) = (Vec::new(), Vec::new());
    for skill in &skills {
        let (events, result) = smoke(&server.base_url(), skill);
        let proposed: Vec<(String, &str)> = events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::Proposed { call, decision, .. } => Some((call.name.clone(), *decision)),
                _ => None,
            })
            .collect();
        let why = format!("{}: proposed {proposed:?}; ended {result:?}", skill.name);
        // How a turn may end on this model: an answer, the depth limit, the refusals limit,
        // or llama.cpp's HTTP 500 to prose while tools are offered (its template).
        match &result {
            Ok(_) | Err(TurnError::DepthLimit(_)) | Err(TurnError::TooManyDenials(..)) => {}
            Err(TurnError::Llm(LlmError::Http { status: 500, .. })) => {}
            Err(_) => failures.push(format!("{why}: not a way a turn ends")),
        }
        for (name, decision) in &proposed {
            // `invalid`: the call did not fit the tool's parameters, refused before the gates.
            let decided = ["allow", "ask", "deny", "invalid"]
                .iter()
                .any(|d| decision == d || decision.starts_with(&format!("{d}:")));
            if !decided {
                failures.push(format!("{why}: {name} was decided {decision:?}"));
            }
            let edit = org_agent::tools::emacs::edit_schemas()
                .iter()
                .any(|s| s["function"]["name"] == name.as_str());
            if edit && *decision == "allow" {
                failures.push(format!(
                    "{why}: the edit {name} was allowed with nobody asked"
                ));
            }
        }
        let scans = scan_tools(skill);
        let ran = events.iter().any(|e| {
            matches!(e, TurnEvent::ToolResult { name, ok: true, content, .. }
                     if scans.contains(name) && content.contains(':'))
        });
        if ran {
            scans_ran.push(skill.name.clone());
        } else if !scans.is_empty() {
            scans_missed.push(skill.name.clone());
        }
        eprintln!("smoke {}: {proposed:?}", skill.name);
        for e in &events {
            if let TurnEvent::ToolResult {
                name,
                ok: false,
                content,
                ..
            } = e
            {
                eprintln!(
                    "  {name}: {}",
                    content.chars().take(300).collect::<String>()
                );
            }
        }
    }
    eprintln!("smoke: the scan tool ran for {scans_ran:?}; the model did not call it well for {scans_missed:?}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // A 0.5B model at temperature 0 still calls a told-of tool only some of the time (it
    // adds arguments the schema has not, or answers at once); what must hold is that a real
    // model's call of a skill's alias reaches the scan and its report comes back.
    assert!(
        !scans_ran.is_empty(),
        "no skill's scan tool ran on the real model: {scans_missed:?}"
    );
}
