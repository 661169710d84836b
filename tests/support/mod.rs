//! Helpers shared by the integration tests (tests/suite): a local LLM provider over real
//! HTTP, a real model server, the recordings and the parse checks run on them, Emacs in
//! batch, the store's lookups and comparable fingerprints, the seeded generator, and what
//! `../shared` holds when it is beside the checkout.

pub mod emacs;
pub mod llm_server;
pub mod local_llm;
pub mod parse;
pub mod recording;
pub mod shared;
pub mod store;

mod rng;
pub use rng::Rng;

/// A port of 127.0.0.1 that was free a moment ago: for a server to listen on or, left
/// alone, for connections that are refused.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The API root of a server that is not there: every connection is refused.
pub fn refused_url() -> String {
    format!("http://127.0.0.1:{}/v1", free_port())
}
