//! Recorded responses (../shared/llm-fixtures) as the parsers see them.

/// A recording's response body: gptel-test recordings may start with the HTTP status line
/// and headers (`HTTP/2 200`, or `### HTTP/2 200`), which the HTTP client strips before the
/// body reaches a parser; they end at the first blank line.
pub fn body(raw: &[u8]) -> &[u8] {
    if !raw.starts_with(b"HTTP/") && !raw.starts_with(b"### HTTP/") {
        return raw;
    }
    for sep in [&b"\r\n\r\n"[..], &b"\n\n"[..]] {
        if let Some(pos) = raw.windows(sep.len()).position(|w| w == sep) {
            return &raw[pos + sep.len()..];
        }
    }
    raw
}
