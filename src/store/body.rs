//! A node's body: in memory, or where the log holds it.
//!
//! Bodies are most of a note's text, and a query, the outline or `org-agent-find` never
//! reads them. So a body loaded from the log stays there: the node keeps the byte range
//! ([`Body::Logged`], on the log's read handle) and reads it when asked. A body parsed from a
//! file stays in memory ([`Body::Text`]) until the store is next opened, or loaded again
//! from its log after a large directory ingest ([`Store::reload_from_log`](super::Store::reload_from_log)).
//!
//! A body stays in memory when reading it back would cost more than it saves, or when the
//! store must see it without asking: a blank one (nothing to read), and one holding `[[`
//! (the link index reads it on every load).
//!
//! The hashes of the version's children follow the body in the log (after the level), and
//! nothing but the version's own hash reads them: where the body stays in the log, they do
//! too ([`read_with_children`](LoggedBody::read_with_children), one read for both).

use super::error::{Result, StoreError};
use super::hash::Hash;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bits of [`LoggedBody`]'s packed position that hold the length: a body of 16 MiB or more
/// stays in memory.
const LEN_BITS: u32 = 24;
const MAX_LOGGED_LEN: usize = (1 << LEN_BITS) - 1;
/// The offset has the other 40 bits: a log up to 1 TiB.
const MAX_LOGGED_OFFSET: u64 = (1 << (64 - LEN_BITS)) - 1;

/// A read handle on one log file, shared by every body loaded from it. It stays on the file
/// it was opened on, even after compaction renames a new log over it.
pub struct LogReader {
    file: File,
    path: PathBuf,
}

impl LogReader {
    pub fn open(path: &Path) -> std::io::Result<LogReader> {
        Ok(LogReader {
            file: File::open(path)?,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn unreadable(&self, offset: u64, reason: String) -> StoreError {
        StoreError::BodyUnreadable {
            path: self.path.clone(),
            offset,
            reason,
        }
    }

    fn read(&self, offset: u64, len: usize) -> Result<String> {
        let mut bytes = vec![0u8; len];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(|e| self.unreadable(offset, e.to_string()))?;
        self.text(offset, bytes)
    }

    fn text(&self, offset: u64, bytes: Vec<u8>) -> Result<String> {
        String::from_utf8(bytes).map_err(|_| self.unreadable(offset, "it is not UTF-8 text".into()))
    }

    /// Up to `len` bytes at `offset`: fewer only at the end of the file.
    fn read_up_to(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            match self
                .file
                .read_at(&mut bytes[filled..], offset + filled as u64)
            {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.unreadable(offset, e.to_string())),
            }
        }
        bytes.truncate(filled);
        Ok(bytes)
    }
}

impl fmt::Debug for LogReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LogReader({})", self.path.display())
    }
}

/// Where in a log a body is: the reader, the packed byte range, and how many of the
/// version's child hashes follow it there.
#[derive(Clone)]
pub struct LoggedBody {
    log: Arc<LogReader>,
    /// Offset in the high 40 bits, length in the low 24.
    at: u64,
    children: u32,
}

impl LoggedBody {
    fn offset(&self) -> u64 {
        self.at >> LEN_BITS
    }

    fn len(&self) -> usize {
        (self.at & MAX_LOGGED_LEN as u64) as usize
    }

    /// How many of the version's child hashes follow the body in the log.
    pub fn children(&self) -> u32 {
        self.children
    }

    /// Say that `count` of the version's child hashes follow the body in the log, where
    /// decoding left them.
    pub(super) fn set_children(&mut self, count: u32) {
        self.children = count;
    }

    /// Whether `other` is this body, at the same place of the same log, with as many child
    /// hashes after it.
    pub fn same_place(&self, other: &LoggedBody) -> bool {
        Arc::ptr_eq(&self.log, &other.log) && self.at == other.at && self.children == other.children
    }

    /// The body and the child hashes that follow it, in one read. Not checked against the
    /// version's hash: [`NodeContent`](super::NodeContent) does that.
    pub(super) fn read_with_children(&self) -> Result<(String, Vec<Hash>)> {
        let count = self.children;
        // After the body: the level and the count, each a varint of at most 5 bytes, then the
        // hashes, 32 bytes each. Read the most that can be: bytes past them (the batch's
        // checksum, the next batch) are not parsed, and a short read at the end of the file
        // is only an error if the hashes are not all there.
        const MAX_VARINT: usize = 5;
        let hashes = count as usize * std::mem::size_of::<Hash>();
        let mut bytes = self
            .log
            .read_up_to(self.offset(), self.len() + 2 * MAX_VARINT + hashes)?;
        if bytes.len() < self.len() {
            return Err(self
                .log
                .unreadable(self.offset(), "the log ends before it".into()));
        }
        let tail = bytes.split_off(self.len());
        let children = children_after(&tail, count).ok_or_else(|| {
            self.log.unreadable(
                self.offset(),
                format!("the {count} child hashes after it do not read back"),
            )
        })?;
        Ok((self.log.text(self.offset(), bytes)?, children))
    }

    /// The body's bytes and the child hashes after it, from `payload`, the batch they were
    /// decoded from, which the log holds at byte `at`: no read of the file. `None` when they
    /// are not there.
    ///
    /// The bytes are not checked as UTF-8 here: they are only hashed, and bytes that hash to
    /// the version's hash are the text it was written from (reading the body checks it again).
    pub(super) fn within<'p>(&self, payload: &'p [u8], at: u64) -> Option<(&'p [u8], Vec<Hash>)> {
        let start = usize::try_from(self.offset().checked_sub(at)?).ok()?;
        let end = start.checked_add(self.len())?;
        let body = payload.get(start..end)?;
        let children = children_after(payload.get(end..)?, self.children)?;
        Some((body, children))
    }
}

/// The `count` child hashes in `tail`, the bytes after a body: the level, then the hashes.
fn children_after(tail: &[u8], count: u32) -> Option<Vec<Hash>> {
    postcard::take_from_bytes::<u32>(tail)
        .and_then(|(_level, rest)| postcard::take_from_bytes::<Vec<Hash>>(rest))
        .ok()
        .map(|(children, _)| children)
        .filter(|children| children.len() == count as usize)
}

/// A node's body: the text between its planning and property drawer and its first child.
#[derive(Clone)]
pub enum Body {
    Text(Box<str>),
    Logged(LoggedBody),
}

impl Default for Body {
    fn default() -> Body {
        Body::Text(Box::default())
    }
}

impl From<&str> for Body {
    fn from(text: &str) -> Body {
        Body::Text(text.into())
    }
}

impl Body {
    /// Where in the log the body is, when it is there.
    pub fn logged(&self) -> Option<&LoggedBody> {
        match self {
            Body::Text(_) => None,
            Body::Logged(l) => Some(l),
        }
    }

    /// Where in the log the body is, to say how many child hashes follow it there.
    pub(super) fn logged_mut(&mut self) -> Option<&mut LoggedBody> {
        match self {
            Body::Text(_) => None,
            Body::Logged(l) => Some(l),
        }
    }

    /// The text, when it is in memory.
    pub fn resident(&self) -> Option<&str> {
        match self {
            Body::Text(t) => Some(t),
            Body::Logged(_) => None,
        }
    }

    /// Whether the body has nothing but blanks (known without reading it: such a body is
    /// never left in the log).
    pub fn is_blank(&self) -> bool {
        self.resident().is_some_and(|t| t.trim().is_empty())
    }

    /// The text, read from the log when it is there. Not checked against the version's hash:
    /// [`NodeContent::body`](super::NodeContent::body) does that.
    pub fn read(&self) -> Result<Cow<'_, str>> {
        match self {
            Body::Text(t) => Ok(Cow::Borrowed(t)),
            Body::Logged(l) => l.log.read(l.offset(), l.len()).map(Cow::Owned),
        }
    }

    /// Where the body is in the log, for errors: the log and the byte offset.
    pub fn location(&self) -> Option<(&Path, u64)> {
        match self {
            Body::Text(_) => None,
            Body::Logged(l) => Some((l.log.path(), l.offset())),
        }
    }

    /// Whether a body read from the log may stay there (see the module's comment).
    fn may_stay_in_log(text: &str) -> bool {
        !text.trim().is_empty()
            && text.len() <= MAX_LOGGED_LEN
            && find_link_open(text.as_bytes()).is_none()
    }
}

/// Where `[[`, which opens every bracket link, first occurs in `bytes`. The searcher is built
/// once, where `memmem::find` builds one per call: every title and body is searched as the
/// store opens (whether a body stays in the log, then the file's links).
pub(super) fn find_link_open(bytes: &[u8]) -> Option<usize> {
    static OPEN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"[["));
    OPEN.find(bytes)
}

impl PartialEq for Body {
    fn eq(&self, other: &Body) -> bool {
        match (self, other) {
            (Body::Text(a), Body::Text(b)) => a == b,
            (Body::Logged(a), Body::Logged(b)) if a.same_place(b) => true,
            // Unreadable is unequal: nothing can show the two are the same text.
            _ => matches!((self.read(), other.read()), (Ok(a), Ok(b)) if a == b),
        }
    }
}

impl Eq for Body {}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Text(t) => t.fmt(f),
            Body::Logged(l) => write!(
                f,
                "<{} bytes at byte {} of {}>",
                l.len(),
                l.offset(),
                l.log.path.display()
            ),
        }
    }
}

/// The batch this thread is decoding: where its payload is in memory and in the log.
struct Span {
    start: usize,
    len: usize,
    offset: u64,
    log: Arc<LogReader>,
}

thread_local! {
    static DECODING: RefCell<Option<Span>> = const { RefCell::new(None) };
}

/// While alive, bodies this thread decodes from `payload` (read from `log` at byte `offset`)
/// stay in the log. Without one, every decoded body is read into memory.
pub struct DecodingFromLog(());

impl DecodingFromLog {
    pub fn enter(log: &Arc<LogReader>, payload: &[u8], offset: u64) -> DecodingFromLog {
        DECODING.with(|d| {
            *d.borrow_mut() = Some(Span {
                start: payload.as_ptr() as usize,
                len: payload.len(),
                offset,
                log: log.clone(),
            })
        });
        DecodingFromLog(())
    }
}

impl Drop for DecodingFromLog {
    fn drop(&mut self) {
        DECODING.with(|d| *d.borrow_mut() = None);
    }
}

/// The body decoded from `text`, a slice of the payload being decoded when there is one.
fn decoded(text: &str) -> Body {
    let logged = DECODING.with(|d| {
        let span = d.borrow();
        let span = span.as_ref()?;
        let at = (text.as_ptr() as usize).checked_sub(span.start)?;
        if at + text.len() > span.len || !Body::may_stay_in_log(text) {
            return None;
        }
        let offset = span.offset.checked_add(at as u64)?;
        (offset <= MAX_LOGGED_OFFSET).then(|| LoggedBody {
            log: span.log.clone(),
            at: offset << LEN_BITS | text.len() as u64,
            children: 0,
        })
    });
    match logged {
        Some(l) => Body::Logged(l),
        None => Body::from(text),
    }
}

impl<'de> serde::Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Body, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Body;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Body, E> {
                Ok(decoded(s))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Body, E> {
                Ok(Body::from(s))
            }
        }
        d.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(text: &[u8]) -> (tempfile::TempDir, Arc<LogReader>) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("log");
        std::fs::write(&path, text).expect("write");
        let log = Arc::new(LogReader::open(&path).expect("open"));
        (dir, log)
    }

    #[test]
    fn a_body_decoded_from_a_log_batch_stays_there_unless_it_must_be_seen() {
        let bodies = ["Some text.\n", "  \n", "See [[id:x]].\n", ""];
        let payload = postcard::to_stdvec(&bodies.to_vec()).expect("encode");
        let mut file = b"head".to_vec();
        file.extend_from_slice(&payload);
        let (_dir, log) = log_with(&file);
        let read: Vec<Body> = {
            let _span = DecodingFromLog::enter(&log, &payload, 4);
            postcard::from_bytes(&payload).expect("decode")
        };
        assert!(read[0].resident().is_none(), "{:?}", read[0]);
        assert_eq!(read[0].read().expect("read"), "Some text.\n");
        // After the 4 bytes before the payload, its length and the string's.
        assert_eq!(read[0].location().map(|(_, at)| at), Some(6));
        for (body, text) in read.iter().zip(bodies).skip(1) {
            assert_eq!(body.resident(), Some(text));
        }
        assert!(read[1].is_blank() && !read[0].is_blank());
        let texts: Vec<String> = read
            .iter()
            .map(|b| b.read().expect("read").into_owned())
            .collect();
        assert_eq!(texts, bodies);
        assert_eq!(read[0], Body::from("Some text.\n"));
        assert_ne!(read[0], Body::from("Other text.\n"));
        // Outside a batch, everything is read into memory.
        let again: Vec<Body> = postcard::from_bytes(&payload).expect("decode");
        assert!(again.iter().all(|b| b.resident().is_some()));
    }

    #[test]
    fn a_body_the_log_no_longer_holds_is_an_error_naming_the_log() {
        let payload = postcard::to_stdvec(&"Some text.\n").expect("encode");
        let (_dir, log) = log_with(&payload);
        let body: Body = {
            let _span = DecodingFromLog::enter(&log, &payload, 0);
            postcard::from_bytes(&payload).expect("decode")
        };
        std::fs::write(log.path(), b"x").expect("truncate");
        let e = body.read().expect_err("the log was cut short").to_string();
        assert!(e.contains("at byte 1 of") && e.contains("log"), "{e}");
        assert_ne!(body, Body::from("Some text.\n"));
    }
}
