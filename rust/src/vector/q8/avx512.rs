//! AVX-512 VNNI q8 kernel (x86_64): one `vpdpbusd` per 64 codes (u8 code × i8 query, four
//! products summed into each i32 lane), two accumulators, one horizontal sum per row.
//! Rows are 64-byte multiples, so there is no tail.

use std::arch::x86_64::*;

use super::kernel::Q8Kernel;

pub(super) fn detect() -> Option<Q8Kernel> {
    (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
        .then(|| Q8Kernel::new("avx512vnni", rows))
}

/// # Safety
/// The CPU supports AVX-512F and VNNI; `q` and `c` point at `stride` readable bytes and
/// `stride` is a multiple of 64.
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn dot(q: *const i8, c: *const u8, stride: usize) -> i32 {
    let mut a0 = _mm512_setzero_si512();
    let mut a1 = _mm512_setzero_si512();
    let mut j = 0;
    // SAFETY (every load): `j + 64 <= stride` at each load; `loadu` takes any alignment.
    unsafe {
        while j + 128 <= stride {
            a0 = _mm512_dpbusd_epi32(
                a0,
                _mm512_loadu_si512(c.add(j).cast()),
                _mm512_loadu_si512(q.add(j).cast()),
            );
            a1 = _mm512_dpbusd_epi32(
                a1,
                _mm512_loadu_si512(c.add(j + 64).cast()),
                _mm512_loadu_si512(q.add(j + 64).cast()),
            );
            j += 128;
        }
        if j < stride {
            a0 = _mm512_dpbusd_epi32(
                a0,
                _mm512_loadu_si512(c.add(j).cast()),
                _mm512_loadu_si512(q.add(j).cast()),
            );
        }
    }
    _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a1))
}

/// # Safety
/// The CPU supports AVX-512F and VNNI; every row lies inside `codes`, the query is
/// `stride` long and `stride` a multiple of 64 (checked by `Q8Kernel::dot_rows`).
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn rows(
    q8: &[i8],
    _q16: &[i16],
    codes: &[u8],
    stride: usize,
    rows: &[u32],
    out: &mut [i32],
) {
    let base = codes.as_ptr();
    for (o, &r) in out.iter_mut().zip(rows) {
        // SAFETY: the row lies inside `codes` (caller) and the features are present.
        *o = unsafe { dot(q8.as_ptr(), base.add(r as usize * stride), stride) };
    }
}
