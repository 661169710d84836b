//! Helpers shared by the integration tests (tests/suite): a local LLM provider over real
//! HTTP, a real model server, recorded bodies, the store's comparable fingerprints and the
//! seeded generator.

pub mod emacs;
pub mod llm_server;
pub mod local_llm;
pub mod parse;
pub mod recording;
pub mod store;

mod rng;
pub use rng::Rng;
