//! The multi-query scan (`Snapshot::search_many`, `scan_many`): for every query it must
//! return exactly what a single-query search returns (same kbids, bit-identical scores,
//! same order), on every path: the f32 scan with tombstones, appends and allow-lists, on
//! one thread and many, above the parallel threshold, ties included; and the quantized
//! (q8) path with its exact rescoring. The single-query path (`search_with`, one query) is
//! the reference; it is itself checked against sort-and-truncate in `vector_search.rs`,
//! and here again through `brute_force` for the f32 path.

mod vector_util;

use std::collections::HashSet;
use std::path::Path;

use kbdb_core::vector::{
    KbidHash, Threads, VectorIndex, MAX_QUERIES_PER_PASS, PARALLEL_MIN_RECORDS,
};
use kbdb_core::Error;
use proptest::prelude::*;
use vector_util::{brute_force, create_index, dataset, le, live_set, unit_vector, Rng};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `n` random vectors where every fifth is a copy of an earlier one (equal scores for
/// every query: ties broken by kbid), written, then partly deleted (tombstones), replaced
/// and extended (appends), staying under the compaction threshold so that the side files
/// remain.
fn messy_index(dir: &Path, n: usize, dims: usize, seed: u64, quantized: bool) -> VectorIndex {
    let ix = create_index(dir, dims as u16, quantized);
    let mut rng = Rng(seed | 1);
    let (kbids, mut bytes) = dataset(&mut rng, n, dims);
    let len = dims * 4;
    for i in (5..n).step_by(5) {
        let src = rng.below(i);
        let v = bytes[src * len..(src + 1) * len].to_vec();
        bytes[i * len..(i + 1) * len].copy_from_slice(&v);
    }
    ix.write(&kbids, &bytes, "m", None, 1).unwrap();
    if n >= 8 {
        let gone: Vec<KbidHash> = kbids.iter().step_by(7).take(300).copied().collect();
        ix.delete(&gone, 2).unwrap();
        let (new_kbids, new_bytes) = dataset(&mut rng, (n / 8 + 1).min(200), dims);
        ix.append(&new_kbids, &new_bytes, 3).unwrap();
        // Replacements of live base records: tombstone plus append of the same kbid,
        // one of them with the vector of another record (another tie).
        let replaced: Vec<KbidHash> = kbids[1..].iter().step_by(11).take(100).copied().collect();
        let mut rbytes = Vec::new();
        for (j, _) in replaced.iter().enumerate() {
            if j == 0 {
                rbytes.extend_from_slice(&bytes[..len]);
            } else {
                rbytes.extend(le(&unit_vector(&mut rng, dims)));
            }
        }
        ix.append(&replaced, &rbytes, 4).unwrap();
    }
    ix
}

/// Queries: random unit vectors, a stored vector (a perfect match, tied with its copies),
/// the zero vector (every score ties at 0) and a repeat of the first.
fn queries(ix: &VectorIndex, rng: &mut Rng, dims: usize, count: usize) -> Vec<Vec<f32>> {
    let live = live_set(&ix.snapshot());
    let mut out: Vec<Vec<f32>> = Vec::new();
    for i in 0..count {
        out.push(match i % 4 {
            1 if !live.is_empty() => f32s(&live[rng.below(live.len())].1),
            2 => vec![0.0; dims],
            3 => out[0].clone(),
            _ => unit_vector(rng, dims),
        });
    }
    out
}

/// `search_many` against one `search_with` per query (and, for the exact path, against
/// sort-and-truncate over the live, allowed vectors).
fn check(
    ix: &VectorIndex,
    qs: &[Vec<f32>],
    limit: usize,
    allow: Option<&[KbidHash]>,
    exact: bool,
    candidates: Option<usize>,
) {
    let snap = ix.snapshot();
    let refs: Vec<&[f32]> = qs.iter().map(Vec::as_slice).collect();
    let live = live_set(&snap);
    let allowed: Vec<(KbidHash, Vec<u8>)> = match allow {
        None => live,
        Some(a) => {
            let set: HashSet<&KbidHash> = a.iter().collect();
            live.into_iter().filter(|(k, _)| set.contains(k)).collect()
        }
    };
    for threads in [Threads::Current, Threads::All, Threads::Exactly(3)] {
        let many = snap
            .search_many(&refs, limit, allow, threads, exact, candidates)
            .unwrap();
        assert_eq!(many.len(), qs.len());
        for (i, q) in qs.iter().enumerate() {
            let one = snap
                .search_with(q, limit, allow, threads, exact, candidates)
                .unwrap();
            let bits = |r: &[(KbidHash, f32)]| -> Vec<(KbidHash, u32)> {
                r.iter().map(|(k, s)| (*k, s.to_bits())).collect()
            };
            assert_eq!(
                bits(&many[i]),
                bits(&one),
                "query {i} of {} limit {limit} {threads:?} exact {exact}",
                qs.len()
            );
            if exact || snap.q8.is_none() {
                assert_eq!(many[i], brute_force(&allowed, q, limit), "query {i}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The f32 path: random sizes, dimensions, query counts, limits and allow-lists.
    #[test]
    fn many_equals_one_query_at_a_time(
        n in 0usize..1500,
        dims in 1u16..40,
        nq in 0usize..9,
        limit in 0usize..40,
        allow_every in 0usize..4,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ix = messy_index(dir.path(), n, dims as usize, seed, false);
        let mut rng = Rng(seed ^ 0x5eed | 1);
        let qs = queries(&ix, &mut rng, dims as usize, nq);
        let allow: Option<Vec<KbidHash>> = (allow_every > 0).then(|| {
            let mut a: Vec<KbidHash> = ix.snapshot().kbids().into_iter().step_by(allow_every).collect();
            a.push([0xee; 16]); // unknown: ignored
            a
        });
        check(&ix, &qs, limit, allow.as_deref(), false, None);
    }

    /// The quantized path: candidates from `vectors.q8`, rescored exactly, appends scanned
    /// exactly; with few candidates (so the q8 order decides) and with all of them.
    #[test]
    fn many_equals_one_query_at_a_time_quantized(
        n in 1usize..1200,
        dims in 1u16..70,
        nq in 2usize..7,
        limit in 0usize..25,
        allow_every in 0usize..3,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ix = messy_index(dir.path(), n, dims as usize, seed, true);
        prop_assert!(ix.snapshot().q8.is_some());
        let mut rng = Rng(seed ^ 0x0a8 | 1);
        let qs = queries(&ix, &mut rng, dims as usize, nq);
        let allow: Option<Vec<KbidHash>> = (allow_every > 0).then(|| {
            ix.snapshot().kbids().into_iter().step_by(allow_every).collect()
        });
        for candidates in [None, Some(limit + 1), Some(n * 2)] {
            check(&ix, &qs, limit, allow.as_deref(), false, candidates);
        }
        check(&ix, &qs, limit, allow.as_deref(), true, None);
    }
}

#[test]
fn many_equals_one_above_the_parallel_threshold() {
    for quantized in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let dims = 16;
        let n = PARALLEL_MIN_RECORDS * 3 + 17;
        let ix = messy_index(dir.path(), n, dims, 42, quantized);
        let snap = ix.snapshot();
        assert!(snap.state.tombstone_count > 0 && snap.state.append_count > 0);
        assert_eq!(snap.q8.is_some(), quantized);
        let mut rng = Rng(43);
        for nq in [2, 5, 11, MAX_QUERIES_PER_PASS * 2 + 3] {
            let qs = queries(&ix, &mut rng, dims, nq);
            for limit in [1, 11, 100] {
                check(&ix, &qs, limit, None, false, None);
            }
            let allow: Vec<KbidHash> = snap.kbids().into_iter().step_by(3).collect();
            check(&ix, &qs, 10, Some(&allow), false, None);
        }
    }
}

#[test]
fn every_query_is_checked_before_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let ix = messy_index(dir.path(), 50, 8, 5, false);
    let snap = ix.snapshot();
    let good = vec![0.5f32; 8];
    let short = vec![0.5f32; 7];
    let mut nan = good.clone();
    nan[3] = f32::NAN;
    assert!(snap
        .search_many(&[], 10, None, Threads::All, false, None)
        .unwrap()
        .is_empty());
    assert!(matches!(
        snap.search_many(&[&good, &short], 10, None, Threads::All, false, None),
        Err(Error::DimensionMismatch {
            expected: 8,
            found: 7
        })
    ));
    assert!(matches!(
        snap.search_many(&[&good, &nan], 10, None, Threads::All, false, None),
        Err(Error::InvalidArgument(_))
    ));
}
