//! Test support: a local LLM provider over real HTTP.
#![allow(dead_code)]

pub mod llm_server;

mod rng;
pub use rng::Rng;
