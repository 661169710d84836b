//! The compact copy of the vector index that a query scans: each f32 row of
//! [`super::vectors::VectorIndex`] as one i8 code per component and one scale per row, a
//! quarter of the bytes. At 1,000,000 rows of 384 a scan of the f32 rows reads 1.5 GB and is
//! bound by memory bandwidth; the codes are 384 MB.
//!
//! A score from the codes is not the exact score, so each row carries a proven bound on the
//! difference, and [`Quantized::scan`] hands on only the rows whose bound says they might
//! still reach the caller's threshold (the k-th best exact score so far): the caller scores
//! those exactly from the f32 rows, and the results are the exact scan's, bit for bit.
//!
//! The bound. A row `v` is `s·c + e` (codes `c`, scale `s`, `‖e‖ ≤ ε` measured when the row
//! is coded); the query `q` is `t·d + f` (i16 codes `d`, scale `t`, `‖f‖ ≤ φ`). Then
//!
//! ```text
//! v·q = s·t·(c·d) + t·(e·d) + v·f  ≤  s·t·(c·d) + ε·‖t·d‖ + ‖v‖·φ      (Cauchy–Schwarz twice)
//! ```
//!
//! and the f32 dot product the exact scan computes is within `γ·‖v‖·‖q‖` of `v·q`, where
//! `γ ≤ n·2⁻²⁴` for `n` products added in any order. `c·d` is an exact integer: the query's
//! code range is chosen so that no sum of `n` products overflows an i32. The rest is
//! computed in f64 and the slack added for it (`(n + 64)·2⁻²³·‖v‖·‖q‖`) is far above its
//! rounding. Norms are rounded up; `‖v‖` is taken as the largest row norm of the index
//! (1 for the rows it normalised, whatever a file holds otherwise).
//!
//! The query codes are i16 (their error `φ` is 256 times smaller than an i8 code's, at no
//! cost: i8 codes are widened to i16 for the multiply-add either way). The integer dot
//! product is plain Rust that LLVM turns into `pmaddwd` (SSE2, baseline x86-64) and, in
//! the copy compiled for AVX2 and chosen at run time, `vpmovsxbw` + `vpmaddwd`.

/// The largest i8 code (symmetric: -127 ..= 127).
const ROW_RANGE: f64 = 127.0;

/// One row's scale and error bound.
#[derive(Clone, Copy, Debug, Default)]
struct RowCode {
    /// Component `i` of the row is about `scale × codes[i]`.
    scale: f32,
    /// At least the norm of the row minus `scale × codes`.
    err: f32,
}

/// i8 codes of the rows of one dimension, kept in step with the f32 rows by the index.
#[derive(Clone, Debug, Default)]
pub struct Quantized {
    dim: usize,
    /// `rows.len() × dim` codes, row-major.
    codes: Vec<i8>,
    rows: Vec<RowCode>,
    /// At least the norm of every row coded (never lowered by a removal: it stays a bound).
    max_norm: f32,
}

impl Quantized {
    /// An empty copy for rows of `dim` components.
    pub fn new(dim: usize) -> Quantized {
        Quantized {
            dim,
            ..Quantized::default()
        }
    }

    /// The copy of the row-major f32 matrix `data` of rows of `dim`.
    pub fn from_rows(dim: usize, data: &[f32]) -> Quantized {
        let mut out = Quantized::new(dim);
        if let Some(rows) = data.len().checked_div(dim) {
            out.codes.reserve_exact(rows * dim);
            out.rows.reserve_exact(rows);
            for v in data.chunks_exact(dim) {
                out.push(v);
            }
        }
        out
    }

    /// Bytes held (the codes and the per-row scales and bounds).
    pub fn heap_bytes(&self) -> usize {
        self.codes.capacity() + self.rows.capacity() * std::mem::size_of::<RowCode>()
    }

    /// Adds row `v` (of the copy's dimension) at the end.
    pub fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        let start = self.codes.len();
        self.codes.resize(start + self.dim, 0);
        let (code, norm) = code_row(v, &mut self.codes[start..]);
        self.rows.push(code);
        self.max_norm = self.max_norm.max(norm);
    }

    /// Replaces row `row` by `v`.
    pub fn set(&mut self, row: usize, v: &[f32]) {
        let dim = self.dim;
        let (code, norm) = code_row(v, &mut self.codes[row * dim..(row + 1) * dim]);
        self.rows[row] = code;
        self.max_norm = self.max_norm.max(norm);
    }

    /// Adds a copy of `other`'s row `row` (same dimension) at the end.
    pub fn push_row_of(&mut self, other: &Quantized, row: usize) {
        let dim = self.dim;
        self.codes
            .extend_from_slice(&other.codes[row * dim..(row + 1) * dim]);
        self.rows.push(other.rows[row]);
        self.max_norm = self.max_norm.max(other.max_norm);
    }

    /// Removes row `row`; the last row takes its place (as the index's rows do).
    pub fn swap_remove(&mut self, row: usize) {
        let (dim, last) = (self.dim, self.rows.len() - 1);
        if row != last {
            self.codes
                .copy_within(last * dim..(last + 1) * dim, row * dim);
        }
        self.rows.swap_remove(row);
        self.codes.truncate(last * dim);
    }

    /// Whether `self` holds the same codes, scales and bounds as `other`.
    #[cfg(test)]
    pub fn same_codes(&self, other: &Quantized) -> bool {
        let bits = |r: &RowCode| (r.scale.to_bits(), r.err.to_bits());
        self.dim == other.dim
            && self.codes == other.codes
            && self.rows.iter().map(bits).eq(other.rows.iter().map(bits))
    }

    /// Calls `visit(row)`, in row order, for every row whose exact score against `query`
    /// (the f32 dot product of the index) may be ≥ `threshold`; `visit` returns the
    /// threshold for the rows after it. A row skipped is one whose exact score is certainly
    /// below the threshold in force when it was read. A NaN threshold skips nothing.
    pub fn scan(&self, query: &[f32], threshold: f32, visit: &mut dyn FnMut(usize) -> f32) {
        if self.dim == 0 || self.rows.is_empty() || query.len() != self.dim {
            return;
        }
        let Some(q) = Query::new(query, self.max_norm) else {
            // Too many dimensions for exact i32 sums (or a degenerate query): every row,
            // whatever the threshold.
            for row in 0..self.rows.len() {
                visit(row);
            }
            return;
        };
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `scan_avx2` needs only AVX2, which the CPU was just seen to have.
            unsafe { self.scan_avx2(&q, threshold, visit) };
            return;
        }
        self.scan_with(&q, threshold, visit);
    }

    /// [`Quantized::scan_with`] compiled for AVX2 (16 products per instruction, not 8).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn scan_avx2(&self, q: &Query, threshold: f32, visit: &mut dyn FnMut(usize) -> f32) {
        self.scan_with(q, threshold, visit);
    }

    #[inline(always)]
    fn scan_with(&self, q: &Query, threshold: f32, visit: &mut dyn FnMut(usize) -> f32) {
        let mut threshold = f64::from(threshold);
        let rows = self.codes.chunks_exact(self.dim).zip(&self.rows);
        for (row, (codes, code)) in rows.enumerate() {
            let dot = f64::from(idot(codes, &q.codes));
            let upper = f64::from(code.scale) * q.scale * dot + f64::from(code.err) * q.norm;
            if upper + q.slack < threshold {
                continue;
            }
            threshold = f64::from(visit(row));
        }
    }
}

/// A query as the scan needs it: its i16 codes and the terms of the bound that are the
/// same for every row.
struct Query {
    codes: Vec<i16>,
    /// `t`.
    scale: f64,
    /// At least `‖t·d‖`.
    norm: f64,
    /// At least `‖v‖·(φ + γ·‖q‖)` for every row `v`, and the f64 rounding on top.
    slack: f64,
}

impl Query {
    /// None when the dimension is too large for i32 sums with useful codes, or `q` is zero
    /// or not finite.
    fn new(q: &[f32], max_norm: f32) -> Option<Query> {
        let dim = q.len();
        // |c·d| ≤ 127 × range × dim must fit an i32.
        let range = (i32::MAX as usize / (127 * dim.max(1))).min(i16::MAX as usize);
        if range < 127 {
            return None;
        }
        let max = q.iter().fold(0f32, |m, x| m.max(x.abs()));
        if !(max > 0.0 && max.is_finite()) {
            return None;
        }
        let range = range as f64;
        let scale = f64::from(max) / range;
        let inverse = range / f64::from(max);
        let mut codes = Vec::with_capacity(dim);
        let (mut err, mut norm, mut qnorm) = (0f64, 0f64, 0f64);
        for &x in q {
            let x = f64::from(x);
            let d = round(x * inverse, range);
            codes.push(d as i16);
            let coded = scale * d;
            err += (x - coded) * (x - coded);
            norm += coded * coded;
            qnorm += x * x;
        }
        let up = |x: f64| x.sqrt() * (1.0 + 1e-9);
        let gamma = (dim as f64 + 64.0) * f64::from(f32::EPSILON);
        let slack = f64::from(max_norm) * (up(err) + gamma * up(qnorm));
        Some(Query {
            codes,
            scale,
            norm: up(norm),
            slack,
        })
    }
}

/// `x` rounded to the nearest integer (halves away from zero), within ±`range`.
#[inline]
fn round(x: f64, range: f64) -> f64 {
    // `f64::round` is a library call without SSE4.1; truncation of x ± ½ is not.
    let x = x.clamp(-range, range);
    ((x + 0.5f64.copysign(x)) as i32) as f64
}

/// Codes `v` into `out` (same length): its scale and error bound, and (rounded up) its
/// norm. The codes are rounded in f32 (any code is right: the error is measured from the
/// codes chosen), the error and the norm summed in f64; in 8 lanes and without `as` casts
/// from floats (saturating, so scalar), so that it vectorises: three times faster than
/// scalar code, and it runs for every row on load.
fn code_row(v: &[f32], out: &mut [i8]) -> (RowCode, f32) {
    const LANES: usize = 8;
    let mut lane_max = [0f32; LANES];
    let (chunks, rest) = (v.chunks_exact(LANES), v.chunks_exact(LANES).remainder());
    for c in chunks {
        for i in 0..LANES {
            lane_max[i] = max(lane_max[i], c[i].abs());
        }
    }
    let max = lane_max
        .iter()
        .chain(rest)
        .fold(0f32, |m, x| max(m, x.abs()));
    let scale = (f64::from(max) / ROW_RANGE) as f32;
    // A zero row, or one so small that 1 / scale overflows, keeps codes of 0 (all error).
    let inverse = match (1.0 / f64::from(scale)) as f32 {
        inverse if inverse.is_finite() => inverse,
        _ => 0.0,
    };
    let s = f64::from(scale);
    let (mut err, mut norm) = ([0f64; LANES], [0f64; LANES]);
    let mut code = |lane: usize, x: f32, out: &mut i8| {
        let c = round_code(x * inverse);
        *out = c as i8;
        let x = f64::from(x);
        let e = x - s * f64::from(c);
        err[lane] += e * e;
        norm[lane] += x * x;
    };
    for (xs, cs) in v.chunks_exact(LANES).zip(out.chunks_exact_mut(LANES)) {
        for i in 0..LANES {
            code(i, xs[i], &mut cs[i]);
        }
    }
    let done = v.len() - rest.len();
    for (&x, c) in rest.iter().zip(&mut out[done..]) {
        code(0, x, c);
    }
    let (err, norm): (f64, f64) = (err.iter().sum(), norm.iter().sum());
    let code = RowCode {
        scale,
        err: round_up(err.sqrt()),
    };
    (code, round_up(norm.sqrt()))
}

/// The larger of `a` and `b` (not `f32::max`, whose NaN rule keeps it from vectorising;
/// neither is NaN here).
#[inline(always)]
fn max(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// `y` rounded to the nearest integer (ties to even) within ±127, by adding 1.5 × 2²³:
/// in [2²³, 2²⁴) an f32's unit in the last place is 1, so the sum's bits less those of
/// 1.5 × 2²³ are the integer. Always within ±127, which the scan's sums rely on (a NaN
/// `y`, which the caller never has, gives -127).
#[inline(always)]
fn round_code(y: f32) -> i32 {
    const SHIFT: f32 = 12_582_912.0;
    let y = if y > 127.0 {
        127.0
    } else if y >= -127.0 {
        y
    } else {
        -127.0
    };
    (y + SHIFT).to_bits() as i32 - SHIFT.to_bits() as i32
}

/// An f32 at least `x` (≥ 0, finite), with room for the f64 sum's own rounding.
fn round_up(x: f64) -> f32 {
    ((x * (1.0 + 1e-9)) as f32).next_up()
}

/// The dot product of i8 codes and i16 codes, exact: the caller keeps the sum in range.
/// In 32 lanes, so the compiler vectorises it (`pmaddwd`).
#[inline(always)]
fn idot(a: &[i8], b: &[i16]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    let mut sum: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += i32::from(*x) * i32::from(*y);
    }
    sum
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// xorshift64: a small deterministic generator, so a failure names its seed (the
    /// index's tests use it too).
    pub(in crate::store) struct Rng(pub(in crate::store) u64);

    impl Rng {
        pub(in crate::store) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        pub(in crate::store) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        /// Uniform in [-1, 1).
        pub(in crate::store) fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        }
    }

    /// The f32 dot product as the index computes it (any order: the bound holds for all).
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// The bound the scan uses, for one row.
    fn upper(qz: &Quantized, q: &Query, row: usize) -> f64 {
        let dim = qz.dim;
        let dot = f64::from(idot(&qz.codes[row * dim..(row + 1) * dim], &q.codes));
        let code = qz.rows[row];
        f64::from(code.scale) * q.scale * dot + f64::from(code.err) * q.norm + q.slack
    }

    #[test]
    fn the_bound_holds_and_is_tight() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for dim in [1, 2, 3, 17, 31, 32, 33, 384, 1000] {
            let rows: Vec<Vec<f32>> = (0..40)
                .map(|i| {
                    let mut v: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
                    // Spiky rows (one large component: coarse codes for the rest).
                    if i % 5 == 0 {
                        v[0] = 50.0;
                    }
                    let n = v.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
                    v.iter_mut().for_each(|x| *x = (f64::from(*x) / n) as f32);
                    // Rows a file may hold: longer than 1, tiny, subnormal.
                    let factor = [3.0, 1e-30, 1e-40][i % 3];
                    if i % 4 == 1 {
                        v.iter_mut().for_each(|x| *x *= factor);
                    }
                    v
                })
                .collect();
            let flat: Vec<f32> = rows.concat();
            let qz = Quantized::from_rows(dim, &flat);
            for _ in 0..20 {
                let mut q: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
                let n = q.iter().map(|x| x * x).sum::<f32>().sqrt();
                q.iter_mut().for_each(|x| *x /= n);
                let query = Query::new(&q, qz.max_norm).unwrap();
                for (r, v) in rows.iter().enumerate() {
                    let exact = f64::from(dot(&q, v));
                    let up = upper(&qz, &query, r);
                    assert!(up >= exact, "dim {dim} row {r}: {up} < {exact}");
                    // Useful: within a few hundredths for unit rows (i8 codes lose about
                    // 1/250 per component, so ‖e‖ is a small fraction of 1), more for rows
                    // whose one large component makes the codes of the others coarse.
                    let width = if r % 5 == 0 { 0.2 } else { 0.05 };
                    if r % 4 != 1 {
                        assert!(up - exact < width, "dim {dim} row {r}: {up} vs {exact}");
                    }
                }
            }
        }
    }

    #[test]
    fn scan_skips_only_rows_below_the_threshold() {
        let mut rng = Rng(42);
        let dim = 48;
        let mut flat = Vec::new();
        for _ in 0..500 {
            let mut v: Vec<f32> = (0..dim).map(|_| rng.unit()).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= n);
            flat.extend(v);
        }
        let qz = Quantized::from_rows(dim, &flat);
        let q: Vec<f32> = flat[..dim].to_vec();
        for threshold in [-2.0f32, 0.0, 0.2, 0.5, 0.999, 2.0, f32::NAN] {
            let mut seen = Vec::new();
            qz.scan(&q, threshold, &mut |row| {
                seen.push(row);
                threshold
            });
            for (row, v) in flat.chunks_exact(dim).enumerate() {
                if dot(&q, v) >= threshold || threshold.is_nan() {
                    assert!(seen.contains(&row), "row {row} skipped at {threshold}");
                }
            }
            // It does skip: far fewer than all rows are visited above 0.5.
            if threshold == 0.5 {
                assert!(seen.len() < 50, "{} visited", seen.len());
            }
            if threshold == 2.0 {
                assert!(seen.is_empty());
            }
            assert!(seen.windows(2).all(|w| w[0] < w[1]));
        }
        // The threshold visit returns holds for the rows after it.
        let mut seen = Vec::new();
        qz.scan(&q, -2.0, &mut |row| {
            seen.push(row);
            2.0
        });
        assert_eq!(seen, [0]);
    }

    #[test]
    fn huge_dimensions_visit_every_row() {
        // 127 × 127 × dim overflows an i32 past about 133,000 dimensions.
        let dim = 140_000;
        let mut flat = vec![0f32; 2 * dim];
        flat[0] = 1.0;
        flat[dim + 1] = 1.0;
        let qz = Quantized::from_rows(dim, &flat);
        assert!(Query::new(&flat[..dim], 1.0).is_none());
        let mut seen = Vec::new();
        qz.scan(&flat[..dim], 0.5, &mut |row| {
            seen.push(row);
            0.5
        });
        assert_eq!(seen, [0, 1]);
    }

    #[test]
    fn idot_is_exact_at_the_extremes() {
        for n in [0, 1, 31, 32, 33, 64, 100, 3072] {
            let a = vec![-127i8; n];
            let range = (i32::MAX as usize / (127 * n.max(1))).min(i16::MAX as usize) as i16;
            let b = vec![-range; n];
            assert_eq!(
                i64::from(idot(&a, &b)),
                127 * i64::from(range) * n as i64,
                "n = {n}"
            );
            let c: Vec<i8> = (0..n).map(|i| (i % 255) as i8).collect();
            let span = 2 * i64::from(range) + 1;
            let d: Vec<i16> = (0..n)
                .map(|i| ((i as i64 * 7919) % span - i64::from(range)) as i16)
                .collect();
            let naive: i64 = c
                .iter()
                .zip(&d)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum();
            assert_eq!(i64::from(idot(&c, &d)), naive);
        }
    }

    #[test]
    fn codes_round_to_nearest_within_the_range() {
        let cases = [
            (0.0, 0),
            (-0.0, 0),
            (0.49, 0),
            (0.5, 0),
            (1.5, 2),
            (-2.5, -2),
            (-2.51, -3),
            (126.6, 127),
            (1e30, 127),
            (-127.4, -127),
            (f32::NEG_INFINITY, -127),
            (f32::NAN, -127),
        ];
        for (y, code) in cases {
            assert_eq!(round_code(y), code, "{y}");
        }
    }

    #[test]
    fn rows_are_coded_within_their_bound() {
        let v = [0.6f32, -0.8, 0.0];
        let mut out = [0i8; 3];
        let (code, norm) = code_row(&v, &mut out);
        assert_eq!(out, [95, -127, 0]);
        assert!((1.0..1.000_001).contains(&norm));
        let e: f64 = v
            .iter()
            .zip(out)
            .map(|(x, c)| (f64::from(*x) - f64::from(code.scale) * f64::from(c)).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(f64::from(code.err) >= e && code.err < 0.004);
        let (zero, norm) = code_row(&[0.0, 0.0, 0.0], &mut out);
        // Rounded up: the smallest f32 above 0.
        assert_eq!((out, zero.scale), ([0; 3], 0.0));
        assert!(zero.err > 0.0 && zero.err < 1e-44 && norm > 0.0 && norm < 1e-44);
    }
}
