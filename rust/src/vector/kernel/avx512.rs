//! AVX-512F kernel (x86_64): 16-wide, four accumulators (64 components per step), a
//! 16-wide step, and one masked load for the last `n % 16` components (masked-off lanes
//! are not read, so no byte past the vector is touched). Loads are unaligned (`loadu`).

use std::arch::x86_64::*;

use super::Kernel;
use crate::vector::KBID_LEN;

pub(super) fn detect() -> Option<Kernel> {
    is_x86_feature_detected!("avx512f")
        .then(|| Kernel::new("avx512", dot_ptr, dot_rows).with_many(dot_rows_many))
}

/// # Safety
/// The CPU supports AVX-512F; `q` points at `n` f32s and `v` at `n * 4` readable bytes.
#[target_feature(enable = "avx512f")]
unsafe fn dot_ptr(q: *const f32, v: *const u8, n: usize) -> f32 {
    let v = v.cast::<f32>();
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (every load below): `i + 16 <= n` at each full load; the masked load reads
    // only lanes `i..n`. `loadu` accepts any alignment.
    unsafe {
        while i + 64 <= n {
            for (j, a) in acc.iter_mut().enumerate() {
                let k = i + 16 * j;
                *a = _mm512_fmadd_ps(_mm512_loadu_ps(q.add(k)), _mm512_loadu_ps(v.add(k)), *a);
            }
            i += 64;
        }
        while i + 16 <= n {
            acc[0] = _mm512_fmadd_ps(_mm512_loadu_ps(q.add(i)), _mm512_loadu_ps(v.add(i)), acc[0]);
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = ((1u32 << (n - i)) - 1) as u16;
            let a = _mm512_maskz_loadu_ps(mask, q.add(i));
            let b = _mm512_maskz_loadu_ps(mask, v.add(i));
            acc[1] = _mm512_fmadd_ps(a, b, acc[1]);
        }
    }
    let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    _mm512_reduce_add_ps(s)
}

/// # Safety
/// The CPU supports AVX-512F; every row's vector lies inside `records` (checked by
/// `Kernel::dot_rows`).
#[target_feature(enable = "avx512f")]
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

/// `dot_ptr` of `Q` queries with one vector: each 16 components of `v` are loaded once and
/// multiplied into every query's accumulators. Per query, the accumulators, the order of
/// the FMAs and the reduction are those of `dot_ptr`, so every score is the same bits.
///
/// # Safety
/// As `dot_ptr`, for every query.
#[target_feature(enable = "avx512f")]
unsafe fn dot_block<const Q: usize>(q: [*const f32; Q], v: *const u8, n: usize) -> [f32; Q] {
    let v = v.cast::<f32>();
    let mut acc = [[_mm512_setzero_ps(); 4]; Q];
    let mut i = 0;
    // SAFETY (every load below): as in `dot_ptr`.
    unsafe {
        while i + 64 <= n {
            for j in 0..4 {
                let k = i + 16 * j;
                let x = _mm512_loadu_ps(v.add(k));
                for (a, q) in acc.iter_mut().zip(&q) {
                    a[j] = _mm512_fmadd_ps(_mm512_loadu_ps(q.add(k)), x, a[j]);
                }
            }
            i += 64;
        }
        while i + 16 <= n {
            let x = _mm512_loadu_ps(v.add(i));
            for (a, q) in acc.iter_mut().zip(&q) {
                a[0] = _mm512_fmadd_ps(_mm512_loadu_ps(q.add(i)), x, a[0]);
            }
            i += 16;
        }
        if i < n {
            let mask: __mmask16 = ((1u32 << (n - i)) - 1) as u16;
            let x = _mm512_maskz_loadu_ps(mask, v.add(i));
            for (a, q) in acc.iter_mut().zip(&q) {
                a[1] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, q.add(i)), x, a[1]);
            }
        }
    }
    acc.map(|a| {
        let s = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
        _mm512_reduce_add_ps(s)
    })
}

/// Four queries at a time: their 16 accumulators and the loads fit the 32 registers.
///
/// # Safety
/// As `super::rows_by_blocks`: the CPU supports AVX512F; the checks of
/// `Kernel::dot_rows_many` passed.
unsafe fn dot_rows_many(
    queries: &[&[f32]],
    records: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [f32],
) {
    // SAFETY: as this function's contract.
    unsafe { super::rows_by_blocks::<4>(dot_block::<4>, queries, records, stride, rows, out) }
}
