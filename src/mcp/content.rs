//! What an MCP server returns, as the text the model reads: text as it is, images and audio
//! named (never sent on: a tool result is text), embedded resources' text, links named, the
//! structured content as JSON when there is nothing else; cut to a bound, so one result can
//! neither flood the request nor Emacs.

use serde_json::Value;

/// The most characters of one result the model reads.
pub const MAX_RESULT_CHARS: usize = 100_000;

/// The text of a list of content blocks (JSON as the protocol writes them).
pub fn blocks_text(blocks: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for b in blocks {
        let kind = b["type"].as_str().unwrap_or("");
        let part = match kind {
            "text" => b["text"].as_str().unwrap_or("").to_string(),
            "image" | "audio" => format!(
                "[{kind}: {}, {} bytes of base64, not shown]",
                b["mimeType"].as_str().unwrap_or("unknown type"),
                b["data"].as_str().map(str::len).unwrap_or(0)
            ),
            "resource" => resource_text(&b["resource"]),
            "resource_link" => format!(
                "[resource {}{}]",
                b["uri"].as_str().unwrap_or("?"),
                b["name"]
                    .as_str()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            other => format!("[content of type {other:?}, not shown]"),
        };
        parts.push(part);
    }
    parts.join("\n")
}

/// The text of one resource's contents: its text, or a note that it is binary.
pub fn resource_text(contents: &Value) -> String {
    match contents["text"].as_str() {
        Some(t) => t.to_string(),
        None => format!(
            "[binary resource {} ({}), not shown]",
            contents["uri"].as_str().unwrap_or("?"),
            contents["mimeType"].as_str().unwrap_or("unknown type")
        ),
    }
}

/// A tool's result: `(ok, text)`, `ok` false when the server said it is an error.
pub fn tool_result(result: &Value) -> (bool, String) {
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut text = blocks_text(blocks);
    if text.trim().is_empty() {
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            text = structured.to_string();
        }
    }
    let error = result["isError"].as_bool().unwrap_or(false);
    (!error, bounded(text))
}

/// `text` cut to [`MAX_RESULT_CHARS`], saying how much was cut.
pub fn bounded(text: String) -> String {
    match text.char_indices().nth(MAX_RESULT_CHARS) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n[… {rest} more characters cut]", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_read_as_text() {
        let (ok, text) = tool_result(&json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ]
        }));
        assert!(ok);
        assert_eq!(
            text,
            "hello\n[image: image/png, 4 bytes of base64, not shown]\ninside\n[resource file:///b (b)]"
        );
        let (ok, text) =
            tool_result(&json!({"content": [], "structuredContent": {"n": 1}, "isError": true}));
        assert!(!ok);
        assert_eq!(text, "{\"n\":1}");
    }

    #[test]
    fn long_results_are_cut() {
        let text = bounded("é".repeat(MAX_RESULT_CHARS + 5));
        assert!(text.ends_with("[… 5 more characters cut]"));
        assert_eq!(bounded("short".into()), "short");
    }
}
