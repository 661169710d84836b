//! Text embeddings over HTTP, for semantic search over the notes.
//!
//! [`EmbeddingClient::embed`] sends a batch of texts to one [`EmbeddingBackend`] and returns
//! one vector per text, in the order of the texts. Three wire formats ([`EmbeddingWire`]):
//!
//! * OpenAI-compatible `POST {base}/embeddings` `{model, input: [...], encoding_format}`
//!   (OpenAI, llama.cpp, vLLM, Ollama `/v1`, …) → `{data: [{index, embedding}]}`, where
//!   `embedding` is a float array or, with `encoding_format: "base64"`, the little-endian
//!   `f32`s in base64 (a quarter of the JSON size; [`EncodingFormat`]). Items are put back in
//!   `index` order.
//! * Ollama `POST {base}/api/embed` `{model, input: [...]}` → `{embeddings: [[...]]}`.
//! * Gemini `POST {base}/models/{model}:batchEmbedContents` → `{embeddings: [{values}]}`,
//!   the key in `x-goog-api-key`.
//!
//! The same discipline as the chat client ([`crate::llm::http`]): connect / first byte / idle
//! / total timeouts, a [`CancelToken`] honoured at every wait, typed errors
//! ([`LlmError::Http`] with the provider's own message, [`LlmError::Malformed`] for a
//! response that does not hold one finite vector of one dimension per text), and the key
//! never in `Debug` output or an error.

use crate::llm::endpoint::Endpoint;
use crate::llm::error::{invalid_json, provider_error, LlmError};
use crate::llm::http::{http_client, redact_error, CancelToken, Waits};
use crate::secrets::{describe_hits, merge_hits, Hits, SecretGate};
use base64::Engine as _;
use reqwest::header::ACCEPT;
use serde_json::{json, Value};
use std::fmt;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Configuration.

/// The wire format of an embedding server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbeddingWire {
    /// OpenAI `/embeddings` and every compatible server (llama.cpp, vLLM, Ollama `/v1`, …).
    OpenAi,
    /// Ollama's own `/api/embed`.
    Ollama,
    /// Google Gemini `batchEmbedContents`.
    Gemini,
}

impl EmbeddingWire {
    /// Every format, for listings and tests.
    pub const ALL: [EmbeddingWire; 3] = [
        EmbeddingWire::OpenAi,
        EmbeddingWire::Ollama,
        EmbeddingWire::Gemini,
    ];

    /// The format named `name` (`"openai"`, `"ollama"`, `"gemini"`, any case), as users
    /// write it in their configuration.
    pub fn from_name(name: &str) -> Option<EmbeddingWire> {
        EmbeddingWire::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            EmbeddingWire::OpenAi => "openai",
            EmbeddingWire::Ollama => "ollama",
            EmbeddingWire::Gemini => "gemini",
        }
    }

    /// The endpoint under the API root `base`.
    pub fn url(self, base: &str, model: &str) -> String {
        let base = base.trim_end_matches('/');
        match self {
            EmbeddingWire::OpenAi => format!("{base}/embeddings"),
            EmbeddingWire::Ollama => format!("{base}/api/embed"),
            EmbeddingWire::Gemini => {
                format!("{base}/models/{}:batchEmbedContents", gemini_model(model))
            }
        }
    }

    /// The JSON request body for `texts`.
    pub fn request_body(self, model: &str, texts: &[String], encoding: EncodingFormat) -> Value {
        match self {
            EmbeddingWire::OpenAi => json!({
                "model": model,
                "input": texts,
                "encoding_format": encoding.name(),
            }),
            EmbeddingWire::Ollama => json!({"model": model, "input": texts}),
            EmbeddingWire::Gemini => {
                let model = format!("models/{}", gemini_model(model));
                let requests: Vec<Value> = texts
                    .iter()
                    .map(|text| json!({"model": model, "content": {"parts": [{"text": text}]}}))
                    .collect();
                json!({ "requests": requests })
            }
        }
    }

    /// The header that carries the API key, and its value. Ollama itself wants none, but the
    /// proxies put in front of it take a bearer token.
    pub fn auth_header(self, key: &str) -> (&'static str, String) {
        match self {
            EmbeddingWire::OpenAi | EmbeddingWire::Ollama => {
                ("authorization", format!("Bearer {key}"))
            }
            EmbeddingWire::Gemini => ("x-goog-api-key", key.to_owned()),
        }
    }

    /// The vectors of a complete response body for a request of `expected` texts, in the
    /// order of the texts; every vector finite, non-empty and of one dimension.
    pub fn parse_response(self, body: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, LlmError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| invalid_json(&e, &String::from_utf8_lossy(body)))?;
        // Some servers report an error under HTTP 200.
        if value.get("error").is_some() {
            if let Some(err) = provider_error(body) {
                return Err(err);
            }
        }
        let vectors = match self {
            EmbeddingWire::OpenAi => parse_openai(&value)?,
            EmbeddingWire::Ollama => {
                let items = field_array(&value, "embeddings")?;
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| float_array(v, i))
                    .collect::<Result<_, _>>()?
            }
            EmbeddingWire::Gemini => {
                let items = field_array(&value, "embeddings")?;
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item.get("values") {
                        Some(v) => float_array(v, i),
                        None => Err(LlmError::Malformed(format!(
                            "embedding {i} has no \"values\""
                        ))),
                    })
                    .collect::<Result<_, _>>()?
            }
        };
        check_vectors(vectors, expected)
    }
}

/// Gemini's model name without the `models/` prefix users often copy along.
fn gemini_model(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

/// How an OpenAI-compatible server is asked to encode vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodingFormat {
    /// JSON numbers: understood by every server.
    #[default]
    Float,
    /// Base64 of little-endian `f32`s: about a quarter of the bytes, and exact.
    Base64,
}

impl EncodingFormat {
    pub fn name(self) -> &'static str {
        match self {
            EncodingFormat::Float => "float",
            EncodingFormat::Base64 => "base64",
        }
    }

    /// `"float"` or `"base64"`.
    pub fn from_name(name: &str) -> Option<EncodingFormat> {
        [EncodingFormat::Float, EncodingFormat::Base64]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

/// One embedding server and how to talk to it.
#[derive(Clone)]
pub struct EmbeddingBackend {
    /// Where the server is, the model, the key and headers, the waits. The API root is
    /// `https://api.openai.com/v1`, `http://127.0.0.1:8080/v1`, `http://localhost:11434`
    /// (Ollama), `https://generativelanguage.googleapis.com/v1beta`; the key goes in the
    /// format's key header ([`EmbeddingWire::auth_header`]).
    pub endpoint: Endpoint,
    pub wire: EmbeddingWire,
    /// What OpenAI-compatible servers are asked for (the others always send numbers).
    pub encoding: EncodingFormat,
    /// The largest response body accepted, in bytes ([`LlmError::ResponseTooLarge`]).
    pub max_response_bytes: usize,
}

impl EmbeddingBackend {
    /// A backend with no key, no extra headers, default timeouts, float encoding and a
    /// 64 MiB response limit (a batch of 256 texts of 3,072 floats is about 16 MiB as JSON).
    pub fn new(
        wire: EmbeddingWire,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> EmbeddingBackend {
        EmbeddingBackend {
            endpoint: Endpoint::new(wire.name(), base_url, model),
            wire,
            encoding: EncodingFormat::Float,
            max_response_bytes: 64 * 1024 * 1024,
        }
    }

    /// The endpoint.
    pub fn url(&self) -> String {
        self.wire.url(&self.endpoint.base_url, &self.endpoint.model)
    }
}

impl fmt::Debug for EmbeddingBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingBackend")
            .field("endpoint", &self.endpoint)
            .field("wire", &self.wire)
            .field("encoding", &self.encoding)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

// ---------------------------------------------------------------------------------------------
// The client.

/// An HTTP client for one [`EmbeddingBackend`] (cheap to clone). Every input passes its
/// secret gate before the request body is built.
#[derive(Clone)]
pub struct EmbeddingClient {
    backend: Arc<EmbeddingBackend>,
    url: reqwest::Url,
    http: reqwest::Client,
    gate: Arc<SecretGate>,
}

impl fmt::Debug for EmbeddingClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddingClient")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl EmbeddingClient {
    /// A client for `backend`: [`LlmError::Config`] on a bad URL, model name or header.
    pub fn new(backend: EmbeddingBackend) -> Result<EmbeddingClient, LlmError> {
        if backend.wire == EmbeddingWire::Gemini
            && gemini_model(&backend.endpoint.model)
                .chars()
                .any(|c| matches!(c, '/' | '?' | '#' | '%') || c.is_whitespace())
        {
            // The model goes into the URL path.
            return Err(LlmError::Config(format!(
                "{:?} is not a Gemini model name",
                backend.endpoint.model
            )));
        }
        let url = reqwest::Url::parse(&backend.url())
            .map_err(|e| LlmError::Config(format!("the base URL does not parse: {e}")))?;
        let http = http_client(&backend.endpoint, |k| backend.wire.auth_header(k), &[])?;
        Ok(EmbeddingClient {
            backend: Arc::new(backend),
            url,
            http,
            gate: SecretGate::shared(),
        })
    }

    /// The same client behind another secret gate (the default is [`SecretGate::shared`]).
    pub fn with_gate(self, gate: Arc<SecretGate>) -> EmbeddingClient {
        EmbeddingClient { gate, ..self }
    }

    pub fn gate(&self) -> &Arc<SecretGate> {
        &self.gate
    }

    /// [`EmbeddingClient::embed_gated`] when nobody needs the counts (they still go to the
    /// log).
    pub async fn embed(
        &self,
        texts: &[String],
        cancel: &CancelToken,
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        Ok(self.embed_gated(texts, cancel).await?.0)
    }

    pub fn backend(&self) -> &EmbeddingBackend {
        &self.backend
    }

    /// The vectors of `texts`, one per text in the same order (not normalised: as the server
    /// sent them), and what the secret gate withheld from the texts before they were sent
    /// (a text's secrets are embedded as `[REDACTED:rule]`). An empty batch makes no request.
    pub async fn embed_gated(
        &self,
        texts: &[String],
        cancel: &CancelToken,
    ) -> Result<(Vec<Vec<f32>>, Hits), LlmError> {
        if cancel.is_cancelled() {
            return Err(LlmError::Cancelled);
        }
        if texts.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let mut hits: Hits = Vec::new();
        let redacted: Vec<Option<String>> = texts
            .iter()
            .map(|t| {
                let r = self.gate.redact(t);
                merge_hits(&mut hits, &r.hits);
                (!r.hits.is_empty()).then(|| r.text.into_owned())
            })
            .collect();
        let owned: Vec<String>;
        let texts: &[String] = if hits.is_empty() {
            texts
        } else {
            tracing::warn!(backend = %self.backend.endpoint.name, "secret gate: {} from embedding inputs", describe_hits(&hits));
            owned = texts
                .iter()
                .zip(redacted)
                .map(|(t, r)| r.unwrap_or_else(|| t.clone()))
                .collect();
            &owned
        };
        let b = &*self.backend;
        let wait = Waits::start(&b.endpoint, cancel);
        let request = self
            .http
            .post(self.url.clone())
            .header(ACCEPT, "application/json")
            .json(&b.wire.request_body(&b.endpoint.model, texts, b.encoding));
        let body = wait.fetch(request, b.max_response_bytes).await?;
        let vectors = b
            .wire
            .parse_response(&body, texts.len())
            .map_err(|e| redact_error(b.endpoint.api_key.as_deref(), e))?;
        Ok((vectors, hits))
    }
}

// ---------------------------------------------------------------------------------------------
// Response parsing.

fn field_array<'v>(value: &'v Value, key: &str) -> Result<&'v Vec<Value>, LlmError> {
    value
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Malformed(format!("no {key:?} array in the response")))
}

/// `{data: [{index, embedding}]}`, put in `index` order. Each index must occur once and be
/// in range, so no vector is given to the wrong text.
fn parse_openai(value: &Value) -> Result<Vec<Vec<f32>>, LlmError> {
    let items = field_array(value, "data")?;
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; items.len()];
    for (pos, item) in items.iter().enumerate() {
        let index = match item.get("index") {
            None | Some(Value::Null) => pos,
            Some(v) => v
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| {
                    LlmError::Malformed(format!("embedding {pos} has a bad index {v}"))
                })?,
        };
        let vector = match item.get("embedding") {
            Some(Value::String(b64)) => decode_base64_f32(b64)
                .map_err(|why| LlmError::Malformed(format!("embedding {index}: {why}")))?,
            Some(v @ Value::Array(_)) => float_array(v, index)?,
            _ => {
                return Err(LlmError::Malformed(format!(
                    "embedding {pos} is neither a float array nor a base64 string"
                )))
            }
        };
        match slots.get_mut(index) {
            Some(slot @ None) => *slot = Some(vector),
            Some(Some(_)) => {
                return Err(LlmError::Malformed(format!(
                    "index {index} occurs twice in the response"
                )))
            }
            None => {
                return Err(LlmError::Malformed(format!(
                    "index {index} is out of range for {} embeddings",
                    items.len()
                )))
            }
        }
    }
    // Every slot is filled: n distinct indexes below n.
    Ok(slots.into_iter().flatten().collect())
}

/// A JSON array of numbers as `f32`s (finiteness is checked later, after the cast).
fn float_array(value: &Value, index: usize) -> Result<Vec<f32>, LlmError> {
    let items = value
        .as_array()
        .ok_or_else(|| LlmError::Malformed(format!("embedding {index} is not an array")))?;
    items
        .iter()
        .map(|x| {
            x.as_f64().map(|f| f as f32).ok_or_else(|| {
                LlmError::Malformed(format!("embedding {index} holds a non-number {x}"))
            })
        })
        .collect()
}

/// Little-endian `f32`s from standard base64 (what OpenAI and llama.cpp send for
/// `encoding_format: "base64"`).
pub fn decode_base64_f32(text: &str) -> Result<Vec<f32>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("invalid base64: {e}"))?;
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "{} bytes of base64 data are not a whole number of f32s",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// One vector per text, all of one non-zero dimension, every component finite.
fn check_vectors(vectors: Vec<Vec<f32>>, expected: usize) -> Result<Vec<Vec<f32>>, LlmError> {
    if vectors.len() != expected {
        return Err(LlmError::Malformed(format!(
            "asked for {expected} embeddings, got {}",
            vectors.len()
        )));
    }
    let dim = vectors.first().map_or(0, Vec::len);
    if dim == 0 && expected > 0 {
        return Err(LlmError::Malformed("an empty embedding".to_owned()));
    }
    for (i, v) in vectors.iter().enumerate() {
        if v.len() != dim {
            return Err(LlmError::Malformed(format!(
                "embedding {i} has {} dimensions, embedding 0 has {dim}",
                v.len()
            )));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(LlmError::Malformed(format!(
                "embedding {i} has a non-finite component"
            )));
        }
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(values: &[f32]) -> String {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn base64_decodes_little_endian_f32() {
        let values = [1.0f32, -0.5, 3.25e-7, f32::MAX];
        assert_eq!(decode_base64_f32(&b64(&values)).unwrap(), values);
        assert_eq!(decode_base64_f32("").unwrap(), Vec::<f32>::new());
        // 0.0 then 1.0 written out by hand: 00000000 0000803f.
        assert_eq!(decode_base64_f32("AAAAAAAAgD8=").unwrap(), [0.0, 1.0]);
        assert!(decode_base64_f32("AAAAAAA=").unwrap_err().contains("f32"));
        assert!(decode_base64_f32("not base64!").is_err());
    }

    #[test]
    fn openai_items_are_put_in_index_order() {
        let body = json!({"object": "list", "data": [
            {"object": "embedding", "index": 1, "embedding": b64(&[3.0, 4.0])},
            {"object": "embedding", "index": 0, "embedding": [1.0, 2.0]},
        ]});
        let got = EmbeddingWire::OpenAi
            .parse_response(body.to_string().as_bytes(), 2)
            .unwrap();
        assert_eq!(got, vec![vec![1.0, 2.0], vec![3.0, 4.0]]);
    }

    #[test]
    fn malformed_responses_are_typed() {
        let malformed = |wire: EmbeddingWire, body: Value, n: usize| match wire
            .parse_response(body.to_string().as_bytes(), n)
        {
            Err(LlmError::Malformed(why)) => why,
            other => panic!("{body}: {other:?}"),
        };
        let openai = EmbeddingWire::OpenAi;
        assert!(malformed(
            openai,
            json!({"data": [{"index": 0, "embedding": [1.0]}]}),
            2
        )
        .contains("asked for 2"));
        assert!(malformed(
            openai,
            json!({"data": [{"index": 0, "embedding": [1.0]},
                            {"index": 0, "embedding": [2.0]}]}),
            2
        )
        .contains("twice"));
        assert!(malformed(
            openai,
            json!({"data": [{"index": 5, "embedding": [1.0]}]}),
            1
        )
        .contains("out of range"));
        assert!(malformed(
            openai,
            json!({"data": [{"embedding": [1.0, 2.0]}, {"embedding": [1.0]}]}),
            2
        )
        .contains("dimensions"));
        // 1e39 is beyond f32: infinite after the cast.
        assert!(
            malformed(openai, json!({"data": [{"embedding": [1e39]}]}), 1).contains("non-finite")
        );
        assert!(malformed(openai, json!({"data": [{"embedding": []}]}), 1).contains("empty"));
        assert!(malformed(
            EmbeddingWire::Ollama,
            json!({"embeddings": [[1.0, "x"]]}),
            1
        )
        .contains("non-number"));
        assert!(
            malformed(EmbeddingWire::Gemini, json!({"embeddings": [{}]}), 1).contains("values")
        );
        assert!(
            malformed(EmbeddingWire::Gemini, json!({"nothing": 1}), 1).contains("\"embeddings\"")
        );
        assert!(matches!(
            openai.parse_response(b"{\"data\": [", 1),
            Err(LlmError::InvalidJson { .. })
        ));
        // An error under HTTP 200 is the provider's.
        assert!(matches!(
            openai.parse_response(br#"{"error": {"message": "busy"}}"#, 1),
            Err(LlmError::Provider { message, .. }) if message == "busy"
        ));
    }

    #[test]
    fn request_bodies_and_urls() {
        let texts = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            EmbeddingWire::OpenAi.request_body("m", &texts, EncodingFormat::Base64),
            json!({"model": "m", "input": ["a", "b"], "encoding_format": "base64"})
        );
        assert_eq!(
            EmbeddingWire::Ollama.request_body("m", &texts, EncodingFormat::Base64),
            json!({"model": "m", "input": ["a", "b"]})
        );
        assert_eq!(
            EmbeddingWire::Gemini.request_body("models/e", &texts[..1], EncodingFormat::Float),
            json!({"requests": [{"model": "models/e", "content": {"parts": [{"text": "a"}]}}]})
        );
        assert_eq!(
            EmbeddingWire::Gemini.url("https://g/v1beta/", "models/e"),
            "https://g/v1beta/models/e:batchEmbedContents"
        );
        assert_eq!(
            EmbeddingWire::Ollama.url("http://h:1", "m"),
            "http://h:1/api/embed"
        );
        assert_eq!(
            EmbeddingWire::OpenAi.url("http://h/v1/", "m"),
            "http://h/v1/embeddings"
        );
        for wire in EmbeddingWire::ALL {
            assert_eq!(EmbeddingWire::from_name(wire.name()), Some(wire));
        }
        assert_eq!(
            EmbeddingWire::from_name("OLLAMA"),
            Some(EmbeddingWire::Ollama)
        );
        assert_eq!(EmbeddingWire::from_name("anthropic"), None);
        assert_eq!(
            EncodingFormat::from_name("Base64"),
            Some(EncodingFormat::Base64)
        );
    }

    #[test]
    fn debug_never_shows_the_key() {
        let mut backend = EmbeddingBackend::new(EmbeddingWire::Gemini, "https://g/v1beta", "e");
        backend.endpoint.api_key = Some("sk-secret-123".into());
        backend
            .endpoint
            .headers
            .push(("x-extra".into(), "hidden-456".into()));
        let client = EmbeddingClient::new(backend.clone()).unwrap();
        for text in [format!("{backend:?}"), format!("{client:?}")] {
            assert!(!text.contains("sk-secret-123"), "{text}");
            assert!(!text.contains("hidden-456"), "{text}");
            assert!(text.contains("x-extra"));
        }
        let mut bad = backend;
        bad.endpoint.model = "a/../b".into();
        assert!(matches!(
            EmbeddingClient::new(bad),
            Err(LlmError::Config(_))
        ));
    }
}
