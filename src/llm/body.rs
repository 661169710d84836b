//! Cutting a response body into the payloads a wire format decodes.
//!
//! HTTP hands over the body in chunks cut anywhere. Every wire format frames its payloads in
//! one of a few ways ([`Framing`]): Server-Sent Events, one JSON object per line (NDJSON), a
//! JSON array streamed element by element, or one whole JSON document (a non-streaming answer,
//! or an error object from a server that ignored `"stream": true`). [`Body`] buffers the
//! bytes, finds the payloads whatever the chunking, and caps every buffer, so no format does
//! its own byte handling. Nothing here parses JSON beyond bracket depth.

use crate::llm::error::LlmError;
use crate::llm::sse::{push_bounded, SseDecoder, SseEvent};

/// How a wire format frames the payloads of its response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// SSE; or one JSON document, when the first non-blank byte is `{`.
    SseOrJson,
    /// SSE; a streamed JSON array of objects, when the first non-blank byte is `[`; or one
    /// JSON document, when it is `{`.
    SseArrayOrJson,
    /// One JSON object per line.
    Ndjson,
}

/// One payload of a body: an SSE event, an NDJSON line or an element of a JSON array.
#[derive(Debug)]
pub enum Frame {
    Event(SseEvent),
    /// An NDJSON line (without its `\n`) or an array element.
    Json(Vec<u8>),
    /// The array's closing `]`: the framing's own end marker.
    Closed,
}

/// How a body ended.
#[derive(Debug)]
pub enum BodyEnd {
    /// Nothing but whitespace came.
    Empty,
    /// One JSON document, whole as received.
    Whole(Vec<u8>),
    /// A stream of payloads. `last` is the one the body ended in without its terminator (an
    /// SSE event without its blank line, a line without its `\n`); `closed` says whether the
    /// framing's own end marker came, for framings that have one (a JSON array's `]`).
    Stream {
        last: Option<Frame>,
        closed: Option<bool>,
    },
}

/// A response body being cut into payloads; see the module documentation.
#[derive(Debug)]
pub struct Body {
    framing: Framing,
    kind: Kind,
    max_line_len: usize,
    max_response_bytes: usize,
}

#[derive(Debug)]
enum Kind {
    /// Nothing but whitespace seen yet (framings that tell their kind by the first byte).
    Undecided,
    Sse(SseDecoder),
    Array(ArraySplitter),
    Lines(Lines),
    Json(Vec<u8>),
}

impl Body {
    /// SSE lines and events and NDJSON lines of at most `max_line_len` bytes; a JSON document
    /// or array element of at most `max_response_bytes` ([`LlmError::ResponseTooLarge`]).
    pub fn new(framing: Framing, max_line_len: usize, max_response_bytes: usize) -> Self {
        let kind = match framing {
            Framing::Ndjson => Kind::Lines(Lines::new(max_line_len)),
            Framing::SseOrJson | Framing::SseArrayOrJson => Kind::Undecided,
        };
        Body {
            framing,
            kind,
            max_line_len,
            max_response_bytes,
        }
    }

    /// Adds the payloads `bytes` completes to `out`. On an error, `out` has the payloads
    /// completed before it, so a caller decodes them first and the outcome does not depend on
    /// where the body was cut.
    pub fn feed_into(&mut self, mut bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), LlmError> {
        if let Kind::Undecided = self.kind {
            let Some(start) = bytes.iter().position(|b| !b.is_ascii_whitespace()) else {
                return Ok(());
            };
            bytes = bytes.get(start..).unwrap_or_default();
            self.kind = match (bytes.first(), self.framing) {
                (Some(b'{'), _) => Kind::Json(Vec::new()),
                (Some(b'['), Framing::SseArrayOrJson) => {
                    Kind::Array(ArraySplitter::new(self.max_response_bytes))
                }
                _ => Kind::Sse(SseDecoder::with_max_line_len(self.max_line_len)),
            };
        }
        match &mut self.kind {
            Kind::Undecided => Ok(()),
            Kind::Json(body) => {
                if body.len().saturating_add(bytes.len()) > self.max_response_bytes {
                    return Err(LlmError::ResponseTooLarge {
                        limit: self.max_response_bytes,
                    });
                }
                body.extend_from_slice(bytes);
                Ok(())
            }
            Kind::Sse(decoder) => {
                let mut events = Vec::new();
                let decoded = decoder.feed_into(bytes, &mut events);
                out.extend(events.into_iter().map(Frame::Event));
                decoded
            }
            Kind::Array(splitter) => {
                let was_closed = splitter.closed();
                let mut elements = Vec::new();
                let split = splitter.feed(bytes, &mut elements);
                out.extend(elements.into_iter().map(Frame::Json));
                if splitter.closed() && !was_closed {
                    out.push(Frame::Closed);
                }
                split
            }
            Kind::Lines(lines) => lines.feed(bytes, out),
        }
    }

    /// Ends the body.
    pub fn finish(&mut self) -> Result<BodyEnd, LlmError> {
        Ok(match std::mem::replace(&mut self.kind, Kind::Undecided) {
            Kind::Undecided => BodyEnd::Empty,
            Kind::Json(body) => BodyEnd::Whole(body),
            Kind::Sse(mut decoder) => BodyEnd::Stream {
                last: decoder.finish()?.map(Frame::Event),
                closed: None,
            },
            Kind::Array(splitter) => BodyEnd::Stream {
                last: None,
                closed: Some(splitter.closed()),
            },
            Kind::Lines(lines) => BodyEnd::Stream {
                last: (!lines.line.is_empty()).then_some(Frame::Json(lines.line)),
                closed: None,
            },
        })
    }
}

// ---------------------------------------------------------------------------------------------
// NDJSON.

/// Lines, cut wherever the chunks end.
#[derive(Debug)]
struct Lines {
    /// The current, unfinished line.
    line: Vec<u8>,
    max_line_len: usize,
}

impl Lines {
    fn new(max_line_len: usize) -> Self {
        Lines {
            line: Vec::new(),
            max_line_len,
        }
    }

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), LlmError> {
        let mut rest = bytes;
        while !rest.is_empty() {
            let newline = rest.iter().position(|&b| b == b'\n');
            let (head, tail) = rest.split_at(newline.unwrap_or(rest.len()));
            self.push_line_bytes(head)?;
            match tail.split_first() {
                Some((_newline, after)) => {
                    rest = after;
                    // A `\r` before the `\n` is whitespace to JSON.
                    let line = std::mem::take(&mut self.line);
                    out.push(Frame::Json(line));
                }
                None => break,
            }
        }
        Ok(())
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), LlmError> {
        push_bounded(&mut self.line, bytes, self.max_line_len)
    }
}

// ---------------------------------------------------------------------------------------------
// Splitting a streamed JSON array into its elements.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrayState {
    /// Before the opening `[`.
    Open,
    /// Between elements: whitespace, `,`, the next `{` or the closing `]`.
    Between,
    /// Inside an element.
    Element,
    /// After the closing `]`.
    Closed,
}

/// Cuts a JSON array of objects, fed in arbitrary chunks, into the bytes of each element.
/// Only string, escape and bracket depth are tracked (brackets in strings do not count); the
/// element is parsed by serde_json once complete, so mismatched brackets surface there.
#[derive(Debug)]
struct ArraySplitter {
    state: ArrayState,
    element: Vec<u8>,
    depth: usize,
    in_string: bool,
    escaped: bool,
    limit: usize,
}

impl ArraySplitter {
    fn new(limit: usize) -> Self {
        ArraySplitter {
            state: ArrayState::Open,
            element: Vec::new(),
            depth: 0,
            in_string: false,
            escaped: false,
            limit,
        }
    }

    fn closed(&self) -> bool {
        self.state == ArrayState::Closed
    }

    fn push_element_bytes(&mut self, bytes: &[u8]) -> Result<(), LlmError> {
        if self.element.len().saturating_add(bytes.len()) > self.limit {
            return Err(LlmError::ResponseTooLarge { limit: self.limit });
        }
        self.element.extend_from_slice(bytes);
        Ok(())
    }

    /// Takes the next chunk; adds the elements it completes to `done`, also those before
    /// an error in the chunk (the caller parses them first, so the outcome does not depend
    /// on where the body was cut).
    fn feed(&mut self, bytes: &[u8], done: &mut Vec<Vec<u8>>) -> Result<(), LlmError> {
        let mut rest = bytes;
        while let Some((&first, tail)) = rest.split_first() {
            match self.state {
                ArrayState::Open => {
                    rest = tail;
                    match first {
                        b'[' => self.state = ArrayState::Between,
                        b if b.is_ascii_whitespace() => {}
                        _ => return Err(unexpected(first, "before the response array")),
                    }
                }
                ArrayState::Between => {
                    rest = tail;
                    match first {
                        b'{' => {
                            self.state = ArrayState::Element;
                            self.depth = 1;
                            self.in_string = false;
                            self.escaped = false;
                            self.push_element_bytes(b"{")?;
                        }
                        b']' => self.state = ArrayState::Closed,
                        b',' => {}
                        b if b.is_ascii_whitespace() => {}
                        _ => return Err(unexpected(first, "between response chunks")),
                    }
                }
                ArrayState::Element => {
                    let end = self.scan(rest);
                    let (head, tail) = rest.split_at(end.unwrap_or(rest.len()));
                    self.push_element_bytes(head)?;
                    rest = tail;
                    if end.is_some() {
                        self.state = ArrayState::Between;
                        done.push(std::mem::take(&mut self.element));
                    }
                }
                // Whatever follows the array (nothing, from Google) is not the response.
                ArrayState::Closed => break,
            }
        }
        Ok(())
    }

    /// Advances the string and depth state over `bytes` (inside an element) and returns the
    /// length up to and including the byte that closes the element, if it is there.
    fn scan(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth = self.depth.saturating_add(1),
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

fn unexpected(byte: u8, place: &str) -> LlmError {
    LlmError::Malformed(format!("unexpected byte {:?} {place}", char::from(byte)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &[u8]) -> (Vec<Vec<u8>>, bool) {
        let mut s = ArraySplitter::new(1 << 20);
        let mut out = Vec::new();
        for b in input.chunks(1) {
            s.feed(b, &mut out).unwrap();
        }
        (out, s.closed())
    }

    /// `ArraySplitter::feed` on a fresh splitter: the elements, and the outcome.
    fn feed_once(limit: usize, input: &[u8]) -> (Vec<Vec<u8>>, Result<(), LlmError>) {
        let mut out = Vec::new();
        let result = ArraySplitter::new(limit).feed(input, &mut out);
        (out, result)
    }

    #[test]
    fn array_splitter_respects_strings_and_escapes() {
        let input = br#" [{"a": "}]\"{", "b": [1, {"c": 2}]}
,
{"d": "\\"} ] trailing"#;
        let (elements, closed) = split(input);
        assert!(closed);
        assert_eq!(
            elements,
            vec![
                br#"{"a": "}]\"{", "b": [1, {"c": 2}]}"#.to_vec(),
                br#"{"d": "\\"}"#.to_vec()
            ]
        );
        let (elements, closed) = split(br#"[{"a": 1}, {"b": "#);
        assert_eq!(elements.len(), 1);
        assert!(!closed);
        assert!(matches!(
            feed_once(100, b"[1]").1,
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            feed_once(100, b"x").1,
            Err(LlmError::Malformed(_))
        ));
        assert_eq!(
            feed_once(8, br#"[{"a": "123456"}]"#).1,
            Err(LlmError::ResponseTooLarge { limit: 8 })
        );
        // The elements before an error in the same chunk are kept, for the caller to
        // handle first.
        let (elements, result) = feed_once(100, br#"[{"a": 1}, 0]"#);
        assert_eq!(elements, vec![br#"{"a": 1}"#.to_vec()]);
        assert!(matches!(result, Err(LlmError::Malformed(_))));
    }
}
