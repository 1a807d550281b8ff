//! A collection split over shards scores exactly as one index: each shard searched with
//! the collection's statistics (`Query::corpus`, the sum of every shard's
//! `Index::term_stats`) and the shards' top lists merged by score, then kbid, give the
//! one index's kbids, score bits, matched masks, clause bounds and `total`; in strict,
//! relaxed and tiered searches, with random BM25F parameters and `allow` filters.

mod common;

use std::collections::HashMap;

use common::{random_docs, Rng, WORDS};
use kbdb_core::lexical::{
    Bm25fParams, Clause, CorpusStats, Doc, GlobalStats, Hits, Index, Kbid, Query,
};
use proptest::prelude::*;

fn random_query(rng: &mut Rng, kbids: &[Kbid]) -> Query {
    let clauses = (0..1 + rng.below(5))
        .map(|_| Clause {
            alternatives: (0..1 + rng.below(2))
                .map(|_| (WORDS[rng.below(WORDS.len())].to_string(), 1.0))
                .collect(),
            required: rng.below(3) != 0,
        })
        .collect();
    let unit = |rng: &mut Rng| rng.below(101) as f32 / 100.0;
    let params = if rng.below(2) == 0 {
        Bm25fParams::default()
    } else {
        Bm25fParams {
            k1: [0.5, 1.2, 2.0][rng.below(3)],
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
        require_all: rng.below(2) == 0,
        limit: [1, 3, 10, 30][rng.below(4)],
        allow,
        params,
        common_cutoff: [0.0, 0.3][rng.below(2)],
        ..Query::default()
    }
}

/// The collection's statistics for `q`: every shard's, summed.
fn gather(shards: &[Index], q: &Query) -> GlobalStats {
    let mut terms: Vec<String> = q
        .clauses
        .iter()
        .flat_map(|c| c.alternatives.iter().map(|(t, _)| t.clone()))
        .collect();
    terms.sort();
    terms.dedup();
    let mut stats = CorpusStats::default();
    let mut df: HashMap<String, u64> = HashMap::new();
    for s in shards {
        let (part, dfs) = s.term_stats(&terms).unwrap();
        stats.docs += part.docs;
        for (total, t) in stats.field_totals.iter_mut().zip(part.field_totals) {
            *total += t;
        }
        for (t, n) in terms.iter().zip(dfs) {
            *df.entry(t.clone()).or_default() += n;
        }
    }
    GlobalStats { stats, df }
}

/// The shards' lists merged into one top-`limit`, as a coordinator does.
fn merge(parts: Vec<Hits>, limit: usize) -> Hits {
    let mut all: Vec<(f32, String, Vec<u8>)> = Vec::new();
    let mut out = Hits::default();
    for h in parts {
        out.total += h.total;
        out.clause_bounds = h.clause_bounds.clone();
        out.common = h.common.clone();
        all.extend(
            h.scores
                .into_iter()
                .zip(h.kbids)
                .zip(h.matched)
                .map(|((s, k), m)| (s, k, m)),
        );
    }
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (s, k, m) in all.into_iter().take(limit) {
        out.scores.push(s);
        out.kbids.push(k);
        out.matched.push(m);
    }
    out
}

fn assert_same(sharded: &Hits, one: &Hits, q: &Query) {
    assert_eq!(sharded.kbids, one.kbids, "{q:?}");
    let bits = |h: &Hits| h.scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(sharded), bits(one), "{q:?}");
    assert_eq!(sharded.matched, one.matched, "{q:?}");
    assert_eq!(sharded.total, one.total, "{q:?}");
    assert_eq!(sharded.clause_bounds, one.clause_bounds, "{q:?}");
    assert_eq!(sharded.common, one.common, "{q:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn shards_with_the_collections_statistics_rank_as_one_index(
        seed in 1u64..u64::MAX,
        n_docs in 1usize..600,
        n_shards in 2usize..5,
    ) {
        let mut rng = Rng(seed);
        let docs = random_docs(&mut rng, 0, n_docs);
        let dir = tempfile::tempdir().unwrap();
        let one = Index::open(&dir.path().join("one"), true).unwrap();
        one.commit(&docs, &[], 1).unwrap();
        let mut parts: Vec<Vec<Doc>> = vec![Vec::new(); n_shards];
        for d in &docs {
            parts[rng.below(n_shards)].push(d.clone());
        }
        let shards: Vec<Index> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = Index::open(&dir.path().join(format!("s{i}")), true).unwrap();
                s.commit(p, &[], 1).unwrap();
                s
            })
            .collect();
        let kbids: Vec<Kbid> = docs.iter().map(|d| d.kbid).collect();
        for _ in 0..20 {
            let q = random_query(&mut rng, &kbids);
            let global = Query { corpus: Some(gather(&shards, &q)), ..q.clone() };
            let sharded = merge(shards.iter().map(|s| s.search(&global).unwrap()).collect(), q.limit);
            assert_same(&sharded, &one.search(&q).unwrap(), &q);
            if q.require_all {
                let below = [1, 10, 1000][rng.below(3)];
                let (strict_one, _) = one.search_tiers(&q, below).unwrap();
                let strict: Vec<Hits> =
                    shards.iter().map(|s| s.search_tiers(&global, below).unwrap().0).collect();
                assert_same(&merge(strict, q.limit), &strict_one, &q);
            }
        }
    }
}

/// A term missing from the given statistics is an error, not a silent local df.
#[test]
fn statistics_without_a_query_term_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    let mut rng = Rng(7);
    index.commit(&random_docs(&mut rng, 0, 20), &[], 1).unwrap();
    let q = Query {
        clauses: vec![Clause {
            alternatives: vec![(WORDS[0].to_string(), 1.0)],
            required: true,
        }],
        corpus: Some(GlobalStats::default()),
        ..Query::default()
    };
    let err = index.search(&q).unwrap_err().to_string();
    assert!(err.contains("term_stats"), "{err}");
}
