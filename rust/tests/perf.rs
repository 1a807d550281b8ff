//! Rough timings on the SciFact corpus (ignored by default; run with `--ignored
//! --nocapture`; `SCIFACT_DIR` overrides the dataset location). Not a benchmark suite:
//! `benches/` holds those. Useful under a profiler (`perf record`).

mod common;

use std::time::Instant;

use common::scifact;
use kbdb_core::lexical::{build_segment, Index, Query};
use kbdb_core::text::Analyzer;

#[test]
#[ignore]
fn build_scifact() {
    let Some(data) = scifact::load() else { return };
    let docs = data.docs;
    let analyzer = Analyzer::new();
    let t = Instant::now();
    let mut n = 0usize;
    for d in &docs {
        for f in &d.fields {
            analyzer.analyze(f, |_, _, _, _| n += 1);
        }
    }
    println!(
        "analyze (1 thread): {:?} for {} docs, {n} terms",
        t.elapsed(),
        docs.len()
    );
    let t = Instant::now();
    let (bytes, _) = build_segment(&analyzer, &docs).unwrap();
    println!("build_segment: {:?}, {} bytes", t.elapsed(), bytes.len());
}

#[test]
#[ignore]
fn query_scifact() {
    let Some(data) = scifact::load() else { return };
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), true).unwrap();
    index.commit(&data.docs, &[], 1).unwrap();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    // `ONLY=pruned` or `ONLY=exhaustive` narrows the run (for a profiler).
    let only = std::env::var("ONLY").unwrap_or_default();
    let limits: Vec<usize> = std::env::var("LIMITS")
        .map(|l| l.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|_| vec![10, 100]);
    let strict = [(true, 10)].into_iter().filter(|_| limits.len() > 1);
    for (require_all, limit) in limits.iter().map(|&l| (false, l)).chain(strict) {
        let qs: Vec<Query> = data
            .queries
            .iter()
            .map(|clauses| Query {
                clauses: clauses.clone(),
                require_all,
                limit,
                ..Query::default()
            })
            .collect();
        for (name, exhaustive) in [("pruned", false), ("exhaustive", true)] {
            if !only.is_empty() && only != name {
                continue;
            }
            let t = Instant::now();
            for _ in 0..rounds {
                for q in &qs {
                    let hits = if exhaustive {
                        index.search_exhaustive(q)
                    } else {
                        index.search(q)
                    };
                    std::hint::black_box(hits.unwrap());
                }
            }
            let qps = (rounds * qs.len()) as f64 / t.elapsed().as_secs_f64();
            println!("require_all={require_all} limit={limit} {name}: {qps:.0} q/s");
        }
    }
}
