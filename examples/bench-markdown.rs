//! The Markdown → Org converter's cost: the corpus of `tests/fixtures/markdown/cases.txt`
//! repeated to 10 MB, converted whole and streamed in 16-byte chunks (a model's deltas are
//! smaller; the cost per byte is what matters), in MB/s.
//!
//!   cargo run --release --example bench-markdown

use org_agent::markdown::{to_org, OrgStream};
use std::time::Instant;

fn main() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/markdown/cases.txt"
    );
    let corpus: String = std::fs::read_to_string(path)
        .expect("the corpus")
        .lines()
        .filter(|l| !l.starts_with("@@@"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut text = String::with_capacity(10 << 20);
    while text.len() < 10 << 20 {
        text.push_str(&corpus);
    }
    let mb = text.len() as f64 / (1u64 << 20) as f64;

    let started = Instant::now();
    let whole = to_org(&text, 2);
    let whole_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut stream = OrgStream::new(2);
    let mut streamed = String::with_capacity(whole.len());
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + 16).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        streamed.push_str(&stream.push(&text[from..to]));
        from = to;
    }
    streamed.push_str(&stream.finish());
    let streamed_s = started.elapsed().as_secs_f64();
    assert_eq!(streamed, whole, "streaming gives the same Org");

    println!("markdown→org over {mb:.1} MB of the corpus");
    println!("  whole text        {:8.1} MB/s", mb / whole_s);
    println!("  16-byte chunks    {:8.1} MB/s", mb / streamed_s);
}
