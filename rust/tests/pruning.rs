//! The fast evaluators against the exhaustive reference: on random corpora (one or many
//! segments, deletes, `allow` filters) and random queries (synonym alternatives, weights
//! including 0, optional clauses, random BM25F parameters, limits from 0 up), `search`
//! and each evaluator it chooses from (MaxScore, term at a time) return exactly what
//! `search_exhaustive` does: kbids in order, score bits, `total`, matched masks and clause
//! bounds; and `search_tiers` returns what its two searches return.

mod common;

use common::{kbid, random_docs, Rng, WORDS};
use kbdb_core::lexical::{Bm25fParams, Clause, Doc, Evaluation, Hits, Index, Kbid, Query};
use kbdb_core::simd;
use proptest::prelude::*;

const WEIGHTS: [f32; 5] = [1.0, 1.0, 0.6, 0.25, 0.0];

fn random_query(rng: &mut Rng, kbids: &[Kbid]) -> Query {
    let clauses = (0..1 + rng.below(8))
        .map(|_| Clause {
            alternatives: (0..1 + rng.below(3) * rng.below(2))
                .map(|_| {
                    // A few words the corpus never uses.
                    let word = if rng.below(12) == 0 {
                        "nowhere"
                    } else {
                        WORDS[rng.below(WORDS.len())]
                    };
                    (word.to_string(), WEIGHTS[rng.below(WEIGHTS.len())])
                })
                .collect(),
            required: rng.below(3) != 0,
        })
        .collect();
    let unit = |rng: &mut Rng| rng.below(101) as f32 / 100.0;
    // Half the queries share the default parameters, so that they share the snapshot's
    // doc factors (`lexical::cache`); the others change them.
    let params = if rng.below(2) == 0 {
        Bm25fParams::default()
    } else {
        Bm25fParams {
            k1: [0.0, 0.5, 1.2, 2.0][rng.below(4)],
            b: [unit(rng), unit(rng), unit(rng), unit(rng), unit(rng)],
            weights: [
                3.0 * unit(rng),
                2.0 * unit(rng),
                unit(rng),
                2.0 * unit(rng),
                3.0 * unit(rng),
            ],
        }
    };
    let allow = (rng.below(5) == 0).then(|| {
        kbids
            .iter()
            .filter(|_| rng.below(3) != 0)
            .copied()
            .collect()
    });
    Query {
        clauses,
        require_all: rng.below(4) == 0,
        limit: [0, 1, 2, 3, 5, 10, 30, 100][rng.below(8)],
        allow,
        params,
        explain: rng.below(4) == 0,
        ..Query::default()
    }
}

fn assert_same(pruned: &Hits, exhaustive: &Hits, q: &Query) {
    assert_eq!(pruned.kbids, exhaustive.kbids, "{q:?}");
    let bits = |h: &Hits| h.scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(pruned), bits(exhaustive), "{q:?}");
    assert_eq!(pruned.total, exhaustive.total, "{q:?}");
    assert_eq!(pruned.matched, exhaustive.matched, "{q:?}");
    assert_eq!(pruned.explain, exhaustive.explain, "{q:?}");
    assert_eq!(pruned.clause_bounds, exhaustive.clause_bounds, "{q:?}");
}

/// `search` and each of its evaluators return what the exhaustive evaluation returns.
fn assert_all_exact(index: &Index, q: &Query) -> Hits {
    let exhaustive = index.search_exhaustive(q).unwrap();
    // The portable copy of the term-at-a-time loops and the block decoder (`simd`), which
    // a CPU without AVX2 runs.
    let portable = simd::portable(|| index.search_with(q, Evaluation::Dense).unwrap());
    assert_same(&portable, &exhaustive, q);
    for eval in [Evaluation::MaxScore, Evaluation::Dense] {
        assert_same(&index.search_with(q, eval).unwrap(), &exhaustive, q);
    }
    let hits = index.search(q).unwrap();
    assert_same(&hits, &exhaustive, q);
    hits
}

/// An index of `docs` in two segments: the first 500, then the rest.
fn two_segments(dir: &std::path::Path, docs: &[Doc]) -> Index {
    let index = Index::open(dir, true).unwrap();
    index.commit(&docs[..500], &[], 1).unwrap();
    index.commit(&docs[500..], &[], 2).unwrap();
    index
}

/// Commits `docs` in `segments` batches, then deletes about `delete_pct`% of them.
fn build(dir: &std::path::Path, docs: &[Doc], segments: usize, delete_pct: usize, rng: &mut Rng) {
    let index = Index::open(dir, true).unwrap();
    let per = docs.len().div_ceil(segments).max(1);
    for (w, chunk) in docs.chunks(per).enumerate() {
        index.commit(chunk, &[], w as u64 + 1).unwrap();
    }
    let gone: Vec<Kbid> = docs
        .iter()
        .filter(|_| rng.below(100) < delete_pct)
        .map(|d| d.kbid)
        .collect();
    index.commit(&[], &gone, 100).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn every_evaluator_equals_exhaustive(
        seed in 1u64..u64::MAX,
        n_docs in 1usize..700,
        segments in 1usize..4,
        delete_pct in prop::sample::select(vec![0usize, 0, 10, 50]),
    ) {
        let mut rng = Rng(seed);
        let docs = random_docs(&mut rng, 0, n_docs);
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), &docs, segments, delete_pct, &mut rng);
        let index = Index::open(dir.path(), false).unwrap();
        let kbids: Vec<Kbid> = docs.iter().map(|d| d.kbid).collect();
        for _ in 0..25 {
            let q = random_query(&mut rng, &kbids);
            assert_all_exact(&index, &q);
            assert_tiers(&index, &q, &mut rng);
        }
    }
}

/// `search_tiers` returns what two searches return: `q` strict (with its phrases) and, when
/// that has fewer hits than asked or came from the one dense pass, `q` relaxed without
/// them; whichever path it takes (one dense pass; or two searches when the strict hits may
/// reach the threshold, or the query has phrases, `explain`, no required clause or more
/// than 64 clauses).
fn assert_tiers(index: &Index, q: &Query, rng: &mut Rng) {
    let mut strict_q = q.clone();
    strict_q.require_all = true;
    if rng.below(5) == 0 {
        strict_q.phrases = vec![vec![
            (WORDS[rng.below(WORDS.len())].to_string(), 0),
            (WORDS[rng.below(WORDS.len())].to_string(), 1),
        ]];
    }
    let relaxed_q = Query {
        require_all: false,
        phrases: Vec::new(),
        ..strict_q.clone()
    };
    let below = [0, 1, 3, 10, 50, 1000][rng.below(6)];
    let (strict, relaxed) = index.search_tiers(&strict_q, below).unwrap();
    assert_same(&strict, &index.search(&strict_q).unwrap(), &strict_q);
    match relaxed {
        Some(relaxed) => assert_same(&relaxed, &index.search(&relaxed_q).unwrap(), &relaxed_q),
        None => assert!(strict.kbids.len() >= below, "{q:?}"),
    }
}

/// Many docs with the same score: the pruned top-k must break ties by kbid exactly as the
/// exhaustive one does, although the threshold equals the candidates' scores.
#[test]
fn ties_at_the_threshold_are_broken_by_kbid() {
    let docs: Vec<Doc> = (0..1_000u64)
        .map(|i| Doc {
            kbid: kbid(i),
            fields: [
                String::new(),
                if i % 3 == 0 {
                    "kernel socket".into()
                } else {
                    "kernel".into()
                },
                String::new(),
                String::new(),
                String::new(),
            ],
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let index = two_segments(dir.path(), &docs);
    for limit in [1, 7, 10, 100, 400] {
        let q = Query {
            clauses: ["kernel", "socket"]
                .iter()
                .map(|t| Clause {
                    alternatives: vec![(t.to_string(), 1.0)],
                    required: true,
                })
                .collect(),
            require_all: false,
            limit,
            ..Query::default()
        };
        let hits = assert_all_exact(&index, &q);
        assert_eq!(hits.total, 1_000);
    }
}

/// Many clauses: past 16, the term-at-a-time cells keep a 64-bit mask word per field
/// instead of a 16-bit one, up to 64 (beyond, MaxScore serves relaxed queries); past 64 essential
/// clauses, each MaxScore row keeps its column flags in several words (the general path of
/// the window, next to its one-word fast path). Some terms serve two clauses.
#[test]
fn many_clauses_match_the_exhaustive_ranking() {
    // Two-letter suffixes after "zq": words no stemmer or stop list touches.
    let vocab: Vec<String> = (0..120)
        .map(|i| {
            let a = (b'a' + (i / 26) as u8) as char;
            let b = (b'a' + (i % 26) as u8) as char;
            format!("zq{a}{b}")
        })
        .collect();
    let mut rng = Rng(20261203);
    let docs: Vec<Doc> = (0..900u64)
        .map(|i| Doc {
            kbid: kbid(i),
            fields: [
                vocab[rng.below(vocab.len())].clone(),
                (0..40)
                    .map(|_| vocab[rng.below(vocab.len())].as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                String::new(),
                vocab[rng.below(vocab.len())].clone(),
                if i % 4 == 0 {
                    vocab[rng.below(vocab.len())].clone()
                } else {
                    String::new()
                },
            ],
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let index = two_segments(dir.path(), &docs);
    let cases = [
        (16, 10),
        (17, 10),
        (21, 10),
        (22, 10),
        (40, 30),
        (64, 5),
        (65, 10),
        (70, 10),
        (100, 3),
        (130, 30),
    ];
    for (n_clauses, limit) in cases {
        // Clause c asks for vocab[c % 120]: past 120 clauses, terms repeat.
        let clauses = (0..n_clauses)
            .map(|c| Clause {
                alternatives: vec![(vocab[c % vocab.len()].clone(), 1.0 + (c % 3) as f32)],
                required: c % 2 == 0,
            })
            .collect();
        let q = Query {
            clauses,
            require_all: false,
            limit,
            ..Query::default()
        };
        let pruned = assert_all_exact(&index, &q);
        assert_eq!(pruned.kbids.len(), limit);
        assert_tiers(&index, &q, &mut rng);
        // A few required clauses among many, in one pass (the rarest df is below 1000):
        // strict hits exist, and a required term held only in the heading must count.
        let mut few = q.clone();
        for (c, clause) in few.clauses.iter_mut().enumerate() {
            clause.required = c % 11 == 0 && c < 33;
        }
        few.require_all = true;
        let (strict, relaxed) = index.search_tiers(&few, 1000).unwrap();
        assert!(!strict.kbids.is_empty(), "{n_clauses} clauses");
        assert_same(&strict, &index.search(&few).unwrap(), &few);
        let loose = Query {
            require_all: false,
            ..few.clone()
        };
        assert_same(&relaxed.unwrap(), &index.search(&loose).unwrap(), &loose);
    }
}

/// The term-at-a-time evaluation keeps a bitset of the touched docs only when the query's
/// postings are few against the segment's docs, and otherwise reads every cell: queries of
/// rare terms and of common ones, in turns on one thread (each must leave the cells clean
/// for the next), with deletes and `allow` filters, match the exhaustive ranking.
#[test]
fn rare_and_common_terms_in_turns_match_the_exhaustive_ranking() {
    let mut rng = Rng(20261204);
    let mut docs = random_docs(&mut rng, 0, 3_000);
    for (i, doc) in docs.iter_mut().enumerate() {
        if i % 150 == 7 {
            doc.fields[1].push_str(" zqrare");
        }
        if i % 700 == 3 {
            doc.fields[0].push_str(" zqrarer zqrare");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &docs, 1, 10, &mut rng);
    let index = Index::open(dir.path(), false).unwrap();
    let kbids: Vec<Kbid> = docs.iter().map(|d| d.kbid).collect();
    let clause = |word: &str, required: bool| Clause {
        alternatives: vec![(word.to_string(), 1.0)],
        required,
    };
    let queries = [
        vec![clause("zqrare", true)],
        vec![clause("alpha", true), clause("kernel", true)],
        vec![clause("zqrare", true), clause("zqrarer", false)],
        vec![clause("zulu", false), clause("zqrare", true)],
        vec![clause("zqrarer", true)],
    ];
    for round in 0..4 {
        for clauses in &queries {
            let mut q = Query {
                clauses: clauses.clone(),
                require_all: false,
                limit: [3, 10, 30, 100][round],
                ..Query::default()
            };
            if round == 3 {
                q.allow = Some(kbids.iter().copied().filter(|k| k[15] % 4 != 1).collect());
            }
            let hits = assert_all_exact(&index, &q);
            assert!(hits.total > 0, "{q:?}");
            assert_tiers(&index, &q, &mut rng);
        }
    }
}
