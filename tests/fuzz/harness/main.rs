//! One libFuzzer binary for every target of ../targets.rs; `FUZZ_TARGET` names the one to
//! run (scripts/fuzz sets it), so the instrumented crate is built once.
#![no_main]

#[path = "../../support/rng.rs"]
mod rng;
#[path = "../targets.rs"]
mod targets;
// What the targets draw their cuts and seeds with (they name it `super::Rng`).
use rng::Rng;

use std::sync::OnceLock;

static TARGET: OnceLock<String> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let name = TARGET.get_or_init(|| {
        std::env::var("FUZZ_TARGET").unwrap_or_else(|_| {
            eprintln!("set FUZZ_TARGET to one of {:?}", targets::TARGETS);
            std::process::exit(2)
        })
    });
    targets::run(name, data);
});
