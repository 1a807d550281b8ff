//! NEON kernel (aarch64): 4-wide, four accumulators (16 components per step), a 4-wide
//! step, then a scalar tail. Stored vectors are loaded as bytes (`vld1q_u8`, no alignment
//! requirement) and reinterpreted as f32, since records start at odd offsets.

use std::arch::aarch64::*;

use super::Kernel;
use crate::vector::KBID_LEN;

pub(super) fn detect() -> Option<Kernel> {
    std::arch::is_aarch64_feature_detected!("neon").then(|| Kernel::new("neon", dot_ptr, dot_rows))
}

/// # Safety
/// The CPU supports NEON; `q` points at `n` f32s and `v` at `n * 4` readable bytes.
#[target_feature(enable = "neon")]
unsafe fn dot_ptr(q: *const f32, v: *const u8, n: usize) -> f32 {
    let mut acc = [vdupq_n_f32(0.0); 4];
    let mut i = 0;
    // SAFETY (every load below): `i + width <= n` at each load, so it stays inside the
    // caller's ranges; `q` is f32-aligned and `v` is read as bytes.
    unsafe {
        while i + 16 <= n {
            for (j, a) in acc.iter_mut().enumerate() {
                let k = i + 4 * j;
                let b = vreinterpretq_f32_u8(vld1q_u8(v.add(4 * k)));
                *a = vfmaq_f32(*a, vld1q_f32(q.add(k)), b);
            }
            i += 16;
        }
        while i + 4 <= n {
            let b = vreinterpretq_f32_u8(vld1q_u8(v.add(4 * i)));
            acc[0] = vfmaq_f32(acc[0], vld1q_f32(q.add(i)), b);
            i += 4;
        }
        let mut tail = 0f32;
        while i < n {
            tail += *q.add(i)
                * f32::from_bits(u32::from_le(v.add(4 * i).cast::<u32>().read_unaligned()));
            i += 1;
        }
        let s = vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3]));
        vaddvq_f32(s) + tail
    }
}

/// # Safety
/// The CPU supports NEON; every row's vector lies inside `records` (checked by
/// `Kernel::dot_rows`).
#[target_feature(enable = "neon")]
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
