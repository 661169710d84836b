use super::*;
use crate::gates::{GateRules, Outcome, Pipeline};
use crate::sexp::Sexp;

fn rules(text: &str) -> Result<Permissions, PermissionError> {
    let v = crate::sexp::read(text).expect("the test's rules read");
    Permissions::from_sexp(v.value())
}

fn tool(name: &str, args: &str) -> Action {
    let v = crate::sexp::read(args).expect("the test's args read");
    Action::Tool {
        name: name.into(),
        args: Sexp::from(crate::sexp::clone_value(v.value())),
    }
}

fn edit(file: &str) -> Action {
    Action::Emacs(EmacsAction::AddHeadline {
        file: Some(file.into()),
        parent: None,
        title: "New".into(),
        todo: None,
        tags: vec![],
        properties: vec![],
        body: None,
    })
}

fn chat() -> Context {
    let mut ctx = Context::default();
    for t in ["run_command", "read_file", "query_notes"] {
        ctx.tools.insert(t.into());
    }
    ctx.read_only_tools.insert("query_notes".into());
    ctx
}

fn pipeline(p: Permissions) -> Pipeline {
    let commands = crate::gates::command::CommandRules::with_user(p.command_rules());
    let mut rules = GateRules::default_policy();
    rules.gates.extend(GateRules::commands(commands).gates);
    rules.gates.push(Box::new(PermissionGate {
        permissions: std::sync::Arc::new(p),
        notes: None,
    }));
    Pipeline::from_rules(vec![rules])
}

fn outcome(p: &Pipeline, a: Action, ctx: &Context) -> &'static str {
    match p.decide(a, ctx).outcome {
        Outcome::Allow(_) => "allow",
        Outcome::Ask { .. } => "ask",
        Outcome::Deny { .. } => "deny",
    }
}

#[test]
fn deny_beats_ask_beats_allow_whatever_the_order() {
    let p = rules(
        r#"((allow run_command "git *") (deny run_command "git push") (ask run_command "git push"))"#,
    )
    .unwrap();
    let ctx = chat();
    let m = p
        .decide("run_command", Some("git push origin"), &ctx)
        .unwrap();
    assert_eq!((m.permit, m.number), (Permit::Deny, 2));
    let m = p.decide("run_command", Some("git status"), &ctx).unwrap();
    assert_eq!((m.permit, m.number), (Permit::Allow, 1));
    assert!(p.decide("run_command", Some("ls"), &ctx).is_none());
    // Every matching rule is reported, with why.
    let all = p.matches("run_command", Some("git push"), &ctx);
    assert_eq!(all.iter().map(|m| m.number).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(all[1].why.contains("\"git push\" matches"), "{:?}", all[1]);
}

#[test]
fn argv_prefixes_match_whole_words() {
    // An allow names its argv exactly; with a trailing `*`, any argv it starts.
    let p = rules(r#"((allow run_command "git status"))"#).unwrap();
    let ctx = chat();
    assert!(p.decide("run_command", Some("git status"), &ctx).is_some());
    assert!(p
        .decide("run_command", Some("git status -s"), &ctx)
        .is_none());
    let p = rules(r#"((allow run_command "git status *"))"#).unwrap();
    assert!(p
        .decide("run_command", Some("git status -s"), &ctx)
        .is_some());
    assert!(p.decide("run_command", Some("git statusx"), &ctx).is_none());
    assert!(p.decide("run_command", Some("git"), &ctx).is_none());
}

#[test]
fn scopes_hold_where_they_say() {
    let p = rules(
        r#"((allow add-headline :scope chat) (deny add-headline :scope background)
            (ask set-todo :scope "inbox"))"#,
    )
    .unwrap();
    let mut ctx = chat();
    assert_eq!(
        p.decide("add-headline", None, &ctx).unwrap().permit,
        Permit::Allow
    );
    ctx.background = true;
    assert_eq!(
        p.decide("add-headline", None, &ctx).unwrap().permit,
        Permit::Deny
    );
    assert!(p.decide("set-todo", None, &ctx).is_none());
    ctx.skills_in_use.insert("inbox".into());
    assert_eq!(
        p.decide("set-todo", None, &ctx).unwrap().permit,
        Permit::Ask
    );
}

#[test]
fn examples_are_checked_when_the_rules_load() {
    assert!(rules(
        r#"((allow run_command "git log *" :match ("git log --oneline") :not-match ("git push")))"#
    )
    .is_ok());
    let e = rules(r#"((allow read_file "/srv/*" :match "/srv/a/b.txt"))"#).unwrap_err();
    assert!(
        e.to_string().contains("rule 1")
            && e.to_string()
                .contains("\"/srv/a/b.txt\" (:match) does not match"),
        "{e}"
    );
    let e = rules(r#"((deny run_command "rm") (allow run_command "git *" :not-match "git push"))"#)
        .unwrap_err();
    assert!(e.to_string().contains("rule 2") && e.to_string().contains("(:not-match) matches"));
}

#[test]
fn malformed_rules_say_what_is_wrong() {
    for (text, says) in [
        ("(allow)", "a rule is a list"),
        ("((permit run_command))", "allow, ask or deny, not permit"),
        ("((allow))", "names no tool"),
        ("((allow 3))", "must be a name"),
        ("((allow query_notes \"x\"))", "takes no pattern"),
        ("((allow read_file \"notes/*.org\"))", "must be absolute"),
        ("((allow run_command \"\"))", "empty command pattern"),
        (
            "((allow run_command \"ls\" :color red))",
            "unknown key :color",
        ),
        ("((allow run_command \"ls\" :scope))", "has no value"),
        ("((allow run_command \"ls\" :scope 3))", ":scope is chat"),
        ("((allow query_notes :match \"x\"))", "takes no examples"),
        ("\"rules\"", "must be a list of rules"),
    ] {
        let e = rules(text).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[test]
fn an_allow_lifts_the_default_ask_but_never_a_wall() {
    let p = pipeline(
        rules(r#"((allow add-headline "/home/u/notes/**") (allow insert) (allow create-skill))"#)
            .unwrap(),
    );
    let ctx = chat();
    assert_eq!(outcome(&p, edit("/home/u/notes/inbox.org"), &ctx), "allow");
    assert_eq!(outcome(&p, edit("/home/u/other/inbox.org"), &ctx), "ask");
    let insert = Action::Emacs(EmacsAction::Insert {
        text: "x".into(),
        buffer: "notes.org".into(),
    });
    assert_eq!(outcome(&p, insert, &ctx), "deny");
    let skill = Action::Emacs(EmacsAction::CreateSkill {
        name: "s".into(),
        text: "t".into(),
    });
    assert_eq!(outcome(&p, skill, &ctx), "ask");
}

#[test]
fn deny_and_ask_rules_tighten_and_refusals_name_no_pattern() {
    let p = pipeline(rules(r#"((deny read_file "/home/u/diary/**") (ask query_notes))"#).unwrap());
    let mut ctx = chat();
    let read = tool("read_file", r#"(:path "/home/u/diary/2026.org")"#);
    let v = p.decide(read, &ctx);
    let Outcome::Deny { reasons } = v.outcome else {
        panic!("{v:?}")
    };
    assert!(reasons
        .iter()
        .any(|r| r.contains("rule 1 of org-agent-permissions")));
    assert!(reasons.iter().all(|r| !r.contains("diary")), "{reasons:?}");
    assert_eq!(outcome(&p, tool("query_notes", "()"), &ctx), "ask");
    // An ask rule honours an approval for the conversation.
    ctx.approved.insert("tool:query_notes".into());
    assert_eq!(outcome(&p, tool("query_notes", "()"), &ctx), "allow");
}

#[test]
fn off_tools_are_enabled_only_by_allow_or_ask_and_roots_come_from_path_rules() {
    let p = rules(
        r#"((deny eval_elisp) (ask run_command "make") (allow read_file "/srv/data/**")
            (deny read_file "/etc/**"))"#,
    )
    .unwrap();
    assert!(p.enables("run_command"));
    assert!(!p.enables("eval_elisp"));
    assert_eq!(p.file_roots(), ["/srv/data"]);
    let home = std::env::var("HOME").unwrap_or_default();
    let p = rules(r#"((allow list_directory "~/src/*/docs"))"#).unwrap();
    assert_eq!(
        p.file_roots(),
        [format!("{}/src", home.trim_end_matches('/'))]
    );
}

#[test]
fn edits_are_judged_by_the_file_they_change_and_tools_by_globs() {
    let p =
        rules(r#"((deny set-* "/srv/locked/*.org") (allow eval_elisp "(message *)"))"#).unwrap();
    let ctx = chat();
    assert!(p
        .decide("set-todo", Some("/srv/locked/a.org"), &ctx)
        .is_some());
    assert!(p
        .decide("set-todo", Some("/srv/locked/sub/a.org"), &ctx)
        .is_none());
    assert!(p
        .decide("add-headline", Some("/srv/locked/a.org"), &ctx)
        .is_none());
    assert!(p
        .decide("eval_elisp", Some("(message \"a/b\")"), &ctx)
        .is_some());
    assert!(p
        .decide("eval_elisp", Some("(delete-file \"x\")"), &ctx)
        .is_none());
    let (name, subject) = subject_of(&edit("/srv/locked/a.org"), None);
    assert_eq!(
        (name.as_str(), subject.as_deref()),
        ("add-headline", Some("/srv/locked/a.org"))
    );
    let (name, subject) = subject_of(&tool("run_command", r#"(:command "ls -l")"#), None);
    assert_eq!(
        (name.as_str(), subject.as_deref()),
        ("run_command", Some("ls -l"))
    );
}

#[test]
fn explain_shows_every_matching_rule_and_each_gates_part() {
    let p = rules(
        r#"((allow run_command "git *") (deny run_command "git push" :reason "never from here"))"#,
    )
    .unwrap();
    let pipe = pipeline(p.clone());
    let text = explain(
        &pipe,
        &p,
        tool("run_command", r#"(:command "git push origin main")"#),
        &chat(),
        None,
    );
    assert!(
        text.contains("Action: run_command on \"git push origin main\""),
        "{text}"
    );
    assert!(
        text.contains("rule 1 (allow run_command \"git *\"): allow"),
        "{text}"
    );
    assert!(
        text.contains("rule 2 (deny run_command \"git push\"): deny"),
        "{text}"
    );
    assert!(
        text.contains("commands               deny: run_command: git push origin main: rule 2"),
        "{text}"
    );
    assert!(
        text.contains("Decision: deny (run_command: git push origin main: rule 2 of"),
        "{text}"
    );
    let text = explain(&pipe, &p, tool("query_notes", "()"), &chat(), None);
    assert!(text.contains("none: the default policy"), "{text}");
    assert!(text.contains("Decision: allow"), "{text}");
}

#[test]
fn underscores_and_dashes_name_the_same_tool() {
    let p = rules(r#"((ask eval-elisp "(message *)") (deny add_headline "/srv/**"))"#).unwrap();
    let ctx = chat();
    assert!(p.enables("eval_elisp"));
    assert!(p.decide("eval_elisp", Some("(message 1)"), &ctx).is_some());
    assert!(p.decide("add-headline", Some("/srv/a.org"), &ctx).is_some());
    // A star does not turn a tool that is off by default on.
    assert!(!rules("((allow *))").unwrap().enables("run_command"));
}

#[test]
fn command_patterns_become_run_commands_rules_judged_part_by_part() {
    let p = rules(
        r#"((allow run_command "make test *" :match "make test -j2" :not-match "make install")
            (deny run_command "git push"))"#,
    )
    .unwrap();
    let ctx = chat();
    // A part of a compound line matches; the gate of the commands judges each part.
    assert!(p
        .decide("run_command", Some("ls && git push"), &ctx)
        .is_some());
    let commands = crate::gates::command::CommandRules::with_user(p.command_rules());
    let j = commands.judge("make test -j2");
    assert_eq!(j.decision, CommandDecision::Allow, "{j:?}");
    assert!(
        j.reason.contains("rule 1 of org-agent-permissions"),
        "{j:?}"
    );
    assert_eq!(
        commands.judge("make test && git push").decision,
        CommandDecision::Deny
    );
    assert_eq!(
        commands.judge("make install").decision,
        CommandDecision::Ask
    );
    // The permission gate leaves patterned command rules to that gate; a rule about every
    // command holds here.
    let pipe = pipeline(rules("((ask run_command))").unwrap());
    let mut ctx = chat();
    assert_eq!(
        outcome(&pipe, tool("run_command", r#"(:command "ls")"#), &ctx),
        "ask"
    );
    ctx.approved.insert("tool:run_command".into());
    assert_eq!(
        outcome(&pipe, tool("run_command", r#"(:command "ls")"#), &ctx),
        "allow"
    );
}

#[test]
fn paths_are_judged_where_they_really_lead() {
    let dir = std::env::temp_dir().join(format!("org-agent-perm-{}", std::process::id()));
    let secret = dir.join("secret");
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(secret.join("a.txt"), "x").unwrap();
    let link = dir.join("public");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let p = rules(&format!(
        r#"((deny read_file "{}/secret/**"))"#,
        dir.display()
    ))
    .unwrap();
    let pipe = pipeline(p);
    let through_link = tool(
        "read_file",
        &format!(r#"(:path "{}/public/a.txt")"#, dir.display()),
    );
    assert_eq!(outcome(&pipe, through_link, &chat()), "deny");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refile_is_judged_at_both_ends() {
    let gate = |text: &str| PermissionGate {
        permissions: std::sync::Arc::new(rules(text).unwrap()),
        notes: None,
    };
    let ctx = chat();
    let into = |to: &str| {
        Action::Emacs(EmacsAction::Refile {
            id: "x".into(),
            target_id: None,
            target_file: Some(to.into()),
        })
    };
    // Without notes the source node's file is unknown: the destination alone is judged.
    let locked = gate(r#"((deny refile "/srv/locked/*.org"))"#);
    assert!(matches!(
        locked.check(&into("/srv/locked/a.org"), &ctx).unwrap(),
        Decision::Deny(_)
    ));
    assert_eq!(
        locked.check(&into("/srv/open/a.org"), &ctx).unwrap(),
        Decision::Allow
    );
    assert_eq!(
        second_subject(&into("/srv/locked/a.org"), None).as_deref(),
        Some("/srv/locked/a.org")
    );
    // An allow at one end only does not permit the move; a deny or ask at either end holds.
    let p = rules(r#"((allow refile "/srv/open/*.org") (ask refile "/srv/ask/*.org"))"#).unwrap();
    let at = |file: &str| p.decide("refile", Some(file), &ctx);
    let permit = |m: Option<Match>| m.map(|m| m.permit);
    assert_eq!(
        permit(both_ends(at("/srv/open/a.org"), at("/srv/x/b.org"))),
        None
    );
    assert_eq!(
        permit(both_ends(at("/srv/open/a.org"), at("/srv/open/b.org"))),
        Some(Permit::Allow)
    );
    assert_eq!(
        permit(both_ends(at("/srv/open/a.org"), at("/srv/ask/b.org"))),
        Some(Permit::Ask)
    );
    assert_eq!(
        permit(both_ends(at("/srv/x/a.org"), at("/srv/ask/b.org"))),
        Some(Permit::Ask)
    );
}

#[test]
fn a_dotted_path_to_a_file_not_written_yet_is_judged_where_it_leads() {
    let dir = std::env::temp_dir().join(format!("org-agent-perm-dots-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("archive")).unwrap();
    std::fs::create_dir_all(dir.join("inbox")).unwrap();
    let p = rules(&format!(
        r#"((deny write_file "{}/archive/**"))"#,
        dir.display()
    ))
    .unwrap();
    let pipe = pipeline(p);
    let dotted = tool(
        "write_file",
        &format!(r#"(:path "{}/inbox/../archive/new.txt")"#, dir.display()),
    );
    assert_eq!(outcome(&pipe, dotted, &chat()), "deny");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mcp_tools_ask_by_default_and_rules_name_them_by_server_and_tool() {
    let mut ctx = chat();
    for t in ["files__read_text_file", "files__write_file", "web__fetch"] {
        ctx.tools.insert(t.into());
        ctx.mcp_tools.insert(t.into());
    }
    // A skill's tool is spelled like an MCP tool, but it is not one.
    ctx.tools.insert("files__summary".into());
    ctx.read_only_tools.insert("files__summary".into());
    // Nothing said: every MCP tool asks (it is not read-only).
    let p = pipeline(rules("()").expect("empty"));
    assert_eq!(
        outcome(&p, tool("files__read_text_file", "()"), &ctx),
        "ask"
    );
    let p = pipeline(
        rules(
            r#"((allow mcp "files__read_*" :match ("files__read_text_file") :not-match ("files__write_file"))
                (deny files__write_file)
                (deny mcp "web__*"))"#,
        )
        .expect("loads"),
    );
    assert_eq!(
        outcome(&p, tool("files__read_text_file", "()"), &ctx),
        "allow"
    );
    assert_eq!(outcome(&p, tool("files__write_file", "()"), &ctx), "deny");
    assert_eq!(outcome(&p, tool("web__fetch", "()"), &ctx), "deny");
    // An `mcp` rule never names a built-in tool, nor a skill's tool spelled alike.
    assert_eq!(outcome(&p, tool("query_notes", "()"), &ctx), "allow");
    let p = pipeline(rules(r#"((deny mcp "files__*"))"#).expect("loads"));
    assert_eq!(outcome(&p, tool("files__summary", "()"), &ctx), "allow");
    assert_eq!(
        outcome(&p, tool("files__read_text_file", "()"), &ctx),
        "deny"
    );
    // Examples that do not say what the pattern says stop the rule from loading.
    let wrong = rules(r#"((allow mcp "files__read_*" :match ("files__write_file")))"#);
    assert!(wrong.is_err());
}
