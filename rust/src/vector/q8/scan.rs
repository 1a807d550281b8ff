//! The quantized search: an integer scan of `vectors.q8` keeps the best [`candidates`]
//! rows, which are rescored exactly (the f32 kernel, from `vectors.idx`); the append file
//! is scanned exactly as in the f32 path; both go into one top-k heap (ties by kbid), so
//! scores and order are those of the exact scan.
//!
//! Filters (tombstones, allow-lists) are the same bitsets as in the f32 path, over the same
//! row indices (row `i` of the q8 is record `i` of `vectors.idx`), tested before any dot
//! product. Candidate order is (integer score descending, row ascending): rows are in
//! kbid order, so ties break as in the exact scan, and the candidate set does not depend
//! on piece boundaries or thread count.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::kernel::{self, Q8Kernel, Q8Query};
use super::Q8Reader;
use crate::vector::file::VectorReader;
use crate::vector::filter::Bitset;
use crate::vector::scan::{next_rows, run_here, run_pieces, scan, scan_many, Part, Threads};
use crate::vector::topk::TopK;
use crate::vector::{KbidHash, Score};

/// Candidates per requested result before the exact rescoring.
pub const OVERSAMPLE: usize = 10;
/// The fewest candidates rescored, however small `k` is.
pub const MIN_CANDIDATES: usize = 100;
/// Rows scored per kernel call.
const BLOCK_ROWS: usize = 512;
/// Smallest piece handed to one rayon task (~6 MB at 384 dims). Below
/// [`crate::vector::PARALLEL_MIN_RECORDS`] rows the scan stays on the calling thread, and
/// it is cut into pieces as the f32 scan is (`crate::vector::scan::run_pieces`).
const MIN_PIECE_ROWS: usize = 16_384;

/// How many candidates a search for `k` results rescores: `max(10 k, 100)` (measured on
/// SciFact MiniLM embeddings in `benches/bench_vector_scan.py`; see docs/embeddings.md).
pub fn candidates(k: usize) -> usize {
    k.saturating_mul(OVERSAMPLE).max(MIN_CANDIDATES)
}

/// The best `n` rows by (score desc, row asc); the heap top is the worst kept.
struct TopRows {
    n: usize,
    heap: BinaryHeap<(Reverse<i32>, u32)>,
    threshold: i32,
}

impl TopRows {
    fn new(n: usize) -> TopRows {
        TopRows {
            n,
            heap: BinaryHeap::with_capacity(n.min(1 << 16) + 1),
            threshold: i32::MIN,
        }
    }

    #[inline]
    fn push(&mut self, score: i32, row: u32) {
        if self.n == 0 || score < self.threshold {
            return;
        }
        let e = (Reverse(score), row);
        if self.heap.len() < self.n {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if e.cmp(&worst) == Ordering::Less {
                *worst = e;
            }
        }
        if self.heap.len() == self.n {
            self.threshold = self.heap.peek().map_or(i32::MIN, |w| w.0 .0);
        }
    }

    fn merge(mut self, other: TopRows) -> TopRows {
        for (Reverse(s), r) in other.heap {
            self.push(s, r);
        }
        self
    }

    fn rows(self) -> Vec<u32> {
        let mut rows: Vec<u32> = self.heap.into_iter().map(|e| e.1).collect();
        rows.sort_unstable();
        rows
    }
}

fn scan_piece(
    q8: &Q8Reader,
    filter: Option<&Bitset>,
    start: usize,
    end: usize,
    q: &Q8Query,
    k: &Q8Kernel,
    top: &mut TopRows,
) {
    let (codes, stride) = (q8.rows(), q8.stride());
    let mut rows = [0u32; BLOCK_ROWS];
    let mut scores = [0i32; BLOCK_ROWS];
    let mut pos = start;
    loop {
        let n = next_rows(filter, &mut pos, end, &mut rows);
        if n == 0 {
            return;
        }
        k.dot_rows(q, codes, stride, &rows[..n], &mut scores[..n]);
        for (&s, &r) in scores[..n].iter().zip(&rows[..n]) {
            if s >= top.threshold {
                top.push(s, r);
            }
        }
    }
}

/// [`scan_piece`] for several queries: each row is read once and scored against every
/// query; `tops[i]` receives query `i`'s scores.
#[allow(clippy::too_many_arguments)]
fn scan_piece_many(
    q8: &Q8Reader,
    filter: Option<&Bitset>,
    start: usize,
    end: usize,
    queries: &[Q8Query],
    k: &Q8Kernel,
    tops: &mut [TopRows],
) {
    let (codes, stride) = (q8.rows(), q8.stride());
    let nq = queries.len();
    let block = (BLOCK_ROWS * 2 / nq.max(1)).clamp(1, BLOCK_ROWS);
    let mut rows = vec![0u32; block];
    let mut scores = vec![0i32; block * nq];
    let mut pos = start;
    loop {
        let n = next_rows(filter, &mut pos, end, &mut rows);
        if n == 0 {
            return;
        }
        k.dot_rows_many(queries, codes, stride, &rows[..n], &mut scores[..n * nq]);
        for (row_scores, &r) in scores[..n * nq].chunks_exact(nq).zip(&rows[..n]) {
            for (top, &s) in tops.iter_mut().zip(row_scores) {
                if s >= top.threshold {
                    top.push(s, r);
                }
            }
        }
    }
}

/// The `n` best rows of `q8` (that pass `filter`) by integer score, ascending row order.
pub fn candidate_rows(
    q8: &Q8Reader,
    filter: Option<&Bitset>,
    q: &[f32],
    n: usize,
    threads: Threads,
) -> Vec<u32> {
    let query = Q8Query::new(q, q8.params(), q8.stride());
    let k = kernel::best();
    let total = q8.len();
    run_pieces(
        &[total],
        MIN_PIECE_ROWS,
        threads,
        n == 0 || run_here(threads, total),
        || TopRows::new(n),
        |_, s, e, top| scan_piece(q8, filter, s, e, &query, k, top),
        TopRows::merge,
    )
    .rows()
}

/// [`candidate_rows`] for several queries in one pass over `q8`: element `i` equals
/// `candidate_rows(q8, filter, queries[i], n, threads)`.
pub fn candidate_rows_many(
    q8: &Q8Reader,
    filter: Option<&Bitset>,
    queries: &[&[f32]],
    n: usize,
    threads: Threads,
) -> Vec<Vec<u32>> {
    let quantized: Vec<Q8Query> = queries
        .iter()
        .map(|q| Q8Query::new(q, q8.params(), q8.stride()))
        .collect();
    let k = kernel::best();
    let total = q8.len();
    run_pieces(
        &[total],
        MIN_PIECE_ROWS,
        threads,
        n == 0 || run_here(threads, total),
        || {
            (0..queries.len())
                .map(|_| TopRows::new(n))
                .collect::<Vec<_>>()
        },
        |_, s, e, tops| scan_piece_many(q8, filter, s, e, &quantized, k, tops),
        |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect(),
    )
    .into_iter()
    .map(TopRows::rows)
    .collect()
}

/// The candidates `rows` of `base` rescored exactly for `q`, with the exact top of the
/// append file, into the final top `k`.
fn rescore(
    base: &VectorReader,
    rows: &[u32],
    appends: Vec<(KbidHash, Score)>,
    q: &[f32],
    k: usize,
) -> Vec<(KbidHash, Score)> {
    let mut scores = vec![0f32; rows.len()];
    crate::vector::kernel::best().dot_rows(q, base.records(), base.stride(), rows, &mut scores);
    let mut top = TopK::new(k);
    for (&s, &r) in scores.iter().zip(rows) {
        top.push(s, *base.kbid(r as usize));
    }
    for (kbid, s) in appends {
        top.push(s, kbid);
    }
    top.into_sorted()
}

/// The best `k` live records for `q`: `base` through its q8 copy (candidates rescored
/// exactly), `appends` exactly. `base_filter` holds the rows of `vectors.idx` that may be
/// returned (tombstones and allow-list applied); `n` candidates are rescored.
#[allow(clippy::too_many_arguments)]
pub fn search_quantized(
    base: &VectorReader,
    q8: &Q8Reader,
    base_filter: Option<&Bitset>,
    appends: Option<Part<'_>>,
    q: &[f32],
    k: usize,
    n: usize,
    threads: Threads,
) -> Vec<(KbidHash, Score)> {
    let n = n.max(k);
    let rows = candidate_rows(q8, base_filter, q, n, threads);
    let side = appends.map_or_else(Vec::new, |a| scan(&[a], q, k, threads));
    rescore(base, &rows, side, q, k)
}

/// [`search_quantized`] for several queries, one pass over `q8` and one over the append
/// file for all of them: element `i` equals `search_quantized(.., queries[i], ..)`.
#[allow(clippy::too_many_arguments)]
pub fn search_quantized_many(
    base: &VectorReader,
    q8: &Q8Reader,
    base_filter: Option<&Bitset>,
    appends: Option<Part<'_>>,
    queries: &[&[f32]],
    k: usize,
    n: usize,
    threads: Threads,
) -> Vec<Vec<(KbidHash, Score)>> {
    let n = n.max(k);
    let rows = candidate_rows_many(q8, base_filter, queries, n, threads);
    let mut side = match appends {
        Some(a) => scan_many(&[a], queries, k, threads),
        None => vec![Vec::new(); queries.len()],
    };
    rows.iter()
        .zip(queries)
        .zip(side.iter_mut())
        .map(|((r, q), a)| rescore(base, r, std::mem::take(a), q, k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_rows_keeps_best_and_breaks_ties_by_row() {
        let mut t = TopRows::new(3);
        for (s, r) in [(5, 9u32), (7, 4), (5, 2), (1, 0), (7, 8), (5, 1)] {
            t.push(s, r);
        }
        assert_eq!(t.rows(), vec![1, 4, 8]);
        let mut a = TopRows::new(2);
        a.push(3, 5);
        let mut b = TopRows::new(2);
        b.push(3, 1);
        b.push(2, 0);
        assert_eq!(a.merge(b).rows(), vec![1, 5]);
    }
}
