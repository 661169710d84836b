//! The fuzz targets: what must hold for any input. Shared by the short run inside `cargo test`
//! (tests/suite/fuzz.rs, structure-aware generated inputs) and the coverage-guided long run
//! (tests/fuzz/harness, libFuzzer, `scripts/fuzz`). A target panics when a property fails;
//! a panic or a hang in the code under test is a finding too.

use super::Rng;
use org_agent::llm::completion::{Completion, Delta};
use org_agent::llm::sse::{SseDecoder, SseEvent};
use org_agent::llm::wire::Wire;
use org_agent::llm::LlmError;
use org_agent::llm::StreamOptions;
use org_agent::sexp::{self, equal, print, SexpError};
use org_agent::store::{Config, Store, StoreError};

/// Every target, by the name `scripts/fuzz` and the regression directories use.
pub const TARGETS: [&str; 4] = ["sexp", "sse", "stream", "ingest"];

/// Run target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "sexp" => sexp(data),
        "sse" => sse(data),
        "stream" => stream(data),
        "ingest" => ingest(data),
        other => panic!("no fuzz target named {other}"),
    }
}

/// The first 8 bytes of an input seed the cutter (so the libFuzzer mutator also explores
/// where a body is cut); the rest is the body.
fn seed_and_body(data: &[u8]) -> (u64, &[u8]) {
    if data.len() < 8 {
        return (1, data);
    }
    let (seed, body) = data.split_at(8);
    let mut s = [0u8; 8];
    s.copy_from_slice(seed);
    (u64::from_le_bytes(s), body)
}

/// The reader: never panics; what it reads prints as text it reads back equal, and that
/// text is a fixed point of print ∘ read; `read` agrees with `read_all`.
pub fn sexp(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let all = sexp::read_all(&text);
    let one = sexp::read(&text);
    match &all {
        Ok(forms) => {
            match (forms.len(), &one) {
                (0, Err(SexpError::Empty)) | (2.., Err(SexpError::Trailing)) => {}
                (1, Ok(v)) => assert!(equal(v.value(), forms[0].value()), "read ≠ read_all"),
                (n, r) => panic!("read_all gave {n} forms but read gave {r:?}"),
            }
            for f in forms {
                let printed = print(f.value());
                let again = sexp::read(&printed)
                    .unwrap_or_else(|e| panic!("printed {printed:?} does not read back: {e}"));
                assert!(
                    equal(f.value(), again.value()),
                    "{printed:?} reads back as {again:?}"
                );
                assert_eq!(print(again.value()), printed, "print is not a fixed point");
            }
        }
        Err(_) => assert!(one.is_err(), "read_all failed but read gave {one:?}"),
    }
}

/// The SSE decoder: the same events and the same error however the bytes are cut; event
/// names never hold a line end.
pub fn sse(data: &[u8]) {
    let (seed, body) = seed_and_body(data);
    // A small cap so that the line-length error is reached too.
    let decode = |chunks: &[&[u8]]| -> Result<Vec<SseEvent>, LlmError> {
        let mut d = SseDecoder::with_max_line_len(4096);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.feed(c)?);
        }
        out.extend(d.finish()?);
        Ok(out)
    };
    let whole = decode(&[body]);
    let cut = decode(&Rng::new(seed).chunks(body, 1 + (seed >> 56) as usize % 64));
    assert_eq!(whole, cut, "cutting the body changed the events");
    // Every cut at once, on bodies short enough to keep the fuzzer fast.
    if body.len() <= 4096 {
        let bytes = decode(&body.chunks(1).collect::<Vec<_>>());
        assert_eq!(whole, bytes, "feeding byte by byte changed the events");
    }
    if let Ok(events) = whole {
        for e in events {
            assert!(!e.event.contains(['\r', '\n']), "event name {:?}", e.event);
        }
    }
}

/// Adjacent text-like deltas merged, so that deltas compare however they were fragmented.
fn merged(deltas: Vec<Delta>) -> Vec<Delta> {
    let mut out: Vec<Delta> = Vec::new();
    for d in deltas {
        match (out.last_mut(), d) {
            (Some(Delta::Text(a)), Delta::Text(b))
            | (Some(Delta::Reasoning(a)), Delta::Reasoning(b))
            | (Some(Delta::Refusal(a)), Delta::Refusal(b)) => a.push_str(&b),
            (
                Some(Delta::ToolCallArgs { index: i, fragment }),
                Delta::ToolCallArgs {
                    index: j,
                    fragment: f,
                },
            ) if *i == j => fragment.push_str(&f),
            (_, d) => out.push(d),
        }
    }
    out.retain(
        |d| !matches!(d, Delta::Text(s) | Delta::Reasoning(s) | Delta::Refusal(s) if s.is_empty()),
    );
    out
}

type Outcome = Result<(Vec<Delta>, Completion), LlmError>;

fn parse_stream(wire: Wire, chunks: &[&[u8]]) -> Outcome {
    let opts = StreamOptions {
        max_line_len: 4096,
        max_response_bytes: 1 << 20,
        max_tool_calls: 16,
        ..StreamOptions::default()
    };
    let mut p = wire.parser(opts);
    let mut deltas = Vec::new();
    for c in chunks {
        deltas.extend(p.feed(c)?);
    }
    let (last, completion) = p.finish()?;
    deltas.extend(last);
    Ok((merged(deltas), completion))
}

/// Every provider's response parser (byte 8 picks the wire format): the same deltas and
/// completion, or the same error, however the body is cut; the text deltas add up to the
/// completion's text, the reasoning deltas to its reasoning.
pub fn stream(data: &[u8]) {
    let (seed, rest) = seed_and_body(data);
    let Some((&which, body)) = rest.split_first() else {
        return;
    };
    let wire = Wire::ALL[which as usize % Wire::ALL.len()];
    let whole = parse_stream(wire, &[body]);
    let cut = parse_stream(
        wire,
        &Rng::new(seed).chunks(body, 1 + (seed >> 56) as usize % 64),
    );
    assert_eq!(whole, cut, "{wire:?}: cutting the body changed the result");
    if let Ok((deltas, completion)) = whole {
        let join =
            |pick: fn(&Delta) -> Option<&str>| deltas.iter().filter_map(pick).collect::<String>();
        let text = join(|d| match d {
            Delta::Text(s) => Some(s),
            _ => None,
        });
        let reasoning = join(|d| match d {
            Delta::Reasoning(s) => Some(s),
            _ => None,
        });
        assert_eq!(
            text, completion.text,
            "{wire:?}: text deltas ≠ completion text"
        );
        assert_eq!(
            reasoning, completion.reasoning,
            "{wire:?}: reasoning deltas ≠ completion reasoning"
        );
    }
}

/// One node as the store placed it: what a re-ingest must reproduce.
#[derive(Debug, PartialEq)]
struct Placed {
    id: String,
    hash: String,
    begin: u32,
    end: u32,
    begin_pos: u32,
    end_pos: u32,
    parent: Option<u32>,
}

/// The nodes of `file` in `store`, in document order.
fn placement(store: &Store, file: &str) -> Vec<Placed> {
    let state = store.state();
    let Some(doc) = state.files.get(file) else {
        return Vec::new();
    };
    doc.nodes
        .iter()
        .map(|n| Placed {
            id: n.id.to_string(),
            hash: n.hash().to_hex(),
            begin: n.begin,
            end: n.end,
            begin_pos: n.begin_pos,
            end_pos: n.end_pos,
            parent: n.parent(),
        })
        .collect()
}

/// Ingest of arbitrary bytes decoded as Emacs visits a file: no panic, byte ranges inside the text
/// and on character boundaries, children inside their parent, nodes in document order
/// (begins monotone), buffer positions the character count of the bytes before them, and a
/// re-ingest into a fresh store equal.
pub fn ingest(data: &[u8]) {
    let text = org_agent::store::text::decode(data);
    let file = "/fuzz/input.org";
    let store = Store::in_memory(Config::default());
    match store.ingest_text(file, &text, None, None, None) {
        Ok(_) => {}
        Err(StoreError::TooDeep { .. }) => return,
        Err(e) => panic!("ingest failed: {e}"),
    }
    let nodes = placement(&store, file);
    assert!(!nodes.is_empty(), "no file node");
    let pos_of = |byte: u32| text[..byte as usize].chars().count() as u32 + 1;
    let mut last_begin = 0;
    for (i, n) in nodes.iter().enumerate() {
        let (b, e) = (n.begin as usize, n.end as usize);
        assert!(
            b <= e && e <= text.len(),
            "node {i} ({}): {b}..{e} outside 0..{}",
            n.id,
            text.len()
        );
        assert!(
            text.is_char_boundary(b) && text.is_char_boundary(e),
            "node {i}: {b}..{e} cuts a character"
        );
        assert!(
            n.begin >= last_begin,
            "node {i} begins at {b}, before node {}",
            i - 1
        );
        last_begin = n.begin;
        assert_eq!(n.begin_pos, pos_of(n.begin), "node {i}: begin position");
        assert_eq!(n.end_pos, pos_of(n.end), "node {i}: end position");
        match n.parent {
            None => assert_eq!(i, 0, "node {i} has no parent"),
            Some(p) => {
                let p = p as usize;
                assert!(p < i, "node {i}'s parent {p} comes after it");
                let (pb, pe) = (nodes[p].begin, nodes[p].end);
                assert!(
                    pb <= n.begin && n.end <= pe,
                    "node {i} ({b}..{e}) outside its parent {p} ({pb}..{pe})"
                );
            }
        }
    }
    // The same text again changes nothing; a fresh store reads it the same way.
    let again = store
        .ingest_text(file, &text, None, None, None)
        .unwrap_or_else(|e| panic!("second ingest failed: {e}"));
    assert!(
        again.is_some_and(|r| !r.changed),
        "re-ingest of the same text changed the store"
    );
    let fresh = Store::in_memory(Config::default());
    fresh
        .ingest_text(file, &text, None, None, None)
        .unwrap_or_else(|e| panic!("fresh ingest failed: {e}"));
    assert_eq!(placement(&fresh, file), nodes, "a fresh ingest differs");
}
