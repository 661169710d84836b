//! The SSE decoder: the event-stream rules (line endings, multi-line data, comments, fields,
//! ids), the same events however the input is cut, and the line-length cap.

use org_agent::llm::sse::{SseDecoder, SseEvent};
use org_agent::llm::LlmError;

fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
    SseEvent {
        event: event.to_owned(),
        data: data.to_owned(),
        id: id.map(str::to_owned),
    }
}

/// Decodes `input` in one piece, plus `finish`.
fn decode(input: &[u8]) -> Vec<SseEvent> {
    decode_chunks(&[input])
}

fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        out.extend(d.feed(c).expect("feed"));
    }
    out.extend(d.finish().expect("finish"));
    out
}

/// Asserts that every way of cutting `input` into two pieces, and into single bytes, decodes
/// like the whole.
fn assert_split_invariant(input: &[u8]) -> Vec<SseEvent> {
    let whole = decode(input);
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(decode_chunks(&[a, b]), whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(decode_chunks(&bytes), whole, "1-byte chunks");
    whole
}

#[test]
fn lf_crlf_and_cr_line_endings_are_equivalent() {
    let lf = b"data: one\n\ndata: two\n\n";
    let crlf = b"data: one\r\n\r\ndata: two\r\n\r\n";
    let cr = b"data: one\r\rdata: two\r\r";
    let mixed = b"data: one\r\n\ndata: two\r\r\n";
    let want = vec![ev("message", "one", None), ev("message", "two", None)];
    for input in [&lf[..], &crlf[..], &cr[..], &mixed[..]] {
        assert_eq!(assert_split_invariant(input), want, "{input:?}");
    }
}

#[test]
fn cr_at_chunk_end_followed_by_lf_is_one_line_ending() {
    // "\r" ends chunk 1, "\n" starts chunk 2: one line ending, not an empty line in between
    // (an empty line would dispatch "a" before "b" joins it).
    let got = decode_chunks(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(got, vec![ev("message", "a\nb", None)]);
}

#[test]
fn multi_line_data_is_joined_with_newlines() {
    let got = assert_split_invariant(b"data: first\ndata:second\ndata:  third\ndata\n\n");
    assert_eq!(got, vec![ev("message", "first\nsecond\n third\n", None)]);
}

#[test]
fn only_one_space_after_the_colon_is_dropped() {
    assert_eq!(decode(b"data:x\n\n"), vec![ev("message", "x", None)]);
    assert_eq!(decode(b"data: x\n\n"), vec![ev("message", "x", None)]);
    assert_eq!(decode(b"data:  x\n\n"), vec![ev("message", " x", None)]);
    assert_eq!(decode(b"data:\tx\n\n"), vec![ev("message", "\tx", None)]);
}

#[test]
fn comments_and_unknown_fields_are_ignored() {
    let input = b": ping\n:\ndata: a\n: in the middle\nfoo: bar\nHTTP/2 200 \n\n: OPENROUTER PROCESSING\n\n";
    assert_eq!(
        assert_split_invariant(input),
        vec![ev("message", "a", None)]
    );
}

#[test]
fn event_names_and_ids() {
    let input = b"event: error\ndata: boom\nid: 7\n\ndata: next\n\nid\ndata: no id\n\nid: a\0b\ndata: nul ignored\n\n";
    assert_eq!(
        assert_split_invariant(input),
        vec![
            ev("error", "boom", Some("7")),
            // The last event id persists across events ...
            ev("message", "next", Some("7")),
            // ... an empty `id` resets it ...
            ev("message", "no id", Some("")),
            // ... and an id containing NUL is ignored.
            ev("message", "nul ignored", Some("")),
        ]
    );
}

#[test]
fn events_without_data_are_not_dispatched_and_reset_the_name() {
    let got = decode(b"event: lonely\n\ndata: x\n\n\n\n");
    assert_eq!(got, vec![ev("message", "x", None)]);
    // An explicit empty data line is an event with empty data.
    assert_eq!(decode(b"data:\n\n"), vec![ev("message", "", None)]);
}

#[test]
fn retry_field() {
    let mut d = SseDecoder::new();
    d.feed(b"retry: 1500\n\nretry: soon\n\n").unwrap();
    assert_eq!(d.retry(), Some(1500));
}

#[test]
fn byte_order_mark_is_stripped_once() {
    let got = assert_split_invariant(b"\xEF\xBB\xBFdata: x\n\n");
    assert_eq!(got, vec![ev("message", "x", None)]);
    // A BOM later in the stream is content (here: an unknown field name).
    let got = decode(b"data: x\n\n\xEF\xBB\xBFdata: y\n\n");
    assert_eq!(got, vec![ev("message", "x", None)]);
}

#[test]
fn finish_dispatches_a_last_event_without_blank_line() {
    assert_eq!(decode(b"data: [DONE]"), vec![ev("message", "[DONE]", None)]);
    assert_eq!(
        decode(b"data: [DONE]\n"),
        vec![ev("message", "[DONE]", None)]
    );
    assert_eq!(
        decode(b"data: [DONE]\r"),
        vec![ev("message", "[DONE]", None)]
    );
    assert_eq!(decode(b""), vec![]);
    assert_eq!(decode(b"event: x"), vec![]);
}

#[test]
fn utf8_split_inside_a_character() {
    let input = "data: héllo 😊 → ok\n\n".as_bytes();
    let got = assert_split_invariant(input);
    assert_eq!(got, vec![ev("message", "héllo 😊 → ok", None)]);
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let got = decode(b"data: a\xFFb\n\n");
    assert_eq!(got, vec![ev("message", "a\u{FFFD}b", None)]);
}

#[test]
fn over_long_line_is_a_typed_error_and_sticky() {
    let mut d = SseDecoder::with_max_line_len(16);
    assert!(d.feed(b"data: 0123456789").unwrap().is_empty()); // exactly 16: fine
    let err = d.feed(b"x").unwrap_err();
    assert_eq!(err, LlmError::LineTooLong { limit: 16 });
    assert_eq!(d.feed(b"\n\n").unwrap_err(), err);
    assert_eq!(d.finish().unwrap_err(), err);

    // The cap holds when the line arrives in one big chunk, too.
    let mut d = SseDecoder::with_max_line_len(16);
    assert!(matches!(
        d.feed(b"data: 0123456789abcdef\n\n"),
        Err(LlmError::LineTooLong { .. })
    ));
}

#[test]
fn over_long_line_with_the_default_cap() {
    let mut d = SseDecoder::new();
    let chunk = vec![b'a'; 1024 * 1024];
    let mut result = Ok(Vec::new());
    for _ in 0..17 {
        result = d.feed(&chunk);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(
        result.unwrap_err(),
        LlmError::LineTooLong {
            limit: 16 * 1024 * 1024
        }
    );
}

#[test]
fn data_of_one_event_is_capped_across_lines() {
    let mut d = SseDecoder::with_max_line_len(32);
    let err = d
        .feed(b"data: 0123456789\ndata: 0123456789\ndata: 0123456789\n")
        .unwrap_err();
    assert_eq!(err, LlmError::EventTooLarge { limit: 32 });
}

#[test]
fn many_events_in_one_chunk_and_pseudo_random_chunks() {
    let mut input = Vec::new();
    let mut want = Vec::new();
    for i in 0..200 {
        let data = format!("{{\"n\":{i},\"s\":\"ü{}\"}}", "x".repeat(i % 7));
        let ending: &[u8] = match i % 3 {
            0 => b"\n",
            1 => b"\r\n",
            _ => b"\r",
        };
        input.extend_from_slice(b"data: ");
        input.extend_from_slice(data.as_bytes());
        input.extend_from_slice(ending);
        input.extend_from_slice(ending);
        if i % 10 == 0 {
            input.extend_from_slice(b": keep-alive");
            input.extend_from_slice(ending);
        }
        want.push(ev("message", &data, None));
    }
    assert_eq!(decode(&input), want);
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    for max in [1usize, 2, 3, 5, 8, 13, 64, 512] {
        let mut chunks = Vec::new();
        let mut rest = &input[..];
        while !rest.is_empty() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (1 + (seed % max as u64) as usize).min(rest.len());
            let (a, b) = rest.split_at(n);
            chunks.push(a);
            rest = b;
        }
        assert_eq!(decode_chunks(&chunks), want, "max chunk {max}");
    }
}
