//! Relaxed (any clause) evaluation with MaxScore pruning (Turtle & Flood, "Query
//! evaluation: strategies and optimizations", IP&M 31(6), 1995), over windows of doc
//! ordinals as in Lucene's `MaxScoreBulkScorer`.
//!
//! Each clause has a bound `ub` on what it can add to a score: the max over its present
//! alternatives of weight × idf, since BM25F's saturation tf̃/(k1 + tf̃) stays below 1.
//! Clauses are sorted by `ub`. With the heap full at threshold θ, the longest prefix of
//! clauses whose bounds sum below θ is *non-essential*: a doc matching only those cannot
//! enter, so candidates come from the essential clauses alone.
//!
//! Per window (θ and the split are fixed for its duration):
//! 1. the essential clauses are scored term at a time into a row per touched doc (each
//!    clause's best alternative), with tight loops over decoded blocks;
//! 2. each touched live doc, in doc order, adds its non-essential clauses in decreasing
//!    bound order, seeking their cursors to it, and is dropped as soon as `partial +
//!    remaining bounds` falls below θ; most non-essential blocks are never decoded;
//! 3. a survivor's score is summed in query clause order and offered to the heap, which
//!    raises θ for the next docs and the next split.
//!
//! Windows start small so that θ exists early (full width when the heap arrives with a
//! threshold from a segment searched before), then grow; their width keeps the row table
//! (width × essential clauses) within a few hundred KiB.
//!
//! Exactness: a doc is dropped only when a bound puts it strictly below θ, so a doc that
//! ties θ (and may win on kbid) is always scored; bound sums are scaled up by `slack` to
//! cover f32 rounding. Each clause's value is computed by the same function as in the
//! exhaustive evaluation, and sums skip only absent clauses (exact +0.0), so a kept doc's
//! score has the same bits. Non-essential clauses use their own cursors, because an
//! essential clause may have consumed the same term's postings past the candidate.
//!
//! `total` stays exact: every doc a window's essential terms visit is marked in a bitset,
//! and every cursor is drained at the end (doc ordinals only, no frequencies or scores), so
//! each block is decoded once whether it was scored or skipped; the count is the bitset's
//! live docs.

use std::cell::RefCell;

use super::postings::PostingsCursor;
use super::query::{field_mask, with_buffers, BlockScorer, SegmentSearch, Step};
use super::{DocOrd, Score, FIELD_COUNT};

/// Floats in the per-window row table at most.
const ROW_TABLE: usize = 1 << 16;
/// Width of the first window: small, so that θ is known before most docs are seen.
const FIRST_WINDOW: u32 = 256;
/// Width of later windows at most.
const MAX_WINDOW: u32 = 4096;

/// A clause with its present alternatives and its bound.
struct Bounded {
    clause: usize,
    alts: Vec<(usize, Score)>,
    ub: Score,
}

/// Where a clause's value comes from when a survivor's score is summed.
#[derive(Clone, Copy)]
enum Source {
    /// Column of the row table.
    Essential(usize),
    /// Index into the sorted clauses (its value is in `ne_values`).
    NonEssential(usize),
}

/// The clauses sorted by bound and the current split.
struct Plan {
    clauses: Vec<Bounded>,
    /// `prefix[i]`: the sum of the first `i` bounds.
    prefix: Vec<Score>,
    /// Scale for bound sums so that f32 rounding never drops a doc that could enter.
    slack: Score,
    /// Sorted clauses `[0, ne)` are non-essential.
    ne: usize,
    /// How many essential clauses (row columns, in query order) there are.
    essential: usize,
    /// The essential clauses' terms, each once: `(term, targets[a..b])`.
    terms: Vec<(usize, usize, usize)>,
    /// `(column, weight)`: where a term's score goes (a term may serve several clauses).
    targets: Vec<(usize, Score)>,
    /// Present clauses in query order (with their query index), for summing a survivor's
    /// score and gathering its masks.
    order: Vec<(usize, Source)>,
}

impl Plan {
    fn new(s: &SegmentSearch<'_, '_>) -> Plan {
        let p = s.p;
        let mut clauses = Vec::with_capacity(p.clauses.len());
        for (clause, (alts, _)) in p.clauses.iter().enumerate() {
            let alts: Vec<(usize, Score)> = alts
                .iter()
                .copied()
                .filter(|&(t, _)| s.cursors[t].is_some())
                .collect();
            if !alts.is_empty() {
                let ub = alts
                    .iter()
                    .map(|&(t, w)| w * p.idf[t])
                    .fold(0.0, Score::max);
                clauses.push(Bounded { clause, alts, ub });
            }
        }
        clauses.sort_by(|a, b| a.ub.total_cmp(&b.ub));
        let mut prefix = Vec::with_capacity(clauses.len() + 1);
        prefix.push(0.0);
        for c in &clauses {
            prefix.push(prefix[prefix.len() - 1] + c.ub);
        }
        let mut plan = Plan {
            slack: 1.0 + (clauses.len() as Score + 8.0) / (1 << 20) as Score,
            clauses,
            prefix,
            ne: 0,
            essential: 0,
            terms: Vec::new(),
            targets: Vec::new(),
            order: Vec::new(),
        };
        plan.split();
        plan
    }

    /// Whether a doc whose score is at most `bound` cannot reach `theta`.
    #[inline]
    fn below(&self, bound: Score, theta: Option<Score>) -> bool {
        theta.is_some_and(|th| bound * self.slack < th)
    }

    /// Moves clauses to the non-essential prefix while their bounds allow; false when no
    /// doc can enter any more.
    fn raise(&mut self, theta: Option<Score>) -> bool {
        let old = self.ne;
        while self.ne < self.clauses.len() && self.below(self.prefix[self.ne + 1], theta) {
            self.ne += 1;
        }
        if self.ne != old {
            self.split();
        }
        self.ne < self.clauses.len()
    }

    fn split(&mut self) {
        let mut by_query: Vec<usize> = (0..self.clauses.len()).collect();
        by_query.sort_by_key(|&i| self.clauses[i].clause);
        self.order.clear();
        let mut uses: Vec<(usize, usize, Score)> = Vec::new();
        let mut column = 0;
        for i in by_query {
            if i < self.ne {
                self.order
                    .push((self.clauses[i].clause, Source::NonEssential(i)));
            } else {
                self.order
                    .push((self.clauses[i].clause, Source::Essential(column)));
                uses.extend(self.clauses[i].alts.iter().map(|&(t, w)| (t, column, w)));
                column += 1;
            }
        }
        self.essential = column;
        uses.sort_by_key(|u| u.0);
        self.terms.clear();
        self.targets.clear();
        for group in uses.chunk_by(|a, b| a.0 == b.0) {
            let a = self.targets.len();
            self.targets.extend(group.iter().map(|&(_, k, w)| (k, w)));
            self.terms.push((group[0].0, a, self.targets.len()));
        }
    }
}

/// The window's rows: per touched doc, one value and one field mask per essential clause
/// (valid where its `set` bit is), and an upper bound of their sum.
struct Rows<'b> {
    values: &'b mut [Score],
    masks: &'b mut [u8],
    /// Per row, `set_words` words: bit k set = column k holds a value.
    set: &'b mut [u64],
    /// Per row: Σ weight × score over the postings it got, at least its clauses' sum.
    bound: &'b mut [Score],
    /// Bitset of the window's touched docs.
    touched: &'b mut [u64],
}

/// Writes a term's value `v` (and its fields) into a row's cell: the cell's first value,
/// or the larger of the two (a clause scores its best alternative).
#[inline(always)]
fn put_cell(values: &mut [Score], masks: &mut [u8], cell: usize, first: bool, v: Score, mask: u8) {
    if first {
        values[cell] = v;
        masks[cell] = mask;
    } else {
        values[cell] = values[cell].max(v);
        masks[cell] |= mask;
    }
}

/// One touched doc's row.
struct Row<'r> {
    values: &'r [Score],
    masks: &'r [u8],
    set: &'r [u64],
    bound: Score,
}

impl Row<'_> {
    #[inline]
    fn has(&self, k: usize) -> bool {
        self.set.get(k / 64).is_some_and(|w| w >> (k % 64) & 1 == 1)
    }
}

/// The non-essential side of a candidate's evaluation.
struct Seekers<'s> {
    /// Per sorted clause: its value and field mask in the current candidate, once
    /// evaluated.
    values: Vec<Score>,
    masks: Vec<u8>,
    /// Per term: the cursor that non-essential clauses seek to candidates.
    cursors: Vec<Option<PostingsCursor<'s>>>,
}

/// Every doc any present term contains (dead and filtered ones too, until `count`): a
/// bitset, or a list when the postings are few next to the segment's size.
enum Matches<'b> {
    Bits(&'b mut Vec<u64>),
    List(&'b mut Vec<DocOrd>),
}

impl Matches<'_> {
    #[inline]
    fn insert(&mut self, d: DocOrd) {
        self.extend(&[d]);
    }

    #[inline]
    fn extend(&mut self, docs: &[DocOrd]) {
        match self {
            Matches::Bits(bits) => {
                for &d in docs {
                    if let Some(w) = bits.get_mut(d as usize / 64) {
                        *w |= 1 << (d % 64);
                    }
                }
            }
            Matches::List(list) => list.extend_from_slice(docs),
        }
    }

    /// Live docs among them.
    fn count(self, s: &SegmentSearch<'_, '_>) -> u64 {
        match self {
            Matches::List(list) => {
                list.sort_unstable();
                list.dedup();
                list.iter().filter(|&&d| s.live(d)).count() as u64
            }
            Matches::Bits(bits) => {
                if let Some(dead) = s.seg.dead {
                    bits.iter_mut()
                        .zip(dead.words())
                        .for_each(|(w, x)| *w &= !x);
                }
                if let Some(allowed) = s.seg.allowed {
                    bits.iter_mut()
                        .zip(allowed.words())
                        .for_each(|(w, x)| *w &= x);
                }
                bits.iter().map(|w| u64::from(w.count_ones())).sum()
            }
        }
    }
}

/// Buffers reused across queries on one thread (evaluations never nest).
#[derive(Default)]
struct Buffers {
    rows: Vec<Score>,
    row_masks: Vec<u8>,
    row_set: Vec<u64>,
    row_bound: Vec<Score>,
    touched: Vec<u64>,
    bits: Vec<u64>,
    list: Vec<DocOrd>,
}

thread_local! {
    static BUFFERS: RefCell<Buffers> = RefCell::default();
}

impl<'s> SegmentSearch<'_, 's> {
    pub(super) fn run_maxscore(&mut self) -> Step<()> {
        with_buffers(&BUFFERS, |bufs| self.maxscore(bufs))
    }

    fn maxscore(&mut self, bufs: &mut Buffers) -> Step<()> {
        let n = self.seg.reader.doc_count();
        let words = (n as usize).div_ceil(64);
        let df_sum: u64 = self
            .cursors
            .iter()
            .flatten()
            .map(|c| u64::from(c.df()))
            .sum();
        let mut matches = if df_sum < (words / 8) as u64 {
            bufs.list.clear();
            Matches::List(&mut bufs.list)
        } else {
            bufs.bits.clear();
            bufs.bits.resize(words, 0);
            Matches::Bits(&mut bufs.bits)
        };
        let plan = Plan::new(self);
        let m = plan.clauses.len();
        if self.top.capacity() > 0 && m > 0 {
            let max_width = ((ROW_TABLE / m) as u32).clamp(64, MAX_WINDOW);
            let width = max_width as usize;
            if bufs.rows.len() < width * m {
                bufs.rows.resize(width * m, 0.0);
                bufs.row_masks.resize(width * m, 0);
            }
            bufs.row_set.resize(width * m.div_ceil(64), 0);
            bufs.row_bound.resize(width, 0.0);
            bufs.touched.resize(width.div_ceil(64), 0);
            let mut rows = Rows {
                values: &mut bufs.rows,
                masks: &mut bufs.row_masks,
                set: &mut bufs.row_set,
                bound: &mut bufs.row_bound,
                touched: &mut bufs.touched,
            };
            let mut seek = Seekers {
                values: vec![0.0; m],
                masks: vec![0; m],
                cursors: (0..self.cursors.len()).map(|_| None).collect(),
            };
            let mut plan = plan;
            // Small first windows only while there is no threshold yet: a segment searched
            // after another starts with the heap that one filled.
            let first = if self.top.threshold().is_some() {
                max_width
            } else {
                FIRST_WINDOW.min(max_width)
            };
            let (mut lo, mut width) = (0, first);
            while lo < n && plan.raise(self.top.threshold()) {
                let hi = lo.saturating_add(width).min(n);
                self.window(lo, hi, &plan, &mut rows, &mut seek, &mut matches)?;
                lo = hi;
                width = (width * 2).min(max_width);
            }
        }
        // Whatever the windows did not visit (all of it when nothing is ranked) still counts.
        for c in self.cursors.iter_mut().flatten() {
            c.drain_blocks(|docs| matches.extend(docs))?;
        }
        self.total = matches.count(self);
        Ok(())
    }

    /// Scores window `[lo, hi)`: its essential clauses term at a time, then its candidates.
    fn window(
        &mut self,
        lo: DocOrd,
        hi: DocOrd,
        plan: &Plan,
        rows: &mut Rows<'_>,
        seek: &mut Seekers<'s>,
        matches: &mut Matches<'_>,
    ) -> Step<()> {
        let p = self.p;
        let me = plan.essential;
        let sw = me.div_ceil(64);
        let words = ((hi - lo) as usize).div_ceil(64);
        rows.touched[..words].fill(0);
        let mut scorer = BlockScorer::new();
        for &(t, a, b) in &plan.terms {
            let Some(cur) = self.cursors[t].as_mut() else {
                continue;
            };
            let targets = &plan.targets[a..b];
            let idf = p.idf[t];
            while cur.doc() < hi {
                let block = cur.block()?;
                let n = block.docs.partition_point(|&d| d < hi);
                let docs = &block.docs[..n];
                let tfs: [&[u32]; FIELD_COUNT] = std::array::from_fn(|f| block.field_tfs(f, n));
                let scores = scorer.score(p, self.seg, idf, docs, tfs, block.fields());
                if let ([(k, w)], 1) = (targets, sw) {
                    // The usual case, one column per term and at most 64 essential
                    // clauses (one set word per row): the loop below without its slices.
                    let (k, w) = (*k, *w);
                    let kb = 1u64 << k;
                    for (j, &d) in docs.iter().enumerate() {
                        let i = (d - lo) as usize;
                        let (word, bit) = (i / 64, 1u64 << (i % 64));
                        if rows.touched[word] & bit == 0 {
                            rows.touched[word] |= bit;
                            rows.set[i] = 0;
                            rows.bound[i] = 0.0;
                            matches.insert(d);
                        }
                        let v = w * scores[j];
                        let mask = field_mask(std::array::from_fn(|f| tfs[f][j]));
                        let first = rows.set[i] & kb == 0;
                        rows.set[i] |= kb;
                        put_cell(rows.values, rows.masks, i * me + k, first, v, mask);
                        rows.bound[i] += v;
                    }
                    cur.skip_in_block(n)?;
                    continue;
                }
                for (j, &d) in docs.iter().enumerate() {
                    let i = (d - lo) as usize;
                    let (word, bit) = (i / 64, 1u64 << (i % 64));
                    let set = &mut rows.set[i * sw..(i + 1) * sw];
                    if rows.touched[word] & bit == 0 {
                        rows.touched[word] |= bit;
                        set.fill(0);
                        rows.bound[i] = 0.0;
                        matches.insert(d);
                    }
                    let s = scores[j];
                    let mask = field_mask(std::array::from_fn(|f| tfs[f][j]));
                    for &(k, w) in targets {
                        let (cell, v) = (i * me + k, w * s);
                        let (sw_k, sb_k) = (k / 64, 1u64 << (k % 64));
                        let first = set[sw_k] & sb_k == 0;
                        set[sw_k] |= sb_k;
                        put_cell(rows.values, rows.masks, cell, first, v, mask);
                        rows.bound[i] += v;
                    }
                }
                cur.skip_in_block(n)?;
            }
        }
        for word in 0..words {
            let mut bits = rows.touched[word];
            while bits != 0 {
                let i = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let d = lo + i as DocOrd;
                if self.live(d)
                    && !plan.below(rows.bound[i] + plan.prefix[plan.ne], self.top.threshold())
                {
                    let row = Row {
                        values: &rows.values[i * me..(i + 1) * me],
                        masks: &rows.masks[i * me..(i + 1) * me],
                        set: &rows.set[i * sw..(i + 1) * sw],
                        bound: rows.bound[i],
                    };
                    self.candidate(d, row, plan, seek)?;
                }
            }
        }
        Ok(())
    }

    /// Adds the non-essential clauses to a touched doc's essential `row` while it can still
    /// enter, then offers its exact score.
    fn candidate(
        &mut self,
        d: DocOrd,
        row: Row<'_>,
        plan: &Plan,
        seek: &mut Seekers<'s>,
    ) -> Step<()> {
        let p = self.p;
        let theta = self.top.threshold();
        let mut partial = row.bound;
        for j in (0..plan.ne).rev() {
            if plan.below(partial + plan.prefix[j + 1], theta) {
                return Ok(());
            }
            let (mut best, mut mask): (Score, u8) = (0.0, 0);
            for &(t, w) in &plan.clauses[j].alts {
                if seek.cursors[t].is_none() {
                    if let Some(info) = self.seg.infos[t] {
                        seek.cursors[t] = Some(self.seg.reader.cursor_at(info, d)?);
                    }
                }
                if let Some(cur) = seek.cursors[t].as_mut() {
                    if cur.seek(d)? == d {
                        let tfs = cur.tfs()?;
                        mask |= field_mask(tfs);
                        best = best.max(w * p.norms.score(p.idf[t], tfs, self.factors(d)));
                    }
                }
            }
            seek.values[j] = best;
            seek.masks[j] = mask;
            partial += best;
        }
        // The exhaustive evaluation's sum: clause by clause in query order (absent clauses
        // add +0.0, which changes nothing).
        let mut score: Score = 0.0;
        for &(_, src) in &plan.order {
            match src {
                Source::Essential(k) if row.has(k) => score += row.values[k],
                Source::Essential(_) => {}
                Source::NonEssential(j) => score += seek.values[j],
            }
        }
        if !self.top.would_accept(score) {
            return Ok(());
        }
        self.doc_masks.fill(0);
        for &(c, src) in &plan.order {
            self.doc_masks[c] = match src {
                Source::Essential(k) if row.has(k) => row.masks[k],
                Source::Essential(_) => 0,
                Source::NonEssential(j) => seek.masks[j],
            };
        }
        self.offer(d, score)
    }
}
