//! Integer dot products of a quantized query with q8 rows, one instruction set per file,
//! chosen once at run time like the f32 kernels (`super::super::kernel`).
//!
//! | file        | instruction set                       | per 64 codes                       |
//! |-------------|---------------------------------------|------------------------------------|
//! | `avx512.rs` | AVX-512 VNNI (x86_64), two row orders | one `vpdpbusd` (u8 × i8, 4 to i32) |
//! | `avx2.rs`   | AVX2 (x86_64)                         | widen u8 to i16, `vpmaddwd`, ×4    |
//! | `neon.rs`   | NEON (aarch64)                        | widen to i16, `smlal` into i32     |
//! | here        | portable Rust                         | the reference                      |
//!
//! Every kernel computes the exact `Σ q[j] × code[j]` in i32 (no saturation: at most
//! 65 535 dimensions × 255 × 127 < 2^31), so all of them agree bit for bit with the
//! scalar one (`rust/tests/vector_q8.rs`); the choice never changes a result. The
//! environment variable `KBDB_Q8_KERNEL` (`avx512vnni`, `avx512vnni-row`, `avx2`, `neon`,
//! `scalar`) forces an available kernel, for benchmarks; an unknown or unavailable name is
//! ignored.
//!
//! As with [`crate::vector::kernel::Kernel`], a [`Q8Kernel`] can only be built by its
//! file's `detect`, after the CPU feature check.

use std::sync::OnceLock;

use super::Params;

/// `rows(q8, q16, codes, stride, rows, out)`: for each row `r`, `Σ q8[j] × codes[r ×
/// stride + j]` over `j < stride`; bounds checked by [`Q8Kernel::dot_rows`].
type Rows =
    unsafe fn(q8: &[i8], q16: &[i16], codes: &[u8], stride: usize, rows: &[u32], out: &mut [i32]);

/// One instruction set's q8 dot products.
#[derive(Clone, Copy)]
pub struct Q8Kernel {
    name: &'static str,
    rows: Rows,
}

impl std::fmt::Debug for Q8Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A query quantized against a q8 file's parameters, padded to the row stride.
#[derive(Debug, Clone)]
pub struct Q8Query {
    /// `round(q[j] × scale[j] × 127 / max_j |q[j] × scale[j]|)`; 0 past the dimensions.
    pub q8: Vec<i8>,
    /// The same values widened (for the kernels that multiply in i16).
    pub q16: Vec<i16>,
}

impl Q8Query {
    /// Folds `q` into the per-dimension scales and quantizes it symmetrically to i8. The
    /// per-dimension offsets add `Σ q[j] × offset[j]` to every row alike, so they are left
    /// out: the integer scores order rows as `Σ q[j] × decoded[j]` does, up to rounding.
    pub fn new(q: &[f32], params: &Params, stride: usize) -> Q8Query {
        let folded: Vec<f32> = q.iter().zip(&params.scale).map(|(a, s)| a * s).collect();
        let max = folded.iter().fold(0f32, |m, x| m.max(x.abs()));
        let mut q8 = vec![0i8; stride];
        if max > 0.0 && max.is_finite() {
            let k = 127.0 / max;
            for (o, x) in q8.iter_mut().zip(&folded) {
                *o = (x * k).round().clamp(-127.0, 127.0) as i8;
            }
        }
        let q16 = q8.iter().map(|&x| i16::from(x)).collect();
        Q8Query { q8, q16 }
    }
}

impl Q8Kernel {
    pub(super) fn new(name: &'static str, rows: Rows) -> Q8Kernel {
        Q8Kernel { name, rows }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Integer scores of `rows` (indices of `stride`-byte rows of `codes`) into
    /// `out[..rows.len()]`.
    ///
    /// # Panics
    /// If the query is not `stride` long, `stride` is not a positive multiple of 64, a row
    /// is past the end of `codes`, or `out` is shorter than `rows`: all caller bugs.
    pub fn dot_rows(
        &self,
        q: &Q8Query,
        codes: &[u8],
        stride: usize,
        rows: &[u32],
        out: &mut [i32],
    ) {
        check_rows(std::slice::from_ref(q), codes, stride, rows, out.len());
        // SAFETY: `self` exists only if `detect` found the CPU features; every row lies
        // inside `codes` and the query covers the whole stride (asserted above).
        unsafe { (self.rows)(&q.q8, &q.q16, codes, stride, rows, out) }
    }

    /// Integer scores of `rows` against each of `queries`: `out[j * queries.len() + i]`
    /// for query `i` and row `rows[j]`, equal to [`Q8Kernel::dot_rows`]'s (integer sums
    /// are exact in any order). Row by row, so each row is read from memory once.
    ///
    /// # Panics
    /// As [`Q8Kernel::dot_rows`], for every query, and if `out` is shorter than
    /// `rows.len() * queries.len()`.
    pub fn dot_rows_many(
        &self,
        queries: &[Q8Query],
        codes: &[u8],
        stride: usize,
        rows: &[u32],
        out: &mut [i32],
    ) {
        check_rows(queries, codes, stride, rows, out.len());
        if queries.is_empty() {
            return;
        }
        for (scores, r) in out
            .chunks_exact_mut(queries.len())
            .zip(rows.chunks_exact(1))
        {
            for (o, q) in scores.chunks_exact_mut(1).zip(queries) {
                // SAFETY: as in `dot_rows` (asserted above for every query).
                unsafe { (self.rows)(&q.q8, &q.q16, codes, stride, r, o) }
            }
        }
    }
}

/// The bounds the kernels rely on: `stride` a positive multiple of 64, every query padded
/// to it, every row inside `codes`, `out_len` scores for every row and query.
fn check_rows(queries: &[Q8Query], codes: &[u8], stride: usize, rows: &[u32], out_len: usize) {
    assert!(
        stride > 0 && stride.is_multiple_of(64),
        "q8 stride must be a multiple of 64"
    );
    assert!(
        queries
            .iter()
            .all(|q| q.q8.len() == stride && q.q16.len() == stride),
        "query not padded to the stride"
    );
    assert!(
        out_len >= rows.len() * queries.len(),
        "score buffer too short"
    );
    let count = codes.len() / stride;
    assert!(
        rows.iter().all(|&r| (r as usize) < count),
        "row past the end of the codes"
    );
}

/// # Safety
/// None beyond the signature: slicing is bounds-checked here.
unsafe fn scalar_rows(
    q8: &[i8],
    _q16: &[i16],
    codes: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [i32],
) {
    for (o, &r) in out.iter_mut().zip(rows) {
        let at = r as usize * stride;
        *o = codes[at..at + stride]
            .iter()
            .zip(q8)
            .map(|(&c, &q)| i32::from(c) * i32::from(q))
            .sum();
    }
}

/// Every q8 kernel this CPU supports, widest first; scalar is always last.
pub fn available() -> Vec<Q8Kernel> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        out.extend(super::avx512::detect());
        out.extend(super::avx2::detect());
    }
    #[cfg(target_arch = "aarch64")]
    out.extend(super::neon::detect());
    out.push(scalar());
    out
}

/// The portable kernel (the reference).
pub fn scalar() -> Q8Kernel {
    Q8Kernel::new("scalar", scalar_rows)
}

/// The kernel used by quantized scans (cached; see the module docs for `KBDB_Q8_KERNEL`).
pub fn best() -> &'static Q8Kernel {
    static BEST: OnceLock<Q8Kernel> = OnceLock::new();
    BEST.get_or_init(|| {
        let all = available();
        std::env::var("KBDB_Q8_KERNEL")
            .ok()
            .and_then(|name| all.iter().find(|k| k.name == name).copied())
            .unwrap_or(all[0])
    })
}
