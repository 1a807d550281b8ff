//! AVX2 q8 kernel (x86_64): codes widened from u8 to i16 (`vpmovzxbw`), multiplied with
//! the i16 query and summed in pairs into i32 (`vpmaddwd`), exact (no saturation, unlike
//! `vpmaddubsw` with 255 × 127 pairs). Rows are 64-byte multiples, so there is no tail.

use std::arch::x86_64::*;

use super::kernel::Q8Kernel;

pub(super) fn detect() -> Option<Q8Kernel> {
    is_x86_feature_detected!("avx2").then(|| Q8Kernel::new("avx2", rows))
}

/// # Safety
/// The CPU supports AVX2; `q` points at `stride` i16s, `c` at `stride` bytes, and
/// `stride` is a multiple of 64.
#[target_feature(enable = "avx2")]
unsafe fn dot(q: *const i16, c: *const u8, stride: usize) -> i32 {
    let mut acc = [_mm256_setzero_si256(); 4];
    let mut j = 0;
    // SAFETY (every load): `j + 64 <= stride` at each step; unaligned loads.
    unsafe {
        while j + 64 <= stride {
            for (k, a) in acc.iter_mut().enumerate() {
                let at = j + 16 * k;
                let codes = _mm256_cvtepu8_epi16(_mm_loadu_si128(c.add(at).cast()));
                let query = _mm256_loadu_si256(q.add(at).cast());
                *a = _mm256_add_epi32(*a, _mm256_madd_epi16(codes, query));
            }
            j += 64;
        }
    }
    let s = _mm256_add_epi32(
        _mm256_add_epi32(acc[0], acc[1]),
        _mm256_add_epi32(acc[2], acc[3]),
    );
    let x = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
    let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b01_00_11_10>(x));
    let x = _mm_add_epi32(x, _mm_shuffle_epi32::<0b10_11_00_01>(x));
    _mm_cvtsi128_si32(x)
}

/// # Safety
/// The CPU supports AVX2; every row lies inside `codes`, the query is `stride` long and
/// `stride` a multiple of 64 (checked by `Q8Kernel::dot_rows`).
#[target_feature(enable = "avx2")]
unsafe fn rows(
    _q8: &[i8],
    q16: &[i16],
    codes: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [i32],
) {
    let base = codes.as_ptr();
    for (o, &r) in out.iter_mut().zip(rows) {
        // SAFETY: the row lies inside `codes` (caller) and the feature is present.
        *o = unsafe { dot(q16.as_ptr(), base.add(r as usize * stride), stride) };
    }
}
