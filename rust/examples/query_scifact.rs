//! Relaxed top-10 BM25F search of the 300 SciFact test queries over one index of all
//! SciFact sections, `ROUNDS` times (default 5), printing each round's queries/s: the
//! engine side of the Rust row of `benches/bench_lexical_speed.py` without Python, for
//! profiling (`valgrind --tool=callgrind`; compare 1 and 2 rounds for the per-round cost).
//!
//! `cargo run --release --manifest-path rust/Cargo.toml --example query_scifact [ROUNDS]`

use std::hint::black_box;
use std::time::Instant;

use kbdb_core::lexical::Query;

#[path = "../tests/common/scifact.rs"]
mod scifact;

fn main() {
    let rounds = scifact::rounds_arg(5);
    let data = scifact::load_or_exit();
    let (_dir, index) = scifact::empty_index();
    // KBDB_BATCH: commit in batches of this many sections (one segment each, as `learn`
    // commits 2,048 at a time), instead of one segment.
    let batch: usize = std::env::var("KBDB_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(data.docs.len());
    for (i, docs) in data.docs.chunks(batch.max(1)).enumerate() {
        index.commit(docs, &[], i as u64 + 1).expect("commit");
    }
    let queries: Vec<Query> = data
        .queries
        .iter()
        .map(|clauses| Query {
            clauses: clauses.clone(),
            require_all: false,
            limit: 10,
            ..Query::default()
        })
        .collect();
    for r in 0..rounds {
        let t0 = Instant::now();
        for q in &queries {
            black_box(index.search(q).expect("search"));
        }
        let s = t0.elapsed().as_secs_f64();
        println!("round {r}: {:.0} queries/s", queries.len() as f64 / s);
    }
}
