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

/// Calls `block(rows)` with the eligible row indices of `[start, end)`, at most
/// `rows.len()` at a time and in order: the set bits of `filter` (tested before any dot
/// product), or every row when there is none.
#[inline]
pub(crate) fn for_each_block(
    filter: Option<&Bitset>,
    start: usize,
    end: usize,
    rows: &mut [u32],
    mut block: impl FnMut(&[u32]),
) {
    let mut pos = start;
    loop {
        let n = match filter {
            Some(f) => f.fill(&mut pos, end, rows),
            None => {
                let n = (end - pos).min(rows.len());
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
        block(&rows[..n]);
    }
}

/// Scores rows `[start, end)` of `part` that pass its filter into `top`.
fn scan_piece(part: Part<'_>, start: usize, end: usize, q: &[f32], k: &Kernel, top: &mut TopK) {
    let reader = part.reader;
    let (records, stride) = (reader.records(), reader.stride());
    let mut rows = [0u32; BLOCK_ROWS];
    let mut scores = [0f32; BLOCK_ROWS];
    for_each_block(part.filter, start, end, &mut rows, |rows| {
        let scores = &mut scores[..rows.len()];
        k.dot_rows(q, records, stride, rows, scores);
        for (&s, &r) in scores.iter().zip(rows) {
            if top.would_accept(s) {
                top.push(s, *reader.kbid(r as usize));
            }
        }
    });
}

/// [`scan_piece`] for several queries at once: each record is read once and scored
/// against every query ([`Kernel::dot_rows_many`]); `tops[i]` receives query `i`'s scores.
fn scan_piece_many(
    part: Part<'_>,
    start: usize,
    end: usize,
    queries: &[&[f32]],
    k: &Kernel,
    tops: &mut [TopK],
) {
    let reader = part.reader;
    let (records, stride) = (reader.records(), reader.stride());
    let nq = queries.len();
    // Rows per block shrink with the query count, so the score buffer stays a few KiB.
    let mut rows = vec![0u32; (BLOCK_ROWS * 4 / nq.max(1)).clamp(1, BLOCK_ROWS)];
    let mut scores = vec![0f32; rows.len() * nq];
    for_each_block(part.filter, start, end, &mut rows, |rows| {
        let scores = &mut scores[..rows.len() * nq];
        k.dot_rows_many(queries, records, stride, rows, scores);
        for (row_scores, &r) in scores.chunks_exact(nq).zip(rows) {
            for (top, &s) in tops.iter_mut().zip(row_scores) {
                if top.would_accept(s) {
                    top.push(s, *reader.kbid(r as usize));
                }
            }
        }
    });
}

/// Whether a scan of `total` rows runs on the calling thread (see the module docs).
pub(crate) fn run_here(threads: Threads, total: usize) -> bool {
    threads == Threads::Current
        || total < PARALLEL_MIN_RECORDS
        || matches!(threads, Threads::All if rayon::current_num_threads() < 2)
}

/// Runs `piece(segment, start, end, acc)` over `lens` (row counts of consecutive segments:
/// record files, or a q8 copy) and folds the accumulators with `merge`: in one piece per
/// segment on the calling thread when `serial`, else cut into pieces of at least
/// `min_piece` rows (about [`PIECES_PER_THREAD`] per thread) on rayon in `threads`. The
/// accumulators must merge to the same value however the rows are split (the top-k heaps
/// do: their order is total).
pub(crate) fn run_pieces<T: Send>(
    lens: &[usize],
    min_piece: usize,
    threads: Threads,
    serial: bool,
    new: impl Fn() -> T + Sync + Send,
    piece: impl Fn(usize, usize, usize, &mut T) + Sync + Send,
    merge: impl Fn(T, T) -> T + Sync + Send,
) -> T {
    if serial {
        let mut acc = new();
        for (seg, &len) in lens.iter().enumerate() {
            piece(seg, 0, len, &mut acc);
        }
        return acc;
    }
    let total: usize = lens.iter().sum();
    run_on(threads, || {
        let size = total
            .div_ceil(rayon::current_num_threads() * PIECES_PER_THREAD)
            .max(min_piece);
        let pieces: Vec<(usize, usize, usize)> = lens
            .iter()
            .enumerate()
            .flat_map(|(seg, &len)| {
                (0..len)
                    .step_by(size)
                    .map(move |s| (seg, s, (s + size).min(len)))
            })
            .collect();
        pieces
            .into_par_iter()
            .map(|(seg, s, e)| {
                let mut acc = new();
                piece(seg, s, e, &mut acc);
                acc
            })
            .reduce(&new, &merge)
    })
}

/// The best `k` records of `parts` for `q` (dot product), best first, ties by kbid.
/// Every part's dimensions must equal `q.len()` (the caller checks).
pub fn scan(parts: &[Part<'_>], q: &[f32], k: usize, threads: Threads) -> Vec<(KbidHash, Score)> {
    scan_many(parts, &[q], k, threads).pop().unwrap_or_default()
}

/// [`scan`] for several queries in one pass: the best `k` records of `parts` for each of
/// `queries`, element `i` equal to `scan(parts, queries[i], k, threads)` (the same kernel
/// sums each score in the same order, and the top-k order is total). Every record is read
/// once for all the queries, so a batch costs about one scan while the data streams from
/// memory (the learn-time near-duplicate check of several new sections). The queries are
/// re-read for every record, so keep them few enough to stay in L1
/// ([`super::MAX_QUERIES_PER_PASS`]; [`super::Snapshot::search_many`] groups them).
pub fn scan_many(
    parts: &[Part<'_>],
    queries: &[&[f32]],
    k: usize,
    threads: Threads,
) -> Vec<Vec<(KbidHash, Score)>> {
    if queries.is_empty() {
        return Vec::new();
    }
    let kernel = kernel::best();
    let aligned = AlignedQueries::new(if queries.len() > 1 { queries } else { &[] });
    let many = aligned.slices();
    let lens: Vec<usize> = parts.iter().map(|p| p.reader.len()).collect();
    let serial = k == 0 || run_here(threads, lens.iter().sum());
    run_pieces(
        &lens,
        MIN_PIECE_RECORDS,
        threads,
        serial,
        || (0..queries.len()).map(|_| TopK::new(k)).collect::<Vec<_>>(),
        |seg, s, e, tops| match (queries, &mut tops[..]) {
            ([q], [top]) => scan_piece(parts[seg], s, e, q, kernel, top),
            _ => scan_piece_many(parts[seg], s, e, &many, kernel, tops),
        },
        |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect(),
    )
    .into_iter()
    .map(TopK::into_sorted)
    .collect()
}

/// One cache line of query components.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// Copies of the queries, each starting on a cache line: the multi-query kernels load
/// every query once per record, and a load that straddles two lines costs two (the
/// record loads already do, records sitting 16 bytes into a line). Values unchanged.
struct AlignedQueries {
    lines: Vec<Line>,
    dims: usize,
    count: usize,
}

impl AlignedQueries {
    fn new(queries: &[&[f32]]) -> AlignedQueries {
        let dims = queries.first().map_or(0, |q| q.len());
        let per = dims.div_ceil(16);
        let mut lines = vec![Line([0.0; 16]); per * queries.len()];
        for (q, chunk) in queries.iter().zip(lines.chunks_mut(per.max(1))) {
            for (line, src) in chunk.iter_mut().zip(q.chunks(16)) {
                line.0[..src.len()].copy_from_slice(src);
            }
        }
        AlignedQueries {
            lines,
            dims,
            count: queries.len(),
        }
    }

    fn slices(&self) -> Vec<&[f32]> {
        let per = self.dims.div_ceil(16);
        (0..self.count)
            .map(|i| {
                let lines = &self.lines[i * per..(i + 1) * per];
                // SAFETY: `Line` is `repr(C)` over `[f32; 16]`, so `per` lines are
                // `16 * per >= dims` contiguous, initialized f32s.
                unsafe { std::slice::from_raw_parts(lines.as_ptr().cast::<f32>(), self.dims) }
            })
            .collect()
    }
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
