//! Queries over one segment: the request types, the per-segment search state shared by the
//! evaluators, and the per-hit details.
//!
//! A query is a list of clauses (a term and its synonyms, each with a weight; required or
//! optional) and phrases. Matching:
//!
//! - strict (`require_all` and at least one required clause or phrase): every required
//!   clause (any alternative) and every phrase term must occur (`strict`);
//! - relaxed (otherwise): a doc matches when any clause does (a union). Phrases do not
//!   filter in relaxed mode. `dense` evaluates it term at a time on small segments and
//!   `maxscore` with dynamic pruning on large ones ([`Evaluation`]); the exhaustive
//!   evaluation here scores every match doc at a time and is the reference the tests hold
//!   both to.
//!
//! Tombstoned docs and docs outside the `allow` set never match. A match's score is the sum,
//! in clause order, of each clause's best alternative (BM25F score × weight), so every
//! evaluator produces the same bits for the same doc. `total` counts every live match
//! exactly, pruned or not. Evaluation loops allocate nothing per doc.

use std::cell::RefCell;
use std::collections::HashMap;
use std::thread::LocalKey;

use super::bm25f::{Bm25fParams, CorpusStats, FieldNorms};
use super::postings::{Malformed, PostingsCursor, BLOCK_LEN, TERMINATED};
use super::segment::SegmentReader;
use super::termdict::TermInfo;
use super::tombstone::Tombstones;
use super::topk::{Scored, TopK};
use super::{DocOrd, Kbid, Score, FIELD_COUNT};
use crate::error::{Error, Result};

/// One query clause: alternatives `(term, weight)` and whether it must match.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub alternatives: Vec<(String, f32)>,
    pub required: bool,
}

/// A search request (owned, so it can cross threads).
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub clauses: Vec<Clause>,
    /// Each phrase: `(term, relative position)`.
    pub phrases: Vec<Vec<(String, i64)>>,
    pub require_all: bool,
    pub limit: usize,
    pub allow: Option<Vec<Kbid>>,
    pub params: Bm25fParams,
    pub explain: bool,
    /// Strict matching: the share of sections past which a required clause is common
    /// and made optional ([`Prepared::relax_common`]); 0 keeps every clause as it is.
    pub common_cutoff: f32,
    /// Corpus statistics to score with instead of the index's own: those of a whole
    /// collection this index is one shard of, so every shard scores as one index would.
    pub corpus: Option<GlobalStats>,
}

/// The statistics BM25F takes from a corpus, summed over the shards of a collection
/// ([`crate::lexical::Index::term_stats`] of each).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GlobalStats {
    pub stats: CorpusStats,
    /// Document frequency of every term of the query.
    pub df: HashMap<String, u64>,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            clauses: Vec::new(),
            phrases: Vec::new(),
            require_all: true,
            limit: 10,
            allow: None,
            params: Bm25fParams::default(),
            explain: false,
            common_cutoff: 0.0,
            corpus: None,
        }
    }
}

/// Ranks hits: score, then kbid, then where the doc lives (segment, ordinal); the last
/// field, never compared (the first three are unique), locates the hit's clause masks in
/// its segment's [`SegmentHits::masks`].
pub type HitKey = (Kbid, u32, DocOrd, u32);

/// What one segment's evaluation returns.
pub struct SegmentHits {
    /// The heap it was given, with this segment's hits offered to it.
    pub top: TopK<HitKey>,
    /// Live matches.
    pub total: u64,
    /// Per clause field masks of every doc that entered the heap, `clauses` bytes each.
    pub masks: Vec<u8>,
}

/// A query with terms deduplicated and corpus-wide statistics resolved.
pub struct Prepared {
    pub terms: Vec<String>,
    pub idf: Vec<Score>,
    /// Per term: its document frequency summed over the snapshot's segments.
    pub df: Vec<u64>,
    /// Per clause: `(term index, weight)` alternatives, and required.
    pub clauses: Vec<(Vec<(usize, Score)>, bool)>,
    /// Per phrase: `(term index, offset ≥ 0)`.
    pub phrases: Vec<Vec<(usize, u32)>>,
    pub strict: bool,
    /// Per clause: made optional by [`Prepared::relax_common`].
    pub common: Vec<bool>,
    pub norms: FieldNorms,
}

impl Prepared {
    /// Interns the query's terms; `df` and `idf` are filled in later by the caller.
    pub fn new(q: &Query, norms: FieldNorms) -> Result<Prepared> {
        q.params.validate()?;
        let mut terms: Vec<String> = Vec::new();
        let mut intern = |t: &str| match terms.iter().position(|x| x == t) {
            Some(i) => i,
            None => {
                terms.push(t.to_string());
                terms.len() - 1
            }
        };
        let mut clauses = Vec::with_capacity(q.clauses.len());
        for c in &q.clauses {
            let mut alts = Vec::with_capacity(c.alternatives.len());
            for (t, w) in &c.alternatives {
                if !(w.is_finite() && *w >= 0.0) {
                    return Err(Error::InvalidArgument(format!(
                        "weight of '{t}' must be >= 0, got {w}"
                    )));
                }
                alts.push((intern(t), *w));
            }
            clauses.push((alts, c.required));
        }
        let mut phrases = Vec::with_capacity(q.phrases.len());
        for ph in q.phrases.iter().filter(|p| !p.is_empty()) {
            let min = ph.iter().map(|(_, o)| *o).min().unwrap_or(0);
            let mut out = Vec::with_capacity(ph.len());
            for (t, o) in ph {
                let off = u32::try_from(o - min).map_err(|_| {
                    Error::InvalidArgument(format!("phrase position {o} out of range"))
                })?;
                out.push((intern(t), off));
            }
            phrases.push(out);
        }
        let strict = q.require_all && (clauses.iter().any(|c| c.1) || !phrases.is_empty());
        let idf = vec![0.0; terms.len()];
        let df = vec![0; terms.len()];
        Ok(Prepared {
            terms,
            idf,
            df,
            clauses,
            phrases,
            strict,
            common: vec![false; q.clauses.len()],
            norms,
        })
    }

    /// Strict matching with common words optional (Elasticsearch's common terms query): a
    /// required clause that occurs in more than `cutoff` of the `docs` sections (its most
    /// frequent alternative's df) is made optional when at least one required clause is
    /// not that common. It still adds to the score where it matches. Call after `df`.
    pub fn relax_common(&mut self, cutoff: f32, docs: u64) {
        if cutoff.is_nan() || cutoff <= 0.0 || !self.strict {
            return;
        }
        let limit = f64::from(cutoff) * docs as f64;
        let df = &self.df;
        let common: Vec<bool> = self
            .clauses
            .iter()
            .map(|(alts, _)| alts.iter().map(|&(t, _)| df[t]).max().unwrap_or(0) as f64 > limit)
            .collect();
        let rare_required = self
            .clauses
            .iter()
            .zip(&common)
            .any(|((_, required), &c)| *required && !c);
        if !rare_required {
            return;
        }
        for (((_, required), c), out) in self.clauses.iter_mut().zip(common).zip(&mut self.common) {
            if c && *required {
                *required = false;
                *out = true;
            }
        }
    }

    /// Per clause: the most it can add to a score, `max(weight × idf)` over its alternatives
    /// that occur in the index (0 when none does). BM25F saturates below idf, so no doc's
    /// clause score reaches it.
    pub fn clause_bounds(&self) -> Vec<Score> {
        self.clauses
            .iter()
            .map(|(alts, _)| {
                alts.iter()
                    .filter(|&&(t, _)| self.df[t] > 0)
                    .map(|&(t, w)| w * self.idf[t])
                    .fold(0.0, Score::max)
            })
            .collect()
    }
}

/// One segment as a search sees it.
pub struct SegmentView<'a> {
    pub index: u32,
    pub reader: &'a SegmentReader,
    pub dead: Option<&'a Tombstones>,
    pub allowed: Option<&'a Tombstones>,
    /// Per prepared term: its postings in this segment.
    pub infos: &'a [Option<TermInfo>],
    /// Per doc: `w_f / norm_f(d)` under the query's parameters.
    pub factors: &'a [[Score; FIELD_COUNT]],
}

/// Scores a decoded block's postings, term at a time (the MaxScore windows and the dense
/// evaluation): each posting's length factors gathered, then one `score_block` pass, both
/// over the fields the block holds the term in (`Block::fields`).
pub(super) struct BlockScorer {
    /// Per field, the length factor of each posting's doc.
    factors: [[Score; BLOCK_LEN]; FIELD_COUNT],
    scores: [Score; BLOCK_LEN],
}

impl BlockScorer {
    pub fn new() -> Self {
        BlockScorer {
            factors: [[0.0; BLOCK_LEN]; FIELD_COUNT],
            scores: [0.0; BLOCK_LEN],
        }
    }

    /// The BM25F score (before the clause weight) of each of `docs`, whose per-field
    /// frequencies are `tfs`, all 0 outside `fields` (bit `f`: field `f`), for a term of
    /// this `idf`. Always inlined, so that it is compiled with the caller's instruction set
    /// (`crate::simd`).
    #[inline(always)]
    pub fn score(
        &mut self,
        p: &Prepared,
        seg: &SegmentView<'_>,
        idf: Score,
        docs: &[DocOrd],
        tfs: [&[u32]; FIELD_COUNT],
        fields: u8,
    ) -> &[Score] {
        let n = docs.len().min(BLOCK_LEN);
        for f in (0..FIELD_COUNT).filter(|&f| fields >> f & 1 == 1) {
            for (column, &d) in self.factors[f].iter_mut().zip(&docs[..n]) {
                *column = seg.factors.get(d as usize).map_or(0.0, |row| row[f]);
            }
        }
        let scores = &mut self.scores[..n];
        let factors: [&[Score]; FIELD_COUNT] = std::array::from_fn(|f| &self.factors[f][..n]);
        p.norms.score_block(idf, tfs, factors, fields, scores);
        scores
    }
}

/// Runs `f` with this thread's reusable buffers in `key`: taken out for the call and put
/// back after it, so evaluations allocate nothing once the buffers have grown.
pub(super) fn with_buffers<B: Default + 'static, T>(
    key: &'static LocalKey<RefCell<B>>,
    f: impl FnOnce(&mut B) -> T,
) -> T {
    let mut bufs = key.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let out = f(&mut bufs);
    key.with(|b| *b.borrow_mut() = bufs);
    out
}

/// How relaxed queries are evaluated. Every evaluator returns the same hits, score bits,
/// masks and `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evaluation {
    /// Term at a time (`Dense`) on segments of at most 16,384 docs (`dense::DENSE_MAX_DOCS`),
    /// MaxScore on larger ones.
    Auto,
    /// MaxScore: skips docs that cannot reach the top `limit`.
    MaxScore,
    /// Term at a time into one cell per doc (MaxScore past 64 clauses).
    Dense,
    /// Scores every match doc at a time (the reference).
    Exhaustive,
}

/// Matches and scores one segment into `top`, which may already hold hits from segments
/// searched before: its threshold then prunes this segment from the first doc on. Returns
/// the heap and the segment's match count.
pub fn search_segment(
    p: &Prepared,
    seg: &SegmentView<'_>,
    top: TopK<HitKey>,
    eval: Evaluation,
) -> Result<SegmentHits> {
    let dense = super::dense::fits(p.clauses.len())
        && match eval {
            Evaluation::Dense => true,
            Evaluation::Auto => seg.reader.doc_count() <= super::dense::DENSE_MAX_DOCS,
            Evaluation::MaxScore | Evaluation::Exhaustive => false,
        };
    // The term-at-a-time evaluation opens its cursors itself, one term after another.
    let term_at_a_time = dense && !p.strict && eval != Evaluation::Exhaustive;
    let run = SegmentSearch::new(p, seg, top, !term_at_a_time).and_then(|mut s| {
        if p.strict {
            s.run_strict()?;
        } else if eval == Evaluation::Exhaustive {
            s.run_exhaustive()?;
        } else if dense {
            s.run_dense()?;
        } else {
            s.run_maxscore()?;
        }
        Ok(SegmentHits {
            top: s.top,
            total: s.total,
            masks: s.masks,
        })
    });
    seg.finish(run)
}

/// A relaxed query's evaluation of one segment, term at a time, that also ranks the docs
/// in which every required clause matched into `strict` (the query has no phrases): the two
/// results `search_segment` gives for the query relaxed and strict, from one pass. The
/// caller checks `dense::fits` and the segment's size.
pub fn search_segment_tiers(
    p: &Prepared,
    seg: &SegmentView<'_>,
    top: TopK<HitKey>,
    strict: TopK<HitKey>,
) -> Result<(SegmentHits, SegmentHits)> {
    let required = p
        .clauses
        .iter()
        .enumerate()
        .filter(|(_, (_, req))| *req)
        .fold(0u64, |m, (c, _)| m | 1 << c);
    let run = SegmentSearch::new(p, seg, top, false).and_then(|mut s| {
        s.strict = Some(StrictTier {
            top: strict,
            total: 0,
            masks: Vec::new(),
            required,
        });
        s.run_dense()?;
        let tier = s.strict.take().ok_or(Malformed("strict tier"))?;
        Ok((
            SegmentHits {
                top: s.top,
                total: s.total,
                masks: s.masks,
            },
            SegmentHits {
                top: tier.top,
                total: tier.total,
                masks: tier.masks,
            },
        ))
    });
    seg.finish(run)
}

impl SegmentView<'_> {
    /// An evaluation's outcome as the search's: a malformed block is this segment's file
    /// corrupt.
    fn finish<T>(&self, run: Step<T>) -> Result<T> {
        match run {
            Ok(r) => Ok(r),
            Err(SearchError::Malformed(m)) => Err(self.reader.corrupt(m)),
            Err(SearchError::Other(e)) => Err(e),
        }
    }
}

pub(super) enum SearchError {
    Malformed(Malformed),
    Other(Error),
}

impl From<Malformed> for SearchError {
    fn from(m: Malformed) -> Self {
        SearchError::Malformed(m)
    }
}

impl From<Error> for SearchError {
    fn from(e: Error) -> Self {
        SearchError::Other(e)
    }
}

pub(super) type Step<T> = std::result::Result<T, SearchError>;

/// The state of one segment's evaluation: a cursor per present term (none for the term at a
/// time evaluation, which opens its own), the heap, the count.
pub(super) struct SegmentSearch<'a, 's> {
    pub p: &'a Prepared,
    pub seg: &'a SegmentView<'s>,
    pub cursors: Vec<Option<PostingsCursor<'s>>>,
    pub top: TopK<HitKey>,
    pub total: u64,
    /// Clause masks of the docs offered to the heap so far (see [`SegmentHits::masks`]).
    pub masks: Vec<u8>,
    /// The clause masks of the doc being offered.
    pub doc_masks: Vec<u8>,
    /// The strict ranking, filled by the same relaxed evaluation ([`search_segment_tiers`]).
    pub strict: Option<StrictTier>,
}

/// The strict hits of a relaxed evaluation: docs in which every required clause matched.
pub(super) struct StrictTier {
    pub top: TopK<HitKey>,
    pub total: u64,
    pub masks: Vec<u8>,
    /// Bit `c` for each required clause `c` (64 clauses at most: `dense::fits`).
    pub required: u64,
}

impl<'a, 's> SegmentSearch<'a, 's> {
    /// With `open`, a cursor per present term, at its first block; without, none.
    fn new(p: &'a Prepared, seg: &'a SegmentView<'s>, top: TopK<HitKey>, open: bool) -> Step<Self> {
        let mut cursors = Vec::with_capacity(seg.infos.len());
        for info in seg.infos {
            cursors.push(match info {
                Some(i) if open => Some(seg.reader.cursor(*i)?),
                _ => None,
            });
        }
        Ok(SegmentSearch {
            p,
            seg,
            cursors,
            top,
            total: 0,
            masks: Vec::new(),
            doc_masks: vec![0; p.clauses.len()],
            strict: None,
        })
    }

    #[inline]
    pub fn live(&self, d: DocOrd) -> bool {
        !self.seg.dead.is_some_and(|t| t.contains(d))
            && self.seg.allowed.is_none_or(|a| a.contains(d))
    }

    /// Offers a scored doc, whose clause masks are in `doc_masks`, to the heap; reads its
    /// kbid and keeps its masks only if it gets in.
    #[inline]
    pub fn offer(&mut self, d: DocOrd, score: Score) -> Step<()> {
        if self.top.would_accept(score) {
            let kbid = self.seg.reader.kbid(d)?;
            let slot = (self.masks.len() / self.doc_masks.len().max(1)) as u32;
            self.masks.extend_from_slice(&self.doc_masks);
            self.top.push(Scored {
                score,
                key: (kbid, self.seg.index, d, slot),
            });
        }
        Ok(())
    }

    /// Doc `d`'s length-normalization factors.
    #[inline]
    pub fn factors(&self, d: DocOrd) -> [Score; FIELD_COUNT] {
        self.seg
            .factors
            .get(d as usize)
            .copied()
            .unwrap_or_default()
    }

    /// The score of doc `d`, seeking every alternative's cursor to it; leaves its clause
    /// masks in `doc_masks`.
    pub fn score(&mut self, d: DocOrd) -> Step<Score> {
        let p = self.p;
        let factors = self.factors(d);
        let mut score: Score = 0.0;
        for ((alts, _), mask) in p.clauses.iter().zip(&mut self.doc_masks) {
            let mut best: Score = 0.0;
            *mask = 0;
            for &(t, w) in alts {
                if let Some(c) = self.cursors[t].as_mut() {
                    if c.seek(d)? == d {
                        let tfs = c.tfs()?;
                        *mask |= field_mask(tfs);
                        best = best.max(w * p.norms.score(p.idf[t], tfs, factors));
                    }
                }
            }
            score += best;
        }
        Ok(score)
    }

    /// Relaxed matching, every match scored: the reference for `run_maxscore`.
    fn run_exhaustive(&mut self) -> Step<()> {
        let mut all: Vec<usize> = self
            .p
            .clauses
            .iter()
            .flat_map(|c| c.0.iter().map(|a| a.0))
            .collect();
        all.sort_unstable();
        all.dedup();
        all.retain(|&t| self.cursors[t].is_some());
        loop {
            let d = all
                .iter()
                .filter_map(|&t| self.cursors[t].as_ref())
                .map(PostingsCursor::doc)
                .min()
                .unwrap_or(TERMINATED);
            if d == TERMINATED {
                return Ok(());
            }
            if self.live(d) {
                self.total += 1;
                let score = self.score(d)?;
                self.offer(d, score)?;
            }
            for &t in &all {
                if let Some(c) = self.cursors[t].as_mut() {
                    if c.doc() == d {
                        c.advance()?;
                    }
                }
            }
        }
    }
}

/// Bit `f` set for each field `f` where the term occurs.
#[inline]
pub fn field_mask(tfs: [u32; FIELD_COUNT]) -> u8 {
    let mut mask = 0;
    for (f, &n) in tfs.iter().enumerate() {
        if n > 0 {
            mask |= 1 << f;
        }
    }
    mask
}

/// One `explain` part: `(clause, term index, field index, score)`.
pub type Part = (u32, usize, usize, Score);

/// Per hit of one segment (`ords` ascending): the `explain` contributions, recomputed with
/// one cursor per term walking forward.
pub fn explain_hits(
    p: &Prepared,
    seg: &SegmentView<'_>,
    ords: &[DocOrd],
) -> Result<Vec<Vec<Part>>> {
    let reader = seg.reader;
    let corrupt = |m: Malformed| reader.corrupt(m);
    let first = ords.first().copied().unwrap_or(0);
    let mut cursors = Vec::with_capacity(seg.infos.len());
    for info in seg.infos {
        cursors.push(match info {
            Some(i) => Some(reader.cursor_at(*i, first)?),
            None => None,
        });
    }
    let mut tfs: Vec<Option<[u32; FIELD_COUNT]>> = vec![None; seg.infos.len()];
    let mut out = Vec::with_capacity(ords.len());
    for &d in ords {
        for (slot, c) in tfs.iter_mut().zip(&mut cursors) {
            *slot = None;
            if let Some(c) = c {
                if c.seek(d).map_err(corrupt)? == d {
                    *slot = Some(c.tfs().map_err(corrupt)?);
                }
            }
        }
        let factors = seg.factors.get(d as usize).copied().unwrap_or_default();
        let mut parts = Vec::new();
        for (ci, (alts, _)) in p.clauses.iter().enumerate() {
            let mut best: Option<(Score, usize)> = None;
            for &(t, w) in alts {
                let Some(tf) = tfs[t] else { continue };
                let s = w * p.norms.score(p.idf[t], tf, factors);
                if best.is_none_or(|(b, _)| s > b) {
                    best = Some((s, t));
                }
            }
            if let Some((s, t)) = best {
                let tf = tfs[t].unwrap_or_default();
                let shares = super::bm25f::field_shares(s, tf, factors);
                for f in (0..FIELD_COUNT).filter(|&f| tf[f] > 0) {
                    parts.push((ci as u32, t, f, shares[f]));
                }
            }
        }
        out.push(parts);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(words: &[&str], df: &[u64]) -> Prepared {
        let q = Query {
            clauses: words
                .iter()
                .map(|w| Clause {
                    alternatives: vec![(w.to_string(), 1.0)],
                    required: true,
                })
                .collect(),
            ..Query::default()
        };
        let stats = super::super::bm25f::CorpusStats::default();
        let mut p = Prepared::new(&q, FieldNorms::new(&q.params, &stats)).unwrap();
        p.df.copy_from_slice(df);
        p
    }

    fn required(p: &Prepared) -> Vec<bool> {
        p.clauses.iter().map(|c| c.1).collect()
    }

    #[test]
    fn common_words_become_optional_only_beside_a_rarer_required_one() {
        let mut p = prepared(&["docker", "network"], &[70, 13]);
        p.relax_common(0.5, 100);
        assert_eq!(required(&p), [false, true]);
        assert_eq!(p.common, [true, false]);
        assert!(p.strict);
        // Every word common: nothing changes (strict still needs them all).
        let mut p = prepared(&["docker", "contain"], &[70, 60]);
        p.relax_common(0.5, 100);
        assert_eq!(required(&p), [true, true]);
        assert_eq!(p.common, [false, false]);
        // Off, or under the cutoff: nothing changes.
        let mut p = prepared(&["docker", "network"], &[70, 13]);
        p.relax_common(0.0, 100);
        assert_eq!(required(&p), [true, true]);
        p.relax_common(0.8, 100);
        assert_eq!(required(&p), [true, true]);
    }
}
