//! Matching semantics: strict vs relaxed, phrases, allow filters, tombstones, re-adds,
//! reopening from disk, the merge policy, and concurrent readers during merges.

mod common;

use common::{kbid, random_docs, Rng};
use kbdb_core::lexical::{
    format_kbid, Clause, Doc, Index, Query, FIELD_BODY, FIELD_CODE, FIELD_HEADING,
};
use kbdb_core::Error;

fn doc(i: u64, heading: &str, body: &str, code: &str) -> Doc {
    Doc {
        kbid: kbid(i),
        fields: [
            heading.into(),
            body.into(),
            code.into(),
            String::new(),
            String::new(),
        ],
    }
}

fn clause(terms: &[&str], required: bool) -> Clause {
    Clause {
        alternatives: terms.iter().map(|t| (t.to_string(), 1.0)).collect(),
        required,
    }
}

fn query(clauses: Vec<Clause>) -> Query {
    Query {
        clauses,
        limit: 100,
        ..Query::default()
    }
}

fn ids(index: &Index, q: &Query) -> Vec<u64> {
    let hits = index.search(q).unwrap();
    let mut out: Vec<u64> = hits
        .kbids
        .iter()
        .map(|k| {
            (0..100)
                .find(|&i| format_kbid(&kbid(i)) == *k)
                .expect("known kbid")
        })
        .collect();
    out.sort_unstable();
    out
}

fn corpus() -> Vec<Doc> {
    vec![
        doc(
            0,
            "kernel socket",
            "buffer overflow in the socket layer",
            "",
        ),
        doc(1, "socket", "socket buffer", "let socket = open();"),
        doc(2, "buffer", "overflow buffer kernel", ""),
        doc(3, "", "vector kernel", "kernel socket buffer"),
    ]
}

#[test]
fn strict_relaxed_and_optional_clauses() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&corpus(), &[], 1).unwrap();
    let both = query(vec![clause(&["kernel"], true), clause(&["socket"], true)]);
    assert_eq!(ids(&index, &both), vec![0, 3]);
    let relaxed = Query {
        require_all: false,
        ..both.clone()
    };
    assert_eq!(ids(&index, &relaxed), vec![0, 1, 2, 3]);
    let optional = query(vec![clause(&["kernel"], true), clause(&["socket"], false)]);
    assert_eq!(ids(&index, &optional), vec![0, 2, 3]);
    let synonyms = query(vec![
        clause(&["vector", "overflow"], true),
        clause(&["kernel"], true),
    ]);
    assert_eq!(ids(&index, &synonyms), vec![0, 2, 3]);
    let missing = query(vec![
        clause(&["kernel"], true),
        clause(&["nonexistent"], true),
    ]);
    assert_eq!(index.search(&missing).unwrap().total, 0);
    let hits = index.search(&both).unwrap();
    let d3 = hits
        .kbids
        .iter()
        .position(|k| *k == format_kbid(&kbid(3)))
        .unwrap();
    assert_eq!(hits.matched[d3], vec![FIELD_BODY | FIELD_CODE, FIELD_CODE]);
    let d0 = hits
        .kbids
        .iter()
        .position(|k| *k == format_kbid(&kbid(0)))
        .unwrap();
    assert_eq!(
        hits.matched[d0],
        vec![FIELD_HEADING, FIELD_HEADING | FIELD_BODY]
    );
}

#[test]
fn phrases_need_adjacent_positions_in_one_field() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&corpus(), &[], 1).unwrap();
    let mut q = query(vec![clause(&["socket"], true), clause(&["buffer"], true)]);
    assert_eq!(ids(&index, &q), vec![0, 1, 3]);
    q.phrases = vec![vec![("socket".into(), 0), ("buffer".into(), 1)]];
    assert_eq!(ids(&index, &q), vec![1, 3]);
    q.phrases = vec![vec![("buffer".into(), 5), ("socket".into(), 4)]];
    assert_eq!(
        ids(&index, &q),
        vec![1, 3],
        "order of phrase terms does not matter"
    );
    // Doc 0 has "kernel socket" in the heading and "buffer" only in the body.
    q.phrases = vec![vec![
        ("kernel".into(), 0),
        ("socket".into(), 1),
        ("buffer".into(), 2),
    ]];
    assert_eq!(ids(&index, &q), vec![3]);
    // Phrase terms need not be clauses; relaxed mode ignores phrases.
    let only = Query {
        phrases: vec![vec![("overflow".into(), 0), ("buffer".into(), 1)]],
        ..query(vec![])
    };
    assert_eq!(ids(&index, &only), vec![2]);
    let relaxed = Query {
        require_all: false,
        ..q
    };
    assert_eq!(ids(&index, &relaxed), vec![0, 1, 2, 3]);
}

#[test]
fn allow_filter_tombstones_and_readds() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&corpus(), &[], 1).unwrap();
    let q = query(vec![clause(&["buffer"], true)]);
    assert_eq!(ids(&index, &q), vec![0, 1, 2, 3]);
    let allow = Query {
        allow: Some(vec![kbid(1), kbid(3), kbid(77)]),
        ..q.clone()
    };
    assert_eq!(ids(&index, &allow), vec![1, 3]);
    assert_eq!(index.search(&allow).unwrap().total, 2);
    // Delete 1 and unknown 77; delete-and-re-add 2 with new text; plain re-add of 3.
    let readd = vec![
        doc(2, "", "buffer fresh", ""),
        doc(3, "", "nothing here", ""),
    ];
    index
        .commit(&readd, &[kbid(1), kbid(77), kbid(2)], 2)
        .unwrap();
    assert_eq!(index.doc_count(), 3);
    assert_eq!(ids(&index, &q), vec![0, 2]);
    assert_eq!(ids(&index, &query(vec![clause(&["fresh"], true)])), vec![2]);
    assert_eq!(
        ids(&index, &query(vec![clause(&["overflow"], true)])),
        vec![0]
    );
    assert_eq!(ids(&index, &allow), Vec::<u64>::new());
    index.merge(true).unwrap();
    assert_eq!(index.segment_count(), 1);
    assert_eq!(ids(&index, &q), vec![0, 2]);
    // Deleting everything drops the segments.
    index.commit(&[], &[kbid(0), kbid(2), kbid(3)], 3).unwrap();
    assert_eq!((index.doc_count(), index.segment_count()), (0, 0));
    assert_eq!(index.search(&q).unwrap().total, 0);
}

#[test]
fn limit_total_and_explain() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&corpus(), &[], 1).unwrap();
    let q = Query {
        limit: 2,
        explain: true,
        ..query(vec![clause(&["buffer"], true), clause(&["kernel"], false)])
    };
    let hits = index.search(&q).unwrap();
    assert_eq!((hits.kbids.len(), hits.total), (2, 4));
    let explain = hits.explain.as_ref().unwrap();
    for (parts, score) in explain.iter().zip(&hits.scores) {
        let sum: f32 = parts.iter().map(|c| c.score).sum();
        assert!((sum - score).abs() < 1e-4, "{sum} vs {score}");
        assert!(parts
            .iter()
            .all(|c| ["heading", "body", "code"].contains(&c.field)));
    }
    let zero = Query {
        limit: 0,
        ..q.clone()
    };
    let hits = index.search(&zero).unwrap();
    assert_eq!((hits.kbids.len(), hits.total), (0, 4));
    assert!(index
        .search(&Query {
            params: kbdb_core::lexical::Bm25fParams {
                k1: -1.0,
                ..q.params
            },
            ..q
        })
        .is_err());
}

#[test]
fn reopen_reload_and_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let a = Index::open(dir.path(), true).unwrap();
    assert!(matches!(
        Index::open(&dir.path().join("nope"), false),
        Err(Error::Io { .. })
    ));
    a.commit(&corpus(), &[], 7).unwrap();
    let b = Index::open(dir.path(), false).unwrap();
    assert_eq!(
        (b.watermark(), b.doc_count(), b.generation()),
        (7, 4, a.generation())
    );
    let q = query(vec![clause(&["socket"], true)]);
    assert_eq!(a.search(&q).unwrap(), b.search(&q).unwrap());
    // b commits; a is stale but its next commit starts from disk and keeps b's work.
    b.commit(&[doc(10, "socket", "", "")], &[], 8).unwrap();
    assert!(!b.reload().unwrap());
    a.commit(&[doc(11, "socket", "", "")], &[], 9).unwrap();
    assert!(b.reload().unwrap());
    assert_eq!(ids(&b, &q), vec![0, 1, 3, 10, 11]);
    assert_eq!(b.watermark(), 9);
    assert!(a.verify().is_empty());
    // A rebuild replaces everything and leaves only referenced files behind.
    a.rebuild(&[doc(20, "socket", "", "")], 10).unwrap();
    assert!(b.reload().unwrap());
    assert_eq!(ids(&b, &q), vec![20]);
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files.len(), 2, "meta.toml and one segment: {files:?}");
    assert!(matches!(
        a.commit(&[doc(1, "", "", ""), doc(1, "", "", "")], &[], 11),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn merge_policy_keeps_segment_count_logarithmic() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    let mut rng = Rng(9);
    let mut next = 0;
    for w in 0..120 {
        let n = 1 + rng.below(5);
        index
            .commit(&random_docs(&mut rng, next, n), &[], w)
            .unwrap();
        next += n as u64;
        assert!(
            index.segment_count() <= 20,
            "{} segments",
            index.segment_count()
        );
    }
    assert_eq!(index.doc_count(), next);
    let q = query(vec![clause(&["kernel"], false)]);
    let before = index.search(&q).unwrap();
    assert!(index.merge(true).unwrap() > 1);
    assert_eq!(index.segment_count(), 1);
    assert_eq!(index.merge(true).unwrap(), 0);
    let after = index.search(&q).unwrap();
    assert_eq!(before.kbids, after.kbids);
}

#[test]
fn readers_survive_concurrent_merges() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Index::open(dir.path(), true).unwrap();
    let mut rng = Rng(3);
    writer
        .commit(&random_docs(&mut rng, 0, 50), &[], 0)
        .unwrap();
    let path = dir.path().to_path_buf();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = Rng(4);
            for w in 1..60u64 {
                writer
                    .commit(&random_docs(&mut rng, 1000 * w, 3), &[], w)
                    .unwrap();
            }
        });
        s.spawn(|| {
            for _ in 0..200 {
                let r = Index::open(&path, false).expect("open retries when files vanish");
                r.search(&query(vec![clause(&["kernel"], false)])).unwrap();
                let _ = r.reload().unwrap();
            }
        });
    });
}
