//! The Rust integration tests, one module per area, linked as one test binary: each test
//! binary links the whole crate and its dependencies again, so one binary instead of one per
//! file saves most of the link time of `cargo test`. Run one area with
//! `cargo test --test suite store_ingest::` (a test's path starts with its module).

// The helpers live beside the suite: the scripted LLM server is also a cargo example
// (tests/support/server.rs) and the fuzz harness shares the seeded generator.
#[path = "../support/mod.rs"]
mod support;

mod agent_local_llm;
mod agent_turn;
mod architecture;
mod context;
mod corpus;
mod embeddings;
mod embeddings_local;
mod fuzz;
mod injection;
mod llm_anthropic;
mod llm_cascade;
mod llm_gemini;
mod llm_http;
mod llm_models;
mod llm_ollama;
mod llm_openai;
mod llm_providers;
mod llm_sse;
mod mcp_client;
mod paths;
mod privacy;
mod secrets;
mod semantic;
mod sexp_emacs;
mod shell_adversarial;
mod skills_local_llm;
mod skills_shipped;
mod skills_turns;
mod spotlight;
mod store_history;
mod store_hostile;
mod store_ingest;
mod store_persist;
mod store_query;
mod store_reconcile;
mod string_continuations;
mod tools;
