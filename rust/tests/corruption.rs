//! Corruption: for every file kind (segment, tombstones, manifest), truncations and bit
//! flips are reported as `Corrupt`/`FormatVersion`, never a panic. Payload damage behind a
//! re-sealed (valid) footer must not panic either, whatever it decodes to.
//!
//! When: truncations of any file, and any flip in a tombstone file or the manifest, fail
//! `open`. A flip in a segment's payload (or in the checksum field of its footer) may pass
//! `open`, which reads only the footer and the header so that it costs the same at any
//! size (docs/reliability.md); `verify` reports it, and a search on it never panics.

mod common;

use std::path::{Path, PathBuf};

use common::{kernel_alpha_query, random_docs, Rng, WORDS};
use kbdb_core::format::{append_footer, FileKind, FOOTER_LEN};
use kbdb_core::lexical::{
    Clause, Index, Manifest, Query, FIELD_COUNT, SEGMENT_FORMAT_VERSION, TOMBSTONE_FORMAT_VERSION,
};
use kbdb_core::Error;

fn build(dir: &Path) {
    let index = Index::open(dir, true).unwrap();
    let mut rng = Rng(77);
    let docs = random_docs(&mut rng, 0, 300);
    index.commit(&docs[..200], &[], 1).unwrap();
    index
        .commit(&docs[200..], &[docs[3].kbid, docs[250].kbid], 2)
        .unwrap();
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn is_corrupt(r: Result<Index, Error>) -> bool {
    matches!(
        r,
        Err(Error::Corrupt { .. }) | Err(Error::FormatVersion { .. })
    )
}

/// Truncates and flips bits of `path`. Every truncation must make `open` fail cleanly; so
/// must every flip, unless `open_reads_all` is false (a segment): then a flip that gets
/// past `open` must be reported by `verify` and must not make a search panic.
fn damage_all(dir: &Path, path: &Path, open_reads_all: bool) {
    let orig = std::fs::read(path).unwrap();
    let len = orig.len();
    let mut cuts = vec![0, 1, len / 3, len / 2, len - 1];
    if len > FOOTER_LEN {
        cuts.extend([len - FOOTER_LEN, len - FOOTER_LEN + 1]);
    }
    for cut in cuts {
        std::fs::write(path, &orig[..cut]).unwrap();
        assert!(
            is_corrupt(Index::open(dir, false)),
            "{} cut at {cut}",
            path.display()
        );
        assert!(!problems(dir).is_empty());
    }
    let step = (len / 97).max(1);
    for at in (0..len).step_by(step).chain([len - 1, len - 5]) {
        let mut bytes = orig.clone();
        bytes[at] ^= 1 << (at % 8);
        std::fs::write(path, &bytes).unwrap();
        match Index::open(dir, false) {
            Ok(index) if !open_reads_all => {
                let _ = index.search(&kernel_alpha_query(true));
                let problems = index.verify();
                assert!(!problems.is_empty(), "{} flip at {at}", path.display());
            }
            r => assert!(is_corrupt(r), "{} flip at {at}", path.display()),
        }
    }
    std::fs::write(path, &orig).unwrap();
    assert!(Index::open(dir, false).is_ok());
}

/// What `verify` (or failing to open) reports.
fn problems(dir: &Path) -> Vec<String> {
    match Index::open(dir, false) {
        Ok(i) => i.verify(),
        Err(e) => vec![e.to_string()],
    }
}

#[test]
fn every_file_kind_detects_truncation_and_flips() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let segs = files(dir.path(), ".seg");
    let dels = files(dir.path(), ".del");
    assert!(!segs.is_empty() && !dels.is_empty());
    for p in &segs {
        damage_all(dir.path(), p, false);
    }
    for p in dels.iter().chain(&files(dir.path(), "meta.toml")) {
        damage_all(dir.path(), p, true);
    }
}

#[test]
fn verify_reports_damage_under_an_open_index() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let index = Index::open(dir.path(), false).unwrap();
    assert!(index.verify().is_empty());
    let seg = &files(dir.path(), ".seg")[0];
    let mut bytes = std::fs::read(seg).unwrap();
    bytes[40] ^= 0x10;
    // Replace (not rewrite in place) so the open mapping stays intact, as writers do.
    let tmp = dir.path().join("tmp");
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, seg).unwrap();
    let problems = index.verify();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("checksum"), "{}", problems[0]);
    index.search(&kernel_alpha_query(true)).unwrap();
}

#[test]
fn merge_refuses_a_segment_whose_checksum_fails() {
    // Open does not read the checksum of a segment past 64 KiB; a merge must, or it would
    // copy the damage into a new segment under a fresh checksum that `verify` could no
    // longer see.
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    let docs = random_docs(&mut Rng(78), 0, 3000);
    index.commit(&docs[..2500], &[], 1).unwrap();
    index.commit(&docs[2500..], &[], 2).unwrap();
    drop(index);
    let seg = &files(dir.path(), ".seg")[0];
    let mut bytes = std::fs::read(seg).unwrap();
    assert!(bytes.len() as u64 > kbdb_core::format::VERIFY_ON_OPEN_BYTES);
    let at = bytes.len() - FOOTER_LEN - 3; // inside the positions section, past the header
    bytes[at] ^= 0x01;
    std::fs::write(seg, &bytes).unwrap();
    let index = Index::open(dir.path(), false).unwrap();
    let problems = index.verify();
    assert!(
        problems.iter().any(|p| p.contains("checksum")),
        "{problems:?}"
    );
    match index.merge(true) {
        Err(Error::Corrupt { detail, .. }) => assert!(detail.contains("checksum"), "{detail}"),
        other => panic!("merge of a damaged segment: {:?}", other.map(|_| ())),
    }
    assert!(
        !index.verify().is_empty(),
        "the damage is still visible to verify"
    );
}

#[test]
fn missing_files_and_versions() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let seg = &files(dir.path(), ".seg")[0];
    let orig = std::fs::read(seg).unwrap();
    // A newer format version, correctly sealed, is a version error.
    let mut newer = orig[..orig.len() - FOOTER_LEN].to_vec();
    append_footer(&mut newer, FileKind::SEGMENT, 99);
    std::fs::write(seg, &newer).unwrap();
    assert!(matches!(
        Index::open(dir.path(), false),
        Err(Error::FormatVersion { found: 99, .. })
    ));
    // A tombstone file in a segment's place is corrupt.
    let mut wrong = orig[..orig.len() - FOOTER_LEN].to_vec();
    append_footer(&mut wrong, FileKind::TOMBSTONE, TOMBSTONE_FORMAT_VERSION);
    std::fs::write(seg, &wrong).unwrap();
    assert!(matches!(
        Index::open(dir.path(), false),
        Err(Error::Corrupt { .. })
    ));
    std::fs::remove_file(seg).unwrap();
    assert!(matches!(
        Index::open(dir.path(), false),
        Err(Error::Corrupt { .. })
    ));
    // reset gives an empty index that a rebuild can fill; the old files are collected.
    let generation = Manifest::read(dir.path()).unwrap().generation;
    std::fs::write(dir.path().join("vectors.idx"), b"not ours").unwrap();
    let index = Index::reset(dir.path(), kbdb_core::text::Language::English).unwrap();
    assert_eq!((index.doc_count(), index.segment_count()), (0, 0));
    assert_eq!(index.generation(), generation + 1);
    index.rebuild(&random_docs(&mut Rng(6), 0, 10), 3).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        3,
        "meta.toml, one segment, vectors.idx untouched: {names:?}"
    );
    // rebuild repairs it.
    let broken = tempfile::tempdir().unwrap();
    build(broken.path());
    let index = Index::open(broken.path(), false).unwrap();
    std::fs::write(broken.path().join("meta.toml"), b"garbage").unwrap();
    index.rebuild(&random_docs(&mut Rng(5), 0, 10), 3).unwrap();
    assert!(Index::open(broken.path(), false)
        .unwrap()
        .verify()
        .is_empty());
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn damaged_payload_behind_a_valid_footer_never_panics() {
    let pristine = tempfile::tempdir().unwrap();
    build(pristine.path());
    let seg_name = files(pristine.path(), ".seg")[0]
        .file_name()
        .unwrap()
        .to_owned();
    let orig = std::fs::read(pristine.path().join(&seg_name)).unwrap();
    let payload_len = orig.len() - FOOTER_LEN;
    // The segment header (`lexical::segment`): counts, field totals, then the section
    // table, whose entry 6 is the postings section.
    let table_at = 8 + FIELD_COUNT * 8;
    let header_len = table_at + 8 * 16;
    let u64_at = |at: usize| u64::from_le_bytes(orig[at..at + 8].try_into().unwrap()) as usize;
    let postings = (u64_at(table_at + 6 * 16), u64_at(table_at + 6 * 16 + 8));
    let mut rng = Rng(1234);
    let mut opened = 0;
    // A relaxed search that stops on a damaged block must leave nothing behind for the
    // next search on this thread (the term-at-a-time cells are reused): the pristine index
    // still ranks as the reference does after every failure.
    let sound = Index::open(pristine.path(), false).unwrap();
    let reference = sound.search_exhaustive(&kernel_alpha_query(false)).unwrap();
    let mut failed = 0;
    let every_word = Query {
        clauses: WORDS
            .iter()
            .map(|w| Clause {
                alternatives: vec![(w.to_string(), 1.0)],
                required: false,
            })
            .collect(),
        require_all: false,
        limit: 20,
        ..Query::default()
    };
    for round in 0..300 {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let mut payload = orig[..payload_len].to_vec();
        // The header and section table get extra attention: they steer every read; so do
        // the postings, which every search decodes (elsewhere, most damage goes unread).
        let at = match round % 3 {
            0 => rng.below(header_len),
            1 => postings.0 + rng.below(postings.1),
            _ => rng.below(payload_len),
        };
        match round % 4 {
            0 => payload[at] ^= 1 << rng.below(8),
            1 => payload[at] = 0xff,
            2 => payload[at] = 0,
            _ => payload[at] = payload[at].wrapping_add(1),
        }
        append_footer(&mut payload, FileKind::SEGMENT, SEGMENT_FORMAT_VERSION);
        std::fs::write(dir.path().join(&seg_name), &payload).unwrap();
        if let Ok(index) = Index::open(dir.path(), false) {
            opened += 1;
            let _ = index.search(&kernel_alpha_query(true));
            // Relaxed, so every block of the query's terms is decoded: the two words, then
            // every word (damage to any term's postings block shows).
            let two = index.search(&kernel_alpha_query(false)).is_err();
            if two || index.search(&every_word).is_err() {
                failed += 1;
                assert_eq!(sound.search(&kernel_alpha_query(false)).unwrap(), reference);
            }
            let _ = index.verify();
            let _ = index.merge(true);
        }
    }
    assert!(
        opened > 0 && failed > 0,
        "some damage must get past open and then fail a search ({opened} opened, {failed} failed)"
    );
}
