//! The skills shipped in the package's `skills/`, loaded as the runtime loads them: each
//! reads, takes its place in the load order and passes its own tests; the agent skill is the
//! prompt the turns send; the safety skill's rules decide on real notes what its tests say,
//! and ask exactly where the default policy's rule for edits asks.

use crate::support::store::{demo_store, id_of};
use org_agent::action::{Action, EmacsAction};
use org_agent::agent::equipment::Equipment;
use org_agent::agent::turn::{step_request, Conversation, StepView, TurnConfig};
use org_agent::gates::{Context, GateRules, OrgEdits, Outcome, Pipeline};
use org_agent::llm::http::{Backend, ChatClient, Message};
use org_agent::notes::{Notes, Privacy};
use org_agent::sexp::read;
use org_agent::skills::disclosure::catalog;
use org_agent::skills::load::{load_dirs, skill_files, Loaded};
use org_agent::skills::prompt::{agent, AgentPrompt};
use org_agent::skills::{gate_rules, run_gate_tests, Skill, Source, Test};
use org_agent::store::{Config, Store};
use org_agent::tools::emacs::edit_action;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("skills")
}

/// The shipped skills, loaded as `org-agent-skills-reload` loads them.
fn shipped() -> Loaded {
    load_dirs(&[(shipped_dir(), Source::Shipped)], &[])
}

fn skill<'l>(loaded: &'l Loaded, name: &str) -> &'l Skill {
    loaded
        .active
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("the shipped skill {name} is not active"))
}

#[test]
fn every_shipped_skill_reads_orders_and_passes_its_own_tests() {
    let folders: Vec<PathBuf> = std::fs::read_dir(shipped_dir())
        .expect("the package has a skills/ directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    let files = skill_files(&shipped_dir());
    assert_eq!(
        files.len(),
        folders.len(),
        "every folder of skills/ is a skill (NAME/SKILL.org): {files:?}"
    );
    let loaded = shipped();
    assert!(loaded.inactive.is_empty(), "{:?}", loaded.inactive);
    let mut names: Vec<&str> = loaded.active.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    let mut folder_names: Vec<&str> = folders
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()))
        .collect();
    folder_names.sort_unstable();
    assert_eq!(names, folder_names);
    for s in &loaded.active {
        let folder = Path::new(&s.file).parent().and_then(|p| p.file_name());
        assert_eq!(
            folder.and_then(|f| f.to_str()),
            Some(s.name.as_str()),
            "{}: the folder is named after the skill",
            s.file
        );
        // A gate table is tested both ways: a case its rules catch and one they let by.
        if !s.gate.is_empty() {
            let expects: Vec<&str> = s.tests.iter().filter_map(|t| expect(t)).collect();
            assert!(expects.contains(&"allow"), "{}: {expects:?}", s.name);
            assert!(
                expects.iter().any(|e| *e == "ask" || *e == "deny"),
                "{}: {expects:?}",
                s.name
            );
            let gate_tests = s.tests.iter().filter(|t| t.kind == "gate").count();
            assert_eq!(run_gate_tests(s).ok(), Some(gate_tests), "{}", s.name);
        }
    }
    // The base prompt and the default policy are always in use; the domain skills are
    // offered by name, and each is tested three ways (issue 13's floor).
    for s in &loaded.active {
        let always = s.name == "agent" || s.name == "safety";
        assert_eq!(s.always, always, "{}", s.name);
        if always {
            continue;
        }
        let count = |kind: &str| s.tests.iter().filter(|t| t.kind == kind).count();
        assert!(
            count("gate") >= 3,
            "{}: {} gate tests",
            s.name,
            count("gate")
        );
        assert!(
            count("trigger") >= 2,
            "{}: {} trigger tests",
            s.name,
            count("trigger")
        );
        assert!(count("turn") >= 1, "{}: no turn test", s.name);
    }
    let offered = catalog(&loaded.active, &no_notes()).expect("the domain skills are offered");
    assert!(!offered.text.contains("safety"), "{}", offered.text);
    assert!(skill(&loaded, "safety").prompt.is_empty());
}

#[test]
fn the_agent_skill_on_disk_is_the_prompt_the_turns_send() {
    let loaded = shipped();
    let on_disk = skill(&loaded, "agent");
    let text = std::fs::read_to_string(&on_disk.file).expect("the agent skill reads");
    let parsed = AgentPrompt::parse(&on_disk.file, &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&parsed, agent(), "the module carries the file as it is");
    assert_eq!(on_disk.prompt, agent().system);

    let store = Arc::new(Store::in_memory(Config::default()));
    let client = ChatClient::new(Backend::new("http://127.0.0.1:9/v1", "m")).expect("a client");
    let mut eq = Equipment::new(client, store);
    let system = |eq: &Equipment, tools_off: bool| {
        let step = StepView {
            tool_focus: None,
            tools_off,
        };
        let request = step_request(eq, &Conversation::default(), &TurnConfig::default(), step);
        match &request.messages[0] {
            // After the skill's conventions, the rule about this request's data blocks.
            Message::System(text) => match text.split_once("\n\nData blocks. ") {
                Some((skill, _rule)) => {
                    // The part a wire format with prompt caching may cache: the prompts,
                    // up to this request's boundary, which changes with every request.
                    assert_eq!(request.cache_prefix, Some(skill.len()), "{text}");
                    let again =
                        step_request(eq, &Conversation::default(), &TurnConfig::default(), step);
                    match &again.messages[0] {
                        Message::System(next) => {
                            assert_ne!(next, text, "each request has a boundary of its own");
                            assert_eq!(next[..skill.len()], text[..skill.len()]);
                        }
                        other => panic!("the first message is {other:?}"),
                    }
                    skill.to_owned()
                }
                None => panic!("no rule about data blocks: {text}"),
            },
            other => panic!("the first message is {other:?}"),
        }
    };
    let a = agent();
    assert_eq!(system(&eq, false), format!("{} {}", a.system, a.with_tools));
    assert_eq!(
        system(&eq, true),
        format!("{} {}", a.system, a.without_tools)
    );
    eq.edit_tools = true;
    assert_eq!(
        system(&eq, false),
        format!("{} {} {}", a.system, a.with_tools, a.editing)
    );
}

fn property<'t>(test: &'t Test, key: &str) -> Option<&'t str> {
    test.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
}

fn expect(test: &Test) -> Option<&str> {
    property(test, "EXPECT")
}

/// What the turn asks the gates about when the model calls edit tool `tool` on `id` with
/// the `key=value` words of `args`.
fn edit(tool: &str, id: &str, args: &str) -> Action {
    let mut json = serde_json::Map::new();
    let target = if tool == "add_headline" {
        "parent"
    } else {
        "id"
    };
    json.insert(target.into(), id.into());
    for word in args.split_whitespace() {
        let (k, v) = word.split_once('=').expect("key=value");
        json.insert(k.into(), v.into());
    }
    match edit_action(tool, &serde_json::Value::Object(json)) {
        Some(Ok(e)) => Action::Emacs(e),
        other => panic!("{tool}: {other:?}"),
    }
}

/// The gate context of a chat turn: the built-in tools, all read-only, and `approved`.
fn context(approved: &[String]) -> Context {
    let mut ctx = Context::default();
    for tool in ["query_notes", "read_node"] {
        ctx.tools.insert(tool.into());
        ctx.read_only_tools.insert(tool.into());
    }
    ctx.approved.extend(approved.iter().cloned());
    ctx
}

#[test]
fn the_safety_skill_decides_on_the_demo_notes_what_its_tests_say() {
    let loaded = shipped();
    let safety = skill(&loaded, "safety");
    let store = Arc::new(demo_store(Config::default(), &["tasks.org"]));
    let notes = Notes::new(store.clone(), Arc::new(Privacy::default()));
    // As a chat turn holds it: the default policy, then the skill.
    let mut pipeline = Pipeline::default_policy();
    pipeline.attach(gate_rules(safety, notes));
    let gate_tests: Vec<&Test> = safety.tests.iter().filter(|t| t.kind == "gate").collect();
    assert!(gate_tests.len() >= 6, "{}", gate_tests.len());
    for test in gate_tests {
        let tool = property(test, "ACTION").expect(":ACTION:");
        let target = property(test, "TARGET").expect(":TARGET:");
        let approved: Vec<String> = property(test, "APPROVED")
            .unwrap_or_default()
            .split_whitespace()
            .map(|k| k.replace('_', "-"))
            .collect();
        let action = edit(
            tool,
            &id_of(&store, target),
            property(test, "ARGS").unwrap_or_default(),
        );
        let outcome = pipeline.decide(action, &context(&approved)).outcome;
        let from_safety = |reasons: &[String]| reasons.iter().any(|r| r.contains("skill safety"));
        match (expect(test), &outcome) {
            (Some("allow"), Outcome::Allow(_)) => {}
            (Some("ask"), Outcome::Ask { reasons, .. }) if from_safety(reasons) => {}
            (Some("deny"), Outcome::Deny { reasons }) if from_safety(reasons) => {}
            (expected, got) => panic!("{}: expected {expected:?}, got {got:?}", test.title),
        }
    }
}

/// One of every Emacs action, on the node `id`.
fn every_emacs_action(id: &str) -> Vec<Action> {
    let plists = [
        "(:action :insert :buffer \"*chat*\" :text \"hi\")".to_string(),
        "(:action :stream-append :buffer \"*chat*\" :text \"hi\")".to_string(),
        "(:action :message :text \"hi\")".to_string(),
        format!("(:action :add-headline :parent \"{id}\" :title \"New\")"),
        format!("(:action :set-todo :id \"{id}\" :state \"DONE\")"),
        format!("(:action :set-property :id \"{id}\" :key \"K\" :value \"v\")"),
        format!("(:action :delete-property :id \"{id}\" :key \"K\")"),
        format!("(:action :set-tags :id \"{id}\" :tags (\"a\"))"),
        format!("(:action :schedule :id \"{id}\" :date \"2026-12-01\")"),
        format!("(:action :deadline :id \"{id}\" :date \"2026-12-01\")"),
        format!("(:action :replace-body :id \"{id}\" :body \"b\")"),
        format!("(:action :append-body :id \"{id}\" :text \"b\")"),
        format!("(:action :visit-node :id \"{id}\")"),
        "(:action :call-tool :name \"shout\" :args (:word \"hi\"))".to_string(),
        "(:action :create-skill :name \"tidy\" :text \"#+SKILL_NAME: tidy\")".to_string(),
        "(:action :eval-elisp :code \"(+ 1 2)\")".to_string(),
        format!("(:action :refile :id \"{id}\" :target-id \"{id}\")"),
        format!("(:action :archive :id \"{id}\")"),
        format!("(:action :ensure-id :id \"{id}\")"),
        "(:action :create-note :file \"new.org\" :title \"New\")".to_string(),
        format!("(:action :insert-link :id \"{id}\" :target-id \"{id}\")"),
        format!("(:action :add-note :id \"{id}\" :text \"n\")"),
    ];
    let actions: Vec<Action> = plists
        .iter()
        .map(|p| {
            let text = format!("(:type :request :target :emacs {}", &p[1..]);
            let value = read(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            Action::from_sexp(value.value()).unwrap_or_else(|e| panic!("{text}: {e}"))
        })
        .collect();
    let mut names: Vec<&str> = actions.iter().map(|a| kind_name(a)).collect();
    names.sort_unstable();
    let mut all = EmacsAction::NAMES.to_vec();
    all.sort_unstable();
    assert_eq!(names, all, "one of every Emacs action");
    actions
}

fn kind_name(action: &Action) -> &'static str {
    match action {
        Action::Emacs(e) => e.name(),
        Action::Tool { .. } => "tool",
    }
}

#[test]
fn the_safety_skill_asks_exactly_where_the_default_policy_asks_about_edits() {
    let loaded = shipped();
    let store = Arc::new(demo_store(Config::default(), &["tasks.org"]));
    let notes = Notes::new(store.clone(), Arc::new(Privacy::default()));
    let skill_alone = Pipeline::from_rules(vec![gate_rules(skill(&loaded, "safety"), notes)]);
    let floor_alone = Pipeline::from_rules(vec![GateRules {
        source: "default policy: edits".into(),
        gates: vec![Box::new(OrgEdits)],
    }]);
    let id = id_of(&store, "Call the plumber about the leak");
    let label = |o: Outcome| match o {
        Outcome::Allow(_) => "allow",
        Outcome::Ask { .. } => "ask",
        Outcome::Deny { .. } => "deny",
    };
    let mut asked = 0;
    for action in every_emacs_action(&id) {
        for approved in [vec![], vec![action.kind()]] {
            let ctx = context(&approved);
            let by_skill = label(skill_alone.decide(action.clone(), &ctx).outcome);
            let by_floor = label(floor_alone.decide(action.clone(), &ctx).outcome);
            assert_eq!(
                by_skill,
                by_floor,
                "{} approved={approved:?}",
                action.kind()
            );
            asked += usize::from(by_skill == "ask");
        }
    }
    assert_eq!(
        asked, 17,
        "every edit asks until approved, nothing else does"
    );
    // A tool call is no edit: the skill leaves it to the rules that stay in Rust.
    let tool = Action::Tool {
        name: "query_notes".into(),
        args: org_agent::sexp::Sexp::from(org_agent::sexp::Value::Nil),
    };
    assert_eq!(
        label(skill_alone.decide(tool, &context(&[])).outcome),
        "allow"
    );
}

/// The Org text of `block`, unescaped as Org does (`,*` → `*`, `,#+` → `#+`, `,,*` → `,*`).
fn org_unescape(block: &str) -> String {
    let mut out = String::new();
    for line in block.lines() {
        let rest = line.trim_start();
        let indent = &line[..line.len() - rest.len()];
        match rest.strip_prefix(',') {
            Some(r) if r.starts_with('*') || r.starts_with("#+") || r.starts_with(',') => {
                out.push_str(indent);
                out.push_str(r);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_readme_example_is_a_skill_that_loads_and_passes_its_tests() {
    let readme = std::fs::read_to_string(shipped_dir().join("README.org")).expect("README");
    let example = readme
        .split("* A small complete example")
        .nth(1)
        .and_then(|s| s.split("#+begin_src org\n").nth(1))
        .and_then(|s| s.split("\n#+end_src").next())
        .expect("the README's complete example");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let folder = dir.path().join("project-closing");
    std::fs::create_dir_all(&folder).expect("a folder");
    std::fs::write(folder.join("SKILL.org"), org_unescape(example)).expect("written");
    let loaded = load_dirs(&[(dir.path().to_path_buf(), Source::User)], &[]);
    assert!(loaded.inactive.is_empty(), "{:?}", loaded.inactive);
    let skill = &loaded.active[0];
    assert_eq!(skill.name, "project-closing");
    assert_eq!(skill.references[0].0, "What a project is");
    assert_eq!(run_gate_tests(skill).ok(), Some(2));
    let listed = catalog(&loaded.active, &no_notes()).expect("it is offered");
    assert!(
        listed
            .text
            .contains("- project-closing: Use when the user closes a project"),
        "{}",
        listed.text
    );
}

/// The text of the README's `#+begin_example` block that follows `after`, unescaped.
fn readme_example(after: &str) -> String {
    let readme = std::fs::read_to_string(shipped_dir().join("README.org")).expect("README");
    let example = readme
        .split(after)
        .nth(1)
        .and_then(|s| s.split("#+begin_example\n").nth(1))
        .and_then(|s| s.split("\n#+end_example").next())
        .unwrap_or_else(|| panic!("no example after {after:?} in the README"));
    org_unescape(example)
}

#[test]
fn the_readme_elisp_tool_example_loads_with_its_optional_parameter() {
    let text = format!(
        "#+SKILL_NAME: words\n#+DESCRIPTION: Use to count words.\n{}\n",
        readme_example("*An Elisp tool*")
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("words.skill.org"), text).expect("written");
    let loaded = load_dirs(&[(dir.path().to_path_buf(), Source::User)], &[]);
    assert!(loaded.inactive.is_empty(), "{:?}", loaded.inactive);
    let tools = org_agent::skills::tools::SkillTools::of(&loaded.active[0]).expect("its tools");
    let count = tools
        .elisp_tool("words__word-count")
        .expect("the word-count tool");
    assert_eq!(
        count.declaration.parameters["required"],
        serde_json::json!(["file"])
    );
    assert_eq!(
        count.declaration.parameters["properties"]["max"]["type"],
        "integer"
    );
}

/// Notes with nothing in them, under the default privacy rules: to show skills through.
fn no_notes() -> Notes {
    Notes::new(
        Arc::new(Store::in_memory(Config::default())),
        Arc::new(Privacy::default()),
    )
}
