//! The Ollama `/api/chat` parser against scripted NDJSON streams in the documented format
//! (there is no recording): text, thinking, tool calls, mid-stream errors, truncation, a
//! non-streaming body — each whole and cut at every byte boundary — and the request body.

use crate::support::parse::{assert_deltas_match, parse_chunks, truncated, Outcome};
use crate::support::Rng;
use org_agent::llm::ollama::{parse_response, request_body, OllamaStream};
use org_agent::llm::StreamOptions;
use org_agent::llm::{
    ChatRequest, Completion, Delta, FinishReason, LlmError, Message, ToolCall, Usage,
};
use serde_json::{json, Value};

fn run_chunks_with(chunks: &[&[u8]], opts: StreamOptions) -> Outcome {
    parse_chunks(Box::new(OllamaStream::with_options(opts)), chunks)
}

fn run_chunks(chunks: &[&[u8]]) -> Outcome {
    run_chunks_with(chunks, StreamOptions::default())
}

fn run(body: &[u8]) -> Outcome {
    run_chunks(&[body])
}

/// What must hold for any successful parse here: the deltas add up to the completion, which
/// has no refusal (Ollama has no refusal field).
fn assert_parse(name: &str, deltas: &[Delta], c: &Completion) {
    assert_deltas_match(name, deltas, c);
    assert_eq!(c.refusal, None, "{name}");
}

/// Runs `input` whole, in 1-byte chunks, in two pieces at every cut and in random chunks;
/// asserts they all agree and returns the outcome.
fn run_checked(name: &str, input: &str) -> Outcome {
    let bytes = input.as_bytes();
    let whole = run(bytes);
    if let Ok((deltas, c)) = &whole {
        assert_parse(name, deltas, c);
    }
    let ones: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(run_chunks(&ones), whole, "{name}: 1-byte chunks");
    for cut in 0..=bytes.len() {
        let (a, b) = bytes.split_at(cut);
        assert_eq!(run_chunks(&[a, b]), whole, "{name}: cut at {cut}");
    }
    for seed in [3u64, 0x011A_3A5E] {
        let mut rng = Rng::new(seed);
        for max in [2, 5, 13, 100] {
            let chunks = rng.chunks(bytes, max);
            assert_eq!(run_chunks(&chunks), whole, "{name}: seed {seed}, max {max}");
        }
    }
    whole
}

const CREATED: &str = "2025-05-27T22:54:57.641643Z";

/// A streamed line with `message`.
fn line(message: Value) -> String {
    let mut message = message;
    message["role"] = json!("assistant");
    if message.get("content").is_none() {
        message["content"] = json!("");
    }
    format!(
        "{}\n",
        json!({"model": "qwen3", "created_at": CREATED, "message": message, "done": false})
    )
}

fn content(s: &str) -> String {
    line(json!({ "content": s }))
}

/// The final line.
fn done(reason: &str, prompt: u64, eval: u64) -> String {
    format!(
        "{}\n",
        json!({"model": "qwen3", "created_at": CREATED,
               "message": {"role": "assistant", "content": ""},
               "done": true, "done_reason": reason,
               "total_duration": 4_883_583_458u64, "load_duration": 1_334_875,
               "prompt_eval_count": prompt, "prompt_eval_duration": 342_546_000,
               "eval_count": eval, "eval_duration": 4_535_599_000u64})
    )
}

fn usage(prompt: u64, completion: u64) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        reasoning_tokens: None,
        cached_tokens: None,
    }
}

#[test]
fn text_stream() {
    let input = [
        content("The sky"),
        content(" is blue —"),
        content(" Rayleigh 🌈."),
        done("stop", 26, 298),
    ]
    .concat();
    let (deltas, c) = run_checked("text", &input).unwrap();
    assert_eq!(c.text, "The sky is blue — Rayleigh 🌈.");
    assert_eq!(c.reasoning, "");
    assert_eq!(c.model.as_deref(), Some("qwen3"));
    assert_eq!(c.id, None);
    assert_eq!(c.usage, Some(usage(26, 298)));
    assert_eq!(c.finish_reason, Some(FinishReason::Stop));
    assert!(c.tool_calls.is_empty());
    // Text streams as it comes, usage and finish at the end.
    assert_eq!(deltas.first(), Some(&Delta::Text("The sky".into())));
    assert_eq!(
        &deltas[deltas.len() - 2..],
        &[
            Delta::Usage(usage(26, 298)),
            Delta::Finish(FinishReason::Stop)
        ]
    );
    // CRLF line ends, a last line without its newline, blank lines: all the same.
    let crlf = input.replace('\n', "\r\n");
    assert_eq!(run_checked("crlf", &crlf).unwrap().1, c);
    let no_final_newline = input.trim_end();
    assert_eq!(run_checked("no newline", no_final_newline).unwrap().1, c);
    let blank_lines = input.replace('\n', "\n\n");
    assert_eq!(run_checked("blank", &blank_lines).unwrap().1, c);
    // Other done reasons.
    let cut = [content("abc"), done("length", 1, 3)].concat();
    assert_eq!(
        run_checked("length", &cut).unwrap().1.finish_reason,
        Some(FinishReason::Length)
    );
    let load = format!(
        "{}\n",
        json!({"model": "qwen3", "created_at": CREATED, "message": {"role": "assistant",
               "content": ""}, "done": true, "done_reason": "load"})
    );
    let c = run_checked("load", &load).unwrap().1;
    assert_eq!(c.finish_reason, Some(FinishReason::Other("load".into())));
    assert_eq!(c.usage, None);
}

#[test]
fn thinking_field_and_think_tags() {
    let input = [
        line(json!({"thinking": "The user says hi."})),
        line(json!({"thinking": " Greet back."})),
        content("\n\n"),
        content("Hello!"),
        done("stop", 10, 20),
    ]
    .concat();
    let (deltas, c) = run_checked("thinking", &input).unwrap();
    assert_eq!(c.reasoning, "The user says hi. Greet back.");
    assert_eq!(c.text, "Hello!");
    assert_eq!(deltas[0], Delta::Reasoning("The user says hi.".into()));
    // A model whose template Ollama does not parse writes the tags inline.
    let input = [
        content("<thi"),
        content("nk>pondering</think>"),
        content("\n\nDone."),
        done("stop", 1, 2),
    ]
    .concat();
    let c = run_checked("tags", &input).unwrap().1;
    assert_eq!(
        (c.reasoning.as_str(), c.text.as_str()),
        ("pondering", "Done.")
    );
}

#[test]
fn tool_calls() {
    let input = [
        line(json!({"thinking": "Need weather."})),
        line(json!({"tool_calls": [{"function": {"name": "get_weather",
                                               "arguments": {"city": "Toronto", "days": 2}}}]})),
        // Newer servers send an id and an index; some proxies send arguments as a string.
        line(json!({"tool_calls": [
            {"id": "call_abc", "function": {"index": 1, "name": "get_time",
                                            "arguments": "{\"tz\": \"EST\"}"}},
            {"function": {"name": "ping"}},
        ]})),
        done("stop", 50, 30),
    ]
    .concat();
    let (deltas, c) = run_checked("tools", &input).unwrap();
    assert_eq!(c.reasoning, "Need weather.");
    assert_eq!(c.text, "");
    assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(c.tool_calls.len(), 3);
    assert_eq!(c.tool_calls[0].id, "call_0");
    assert_eq!(c.tool_calls[0].name, "get_weather");
    assert_eq!(
        c.tool_calls[0].arguments,
        json!({"city": "Toronto", "days": 2})
    );
    assert_eq!(c.tool_calls[1].id, "call_abc");
    assert_eq!(c.tool_calls[1].arguments, json!({"tz": "EST"}));
    assert_eq!(c.tool_calls[2].id, "call_2");
    assert_eq!(c.tool_calls[2].arguments, json!({}));
    assert!(c.tool_calls.iter().all(|t| t.signature.is_none()));
    assert!(deltas.contains(&Delta::ToolCallStart {
        index: 1,
        id: "call_abc".into(),
        name: "get_time".into()
    }));
    // Arguments that are a string but not JSON: a typed error naming the tool.
    let bad = [
        line(json!({"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]})),
        done("stop", 1, 1),
    ]
    .concat();
    match run(bad.as_bytes()) {
        Err(LlmError::InvalidToolArguments {
            index, id, name, ..
        }) => {
            assert_eq!((index, id.as_str(), name.as_str()), (0, "call_0", "f"));
        }
        other => panic!("{other:?}"),
    }
    // Too many calls.
    let few = StreamOptions {
        max_tool_calls: 2,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[input.as_bytes()], few),
        Err(LlmError::TooManyToolCalls { limit: 2 })
    );
}

#[test]
fn error_line_mid_stream() {
    let input = [
        content("Partial"),
        format!(
            "{}\n",
            json!({"error": "an error was encountered while running the model: unexpected EOF"})
        ),
        content("ignored"),
    ]
    .concat();
    let expected = LlmError::Provider {
        message: "an error was encountered while running the model: unexpected EOF".into(),
        kind: None,
        code: None,
    };
    assert_eq!(run_checked("error", &input), Err(expected.clone()));
    // The text before it was delivered; the error then sticks.
    let first = content("Partial");
    let mut stream = OllamaStream::with_options(StreamOptions::default());
    assert_eq!(
        stream.feed(first.as_bytes()),
        Ok(vec![Delta::Text("Partial".into())])
    );
    assert_eq!(
        stream.feed(&input.as_bytes()[first.len()..]),
        Err(expected.clone())
    );
    assert_eq!(stream.feed(b"{}\n"), Err(expected.clone()));
    assert_eq!(stream.finish(), Err(expected.clone()));
    // An error body (as with HTTP 404 "model not found") parses the same.
    let body = br#"{"error":"model \"nope\" not found, try pulling it first"}"#;
    match parse_response(body, &StreamOptions::default()) {
        Err(LlmError::Provider { message, .. }) => {
            assert_eq!(message, "model \"nope\" not found, try pulling it first");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_done_line_is_truncated() {
    let input = [
        line(json!({"thinking": "Hmm"})),
        content("Half"),
        line(json!({"tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]})),
    ]
    .concat();
    let partial = truncated(run_checked("truncated", &input));
    assert_eq!(partial.reasoning, "Hmm");
    assert_eq!(partial.text, "Half");
    assert_eq!(partial.tool_calls.len(), 1);
    assert_eq!(partial.tool_calls[0].arguments, json!({"a": 1}));
    assert_eq!(partial.finish_reason, None);
    // Cut inside the done line.
    let full = [content("ok"), done("stop", 1, 1)].concat();
    let cut = full.find("\"done\":true").unwrap();
    assert_eq!(truncated(run(&full.as_bytes()[..cut])).text, "ok");
    // Empty.
    assert_eq!(truncated(run(b"")), Completion::default());
    // A non-JSON line.
    assert!(matches!(
        run(b"{\"message\": tru}\n"),
        Err(LlmError::InvalidJson { .. })
    ));
    // Lines after done are ignored.
    let after = [full.clone(), content("late")].concat();
    assert_eq!(run(after.as_bytes()).unwrap().1.text, "ok");
}

#[test]
fn short_stream_split_at_every_boundary() {
    // Tiny and multi-byte: every split of every line boundary and character.
    let input = [content("é"), content("🚀"), done("stop", 1, 2)].concat();
    let c = run_checked("tiny", &input).unwrap().1;
    assert_eq!(c.text, "é🚀");
    // Three-piece cuts over a smaller stream.
    let input = [content("ab"), done("stop", 0, 1)].concat();
    let whole = run(input.as_bytes());
    let bytes = input.as_bytes();
    for i in 0..=bytes.len() {
        for j in i..=bytes.len() {
            let chunks = [&bytes[..i], &bytes[i..j], &bytes[j..]];
            assert_eq!(run_chunks(&chunks), whole, "cuts {i}, {j}");
        }
    }
}

#[test]
fn limits() {
    let input = [content(&"x".repeat(300)), done("stop", 1, 1)].concat();
    let short = StreamOptions {
        max_line_len: 200,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[input.as_bytes()], short),
        Err(LlmError::LineTooLong { limit: 200 })
    );
    let input = [
        content(&"x".repeat(300)),
        content(&"y".repeat(300)),
        done("stop", 1, 1),
    ]
    .concat();
    let small = StreamOptions {
        max_response_bytes: 500,
        ..StreamOptions::default()
    };
    assert_eq!(
        run_chunks_with(&[input.as_bytes()], small),
        Err(LlmError::ResponseTooLarge { limit: 500 })
    );
    assert_eq!(
        parse_response(input.as_bytes(), &small),
        Err(LlmError::ResponseTooLarge { limit: 500 })
    );
}

#[test]
fn non_streaming_body() {
    let body = json!({
        "model": "qwen3",
        "created_at": CREATED,
        "message": {"role": "assistant", "content": "Four.", "thinking": "2+2",
                    "tool_calls": [{"function": {"name": "check", "arguments": {"n": 4}}}]},
        "done": true,
        "done_reason": "stop",
        "prompt_eval_count": 12,
        "eval_count": 7,
    });
    let compact = body.to_string();
    let c = parse_response(compact.as_bytes(), &StreamOptions::default()).unwrap();
    assert_eq!(c.text, "Four.");
    assert_eq!(c.reasoning, "2+2");
    assert_eq!(c.tool_calls[0].arguments, json!({"n": 4}));
    assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(c.usage, Some(usage(12, 7)));
    // The streaming parser reads it too (one line, no newline).
    assert_eq!(run_checked("compact", &compact).unwrap().1, c);
    // Pretty-printed by a proxy: parse_response still reads it.
    let pretty = serde_json::to_string_pretty(&body).unwrap();
    assert_eq!(
        parse_response(pretty.as_bytes(), &StreamOptions::default()).unwrap(),
        c
    );
    // A whole NDJSON stream through parse_response.
    let stream = [content("Hi"), done("stop", 1, 1)].concat();
    assert_eq!(
        parse_response(stream.as_bytes(), &StreamOptions::default())
            .unwrap()
            .text,
        "Hi"
    );
    // Old servers: no done_reason.
    let old = json!({"model": "m", "message": {"role": "assistant", "content": "x"},
                     "done": true});
    let c = parse_response(old.to_string().as_bytes(), &StreamOptions::default()).unwrap();
    assert_eq!(c.finish_reason, Some(FinishReason::Stop));
}

#[test]
fn request_body_shape() {
    let request = ChatRequest {
        messages: vec![
            Message::System("You are terse.".into()),
            Message::User("Weather in Toronto?".into()),
            Message::Assistant {
                content: "Checking.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_0".into(),
                        name: "get_weather".into(),
                        arguments: json!({"city": "Toronto"}),
                        signature: None,
                    },
                    ToolCall {
                        id: "call_1".into(),
                        name: "get_time".into(),
                        // Raw text kept from a cut-off response: still sent as an object.
                        arguments: json!("{\"tz\":\"EST\"}"),
                        signature: None,
                    },
                ],
            },
            Message::Tool {
                tool_call_id: "call_1".into(),
                content: "12:00".into(),
            },
            Message::Tool {
                tool_call_id: "call_0".into(),
                content: "11°C".into(),
            },
        ],
        tools: vec![json!({"name": "get_weather", "description": "Weather",
                           "parameters": {"type": "object",
                                          "properties": {"city": {"type": "string"}}}})],
        stream: true,
        temperature: None,
        max_tokens: Some(256),
        cache_prefix: None,
        images: Vec::new(),
    };
    let body = request_body(&request, "qwen3:8b");
    assert_eq!(body["model"], "qwen3:8b");
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"], json!({"num_predict": 256}));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Toronto?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"function": {"name": "get_weather", "arguments": {"city": "Toronto"}}},
                {"function": {"name": "get_time", "arguments": {"tz": "EST"}}},
            ]},
            {"role": "tool", "content": "12:00", "tool_name": "get_time"},
            {"role": "tool", "content": "11°C", "tool_name": "get_weather"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "get_weather",
                "description": "Weather",
                "parameters": {"type": "object",
                               "properties": {"city": {"type": "string"}}}}}])
    );
    // The parsed completion of a tool-call stream feeds the next request as is.
    let stream = [
        line(json!({"tool_calls": [{"function": {"name": "f", "arguments": {"x": [1, 2]}}}]})),
        done("stop", 1, 1),
    ]
    .concat();
    let c = run(stream.as_bytes()).unwrap().1;
    let next = request_body(
        &ChatRequest {
            messages: vec![Message::Assistant {
                content: c.text.clone(),
                tool_calls: c.tool_calls.clone(),
            }],
            ..ChatRequest::default()
        },
        "m",
    );
    assert_eq!(
        next["messages"][0]["tool_calls"][0]["function"]["arguments"],
        json!({"x": [1, 2]})
    );
}
