//! Filling the vector index: the notes that need embedding go to the embedding server in
//! batches, and each batch's vectors enter the index as soon as they arrive.

use crate::llm::embeddings::EmbeddingClient;
use crate::llm::error::LlmError;
use crate::llm::http::CancelToken;
use crate::store::vectors::{Candidate, VectorError, VectorIndex};
use crate::store::Hash;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// What [`embed_pending`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EmbedReport {
    /// Requests sent to the server.
    pub requests: usize,
    /// Texts sent (each distinct text once).
    pub texts: usize,
    /// Nodes given a vector (more than `texts` when nodes share a text).
    pub stored: usize,
    /// Nodes whose vector was zero: cannot be normalised, so they are left out (and asked
    /// for again next time).
    pub rejected: usize,
    /// The index was emptied because the model or its dimension changed: nodes embedded
    /// before are missing now, so the caller should compute the pending nodes again.
    pub reset: bool,
    /// Another task switched the index to another model while a batch was out: the rest
    /// was not embedded and this batch's vectors were dropped.
    pub superseded: bool,
    /// Secrets the secret gate withheld from the texts sent.
    pub secrets_withheld: usize,
}

/// Embeds `pending` (from [`VectorIndex::pending`]) with `client`, `batch` texts a request
/// (at least 1), and stores each batch's vectors as soon as they return, so the work done
/// survives a later failure or cancellation. Nodes with the same text share one embedding.
/// The index lock is only taken between requests, never across an await.
///
/// The index follows the client's model: an index of another model, or of vectors of another
/// dimension, is emptied first ([`EmbedReport::reset`]).
pub async fn embed_pending(
    index: &Mutex<VectorIndex>,
    client: &EmbeddingClient,
    pending: Vec<Candidate>,
    batch: usize,
    cancel: &CancelToken,
) -> Result<EmbedReport, LlmError> {
    let model = client.backend().endpoint.model.clone();
    let mut report = EmbedReport::default();
    {
        let mut ix = index.lock();
        let had_vectors = !ix.is_empty();
        report.reset = ix.use_model(&model) && had_vectors;
    }
    // One request text per distinct text, with every id that has it, in the given order.
    let mut groups: Vec<(Hash, String, Vec<String>)> = Vec::new();
    let mut by_hash: FxHashMap<Hash, usize> = FxHashMap::default();
    for c in pending {
        match by_hash.get(&c.hash) {
            Some(&g) => groups[g].2.push(c.id),
            None => {
                by_hash.insert(c.hash, groups.len());
                groups.push((c.hash, c.text, vec![c.id]));
            }
        }
    }
    for chunk in groups.chunks(batch.max(1)) {
        let texts: Vec<String> = chunk.iter().map(|(_, text, _)| text.clone()).collect();
        let (vectors, withheld) = client.embed_gated(&texts, cancel).await?;
        report.secrets_withheld += withheld.iter().map(|(_, n)| n).sum::<usize>();
        report.requests += 1;
        report.texts += texts.len();
        let mut ix = index.lock();
        if ix.model() != model {
            report.superseded = true;
            break;
        }
        // The client checked that every vector of a response has one dimension.
        let dim = vectors.first().map_or(0, Vec::len);
        if !ix.is_empty() && ix.dim() != dim {
            // Same model name, other vectors (the server behind the name changed): the old
            // ones cannot be compared with the new.
            ix.clear();
            report.reset = true;
        }
        for ((hash, _, ids), vector) in chunk.iter().zip(&vectors) {
            for id in ids {
                match ix.insert(id, *hash, vector) {
                    Ok(()) => report.stored += 1,
                    Err(VectorError::Invalid) => report.rejected += 1,
                    Err(e) => return Err(LlmError::Malformed(e.to_string())),
                }
            }
        }
    }
    Ok(report)
}
