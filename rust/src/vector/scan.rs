//! The exact scan: score every eligible record of one or more record files against a query
//! and keep the top k.
//!
//! Work is cut into pieces of record ranges; each piece gathers up to [`BLOCK_ROWS`]
//! eligible row indices (from its filter bitset, tested before any dot product, or
//! contiguous when unfiltered), scores them with one kernel call, and offers each score to
//! its own bounded heap (one comparison against the heap's threshold for most rows). The
//! heaps are merged at the end; ties break by kbid, so the result does not depend on the
//! piece boundaries or thread count.
//!
//! Below [`PARALLEL_MIN_RECORDS`] records in total, or with [`Threads::Current`], the scan
//! runs on the calling thread; otherwise on rayon, with about [`PIECES_PER_THREAD`] pieces
//! per thread so that a thread slowed by another process on its core (the bench machine is
//! shared) does not hold up the others: work stealing evens out the tail.
//!
//! At 384 dims the scan is memory-bound: on the 2-core AVX-512 bench machine one record
//! costs ~28 ns from cache and ~60 ns from DRAM (1M records, one thread), and the scan
//! runs at ~0.9 of a plain streaming read of the same pages (`stream_read`;
//! `benches/bench_vector_scan.py`). So records are read once, in file order, one at a
//! time. Two alternatives measured slower and were dropped: software prefetch of the next
//! 1-8 records (-15% to -40%: the hardware prefetcher already streams, huge pages remove
//! the 4 KiB restarts) and a 4-row kernel sharing the query loads (-25% in cache, 3.5×
//! slower from DRAM: four interleaved streams defeat the prefetcher).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;

use super::file::VectorReader;
use super::filter::Bitset;
use super::kernel::{self, Kernel};
use super::topk::TopK;
use super::{KbidHash, Score};

/// Below this many records, the scan stays on the calling thread (~25 MB at 384 dims:
/// a few milliseconds, where thread hand-off would cost more than it saves).
pub const PARALLEL_MIN_RECORDS: usize = 16_384;
/// Rows scored per kernel call.
const BLOCK_ROWS: usize = 256;
/// Smallest piece handed to one rayon task (~12 MB at 384 dims).
const MIN_PIECE_RECORDS: usize = 8_192;
/// Pieces per thread above that size; each costs one top-k heap and its merge.
const PIECES_PER_THREAD: usize = 16;

/// One record file and which of its records may be scored (`None`: all).
#[derive(Clone, Copy)]
pub struct Part<'a> {
    pub reader: &'a VectorReader,
    pub filter: Option<&'a Bitset>,
}

/// Where the scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// The calling thread only.
    Current,
    /// rayon's global pool (all cores, or `RAYON_NUM_THREADS`).
    All,
    /// A pool of exactly this many threads (built once per count, then cached).
    Exactly(usize),
}

impl Threads {
    /// `0` = all, `1` = the calling thread, `n` = exactly `n`.
    pub fn from_count(n: usize) -> Threads {
        match n {
            0 => Threads::All,
            1 => Threads::Current,
            n => Threads::Exactly(n),
        }
    }
}

fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = pools.get(&n) {
        return Some(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .ok()?,
    );
    pools.insert(n, p.clone());
    Some(p)
}

/// Scores rows `[start, end)` of `part` that pass its filter into `top`.
fn scan_piece(part: Part<'_>, start: usize, end: usize, q: &[f32], k: &Kernel, top: &mut TopK) {
    let reader = part.reader;
    let (records, stride) = (reader.records(), reader.stride());
    let mut rows = [0u32; BLOCK_ROWS];
    let mut scores = [0f32; BLOCK_ROWS];
    let mut pos = start;
    loop {
        let n = match part.filter {
            Some(f) => f.fill(&mut pos, end, &mut rows),
            None => {
                let n = (end - pos).min(BLOCK_ROWS);
                for (j, r) in rows[..n].iter_mut().enumerate() {
                    *r = (pos + j) as u32;
                }
                pos += n;
                n
            }
        };
        if n == 0 {
            return;
        }
        k.dot_rows(q, records, stride, &rows[..n], &mut scores[..n]);
        for (&s, &r) in scores[..n].iter().zip(&rows[..n]) {
            if top.would_accept(s) {
                top.push(s, *reader.kbid(r as usize));
            }
        }
    }
}

/// The best `k` records of `parts` for `q` (dot product), best first, ties by kbid.
/// Every part's dimensions must equal `q.len()` (the caller checks).
pub fn scan(parts: &[Part<'_>], q: &[f32], k: usize, threads: Threads) -> Vec<(KbidHash, Score)> {
    let kernel = kernel::best();
    let total: usize = parts.iter().map(|p| p.reader.len()).sum();
    let run_here = k == 0
        || threads == Threads::Current
        || total < PARALLEL_MIN_RECORDS
        || matches!(threads, Threads::All if rayon::current_num_threads() < 2);
    if run_here {
        let mut top = TopK::new(k);
        for p in parts {
            scan_piece(*p, 0, p.reader.len(), q, kernel, &mut top);
        }
        return top.into_sorted();
    }
    let run = || {
        let piece = total
            .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
            .max(MIN_PIECE_RECORDS);
        let pieces: Vec<(Part<'_>, usize, usize)> = parts
            .iter()
            .flat_map(|p| {
                (0..p.reader.len())
                    .step_by(piece)
                    .map(move |s| (*p, s, (s + piece).min(p.reader.len())))
            })
            .collect();
        pieces
            .into_par_iter()
            .map(|(p, s, e)| {
                let mut top = TopK::new(k);
                scan_piece(p, s, e, q, kernel, &mut top);
                top
            })
            .reduce(|| TopK::new(k), TopK::merge)
            .into_sorted()
    };
    run_on(threads, run)
}

pub(crate) fn run_on<T: Send>(threads: Threads, run: impl FnOnce() -> T + Send) -> T {
    match threads {
        Threads::Exactly(n) => match pool(n) {
            Some(p) => p.install(run),
            None => run(),
        },
        _ => run(),
    }
}

/// Reads every byte of `regions` once (an XOR of all 64-bit words, returned so the reads
/// cannot be elided), on `threads` like [`scan`]: a pure streaming read of the same
/// mapped pages, the yardstick the scan's speed is compared with in the benchmarks.
pub fn stream_read(regions: &[&[u8]], threads: Threads) -> u64 {
    const PIECE_BYTES: usize = 1 << 22;
    let fold = |b: &[u8]| {
        let mut acc = [0u64; 8];
        let mut words = b.chunks_exact(64);
        for line in &mut words {
            for (j, a) in acc.iter_mut().enumerate() {
                let w: [u8; 8] = line[8 * j..8 * j + 8].try_into().expect("8 bytes");
                *a ^= u64::from_ne_bytes(w);
            }
        }
        let tail = words
            .remainder()
            .iter()
            .fold(0u64, |x, &b| x.rotate_left(8) ^ u64::from(b));
        acc.iter().fold(tail, |x, a| x ^ a)
    };
    if threads == Threads::Current {
        return regions.iter().map(|r| fold(r)).fold(0, |x, y| x ^ y);
    }
    run_on(threads, || {
        regions
            .par_iter()
            .flat_map(|r| r.par_chunks(PIECE_BYTES))
            .map(fold)
            .reduce(|| 0, |x, y| x ^ y)
    })
}
