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

use super::kernel::{self, Q8Kernel, Q8Query};
use super::Q8Reader;
use crate::vector::file::VectorReader;
use crate::vector::filter::Bitset;
use crate::vector::scan::{for_each_block, run_here, run_pieces, scan_many, Part, Threads};
use crate::vector::topk::{Top, TopK};
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

/// The best `n` rows by (integer score desc, row asc).
type TopRows = Top<i32, u32>;

/// Scores rows `[start, end)` of `q8` that pass `filter` into `top`.
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
    for_each_block(filter, start, end, &mut rows, |rows| {
        let scores = &mut scores[..rows.len()];
        k.dot_rows(q, codes, stride, rows, scores);
        for (&s, &r) in scores.iter().zip(rows) {
            if top.would_accept(s) {
                top.push(s, r);
            }
        }
    });
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
    let mut rows = vec![0u32; (BLOCK_ROWS * 2 / nq.max(1)).clamp(1, BLOCK_ROWS)];
    let mut scores = vec![0i32; rows.len() * nq];
    for_each_block(filter, start, end, &mut rows, |rows| {
        let scores = &mut scores[..rows.len() * nq];
        k.dot_rows_many(queries, codes, stride, rows, scores);
        for (row_scores, &r) in scores.chunks_exact(nq).zip(rows) {
            for (top, &s) in tops.iter_mut().zip(row_scores) {
                if top.would_accept(s) {
                    top.push(s, r);
                }
            }
        }
    });
}

/// The `n` best rows of `q8` (that pass `filter`) by integer score for each of `queries`,
/// in ascending row order, in one pass over `q8`: each row is read once for all the
/// queries, and element `i` is what a scan for `queries[i]` alone keeps.
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
        |_, s, e, tops| match (&quantized[..], &mut tops[..]) {
            ([q], [top]) => scan_piece(q8, filter, s, e, q, k, top),
            _ => scan_piece_many(q8, filter, s, e, &quantized, k, tops),
        },
        |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect(),
    )
    .into_iter()
    .map(TopRows::into_keys)
    .collect()
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
    search_quantized_many(base, q8, base_filter, appends, &[q], k, n, threads)
        .pop()
        .unwrap_or_default()
}

/// [`search_quantized`] for several queries, one pass over `q8` and one over the append
/// file for all of them: element `i` equals `search_quantized(.., queries[i], ..)`. Each
/// query's candidates are rescored with the f32 kernel and merged with its exact top of
/// the append file in one heap (ties by kbid).
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
    let kernel = crate::vector::kernel::best();
    rows.iter()
        .zip(queries)
        .zip(side.iter_mut())
        .map(|((rows, q), appended)| {
            let mut scores = vec![0f32; rows.len()];
            kernel.dot_rows(q, base.records(), base.stride(), rows, &mut scores);
            let mut top = TopK::new(k);
            for (&s, &r) in scores.iter().zip(rows) {
                top.push(s, *base.kbid(r as usize));
            }
            for (kbid, s) in std::mem::take(appended) {
                top.push(s, kbid);
            }
            top.into_sorted()
        })
        .collect()
}
