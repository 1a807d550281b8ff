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
//! Windows start small so that θ exists early, then grow; their width keeps the row table
//! (width × essential clauses) within a few hundred KiB.
//!
//! Exactness: a doc is dropped only when a bound puts it strictly below θ, so a doc that
//! ties θ (and may win on kbid) is always scored; bound sums are scaled up by `slack` to
//! cover f32 rounding. Each clause's value is computed by the same function as in the
//! exhaustive evaluation, and sums skip only absent clauses (exact +0.0), so a kept doc's
//! score has the same bits. Non-essential clauses use their own cursors, because an
//! essential clause may have consumed the same term's postings past the candidate.
//!
//! `total` stays exact: [`count_union`](SegmentSearch::count_union) counts the union of
//! every present term's doc ordinals (decoded without frequencies) minus dead and filtered
//! docs.

use super::postings::PostingsCursor;
use super::query::{SegmentSearch, Step};
use super::{DocOrd, Score};

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
    /// Present clauses in query order, for summing a survivor's score.
    order: Vec<Source>,
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
                self.order.push(Source::NonEssential(i));
            } else {
                self.order.push(Source::Essential(column));
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

/// Reused buffers of one segment's evaluation.
struct Scratch<'s> {
    /// Per touched doc of the window: one value per essential clause.
    rows: Vec<Score>,
    /// Bitset of the window's touched docs.
    touched: Vec<u64>,
    seek: Seekers<'s>,
}

/// The non-essential side of a candidate's evaluation.
struct Seekers<'s> {
    /// Per sorted clause: its value in the current candidate, once evaluated.
    values: Vec<Score>,
    /// Per term: the cursor that non-essential clauses seek to candidates.
    cursors: Vec<Option<PostingsCursor<'s>>>,
}

impl<'s> SegmentSearch<'_, 's> {
    pub(super) fn run_maxscore(&mut self) -> Step<()> {
        self.total = self.count_union()?;
        if self.top.capacity() == 0 {
            return Ok(());
        }
        let mut plan = Plan::new(self);
        let m = plan.clauses.len();
        if m == 0 {
            return Ok(());
        }
        let max_width = ((ROW_TABLE / m) as u32).clamp(64, MAX_WINDOW);
        let mut scratch = Scratch {
            rows: vec![0.0; max_width as usize * m],
            touched: vec![0; max_width.div_ceil(64) as usize],
            seek: Seekers {
                values: vec![0.0; m],
                cursors: (0..self.cursors.len()).map(|_| None).collect(),
            },
        };
        let n = self.seg.reader.doc_count();
        let (mut lo, mut width) = (0, FIRST_WINDOW.min(max_width));
        while lo < n && plan.raise(self.top.threshold()) {
            let hi = lo.saturating_add(width).min(n);
            self.window(lo, hi, &plan, &mut scratch)?;
            lo = hi;
            width = (width * 2).min(max_width);
        }
        Ok(())
    }

    fn window(&mut self, lo: DocOrd, hi: DocOrd, plan: &Plan, sc: &mut Scratch<'s>) -> Step<()> {
        let p = self.p;
        let me = plan.essential;
        let words = ((hi - lo) as usize).div_ceil(64);
        sc.touched[..words].fill(0);
        for &(t, a, b) in &plan.terms {
            let Some(cur) = self.cursors[t].as_mut() else {
                continue;
            };
            let targets = &plan.targets[a..b];
            let mut d = cur.doc();
            while d < hi {
                let i = (d - lo) as usize;
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                let row = &mut sc.rows[i * me..(i + 1) * me];
                if sc.touched[word] & bit == 0 {
                    sc.touched[word] |= bit;
                    row.fill(0.0);
                }
                let factors = self.seg.factors.get(d as usize).copied();
                let s = p
                    .norms
                    .score(p.idf[t], cur.tfs()?, factors.unwrap_or_default());
                for &(k, w) in targets {
                    row[k] = row[k].max(w * s);
                }
                d = cur.advance()?;
            }
        }
        for word in 0..words {
            let mut bits = sc.touched[word];
            while bits != 0 {
                let i = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let d = lo + i as DocOrd;
                if self.live(d) {
                    self.candidate(d, &sc.rows[i * me..(i + 1) * me], plan, &mut sc.seek)?;
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
        row: &[Score],
        plan: &Plan,
        seek: &mut Seekers<'s>,
    ) -> Step<()> {
        let p = self.p;
        let theta = self.top.threshold();
        let mut partial: Score = row.iter().sum();
        for j in (0..plan.ne).rev() {
            if plan.below(partial + plan.prefix[j + 1], theta) {
                return Ok(());
            }
            let mut best: Score = 0.0;
            for &(t, w) in &plan.clauses[j].alts {
                if seek.cursors[t].is_none() {
                    if let Some(info) = self.seg.infos[t] {
                        seek.cursors[t] = Some(self.seg.reader.cursor(info)?);
                    }
                }
                if let Some(cur) = seek.cursors[t].as_mut() {
                    if cur.seek(d)? == d {
                        let s = p.norms.score(p.idf[t], cur.tfs()?, self.factors(d));
                        best = best.max(w * s);
                    }
                }
            }
            seek.values[j] = best;
            partial += best;
        }
        let mut score: Score = 0.0;
        for &src in &plan.order {
            score += match src {
                Source::Essential(k) => row[k],
                Source::NonEssential(j) => seek.values[j],
            };
        }
        self.offer(d, score)
    }

    /// Live docs containing any present term of any clause.
    pub(super) fn count_union(&self) -> Step<u64> {
        let seg = self.seg;
        let mut terms: Vec<usize> = self
            .p
            .clauses
            .iter()
            .flat_map(|c| c.0.iter().map(|a| a.0))
            .filter(|&t| seg.infos[t].is_some())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let unfiltered = seg.dead.is_none() && seg.allowed.is_none();
        let df_sum: u64 = terms
            .iter()
            .filter_map(|&t| seg.infos[t])
            .map(|i| u64::from(i.df))
            .sum();
        if unfiltered && terms.len() <= 1 {
            return Ok(df_sum);
        }
        let words = (seg.reader.doc_count() as usize).div_ceil(64);
        if df_sum < (words / 8) as u64 {
            // Few postings: sorting them beats clearing a bitset.
            let mut docs = Vec::with_capacity(df_sum as usize);
            for &t in &terms {
                if let Some(info) = seg.infos[t] {
                    seg.reader.cursor(info)?.drain_docs(|d| docs.push(d))?;
                }
            }
            docs.sort_unstable();
            docs.dedup();
            return Ok(docs.iter().filter(|&&d| self.live(d)).count() as u64);
        }
        let mut bits = vec![0u64; words];
        for &t in &terms {
            if let Some(info) = seg.infos[t] {
                seg.reader.cursor(info)?.drain_docs(|d| {
                    if let Some(w) = bits.get_mut(d as usize / 64) {
                        *w |= 1 << (d % 64);
                    }
                })?;
            }
        }
        if let Some(dead) = seg.dead {
            bits.iter_mut()
                .zip(dead.words())
                .for_each(|(w, x)| *w &= !x);
        }
        if let Some(allowed) = seg.allowed {
            bits.iter_mut()
                .zip(allowed.words())
                .for_each(|(w, x)| *w &= x);
        }
        Ok(bits.iter().map(|w| u64::from(w.count_ones())).sum())
    }
}
