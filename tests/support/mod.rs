//! Test support: a local LLM provider over real HTTP.
#![allow(dead_code)]

pub mod llm_server;

/// Deterministic xorshift64 for seeded test inputs (the seed must not be zero).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
