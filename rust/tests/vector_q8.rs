//! The quantized copy `vectors.q8`: every int8 kernel on this CPU equals the scalar one
//! bit for bit; the file is written with `vectors.idx` and kept to its generation; any
//! truncation or flipped bit is `Corrupt`; a q8 of another `vectors.idx` is never used;
//! and quantized searches return exactly the exact scan's results when the candidates
//! cover the true top k (tombstones, appends and allow-lists included).

mod vector_util;

use std::fs;
use std::path::Path;

use kbdb_core::vector::q8::{self, Q8Query, Q8_FILE};
use kbdb_core::vector::{OpenMode, Q8Status, Threads, VectorIndex};
use kbdb_core::Error;
use proptest::prelude::*;
use vector_util::{create_index, dataset, le, unit_vector, Rng};

fn index(dir: &Path, dims: u16, quantized: bool) -> VectorIndex {
    create_index(dir, dims, quantized)
}

fn rows_of(seed: u64, n: usize) -> Vec<u32> {
    (0..n as u32)
        .filter(|r| (seed >> (r % 61)) & 1 == 1)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_q8_kernel_equals_scalar(
        // 1-13 blocks: 6 and 12 (384 and 768 dimensions) take the held-query paths.
        chunks in 1usize..14,
        n in 1usize..24,
        seed in any::<u64>(),
        q in prop::collection::vec(-127i8..=127, 832),
    ) {
        let stride = 64 * chunks;
        let codes: Vec<u8> = (0..n * stride)
            .map(|i| ((i as u64 + 1).wrapping_mul(seed | 1) >> 13) as u8)
            .collect();
        let q8: Vec<i8> = q[..stride].to_vec();
        let query = Q8Query { q16: q8.iter().map(|&x| i16::from(x)).collect(), q8 };
        let rows = rows_of(seed, n);
        let mut want = vec![0i32; rows.len()];
        q8::scalar().dot_rows(&query, &codes, stride, &rows, &mut want);
        for (o, &r) in want.iter().zip(&rows) {
            let at = r as usize * stride;
            let direct: i32 = codes[at..at + stride]
                .iter()
                .zip(&query.q8)
                .map(|(&c, &x)| i32::from(c) * i32::from(x))
                .sum();
            prop_assert_eq!(*o, direct);
        }
        for k in q8::available() {
            // Three spare slots: a kernel writes `out[..rows.len()]` and nothing else.
            let mut got = vec![-7i32; rows.len() + 3];
            k.dot_rows(&query, &codes, stride, &rows, &mut got);
            prop_assert_eq!(&got[..rows.len()], &want[..], "{}", k.name());
            prop_assert_eq!(&got[rows.len()..], &[-7, -7, -7], "{}", k.name());
        }
    }

    #[test]
    fn extreme_codes_and_queries_do_not_saturate(chunks in 1usize..4, sign in any::<bool>()) {
        let stride = 64 * chunks;
        let codes = vec![255u8; stride];
        let v: i8 = if sign { 127 } else { -127 };
        let query = Q8Query { q8: vec![v; stride], q16: vec![i16::from(v); stride] };
        for k in q8::available() {
            let mut out = [0i32; 1];
            k.dot_rows(&query, &codes, stride, &[0], &mut out);
            prop_assert_eq!(out[0], 255 * i32::from(v) * stride as i32, "{}", k.name());
        }
    }
}

#[test]
fn named_q8_kernels_are_present_on_this_cpu() {
    let names: Vec<&str> = q8::available().iter().map(|k| k.name()).collect();
    assert_eq!(names.last(), Some(&"scalar"));
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(names.contains(&"avx2"));
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512vnni") {
        // Both orders are present; which one leads depends on the CPU family.
        assert!(names[0].starts_with("avx512vnni"), "{names:?}");
        assert!(names.contains(&"avx512vnni") && names.contains(&"avx512vnni-row"));
    }
    assert!(names.contains(&q8::best().name()));
}

/// An index of `n` random vectors written with the quantized scan on.
fn built(dir: &Path, n: usize, dims: usize, seed: u64) -> (VectorIndex, Vec<[u8; 16]>, Vec<u8>) {
    let ix = index(dir, dims as u16, true);
    let mut rng = Rng(seed);
    let (kbids, bytes) = dataset(&mut rng, n, dims);
    ix.write(&kbids, &bytes, "m", None, 1).unwrap();
    (ix, kbids, bytes)
}

#[test]
fn write_builds_a_current_q8_and_search_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ix, _, _) = built(dir.path(), 300, 37, 5);
    assert!(dir.path().join(Q8_FILE).exists());
    assert_eq!(ix.q8_status().unwrap(), Q8Status::Current);
    let snap = ix.snapshot();
    assert!(snap.q8.is_some());
    let mut rng = Rng(9);
    for _ in 0..20 {
        let q = unit_vector(&mut rng, 37);
        let exact = snap
            .search_with(&q, 10, None, Threads::Current, true, None)
            .unwrap();
        // Every row a candidate: the quantized path must return the exact answer.
        let all = snap
            .search_with(&q, 10, None, Threads::Current, false, Some(300))
            .unwrap();
        assert_eq!(all, exact);
        let default = snap.search(&q, 10, None, Threads::Current).unwrap();
        assert_eq!(default, exact, "default candidates on 300 vectors");
    }
    // Off: vectors.idx replaced -> vectors.q8 removed, searches exact.
    ix.set_quantized(false).unwrap();
    assert!(ix.snapshot().q8.is_none());
    let mut rng = Rng(6);
    let (kbids, bytes) = dataset(&mut rng, 50, 37);
    ix.write(&kbids, &bytes, "m", None, 2).unwrap();
    assert!(!dir.path().join(Q8_FILE).exists());
    assert_eq!(ix.q8_status().unwrap(), Q8Status::Missing);
}

#[test]
fn side_files_tombstones_and_allow_lists_match_the_exact_scan() {
    let dir = tempfile::tempdir().unwrap();
    let dims = 24;
    let (ix, kbids, bytes) = built(dir.path(), 400, dims, 21);
    let len = dims * 4;
    // Tombstones (deletes and replaced vectors), and appends of new kbids.
    ix.delete(&kbids[..30], 2).unwrap();
    let mut rng = Rng(77);
    let (new_kbids, new_bytes) = dataset(&mut rng, 40, dims);
    ix.append(&new_kbids, &new_bytes, 3).unwrap();
    let replaced: Vec<[u8; 16]> = kbids[100..110].to_vec();
    let mut rbytes = Vec::new();
    for _ in &replaced {
        rbytes.extend(le(&unit_vector(&mut rng, dims)));
    }
    ix.append(&replaced, &rbytes, 4).unwrap();
    let snap = ix.snapshot();
    assert!(snap.q8.is_some(), "side writes keep the q8 of vectors.idx");
    assert!(snap.state.tombstone_count > 0 && snap.state.append_count > 0);
    let allow: Vec<[u8; 16]> = kbids[20..200]
        .iter()
        .chain(&new_kbids[..10])
        .copied()
        .collect();
    for i in 0..15 {
        let q = unit_vector(&mut rng, dims);
        for allow in [None, Some(allow.as_slice())] {
            for threads in [Threads::Current, Threads::Exactly(2)] {
                let exact = snap
                    .search_with(&q, 10, allow, threads, true, None)
                    .unwrap();
                let quant = snap
                    .search_with(&q, 10, allow, threads, false, Some(400))
                    .unwrap();
                assert_eq!(quant, exact, "query {i}");
                for (k, _) in &quant {
                    assert!(!kbids[..30].contains(k), "a deleted kbid came back");
                }
            }
        }
    }
    // Compaction writes a new vectors.idx and a new q8 for it.
    let before = fs::read(dir.path().join(Q8_FILE)).unwrap();
    assert!(ix.compact(true).unwrap());
    let after = fs::read(dir.path().join(Q8_FILE)).unwrap();
    assert_ne!(before, after);
    let snap = ix.snapshot();
    assert_eq!(ix.q8_status().unwrap(), Q8Status::Current);
    let q = unit_vector(&mut rng, dims);
    assert_eq!(
        snap.search_with(&q, 10, None, Threads::Current, false, Some(1000))
            .unwrap(),
        snap.search_with(&q, 10, None, Threads::Current, true, None)
            .unwrap()
    );
    let _ = (bytes, len);
}

#[test]
fn a_q8_of_another_generation_is_never_used_and_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let (ix, _, _) = built(dir.path(), 120, 16, 3);
    let old = fs::read(dir.path().join(Q8_FILE)).unwrap();
    let mut rng = Rng(4);
    let (kbids, bytes) = dataset(&mut rng, 120, 16);
    ix.write(&kbids, &bytes, "m", None, 2).unwrap();
    // Put the previous generation's (valid) file back.
    fs::write(dir.path().join(Q8_FILE), &old).unwrap();
    let other = VectorIndex::open(dir.path(), OpenMode::Existing).unwrap();
    other.set_quantized(true).unwrap();
    assert_eq!(other.q8_status().unwrap(), Q8Status::Stale);
    assert!(other.snapshot().q8.is_none(), "a stale q8 is not scanned");
    assert!(other.verify().is_empty(), "stale is not damage");
    let q = unit_vector(&mut rng, 16);
    let snap = other.snapshot();
    assert_eq!(
        snap.search(&q, 5, None, Threads::Current).unwrap(),
        snap.search_with(&q, 5, None, Threads::Current, true, None)
            .unwrap()
    );
    // The next write rebuilds it; `ensure_quantized` does so without any change.
    assert!(other.ensure_quantized().unwrap());
    assert_eq!(other.q8_status().unwrap(), Q8Status::Current);
    assert!(other.snapshot().q8.is_some());
    assert!(!other.ensure_quantized().unwrap());
    // A reader that was open before picks the new file up on reload.
    assert!(ix.reload().unwrap() || ix.snapshot().q8.is_some());
    assert!(ix.snapshot().q8.is_some());
}

fn q8_open_err(dir: &Path) -> Option<String> {
    let ix = VectorIndex::open(dir, OpenMode::Existing).ok()?;
    match ix.set_quantized(true) {
        Err(e @ (Error::Corrupt { .. } | Error::FormatVersion { .. })) => {
            assert!(!ix.verify().is_empty(), "verify sees it too");
            Some(e.to_string())
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(()) => None,
    }
}

#[test]
fn every_truncation_and_bit_flip_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (_ix, _, _) = built(dir.path(), 9, 5, 8);
    let path = dir.path().join(Q8_FILE);
    let good = fs::read(&path).unwrap();
    assert_eq!(good.len(), q8::rows_offset(5) + 9 * 64 + 8);
    for cut in 0..good.len() {
        fs::write(&path, &good[..cut]).unwrap();
        assert!(q8_open_err(dir.path()).is_some(), "cut at {cut}");
    }
    for i in 0..good.len() {
        for bit in [0u8, 3, 7] {
            let mut b = good.clone();
            b[i] ^= 1 << bit;
            fs::write(&path, &b).unwrap();
            let err = q8_open_err(dir.path());
            assert!(err.is_some(), "byte {i} bit {bit}");
        }
    }
    let mut bad = good.clone();
    bad[..4].copy_from_slice(b"KBVX");
    fs::write(&path, &bad).unwrap();
    assert!(q8_open_err(dir.path()).unwrap().contains("magic"));
    let mut extended = good.clone();
    extended.extend_from_slice(&[0; 64]);
    fs::write(&path, &extended).unwrap();
    assert!(q8_open_err(dir.path()).is_some());
    fs::write(&path, &good).unwrap();
    assert!(q8_open_err(dir.path()).is_none());
}

#[test]
fn a_rebuild_repairs_a_damaged_q8() {
    let dir = tempfile::tempdir().unwrap();
    let (ix, kbids, bytes) = built(dir.path(), 50, 12, 2);
    let path = dir.path().join(Q8_FILE);
    let mut b = fs::read(&path).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    fs::write(&path, &b).unwrap();
    assert!(ix.reload().is_err() || q8_open_err(dir.path()).is_some());
    ix.write(&kbids, &bytes, "m", None, 5).unwrap();
    assert_eq!(ix.q8_status().unwrap(), Q8Status::Current);
    assert!(q8_open_err(dir.path()).is_none());
}

#[test]
fn quantized_recall_on_clustered_vectors() {
    // Vectors around a few shared directions (embeddings are anisotropic): the default
    // candidate count finds the exact top 10 for nearly every query.
    let dir = tempfile::tempdir().unwrap();
    let dims = 64;
    let mut rng = Rng(99);
    let centers: Vec<Vec<f32>> = (0..8).map(|_| unit_vector(&mut rng, dims)).collect();
    let n = 20_000;
    let mut kbids: Vec<[u8; 16]> = (0..n).map(|_| rng.kbid()).collect();
    kbids.sort_unstable();
    kbids.dedup();
    let mut bytes = Vec::new();
    for i in 0..kbids.len() {
        let c = &centers[i % centers.len()];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.35 * rng.f32()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        bytes.extend(le(&v));
    }
    let ix = index(dir.path(), dims as u16, true);
    ix.write(&kbids, &bytes, "m", None, 1).unwrap();
    let snap = ix.snapshot();
    let (mut hits, mut total) = (0, 0);
    for _ in 0..50 {
        let q = unit_vector(&mut rng, dims);
        let exact = snap
            .search_with(&q, 10, None, Threads::All, true, None)
            .unwrap();
        let quant = snap.search(&q, 10, None, Threads::All).unwrap();
        hits += quant.iter().filter(|h| exact.contains(h)).count();
        total += exact.len();
    }
    assert!(hits as f64 / total as f64 >= 0.99, "recall {hits}/{total}");
}
