//! Relaxed (any clause) evaluation of a small segment, term at a time into one cell per doc:
//! every posting of every clause is scored once in tight loops over decoded blocks, with
//! no per-doc seeks, bounds or candidate bookkeeping; then the touched docs are offered to
//! the heap in doc order. On a segment of a few thousand docs, where a query's postings
//! cover a large share of the docs, this costs less than MaxScore can save by pruning, as
//! Lucene's `BooleanScorer` (windows of term-at-a-time buckets) does for dense
//! disjunctions. [`DENSE_MAX_DOCS`] decides where `Evaluation::Auto` uses it.
//!
//! Exactness, as the other evaluators: clauses are taken in query order, and a doc's cell
//! gets each present clause's value (its best alternative, `weight × score`, from the same
//! block scorer as MaxScore) added in that order, starting from 0.0; absent clauses add
//! nothing, as their exact +0.0 does in the exhaustive sum. So every doc's score has the
//! bits the exhaustive evaluation gives it. The matched fields are kept per doc as one
//! clause bitmask per field (64 clauses at most: [`fits`]), and `total` counts the live
//! touched docs.
//!
//! The cells stay all zero between queries: the final pass, which visits every touched
//! doc, clears each cell it reads. A query that stops on a corrupt block leaves them
//! dirty, and the next one clears them whole.

use std::cell::RefCell;

use super::postings::{BLOCK_LEN, TERMINATED};
use super::query::{with_buffers, BlockScorer, SegmentSearch, Step};
use super::topk::Scored;
use super::{DocOrd, Score, FIELD_COUNT};

/// Segments with at most this many docs are searched term at a time by
/// `Evaluation::Auto`; larger ones with MaxScore, whose pruning pays when posting lists
/// are long. At this size the cells (32 bytes a doc, 512 KiB) still fit a core's L2
/// cache. Measured with SciFact's queries cut to 1, 2, 3 and all clauses, top 10 and 30,
/// on SciFact repeated to each size (docs/benchmarks.md §2): term at a time took 0.53–0.85
/// of MaxScore's time at 5k and 10k docs, 0.67–1.03 at 20k, 0.73–1.16 at 31k, and up to
/// 1.41 at 62k.
pub const DENSE_MAX_DOCS: u32 = 1 << 14;

/// Whether a query can be evaluated here: one bit per clause in the field masks.
pub fn fits(clauses: usize) -> bool {
    clauses <= 64
}

/// One doc's running score and, per field, the clauses that matched in it.
#[derive(Clone, Copy, Default)]
struct Cell {
    score: Score,
    fields: [u64; FIELD_COUNT],
}

/// Buffers reused across queries on one thread (evaluations never nest).
#[derive(Default)]
struct Buffers {
    cells: Vec<Cell>,
    /// Bitset of the docs any posting touched.
    touched: Vec<u64>,
    /// A clause with several alternatives: its best value per doc so far, and the docs it
    /// touched (each once, by `seen`).
    best: Vec<Score>,
    seen: Vec<u64>,
    clause_docs: Vec<DocOrd>,
    /// Set while a query runs: a query that failed half way left non-zero cells.
    dirty: bool,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

/// A doc's per-clause field masks (bit `f` of byte `c`: clause `c` matched in field `f`).
#[inline]
fn fill_masks(doc_masks: &mut [u8], cell: &Cell) {
    for (c, mask) in doc_masks.iter_mut().enumerate() {
        *mask = (0..FIELD_COUNT)
            .map(|f| (((cell.fields[f] >> c) & 1) as u8) << f)
            .fold(0, |a, b| a | b);
    }
}

impl SegmentSearch<'_, '_> {
    pub(super) fn run_dense(&mut self) -> Step<()> {
        with_buffers(&BUFFERS, |bufs| self.dense(bufs))
    }

    fn dense(&mut self, bufs: &mut Buffers) -> Step<()> {
        let n = self.seg.reader.doc_count() as usize;
        let words = n.div_ceil(64);
        if bufs.dirty {
            bufs.cells.fill(Cell::default());
            bufs.touched.fill(0);
            bufs.best.fill(0.0);
            bufs.seen.fill(0);
        }
        if bufs.cells.len() < n {
            bufs.cells.resize(n, Cell::default());
            bufs.best.resize(n, 0.0);
            bufs.touched.resize(words, 0);
            bufs.seen.resize(words, 0);
        }
        bufs.dirty = true;
        let mut scorer = BlockScorer::new();
        let p = self.p;
        // Per posting, the fields that hold its term, as a pattern (bit `f`: field `f`).
        let mut present = [0u8; BLOCK_LEN];
        for (c, (alts, _)) in p.clauses.iter().enumerate() {
            let bit = 1u64 << c;
            let single = alts.len() == 1;
            // What a posting of each pattern adds to its doc's field masks.
            let adds: [[u64; FIELD_COUNT]; 1 << FIELD_COUNT] = std::array::from_fn(|pattern| {
                std::array::from_fn(|f| if pattern >> f & 1 == 1 { bit } else { 0 })
            });
            for &(t, w) in alts {
                let Some(info) = self.seg.infos[t] else {
                    continue;
                };
                let mut cur = self.seg.reader.cursor(info)?;
                let idf = p.idf[t];
                while cur.doc() != TERMINATED {
                    let block = cur.block()?;
                    let docs = block.docs;
                    let m = docs.len();
                    let tfs: [&[u32]; FIELD_COUNT] = std::array::from_fn(|f| block.field_tfs(f, m));
                    let scores = scorer.score(p, self.seg, idf, docs, tfs);
                    let present = &mut present[..m];
                    present.fill(0);
                    for (f, tf) in tfs.iter().enumerate() {
                        for (p, &t) in present.iter_mut().zip(tf.iter()) {
                            *p |= u8::from(t > 0) << f;
                        }
                    }
                    let (cells, touched) = (&mut bufs.cells[..n], &mut bufs.touched[..words]);
                    for ((&d, &pattern), &s) in docs.iter().zip(present.iter()).zip(scores) {
                        let i = d as usize;
                        let Some(cell) = cells.get_mut(i) else {
                            continue; // an ordinal past the segment: never a match
                        };
                        touched[i / 64] |= 1 << (i % 64);
                        let add = &adds[usize::from(pattern) % adds.len()];
                        for (mask, &a) in cell.fields.iter_mut().zip(add) {
                            *mask |= a;
                        }
                        if single {
                            cell.score += w * s;
                        }
                    }
                    if !single {
                        for (&d, &s) in docs.iter().zip(scores.iter()) {
                            let i = d as usize;
                            if i >= n {
                                continue;
                            }
                            let (word, b) = (i / 64, 1u64 << (i % 64));
                            if bufs.seen[word] & b == 0 {
                                bufs.seen[word] |= b;
                                bufs.clause_docs.push(d);
                            }
                            bufs.best[i] = bufs.best[i].max(w * s);
                        }
                    }
                    cur.skip_in_block(m)?;
                }
            }
            if !single {
                // The clause's value, its best alternative, joins each doc's sum in clause order.
                for &d in &bufs.clause_docs {
                    let i = d as usize;
                    bufs.cells[i].score += bufs.best[i];
                    bufs.best[i] = 0.0;
                    bufs.seen[i / 64] = 0;
                }
                bufs.clause_docs.clear();
            }
        }
        for word in 0..words {
            let mut bits = bufs.touched[word];
            bufs.touched[word] = 0;
            while bits != 0 {
                let i = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let cell = std::mem::take(&mut bufs.cells[i]);
                let d = i as DocOrd;
                if !self.live(d) {
                    continue;
                }
                self.total += 1;
                let mut masked = false;
                if self.top.would_accept(cell.score) {
                    fill_masks(&mut self.doc_masks, &cell);
                    masked = true;
                    self.offer(d, cell.score)?;
                }
                if let Some(tier) = self.strict.as_mut() {
                    let matched = cell.fields.iter().fold(0, |a, &m| a | m);
                    if matched & tier.required == tier.required {
                        tier.total += 1;
                        if tier.top.would_accept(cell.score) {
                            if !masked {
                                fill_masks(&mut self.doc_masks, &cell);
                            }
                            let kbid = self.seg.reader.kbid(d)?;
                            let slot = (tier.masks.len() / self.doc_masks.len().max(1)) as u32;
                            tier.masks.extend_from_slice(&self.doc_masks);
                            tier.top.push(Scored {
                                score: cell.score,
                                key: (kbid, self.seg.index, d, slot),
                            });
                        }
                    }
                }
            }
        }
        bufs.dirty = false;
        Ok(())
    }
}
