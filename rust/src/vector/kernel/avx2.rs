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

/// Two queries at a time: their 8 accumulators, the record's and a query's loads fit the
/// 16 registers.
///
/// # Safety
/// As `super::rows_by_blocks`: the CPU supports AVX2 and FMA; the checks of
/// `Kernel::dot_rows_many` passed.
unsafe fn dot_rows_many(
    queries: &[&[f32]],
    records: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [f32],
) {
    // SAFETY: as this function's contract.
    unsafe { super::rows_by_blocks::<2>(dot_block::<2>, queries, records, stride, rows, out) }
}
