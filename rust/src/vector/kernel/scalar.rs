//! The portable kernel: eight independent lanes (so the compiler can keep them in
//! registers and the sum order resembles the SIMD kernels'), then a pairwise reduction.
//! It is the reference every other kernel is tested against.

use super::Kernel;
use crate::vector::{COMPONENT_BYTES, KBID_LEN};

const LANES: usize = 8;

pub(super) fn kernel() -> Kernel {
    Kernel::new("scalar", dot_ptr, dot_rows)
}

#[inline]
fn component(v: &[u8], i: usize) -> f32 {
    let at = i * COMPONENT_BYTES;
    f32::from_le_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]])
}

/// `Σ q[i] · v[i]`; `v` holds at least `q.len()` little-endian f32s.
fn dot(q: &[f32], v: &[u8]) -> f32 {
    let mut acc = [0f32; LANES];
    let full = q.len() / LANES * LANES;
    for (qc, vc) in q[..full]
        .chunks_exact(LANES)
        .zip(v.chunks_exact(LANES * COMPONENT_BYTES))
    {
        for (j, a) in acc.iter_mut().enumerate() {
            *a += qc[j] * component(vc, j);
        }
    }
    for (i, &x) in q.iter().enumerate().skip(full) {
        acc[i - full] += x * component(v, i);
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// # Safety
/// `q` points at `n` f32s and `v` at `n * 4` readable bytes.
unsafe fn dot_ptr(q: *const f32, v: *const u8, n: usize) -> f32 {
    // SAFETY: the caller guarantees both ranges are readable; `q` is an aligned f32 slice.
    let (q, v) = unsafe {
        (
            std::slice::from_raw_parts(q, n),
            std::slice::from_raw_parts(v, n * COMPONENT_BYTES),
        )
    };
    dot(q, v)
}

/// # Safety
/// None beyond the signature: slicing is bounds-checked here.
unsafe fn dot_rows(q: &[f32], records: &[u8], stride: usize, rows: &[u32], out: &mut [f32]) {
    let len = q.len() * COMPONENT_BYTES;
    for (o, &r) in out.iter_mut().zip(rows) {
        let at = r as usize * stride + KBID_LEN;
        *o = dot(q, &records[at..at + len]);
    }
}
