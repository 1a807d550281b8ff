//! `vectors.idx` and `vectors-meta.toml` checked by an independent reader: the bytes are
//! parsed by hand here (not with the crate's reader), against the seed's layout.

mod vector_util;

use std::path::Path;

use kbdb_core::vector::{OpenMode, VectorIndex};
use proptest::prelude::*;
use vector_util::{dataset, Rng};

/// One record: kbid hash and vector.
type Record = ([u8; 16], Vec<f32>);

/// The seed's layout, parsed by hand: (version, dimensions, records).
fn parse_by_hand(bytes: &[u8]) -> (u8, u16, Vec<Record>) {
    assert_eq!(&bytes[0..4], b"KBVX", "magic");
    let version = bytes[4];
    let dims = u16::from_le_bytes([bytes[5], bytes[6]]);
    let count = u32::from_le_bytes([bytes[7], bytes[8], bytes[9], bytes[10]]) as usize;
    let record = 16 + dims as usize * 4;
    assert_eq!(
        bytes.len(),
        11 + count * record,
        "size = header + count x record"
    );
    let records = (0..count)
        .map(|i| {
            let r = &bytes[11 + i * record..11 + (i + 1) * record];
            let kbid: [u8; 16] = r[..16].try_into().unwrap();
            let v = r[16..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            (kbid, v)
        })
        .collect();
    (version, dims, records)
}

fn create(dir: &Path, dims: u16) -> VectorIndex {
    VectorIndex::open(
        dir,
        OpenMode::Create {
            model_name: "test-model".into(),
            dimensions: dims,
        },
    )
    .unwrap()
}

#[test]
fn layout_is_the_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let index = create(dir.path(), 3);
    let kbids = [[9u8; 16], [1u8; 16], [5u8; 16]];
    let vectors: Vec<f32> = vec![0.5, -1.0, 2.0, 1.0, 0.0, 0.25, -3.5, 4.0, 1e-3];
    let bytes: Vec<u8> = vectors.iter().flat_map(|x| x.to_le_bytes()).collect();
    index.write(&kbids, &bytes, "test-model", None, 42).unwrap();

    let raw = std::fs::read(dir.path().join("vectors.idx")).unwrap();
    // Header, byte by byte.
    assert_eq!(
        raw[..11],
        [b'K', b'B', b'V', b'X', 1, 3, 0, 3, 0, 0, 0],
        "magic, version 1, dims 3 (u16 LE), count 3 (u32 LE)"
    );
    let (version, dims, records) = parse_by_hand(&raw);
    assert_eq!((version, dims), (1, 3));
    let keys: Vec<u8> = records.iter().map(|r| r.0[0]).collect();
    assert_eq!(keys, vec![1, 5, 9], "sorted by kbid_hash");
    assert_eq!(records[0].1, vec![1.0, 0.0, 0.25]);
    assert_eq!(records[1].1, vec![-3.5, 4.0, 1e-3]);
    assert_eq!(records[2].1, vec![0.5, -1.0, 2.0]);
    // The first record's first float, at byte 11 + 16 = 27, little-endian.
    assert_eq!(raw[27..31], 1.0f32.to_le_bytes());
    assert_eq!(raw.len(), 11 + 3 * (16 + 3 * 4));

    let text = std::fs::read_to_string(dir.path().join("vectors-meta.toml")).unwrap();
    let (first, body) = text.split_once('\n').unwrap();
    assert_eq!(
        first,
        format!(
            "meta_checksum = \"{:08x}\"",
            crc32fast::hash(body.as_bytes())
        )
    );
    let meta: toml::Table = toml::from_str(&text).unwrap();
    let v = meta["vectors"].as_table().unwrap();
    assert_eq!(v["model_name"].as_str(), Some("test-model"));
    assert_eq!(v["dimensions"].as_integer(), Some(3));
    assert_eq!(v["version"].as_integer(), Some(1));
    assert_eq!(v["section_count"].as_integer(), Some(3));
    assert_eq!(v["watermark"].as_integer(), Some(42));
    let built = v["last_built"].as_str().unwrap();
    assert!(
        built.len() == 20 && built.ends_with('Z') && &built[10..11] == "T",
        "{built}"
    );
    assert_eq!(
        v["checksum"].as_str().unwrap(),
        format!("{:08x}", crc32fast::hash(&raw)),
        "checksum = crc32 of vectors.idx"
    );
    // The seed's five keys come first, in the seed's order.
    let order: Vec<&str> = body
        .lines()
        .skip_while(|l| *l != "[vectors]")
        .skip(1)
        .take(5)
        .map(|l| l.split(" =").next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "model_name",
            "dimensions",
            "version",
            "last_built",
            "section_count"
        ]
    );
}

#[test]
fn side_files_use_the_same_record_format() {
    let dir = tempfile::tempdir().unwrap();
    let index = create(dir.path(), 2);
    let one: Vec<u8> = [1.0f32, 0.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    index
        .write(&[[1u8; 16]], &one, "test-model", None, 1)
        .unwrap();
    let two: Vec<u8> = [0.0f32, 1.0, 0.6, 0.8]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    index.append(&[[7u8; 16], [1u8; 16]], &two, 2).unwrap();
    let meta: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.path().join("vectors-meta.toml")).unwrap())
            .unwrap();
    let v = meta["vectors"].as_table().unwrap();
    let appends = v["appends"].as_str().unwrap();
    assert!(appends.starts_with("vectors-add.") && appends.ends_with(".idx"));
    let raw = std::fs::read(dir.path().join(appends)).unwrap();
    let (_, dims, records) = parse_by_hand(&raw);
    assert_eq!(dims, 2);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0], ([1u8; 16], vec![0.6, 0.8]));
    assert_eq!(records[1], ([7u8; 16], vec![0.0, 1.0]));
    assert_eq!(
        v["append_checksum"].as_str().unwrap(),
        format!("{:08x}", crc32fast::hash(&raw))
    );
    // [1;16] in vectors.idx is superseded: one tombstone, two appends, two live.
    assert_eq!(v["tombstone_count"].as_integer(), Some(1));
    assert_eq!(v["section_count"].as_integer(), Some(2));
    // vectors.idx itself is untouched by appends.
    let (_, _, base) = parse_by_hand(&std::fs::read(dir.path().join("vectors.idx")).unwrap());
    assert_eq!(base, vec![([1u8; 16], vec![1.0, 0.0])]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Write then read back, through the crate's reader and the hand parser.
    #[test]
    fn round_trip(n in 0usize..300, dims in 1u16..70, seed in any::<u64>()) {
        let dir = tempfile::tempdir().unwrap();
        let index = create(dir.path(), dims);
        let mut rng = Rng(seed | 1);
        let (kbids, bytes) = dataset(&mut rng, n, dims as usize);
        index.write(&kbids, &bytes, "m", None, 7).unwrap();
        let reopened = VectorIndex::open(dir.path(), OpenMode::Existing).unwrap();
        let snap = reopened.snapshot();
        prop_assert_eq!(snap.count(), n as u64);
        let len = dims as usize * 4;
        for (i, k) in kbids.iter().enumerate() {
            prop_assert_eq!(snap.lookup(k), Some(&bytes[i * len..(i + 1) * len]));
        }
        let raw = std::fs::read(dir.path().join("vectors.idx")).unwrap();
        let (_, d, records) = parse_by_hand(&raw);
        prop_assert_eq!(d, dims);
        prop_assert!(records.windows(2).all(|w| w[0].0 < w[1].0));
        let mut want = kbids.clone();
        want.sort_unstable();
        prop_assert_eq!(records.iter().map(|r| r.0).collect::<Vec<_>>(), want);
        prop_assert!(reopened.verify().is_empty());
    }
}
