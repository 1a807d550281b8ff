//! AVX2 + FMA kernel (x86_64): 8-wide, four accumulators (32 components per step), an
//! 8-wide step, then a scalar tail. Loads are unaligned (`loadu`).

use std::arch::x86_64::*;

use super::Kernel;
use crate::vector::KBID_LEN;

pub(super) fn detect() -> Option<Kernel> {
    (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
        .then(|| Kernel::new("avx2", dot_ptr, dot_rows))
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
