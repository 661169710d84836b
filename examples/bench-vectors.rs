//! The vector index at the size semantic search must handle: 100,000 notes × 384 dimensions
//! (all-MiniLM). Prints build, memory, top-k (k = 10, median and max over 50 queries), save and
//! load times. Seeded, so runs compare.
//!
//!   cargo run --release --example bench-vectors [ROWS] [DIM] [clustered]
//!
//! Uniform random vectors by default; `clustered` draws them around 1,000 centres (cosine
//! about 0.8 within a cluster) and the queries near centres, closer to real embeddings: many
//! rows score near the k-th best, where the scan's quantized bound cannot decide alone.

use org_agent::store::vectors::{text_hash, VectorIndex};
use std::time::{Duration, Instant};

/// xorshift64, as in the tests.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    fn vector(&mut self, dim: usize) -> Vec<f32> {
        (0..dim).map(|_| self.unit()).collect()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let dim: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(384);
    let clustered = args.next().is_some_and(|a| a == "clustered");
    let mut rng = Rng(0x5eed_0f0a_9e47);
    // Drawn only when clustered: the uniform rows stay those of earlier runs.
    let centres: Vec<Vec<f32>> = if clustered {
        (0..1000).map(|_| rng.vector(dim)).collect()
    } else {
        Vec::new()
    };
    // A centre plus noise of half its length per component (or pure noise).
    let draw = |rng: &mut Rng| -> Vec<f32> {
        let noise = rng.vector(dim);
        if !clustered {
            return noise;
        }
        let c = &centres[(rng.next() % centres.len() as u64) as usize];
        c.iter().zip(noise).map(|(c, n)| c + 0.5 * n).collect()
    };

    let start = Instant::now();
    let mut index = VectorIndex::new("bench");
    for i in 0..rows {
        let id = format!("oa-{i:024x}");
        index
            .insert(&id, text_hash(&id), &draw(&mut rng))
            .expect("random vectors are valid");
    }
    println!("build      {rows} × {dim}: {}", ms(start.elapsed()));
    println!(
        "memory     f32 rows {:.1} MB, i8 copy the queries scan {:.1} MB",
        (rows * dim * 4) as f64 / 1e6,
        index.scan_copy_bytes() as f64 / 1e6
    );

    let queries: Vec<Vec<f32>> = (0..50).map(|_| draw(&mut rng)).collect();
    // One warm-up pass, so the first query does not pay for page faults.
    let _ = index.top_k(&queries[0], 10, -1.0, &|_| true);
    let mut times = Vec::new();
    let mut checksum = 0.0f32;
    for q in &queries {
        let t = Instant::now();
        let hits = index.top_k(q, 10, -1.0, &|_| true);
        times.push(t.elapsed());
        assert_eq!(hits.len(), 10.min(rows));
        checksum += hits.first().map_or(0.0, |h| h.1);
    }
    times.sort();
    println!(
        "top_k k=10 ({} queries): median {}, max {}  (best scores sum {checksum:.3})",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1])
    );
    let t = Instant::now();
    let hits = index.top_k(&queries[1], 10, -1.0, &|id| !id.ends_with('7'));
    println!(
        "top_k k=10 with a filter: {} ({} hits)",
        ms(t.elapsed()),
        hits.len()
    );

    let dir = std::env::temp_dir().join(format!("bench-vectors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("vectors.bin");
    let t = Instant::now();
    let encoded = index.encode();
    let encode = t.elapsed();
    let t = Instant::now();
    let decoded = VectorIndex::decode(&encoded, &path).expect("decode");
    let decode = t.elapsed();
    assert_eq!(decoded.len(), rows);
    drop((encoded, decoded));
    println!("encode {}, decode {} (in memory)", ms(encode), ms(decode));
    let t = Instant::now();
    index.save(&path).expect("save");
    let save = t.elapsed();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let t = Instant::now();
    let back = VectorIndex::load(&path).expect("load");
    let load = t.elapsed();
    assert_eq!(back.len(), rows);
    println!(
        "save {} (encode + write + fsync + rename), load {} (read + CRC + decode), file {:.1} MB",
        ms(save),
        ms(load),
        size as f64 / 1e6
    );
    println!(
        "memory after load: i8 copy {:.1} MB",
        back.scan_copy_bytes() as f64 / 1e6
    );
    let _ = std::fs::remove_dir_all(&dir);
}
