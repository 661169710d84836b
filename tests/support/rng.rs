//! The one seeded pseudo-random generator of the tests, so failures reproduce.

/// Deterministic xorshift64 (the state must not be zero; [`Rng::new`] sees to that).
pub struct Rng(pub u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `input` cut into pieces of 1..=`max` bytes (anywhere: inside lines, UTF-8
    /// characters, CRLFs), as HTTP may deliver a body.
    pub fn chunks<'a>(&mut self, input: &'a [u8], max: usize) -> Vec<&'a [u8]> {
        let mut chunks = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let n = (1 + self.below(max as u64) as usize).min(rest.len());
            let (a, b) = rest.split_at(n);
            chunks.push(a);
            rest = b;
        }
        chunks
    }
}
