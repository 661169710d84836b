//! Test support: a local LLM provider over real HTTP.
#![allow(dead_code)]

pub mod llm_server;
pub mod recording;

mod rng;
pub use rng::Rng;
