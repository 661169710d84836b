//! Semantic search over the notes: the vector index and the embedding server together, seen
//! through the privacy rules. Used by `org-agent-semantic-search`, by the `semantic_search`
//! tool, and to find the notes related to a question for the context.

use crate::agent::embedding::{embed_pending, EmbedReport};
use crate::llm::embeddings::EmbeddingClient;
use crate::llm::error::LlmError;
use crate::llm::http::CancelToken;
use crate::notes::Notes;
use crate::store::vectors::{Candidate, VectorIndex};
use parking_lot::Mutex;
use std::sync::Arc;

/// Texts per embedding request.
pub const EMBED_BATCH: usize = 32;

/// The name of the tool the LLM searches by meaning with.
pub const SEMANTIC_TOOL: &str = "semantic_search";

impl Semantic {
    /// A call of the search tool with its JSON `args` (`text`, `limit`): the closest
    /// headlines as the other tools list them, or why not.
    pub async fn tool_call(
        &self,
        notes: &Notes,
        args: &serde_json::Value,
        cancel: &CancelToken,
    ) -> Result<String, String> {
        let text = args["text"].as_str().unwrap_or_default().trim();
        if text.is_empty() {
            return Err("text must not be empty".into());
        }
        let k = args["limit"].as_i64().unwrap_or(10).clamp(1, 50) as usize;
        let hits = self
            .search(notes, text, k, 0.0, cancel)
            .await
            .map_err(|e| format!("semantic search failed: {e}"))?;
        if hits.is_empty() {
            return Ok("No embedded headlines are close to it.".into());
        }
        let mut out = format!("{} headlines closest in meaning:\n", hits.len());
        for (id, score) in hits {
            if let Ok(r) = notes.node(&id) {
                out.push_str(&crate::notes::summary(&r));
                out.push_str(&format!(" (similarity {score:.2})\n"));
            }
        }
        Ok(out)
    }
}

/// The tool's declaration.
pub fn tool_declaration() -> serde_json::Value {
    let mut props = serde_json::Map::new();
    props.insert(
        "text".into(),
        serde_json::json!({"type": "string",
                           "description": "what to look for, in words (a question, a topic)"}),
    );
    props.insert(
        "limit".into(),
        serde_json::json!({"type": "integer", "description": "at most this many results (default 10)"}),
    );
    crate::tools::function_declaration(
        SEMANTIC_TOOL,
        "Find the headlines of the notes closest in meaning to a text (semantic search over \
         their embeddings), best first with their similarity.",
        crate::tools::object_schema(props, &["text"]),
    )
}

/// An embedding server and the index of the notes' vectors.
#[derive(Clone)]
pub struct Semantic {
    pub client: EmbeddingClient,
    pub index: Arc<Mutex<VectorIndex>>,
}

impl Semantic {
    /// The notes most similar to `text`: at most `k`, with a score ≥ `min_score`, none that
    /// the notes hide (the store is checked at search time: a node made private after it
    /// was embedded is not shown either). With nothing embedded there is nothing to find,
    /// and the server is not asked to embed `text`.
    pub async fn search(
        &self,
        notes: &Notes,
        text: &str,
        k: usize,
        min_score: f32,
        cancel: &CancelToken,
    ) -> Result<Vec<(String, f32)>, LlmError> {
        let model = &self.client.backend().endpoint.model;
        let indexed = {
            let ix = self.index.lock();
            if ix.is_empty() {
                // Every chat turn looks for related notes: a user who set an embedding
                // backend but marked nothing to embed must not pay a request per turn.
                return Ok(Vec::new());
            }
            ix.model().to_owned()
        };
        if !indexed.is_empty() && indexed != *model {
            // Vectors of another model are not comparable, even with the same dimension.
            return Err(LlmError::Config(format!(
                "the notes were embedded with {indexed}, not {model}: embed them again \
                 (M-x org-agent-embed-notes)"
            )));
        }
        let mut vectors = self.client.embed(&[text.to_owned()], cancel).await?;
        let query = vectors
            .pop()
            .ok_or_else(|| LlmError::Malformed("no embedding for the query".into()))?;
        let shown = |id: &str| notes.node(id).is_ok();
        Ok(self.index.lock().top_k(&query, k, min_score, &shown))
    }

    /// Brings the index up to date with the store: drops vectors of nodes that changed,
    /// vanished or became private, and embeds what is missing. A batch the server refuses
    /// (one text too long for a small local model fails the whole batch) is retried one text
    /// at a time, so one note never blocks the others; texts still refused are skipped and
    /// counted.
    pub async fn update(
        &self,
        notes: &Notes,
        embed_all: bool,
        cancel: &CancelToken,
    ) -> Result<UpdateReport, LlmError> {
        let wanted = notes.embedding_candidates(embed_all);
        let mut out = UpdateReport {
            candidates: wanted.len(),
            ..UpdateReport::default()
        };
        for _round in 0..2 {
            let pending = {
                let mut ix = self.index.lock();
                if ix.model() == self.client.backend().endpoint.model {
                    out.dropped += ix.retain_current(&wanted).dropped;
                }
                ix.pending(&wanted)
            };
            let report = self.embed_resilient(pending, cancel, &mut out).await?;
            if !report.reset {
                break;
            }
        }
        out.indexed = self.index.lock().len();
        Ok(out)
    }

    async fn embed_resilient(
        &self,
        pending: Vec<Candidate>,
        cancel: &CancelToken,
        out: &mut UpdateReport,
    ) -> Result<EmbedReport, LlmError> {
        let mut total = EmbedReport::default();
        for chunk in pending.chunks(EMBED_BATCH) {
            match embed_pending(
                &self.index,
                &self.client,
                chunk.to_vec(),
                EMBED_BATCH,
                cancel,
            )
            .await
            {
                Ok(r) => add(&mut total, &r),
                Err(LlmError::Http { status, .. }) if chunk.len() > 1 && status != 401 => {
                    for one in chunk {
                        match embed_pending(&self.index, &self.client, vec![one.clone()], 1, cancel)
                            .await
                        {
                            Ok(r) => add(&mut total, &r),
                            Err(LlmError::Http { status, .. }) if status != 401 => {
                                out.refused += 1;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        out.embedded += total.stored;
        out.requests += total.requests;
        out.secrets_withheld += total.secrets_withheld;
        Ok(total)
    }
}

fn add(total: &mut EmbedReport, r: &EmbedReport) {
    total.requests += r.requests;
    total.texts += r.texts;
    total.stored += r.stored;
    total.rejected += r.rejected;
    total.reset |= r.reset;
    total.superseded |= r.superseded;
    total.secrets_withheld += r.secrets_withheld;
}

/// What [`Semantic::update`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UpdateReport {
    /// Headlines that should have a vector.
    pub candidates: usize,
    /// Vectors computed now.
    pub embedded: usize,
    /// Vectors dropped (node changed, gone or private).
    pub dropped: usize,
    /// Texts the server refused even alone.
    pub refused: usize,
    /// Requests sent.
    pub requests: usize,
    /// Vectors in the index afterwards.
    pub indexed: usize,
    /// Secrets the secret gate withheld from the texts sent.
    pub secrets_withheld: usize,
}
