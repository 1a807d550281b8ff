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
//! bits the exhaustive evaluation gives it. The matched fields are kept per doc as clause
//! bitmasks: for up to 16 clauses all five fields in a 16-byte cell with the score (a
//! posting adds to its doc with two `or`s), for up to 64 a word per field ([`fits`]);
//! `total` counts the live touched docs.
//!
//! The final pass visits the touched docs in doc order: from a bitset kept as postings
//! arrive when they are few against the segment's docs, otherwise by reading every cell
//! (a touched cell has a clause bit set). The loops run in an AVX2 copy where the CPU has
//! it (`crate::simd`; same operations, same bits).
//!
//! The cells stay all zero between queries: the final pass clears each cell it reads. A
//! query that stops on a corrupt block leaves them dirty, and the next one clears them
//! whole.

use std::cell::RefCell;

use super::postings::{Malformed, BLOCK_LEN, TERMINATED};
use super::query::{with_buffers, BlockScorer, SegmentSearch, Step};
use super::topk::Scored;
use super::{DocOrd, Score, FIELD_COUNT};

/// Segments with at most this many docs are searched term at a time by
/// `Evaluation::Auto`; larger ones with MaxScore, whose pruning pays when posting lists
/// are long. At this size the cells (16 bytes a doc, 256 KiB; 48 past 16 clauses) still
/// fit a core's L2 cache. Measured with SciFact's queries cut to 1, 2, 3 and all clauses, top 10 and 30,
/// on SciFact repeated to each size (docs/history/benchmarks-log.md): term at a time took 0.53–0.85
/// of MaxScore's time at 5k and 10k docs, 0.67–1.03 at 20k, 0.73–1.16 at 31k, and up to
/// 1.41 at 62k.
pub const DENSE_MAX_DOCS: u32 = 1 << 14;

/// Whether a query can be evaluated here: one bit per clause in the field masks.
pub fn fits(clauses: usize) -> bool {
    clauses <= Wide::CLAUSES
}

/// A doc's clause masks per field, as its cell keeps them: for each field, the clauses
/// whose terms the doc holds in it.
trait Masks: Copy + Default {
    /// Clauses at most.
    const CLAUSES: usize;
    /// What a posting of clause `c` adds, per pattern of the fields that hold its term
    /// (bit `f`: field `f`).
    fn adds(c: usize) -> [Self; 1 << FIELD_COUNT];
    fn add(&mut self, other: Self);
    fn is_empty(&self) -> bool;
    /// The clauses matched in any field.
    fn clauses(&self) -> u64;
    /// The fields clause `c` matched in (bit `f`: field `f`).
    fn fields(&self, c: usize) -> u8;
    /// This thread's cells of this kind.
    fn cells(bufs: &mut Buffers) -> &mut Vec<Cell<Self>>;
}

/// Up to 16 clauses, bit `16 f + c` for clause `c` in field `f`: fields 0–3 in one 64-bit
/// word and the fifth in a second, so that a posting adds to its doc with two `or`s.
/// Aligned to 4 bytes, it makes with the score a 16-byte cell, as one word did for four
/// fields. (One 64-bit word over five fields holds 12 clauses: the one SciFact query in six
/// that has 13 to 16 would take the 48-byte wide cells.)
#[derive(Clone, Copy, Default)]
#[repr(C, packed(4))]
struct Packed {
    lo: u64,
    /// The fifth field's bits, and [`TOUCHED`]: a cell is empty when this word is.
    hi: u32,
}

/// Set in [`Packed::hi`] by every posting: the pass over every cell tests one word.
const TOUCHED: u32 = 1 << 31;

/// Up to 64 clauses: a word per field.
#[derive(Clone, Copy, Default)]
struct Wide([u64; FIELD_COUNT]);

/// Clauses per field in [`Packed`].
const PACKED_BITS: usize = 16;
/// Fields in [`Packed::lo`].
const LO_FIELDS: usize = 64 / PACKED_BITS;
const PACKED_CLAUSES: u64 = (1 << PACKED_BITS) - 1;
/// Per pattern of the fields in [`Packed::lo`], its bits for clause 0.
const SPREAD: [u64; 1 << LO_FIELDS] = {
    let mut out = [0u64; 1 << LO_FIELDS];
    let mut pattern = 0;
    while pattern < out.len() {
        let mut f = 0;
        while f < LO_FIELDS {
            if pattern >> f & 1 == 1 {
                out[pattern] |= 1 << (f * PACKED_BITS);
            }
            f += 1;
        }
        pattern += 1;
    }
    out
};
const _: () = assert!(FIELD_COUNT == LO_FIELDS + 1);
const _: () = assert!(std::mem::size_of::<Cell<Packed>>() == 16);

impl Masks for Packed {
    const CLAUSES: usize = PACKED_BITS;

    fn adds(c: usize) -> [Self; 1 << FIELD_COUNT] {
        std::array::from_fn(|pattern| Packed {
            lo: SPREAD[pattern % SPREAD.len()] << c,
            hi: u32::from(pattern >> LO_FIELDS & 1 == 1) << c
                | if pattern == 0 { 0 } else { TOUCHED },
        })
    }

    #[inline(always)]
    fn add(&mut self, other: Self) {
        self.lo |= other.lo;
        self.hi |= other.hi;
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.hi == 0
    }

    #[inline(always)]
    fn clauses(&self) -> u64 {
        let lo = self.lo;
        (0..LO_FIELDS).fold(u64::from(self.hi), |m, f| m | lo >> (f * PACKED_BITS)) & PACKED_CLAUSES
    }

    #[inline(always)]
    fn fields(&self, c: usize) -> u8 {
        let lo = self.lo;
        let low = (0..LO_FIELDS).fold(0, |m, f| m | ((lo >> (f * PACKED_BITS + c)) & 1) << f);
        (low | u64::from(self.hi >> c & 1) << LO_FIELDS) as u8
    }

    fn cells(bufs: &mut Buffers) -> &mut Vec<Cell<Self>> {
        &mut bufs.packed
    }
}

impl Masks for Wide {
    const CLAUSES: usize = 64;

    fn adds(c: usize) -> [Self; 1 << FIELD_COUNT] {
        std::array::from_fn(|pattern| {
            Wide(std::array::from_fn(|f| {
                u64::from(pattern >> f & 1 == 1) << c
            }))
        })
    }

    #[inline(always)]
    fn add(&mut self, other: Self) {
        for (m, a) in self.0.iter_mut().zip(other.0) {
            *m |= a;
        }
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&m| m == 0)
    }

    #[inline(always)]
    fn clauses(&self) -> u64 {
        self.0.iter().fold(0, |a, &m| a | m)
    }

    #[inline(always)]
    fn fields(&self, c: usize) -> u8 {
        (0..FIELD_COUNT).fold(0, |m, f| m | ((self.0[f] >> c) & 1) << f) as u8
    }

    fn cells(bufs: &mut Buffers) -> &mut Vec<Cell<Self>> {
        &mut bufs.wide
    }
}

/// One doc's running score and its clause masks.
#[derive(Clone, Copy, Default)]
struct Cell<M> {
    score: Score,
    masks: M,
}

/// Buffers reused across queries on one thread (evaluations never nest).
#[derive(Default)]
struct Buffers {
    /// A cell per doc, of the kind the query's clause count needs.
    packed: Vec<Cell<Packed>>,
    wide: Vec<Cell<Wide>>,
    /// Bitset of the docs any posting touched, kept when the query's postings are few
    /// against the segment's docs (otherwise the final pass reads every cell).
    touched: Vec<u64>,
    /// A clause with several alternatives: its best value per doc so far, and the docs it
    /// touched (each once, by `seen`).
    best: Vec<Score>,
    seen: Vec<u64>,
    clause_docs: Vec<DocOrd>,
    /// The touched docs, when the final pass reads every cell.
    listed: Vec<DocOrd>,
    /// Set while a query runs: a query that failed half way left non-zero cells.
    dirty: bool,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

/// The final pass reads every cell rather than the touched bitset when the query's
/// postings number at least the segment's docs over this: keeping the bitset costs more
/// per posting than reading a cell costs per doc.
const READ_ALL_CELLS: u64 = 8;

impl SegmentSearch<'_, '_> {
    pub(super) fn run_dense(&mut self) -> Step<()> {
        with_buffers(&BUFFERS, |bufs| {
            if self.p.clauses.len() <= Packed::CLAUSES {
                self.dense_on::<Packed>(bufs)
            } else {
                self.dense_on::<Wide>(bufs)
            }
        })
    }

    /// The evaluation with the AVX2 copy of its loops where the CPU has it
    /// (`crate::simd`).
    #[inline(always)]
    fn dense_on<M: Masks>(&mut self, bufs: &mut Buffers) -> Step<()> {
        #[cfg(target_arch = "x86_64")]
        if crate::simd::avx2() {
            // SAFETY: the CPU has AVX2 (`simd::avx2` checked it).
            return unsafe { self.dense_avx2::<M>(bufs) };
        }
        self.dense::<M>(bufs)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn dense_avx2<M: Masks>(&mut self, bufs: &mut Buffers) -> Step<()> {
        self.dense::<M>(bufs)
    }

    #[inline(always)]
    fn dense<M: Masks>(&mut self, bufs: &mut Buffers) -> Step<()> {
        let n = self.seg.reader.doc_count() as usize;
        let words = n.div_ceil(64);
        if bufs.dirty {
            bufs.clause_docs.clear();
            bufs.packed.fill(Cell::default());
            bufs.wide.fill(Cell::default());
            bufs.touched.fill(0);
            bufs.best.fill(0.0);
            bufs.seen.fill(0);
        }
        if M::cells(bufs).len() < n {
            M::cells(bufs).resize(n, Cell::default());
        }
        if bufs.best.len() < n {
            bufs.best.resize(n, 0.0);
            bufs.touched.resize(words, 0);
            bufs.seen.resize(words, 0);
        }
        bufs.dirty = true;
        let p = self.p;
        let postings: u64 = p
            .clauses
            .iter()
            .flat_map(|(alts, _)| alts)
            .filter_map(|&(t, _)| self.seg.infos[t])
            .map(|info| u64::from(info.df))
            .sum();
        let track = postings.saturating_mul(READ_ALL_CELLS) < n as u64;
        let mut scorer = BlockScorer::new();
        let mut cells = std::mem::take(M::cells(bufs));
        let mut acc = Accumulator {
            cells: &mut cells[..n],
            touched: &mut bufs.touched[..words],
            best: &mut bufs.best[..n],
            seen: &mut bufs.seen[..words],
            clause_docs: &mut bufs.clause_docs,
            track,
        };
        // Per posting, the fields that hold its term, as a pattern (bit `f`: field `f`).
        let mut present = [0u8; BLOCK_LEN];
        for (c, (alts, _)) in p.clauses.iter().enumerate() {
            let single = alts.len() == 1;
            // What a posting of each pattern adds to its doc's masks.
            let adds = M::adds(c);
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
                    let fields = block.fields();
                    let scores = scorer.score(p, self.seg, idf, docs, tfs, fields);
                    let present = &mut present[..m];
                    present.fill(0);
                    for f in (0..FIELD_COUNT).filter(|&f| fields >> f & 1 == 1) {
                        for (p, &t) in present.iter_mut().zip(tfs[f]) {
                            *p |= u8::from(t > 0) << f;
                        }
                    }
                    // A posting holds its term in some field: one that does not is damage
                    // (and its doc would be touched with no clause bit to show it).
                    if present.contains(&0) {
                        return Err(Malformed("posting with no term frequency").into());
                    }
                    acc.add(&adds, single, w, docs, present, scores);
                    cur.skip_in_block(m)?;
                }
            }
            if !single {
                acc.end_clause();
            }
        }
        // Every touched doc in doc order, its cell cleared as it is read.
        let filtered = self.seg.dead.is_some() || self.seg.allowed.is_some();
        let strict_bar = self
            .strict
            .as_ref()
            .map_or(Score::INFINITY, |t| t.top.bar());
        let mut bars = [self.top.bar(), strict_bar];
        if track {
            for word in 0..words {
                let mut bits = bufs.touched[word];
                bufs.touched[word] = 0;
                while bits != 0 {
                    let i = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let cell = std::mem::take(&mut cells[i]);
                    self.finish_doc(cell, i as DocOrd, &mut bars, filtered)?;
                }
            }
        } else {
            // The touched docs listed first without a branch per cell (whether a cell was
            // touched is a coin toss the branch predictor loses), then finished.
            let listed = &mut bufs.listed;
            listed.resize(n + 1, 0);
            let mut count = 0;
            for (i, cell) in cells[..n].iter().enumerate() {
                listed[count] = i as DocOrd;
                count += usize::from(!cell.masks.is_empty());
            }
            for &d in &listed[..count] {
                let cell = std::mem::take(&mut cells[d as usize]);
                self.finish_doc(cell, d, &mut bars, filtered)?;
            }
        }
        *M::cells(bufs) = cells;
        bufs.dirty = false;
        Ok(())
    }

    /// Counts a touched doc and offers it to the heap (and to the strict tier's, when every
    /// required clause matched in it). `bars` holds the heaps' [`TopK::bar`]s, refreshed
    /// here after each offer; `filtered`: whether the segment has tombstones or an `allow`
    /// set (without, every doc is live).
    #[inline(always)]
    fn finish_doc<M: Masks>(
        &mut self,
        cell: Cell<M>,
        d: DocOrd,
        bars: &mut [Score; 2],
        filtered: bool,
    ) -> Step<()> {
        if filtered && !self.live(d) {
            return Ok(());
        }
        self.total += 1;
        let mut masked = false;
        if cell.score >= bars[0] {
            fill_masks(&mut self.doc_masks, &cell.masks);
            masked = true;
            self.offer(d, cell.score)?;
            bars[0] = self.top.bar();
        }
        if let Some(tier) = self.strict.as_mut() {
            if cell.masks.clauses() & tier.required == tier.required {
                tier.total += 1;
                if cell.score >= bars[1] && tier.top.would_accept(cell.score) {
                    if !masked {
                        fill_masks(&mut self.doc_masks, &cell.masks);
                    }
                    let kbid = self.seg.reader.kbid(d)?;
                    let slot = (tier.masks.len() / self.doc_masks.len().max(1)) as u32;
                    tier.masks.extend_from_slice(&self.doc_masks);
                    tier.top.push(Scored {
                        score: cell.score,
                        key: (kbid, self.seg.index, d, slot),
                    });
                    bars[1] = tier.top.bar();
                }
            }
        }
        Ok(())
    }
}

/// Adds a term's scored postings to the docs' cells.
struct Accumulator<'b, M> {
    cells: &'b mut [Cell<M>],
    touched: &'b mut [u64],
    /// A clause with several alternatives: its best value per doc so far, and the docs it
    /// touched (each once, by `seen`).
    best: &'b mut [Score],
    seen: &'b mut [u64],
    clause_docs: &'b mut Vec<DocOrd>,
    /// Whether the touched bitset is kept.
    track: bool,
}

impl<M: Masks> Accumulator<'_, M> {
    /// One alternative's postings, of weight `w` (its clause's only one when `single`):
    /// per posting, its doc, the pattern of the fields that hold the term, its score.
    #[inline(always)]
    fn add(
        &mut self,
        adds: &[M; 1 << FIELD_COUNT],
        single: bool,
        w: Score,
        docs: &[DocOrd],
        patterns: &[u8],
        scores: &[Score],
    ) {
        let n = self.cells.len();
        // Two copies of the loop, so that neither tests `single` per posting.
        if single {
            self.add_postings::<true>(adds, w, docs, patterns, scores);
        } else {
            self.add_postings::<false>(adds, w, docs, patterns, scores);
        }
        if !single {
            for (&d, &s) in docs.iter().zip(scores) {
                let i = d as usize;
                if i >= n {
                    continue;
                }
                let (word, b) = (i / 64, 1u64 << (i % 64));
                if self.seen[word] & b == 0 {
                    self.seen[word] |= b;
                    self.clause_docs.push(d);
                }
                self.best[i] = self.best[i].max(w * s);
            }
        }
    }

    /// The postings' masks, and with `SCORE` their scores, into their docs' cells.
    #[inline(always)]
    fn add_postings<const SCORE: bool>(
        &mut self,
        adds: &[M; 1 << FIELD_COUNT],
        w: Score,
        docs: &[DocOrd],
        patterns: &[u8],
        scores: &[Score],
    ) {
        for ((&d, &pattern), &s) in docs.iter().zip(patterns).zip(scores) {
            let i = d as usize;
            let Some(cell) = self.cells.get_mut(i) else {
                continue; // an ordinal past the segment: never a match
            };
            if self.track {
                self.touched[i / 64] |= 1 << (i % 64);
            }
            cell.masks.add(adds[usize::from(pattern) % adds.len()]);
            if SCORE {
                cell.score += w * s;
            }
        }
    }

    /// After a clause of several alternatives: its value, its best alternative, joins each
    /// doc's sum in clause order.
    fn end_clause(&mut self) {
        for &d in self.clause_docs.iter() {
            let i = d as usize;
            self.cells[i].score += self.best[i];
            self.best[i] = 0.0;
            self.seen[i / 64] = 0;
        }
        self.clause_docs.clear();
    }
}

/// A doc's per-clause field masks (bit `f` of byte `c`: clause `c` matched in field `f`).
#[inline]
fn fill_masks<M: Masks>(doc_masks: &mut [u8], masks: &M) {
    for (c, mask) in doc_masks.iter_mut().enumerate() {
        *mask = masks.fields(c);
    }
}
