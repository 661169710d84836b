//! The Gemini parser against every recorded `streamGenerateContent` response in
//! `../shared/llm-fixtures/gemini` (one JSON array, streamed) — whole, cut at seeded
//! pseudo-random byte boundaries, and re-encoded as SSE (`?alt=sse`) — and against scripted
//! streams for what the recordings do not show: function calls with thought signatures (and
//! their way back through `request_body`), mid-stream errors, truncation, blocked prompts,
//! split UTF-8, limits.

use crate::support::parse::{assert_deltas_match, parse_chunks, truncated, Outcome};
use crate::support::{recording, Rng};
use org_agent::llm::gemini::{parse_response, request_body, GeminiStream};
use org_agent::llm::StreamOptions;
use org_agent::llm::{ChatRequest, Completion, Delta, FinishReason, LlmError, Message, Usage};
use serde_json::{json, Value};

fn fixture(name: &str) -> Vec<u8> {
    recording::raw("gemini", name)
}

/// Feeds `chunks` through the parser as the HTTP client does (behind the trait).
fn run_chunks_with(chunks: &[&[u8]], opts: StreamOptions) -> Outcome {
    parse_chunks(Box::new(GeminiStream::with_options(opts)), chunks)
}

fn run_chunks(chunks: &[&[u8]]) -> Outcome {
    run_chunks_with(chunks, StreamOptions::default())
}

fn run(body: &[u8]) -> Outcome {
    run_chunks(&[body])
}

/// Asserts that `input` gives `whole` however it is cut: 1-byte chunks, random chunkings
/// under several seeds, and two pieces at every cut (short inputs) or at spread-out cuts
/// (debug-build JSON parsing is slow and the CPU shared).
fn assert_split_invariant(name: &str, input: &[u8], whole: &Outcome) {
    let ones: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(&run_chunks(&ones), whole, "{name}: 1-byte chunks");
    for seed in [1u64, 0x5EED, 0xC0FFEE, 0xDEAD_BEEF] {
        let mut rng = Rng::new(seed ^ input.len() as u64);
        for round in 0..9 {
            let max = [1, 2, 3, 5, 8, 17, 64, 300, 4096][round];
            let chunks = rng.chunks(input, max);
            assert_eq!(
                &run_chunks(&chunks),
                whole,
                "{name}: seed {seed:#x}, round {round}, chunks up to {max} bytes"
            );
        }
    }
    let stride = if input.len() <= 1500 {
        1
    } else {
        input.len() / 97
    };
    for cut in (0..=input.len()).step_by(stride) {
        let (a, b) = input.split_at(cut);
        assert_eq!(&run_chunks(&[a, b]), whole, "{name}: cut at {cut}");
    }
}

/// What must hold for any successful parse here: the deltas add up to the completion, which
/// has no refusal (Gemini has no refusal field).
fn assert_parse(name: &str, deltas: &[Delta], c: &Completion) {
    assert_deltas_match(name, deltas, c);
    assert_eq!(c.refusal, None, "{name}");
}

fn usage(prompt: u64, candidates: u64, thoughts: u64, total: u64) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: candidates + thoughts,
        total_tokens: total,
        reasoning_tokens: Some(thoughts),
        cached_tokens: None,
    }
}

/// The content each recording must yield.
fn check_fixture(name: &str, c: &Completion) {
    match name {
        "thinking_stream_01.txt" => {
            assert!(c.reasoning.starts_with("**Defining the Core Concept**\n\n"));
            assert!(c.reasoning.contains("**Elaborating the Framework**"));
            assert!(c
                .reasoning
                .ends_with("present a straightforward overview.\n\n\n"));
            assert!(c
                .text
                .starts_with("The Curry-Howard correspondence is an isomorphism"));
            assert!(c.text.ends_with("in the same way."));
            assert_eq!(c.usage, Some(usage(124, 637, 166, 927)));
            assert_eq!(
                c.model.as_deref(),
                Some("gemini-2.0-flash-thinking-exp-01-21")
            );
            assert_eq!(c.id.as_deref(), Some("O3eeaNaXLuOzqtsPteKWoAU"));
        }
        "thinking_stream_02.txt" => {
            assert!(c.reasoning.starts_with("**Elaborating the Essence**"));
            assert!(c
                .text
                .starts_with("The Curry-Howard correspondence, also known as proofs-as-pro"));
            assert!(c.text.ends_with(r"(\(\Sigma x:A. B(x)\)), respectively."));
            assert_eq!(c.usage, Some(usage(124, 405, 128, 657)));
            assert_eq!(c.id.as_deref(), Some("ZXaeaLDhJfW7qtsP0LzyuAI"));
        }
        "thinking_stream_03.txt" => {
            assert!(c
                .reasoning
                .starts_with("**Understanding First-Order Logic**"));
            assert!(c.reasoning.ends_with("lack of direct isomorphism.\n\n\n"));
            assert!(c
                .text
                .starts_with("First-order logic is a formal language used in mathematics"));
            assert!(c
                .text
                .ends_with("principles like the law of excluded middle."));
            assert_eq!(c.usage, Some(usage(136, 526, 527, 1189)));
            assert_eq!(
                c.model.as_deref(),
                Some("models/gemini-2.5-flash-preview-04-17")
            );
            assert_eq!(c.id.as_deref(), Some("iKY4aLzZMeHZqtsP_Z-pwAg"));
        }
        other => panic!("new fixture {other}: add its expected content to check_fixture"),
    }
    // Reasoning never leaks into the answer, nor the answer into reasoning.
    let headline = c.reasoning.lines().next().unwrap_or_default();
    assert!(
        !c.text.contains(headline),
        "{name}: reasoning headline in text"
    );
    assert!(!c.reasoning.contains(&c.text[..40]), "{name}");
    assert!(c.tool_calls.is_empty(), "{name}");
    assert_eq!(c.finish_reason, Some(FinishReason::Stop), "{name}");
}

fn fixture_names() -> Vec<String> {
    let names = recording::names("gemini");
    assert_eq!(names.len(), 3, "fixtures: {names:?}");
    names
}

/// The elements of a recorded array, re-encoded as an `?alt=sse` stream.
fn as_sse(array: &[u8], line_end: &str) -> String {
    let elements: Vec<Value> = serde_json::from_slice(array).unwrap();
    elements
        .iter()
        .map(|e| format!("data: {e}{line_end}{line_end}"))
        .collect()
}

#[test]
fn every_fixture_whole_and_split() {
    if !recording::available("llm_gemini::every_fixture_whole_and_split") {
        return;
    }
    for name in &fixture_names() {
        let input = fixture(name);
        let whole = run(&input);
        let (deltas, completion) = match &whole {
            Ok(ok) => ok,
            Err(e) => panic!("{name}: {e}"),
        };
        assert_parse(name, deltas, completion);
        check_fixture(name, completion);
        // Reasoning deltas come first, then the answer.
        let first_text = deltas.iter().position(|d| matches!(d, Delta::Text(_)));
        let last_reasoning = deltas
            .iter()
            .rposition(|d| matches!(d, Delta::Reasoning(_)));
        assert!(last_reasoning < first_text, "{name}: reasoning before text");
        // Usage and the finish reason are sent once each, at the end.
        let usages = deltas
            .iter()
            .filter(|d| matches!(d, Delta::Usage(_)))
            .count();
        assert_eq!(usages, 1, "{name}");
        assert!(matches!(
            deltas.last(),
            Some(Delta::Finish(FinishReason::Stop))
        ));
        assert_split_invariant(name, &input, &whole);
        // The non-streaming entry point reads a whole streamed body the same way.
        assert_eq!(
            parse_response(&input, &StreamOptions::default()).as_ref(),
            Ok(completion),
            "{name}: parse_response"
        );
    }
}

#[test]
fn fixtures_reencoded_as_sse_give_the_same_answer() {
    if !recording::available("llm_gemini::fixtures_reencoded_as_sse_give_the_same_answer") {
        return;
    }
    for name in &fixture_names() {
        let input = fixture(name);
        let from_array = run(&input).unwrap();
        for line_end in ["\n", "\r\n"] {
            let sse = as_sse(&input, line_end);
            let from_sse = run(sse.as_bytes());
            assert_eq!(from_sse.as_ref(), Ok(&from_array), "{name} as SSE");
            let mut rng = Rng::new(0x0A17_55E0 ^ sse.len() as u64);
            for max in [1, 7, 64, 999] {
                let chunks = rng.chunks(sse.as_bytes(), max);
                assert_eq!(run_chunks(&chunks), from_sse, "{name} as SSE, up to {max}");
            }
        }
        // Google's own array framing separates elements with "\r\n,"; so can we.
        let crlf = String::from_utf8(input.clone())
            .unwrap()
            .replace('\n', "\r\n");
        assert_eq!(
            run(crlf.as_bytes()).as_ref(),
            Ok(&from_array),
            "{name} CRLF"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Scripted streams.

fn text_part(text: &str) -> Value {
    json!({ "text": text })
}

fn thought(text: &str) -> Value {
    json!({"text": text, "thought": true})
}

fn chunk(parts: Vec<Value>, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                          "thoughtsTokenCount": 3, "totalTokenCount": 18},
        "modelVersion": "gemini-2.5-pro",
        "responseId": "resp-1",
    })
}

/// `chunks` as a streamed JSON array, laid out the way Google sends it.
fn array(chunks: &[Value]) -> String {
    let items: Vec<String> = chunks
        .iter()
        .map(|c| serde_json::to_string_pretty(c).unwrap())
        .collect();
    format!("[{}]", items.join("\r\n,"))
}

fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect()
}

/// Runs a scripted stream whole and split (everywhere), asserting they agree.
fn run_checked(name: &str, input: &str) -> Outcome {
    let whole = run(input.as_bytes());
    if let Ok((deltas, c)) = &whole {
        assert_parse(name, deltas, c);
    }
    assert_split_invariant(name, input.as_bytes(), &whole);
    whole
}

#[test]
fn function_calls_with_thought_signatures_round_trip() {
    let chunks = [
        chunk(vec![thought("I should look up the weather.")], None),
        chunk(
            vec![
                json!({"functionCall": {"name": "weather", "args": {"city": "Paris", "days": 2}},
                       "thoughtSignature": "CiQBVKhc7sig/A=="}),
                json!({"functionCall": {"name": "clock", "args": {}}}),
                json!({"functionCall": {"id": "fc-9", "name": "note"}}),
            ],
            None,
        ),
        chunk(vec![], Some("STOP")),
    ];
    for (framing, input) in [("array", array(&chunks)), ("sse", sse(&chunks))] {
        let (deltas, c) = run_checked(framing, &input).unwrap();
        assert_eq!(c.reasoning, "I should look up the weather.");
        assert_eq!(c.text, "");
        assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls), "{framing}");
        assert_eq!(c.tool_calls.len(), 3);
        let first = &c.tool_calls[0];
        assert_eq!(
            (first.id.as_str(), first.name.as_str()),
            ("call_0", "weather")
        );
        assert_eq!(first.arguments, json!({"city": "Paris", "days": 2}));
        assert_eq!(first.signature.as_deref(), Some("CiQBVKhc7sig/A=="));
        assert_eq!(c.tool_calls[1].id, "call_1");
        assert_eq!(c.tool_calls[1].arguments, json!({}));
        assert_eq!(c.tool_calls[1].signature, None);
        // Gemini's own id wins; no args at all is `{}`.
        assert_eq!(c.tool_calls[2].id, "fc-9");
        assert_eq!(c.tool_calls[2].arguments, json!({}));
        assert!(deltas.contains(&Delta::ToolCallArgs {
            index: 0,
            fragment: json!({"city": "Paris", "days": 2}).to_string()
        }));

        // The next request echoes the signature beside its call, and names the results.
        let request = ChatRequest {
            messages: vec![
                Message::User("Weather in Paris?".into()),
                Message::Assistant {
                    content: c.text.clone(),
                    tool_calls: c.tool_calls.clone(),
                },
                Message::Tool {
                    tool_call_id: "call_0".into(),
                    content: "sunny".into(),
                },
                Message::Tool {
                    tool_call_id: "call_1".into(),
                    content: "12:00".into(),
                },
                Message::Tool {
                    tool_call_id: "fc-9".into(),
                    content: "ok".into(),
                },
            ],
            ..ChatRequest::default()
        };
        let body = request_body(&request, "gemini-2.5-pro");
        assert_eq!(
            body["contents"][1],
            json!({"role": "model", "parts": [
                {"functionCall": {"name": "weather", "args": {"city": "Paris", "days": 2}},
                 "thoughtSignature": "CiQBVKhc7sig/A=="},
                {"functionCall": {"name": "clock", "args": {}}},
                {"functionCall": {"name": "note", "args": {}}},
            ]})
        );
        assert_eq!(
            body["contents"][2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"content": "sunny"}}},
                {"functionResponse": {"name": "clock", "response": {"content": "12:00"}}},
                {"functionResponse": {"name": "note", "response": {"content": "ok"}}},
            ]})
        );
        assert_eq!(body["contents"].as_array().map(Vec::len), Some(3));
    }
}

#[test]
fn text_and_reasoning_parts_and_think_tags() {
    let chunks = [
        chunk(vec![thought("Plan: greet.")], None),
        // A signature on a text part is not needed and dropped.
        chunk(
            vec![json!({"text": "\n\nHello", "thoughtSignature": "xyz"})],
            None,
        ),
        chunk(vec![text_part(", world.")], Some("STOP")),
    ];
    let (_, c) = run_checked("parts", &array(&chunks)).unwrap();
    assert_eq!(c.reasoning, "Plan: greet.");
    // The blank lines between reasoning and answer are a template artefact.
    assert_eq!(c.text, "Hello, world.");
    assert_eq!(c.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        c.usage,
        Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 8,
            total_tokens: 18,
            reasoning_tokens: Some(3),
            cached_tokens: None
        })
    );
    assert_eq!(c.id.as_deref(), Some("resp-1"));
    assert_eq!(c.model.as_deref(), Some("gemini-2.5-pro"));

    // Gemma on the Gemini API may still write `<think>` inline.
    let chunks = [
        chunk(vec![text_part("<think>hm</think>")], None),
        chunk(vec![text_part("Answer")], Some("MAX_TOKENS")),
    ];
    let (_, c) = run_checked("tags", &sse(&chunks)).unwrap();
    assert_eq!((c.reasoning.as_str(), c.text.as_str()), ("hm", "Answer"));
    assert_eq!(c.finish_reason, Some(FinishReason::Length));
}

#[test]
fn other_candidates_and_metadata_only_chunks_are_ignored() {
    let mut two = chunk(vec![text_part("zero")], None);
    two["candidates"] = json!([
        {"index": 1, "content": {"parts": [{"text": "one"}]}},
        {"index": 0, "content": {"parts": [{"text": "zero"}]}},
    ]);
    let usage_only = json!({"usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1}});
    let chunks = [two, chunk(vec![], Some("STOP")), usage_only, json!({})];
    let (_, c) = run_checked("candidates", &array(&chunks)).unwrap();
    assert_eq!(c.text, "zero");
    // Usage from the very last chunk.
    assert_eq!(c.usage.map(|u| u.prompt_tokens), Some(1));
}

#[test]
fn provider_error_mid_stream() {
    let error = json!({"error": {"code": 429, "message": "Resource has been exhausted",
                                 "status": "RESOURCE_EXHAUSTED"}});
    let expected = LlmError::Provider {
        message: "Resource has been exhausted".into(),
        kind: Some("RESOURCE_EXHAUSTED".into()),
        code: Some("429".into()),
    };
    let chunks = [chunk(vec![text_part("Partial")], None), error.clone()];
    for (framing, input) in [("array", array(&chunks)), ("sse", sse(&chunks))] {
        assert_eq!(
            run_checked(framing, &input),
            Err(expected.clone()),
            "{framing}"
        );
        // The text before it was delivered; the error then sticks.
        let cut = input.find("\"error\"").unwrap();
        let mut stream = GeminiStream::with_options(StreamOptions::default());
        let deltas = stream.feed(&input.as_bytes()[..cut]).unwrap();
        assert_eq!(deltas, vec![Delta::Text("Partial".into())]);
        assert_eq!(stream.feed(&input.as_bytes()[cut..]), Err(expected.clone()));
        assert_eq!(stream.feed(b""), Err(expected.clone()));
        assert_eq!(stream.finish(), Err(expected.clone()));
    }
    // A non-streaming error body, bare or in an array.
    let body = error.to_string();
    assert_eq!(run_checked("bare", &body), Err(expected.clone()));
    assert_eq!(
        parse_response(body.as_bytes(), &StreamOptions::default()),
        Err(expected.clone())
    );
    assert_eq!(run_checked("wrapped", &format!("[{body}]")), Err(expected));
}

#[test]
fn blocked_prompt_is_a_clear_error() {
    let blocked = json!({
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
    });
    let expected = LlmError::Provider {
        message: "Gemini blocked the prompt (SAFETY)".into(),
        kind: Some("SAFETY".into()),
        code: None,
    };
    assert_eq!(
        run_checked("array", &array(std::slice::from_ref(&blocked))),
        Err(expected.clone())
    );
    assert_eq!(
        run_checked("sse", &sse(std::slice::from_ref(&blocked))),
        Err(expected.clone())
    );
    assert_eq!(
        parse_response(blocked.to_string().as_bytes(), &StreamOptions::default()),
        Err(expected)
    );
    let with_message = json!({"promptFeedback": {"blockReason": "OTHER",
                                                 "blockReasonMessage": "Nope."}});
    match run(with_message.to_string().as_bytes()) {
        Err(LlmError::Provider { message, kind, .. }) => {
            assert_eq!(message, "Gemini blocked the prompt (OTHER): Nope.");
            assert_eq!(kind.as_deref(), Some("OTHER"));
        }
        other => panic!("{other:?}"),
    }
    // A candidate cut by the filter is an answer with a content-filter finish.
    let filtered = [
        chunk(vec![text_part("Once upon")], None),
        chunk(vec![], Some("SAFETY")),
    ];
    let (_, c) = run_checked("filtered", &sse(&filtered)).unwrap();
    assert_eq!(c.text, "Once upon");
    assert_eq!(c.finish_reason, Some(FinishReason::ContentFilter));
}

#[test]
fn truncated_array_reports_the_partial_completion() {
    if !recording::available("llm_gemini::truncated_array_reports_the_partial_completion") {
        return;
    }
    let input = fixture("thinking_stream_01.txt");
    let full = run(&input).unwrap().1;
    let closing = input.iter().rposition(|&b| b == b']').unwrap();
    let mut rng = Rng::new(0x7A0C);
    let mut cuts: Vec<usize> = (0..40)
        .map(|_| rng.below(closing as u64) as usize)
        .collect();
    cuts.extend([0, 1, closing]);
    for cut in cuts {
        let body = &input[..cut];
        let partial = if body.iter().all(u8::is_ascii_whitespace) {
            truncated(run(body))
        } else {
            truncated(run_chunks(&body.chunks(97).collect::<Vec<_>>()))
        };
        assert!(full.text.starts_with(&partial.text), "cut {cut}");
        assert!(full.reasoning.starts_with(&partial.reasoning), "cut {cut}");
        assert!(partial.finish_reason.is_none() || cut > closing - 400);
    }
    // Cut just before the `]`: everything arrived except the end marker.
    let partial = truncated(run(&input[..closing]));
    assert_eq!(partial.text, full.text);
    assert_eq!(partial.usage, full.usage);
    // Cut inside a function call element: the call is not reported.
    let chunks = [
        chunk(vec![text_part("Calling.")], None),
        chunk(
            vec![json!({"functionCall": {"name": "f", "args": {"a": 1}}})],
            Some("STOP"),
        ),
    ];
    let input = array(&chunks);
    let cut = input.find("\"a\"").unwrap();
    let partial = truncated(run(&input.as_bytes()[..cut]));
    assert_eq!(partial.text, "Calling.");
    assert!(partial.tool_calls.is_empty());
}

#[test]
fn sse_without_finish_reason_is_truncated() {
    let chunks = [
        chunk(vec![thought("Thinking")], None),
        chunk(vec![text_part("Half an ans")], None),
    ];
    let partial = truncated(run_checked("sse", &sse(&chunks)));
    assert_eq!(partial.reasoning, "Thinking");
    assert_eq!(partial.text, "Half an ans");
    assert_eq!(partial.finish_reason, None);
    // The same with a finish reason is complete, even without a final blank line.
    let mut input = sse(&[chunk(vec![text_part("Done.")], Some("STOP"))]);
    input.truncate(input.len() - 4);
    assert_eq!(run_checked("sse-end", &input).unwrap().1.text, "Done.");
    // Cut anywhere: truncated (never invalid JSON) until the finishing chunk is whole.
    let chunks = [
        chunk(vec![text_part("One, ")], None),
        chunk(vec![text_part("two.")], Some("STOP")),
    ];
    let input = sse(&chunks);
    // Each event counts once its JSON is whole, blank line or not.
    let first_close = input.find("}\r\n").unwrap();
    let last_close = input.rfind('}').unwrap();
    for cut in 0..input.len() {
        let outcome = run(&input.as_bytes()[..cut]);
        if cut > last_close {
            assert_eq!(outcome.unwrap().1.text, "One, two.", "cut {cut}");
        } else {
            let expected = if cut > first_close { "One, " } else { "" };
            assert_eq!(truncated(outcome).text, expected, "cut {cut}");
        }
    }
    // Empty bodies.
    assert_eq!(truncated(run(b"")), Completion::default());
    assert_eq!(truncated(run(b" \r\n ")), Completion::default());
    // A non-streaming object cut short.
    let body = chunk(vec![text_part("x")], Some("STOP")).to_string();
    assert_eq!(
        truncated(run(&body.as_bytes()[..body.len() / 2])),
        Completion::default()
    );
}

#[test]
fn chunks_split_inside_utf8_characters() {
    let chunks = [
        chunk(vec![thought("Überlegung: 思考 🤔")], None),
        chunk(vec![text_part("héllo — 世界 🚀")], None),
        chunk(vec![text_part(" ✓")], Some("STOP")),
    ];
    for (framing, input) in [("array", array(&chunks)), ("sse", sse(&chunks))] {
        let (_, c) = run_checked(framing, &input).unwrap();
        assert_eq!(c.reasoning, "Überlegung: 思考 🤔");
        assert_eq!(c.text, "héllo — 世界 🚀 ✓");
        // Cut inside each multi-byte character specifically.
        let bytes = input.as_bytes();
        for cut in (1..bytes.len()).filter(|&i| !input.is_char_boundary(i)) {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(run_chunks(&[a, b]).unwrap().1, c, "{framing}: cut {cut}");
        }
    }
}

#[test]
fn non_streaming_generate_content() {
    let body = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "Let me think.", "thought": true},
                {"text": "It is 4."},
                {"functionCall": {"name": "check", "args": {"n": 4}}, "thoughtSignature": "s1"},
            ]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4,
                          "thoughtsTokenCount": 2, "cachedContentTokenCount": 1,
                          "totalTokenCount": 9},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "r9",
    });
    let text = serde_json::to_string_pretty(&body).unwrap();
    let c = parse_response(text.as_bytes(), &StreamOptions::default()).unwrap();
    assert_eq!(c.reasoning, "Let me think.");
    assert_eq!(c.text, "It is 4.");
    assert_eq!(c.tool_calls.len(), 1);
    assert_eq!(c.tool_calls[0].signature.as_deref(), Some("s1"));
    assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        c.usage,
        Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 6,
            total_tokens: 9,
            reasoning_tokens: Some(2),
            cached_tokens: Some(1),
        })
    );
    // Through the streaming parser (which waits for the end of an object body).
    let (deltas, streamed) = run_checked("object", &text).unwrap();
    assert_eq!(streamed, c);
    assert_eq!(
        deltas.first(),
        Some(&Delta::Reasoning("Let me think.".into()))
    );
    // Without a finish reason a whole object is still complete.
    let mut no_reason = body.clone();
    no_reason["candidates"][0]
        .as_object_mut()
        .unwrap()
        .remove("finishReason");
    let c = parse_response(no_reason.to_string().as_bytes(), &StreamOptions::default()).unwrap();
    assert_eq!(c.finish_reason, None);
    assert_eq!(c.text, "It is 4.");
}

#[test]
fn limits_and_garbage() {
    let chunks = [
        chunk(vec![text_part(&"x".repeat(600))], None),
        chunk(vec![text_part("y")], Some("STOP")),
    ];
    let input = array(&chunks);
    let small = StreamOptions {
        max_response_bytes: 500,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[input.as_bytes()], small),
        Err(LlmError::ResponseTooLarge { limit: 500 })
    );
    let roomy = StreamOptions {
        max_response_bytes: 2000,
        ..StreamOptions::default()
    };
    assert!(run_chunks_with(&[input.as_bytes()], roomy).is_ok());
    // Accumulated text counts too, not only one element.
    let many: Vec<Value> = (0..10)
        .map(|_| chunk(vec![text_part(&"z".repeat(300))], None))
        .collect();
    assert_eq!(
        run_chunks_with(&[array(&many).as_bytes()], roomy),
        Err(LlmError::ResponseTooLarge { limit: 2000 })
    );
    // Tool calls.
    let calls: Vec<Value> = (0..3)
        .map(|i| json!({"functionCall": {"name": format!("f{i}")}}))
        .collect();
    let few = StreamOptions {
        max_tool_calls: 2,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[sse(&[chunk(calls, Some("STOP"))]).as_bytes()], few),
        Err(LlmError::TooManyToolCalls { limit: 2 })
    );
    // An over-long SSE line.
    let short_lines = StreamOptions {
        max_line_len: 100,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[sse(&chunks).as_bytes()], short_lines),
        Err(LlmError::LineTooLong { limit: 100 })
    );
    // Not JSON where JSON belongs.
    assert!(matches!(
        run(b"[{\"a\": tru}]"),
        Err(LlmError::InvalidJson { .. })
    ));
    assert!(matches!(
        run(b"data: {nope}\n\n"),
        Err(LlmError::InvalidJson { .. })
    ));
    assert!(matches!(run(b"[\"text\"]"), Err(LlmError::Malformed(_))));
    assert!(matches!(
        run(br#"{"candidates": "many"}"#),
        Err(LlmError::InvalidJson { .. })
    ));
    // Deep nesting stops at serde_json's limit, not the stack.
    let deep = format!(
        "[{{\"candidates\": {}{}}}]",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(matches!(
        run(deep.as_bytes()),
        Err(LlmError::InvalidJson { .. })
    ));
    // An empty array is a complete, empty answer.
    assert_eq!(run(b"[]").unwrap().1, Completion::default());
}
