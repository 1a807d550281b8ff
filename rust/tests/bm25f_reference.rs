//! BM25F scores of the index against a naive implementation computed directly from the
//! documents: same numbers (to 1e-4) for one segment, many segments (commits), after a
//! merge, and with deletes once merged away.

mod common;

use std::collections::HashMap;

use common::{analyze, random_docs, reference_scores, RefQuery, Rng, WORDS};
use kbdb_core::lexical::{format_kbid, Bm25fParams, Clause, Index, Kbid, Query};
use kbdb_core::text::Analyzer;

fn term(analyzer: &Analyzer, word: &str) -> String {
    let mut out = String::new();
    analyzer.analyze(word, |t, _, _, _| out = t.to_string());
    out
}

fn random_query(rng: &mut Rng, analyzer: &Analyzer, strict: bool) -> (Query, RefQuery) {
    let n = 1 + rng.below(3);
    let mut q = Query {
        require_all: strict,
        limit: 10_000,
        ..Query::default()
    };
    q.params = Bm25fParams {
        k1: 1.2,
        b: [0.75, 0.6, 0.9, 0.5, 0.3],
        weights: [2.0, 1.0, 0.5, 1.5, 2.5],
    };
    let mut r = RefQuery {
        clauses: Vec::new(),
        phrases: Vec::new(),
        strict,
        k1: 1.2,
        b: [0.75, 0.6, 0.9, 0.5, 0.3],
        w: [2.0, 1.0, 0.5, 1.5, 2.5],
    };
    for _ in 0..n {
        let t = term(analyzer, WORDS[rng.below(WORDS.len())]);
        let mut alts = vec![(t, 1.0f32)];
        if rng.below(3) == 0 {
            alts.push((term(analyzer, WORDS[rng.below(WORDS.len())]), 0.5));
        }
        let required = rng.below(4) != 0;
        r.clauses.push((
            alts.iter()
                .map(|(t, w)| (t.clone(), f64::from(*w)))
                .collect(),
            required,
        ));
        q.clauses.push(Clause {
            alternatives: alts,
            required,
        });
    }
    (q, r)
}

fn assert_same(got: &kbdb_core::lexical::Hits, want: &HashMap<Kbid, f64>, what: &str) {
    assert_eq!(got.total as usize, want.len(), "{what}: total");
    assert_eq!(got.kbids.len(), want.len(), "{what}: hits");
    let by_hex: HashMap<String, f64> = want.iter().map(|(k, s)| (format_kbid(k), *s)).collect();
    for (k, s) in got.kbids.iter().zip(&got.scores) {
        let w = by_hex[k];
        assert!(
            (f64::from(*s) - w).abs() <= 1e-4 * w.abs().max(1.0),
            "{what}: {k} {s} vs {w}"
        );
    }
    for pair in got.scores.windows(2) {
        assert!(pair[0] >= pair[1], "{what}: not sorted");
    }
}

#[test]
fn scores_match_the_reference_across_segmentations() {
    let analyzer = Analyzer::new();
    let mut rng = Rng(0x5eed);
    let docs = random_docs(&mut rng, 0, 400);
    let analyzed = analyze(&analyzer, &docs);
    let all: Vec<_> = analyzed.iter().collect();

    let one = tempfile::tempdir().unwrap();
    let single = Index::open(one.path(), true).unwrap();
    single.rebuild(&docs, 1).unwrap();
    let many = tempfile::tempdir().unwrap();
    let multi = Index::open(many.path(), true).unwrap();
    let mut at = 0;
    let mut w = 0;
    while at < docs.len() {
        let n = (1 + rng.below(40)).min(docs.len() - at);
        w += 1;
        multi.commit(&docs[at..at + n], &[], w).unwrap();
        at += n;
    }
    assert!(multi.segment_count() > 1);
    assert_eq!(multi.doc_count(), 400);

    for i in 0..60 {
        let (q, r) = random_query(&mut rng, &analyzer, i % 2 == 0);
        let want = reference_scores(&analyzed, &all, &r);
        assert_same(&single.search(&q).unwrap(), &want, "one segment");
        assert_same(&multi.search(&q).unwrap(), &want, "many segments");
    }
    multi.merge(true).unwrap();
    assert_eq!(multi.segment_count(), 1);
    for i in 0..20 {
        let (q, r) = random_query(&mut rng, &analyzer, i % 2 == 0);
        assert_same(
            &multi.search(&q).unwrap(),
            &reference_scores(&analyzed, &all, &r),
            "merged",
        );
    }
}

#[test]
fn deletes_count_in_stats_until_merged() {
    let analyzer = Analyzer::new();
    let mut rng = Rng(42);
    let docs = random_docs(&mut rng, 0, 200);
    let analyzed = analyze(&analyzer, &docs);
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&docs[..120], &[], 1).unwrap();
    index.commit(&docs[120..], &[], 2).unwrap();
    let gone: Vec<Kbid> = docs.iter().step_by(3).map(|d| d.kbid).collect();
    index.commit(&[], &gone, 3).unwrap();
    let live: Vec<_> = analyzed
        .iter()
        .filter(|a| !gone.contains(&a.kbid))
        .collect();
    assert_eq!(index.doc_count() as usize, live.len());
    let live_docs: Vec<_> = live
        .iter()
        .map(|a| analyzed.iter().position(|b| b.kbid == a.kbid).unwrap())
        .collect();
    let live_analyzed = analyze(
        &analyzer,
        &live_docs
            .iter()
            .map(|&i| docs[i].clone())
            .collect::<Vec<_>>(),
    );
    for i in 0..20 {
        let (q, r) = random_query(&mut rng, &analyzer, i % 2 == 0);
        // Before a merge: statistics include the tombstoned docs (Lucene semantics).
        assert_same(
            &index.search(&q).unwrap(),
            &reference_scores(&analyzed, &live, &r),
            "tombstoned",
        );
    }
    index.merge(true).unwrap();
    let live2: Vec<_> = live_analyzed.iter().collect();
    for i in 0..20 {
        let (q, r) = random_query(&mut rng, &analyzer, i % 2 == 0);
        assert_same(
            &index.search(&q).unwrap(),
            &reference_scores(&live_analyzed, &live2, &r),
            "merged",
        );
    }
}
