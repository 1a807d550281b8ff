//! The vector scan's kernels (criterion): one dot product per kernel at 384 dimensions,
//! the exact top-10 scan over synthetic L2-normalized 384-d vectors on one thread and on
//! all threads, and a pure streaming read of the same mapped pages (the memory-bandwidth
//! yardstick). Throughput is in bytes of `vectors.idx`, so criterion prints GB/s.
//!
//! `cargo bench --manifest-path rust/Cargo.toml --bench vector_scan`
//! (`KBDB_BENCH_VECTORS=1000000` for the 1M size; default 100 000).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kbdb_core::vector::{kernel, KbidHash, OpenMode, Threads, VectorIndex};

const DIMS: usize = 384;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn unit(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIMS)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn kernels(c: &mut Criterion) {
    let mut rng = Rng(1);
    let q = rng.unit();
    // One byte of offset: stored vectors are never aligned.
    let mut stored = vec![0u8];
    stored.extend(le(&rng.unit()));
    let mut g = c.benchmark_group("dot_384");
    g.throughput(Throughput::Bytes((DIMS * 4) as u64));
    for k in kernel::available() {
        g.bench_function(k.name(), |b| {
            b.iter(|| k.dot(black_box(&q), black_box(&stored[1..])))
        });
    }
    g.finish();
}

fn scan(c: &mut Criterion) {
    let n: usize = std::env::var("KBDB_BENCH_VECTORS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let index = VectorIndex::open(
        dir.path(),
        OpenMode::Create {
            model_name: "bench".into(),
            dimensions: DIMS as u16,
        },
    )
    .expect("create");
    let mut rng = Rng(2);
    let kbids: Vec<KbidHash> = (0..n as u64)
        .map(|i| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
            k
        })
        .collect();
    let mut bytes = Vec::with_capacity(n * DIMS * 4);
    for _ in 0..n {
        bytes.extend(le(&rng.unit()));
    }
    index
        .write(&kbids, &bytes, "bench", None, 1)
        .expect("write");
    drop(bytes);
    let snap = index.snapshot();
    let q = rng.unit();
    let mut g = c.benchmark_group(format!("scan_{n}x{DIMS}"));
    g.throughput(Throughput::Bytes(snap.size_bytes()));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(5));
    for (name, threads) in [
        ("1_thread", Threads::Current),
        ("all_threads", Threads::All),
    ] {
        g.bench_function(format!("top10_{name}"), |b| {
            b.iter(|| {
                snap.search(black_box(&q), 10, None, threads)
                    .expect("search")
            })
        });
        g.bench_function(format!("stream_read_{name}"), |b| {
            b.iter(|| snap.stream_read(threads))
        });
    }
    g.finish();
}

criterion_group!(benches, kernels, scan);
criterion_main!(benches);
