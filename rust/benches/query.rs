//! BM25F query evaluation on SciFact (5,183 sections, 300 judged test queries), falling
//! back to a synthetic corpus when the dataset is missing (`SCIFACT_DIR` overrides where
//! it is looked for): relaxed (any clause) and strict (every required clause) top-k, with
//! dynamic pruning and with the exhaustive reference evaluation. One iteration runs every
//! query once; throughput is in queries.
//!
//! `cargo bench --manifest-path rust/Cargo.toml --bench query`

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kbdb_core::lexical::{Clause, Doc, Index, Query};

#[path = "../tests/common/mod.rs"]
mod common;

use common::{random_docs, scifact, Rng, WORDS};

fn synthetic() -> (Vec<Doc>, Vec<Vec<Clause>>) {
    let mut rng = Rng(7);
    let docs = random_docs(&mut rng, 0, 5_000);
    let queries = (0..300)
        .map(|_| {
            (0..2 + rng.below(8))
                .map(|_| Clause {
                    alternatives: vec![(WORDS[rng.below(WORDS.len())].to_string(), 1.0)],
                    required: true,
                })
                .collect()
        })
        .collect();
    (docs, queries)
}

fn query(c: &mut Criterion) {
    let (docs, queries, name) = match scifact::load() {
        Some(s) => (s.docs, s.queries, "scifact"),
        None => {
            let (d, q) = synthetic();
            (d, q, "synthetic")
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Index::open(dir.path(), true).expect("open index");
    index.commit(&docs, &[], 1).expect("commit");
    let mut g = c.benchmark_group(format!("query/{name}"));
    g.throughput(Throughput::Elements(queries.len() as u64));
    for (mode, require_all, limit) in [
        ("relaxed_top10", false, 10),
        ("relaxed_top100", false, 100),
        ("strict_top10", true, 10),
    ] {
        let qs: Vec<Query> = queries
            .iter()
            .map(|clauses| Query {
                clauses: clauses.clone(),
                require_all,
                limit,
                ..Query::default()
            })
            .collect();
        g.bench_function(mode, |b| {
            b.iter(|| {
                for q in &qs {
                    black_box(index.search(q).expect("search"));
                }
            })
        });
        g.bench_function(format!("{mode}_exhaustive"), |b| {
            b.iter(|| {
                for q in &qs {
                    black_box(index.search_exhaustive(q).expect("search"));
                }
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = query
}
criterion_main!(benches);
