//! What a wire format is, and the one driver that reads any format's response.
//!
//! A wire format ([`WireFormat`]) is what is genuinely its own: its name, chat URL, key
//! header, request body, how its body is framed, and a [`ResponseDecoder`] that turns one
//! payload (an SSE event, an NDJSON line, an array element, a whole JSON body) into
//! [`Delta`]s, knows the format's end marker, and builds the [`Completion`].
//!
//! [`ResponseStream`] is the skeleton they all share: it takes the body in whatever chunks
//! HTTP delivers, cuts it into payloads ([`Body`]), hands them to the decoder, keeps the first
//! error (a stream is over after one), and at the end tells a complete answer from a cut-off
//! one: an empty body or a whole JSON body whose text ends early is [`LlmError::Truncated`]
//! with nothing, a stream without the format's end marker is [`LlmError::Truncated`] with
//! what arrived.

use crate::llm::body::{Body, BodyEnd, Frame, Framing};
use crate::llm::completion::{Completion, Delta, StreamOptions};
use crate::llm::error::{Failure, LlmError};
use crate::llm::request::ChatRequest;
use serde_json::Value;

/// A wire format; see the module documentation. Registered in `wire.rs`.
pub trait WireFormat {
    /// The name users write in their configuration (`"openai"`).
    const NAME: &'static str;
    /// Headers the format always sends (`anthropic-version`); a backend's own headers win.
    const FIXED_HEADERS: &'static [(&'static str, &'static str)] = &[];
    /// The state of reading one response.
    type Decoder: ResponseDecoder + 'static;

    /// The chat endpoint under the API root `base` (without a trailing `/`).
    fn chat_url(base: &str, model: &str, stream: bool) -> String;

    /// The header that carries the API key, and its value: a bearer token unless the format
    /// has its own header.
    fn auth_header(key: &str) -> (&'static str, String) {
        ("authorization", format!("Bearer {key}"))
    }

    /// The JSON request body.
    fn request_body(request: &ChatRequest, model: &str) -> Value;

    /// Parses a complete non-streaming response body: by default one JSON document
    /// ([`parse_whole`]).
    fn parse_response(body: &[u8], opts: &StreamOptions) -> Result<Completion, LlmError> {
        parse_whole::<Self::Decoder>(body, opts).map(|(_, completion)| completion)
    }
}

/// One payload of a body, as a decoder gets it.
#[derive(Debug, Clone, Copy)]
pub struct Payload<'a> {
    /// The SSE `event:` name (`"message"` when the event had none); `None` outside SSE.
    pub event: Option<&'a str>,
    pub data: &'a [u8],
}

/// Reading one response in one wire format: what [`ResponseStream`] cannot do for it.
pub trait ResponseDecoder: Send + Sized {
    /// How the format frames its body.
    const FRAMING: Framing;

    /// A decoder with `opts`' think-tag mode and limits.
    fn new(opts: StreamOptions) -> Self;

    /// Decodes one payload, adding the deltas it gives to `out`.
    fn payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError>;

    /// The body's last payload, which came without its terminator. Decoded like any other by
    /// default; a format that knows its end only by an end marker may skip one whose JSON the
    /// connection cut short, so the body counts as truncated rather than garbled.
    fn last_payload(&mut self, payload: Payload<'_>, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        self.payload(payload, out)
    }

    /// The framing's own end marker came (a JSON array's `]`).
    fn framing_closed(&mut self, _out: &mut Vec<Delta>) {}

    /// A whole JSON body (a non-streaming response, or one a server sent instead of a
    /// stream): by default one payload like the others.
    fn whole_body(&mut self, body: &[u8], out: &mut Vec<Delta>) -> Result<(), LlmError> {
        self.payload(
            Payload {
                event: None,
                data: body,
            },
            out,
        )
    }

    /// Whether the format's end marker came.
    fn is_done(&self) -> bool;

    /// The body ended before the end marker: releases what is held back (text that might
    /// start a `<think>` tag, open content blocks) into the partial completion.
    fn end_early(&mut self) -> Result<(), LlmError>;

    /// Everything received so far; tool arguments that do not parse are kept as a JSON
    /// string.
    fn partial(&self) -> Completion;

    /// The finished completion (and the last deltas); tool arguments that do not parse are
    /// an error.
    fn complete(&mut self, out: &mut Vec<Delta>) -> Result<Completion, LlmError>;
}

/// A response body parser: takes the body as HTTP delivers it, chunk by chunk.
pub trait ResponseParser: Send {
    /// Takes the next chunk and returns the deltas it completes. After an error the parser
    /// is over and returns the same error again.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, LlmError>;
    /// Everything received so far (tool arguments that do not parse yet kept as a JSON
    /// string), for [`LlmError::Truncated`].
    fn partial(&self) -> Completion;
    /// Ends the body: the last deltas and the completion, or [`LlmError::Truncated`] when the
    /// body ended before the format's end marker.
    fn finish(self: Box<Self>) -> Result<(Vec<Delta>, Completion), LlmError>;
}

/// A response body in the format `D` decodes, fed as raw bytes in whatever chunks HTTP
/// delivers; see the module documentation. A whole JSON body yields its deltas at
/// [`ResponseStream::finish`].
#[derive(Debug)]
pub struct ResponseStream<D> {
    body: Body,
    decoder: D,
    failed: Failure,
}

impl<D: ResponseDecoder> Default for ResponseStream<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: ResponseDecoder> ResponseStream<D> {
    /// A parser with the default limits.
    pub fn new() -> Self {
        Self::with_options(StreamOptions::default())
    }

    /// A parser with `opts`' think-tag mode and limits.
    pub fn with_options(opts: StreamOptions) -> Self {
        ResponseStream {
            body: Body::new(D::FRAMING, opts.max_line_len, opts.max_response_bytes),
            decoder: D::new(opts),
            failed: Failure::default(),
        }
    }

    /// Takes the next chunk of the body and returns the deltas it completes. After an error
    /// the stream is over and returns the same error again.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, LlmError> {
        self.failed.check()?;
        let mut out = Vec::new();
        let result = self.feed_inner(bytes, &mut out);
        self.failed.keep(result)?;
        Ok(out)
    }

    fn feed_inner(&mut self, bytes: &[u8], out: &mut Vec<Delta>) -> Result<(), LlmError> {
        let mut frames = Vec::new();
        // Payloads before a framing error come first, wherever the chunk was cut.
        let framed = self.body.feed_into(bytes, &mut frames);
        for frame in frames {
            match frame {
                Frame::Event(event) => self.decoder.payload(event_payload(&event), out)?,
                Frame::Json(data) => self.decoder.payload(json_payload(&data), out)?,
                Frame::Closed => self.decoder.framing_closed(out),
            }
        }
        framed
    }

    /// Whether the format's end marker came.
    pub fn is_done(&self) -> bool {
        self.decoder.is_done()
    }

    /// Everything received so far (text held back for a possible `<think>` tag is not
    /// included; a whole JSON body gives nothing until it is finished).
    pub fn partial(&self) -> Completion {
        self.decoder.partial()
    }

    /// Ends the body: the last deltas (a stream may end without its last terminator, and a
    /// whole JSON body is decoded only now) and the completion, or [`LlmError::Truncated`].
    pub fn finish(mut self) -> Result<(Vec<Delta>, Completion), LlmError> {
        if let Some(err) = self.failed.take() {
            return Err(err);
        }
        let mut out = Vec::new();
        let completion = match self.body.finish()? {
            BodyEnd::Empty => return Err(truncated_before_anything()),
            BodyEnd::Whole(body) => decode_whole(&mut self.decoder, &body, &mut out)?,
            BodyEnd::Stream { last, closed } => {
                match last {
                    Some(Frame::Event(event)) => {
                        self.decoder.last_payload(event_payload(&event), &mut out)?
                    }
                    Some(Frame::Json(data)) => {
                        self.decoder.last_payload(json_payload(&data), &mut out)?
                    }
                    Some(Frame::Closed) | None => {}
                }
                // A framing with an end marker of its own is complete when it is closed;
                // otherwise only the format's end marker says so.
                let complete = closed.unwrap_or_else(|| self.decoder.is_done());
                conclude(self.decoder, complete, &mut out)?
            }
        };
        Ok((out, completion))
    }
}

impl<D: ResponseDecoder> ResponseParser for ResponseStream<D> {
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Delta>, LlmError> {
        ResponseStream::feed(self, bytes)
    }
    fn partial(&self) -> Completion {
        ResponseStream::partial(self)
    }
    fn finish(self: Box<Self>) -> Result<(Vec<Delta>, Completion), LlmError> {
        ResponseStream::finish(*self)
    }
}

fn event_payload(event: &crate::llm::sse::SseEvent) -> Payload<'_> {
    Payload {
        event: Some(&event.event),
        data: event.data.as_bytes(),
    }
}

fn json_payload(data: &[u8]) -> Payload<'_> {
    Payload { event: None, data }
}

/// The truncation of a body that brought nothing usable.
fn truncated_before_anything() -> LlmError {
    LlmError::Truncated {
        partial: Box::default(),
    }
}

/// Decodes a whole JSON body and completes: a body whose JSON ends early (cut off, not
/// garbage) is [`LlmError::Truncated`] with nothing.
fn decode_whole<D: ResponseDecoder>(
    decoder: &mut D,
    body: &[u8],
    out: &mut Vec<Delta>,
) -> Result<Completion, LlmError> {
    if serde_json::from_slice::<Value>(body).is_err_and(|e| e.is_eof()) {
        return Err(truncated_before_anything());
    }
    decoder.whole_body(body, out)?;
    decoder.complete(out)
}

/// The completion of a stream that ended, or [`LlmError::Truncated`] with what arrived when
/// it was not `complete`.
pub(crate) fn conclude<D: ResponseDecoder>(
    mut decoder: D,
    complete: bool,
    out: &mut Vec<Delta>,
) -> Result<Completion, LlmError> {
    if !complete {
        decoder.end_early()?;
        return Err(LlmError::Truncated {
            partial: Box::new(decoder.partial()),
        });
    }
    decoder.complete(out)
}

/// Parses a complete body that is one JSON document, also returning the deltas a stream of
/// it would have given. Larger than `max_response_bytes` is [`LlmError::ResponseTooLarge`].
pub fn parse_whole<D: ResponseDecoder>(
    body: &[u8],
    opts: &StreamOptions,
) -> Result<(Vec<Delta>, Completion), LlmError> {
    check_size(body, opts)?;
    let mut decoder = D::new(*opts);
    let mut out = Vec::new();
    let completion = decode_whole(&mut decoder, body, &mut out)?;
    Ok((out, completion))
}

/// Parses a complete body in any framing the format accepts, as if it had streamed in.
pub fn parse_body<D: ResponseDecoder>(
    body: &[u8],
    opts: &StreamOptions,
) -> Result<Completion, LlmError> {
    check_size(body, opts)?;
    let mut stream = ResponseStream::<D>::with_options(*opts);
    stream.feed(body)?;
    stream.finish().map(|(_, completion)| completion)
}

/// [`LlmError::ResponseTooLarge`] for a body over the limit.
pub(crate) fn check_size(body: &[u8], opts: &StreamOptions) -> Result<(), LlmError> {
    if body.len() > opts.max_response_bytes {
        return Err(LlmError::ResponseTooLarge {
            limit: opts.max_response_bytes,
        });
    }
    Ok(())
}
