//! Dot-product kernels, one instruction set per file, chosen once at run time.
//!
//! | file        | instruction set        | width | notes                                  |
//! |-------------|------------------------|-------|----------------------------------------|
//! | `avx512.rs` | AVX-512F (x86_64)      | 16    | masked loads for the tail              |
//! | `avx2.rs`   | AVX2 + FMA (x86_64)    | 8     | scalar tail                            |
//! | `neon.rs`   | NEON (aarch64)         | 4     | byte loads reinterpreted (unaligned)   |
//! | `scalar.rs` | portable Rust          | 8 lanes | the reference the others are tested against |
//!
//! A kernel computes `Σ q[i] · v[i]` between a query (native `f32`, aligned) and a stored
//! vector (little-endian `f32` bytes at any alignment: records start at odd offsets). The
//! SIMD kernels use FMA and four independent accumulators, so they sum in a different order
//! than the scalar one; `rust/tests/vector_kernels.rs` checks every kernel available on the
//! machine against scalar within 1e-4 of `Σ |q[i] · v[i]|`.
//!
//! [`best`] picks the widest kernel the CPU supports (`is_x86_feature_detected!` /
//! `is_aarch64_feature_detected!`) once and caches it in a `OnceLock`. The environment
//! variable `KBDB_VECTOR_KERNEL` (`avx512`, `avx2`, `neon`, `scalar`) forces an available
//! kernel, for benchmarks and debugging; an unknown or unavailable name is ignored.
//!
//! A [`Kernel`] value can only be built by its file's `detect`, after the feature check, so
//! holding one is the proof that its `unsafe` functions may run on this CPU.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;

use std::sync::OnceLock;

use super::{COMPONENT_BYTES, KBID_LEN};

/// `dot(q, v, n)`: `v` points at `n` little-endian `f32`s (any alignment), `q` at `n` f32s.
type DotPtr = unsafe fn(q: *const f32, v: *const u8, n: usize) -> f32;
/// `dot_rows(q, records, stride, rows, out)`: for each row `r`, the dot of `q` with the
/// vector at `records[r * stride + 16..]`; bounds checked by [`Kernel::dot_rows`].
type DotRows = unsafe fn(q: &[f32], records: &[u8], stride: usize, rows: &[u32], out: &mut [f32]);

/// `dot_rows_many(queries, records, stride, rows, out)`: [`Kernel::dot_rows_many`] after
/// its checks, register-blocked (each component of a record loaded once for a block of
/// queries).
type DotRowsMany =
    unsafe fn(queries: &[&[f32]], records: &[u8], stride: usize, rows: &[u32], out: &mut [f32]);

/// One instruction set's dot products. See the module docs for why constructing one is
/// restricted.
#[derive(Clone, Copy)]
pub struct Kernel {
    name: &'static str,
    dot: DotPtr,
    dot_rows: DotRows,
    /// `None`: one `dot` per row and query (the scalar and NEON kernels).
    dot_rows_many: Option<DotRowsMany>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Kernel {
    /// Only for the kernel files' `detect`, after checking the CPU features.
    fn new(name: &'static str, dot: DotPtr, dot_rows: DotRows) -> Kernel {
        Kernel {
            name,
            dot,
            dot_rows,
            dot_rows_many: None,
        }
    }

    /// With a register-blocked multi-query function, which must give bit for bit the
    /// scores of `dot` (the same operations in the same order for every query).
    fn with_many(mut self, many: DotRowsMany) -> Kernel {
        self.dot_rows_many = Some(many);
        self
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `Σ q[i] · v[i]` over the common length of `q` and `v` (little-endian f32 bytes).
    pub fn dot(&self, q: &[f32], v: &[u8]) -> f32 {
        let n = q.len().min(v.len() / COMPONENT_BYTES);
        // SAFETY: `self` exists only if `detect` found the CPU features (module docs); `q`
        // holds at least `n` f32s and `v` at least `n * 4` bytes.
        unsafe { (self.dot)(q.as_ptr(), v.as_ptr(), n) }
    }

    /// Scores of `rows` (record indices into `records`, records being `stride` bytes: a
    /// 16-byte kbid then the vector) into `out[..rows.len()]`.
    ///
    /// # Panics
    /// If a record is too short for `q`, a row is past the end of `records`, or `out` is
    /// shorter than `rows`: all caller bugs, never data-dependent (rows come from bitsets
    /// sized by validated files).
    pub fn dot_rows(
        &self,
        q: &[f32],
        records: &[u8],
        stride: usize,
        rows: &[u32],
        out: &mut [f32],
    ) {
        check_rows(q.len(), records, stride, rows, out.len(), rows.len());
        // SAFETY: CPU features as in `dot`; every row's record lies inside `records` and
        // holds `q.len()` components (both asserted above).
        unsafe { (self.dot_rows)(q, records, stride, rows, out) }
    }

    /// Scores of `rows` against each of `queries`: `out[j * queries.len() + i]` is the
    /// dot of `queries[i]` with row `rows[j]`, bit for bit what [`Kernel::dot_rows`] gives
    /// for that query alone (the same function sums it, in the same order).
    ///
    /// Row by row: a record's dot products with all the queries are taken while it is in
    /// L1, so it is read from memory once; the queries (a few KiB) stay in L1 too. The
    /// AVX-512 and AVX2 kernels are register-blocked: each 16 (8) components of the record
    /// are loaded once and multiplied into the accumulators of 4 (2) queries, each query
    /// keeping the four accumulators and summation order of `dot`, so the scores are the
    /// same bits. That matters because the record loads are the expensive ones (records
    /// start 16 bytes into a cache line, so every 64-byte load splits two): one dot from
    /// L1 costs about what streaming the record from DRAM does, and without the blocking
    /// each extra query would add most of a scan's time.
    ///
    /// # Panics
    /// As [`Kernel::dot_rows`], and if the queries differ in length or `out` is shorter
    /// than `rows.len() * queries.len()`.
    pub fn dot_rows_many(
        &self,
        queries: &[&[f32]],
        records: &[u8],
        stride: usize,
        rows: &[u32],
        out: &mut [f32],
    ) {
        let Some(dims) = queries.first().map(|q| q.len()) else {
            return;
        };
        assert!(
            queries.iter().all(|q| q.len() == dims),
            "queries of different lengths"
        );
        let needed = rows.len() * queries.len();
        check_rows(dims, records, stride, rows, out.len(), needed);
        if let Some(many) = self.dot_rows_many {
            // SAFETY: CPU features as in `dot`; every row's record lies inside `records`
            // and holds `dims` components, every query is `dims` long and `out` holds
            // `rows.len() * queries.len()` scores (all asserted above).
            unsafe { many(queries, records, stride, rows, out) };
            return;
        }
        let base = records.as_ptr();
        for (scores, &r) in out.chunks_exact_mut(queries.len()).zip(rows) {
            // SAFETY: the record lies inside `records` (asserted above).
            let v = unsafe { base.add(r as usize * stride + KBID_LEN) };
            for (o, q) in scores.iter_mut().zip(queries) {
                // SAFETY: CPU features as in `dot`; the record holds `dims` components
                // and `q` is `dims` long (asserted above).
                *o = unsafe { (self.dot)(q.as_ptr(), v, dims) };
            }
        }
    }
}

/// A register-blocked kernel: the dots of `B` queries (pointers to `n` f32s each) with one
/// vector (`n` little-endian f32s at any alignment).
type DotBlock<const B: usize> = unsafe fn(q: [*const f32; B], v: *const u8, n: usize) -> [f32; B];

/// The `dot_rows_many` of a register-blocked kernel: for each row, the queries in blocks of
/// `B`, the last block padded with copies of its last query (whose extra scores are
/// dropped: each query's arithmetic is independent of the others in the block).
///
/// # Safety
/// As the kernel's `dot_ptr`, for every query and row (the checks of
/// [`Kernel::dot_rows_many`]); `block` may run on this CPU.
unsafe fn rows_by_blocks<const B: usize>(
    block: DotBlock<B>,
    queries: &[&[f32]],
    records: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [f32],
) {
    let Some(n) = queries.first().map(|q| q.len()) else {
        return;
    };
    let groups: Vec<[*const f32; B]> = queries
        .chunks(B)
        .map(|g| std::array::from_fn(|i| g[i.min(g.len() - 1)].as_ptr()))
        .collect();
    let base = records.as_ptr();
    for (scores, &r) in out.chunks_exact_mut(queries.len()).zip(rows) {
        // SAFETY: the record lies inside `records` (caller).
        let v = unsafe { base.add(r as usize * stride + KBID_LEN) };
        for (dst, group) in scores.chunks_mut(B).zip(&groups) {
            // SAFETY: the CPU features and every pointer as the caller guarantees.
            let got = unsafe { block(*group, v, n) };
            dst.copy_from_slice(&got[..dst.len()]);
        }
    }
}

/// The bounds every `dot_rows*` relies on: records of `stride` bytes hold `dims`
/// components after the kbid, every row is inside `records`, `out_len >= needed`.
fn check_rows(
    dims: usize,
    records: &[u8],
    stride: usize,
    rows: &[u32],
    out_len: usize,
    needed: usize,
) {
    assert!(
        stride >= KBID_LEN + dims * COMPONENT_BYTES,
        "record stride too short"
    );
    assert!(out_len >= needed, "score buffer too short");
    let count = records.len() / stride;
    assert!(
        rows.iter().all(|&r| (r as usize) < count),
        "row past the end of the records"
    );
}

/// Every kernel this CPU supports, widest first; scalar is always last.
pub fn available() -> Vec<Kernel> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        out.extend(avx512::detect());
        out.extend(avx2::detect());
    }
    #[cfg(target_arch = "aarch64")]
    out.extend(neon::detect());
    out.push(scalar::kernel());
    out
}

/// The kernel used by scans (cached; see the module docs for `KBDB_VECTOR_KERNEL`).
pub fn best() -> &'static Kernel {
    static BEST: OnceLock<Kernel> = OnceLock::new();
    BEST.get_or_init(|| {
        let all = available();
        let forced = std::env::var("KBDB_VECTOR_KERNEL").ok();
        forced
            .and_then(|name| all.iter().find(|k| k.name == name).copied())
            .unwrap_or(all[0])
    })
}

/// The portable kernel (the reference).
pub fn scalar() -> Kernel {
    scalar::kernel()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_is_available_and_scalar_is_last() {
        let all = available();
        assert_eq!(all.last().map(|k| k.name()), Some("scalar"));
        assert!(all.iter().any(|k| k.name() == best().name()));
    }

    #[test]
    fn dot_rows_matches_dot() {
        let dims = 19;
        let stride = KBID_LEN + dims * 4;
        let records: Vec<u8> = (0..stride * 5).map(|i| (i % 7) as u8).collect();
        let q: Vec<f32> = (0..dims).map(|i| i as f32 * 0.5 - 3.0).collect();
        for k in available() {
            let rows = [4u32, 0, 2];
            let mut out = [0f32; 3];
            k.dot_rows(&q, &records, stride, &rows, &mut out);
            for (o, &r) in out.iter().zip(&rows) {
                let at = r as usize * stride + KBID_LEN;
                assert_eq!(*o, k.dot(&q, &records[at..at + dims * 4]), "{}", k.name());
            }
        }
    }

    #[test]
    fn dot_rows_many_matches_dot_rows_bit_for_bit() {
        for dims in [1usize, 15, 16, 17, 63, 64, 65, 384, 385] {
            let stride = KBID_LEN + dims * 4 + 3; // odd stride: unaligned records
            let records: Vec<u8> = (0..stride * 9)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 & 0x3f)
                .collect();
            let queries: Vec<Vec<f32>> = (0..9)
                .map(|j| {
                    (0..dims)
                        .map(|i| ((i * 7 + j * 13) % 17) as f32 * 0.37 - 2.9)
                        .collect()
                })
                .collect();
            let rows = [8u32, 0, 3, 3, 5];
            // Every remainder of the register blocks (4 queries for AVX-512, 2 for AVX2).
            for (nq, k) in
                (1..=queries.len()).flat_map(|nq| available().into_iter().map(move |k| (nq, k)))
            {
                let qs: Vec<&[f32]> = queries[..nq].iter().map(Vec::as_slice).collect();
                let mut many = vec![0f32; rows.len() * qs.len()];
                k.dot_rows_many(&qs, &records, stride, &rows, &mut many);
                for (i, q) in qs.iter().enumerate() {
                    let mut one = [0f32; 5];
                    k.dot_rows(q, &records, stride, &rows, &mut one);
                    for (j, s) in one.iter().enumerate() {
                        assert_eq!(
                            many[j * qs.len() + i].to_bits(),
                            s.to_bits(),
                            "{} dims {dims} query {i} row {j}",
                            k.name()
                        );
                    }
                }
            }
        }
    }
}
