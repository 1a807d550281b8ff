//! Corruption of every vector file kind: truncations and bit flips of `vectors.idx`, the
//! append file, the tombstone file and `vectors-meta.toml` are reported as `Corrupt` or
//! `FormatVersion`, never a panic; damage the checksums cannot see (a re-sealed meta file
//! that disagrees with the data) is caught by the structural checks. Also the crash states
//! of a `vectors.idx` replacement.
//!
//! When: opening checks `vectors.idx`'s header, counts and size, not its checksum or key
//! order (they read the whole file, 1.5 GB at 1M sections); damage to its records is
//! reported by `verify` (`kbdb check`), and a search over it never panics. Every other
//! file is checked in full at open.

mod vector_util;

use std::fs;
use std::path::{Path, PathBuf};

use kbdb_core::vector::{Meta, OpenMode, VectorIndex, META_FILE};
use kbdb_core::Error;
use vector_util::{dataset, Rng};

const DIMS: usize = 8;

type TextEdit = Box<dyn Fn(&str) -> String>;
type ByteEdit = Box<dyn Fn(&mut Vec<u8>)>;

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// An index with `vectors.idx` (40 records), an append file (5) and tombstones (3 + 1).
fn build(dir: &Path) {
    let index = VectorIndex::open(
        dir,
        OpenMode::Create {
            model_name: "m".into(),
            dimensions: DIMS as u16,
        },
    )
    .unwrap();
    let mut rng = Rng(11);
    let (kbids, bytes) = dataset(&mut rng, 45, DIMS);
    let split = 40 * DIMS * 4;
    index
        .write(&kbids[..40], &bytes[..split], "m", None, 1)
        .unwrap();
    index.append(&kbids[40..], &bytes[split..], 2).unwrap();
    index.delete(&kbids[..3], 3).unwrap();
    index.append(&[kbids[5]], &le(&[0.5; DIMS]), 4).unwrap();
}

fn open(dir: &Path) -> Result<VectorIndex, Error> {
    VectorIndex::open(dir, OpenMode::Existing)
}

fn is_corrupt(r: &Result<VectorIndex, Error>) -> bool {
    matches!(
        r,
        Err(Error::Corrupt { .. }) | Err(Error::FormatVersion { .. })
    )
}

fn detail(r: &Result<VectorIndex, Error>) -> String {
    match r {
        Err(e) => e.to_string(),
        Ok(_) => "opened".into(),
    }
}

fn file_ending(dir: &Path, suffix: &str) -> PathBuf {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(suffix))
        .unwrap_or_else(|| panic!("no {suffix} file"))
}

/// Runs `damage` on a fresh copy of the built index for each case and checks the open.
fn each_damage(
    cases: impl IntoIterator<Item = usize>,
    target: &str,
    damage: impl Fn(&mut Vec<u8>, usize),
    expect: impl Fn(&Result<VectorIndex, Error>) -> bool,
) {
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path());
    let scratch = tempfile::tempdir().unwrap();
    for case in cases {
        for e in fs::read_dir(pristine.path()).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), scratch.path().join(e.file_name())).unwrap();
        }
        let path = file_ending(scratch.path(), target);
        let mut bytes = fs::read(&path).unwrap();
        damage(&mut bytes, case);
        fs::write(&path, &bytes).unwrap();
        let r = open(scratch.path());
        assert!(expect(&r), "{target} case {case}: {}", detail(&r));
        if let Ok(index) = r {
            // Whatever opened must still be searchable without panicking.
            let _ =
                index
                    .snapshot()
                    .search(&[0.1; DIMS], 5, None, kbdb_core::vector::Threads::Current);
        }
    }
}

#[test]
fn the_pristine_index_opens() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let index = open(dir.path()).unwrap();
    assert_eq!(index.snapshot().count(), 42);
    assert!(index.verify().is_empty());
}

#[test]
fn vectors_idx_truncated_or_extended() {
    let record = 16 + DIMS * 4;
    let len = 11 + 40 * record;
    let cuts = [
        0,
        1,
        3,
        4,
        5,
        7,
        10,
        11,
        12,
        27,
        11 + record,
        len / 2,
        len - record,
        len - 1,
    ];
    each_damage(cuts, "vectors.idx", |b, cut| b.truncate(cut), is_corrupt);
    each_damage(
        [1, 4, record],
        "vectors.idx",
        |b, extra| b.extend(vec![0u8; extra]),
        is_corrupt,
    );
}

#[test]
fn vectors_idx_every_header_bit() {
    each_damage(
        0..11 * 8,
        "vectors.idx",
        |b, bit| b[bit / 8] ^= 1 << (bit % 8),
        is_corrupt,
    );
}

/// Open fails on it (a tombstone no longer found) or `verify` reports a checksum mismatch.
fn corrupt_or_verify_says(r: &Result<VectorIndex, Error>, what: &str) -> bool {
    match r {
        Ok(index) => index.verify().iter().any(|p| p.contains(what)),
        r => is_corrupt(r),
    }
}

#[test]
fn vectors_idx_record_bits_are_checksum_mismatches() {
    let record = 16 + DIMS * 4;
    let offsets = (0..40 * record).step_by(37).map(|o| 11 + o);
    each_damage(
        offsets,
        "vectors.idx",
        |b, at| b[at] ^= 0x04,
        |r| corrupt_or_verify_says(r, "checksum mismatch"),
    );
}

#[test]
fn append_file_truncated_and_flipped() {
    let len = 11 + 6 * (16 + DIMS * 4);
    let cuts = [0, 4, 10, 11, 60, len - 1];
    each_damage(
        cuts,
        "vectors-add.5.idx",
        |b, cut| b.truncate(cut),
        is_corrupt,
    );
    each_damage(
        (0..len).step_by(7),
        "vectors-add.5.idx",
        |b, at| b[at] ^= 0x80,
        is_corrupt,
    );
}

#[test]
fn tombstone_file_every_byte() {
    let len = 4 + 4 * 16 + 24;
    each_damage(0..len, ".tomb", |b, cut| b.truncate(cut), is_corrupt);
    each_damage(
        0..len * 8,
        ".tomb",
        |b, bit| b[bit / 8] ^= 1 << (bit % 8),
        is_corrupt,
    );
}

#[test]
fn meta_file_every_truncation_and_byte() {
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path());
    let len = fs::read(pristine.path().join(META_FILE)).unwrap().len();
    each_damage(0..len, META_FILE, |b, cut| b.truncate(cut), is_corrupt);
    each_damage(0..len, META_FILE, |b, at| b[at] ^= 0x01, is_corrupt);
}

/// Rewrites the meta file with a valid checksum after editing its text.
fn reseal(dir: &Path, edit: impl Fn(&str) -> String) {
    let text = fs::read_to_string(dir.join(META_FILE)).unwrap();
    let body = edit(text.split_once('\n').unwrap().1);
    let sealed = format!(
        "meta_checksum = \"{:08x}\"\n{body}",
        crc32fast::hash(body.as_bytes())
    );
    fs::write(dir.join(META_FILE), sealed).unwrap();
}

#[test]
fn resealed_meta_disagreeing_with_the_data() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let original = fs::read(dir.path().join(META_FILE)).unwrap();
    let cases: Vec<(&str, TextEdit)> = vec![
        (
            "dimensions",
            Box::new(|t| t.replacen("dimensions = 8", "dimensions = 9", 1)),
        ),
        (
            "record_count",
            Box::new(|t| {
                t.replacen("record_count = 40", "record_count = 39", 1)
                    .replacen("section_count = 42", "section_count = 41", 1)
            }),
        ),
        (
            "tombstone_count",
            Box::new(|t| {
                t.replacen("tombstone_count = 4", "tombstone_count = 3", 1)
                    .replacen("section_count = 42", "section_count = 43", 1)
            }),
        ),
        (
            "section_count",
            Box::new(|t| t.replacen("section_count = 42", "section_count = 7", 1)),
        ),
        (
            "version",
            Box::new(|t| t.replacen("version = 1", "version = 2", 1)),
        ),
        (
            "path",
            Box::new(|t| {
                t.replacen(
                    "appends = \"vectors-add.5.idx\"",
                    "appends = \"../x.idx\"",
                    1,
                )
            }),
        ),
        (
            "unknown key",
            Box::new(|t| t.replacen("[vectors]\n", "[vectors]\nshiny = 1\n", 1)),
        ),
    ];
    for (name, edit) in cases {
        fs::write(dir.path().join(META_FILE), &original).unwrap();
        reseal(dir.path(), edit);
        let r = open(dir.path());
        assert!(is_corrupt(&r), "{name}: {}", detail(&r));
    }
}

#[test]
fn resealed_data_disagreeing_with_itself() {
    // vectors.idx with a valid checksum in the meta file but a bad structure.
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let original_meta = fs::read(dir.path().join(META_FILE)).unwrap();
    let original = fs::read(dir.path().join("vectors.idx")).unwrap();
    let record = 16 + DIMS * 4;
    let swap_records = move |b: &mut Vec<u8>| {
        let (a, c) = b[11..11 + 2 * record].split_at_mut(record);
        a.swap_with_slice(c);
    };
    let cases: Vec<(&str, ByteEdit)> = vec![
        ("unsorted", Box::new(swap_records)),
        (
            "duplicate",
            Box::new(move |b: &mut Vec<u8>| {
                let first: Vec<u8> = b[11..27].to_vec();
                b[11 + record..27 + record].copy_from_slice(&first);
            }),
        ),
        ("count", Box::new(|b: &mut Vec<u8>| b[7] = 41)),
        ("trailing", Box::new(|b: &mut Vec<u8>| b.push(0))),
        (
            "dims 0",
            Box::new(|b: &mut Vec<u8>| {
                b[5] = 0;
                b[6] = 0;
            }),
        ),
    ];
    for (name, damage) in cases {
        let mut bytes = original.clone();
        damage(&mut bytes);
        fs::write(dir.path().join("vectors.idx"), &bytes).unwrap();
        fs::write(dir.path().join(META_FILE), &original_meta).unwrap();
        let old = format!("checksum = \"{:08x}\"", crc32fast::hash(&original));
        let new = format!("checksum = \"{:08x}\"", crc32fast::hash(&bytes));
        reseal(dir.path(), |t| t.replacen(&old, &new, 1));
        let r = open(dir.path());
        // Key order is not checked at open (module docs): `verify` reports it.
        let ok = match name {
            "unsorted" | "duplicate" => corrupt_or_verify_says(&r, "ascending kbid order"),
            _ => is_corrupt(&r),
        };
        assert!(ok, "{name}: {}", detail(&r));
    }
}

#[test]
fn missing_side_file_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    fs::remove_file(file_ending(dir.path(), ".tomb")).unwrap();
    let r = open(dir.path());
    assert!(
        matches!(&r, Err(Error::Corrupt { detail, .. }) if detail.contains("missing")),
        "{}",
        detail(&r)
    );
    fs::remove_file(dir.path().join("vectors.idx")).unwrap();
    assert!(is_corrupt(&open(dir.path())));
}

/// A `write` that crashed between its two meta publishes: the meta file describes the
/// new state with the old one as `[previous]`, and `vectors.idx` is either.
#[test]
fn crash_between_the_renames_opens_a_consistent_state() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let old_files: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let (old_meta, _) = Meta::read(dir.path()).unwrap();
    let index = open(dir.path()).unwrap();
    let old_kbids = index.snapshot().kbids();
    index
        .write(&[[7u8; 16]], &le(&[1.0; DIMS]), "new-model", None, 9)
        .unwrap();
    let new_base = fs::read(dir.path().join("vectors.idx")).unwrap();
    let (new_meta, _) = Meta::read(dir.path()).unwrap();
    // Restore the old side files (cleanup runs only after the second publish).
    for (p, b) in &old_files {
        fs::write(p, b).unwrap();
    }
    let midway = Meta {
        vectors: new_meta.vectors.clone(),
        previous: Some(old_meta.vectors.clone()),
    };
    midway.write(dir.path()).unwrap();
    // Before the rename: the old vectors.idx, so the old state.
    let before = open(dir.path()).unwrap();
    assert_eq!(before.snapshot().state.model_name, "m");
    assert_eq!(before.snapshot().kbids(), old_kbids);
    // After the rename: the new one.
    fs::write(dir.path().join("vectors.idx"), &new_base).unwrap();
    assert!(before.reload().is_ok());
    let after = open(dir.path()).unwrap();
    assert_eq!(after.snapshot().state.model_name, "new-model");
    assert_eq!(after.snapshot().kbids(), vec![[7u8; 16]]);
    // The next write finishes the job: no [previous], old side files collected.
    after.append(&[[8u8; 16]], &le(&[0.5; DIMS]), 10).unwrap();
    let (m, _) = Meta::read(dir.path()).unwrap();
    assert!(m.previous.is_none());
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    // A vectors.idx that is neither state is corrupt.
    midway.write(dir.path()).unwrap();
    fs::write(
        dir.path().join("vectors.idx"),
        &new_base[..new_base.len() - 1],
    )
    .unwrap();
    assert!(is_corrupt(&open(dir.path())));
}
