//! Search semantics: the bounded top-k scan against sort-and-truncate over every live
//! vector, with and without an allow-list, on one thread and many; learn-time appends,
//! supersession and tombstones; compaction leaving results identical; a second
//! `VectorIndex` on the same directory following along with `reload`.

mod vector_util;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use kbdb_core::vector::{
    compaction_threshold, KbidHash, OpenMode, Threads, VectorIndex, PARALLEL_MIN_RECORDS,
};
use kbdb_core::Error;
use proptest::prelude::*;
use vector_util::{brute_force, dataset, live_set, unit_vector, Rng};

fn create(dir: &Path, dims: u16) -> VectorIndex {
    VectorIndex::open(
        dir,
        OpenMode::Create {
            model_name: "m".into(),
            dimensions: dims,
        },
    )
    .unwrap()
}

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A model of the live set, updated alongside the index.
type Model = BTreeMap<KbidHash, Vec<u8>>;

fn check_against_model(index: &VectorIndex, model: &Model, rng: &mut Rng, dims: usize) {
    let snap = index.snapshot();
    let live: Vec<(KbidHash, Vec<u8>)> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
    assert_eq!(live_set(&snap), live, "live set");
    assert_eq!(snap.count(), model.len() as u64, "count");
    for limit in [0, 1, 10, 1000] {
        let q = unit_vector(rng, dims);
        let want = brute_force(&live, &q, limit);
        for threads in [Threads::Current, Threads::All, Threads::Exactly(3)] {
            let got = snap.search(&q, limit, None, threads).unwrap();
            assert_eq!(got, want, "limit {limit} {threads:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Top-k with an allow-list equals sort-and-truncate over the allowed live vectors.
    #[test]
    fn topk_equals_sort_and_truncate(
        n in 0usize..2000,
        dims in 1u16..40,
        limit in 0usize..60,
        allow_every in 0usize..5,
        seed in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let index = create(dir.path(), dims);
        let mut rng = Rng(seed | 1);
        let (kbids, bytes) = dataset(&mut rng, n, dims as usize);
        index.write(&kbids, &bytes, "m", None, 1).unwrap();
        let len = dims as usize * 4;
        let all: Vec<(KbidHash, Vec<u8>)> = kbids
            .iter()
            .enumerate()
            .map(|(i, k)| (*k, bytes[i * len..(i + 1) * len].to_vec()))
            .collect();
        // allow_every = 0: no filter; else every allow_every-th kbid plus unknown ones.
        let allow: Option<Vec<KbidHash>> = (allow_every > 0).then(|| {
            let mut a: Vec<KbidHash> = kbids.iter().step_by(allow_every).copied().collect();
            a.push([0xee; 16]);
            a
        });
        let allowed: Vec<(KbidHash, Vec<u8>)> = match &allow {
            None => all.clone(),
            Some(a) => {
                let set: HashSet<&KbidHash> = a.iter().collect();
                all.iter().filter(|(k, _)| set.contains(k)).cloned().collect()
            }
        };
        let q = unit_vector(&mut rng, dims as usize);
        let want = brute_force(&allowed, &q, limit);
        let snap = index.snapshot();
        for threads in [Threads::Current, Threads::All, Threads::Exactly(2)] {
            let got = snap.search(&q, limit, allow.as_deref(), threads).unwrap();
            prop_assert_eq!(&got, &want);
        }
    }
}

#[test]
fn parallel_scan_equals_sequential_above_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let dims = 8;
    let index = create(dir.path(), dims);
    let mut rng = Rng(99);
    let n = PARALLEL_MIN_RECORDS * 3 + 17;
    let (kbids, bytes) = dataset(&mut rng, n, dims as usize);
    index.write(&kbids, &bytes, "m", None, 1).unwrap();
    // Tombstones and appends so that both filter paths run in parallel too.
    let half: Vec<KbidHash> = kbids.iter().step_by(2).copied().collect();
    index.delete(&half[..500], 2).unwrap();
    let snap = index.snapshot();
    let xor = snap.stream_read(Threads::Current);
    assert_eq!(snap.stream_read(Threads::All), xor);
    assert_eq!(snap.stream_read(Threads::Exactly(3)), xor);
    let live = live_set(&snap);
    for limit in [1, 10, 100] {
        let q = unit_vector(&mut rng, dims as usize);
        let want = brute_force(&live, &q, limit);
        assert_eq!(
            snap.search(&q, limit, None, Threads::Current).unwrap(),
            want
        );
        assert_eq!(snap.search(&q, limit, None, Threads::All).unwrap(), want);
        assert_eq!(
            snap.search(&q, limit, None, Threads::Exactly(4)).unwrap(),
            want
        );
        let allow = &kbids[..n / 2];
        let set: HashSet<&KbidHash> = allow.iter().collect();
        let allowed: Vec<_> = live
            .iter()
            .filter(|(k, _)| set.contains(k))
            .cloned()
            .collect();
        let want = brute_force(&allowed, &q, limit);
        assert_eq!(
            snap.search(&q, limit, Some(allow), Threads::All).unwrap(),
            want
        );
    }
}

#[test]
fn appends_deletes_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let dims = 24usize;
    let index = create(dir.path(), dims as u16);
    let follower = VectorIndex::open(dir.path(), OpenMode::Existing).unwrap();
    let mut rng = Rng(7);
    let mut model = Model::new();
    let (kbids, bytes) = dataset(&mut rng, 400, dims);
    index.write(&kbids, &bytes, "m", None, 1).unwrap();
    for (i, k) in kbids.iter().enumerate() {
        model.insert(*k, bytes[i * dims * 4..(i + 1) * dims * 4].to_vec());
    }
    check_against_model(&index, &model, &mut rng, dims);

    let mut watermark = 1;
    for round in 0..12 {
        watermark += 1;
        // New kbids, plus re-embeddings of existing ones (base and appended).
        let (mut adds, _) = dataset(&mut rng, 15, dims);
        let existing: Vec<KbidHash> = model.keys().copied().collect();
        adds.push(existing[rng.below(existing.len())]);
        adds.push(existing[rng.below(existing.len())]);
        adds.sort_unstable();
        adds.dedup();
        let vecs: Vec<Vec<f32>> = adds.iter().map(|_| unit_vector(&mut rng, dims)).collect();
        let flat: Vec<u8> = vecs.iter().flat_map(|v| le(v)).collect();
        index.append(&adds, &flat, watermark).unwrap();
        for (k, v) in adds.iter().zip(&vecs) {
            model.insert(*k, le(v));
        }
        check_against_model(&index, &model, &mut rng, dims);

        watermark += 1;
        let existing: Vec<KbidHash> = model.keys().copied().collect();
        let mut gone: Vec<KbidHash> = (0..6)
            .map(|_| existing[rng.below(existing.len())])
            .collect();
        gone.push([0xab; 16]); // unknown: ignored
        index.delete(&gone, watermark).unwrap();
        for k in &gone {
            model.remove(k);
        }
        check_against_model(&index, &model, &mut rng, dims);
        assert_eq!(index.snapshot().state.watermark, watermark);

        // A deleted kbid can come back.
        if round % 4 == 1 {
            watermark += 1;
            let v = unit_vector(&mut rng, dims);
            index.append(&[gone[0]], &le(&v), watermark).unwrap();
            model.insert(gone[0], le(&v));
            check_against_model(&index, &model, &mut rng, dims);
        }

        assert!(follower.reload().unwrap());
        assert!(!follower.reload().unwrap());
        let qs: Vec<Vec<f32>> = (0..3).map(|_| unit_vector(&mut rng, dims)).collect();
        for q in &qs {
            assert_eq!(
                follower
                    .snapshot()
                    .search(q, 20, None, Threads::Current)
                    .unwrap(),
                index
                    .snapshot()
                    .search(q, 20, None, Threads::Current)
                    .unwrap()
            );
        }
    }
    let before = index.snapshot();
    assert!(before.state.append_count > 0 && before.state.tombstone_count > 0);
    let queries: Vec<Vec<f32>> = (0..20).map(|_| unit_vector(&mut rng, dims)).collect();
    let allow: Vec<KbidHash> = model.keys().step_by(3).copied().collect();
    let results = |snap: &kbdb_core::vector::Snapshot| -> Vec<_> {
        queries
            .iter()
            .flat_map(|q| {
                [
                    snap.search(q, 10, None, Threads::Current).unwrap(),
                    snap.search(q, 50, Some(&allow), Threads::Current).unwrap(),
                ]
            })
            .collect()
    };
    let results_before = results(&before);

    assert!(!index.compact(false).unwrap(), "below the threshold");
    assert!(index.compact(true).unwrap());
    assert!(!index.compact(true).unwrap(), "nothing left to fold");
    let after = index.snapshot();
    assert_eq!(after.state.append_count + after.state.tombstone_count, 0);
    assert_eq!(after.state.record_count as usize, model.len());
    assert_eq!(after.state.watermark, before.state.watermark);
    assert_eq!(
        results(&after),
        results_before,
        "compaction changes no result"
    );
    check_against_model(&index, &model, &mut rng, dims);
    // Only vectors.idx and the meta file remain.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["vectors-meta.toml", "vectors.idx"]);
    // The follower still serves its old snapshot from the unlinked files, then catches up.
    let old = follower.snapshot();
    assert_eq!(results(&old), results_before);
    assert!(follower.reload().unwrap());
    assert_eq!(results(&follower.snapshot()), results_before);
    assert!(index.verify().is_empty());
}

#[test]
fn compaction_runs_on_its_own_past_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let dims = 4usize;
    let index = create(dir.path(), dims as u16);
    let mut rng = Rng(3);
    let threshold = compaction_threshold(0) as usize;
    let (kbids, bytes) = dataset(&mut rng, threshold + 1, dims);
    let half = threshold / 2 * dims * 4;
    index
        .append(&kbids[..threshold / 2], &bytes[..half], 1)
        .unwrap();
    assert_eq!(index.snapshot().state.record_count, 0);
    index
        .append(&kbids[threshold / 2..], &bytes[half..], 2)
        .unwrap();
    let s = index.snapshot();
    assert_eq!(s.state.record_count as usize, threshold + 1, "compacted");
    assert_eq!(s.state.append_count, 0);
    assert_eq!(s.count() as usize, threshold + 1);
}

#[test]
fn bad_arguments_are_invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let index = create(dir.path(), 3);
    let v = le(&[1.0, 0.0, 0.0]);
    let dup = [[1u8; 16], [1u8; 16]];
    let two = [v.clone(), v.clone()].concat();
    assert!(matches!(
        index.append(&dup, &two, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        index.write(&dup, &two, "m", None, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        index.append(&[[1u8; 16]], &two, 1),
        Err(Error::InvalidArgument(_))
    ));
    let nan = le(&[f32::NAN, 0.0, 0.0]);
    assert!(matches!(
        index.append(&[[1u8; 16]], &nan, 1),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        index.append(&[[1u8; 16]], &v, u64::MAX),
        Err(Error::InvalidArgument(_))
    ));
    let snap = index.snapshot();
    assert!(matches!(
        snap.search(&[1.0, 0.0], 10, None, Threads::Current),
        Err(Error::DimensionMismatch {
            expected: 3,
            found: 2
        })
    ));
    assert!(matches!(
        snap.search(&[f32::INFINITY, 0.0, 0.0], 10, None, Threads::Current),
        Err(Error::InvalidArgument(_))
    ));
    // Nothing was published by the failed calls.
    assert_eq!(index.snapshot().count(), 0);
    assert_eq!(index.snapshot().state.generation, 1);
}

#[test]
fn write_changes_model_and_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let index = create(dir.path(), 3);
    index
        .append(&[[1u8; 16]], &le(&[1.0, 0.0, 0.0]), 1)
        .unwrap();
    index
        .write(&[[2u8; 16]], &le(&[0.6, 0.8]), "other-model", Some(2), 5)
        .unwrap();
    let s = index.snapshot();
    assert_eq!(
        (s.state.dimensions, s.state.model_name.as_str()),
        (2, "other-model")
    );
    assert_eq!(s.kbids(), vec![[2u8; 16]]);
    assert_eq!(s.state.append_count, 0);
    let hits = s.search(&[0.0, 1.0], 5, None, Threads::Current).unwrap();
    assert_eq!(hits, vec![([2u8; 16], 0.8)]);
    let names: HashSet<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names.len(),
        2,
        "side files of the old model are gone: {names:?}"
    );
}

#[test]
fn open_missing_and_reset() {
    let dir = tempfile::tempdir().unwrap();
    let missing = VectorIndex::open(&dir.path().join("nope"), OpenMode::Existing);
    assert!(
        matches!(missing, Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound)
    );
    let index = create(dir.path(), 3);
    index
        .write(&[[2u8; 16]], &le(&[0.6, 0.8, 0.0]), "m", None, 5)
        .unwrap();
    std::fs::write(dir.path().join("vectors.idx"), b"garbage").unwrap();
    assert!(matches!(
        VectorIndex::open(dir.path(), OpenMode::Existing),
        Err(Error::Corrupt { .. })
    ));
    // A rebuild through an object opened before the damage works regardless.
    index
        .write(&[[3u8; 16]], &le(&[1.0, 0.0, 0.0]), "m", None, 6)
        .unwrap();
    assert!(VectorIndex::open(dir.path(), OpenMode::Existing).is_ok());
    std::fs::write(dir.path().join("vectors-meta.toml"), b"garbage").unwrap();
    let reset = VectorIndex::open(
        dir.path(),
        OpenMode::Reset {
            model_name: "m2".into(),
            dimensions: 4,
        },
    )
    .unwrap();
    let s = reset.snapshot();
    assert_eq!(
        (s.count(), s.state.dimensions, s.state.watermark),
        (0, 4, 0)
    );
}
