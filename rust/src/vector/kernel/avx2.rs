//! AVX2 + FMA kernel (x86_64): 8-wide, four accumulators (32 components per step), an
//! 8-wide step, then a scalar tail. Loads are unaligned (`loadu`).

use std::arch::x86_64::*;

use super::Kernel;
use crate::vector::KBID_LEN;

pub(super) fn detect() -> Option<Kernel> {
    (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
        .then(|| Kernel::new("avx2", dot_ptr, dot_rows).with_many(dot_rows_many))
}

/// # Safety
/// The CPU supports AVX2 and FMA; `q` points at `n` f32s and `v` at `n * 4` readable bytes.
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_ptr(q: *const f32, v: *const u8, n: usize) -> f32 {
    let v = v.cast::<f32>();
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (every load below): `i + width <= n` at each load, so it stays inside the
    // caller's ranges; `loadu` and `read_unaligned` accept any alignment.
    unsafe {
        while i + 32 <= n {
            for (j, a) in acc.iter_mut().enumerate() {
                let k = i + 8 * j;
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(q.add(k)), _mm256_loadu_ps(v.add(k)), *a);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(q.add(i)), _mm256_loadu_ps(v.add(i)), acc[0]);
            i += 8;
        }
        let mut tail = 0f32;
        while i < n {
            tail +=
                *q.add(i) * f32::from_bits(u32::from_le(v.add(i).cast::<u32>().read_unaligned()));
            i += 1;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let x = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps::<1>(s));
        let x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        let x = _mm_add_ss(x, _mm_shuffle_ps::<0x55>(x, x));
        _mm_cvtss_f32(x) + tail
    }
}

/// # Safety
/// The CPU supports AVX2 and FMA; every row's vector lies inside `records` (checked by
/// `Kernel::dot_rows`).
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_rows(q: &[f32], records: &[u8], stride: usize, rows: &[u32], out: &mut [f32]) {
    let base = records.as_ptr();
    for (o, &r) in out.iter_mut().zip(rows) {
        // SAFETY: the record lies inside `records` (caller) and the features are present.
        *o = unsafe {
            dot_ptr(
                q.as_ptr(),
                base.add(r as usize * stride + KBID_LEN),
                q.len(),
            )
        };
    }
}

/// `dot_ptr` of `Q` queries with one vector: each 8 components of `v` are loaded once and
/// multiplied into every query's accumulators. Per query, the accumulators, the order of
/// the FMAs, the scalar tail and the reduction are those of `dot_ptr`, so every score is
/// the same bits.
///
/// # Safety
/// As `dot_ptr`, for every query.
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_block<const Q: usize>(q: [*const f32; Q], v: *const u8, n: usize) -> [f32; Q] {
    let v = v.cast::<f32>();
    let mut acc = [[_mm256_setzero_ps(); 4]; Q];
    let mut tail = [0f32; Q];
    let mut i = 0;
    // SAFETY (every load below): as in `dot_ptr`.
    unsafe {
        while i + 32 <= n {
            for j in 0..4 {
                let k = i + 8 * j;
                let x = _mm256_loadu_ps(v.add(k));
                for (a, q) in acc.iter_mut().zip(&q) {
                    a[j] = _mm256_fmadd_ps(_mm256_loadu_ps(q.add(k)), x, a[j]);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            let x = _mm256_loadu_ps(v.add(i));
            for (a, q) in acc.iter_mut().zip(&q) {
                a[0] = _mm256_fmadd_ps(_mm256_loadu_ps(q.add(i)), x, a[0]);
            }
            i += 8;
        }
        while i < n {
            let x = f32::from_bits(u32::from_le(v.add(i).cast::<u32>().read_unaligned()));
            for (t, q) in tail.iter_mut().zip(&q) {
                *t += *q.add(i) * x;
            }
            i += 1;
        }
    }
    let mut out = [0f32; Q];
    for ((o, a), t) in out.iter_mut().zip(&acc).zip(tail) {
        let s = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
        let x = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps::<1>(s));
        let x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        let x = _mm_add_ss(x, _mm_shuffle_ps::<0x55>(x, x));
        *o = _mm_cvtss_f32(x) + t;
    }
    out
}

/// # Safety
/// The CPU supports AVX2 and FMA; every row's vector lies inside `records`, every query
/// is as long as the vectors, `out` holds `rows.len() * queries.len()` scores (checked by
/// `Kernel::dot_rows_many`).
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_rows_many(
    queries: &[&[f32]],
    records: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [f32],
) {
    // Two queries' 8 accumulators, the record's and a query's load fit the 16 registers.
    const BLOCK: usize = 2;
    let Some(n) = queries.first().map(|q| q.len()) else {
        return;
    };
    let base = records.as_ptr();
    let ptrs: Vec<*const f32> = queries.iter().map(|q| q.as_ptr()).collect();
    for (scores, &r) in out.chunks_exact_mut(queries.len()).zip(rows) {
        // SAFETY: the record lies inside `records` (caller).
        let v = unsafe { base.add(r as usize * stride + KBID_LEN) };
        let mut blocks = ptrs.chunks_exact(BLOCK);
        let mut at = 0;
        for b in &mut blocks {
            // SAFETY: the features are present; the queries and record as the caller says.
            let got = unsafe { dot_block::<BLOCK>([b[0], b[1]], v, n) };
            scores[at..at + BLOCK].copy_from_slice(&got);
            at += BLOCK;
        }
        if let [a] = *blocks.remainder() {
            // SAFETY: as above.
            scores[at] = unsafe { dot_block::<1>([a], v, n) }[0];
        }
    }
}
