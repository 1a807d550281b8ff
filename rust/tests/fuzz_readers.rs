//! Hostile bytes for every engine reader (docs/reliability.md): proptest feeds arbitrary and
//! mutated bytes to the segment, tombstone, manifest, `vectors.idx`, vector tombstone and
//! `vectors-meta.toml` readers. Every case must give `Ok` or `Err`, never a panic; what
//! opens must survive a search. Mutations are *re-sealed* (a fresh footer or checksum) so
//! that they get past the checksums and reach the structural checks behind them.
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default; `make test-slow` runs more).
//! Failing inputs are kept in `fuzz_readers.proptest-regressions` beside this file.
//! Also the regression tests of a directory standing where an index file should be.

mod common;
mod vector_util;

use std::fs;
use std::path::{Path, PathBuf};

use common::{kernel_alpha_query, random_docs, Rng};
use kbdb_core::format::{append_footer, FileKind, FOOTER_LEN};
use kbdb_core::lexical::{
    Index, Manifest, SegmentReader, Tombstones, FIELD_COUNT, SEGMENT_FORMAT_VERSION,
    TOMBSTONE_FORMAT_VERSION,
};
use kbdb_core::vector::{read_tombstones, Meta, OpenMode, Threads, VectorIndex, META_FILE};
use kbdb_core::Error;
use proptest::prelude::*;

const DIMS: usize = 8;

fn build_lexical(dir: &Path) {
    let index = Index::open(dir, true).unwrap();
    let mut rng = Rng(91);
    let docs = random_docs(&mut rng, 0, 120);
    index.commit(&docs[..100], &[], 1).unwrap();
    index
        .commit(&docs[100..], &[docs[3].kbid, docs[110].kbid], 2)
        .unwrap();
}

fn build_vectors(dir: &Path) {
    let index = VectorIndex::open(
        dir,
        OpenMode::Create {
            model_name: "m".into(),
            dimensions: DIMS as u16,
        },
    )
    .unwrap();
    let (kbids, bytes) = vector_util::dataset(&mut vector_util::Rng(12), 30, DIMS);
    let split = 25 * DIMS * 4;
    index
        .write(&kbids[..25], &bytes[..split], "m", None, 1)
        .unwrap();
    index.append(&kbids[25..], &bytes[split..], 2).unwrap();
    index.delete(&kbids[..2], 3).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn file_ending(dir: &Path, suffix: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    found
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no {suffix}"))
}

/// The index opened from `dir`, exercised the way a search and a merge would.
fn exercise_lexical(dir: &Path) {
    if let Ok(index) = Index::open(dir, false) {
        let _ = index.search(&kernel_alpha_query(true));
        let _ = index.search(&kernel_alpha_query(false));
        let _ = index.verify();
        let _ = index.merge(true);
    }
}

fn exercise_vectors(dir: &Path) {
    if let Ok(index) = VectorIndex::open(dir, OpenMode::Existing) {
        let snap = index.snapshot();
        let _ = snap.search(&[0.25; DIMS], 5, None, Threads::Current);
        let _ = snap.search(&[0.25; DIMS], 0, None, Threads::Current);
        let _ = index.verify();
    }
}

/// Up to 8 (offset, byte) overwrites; offsets are taken modulo the length.
fn edits() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)
}

fn apply(bytes: &mut [u8], edits: &[(usize, u8)], window: usize) {
    if bytes.is_empty() {
        return;
    }
    let span = window.min(bytes.len()).max(1);
    for &(at, b) in edits {
        bytes[at % span] = b;
    }
}

fn reseal_meta(text_body: &str, first_key: &str) -> String {
    format!(
        "{first_key} = \"{:08x}\"\n{text_body}",
        crc32fast::hash(text_body.as_bytes())
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::SourceParallel("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    /// Arbitrary payloads behind a valid footer: the segment reader's structural checks.
    #[test]
    fn segment_reader_takes_any_payload(payload in prop::collection::vec(any::<u8>(), 0..600)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg-0000000000000000.seg");
        let mut bytes = payload;
        append_footer(&mut bytes, FileKind::SEGMENT, SEGMENT_FORMAT_VERSION);
        fs::write(&path, &bytes).unwrap();
        if let Ok(reader) = SegmentReader::open(&path) {
            let _ = reader.check_all();
            let _ = reader.term_info(b"kernel");
            for ord in 0..reader.doc_count().min(4) {
                let _ = reader.kbid(ord);
            }
        }
    }

    /// A real segment with a few bytes overwritten (half the time in its header and
    /// section table, which steer every read), re-sealed, under a real manifest.
    #[test]
    fn mutated_segments_never_panic(edits in edits(), header in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        build_lexical(dir.path());
        let seg = file_ending(dir.path(), ".seg");
        let orig = fs::read(&seg).unwrap();
        let mut payload = orig[..orig.len() - FOOTER_LEN].to_vec();
        // The header: counts, a total per field, the table of eight sections.
        let window = if header { 8 + FIELD_COUNT * 8 + 8 * 16 } else { payload.len() };
        apply(&mut payload, &edits, window);
        append_footer(&mut payload, FileKind::SEGMENT, SEGMENT_FORMAT_VERSION);
        fs::write(&seg, &payload).unwrap();
        exercise_lexical(dir.path());
    }

    #[test]
    fn tombstone_reader_takes_any_payload(payload in prop::collection::vec(any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg-0000000000000000.1.del");
        let mut bytes = payload;
        append_footer(&mut bytes, FileKind::TOMBSTONE, TOMBSTONE_FORMAT_VERSION);
        fs::write(&path, &bytes).unwrap();
        let _ = Tombstones::read(&path);
    }

    /// Arbitrary manifest text behind a correct checksum line reaches the TOML parser and
    /// the validation; a mutated real manifest, re-sealed, must open or fail cleanly.
    #[test]
    fn manifests_never_panic(body in ".{0,300}", edits in edits()) {
        let path = Path::new("meta.toml");
        let _ = Manifest::parse(path, body.as_bytes());
        let _ = Manifest::parse(path, reseal_meta(&body, "checksum").as_bytes());
        let dir = tempfile::tempdir().unwrap();
        build_lexical(dir.path());
        let text = fs::read_to_string(dir.path().join("meta.toml")).unwrap();
        let (_, real_body) = text.split_once('\n').unwrap();
        let mut bytes = real_body.as_bytes().to_vec();
        apply(&mut bytes, &edits, usize::MAX);
        let mutated = String::from_utf8_lossy(&bytes).into_owned();
        fs::write(dir.path().join("meta.toml"), reseal_meta(&mutated, "checksum")).unwrap();
        exercise_lexical(dir.path());
    }

    /// `vectors.idx` with arbitrary bytes (half the time a valid KBVX header in front),
    /// and the meta file re-sealed to match its length and checksum, so the record
    /// reader's own checks are what stands between the bytes and a search.
    #[test]
    fn vector_files_never_panic(
        tail in prop::collection::vec(any::<u8>(), 0..400),
        dims in 0u16..12,
        count in 0u32..40,
        with_header in any::<bool>(),
        meta_edits in edits(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        build_vectors(dir.path());
        let mut bytes = Vec::new();
        if with_header {
            bytes.extend_from_slice(b"KBVX");
            bytes.push(1);
            bytes.extend_from_slice(&dims.to_le_bytes());
            bytes.extend_from_slice(&count.to_le_bytes());
        }
        bytes.extend_from_slice(&tail);
        fs::write(dir.path().join("vectors.idx"), &bytes).unwrap();
        let meta_path = dir.path().join(META_FILE);
        let text = fs::read_to_string(&meta_path).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        let body: String = body
            .lines()
            .map(|l| {
                if l.starts_with("checksum = ") {
                    format!("checksum = \"{:08x}\"", crc32fast::hash(&bytes))
                } else if l.starts_with("record_count = ") {
                    format!("record_count = {count}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        fs::write(&meta_path, reseal_meta(&body, "meta_checksum")).unwrap();
        exercise_vectors(dir.path());
        // and the meta file itself, mutated and re-sealed
        let mut mb = body.into_bytes();
        apply(&mut mb, &meta_edits, usize::MAX);
        let mutated = String::from_utf8_lossy(&mb).into_owned();
        let _ = Meta::parse(&meta_path, mutated.as_bytes());
        fs::write(&meta_path, reseal_meta(&mutated, "meta_checksum")).unwrap();
        exercise_vectors(dir.path());
    }

    #[test]
    fn vector_tombstones_take_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors-del.1.tomb");
        fs::write(&path, &bytes).unwrap();
        let _ = read_tombstones(&path);
    }
}

/// Which file of a vector index a regression case replaces, by its name.
type NamePredicate = fn(&str) -> bool;

fn is_corrupt<T>(r: &Result<T, Error>) -> bool {
    matches!(r, Err(Error::Corrupt { .. }))
}

/// Regression (found by the corruption matrix): a directory where an index file should be
/// was an `Io` error (EISDIR, or ENODEV from mapping it), which Python saw as a bare OSError,
/// and a rebuild could not replace it.
#[test]
fn a_directory_in_place_of_any_lexical_file_is_corrupt_and_reset_clears_it() {
    let pristine = tempfile::tempdir().unwrap();
    build_lexical(pristine.path());
    for suffix in ["meta.toml", ".seg", ".del"] {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let victim = file_ending(dir.path(), suffix);
        fs::remove_file(&victim).unwrap();
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("stray"), b"x").unwrap();
        let r = Index::open(dir.path(), false);
        assert!(is_corrupt(&r), "{suffix}: {:?}", r.err());
        let index = Index::reset(dir.path(), kbdb_core::text::Language::English).unwrap();
        index.rebuild(&random_docs(&mut Rng(3), 0, 10), 3).unwrap();
        assert!(!victim.is_dir(), "{suffix}: the directory is still there");
        assert!(Index::open(dir.path(), false).unwrap().verify().is_empty());
    }
}

#[test]
fn a_directory_in_place_of_any_vector_file_is_corrupt_and_reset_clears_it() {
    let pristine = tempfile::tempdir().unwrap();
    build_vectors(pristine.path());
    let kinds: [(&str, NamePredicate); 4] = [
        ("vectors.idx", |n| n == "vectors.idx"),
        ("tombstones", |n| n.starts_with("vectors-del.")),
        ("meta", |n| n == META_FILE),
        ("appends", |n| n.starts_with("vectors-add.")),
    ];
    for (kind, wanted) in kinds {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(pristine.path(), dir.path());
        let victim = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| wanted(&p.file_name().unwrap().to_string_lossy()))
            .unwrap_or_else(|| panic!("no {kind} file"));
        fs::remove_file(&victim).unwrap();
        fs::create_dir(&victim).unwrap();
        let r = VectorIndex::open(dir.path(), OpenMode::Existing);
        assert!(is_corrupt(&r), "{kind}: {:?}", r.err());
        let index = VectorIndex::open(
            dir.path(),
            OpenMode::Reset {
                model_name: "m".into(),
                dimensions: DIMS as u16,
            },
        )
        .unwrap();
        let (kbids, bytes) = vector_util::dataset(&mut vector_util::Rng(4), 5, DIMS);
        index.write(&kbids, &bytes, "m", None, 9).unwrap();
        let again = VectorIndex::open(dir.path(), OpenMode::Existing).unwrap();
        assert_eq!(again.snapshot().count(), 5, "{kind}");
        let dirs: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        assert!(dirs.is_empty(), "{kind}: left {dirs:?}");
    }
}
