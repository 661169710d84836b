//! The built-in tools: query the store, read a node, search titles and bodies, list files.

use super::{Args, Param, ParamType, Tool};
use crate::notes::scans::{self, Scan, ScanInput};
use crate::notes::{summary, Notes};
use crate::store::{NodeKind, NodeRef, Query, TodoType};

/// Most results one call returns, whatever the LLM asks for.
const MAX_RESULTS: i64 = 200;

fn limit(args: &Args, default: i64) -> usize {
    args.int("limit").unwrap_or(default).clamp(1, MAX_RESULTS) as usize
}

fn date(args: &Args, name: &str) -> Result<Option<String>, String> {
    match args.str(name) {
        None => Ok(None),
        Some(d) if crate::store::query::timestamp_date(&format!("<{d}>")).is_some() => {
            Ok(Some(d[..10].to_string()))
        }
        Some(d) => Err(format!("{name} must be a date YYYY-MM-DD, not {d:?}")),
    }
}

fn listing(hits: &[NodeRef], total: usize, what: &str) -> String {
    if hits.is_empty() {
        return format!("No {what}.");
    }
    let mut out = format!("{total} {what}");
    if total > hits.len() {
        out.push_str(&format!(", first {}", hits.len()));
    }
    out.push_str(":\n");
    for h in hits {
        out.push_str(&summary(h));
        out.push('\n');
    }
    out
}

fn query_notes(notes: &Notes, args: &Args) -> Result<String, String> {
    let todo_type = match args.str("todo_type") {
        None => None,
        Some("todo") => Some(TodoType::Todo),
        Some("done") => Some(TodoType::Done),
        Some(other) => return Err(format!("todo_type is \"todo\" or \"done\", not {other:?}")),
    };
    let property = match (args.str("property"), args.str("property_value")) {
        (Some(k), v) => Some((k.to_string(), v.map(str::to_string))),
        (None, Some(_)) => return Err("property_value needs property".into()),
        (None, None) => None,
    };
    let q = Query {
        kind: Some(NodeKind::Headline),
        file: args.str("file").map(str::to_string),
        tag: args.str("tag").map(str::to_string),
        todo: args.str("todo").map(str::to_string),
        todo_type,
        property,
        scheduled_before: date(args, "scheduled_before")?,
        deadline_before: date(args, "deadline_before")?,
        closed_since: date(args, "closed_since")?,
        projects: args.bool("projects"),
        ..Query::default()
    };
    let hits = notes.query(&q);
    let n = limit(args, 20);
    Ok(listing(
        &hits[..hits.len().min(n)],
        hits.len(),
        "matching headlines",
    ))
}

fn read_node(notes: &Notes, args: &Args) -> Result<String, String> {
    let r = notes.node(args.str("id").unwrap_or_default())?;
    Ok(notes.render(&r))
}

fn search_notes(notes: &Notes, args: &Args) -> Result<String, String> {
    let text = args.str("text").unwrap_or_default().trim().to_lowercase();
    if text.is_empty() {
        return Err("text must not be empty".into());
    }
    let (hits, total) = notes.find_headlines(limit(args, 20), |c| {
        c.title.to_lowercase().contains(&text) || c.body_or_notice().to_lowercase().contains(&text)
    });
    Ok(listing(&hits, total, "headlines mention it"))
}

fn list_files(notes: &Notes, _args: &Args) -> Result<String, String> {
    // A file whose file node is private (a private pattern, #+FILETAGS) is not listed.
    let files = notes.files();
    if files.is_empty() {
        return Ok("No files are in the store.".into());
    }
    let mut out = format!("{} Org files:\n", files.len());
    for doc in &files {
        out.push_str(&format!(
            "- {} ({} headlines, title: {})\n",
            doc.path,
            doc.nodes.len().saturating_sub(1),
            doc.nodes.first().map(|n| &*n.content.title).unwrap_or("")
        ));
    }
    Ok(out)
}

fn scan_notes(notes: &Notes, args: &Args) -> Result<String, String> {
    let name = args.str("scan").unwrap_or_default();
    let Some(scan) = Scan::from_name(name) else {
        return Err(format!("scan is one of {}, not {name:?}", scan_names()));
    };
    let mut input = ScanInput::today();
    input.file = args.str("file").map(str::to_string);
    input.inbox = args.str("inbox").map(str::to_string);
    let report = scans::run(notes, scan, &input)?;
    Ok(report.text(limit(args, 30)))
}

fn scan_names() -> String {
    Scan::ALL.map(Scan::name).join(", ")
}

/// The scan_notes tool's description: each scan and what it looks for.
fn scan_description() -> String {
    let mut d = String::from(
        "Run one of the deterministic checks over the whole of the notes and list what it \
         finds, each with its node's id and, when there is one, the fix to propose. Scans:",
    );
    for s in Scan::ALL {
        d.push_str(&format!(" {} ({});", s.name(), s.about()));
    }
    d.pop();
    d.push('.');
    d
}

pub fn all() -> Vec<Tool> {
    use ParamType::*;
    let param = Param::new;
    vec![
        Tool {
            name: "query_notes".into(),
            description: "Find headlines in the user's Org notes by tag, TODO state, property or date. All given conditions must hold.".into(),
            params: vec![
                param("tag", String, "a tag, own or inherited", false),
                param("todo", String, "a TODO keyword such as TODO, NEXT or DONE", false),
                param("todo_type", String, "\"todo\" (open) or \"done\" (finished)", false),
                param("property", String, "a property the headline has", false),
                param("property_value", String, "the value that property must have", false),
                param("scheduled_before", String, "scheduled before this date (YYYY-MM-DD)", false),
                param("deadline_before", String, "deadline before this date (YYYY-MM-DD)", false),
                param("closed_since", String, "closed on or after this date (YYYY-MM-DD)", false),
                param("projects", Boolean, "only active projects (tagged project, not done)", false),
                param("file", String, "only this file (absolute path)", false),
                param("limit", Integer, "at most this many results (default 20)", false),
            ],
            body: Box::new(query_notes),
        },
        Tool {
            name: "read_node".into(),
            description: "Read one headline of the notes in full: its outline path, planning, properties, body and children.".into(),
            params: vec![param("id", String, "the node's id, as given by the other tools", true)],
            body: Box::new(read_node),
        },
        Tool {
            name: "search_notes".into(),
            description: "Search the titles and bodies of all headlines for a piece of text (case-insensitive).".into(),
            params: vec![
                param("text", String, "the text to look for", true),
                param("limit", Integer, "at most this many results (default 20)", false),
            ],
            body: Box::new(search_notes),
        },
        Tool {
            name: "list_files".into(),
            description: "List the Org files in the user's notes with their titles and sizes.".into(),
            params: vec![],
            body: Box::new(list_files),
        },
    ]
}

/// The tools a skill may alias but a turn does not offer by themselves: `scan_notes`, whose
/// scans each belong to a skill (`ids__problems` runs it with `scan: ids`).
pub fn for_aliases() -> Vec<Tool> {
    use ParamType::*;
    let param = Param::new;
    vec![
        Tool {
            name: "scan_notes".into(),
            description: scan_description().into(),
            params: vec![
                param("scan", String, "which scan to run", true),
                param("file", String, "only this file (absolute path)", false),
                param("inbox", String, "for the inbox scan: the inbox, a file, FILE::Headline or a headline's id (default: a file named inbox.org, refile.org or notes.org, else a top-level headline titled Inbox or Refile)", false),
                param("limit", Integer, "list at most this many findings (default 30)", false),
            ],
            body: Box::new(scan_notes),
        },
    ]
}
