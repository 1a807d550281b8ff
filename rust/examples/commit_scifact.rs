//! `Index::commit` of all SciFact sections into a fresh index, `ROUNDS` times (default 3),
//! printing each round's time: the engine side of `benches/bench_lexical_speed.py` without
//! Python, for profiling (`valgrind --tool=callgrind`; compare 1 and 2 rounds for the
//! warm cost) and quick timing.
//!
//! `cargo run --release --manifest-path rust/Cargo.toml --example commit_scifact [ROUNDS
//! [KEEP_DIR]]`: with `KEEP_DIR`, the last round's index is copied there (to compare the
//! segment bytes across builds).

use std::time::Instant;

use kbdb_core::lexical::Index;

#[path = "../tests/common/scifact.rs"]
mod scifact;

fn main() {
    let rounds = scifact::rounds_arg(3);
    let data = scifact::load_or_exit();
    for r in 0..rounds {
        let dir = tempfile::tempdir().expect("temp dir");
        let t0 = Instant::now();
        let index = Index::open(dir.path(), true).expect("open");
        index.commit(&data.docs, &[], 1).expect("commit");
        if r + 1 == rounds {
            if let Some(keep) = std::env::args().nth(2) {
                let keep = std::path::Path::new(&keep);
                let _ = std::fs::remove_dir_all(keep);
                std::fs::create_dir_all(keep).expect("keep dir");
                for e in std::fs::read_dir(dir.path()).expect("index dir").flatten() {
                    std::fs::copy(e.path(), keep.join(e.file_name())).expect("copy");
                }
            }
        }
        println!(
            "round {r}: {} sections in {:.1} ms",
            data.docs.len(),
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
}
