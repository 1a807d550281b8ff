//! Snippet texts (as a search page makes them: no highlight spans) of the relaxed top 10 of
//! each of the 300 SciFact test queries, `ROUNDS` times (default 5), printing each round's
//! snippets/s: the snippet side of `kb.search` without Python or SQLite, for profiling (`valgrind --tool=callgrind`; compare 1 and 2 rounds for
//! the per-round cost). Each hit's snippet looks for the alternatives of the clauses it
//! matched, as hydration does. `KBDB_TEXTS=ascii` (or `other`) keeps only the all-ASCII
//! texts (or only the others).
//!
//! `cargo run --release --manifest-path rust/Cargo.toml --example snippet_scifact [ROUNDS]`

use std::hint::black_box;
use std::time::Instant;

use kbdb_core::lexical::Query;
use kbdb_core::text::Analyzer;

#[path = "../tests/common/scifact.rs"]
mod scifact;

fn main() {
    let rounds = scifact::rounds_arg(5);
    let data = scifact::load_or_exit();
    let (_dir, index) = scifact::empty_index();
    index.commit(&data.docs, &[], 1).expect("commit");
    // (body, terms) per hit, ranked once.
    let mut jobs: Vec<(&str, Vec<&str>)> = Vec::new();
    for clauses in &data.queries {
        let q = Query {
            clauses: clauses.clone(),
            require_all: false,
            limit: 10,
            ..Query::default()
        };
        let hits = index.search(&q).expect("search");
        for (kbid, matched) in hits.kbids.iter().zip(&hits.matched) {
            let doc = usize::try_from(u128::from_str_radix(kbid, 16).expect("hex kbid"))
                .expect("doc number");
            let mut terms: Vec<&str> = clauses
                .iter()
                .zip(matched)
                .filter(|(_, &mask)| mask != 0)
                .flat_map(|(c, _)| c.alternatives.iter().map(|(t, _)| t.as_str()))
                .collect();
            terms.sort_unstable();
            terms.dedup();
            jobs.push((data.docs[doc].fields[1].as_str(), terms));
        }
    }
    // KBDB_TEXTS=ascii or other: only the all-ASCII texts, or only the others.
    match std::env::var("KBDB_TEXTS").as_deref() {
        Ok("ascii") => jobs.retain(|(body, _)| body.is_ascii()),
        Ok("other") => jobs.retain(|(body, _)| !body.is_ascii()),
        _ => {}
    }
    let analyzer = Analyzer::new();
    for r in 0..rounds {
        let t0 = Instant::now();
        for (body, terms) in &jobs {
            black_box(analyzer.snippet_text(body, terms, 200, None));
        }
        let s = t0.elapsed().as_secs_f64();
        println!(
            "round {r}: {:.0} snippets/s ({:.2} us each, {} snippets)",
            jobs.len() as f64 / s,
            s * 1e6 / jobs.len() as f64,
            jobs.len()
        );
    }
}
