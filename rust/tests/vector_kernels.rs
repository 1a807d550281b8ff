//! One shared test against every dot-product kernel this CPU supports: each agrees with
//! the scalar reference within 1e-4 of `Σ |q[i] · v[i]|` (the kernels sum in different
//! orders and with FMA), for random dimensions including non-multiples of 4, 8 and 16,
//! at every byte alignment of the stored vector, through both `dot` and `dot_rows`.

use kbdb_core::vector::kernel::{self, Kernel};
use proptest::prelude::*;

const TOLERANCE: f32 = 1e-4;

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bound(q: &[f32], v: &[f32]) -> f32 {
    q.iter().zip(v).map(|(a, b)| (a * b).abs()).sum::<f32>() * TOLERANCE + 1e-30
}

fn check(k: &Kernel, q: &[f32], v: &[f32], offset: usize) -> Result<(), TestCaseError> {
    let scalar = kernel::scalar();
    let mut stored = vec![0xAAu8; offset];
    stored.extend(le(v));
    let want = scalar.dot(q, &stored[offset..]);
    let got = k.dot(q, &stored[offset..]);
    prop_assert!(
        (got - want).abs() <= bound(q, v),
        "{} dims {} offset {offset}: {got} vs scalar {want}",
        k.name(),
        q.len()
    );
    Ok(())
}

fn vectors() -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    (0usize..530).prop_flat_map(|d| {
        (
            prop::collection::vec(-10.0f32..10.0, d),
            prop::collection::vec(-10.0f32..10.0, d),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_kernel_matches_scalar((q, v) in vectors(), offset in 0usize..16) {
        for k in kernel::available() {
            check(&k, &q, &v, offset)?;
        }
    }

    #[test]
    fn dot_rows_matches_dot_for_every_kernel(
        dims in 1usize..100,
        n in 1usize..40,
        seed in any::<u64>(),
    ) {
        let stride = 16 + dims * 4 + (seed % 3) as usize; // records may be padded
        let records: Vec<u8> = (0..n * stride)
            .map(|i| ((i as u64).wrapping_mul(seed | 1) >> 7) as u8 & 0x3f)
            .collect();
        let q: Vec<f32> = (0..dims).map(|i| ((i * 37 % 17) as f32 - 8.0) / 8.0).collect();
        let rows: Vec<u32> = (0..n as u32).filter(|r| (seed >> (r % 64)) & 1 == 1).collect();
        for k in kernel::available() {
            let mut out = vec![0f32; rows.len()];
            k.dot_rows(&q, &records, stride, &rows, &mut out);
            for (o, &r) in out.iter().zip(&rows) {
                let at = r as usize * stride + 16;
                prop_assert_eq!(o.to_bits(), k.dot(&q, &records[at..at + dims * 4]).to_bits());
            }
        }
    }
}

#[test]
fn named_kernels_are_present_on_this_cpu() {
    let names: Vec<&str> = kernel::available().iter().map(|k| k.name()).collect();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            assert!(names.contains(&"avx512"));
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            assert!(names.contains(&"avx2"));
        }
    }
    #[cfg(target_arch = "aarch64")]
    assert!(names.contains(&"neon"));
    assert_eq!(names.last(), Some(&"scalar"));
    println!(
        "kernels on this CPU: {names:?}; scans use {}",
        kernel::best().name()
    );
}

#[test]
fn exact_on_small_integers() {
    // Integer-valued inputs sum exactly in any order: every kernel must agree bit for bit.
    for dims in [
        1usize, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 384, 385, 1000,
    ] {
        let q: Vec<f32> = (0..dims).map(|i| (i % 5) as f32 - 2.0).collect();
        let v: Vec<f32> = (0..dims).map(|i| (i % 7) as f32 - 3.0).collect();
        let want: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
        for k in kernel::available() {
            assert_eq!(k.dot(&q, &le(&v)), want, "{} dims {dims}", k.name());
        }
    }
}
