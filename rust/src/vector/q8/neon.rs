//! NEON q8 kernel (aarch64): codes widened from u8 to i16 (`uxtl`), multiplied with the
//! i16 query and accumulated into i32 (`smlal`/`smlal2`), exact. Rows are 64-byte
//! multiples, so there is no tail.

use std::arch::aarch64::*;

use super::kernel::Q8Kernel;

pub(super) fn detect() -> Option<Q8Kernel> {
    std::arch::is_aarch64_feature_detected!("neon").then(|| Q8Kernel::new("neon", rows))
}

/// # Safety
/// The CPU supports NEON; `q` points at `stride` i16s, `c` at `stride` bytes, and
/// `stride` is a multiple of 64.
#[target_feature(enable = "neon")]
unsafe fn dot(q: *const i16, c: *const u8, stride: usize) -> i32 {
    let mut a0 = vdupq_n_s32(0);
    let mut a1 = vdupq_n_s32(0);
    let mut j = 0;
    // SAFETY (every load): `j + 16 <= stride` at each step; NEON loads take any alignment.
    unsafe {
        while j + 16 <= stride {
            let codes = vld1q_u8(c.add(j));
            let lo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(codes)));
            let hi = vreinterpretq_s16_u16(vmovl_high_u8(codes));
            let q_lo = vld1q_s16(q.add(j));
            let q_hi = vld1q_s16(q.add(j + 8));
            a0 = vmlal_s16(a0, vget_low_s16(lo), vget_low_s16(q_lo));
            a1 = vmlal_high_s16(a1, lo, q_lo);
            a0 = vmlal_s16(a0, vget_low_s16(hi), vget_low_s16(q_hi));
            a1 = vmlal_high_s16(a1, hi, q_hi);
            j += 16;
        }
    }
    vaddvq_s32(vaddq_s32(a0, a1))
}

/// # Safety
/// The CPU supports NEON; every row lies inside `codes`, the query is `stride` long and
/// `stride` a multiple of 64 (checked by `Q8Kernel::dot_rows`).
#[target_feature(enable = "neon")]
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
