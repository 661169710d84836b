//! A provider's response parser driven as the HTTP client drives it (behind the trait, one
//! chunk at a time), and what must hold for every parse that succeeds.

use org_agent::llm::{Completion, Delta, LlmError, ResponseParser, Usage};
use serde_json::{json, Value};

/// The deltas of a parse as they came, and the completion; or the error it ended with.
pub type Outcome = Result<(Vec<Delta>, Completion), LlmError>;

/// Feeds `chunks` to `parser` in order, then finishes it.
pub fn parse_chunks(mut parser: Box<dyn ResponseParser>, chunks: &[&[u8]]) -> Outcome {
    let mut deltas = Vec::new();
    for chunk in chunks {
        deltas.extend(parser.feed(chunk)?);
    }
    let (tail, completion) = parser.finish()?;
    deltas.extend(tail);
    Ok((deltas, completion))
}

/// The usage deltas, in order. Providers differ in how often they send one; the last is the
/// completion's (see [`assert_deltas_match`]).
pub fn usage_deltas(deltas: &[Delta]) -> Vec<Usage> {
    deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Usage(u) => Some(*u),
            _ => None,
        })
        .collect()
}

/// What must hold for any successful parse: the deltas add up to the completion. Text,
/// reasoning and refusal are the concatenation of their deltas (no refusal delta, no
/// refusal); tool calls start in order and their argument fragments parse to the arguments;
/// the last usage and finish deltas are the completion's.
pub fn assert_deltas_match(name: &str, deltas: &[Delta], c: &Completion) {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut refusal = String::new();
    let mut starts = Vec::new();
    let mut args: Vec<String> = Vec::new();
    let mut last_finish = None;
    for d in deltas {
        match d {
            Delta::Text(t) => text.push_str(t),
            Delta::Reasoning(r) => reasoning.push_str(r),
            Delta::Refusal(r) => refusal.push_str(r),
            Delta::ToolCallStart {
                index,
                id,
                name: tool,
            } => {
                assert_eq!(*index, starts.len(), "{name}: tool calls start in order");
                starts.push((id.clone(), tool.clone()));
                args.push(String::new());
            }
            Delta::ToolCallArgs { index, fragment } => args[*index].push_str(fragment),
            Delta::Usage(_) => {}
            Delta::Finish(f) => last_finish = Some(f.clone()),
        }
    }
    assert_eq!(text, c.text, "{name}: text deltas");
    assert_eq!(reasoning, c.reasoning, "{name}: reasoning deltas");
    let refusal = (!refusal.is_empty()).then_some(refusal);
    assert_eq!(refusal, c.refusal, "{name}: refusal deltas");
    assert_eq!(
        usage_deltas(deltas).last(),
        c.usage.as_ref(),
        "{name}: usage delta"
    );
    assert_eq!(last_finish, c.finish_reason, "{name}: finish delta");
    assert_eq!(starts.len(), c.tool_calls.len(), "{name}: tool call starts");
    for (i, call) in c.tool_calls.iter().enumerate() {
        assert_eq!(
            starts[i],
            (call.id.clone(), call.name.clone()),
            "{name}: start {i}"
        );
        let parsed: Value = if args[i].is_empty() {
            json!({})
        } else {
            serde_json::from_str(&args[i])
                .unwrap_or_else(|e| panic!("{name}: arguments of call {i}: {e}"))
        };
        assert_eq!(parsed, call.arguments, "{name}: arguments of call {i}");
    }
}

/// The partial completion of a truncated parse; anything else fails the test.
pub fn truncated(outcome: Outcome) -> Completion {
    match outcome {
        Err(LlmError::Truncated { partial }) => *partial,
        other => panic!("not truncated: {other:?}"),
    }
}
