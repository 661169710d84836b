//! An incremental Server-Sent Events decoder (the `text/event-stream` format of the WHATWG
//! HTML standard, §9.2 "Server-sent events"), for streaming LLM responses.
//!
//! HTTP hands us the body in chunks cut anywhere: inside a line, inside a multi-byte UTF-8
//! character, between the `\r` and `\n` of a CRLF. [`SseDecoder::feed`] takes such chunks and
//! returns the events completed so far, with the same result however the input is cut. Lines
//! are kept as bytes until their end, so UTF-8 is decoded whole (invalid sequences become
//! U+FFFD, as the standard says). Lines end with LF, CRLF or CR; `data:` lines of one event are
//! joined with `\n`; comment lines (`: ping`) are skipped; one space after the colon is
//! dropped; unknown fields are ignored (which also makes stray HTTP headers or recorder
//! artefacts harmless). The line length and the data of one event are capped, so a server
//! that never sends a newline gets a typed error instead of our memory.

use crate::llm::completion::DEFAULT_MAX_LINE_LEN;
use crate::llm::error::{Failure, LlmError};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `"message"` when the event had none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id seen in the stream so far (the `id:` field persists across events).
    pub id: Option<String>,
}

/// Decodes a byte stream into [`SseEvent`]s; see the module documentation.
#[derive(Debug)]
pub struct SseDecoder {
    /// The current, unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
    /// No line finished yet (a byte-order mark may start the stream).
    first_line: bool,
    /// The data buffer: each `data:` value followed by `\n`.
    data: String,
    event: String,
    last_id: Option<String>,
    retry: Option<u64>,
    max_line_len: usize,
    /// Set after an error; the decoder then returns it again.
    failed: Failure,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default limit ([`DEFAULT_MAX_LINE_LEN`]).
    pub fn new() -> Self {
        Self::with_max_line_len(DEFAULT_MAX_LINE_LEN)
    }

    /// A decoder that fails with [`LlmError::LineTooLong`] on a line longer than
    /// `max_line_len` bytes and with [`LlmError::EventTooLarge`] on an event whose data is.
    pub fn with_max_line_len(max_line_len: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            first_line: true,
            data: String::new(),
            event: String::new(),
            last_id: None,
            retry: None,
            max_line_len,
            failed: Failure::default(),
        }
    }

    /// The reconnection time (`retry:` field, in milliseconds) the server asked for, if any.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Decodes the next chunk of the stream and returns the events it completes. After an
    /// error the decoder is unusable and returns the same error again.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, LlmError> {
        let mut out = Vec::new();
        self.feed_into(bytes, &mut out)?;
        Ok(out)
    }

    /// [`SseDecoder::feed`], adding the events to `out`; on an error, the events the chunk
    /// completed before it are in `out` too, so a caller handles them first and the
    /// outcome does not depend on where the body was cut.
    pub fn feed_into(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        self.failed.check()?;
        let result = self.feed_inner(bytes, out);
        self.failed.keep(result)
    }

    /// Ends the stream: a last line without a line ending is processed, and a last event
    /// without its closing blank line is dispatched (servers and recordings do end that way).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, LlmError> {
        self.failed.check()?;
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let result = self.end_line(&mut out);
            self.failed.keep(result)?;
        }
        self.dispatch(&mut out);
        self.after_cr = false;
        Ok(out.pop())
    }

    fn feed_inner(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.push_line_bytes(rest)?;
                break;
            };
            let (head, tail) = rest.split_at(pos);
            self.push_line_bytes(head)?;
            let (ending, after) = tail.split_at(1);
            rest = after;
            self.end_line(out)?;
            if ending == b"\r" {
                if rest.is_empty() {
                    self.after_cr = true;
                } else if let Some(after_lf) = rest.strip_prefix(b"\n") {
                    rest = after_lf;
                }
            }
        }
        Ok(())
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), LlmError> {
        push_bounded(&mut self.line, bytes, self.max_line_len)
    }

    /// Processes the finished line in `self.line`.
    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let raw = std::mem::take(&mut self.line);
        let mut bytes: &[u8] = &raw;
        if self.first_line {
            self.first_line = false;
            if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
                bytes = rest;
            }
        }
        if bytes.is_empty() {
            self.dispatch(out);
        } else if bytes.first() != Some(&b':') {
            let (field, value) = match bytes.iter().position(|&b| b == b':') {
                Some(colon) => {
                    let (field, rest) = bytes.split_at(colon);
                    let value = rest.get(1..).unwrap_or_default();
                    (field, value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (bytes, &b""[..]),
            };
            self.field(field, value)?;
        }
        // Keep the allocation for the next line unless a huge line inflated it.
        self.line = raw;
        self.line.clear();
        if self.line.capacity() > 64 * 1024 {
            self.line = Vec::new();
        }
        Ok(())
    }

    fn field(&mut self, field: &[u8], value: &[u8]) -> Result<(), LlmError> {
        match field {
            b"data" => {
                let value = String::from_utf8_lossy(value);
                if self.data.len() + value.len() + 1 > self.max_line_len {
                    return Err(LlmError::EventTooLarge {
                        limit: self.max_line_len,
                    });
                }
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            // An id containing NUL is ignored (the standard's rule).
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // Only ASCII digits; anything else (or an overflow) is ignored.
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A blank line: dispatch the buffered event, if it has data.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
        });
    }
}

/// Appends `bytes` to the line being read, unless that makes it longer than `max`: a
/// body's line is bounded however a server splits it.
pub(crate) fn push_bounded(line: &mut Vec<u8>, bytes: &[u8], max: usize) -> Result<(), LlmError> {
    if line.len().saturating_add(bytes.len()) > max {
        return Err(LlmError::LineTooLong { limit: max });
    }
    line.extend_from_slice(bytes);
    Ok(())
}
