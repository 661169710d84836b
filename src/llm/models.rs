//! Which models a backend offers: one `GET` per page of the provider's model list, for
//! completion when the user picks a model.
//!
//! * OpenAI-compatible: `GET {base}/models`, the ids in `data[].id`;
//! * Anthropic: `GET {base}/models`, `data[].id`, paginated (`has_more`, `last_id` →
//!   `after_id`);
//! * Gemini: `GET {base}/models`, `models[].name`, paginated (`nextPageToken` → `pageToken`);
//! * Ollama: `GET {base}/api/tags` (the base is the server root), `models[].name`.
//!
//! Gemini lists embedding and image models too; only those that support `generateContent`
//! (what the chat client calls) are kept, without their `models/` prefix. At most
//! [`MAX_PAGES`] pages are read (asking for the largest page each provider allows), each body
//! at most [`MAX_BODY`] bytes.
//!
//! The request is the chat client's: the backend's key in the format's header
//! ([`Wire::auth_header`]), the format's fixed headers and the backend's own, its connect,
//! first-byte, idle and total timeouts (the total covers every page), and the
//! [`CancelToken`]. Errors are [`LlmError`]s as for chat: an HTTP error status is
//! [`LlmError::Http`] with the provider's own message and `retry-after`; a body that is not
//! JSON is [`LlmError::InvalidJson`], one without the list is [`LlmError::Malformed`]. The key
//! never appears in an error, and redirects are followed only within the same origin, so the
//! key header is never sent to another host.

use crate::llm::error::{invalid_json, provider_error, LlmError};
use crate::llm::http::{redact_error, Backend, CancelToken, Waits};
use crate::llm::wire::Wire;
use reqwest::header::ACCEPT;
use serde_json::Value;

/// The largest model-list body read, in bytes (per page).
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// The most pages of a paginated list that are read; the models of the pages read are kept.
pub const MAX_PAGES: usize = 10;

/// The page size asked of paginated lists (the most Anthropic and Gemini allow).
const PAGE_SIZE: &str = "1000";

/// The longest description kept, in bytes.
const MAX_DESCRIPTION: usize = 200;

/// One model a backend offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// The name to configure as the backend's model (`gpt-4o`, `claude-sonnet-4-20250514`,
    /// `gemini-2.5-flash`, `llama3.2:latest`).
    pub id: String,
    /// One line about it, when the provider says something useful: the display name
    /// (Anthropic, Gemini, OpenRouter), the context window, or an Ollama model's parameter
    /// count, family, quantisation and size.
    pub description: Option<String>,
}

/// The models `backend` offers, sorted by id, without duplicates.
///
/// Makes one `GET` per page (see the module documentation); fails with the first error.
pub async fn list_models(
    backend: &Backend,
    cancel: &CancelToken,
) -> Result<Vec<ModelInfo>, LlmError> {
    if cancel.is_cancelled() {
        return Err(LlmError::Cancelled);
    }
    let http = backend.http_client()?;
    let wait = Waits::start(&backend.endpoint, cancel);
    let mut models = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let url = page_url(backend, cursor.as_deref())?;
        let request = http.get(url).header(ACCEPT, "application/json");
        let body = wait.fetch(request, MAX_BODY).await?;
        let page = parse_page(backend.wire, &body)
            .map_err(|e| redact_error(backend.endpoint.api_key.as_deref(), e))?;
        models.extend(page.models);
        match page.next {
            // A server that hands back the cursor it was given would loop.
            Some(next) if !next.is_empty() && cursor.as_deref() != Some(next.as_str()) => {
                cursor = Some(next)
            }
            _ => break,
        }
    }
    Ok(tidy(models))
}

// ---------------------------------------------------------------------------------------------
// HTTP.

/// The URL of the page after `cursor` (the first page without one).
fn page_url(b: &Backend, cursor: Option<&str>) -> Result<reqwest::Url, LlmError> {
    let base = b.endpoint.base_url.trim_end_matches('/');
    let path = match b.wire {
        Wire::Ollama => "/api/tags",
        Wire::OpenAi | Wire::Anthropic | Wire::Gemini => "/models",
    };
    let mut url = reqwest::Url::parse(&format!("{base}{path}"))
        .map_err(|e| LlmError::Config(format!("the base URL does not parse: {e}")))?;
    let (size, after) = match b.wire {
        Wire::Anthropic => ("limit", "after_id"),
        Wire::Gemini => ("pageSize", "pageToken"),
        Wire::OpenAi | Wire::Ollama => return Ok(url),
    };
    let mut query = url.query_pairs_mut();
    query.append_pair(size, PAGE_SIZE);
    if let Some(cursor) = cursor {
        query.append_pair(after, cursor);
    }
    drop(query);
    Ok(url)
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// One page of a model list.
#[derive(Debug, PartialEq)]
struct Page {
    models: Vec<ModelInfo>,
    /// The cursor of the next page, if there is one.
    next: Option<String>,
}

/// A page of `wire`'s model list. An `{"error": …}` body (under HTTP 200) is
/// [`LlmError::Provider`].
fn parse_page(wire: Wire, body: &[u8]) -> Result<Page, LlmError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        let start = body.get(..body.len().min(256)).unwrap_or_default();
        invalid_json(&e, &String::from_utf8_lossy(start))
    })?;
    if let Some(err) = provider_error(body) {
        return Err(err);
    }
    let text = |v: &Value, key: &str| -> Option<String> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    match wire {
        Wire::OpenAi => {
            let models = list(&value, "data")?
                .iter()
                .filter_map(|m| {
                    let id = model_id(m.get("id"))?;
                    // OpenRouter and some proxies name their models and give the window.
                    let name = text(m, "name").filter(|name| *name != id);
                    let window = m.get("context_length").and_then(Value::as_u64);
                    let description = join([name, window.map(context)]);
                    Some(ModelInfo { id, description })
                })
                .collect();
            Ok(Page { models, next: None })
        }
        Wire::Anthropic => {
            let data = list(&value, "data")?;
            let models = data
                .iter()
                .filter_map(|m| {
                    Some(ModelInfo {
                        id: model_id(m.get("id"))?,
                        description: text(m, "display_name").map(|s| one_line(&s)),
                    })
                })
                .collect();
            let more = value.get("has_more").and_then(Value::as_bool) == Some(true);
            let next = more
                .then(|| {
                    text(&value, "last_id")
                        .or_else(|| data.last().and_then(|m| model_id(m.get("id"))))
                })
                .flatten();
            Ok(Page { models, next })
        }
        Wire::Gemini => {
            // Google leaves empty lists out of its JSON: no `models` is no models.
            let models = match value.get("models") {
                None | Some(Value::Null) => Vec::new(),
                Some(_) => list(&value, "models")?
                    .iter()
                    .filter(|m| {
                        m.get("supportedGenerationMethods")
                            .and_then(Value::as_array)
                            .is_some_and(|methods| {
                                methods
                                    .iter()
                                    .any(|x| x.as_str() == Some("generateContent"))
                            })
                    })
                    .filter_map(|m| {
                        let name = m.get("name").and_then(Value::as_str)?;
                        let id = name.strip_prefix("models/").unwrap_or(name);
                        let id = model_id(Some(&Value::from(id)))?;
                        let window = m.get("inputTokenLimit").and_then(Value::as_u64);
                        let description = join([text(m, "displayName"), window.map(context)]);
                        Some(ModelInfo { id, description })
                    })
                    .collect(),
            };
            Ok(Page {
                models,
                next: text(&value, "nextPageToken"),
            })
        }
        Wire::Ollama => {
            let models = list(&value, "models")?
                .iter()
                .filter_map(|m| {
                    let id = model_id(m.get("name")).or_else(|| model_id(m.get("model")))?;
                    let details = m.get("details").unwrap_or(&Value::Null);
                    let kind = join_with(
                        " ",
                        [
                            text(details, "parameter_size"),
                            text(details, "family"),
                            text(details, "quantization_level"),
                        ],
                    );
                    let size = m.get("size").and_then(Value::as_u64).map(gigabytes);
                    Some(ModelInfo {
                        id,
                        description: join([kind, size]),
                    })
                })
                .collect();
            Ok(Page { models, next: None })
        }
    }
}

/// The array `value[key]`, or [`LlmError::Malformed`].
fn list<'v>(value: &'v Value, key: &str) -> Result<&'v Vec<Value>, LlmError> {
    value
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Malformed(format!("the model list has no `{key}` array")))
}

/// A usable model id: a non-empty string without control characters.
fn model_id(v: Option<&Value>) -> Option<String> {
    let id = v?.as_str()?.trim();
    (!id.is_empty() && !id.chars().any(char::is_control)).then(|| id.to_owned())
}

/// The parts that are there, joined with ", " on one line.
fn join<const N: usize>(parts: [Option<String>; N]) -> Option<String> {
    join_with(", ", parts)
}

fn join_with<const N: usize>(sep: &str, parts: [Option<String>; N]) -> Option<String> {
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    (!parts.is_empty()).then(|| one_line(&parts.join(sep)))
}

/// `s` on one line (whitespace runs made one space), at most [`MAX_DESCRIPTION`] bytes.
fn one_line(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() <= MAX_DESCRIPTION {
        return line;
    }
    let mut end = MAX_DESCRIPTION;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = line.get(..end).unwrap_or_default().to_owned();
    out.push('…');
    out
}

/// `"128k context"`, `"1M context"`.
fn context(tokens: u64) -> String {
    let n = tokens as f64;
    let amount = if tokens >= 1_000_000 {
        format!("{}M", trim_zero(n / 1e6))
    } else if tokens >= 1000 {
        format!("{}k", (n / 1e3).round())
    } else {
        tokens.to_string()
    };
    format!("{amount} context")
}

/// `"4.7 GB"`.
fn gigabytes(bytes: u64) -> String {
    let gb = bytes as f64 / 1e9;
    if gb >= 1.0 {
        format!("{} GB", trim_zero(gb))
    } else {
        format!("{} MB", (bytes as f64 / 1e6).round())
    }
}

/// One decimal, without a trailing `.0`.
fn trim_zero(x: f64) -> String {
    let s = format!("{x:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

/// Sorted by id; of duplicates, the first with a description is kept.
fn tidy(mut models: Vec<ModelInfo>) -> Vec<ModelInfo> {
    models.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out: Vec<ModelInfo> = Vec::with_capacity(models.len());
    for model in models {
        match out.last_mut() {
            Some(last) if last.id == model.id => {
                if last.description.is_none() {
                    last.description = model.description;
                }
            }
            _ => out.push(model),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(wire: Wire, body: Value) -> Page {
        parse_page(wire, body.to_string().as_bytes()).expect("page")
    }

    fn ids(page: &Page) -> Vec<&str> {
        page.models.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn models_openai_ids_and_openrouter_descriptions() {
        let p = page(
            Wire::OpenAi,
            json!({"object": "list", "data": [
                {"id": "gpt-4o", "object": "model", "created": 1715367049, "owned_by": "system"},
                {"id": "openai/gpt-4o", "name": "OpenAI: GPT-4o", "context_length": 128000},
                {"id": ""}, {"object": "model"}, {"id": 42}, {"id": "bad\nid"}
            ]}),
        );
        assert_eq!(ids(&p), ["gpt-4o", "openai/gpt-4o"]);
        assert_eq!(p.models[0].description, None);
        assert_eq!(
            p.models[1].description.as_deref(),
            Some("OpenAI: GPT-4o, 128k context")
        );
        assert_eq!(p.next, None);
    }

    #[test]
    fn models_anthropic_cursor_only_when_there_is_more() {
        let body = |more: bool| {
            json!({"data": [{"type": "model", "id": "claude-a", "display_name": "Claude A",
                             "created_at": "2025-02-19T00:00:00Z"}],
                   "has_more": more, "first_id": "claude-a", "last_id": "claude-a"})
        };
        assert_eq!(
            page(Wire::Anthropic, body(true)).next.as_deref(),
            Some("claude-a")
        );
        let last = page(Wire::Anthropic, body(false));
        assert_eq!(last.next, None);
        assert_eq!(last.models[0].description.as_deref(), Some("Claude A"));
    }

    #[test]
    fn models_gemini_filter_prefix_and_empty_list() {
        let p = page(
            Wire::Gemini,
            json!({"models": [
                {"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash",
                 "inputTokenLimit": 1048576,
                 "supportedGenerationMethods": ["generateContent", "countTokens"]},
                {"name": "models/text-embedding-004", "displayName": "Text Embedding 004",
                 "supportedGenerationMethods": ["embedContent"]},
                {"name": "models/no-methods"}
            ], "nextPageToken": "abc"}),
        );
        assert_eq!(ids(&p), ["gemini-2.5-flash"]);
        assert_eq!(
            p.models[0].description.as_deref(),
            Some("Gemini 2.5 Flash, 1M context")
        );
        assert_eq!(p.next.as_deref(), Some("abc"));
        assert_eq!(page(Wire::Gemini, json!({})).models, []);
    }

    #[test]
    fn models_ollama_descriptions() {
        let p = page(
            Wire::Ollama,
            json!({"models": [{"name": "llama3.2:latest", "size": 2019393189,
                               "details": {"family": "llama", "parameter_size": "3.2B",
                                           "quantization_level": "Q4_K_M"}},
                              {"model": "tiny:latest", "size": 45_000_000}]}),
        );
        assert_eq!(ids(&p), ["llama3.2:latest", "tiny:latest"]);
        assert_eq!(
            p.models[0].description.as_deref(),
            Some("3.2B llama Q4_K_M, 2 GB")
        );
        assert_eq!(p.models[1].description.as_deref(), Some("45 MB"));
    }

    #[test]
    fn models_shape_errors_are_typed() {
        assert!(matches!(
            parse_page(Wire::OpenAi, b"<html>"),
            Err(LlmError::InvalidJson { .. })
        ));
        assert!(matches!(
            parse_page(Wire::Anthropic, br#"{"has_more": false}"#),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse_page(Wire::Ollama, br#"{"error": "boom"}"#),
            Err(LlmError::Provider { .. })
        ));
    }

    #[test]
    fn models_tidy_sorts_and_merges_duplicates() {
        let m = |id: &str, d: Option<&str>| ModelInfo {
            id: id.into(),
            description: d.map(Into::into),
        };
        assert_eq!(
            tidy(vec![
                m("b", None),
                m("a", None),
                m("b", Some("B")),
                m("b", Some("C"))
            ]),
            [m("a", None), m("b", Some("B"))]
        );
    }

    #[test]
    fn models_descriptions_are_one_bounded_line() {
        assert_eq!(one_line(" a\n\tb  c "), "a b c");
        let long = one_line(&"é".repeat(500));
        assert!(long.len() <= MAX_DESCRIPTION + '…'.len_utf8());
        assert_eq!(context(131072), "131k context");
        assert_eq!(context(200000), "200k context");
        assert_eq!(context(2_000_000), "2M context");
        assert_eq!(gigabytes(4_683_075_271), "4.7 GB");
    }
}
