//! The Anthropic Messages parser against every recorded response in
//! `../shared/llm-fixtures/anthropic` — whole, and cut at seeded pseudo-random byte boundaries
//! (the deltas and the completion must not change) — and against hand-written streams for what
//! recordings do not show: mid-stream errors, truncation, invalid tool arguments, split UTF-8,
//! size and count limits.

use crate::support::parse::{assert_deltas_match, parse_chunks, usage_deltas, Outcome};
use crate::support::{recording, Rng};
use org_agent::llm::anthropic::{parse_response, AnthropicStream};
use org_agent::llm::StreamOptions;
use org_agent::llm::{Completion, Delta, FinishReason, LlmError, ResponseParser, ToolCall, Usage};
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<u8> {
    recording::raw("anthropic", name)
}

fn run_chunks(chunks: &[&[u8]], opts: StreamOptions) -> Outcome {
    parse_chunks(Box::new(AnthropicStream::with_options(opts)), chunks)
}

fn run(body: &[u8]) -> Outcome {
    run_chunks(&[body], StreamOptions::default())
}

fn run_str(body: &str) -> Outcome {
    run(body.as_bytes())
}

/// Asserts that `input` gives `whole` however it is cut: 1-byte chunks, random chunkings from
/// several seeds, and two pieces cut at many points (every point of a small input).
fn assert_split_invariant(name: &str, input: &[u8], whole: &Outcome) {
    let opts = StreamOptions::default();
    let ones: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(&run_chunks(&ones, opts), whole, "{name}: 1-byte chunks");
    for seed in [1u64, 0x5EED_0000_0000_0002, 0xA17_4B1C] {
        let mut rng = Rng::new(seed ^ input.len() as u64);
        for round in 0..8 {
            let max = [2, 3, 7, 16, 64, 300, 1500, 8192][round];
            let chunks = rng.chunks(input, max);
            assert_eq!(
                &run_chunks(&chunks, opts),
                whole,
                "{name}: seed {seed:#x}, round {round}, chunks up to {max} bytes"
            );
        }
    }
    // Debug-build JSON parsing is slow and the CPU shared: every cut of the small inputs, 64
    // spread-out cuts of the large ones.
    let stride = if input.len() <= 3000 {
        1
    } else {
        input.len() / 64
    };
    for cut in (0..=input.len()).step_by(stride) {
        let (a, b) = input.split_at(cut);
        assert_eq!(&run_chunks(&[a, b], opts), whole, "{name}: cut at {cut}");
    }
}

/// What must hold for any successful parse here: the deltas add up to the completion, and
/// usage comes in one delta.
fn assert_parse(name: &str, deltas: &[Delta], c: &Completion) {
    assert_deltas_match(name, deltas, c);
    assert_eq!(
        usage_deltas(deltas),
        Vec::from_iter(c.usage),
        "{name}: one usage delta"
    );
}

fn usage(prompt: u64, completion: u64, cached: Option<u64>) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        reasoning_tokens: None,
        cached_tokens: cached,
    }
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        signature: None,
    }
}

fn assert_text(name: &str, c: &Completion, starts: &str, ends: &str) {
    assert!(c.text.starts_with(starts), "{name}: text {:?}", c.text);
    assert!(c.text.ends_with(ends), "{name}: text {:?}", c.text);
}

fn assert_reasoning(name: &str, c: &Completion, starts: &str, ends: &str) {
    assert!(
        c.reasoning.starts_with(starts),
        "{name}: reasoning {:?}",
        c.reasoning
    );
    assert!(
        c.reasoning.ends_with(ends),
        "{name}: reasoning {:?}",
        c.reasoning
    );
    // Reasoning never leaks into the answer, nor the signatures into either.
    assert!(!c.text.contains(starts), "{name}: reasoning in the text");
    assert!(!c.text.contains("ErUBCkYI") && !c.reasoning.contains("ErUBCkYI"));
}

/// The content each recording must yield.
fn check_fixture(name: &str, c: &Completion) {
    match name {
        "anthropic-tool-stream-parallel.txt" => {
            // Verbatim, leading newlines included: no reasoning precedes it.
            assert_eq!(c.text, "\n\nI'll create these directories in /tmp/:");
            let dir = |n: &str| json!({"parent": "/tmp", "name": n});
            assert_eq!(
                c.tool_calls,
                vec![
                    call(
                        "toolu_01GwpAyin6URSPn7ZuGSjXKz",
                        "make_directory",
                        dir("testdir1")
                    ),
                    call(
                        "toolu_01Jqbxt5WYUt6RfpoBCHpA6X",
                        "make_directory",
                        dir("testdir2")
                    ),
                    call(
                        "toolu_01Q7ptGyMTHtj8NTAu1q93qS",
                        "make_directory",
                        dir("testdir3")
                    ),
                ]
            );
            assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(c.usage, Some(usage(1180, 196, Some(0))));
        }
        "anthropic-tool-stream.txt" => {
            assert_eq!(
                c.text,
                "I'll check the current weather for Santa Barbara right now."
            );
            assert_eq!(
                c.tool_calls,
                vec![call(
                    "toolu_01Acza7My6VGbyf8ScEhNkbu",
                    "get_weather",
                    json!({"location": "Santa Barbara, CA", "unit": "fahrenheit"})
                )]
            );
            assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(c.usage, Some(usage(530, 87, Some(0))));
        }
        "tool_use_response.txt" => {
            assert_eq!(c.text, "I'll check the current weather in Paris for you.");
            assert_eq!(
                c.tool_calls,
                vec![call(
                    "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                    "get_weather",
                    json!({"location": "Paris"})
                )]
            );
            assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(c.usage, Some(usage(377, 65, Some(0))));
            assert_eq!(c.model.as_deref(), Some("claude-sonnet-4-20250514"));
        }
        "basic_response.txt" => {
            assert_eq!(c.text, "Hello there!");
            assert_eq!(
                c.id.as_deref(),
                Some("msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK")
            );
            assert_eq!(c.model.as_deref(), Some("claude-3-opus-latest"));
            assert_eq!(c.usage, Some(usage(11, 6, None)));
        }
        "compaction_response.txt" => {
            // The compaction summary is context for the API, not part of the answer.
            assert_eq!(c.text, "Hello there!");
            assert!(!c.reasoning.contains("summarized"));
            assert_eq!(c.usage, Some(usage(30, 8, None)));
        }
        "fallback_credit_response.txt" => {
            assert_eq!(c.text, "Hello there!");
            assert_eq!(c.model.as_deref(), Some("claude-sonnet-4-5"));
            assert_eq!(c.usage, Some(usage(25, 8, None)));
        }
        "fallback_response.txt" => {
            // The `fallback` block only marks the model switch.
            assert_eq!(c.text, "Hello there!");
            assert_eq!(c.model.as_deref(), Some("claude-opus-4-7"));
            assert_eq!(c.usage, Some(usage(25, 8, None)));
        }
        "refusal_response.txt" => {
            assert_eq!(c.text, "");
            assert_eq!(
                c.refusal.as_deref(),
                Some("This request was refused due to policy.")
            );
            assert_eq!(c.finish_reason, Some(FinishReason::Other("refusal".into())));
            assert_eq!(c.usage, Some(usage(20, 0, None)));
        }
        "stream-a-refusal.sse" => {
            // What streamed before the refusal stays; the refusal has no explanation.
            assert_eq!(c.text, "Hi");
            assert_reasoning(
                name,
                c,
                "Simple educational question about what a solar eclipse is.",
                "Minor correction or just roll with it politely.",
            );
            assert_eq!(
                c.refusal.as_deref(),
                Some("The model declined to continue.")
            );
            assert_eq!(c.finish_reason, Some(FinishReason::Other("refusal".into())));
            assert_eq!(
                c.usage,
                Some(Usage {
                    reasoning_tokens: Some(67),
                    ..usage(28, 106, Some(0))
                })
            );
        }
        "stream-a-toolrefusal.sse" => {
            // The web search is Anthropic's own tool: not a call for us to run.
            assert!(c.tool_calls.is_empty());
            assert_eq!(
                c.text,
                "Here's a summary of this year's solar eclipses and how"
            );
            assert!(!c.text.contains("Looking directly at the Sun"));
            assert_eq!(
                c.refusal.as_deref(),
                Some("The model declined to continue.")
            );
            assert_eq!(c.finish_reason, Some(FinishReason::Other("refusal".into())));
        }
        "stream-b-fallback.sse" => {
            // Continues the refused stream-a's "Hi" on another model: kept verbatim.
            assert_text(
                name,
                c,
                " there! Happy to explain.\n\n**Solar eclipses** happen",
                "Just let me know what's sparking your interest!",
            );
            assert_eq!(c.model.as_deref(), Some("claude-opus-4-8"));
            assert_eq!(
                c.usage,
                Some(Usage {
                    reasoning_tokens: Some(0),
                    ..usage(31, 547, Some(0))
                })
            );
        }
        "thinking_nostream_01.txt" => {
            assert_reasoning(
                name,
                c,
                "The task is to programmatically scan and clean LaTeX preamble text",
                "- Preserving other content",
            );
            assert_text(
                name,
                c,
                "For reliable LaTeX preamble cleaning, I'd recommend a multi-stage approach",
                "implement a simple parser that counts opening/closing braces.",
            );
            assert_eq!(c.usage, Some(usage(274, 720, Some(0))));
        }
        "thinking_nostream_02.txt" => {
            assert_reasoning(
                name,
                c,
                "A variety is a fundamental object of study in algebraic geometry.",
                "solutions to systems of polynomial equations.",
            );
            assert_text(
                name,
                c,
                "A variety is a fundamental object in algebraic geometry defined by",
                "higher-dimensional objects like the Grassmannian.",
            );
            assert!(c.text.contains("V(I) = {p ∈ kⁿ | f(p) = 0 for all f ∈ I}"));
            assert_eq!(c.usage, Some(usage(492, 577, Some(0))));
        }
        "thinking_stream_01.txt" => {
            // Despite its name, a Claude 3 Haiku answer without thinking.
            assert_eq!(c.reasoning, "");
            assert_text(
                name,
                c,
                "Sure, let's dive deeper into the benefits and considerations of using \
                 anchored n-grams in fuzzy searching:",
                "trade-offs and performance implications.",
            );
            assert_eq!(c.usage, Some(usage(2403, 628, None)));
        }
        "thinking_stream_02.txt" => {
            assert_reasoning(
                name,
                c,
                "The user wants to programmatically scan and remove all references",
                "Let me think about a comprehensive approach.",
            );
            assert_text(
                name,
                c,
                "For reliable removal of hyperref-related content from a LaTeX preamble,",
                "extract them from the hyperref package documentation or source code.",
            );
            assert_eq!(c.usage, Some(usage(296, 727, Some(0))));
        }
        "thinking_stream_03.txt" => {
            assert_eq!(
                c.reasoning,
                "I'll give a direct explanation of projective space in mathematics, using \
                 precise terminology.\n\nProjective space is a fundamental concept in geometry \
                 and algebra. I'll explain both the intuitive and formal definitions."
            );
            assert_text(
                name,
                c,
                "A projective space $\\mathbb{P}^n$ over a field $F$ is the set of lines",
                "where projective varieties have nicer properties than affine ones.",
            );
            assert_eq!(c.usage, Some(usage(179, 356, Some(0))));
        }
        "thinking_stream_04.txt" => {
            assert_reasoning(
                name,
                c,
                "A projective space is an important concept in geometry. Let me explain",
                "like homogeneous coordinates and projective transformations.",
            );
            assert_text(
                name,
                c,
                "# Projective Space\n\nA projective space is a geometric structure",
                "computer vision, and many other fields.",
            );
            assert!(c.text.contains("(x₁,...,xₙ) to [1:x₁:...:xₙ]"));
            assert_eq!(c.usage, Some(usage(179, 696, Some(0))));
        }
        other => panic!("new fixture {other}: add its expected content to check_fixture"),
    }
    if !name.contains("tool") {
        assert!(c.tool_calls.is_empty(), "{name}");
    }
    if !name.contains("refusal") {
        assert_eq!(c.refusal, None, "{name}");
    }
    if !name.contains("tool") && !name.contains("refusal") {
        assert_eq!(c.finish_reason, Some(FinishReason::Stop), "{name}");
    }
    if !name.starts_with("thinking_") && name != "stream-a-refusal.sse" {
        assert_eq!(c.reasoning, "", "{name}");
    }
    assert!(
        c.id.as_deref().is_some_and(|id| id.starts_with("msg_")),
        "{name}"
    );
}

/// The partial-JSON recording: `max_tokens` stops the model inside a tool call's arguments,
/// and the stream then ends normally.
fn check_cut_tool_call(name: &str, outcome: &Outcome) {
    match outcome {
        Err(LlmError::InvalidToolArguments {
            index,
            id,
            name: tool,
            message,
        }) => {
            assert_eq!(*index, 0, "{name}");
            assert_eq!(id, "toolu_01EKqbqmZrGRXy18eN7m9kvY");
            assert_eq!(tool, "make_file");
            assert!(message.contains("max_tokens"), "{message}");
        }
        other => panic!("{name}: {other:?}"),
    }
}

const PARTIAL_JSON: &str = "incomplete_partial_json_response.txt";

#[test]
fn every_fixture_whole_and_split() {
    if !recording::available("llm_anthropic::every_fixture_whole_and_split") {
        return;
    }
    let names = recording::names("anthropic");
    assert_eq!(names.len(), 18, "fixtures: {names:?}");
    for name in &names {
        let raw = fixture(name);
        let input = recording::body(&raw);
        let whole = run(input);
        if name == PARTIAL_JSON {
            check_cut_tool_call(name, &whole);
        } else {
            let (deltas, completion) = match &whole {
                Ok(ok) => ok,
                Err(e) => panic!("{name}: {e}"),
            };
            assert_parse(name, deltas, completion);
            check_fixture(name, completion);
        }
        assert_split_invariant(name, input, &whole);
        // CRLF line endings change nothing.
        let crlf: Vec<u8> = String::from_utf8_lossy(input)
            .replace('\n', "\r\n")
            .into_bytes();
        assert_eq!(run(&crlf), whole, "{name}: CRLF");
    }
}

#[test]
fn nostream_fixtures_through_parse_response() {
    if !recording::available("llm_anthropic::nostream_fixtures_through_parse_response") {
        return;
    }
    let opts = StreamOptions::default();
    for name in ["thinking_nostream_01.txt", "thinking_nostream_02.txt"] {
        let raw = fixture(name);
        let c = parse_response(&raw, &opts).unwrap();
        check_fixture(name, &c);
        // Same as through the streaming entry point (which detects a JSON body).
        assert_eq!(run(&raw).unwrap().1, c);
        // No tool call, so the signed thinking block is not kept anywhere.
        assert!(c.tool_calls.is_empty());
    }
    // The SSE recordings are not JSON bodies.
    assert!(matches!(
        parse_response(&fixture("basic_response.txt"), &opts),
        Err(LlmError::InvalidJson { .. })
    ));
}

#[test]
fn partial_json_fixture_keeps_raw_arguments_in_partial() {
    if !recording::available("llm_anthropic::partial_json_fixture_keeps_raw_arguments_in_partial") {
        return;
    }
    let raw = fixture(PARTIAL_JSON);
    let mut stream = AnthropicStream::new();
    stream.feed(&raw).unwrap();
    // The recording ends without the blank line after `message_stop`: only `finish` sees it.
    assert!(!stream.is_done());
    let p = stream.partial();
    assert_eq!(
        p.text,
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in \
         a file called taxes.txt. Let me do that for you now."
    );
    assert_eq!(p.finish_reason, Some(FinishReason::Length));
    assert_eq!(p.tool_calls.len(), 1);
    assert_eq!(p.tool_calls[0].name, "make_file");
    let Value::String(args) = &p.tool_calls[0].arguments else {
        panic!(
            "raw arguments kept as a string: {:?}",
            p.tool_calls[0].arguments
        );
    };
    assert!(args.starts_with("{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n"));
    assert!(args.ends_with("\n\"Filing taxes"));
    check_cut_tool_call(PARTIAL_JSON, &stream.finish());
}

// ---------------------------------------------------------------------------------------------
// Hand-written streams.

/// An SSE stream of `events` (JSON data), each named by its `type` as the API does.
fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

fn start(id: &str) -> Value {
    json!({"type": "message_start", "message": {"id": id, "type": "message",
        "role": "assistant", "model": "claude-test", "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1}}})
}

fn block_start(index: u64, block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": block})
}

fn text_block(index: u64) -> Value {
    block_start(index, json!({"type": "text", "text": ""}))
}

fn tool_block(index: u64, id: &str, name: &str) -> Value {
    block_start(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
    )
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn text(index: u64, t: &str) -> Value {
    delta(index, json!({"type": "text_delta", "text": t}))
}

fn args(index: u64, piece: &str) -> Value {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": piece}),
    )
}

fn stop_block(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
        "usage": {"output_tokens": output}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

/// Asserts that every two-piece cut and 1-byte chunking of `input` gives `whole`.
fn assert_every_cut(name: &str, input: &str, whole: &Outcome) {
    let input = input.as_bytes();
    let ones: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        &run_chunks(&ones, StreamOptions::default()),
        whole,
        "{name}: 1-byte"
    );
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(
            &run_chunks(&[a, b], StreamOptions::default()),
            whole,
            "{name}: cut at {cut}"
        );
    }
}

#[test]
fn overloaded_error_mid_stream() {
    let head = sse(&[start("msg_1"), text_block(0), text(0, "Partial answ")]);
    let error = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \
                 \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let expected = LlmError::Provider {
        message: "Overloaded".into(),
        kind: Some("overloaded_error".into()),
        code: None,
    };
    let mut stream = AnthropicStream::new();
    assert_eq!(
        stream.feed(head.as_bytes()).unwrap(),
        vec![Delta::Text("Partial answ".into())]
    );
    assert_eq!(stream.feed(error.as_bytes()), Err(expected.clone()));
    // The stream is over: the same error again, whatever comes next.
    assert_eq!(
        stream.feed(sse(&[message_stop()]).as_bytes()),
        Err(expected.clone())
    );
    assert_eq!(stream.finish(), Err(expected.clone()));
    let input = head + error;
    assert_every_cut("overloaded", &input, &Err(expected.clone()));
    // Also as the only thing in the body (the error comes before anything else).
    assert_eq!(run_str(error), Err(expected));
}

#[test]
fn error_body_instead_of_a_stream() {
    let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#;
    let expected = Err(LlmError::Provider {
        message: "max_tokens: Field required".into(),
        kind: Some("invalid_request_error".into()),
        code: None,
    });
    assert_eq!(run_str(body), expected);
    assert_eq!(
        parse_response(body.as_bytes(), &StreamOptions::default()).map(|_| ()),
        expected.map(|_| ())
    );
}

#[test]
fn truncation_keeps_partial_text_and_tool_arguments() {
    let events = [
        start("msg_t"),
        text_block(0),
        text(0, "Writing the file."),
        stop_block(0),
        tool_block(1, "toolu_a", "read_file"),
        args(1, "{\"path\": \"a.org\"}"),
        stop_block(1),
        tool_block(2, "toolu_b", "write_file"),
        args(2, "{\"path\": \"b.org\", \"text\": \"hal"),
    ];
    let input = sse(&events);
    let outcome = run_str(&input);
    let Err(LlmError::Truncated { partial }) = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(partial.text, "Writing the file.");
    assert_eq!(partial.id.as_deref(), Some("msg_t"));
    assert_eq!(partial.finish_reason, None);
    assert_eq!(
        partial.tool_calls,
        vec![
            call("toolu_a", "read_file", json!({"path": "a.org"})),
            call(
                "toolu_b",
                "write_file",
                Value::String("{\"path\": \"b.org\", \"text\": \"hal".into())
            ),
        ]
    );
    assert!(outcome.as_ref().unwrap_err().is_retryable());
    assert_every_cut("truncated", &input, &outcome);
    // Everything but message_stop is still a truncation.
    let almost = sse(&[
        start("msg_t"),
        text_block(0),
        text(0, "Done"),
        stop_block(0),
        message_delta("end_turn", 3),
    ]);
    assert!(matches!(
        run_str(&almost),
        Err(LlmError::Truncated { partial }) if partial.text == "Done"
            && partial.finish_reason == Some(FinishReason::Stop)
    ));
    // An empty body, or one of blanks only.
    for empty in ["", " \n\r\n"] {
        assert_eq!(
            run_str(empty),
            Err(LlmError::Truncated {
                partial: Box::default()
            })
        );
    }
    // A JSON body cut short.
    let cut = r#"{"id":"msg_x","type":"message","content":[{"type":"text","text":"Hel"#;
    assert_eq!(
        run_str(cut),
        Err(LlmError::Truncated {
            partial: Box::default()
        })
    );
}

#[test]
fn utf8_split_inside_characters() {
    let answer = "Grüße, 世界! 🚀 ∑ — ok";
    let input = sse(&[
        start("msg_u"),
        text_block(0),
        text(0, "Grüße, 世"),
        text(0, "界! 🚀 ∑ — ok"),
        stop_block(0),
        message_delta("end_turn", 9),
        message_stop(),
    ]);
    let whole = run_str(&input);
    let (deltas, c) = whole.as_ref().unwrap();
    assert_eq!(c.text, answer);
    assert_parse("utf8", deltas, c);
    // Cut at every byte, most of them inside multi-byte characters.
    assert_every_cut("utf8", &input, &whole);
}

#[test]
fn invalid_tool_json_is_a_typed_error_naming_the_tool() {
    let input = sse(&[
        start("msg_i"),
        tool_block(0, "toolu_ok", "list"),
        stop_block(0),
        // A server tool between them does not count as a tool call.
        block_start(
            1,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        args(1, "{\"query\": \"x\"}"),
        stop_block(1),
        tool_block(2, "toolu_bad", "write_file"),
        args(2, "{\"path\": oops}"),
        stop_block(2),
        message_delta("tool_use", 12),
        message_stop(),
    ]);
    let outcome = run_str(&input);
    match &outcome {
        Err(LlmError::InvalidToolArguments {
            index,
            id,
            name,
            message,
        }) => {
            assert_eq!(*index, 1);
            assert_eq!(id, "toolu_bad");
            assert_eq!(name, "write_file");
            assert!(!message.contains("max_tokens"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_every_cut("invalid args", &input, &outcome);
}

#[test]
fn tool_calls_are_numbered_among_themselves() {
    let input = sse(&[
        start("msg_n"),
        text_block(0),
        text(0, "Searching, then reading."),
        stop_block(0),
        block_start(
            1,
            json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        ),
        args(1, "{\"query\": \"org mode\"}"),
        stop_block(1),
        block_start(
            2,
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        ),
        stop_block(2),
        tool_block(3, "toolu_r", "read_file"),
        args(3, "{\"path\":"),
        args(3, " \"notes.org\"}"),
        stop_block(3),
        tool_block(4, "toolu_n", "now"),
        args(4, ""),
        stop_block(4),
        message_delta("tool_use", 30),
        message_stop(),
    ]);
    let (deltas, c) = run_str(&input).unwrap();
    assert_parse("numbered", &deltas, &c);
    assert_eq!(
        c.tool_calls,
        vec![
            call("toolu_r", "read_file", json!({"path": "notes.org"})),
            call("toolu_n", "now", json!({})),
        ]
    );
    assert!(deltas.contains(&Delta::ToolCallStart {
        index: 0,
        id: "toolu_r".into(),
        name: "read_file".into()
    }));
    assert!(deltas.contains(&Delta::ToolCallArgs {
        index: 0,
        fragment: "{\"path\":".into()
    }));
    assert_eq!(c.usage, Some(usage(10, 30, None)));
}

#[test]
fn think_tags_in_text_are_reasoning() {
    // A proxied open model that writes its reasoning inline.
    let input = sse(&[
        start("msg_k"),
        text_block(0),
        text(0, "<thi"),
        text(0, "nk>Check the"),
        text(0, " units.</think>\n\n42 m"),
        stop_block(0),
        message_delta("end_turn", 5),
        message_stop(),
    ]);
    let whole = run_str(&input);
    let (deltas, c) = whole.as_ref().unwrap();
    assert_eq!(c.reasoning, "Check the units.");
    assert_eq!(c.text, "42 m");
    assert_parse("think tags", deltas, c);
    assert_every_cut("think tags", &input, &whole);
}

#[test]
fn signed_thinking_rides_on_the_first_tool_call() {
    let input = sse(&[
        start("msg_s"),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(
            0,
            json!({"type": "thinking_delta", "thinking": "Need the file."}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        ),
        stop_block(0),
        tool_block(1, "toolu_1", "read_file"),
        args(1, "{\"path\": \"a\"}"),
        stop_block(1),
        message_delta("tool_use", 20),
        message_stop(),
    ]);
    let (deltas, c) = run_str(&input).unwrap();
    assert_parse("signed", &deltas, &c);
    assert_eq!(c.reasoning, "Need the file.");
    assert!(!c.text.contains("EqQBCgIYAhIM"));
    let echoed: Value =
        serde_json::from_str(c.tool_calls[0].signature.as_deref().unwrap()).unwrap();
    assert_eq!(
        echoed,
        json!([{"type": "thinking", "thinking": "Need the file.", "signature": "EqQBCgIYAhIM"}])
    );
}

#[test]
fn unknown_events_and_blocks_are_ignored() {
    let input = sse(&[
        json!({"type": "ping"}),
        start("msg_o"),
        json!({"type": "some_future_event", "payload": [1, 2, 3]}),
        block_start(0, json!({"type": "future_block", "stuff": {"a": 1}})),
        delta(0, json!({"type": "future_delta", "x": "y"})),
        stop_block(0),
        text_block(1),
        delta(
            1,
            json!({"type": "citations_delta", "citation": {"cited_text": "source"}}),
        ),
        text(1, "Answer."),
        stop_block(1),
        message_delta("end_turn", 2),
        message_stop(),
        // Anything after the end marker is ignored.
        text(1, " more"),
    ]);
    let (_, c) = run_str(&input).unwrap();
    assert_eq!(c.text, "Answer.");
    // Not JSON where an event must be: a typed error, not a panic.
    let bad = "event: message_start\ndata: {\"type\": \"message_start\", \"message\": \n\n";
    assert!(matches!(run_str(bad), Err(LlmError::InvalidJson { .. })));
}

#[test]
fn limits_are_enforced() {
    let big = "x".repeat(600);
    let input = sse(&[
        start("msg_l"),
        text_block(0),
        text(0, &big),
        text(0, &big),
        stop_block(0),
        message_delta("end_turn", 9),
        message_stop(),
    ]);
    let opts = StreamOptions {
        max_response_bytes: 1000,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks(&[input.as_bytes()], opts),
        Err(LlmError::ResponseTooLarge { limit: 1000 })
    );
    // The same answer as a JSON body.
    let json_body = json!({"id": "msg_l", "type": "message", "content":
        [{"type": "text", "text": big.repeat(2)}], "stop_reason": "end_turn"})
    .to_string();
    assert_eq!(
        run_chunks(&[json_body.as_bytes()], opts),
        Err(LlmError::ResponseTooLarge { limit: 1000 })
    );
    assert_eq!(
        parse_response(json_body.as_bytes(), &opts),
        Err(LlmError::ResponseTooLarge { limit: 1000 })
    );
    // Tool arguments count too.
    let input = sse(&[
        start("msg_l"),
        tool_block(0, "t", "f"),
        args(0, &format!("{{\"a\": \"{big}{big}\"}}")),
    ]);
    assert_eq!(
        run_chunks(&[input.as_bytes()], opts),
        Err(LlmError::ResponseTooLarge { limit: 1000 })
    );

    // Tool calls.
    let mut events = vec![start("msg_c")];
    for i in 0..4 {
        events.push(tool_block(i, &format!("t{i}"), "f"));
        events.push(stop_block(i));
    }
    events.push(message_stop());
    let input = sse(&events);
    let opts = StreamOptions {
        max_tool_calls: 3,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks(&[input.as_bytes()], opts),
        Err(LlmError::TooManyToolCalls { limit: 3 })
    );
    let opts = StreamOptions {
        max_tool_calls: 4,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks(&[input.as_bytes()], opts)
            .unwrap()
            .1
            .tool_calls
            .len(),
        4
    );

    // One line without an end.
    let opts = StreamOptions {
        max_line_len: 256,
        ..StreamOptions::default()
    };
    let long = format!("event: content_block_delta\ndata: {}", "y".repeat(300));
    let mut stream = AnthropicStream::with_options(opts);
    assert_eq!(
        stream.feed(long.as_bytes()),
        Err(LlmError::LineTooLong { limit: 256 })
    );
}

#[test]
fn works_through_the_response_parser_trait() {
    if !recording::available("llm_anthropic::works_through_the_response_parser_trait") {
        return;
    }
    let raw = fixture("basic_response.txt");
    let mut parser: Box<dyn ResponseParser> = Box::new(AnthropicStream::new());
    let mut deltas = Vec::new();
    for chunk in raw.chunks(100) {
        deltas.extend(parser.feed(chunk).unwrap());
    }
    assert_eq!(parser.partial().text, "Hello there!");
    let (tail, c) = parser.finish().unwrap();
    deltas.extend(tail);
    assert_parse("trait", &deltas, &c);
    assert_eq!(c.text, "Hello there!");
}
