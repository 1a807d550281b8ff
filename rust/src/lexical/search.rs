//! Searching an [`Index`]: resolves corpus-wide statistics for the query's terms, runs
//! every segment on one snapshot (in parallel with rayon when the index is large enough to
//! repay the hand-off), and merges their top-k heaps. Matched fields were recorded when a
//! hit entered its heap; `explain` is recomputed for the final hits only, one cursor per
//! term per segment.

use rayon::prelude::*;

use super::bm25f::{CorpusStats, FieldNorms};
use super::dense;
use super::index::Snapshot;
use super::query::{
    explain_hits, search_segment, search_segment_tiers, Evaluation, HitKey, Part, Prepared, Query,
    SegmentHits, SegmentView,
};
use super::termdict::TermInfo;
use super::topk::{Scored, TopK};
use super::{format_kbid, Index, LoadedSegment, Score, Tombstones, FIELD_NAMES, FIELD_PATH};
use crate::error::{Error, Result};

/// Below this many docs in the snapshot, segments are searched on the calling thread: a
/// rayon hand-off costs more than the whole search.
const PARALLEL_MIN_DOCS: u64 = 200_000;

/// One contribution to a hit's score (`explain`).
#[derive(Debug, Clone, PartialEq)]
pub struct Contribution {
    pub clause: u32,
    pub term: String,
    pub field: &'static str,
    pub score: Score,
}

/// Ranked hits, best first, as columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hits {
    pub kbids: Vec<String>,
    pub scores: Vec<Score>,
    pub matched: Vec<Vec<u8>>,
    pub total: u64,
    pub explain: Option<Vec<Vec<Contribution>>>,
    /// Per clause: the most it can add to a score (see [`Prepared::clause_bounds`]).
    pub clause_bounds: Vec<Score>,
    /// Per clause: required in the query but made optional as a common word
    /// ([`Query::common_cutoff`]).
    pub common: Vec<bool>,
    /// The positions (in `kbids`) of the hits in whose path field, where a page's name
    /// is, every required clause (after [`Query::common_cutoff`]) matched.
    pub in_path: Vec<u32>,
    /// The positions of the hits with neither body nor code: a heading alone, such as a
    /// page's title section whose content sits under sub-headings.
    pub bodiless: Vec<u32>,
}

impl Index {
    /// The current snapshot's corpus statistics and the document frequency of each of
    /// `terms` (tombstoned docs included, as scoring counts them): what a shard
    /// contributes to its collection's [`GlobalStats`].
    ///
    /// [`GlobalStats`]: super::GlobalStats
    pub fn term_stats(&self, terms: &[String]) -> Result<(CorpusStats, Vec<u64>)> {
        let snap = self.snapshot();
        let df = terms
            .iter()
            .map(|t| Ok(snap.cache.term(&snap.segments, t)?.df))
            .collect::<Result<Vec<u64>>>()?;
        Ok((snap.stats, df))
    }

    /// BM25F top-`limit` over the current snapshot.
    pub fn search(&self, q: &Query) -> Result<Hits> {
        self.run_search(q, Evaluation::Auto)
    }

    /// The reference evaluation: scores every matching doc. Same results as [`search`];
    /// kept for tests and benchmarks.
    ///
    /// [`search`]: Index::search
    pub fn search_exhaustive(&self, q: &Query) -> Result<Hits> {
        self.run_search(q, Evaluation::Exhaustive)
    }

    /// [`search`] with relaxed queries evaluated by `eval` in every segment (strict ones
    /// have one evaluator); same results whatever `eval` is. For tests and benchmarks.
    ///
    /// [`search`]: Index::search
    pub fn search_with(&self, q: &Query, eval: Evaluation) -> Result<Hits> {
        self.run_search(q, eval)
    }

    /// The strict ranking of `q` (a strict query: `require_all`), as [`search`] gives it,
    /// and, when it has fewer than `relaxed_below` hits, the relaxed one: [`search`] of `q`
    /// with `require_all` false and no phrases. When the strict hits cannot reach
    /// `relaxed_below` (fewer docs hold the rarest required clause) on a snapshot whose
    /// segments are all searched term at a time, and the query has no phrases or
    /// `explain`, both come from one evaluation of each segment (and the relaxed one is
    /// then always returned); otherwise from a strict search, then a relaxed one if needed.
    ///
    /// [`search`]: Index::search
    pub fn search_tiers(&self, q: &Query, relaxed_below: usize) -> Result<(Hits, Option<Hits>)> {
        let snap = self.snapshot();
        let one_pass = q.require_all
            && q.phrases.is_empty()
            && !q.explain
            && q.clauses.iter().any(|c| c.required)
            && dense::fits(q.clauses.len())
            && snap.stats.docs < PARALLEL_MIN_DOCS
            && snap
                .segments
                .iter()
                .all(|s| s.reader.doc_count() <= dense::DENSE_MAX_DOCS);
        let (first, strict) = self.run(
            &snap,
            q,
            Evaluation::Auto,
            one_pass.then_some(relaxed_below),
        )?;
        if let Some(strict) = strict {
            // One evaluation gave both: `first` is the relaxed ranking.
            return Ok((strict, Some(first)));
        }
        // `first` is the strict ranking.
        if first.kbids.len() >= relaxed_below {
            return Ok((first, None));
        }
        let loose = Query {
            require_all: false,
            phrases: Vec::new(),
            ..q.clone()
        };
        let relaxed = self.run(&snap, &loose, Evaluation::Auto, None)?.0;
        Ok((first, Some(relaxed)))
    }

    fn run_search(&self, q: &Query, eval: Evaluation) -> Result<Hits> {
        Ok(self.run(&self.snapshot(), q, eval, None)?.0)
    }

    /// `q`'s hits. With `tiers` (see [`Index::search_tiers`]) and a strict `q` whose
    /// rarest required clause is in fewer than `tiers` docs, `q` is evaluated relaxed,
    /// term at a time, and its strict hits come second; otherwise as it is.
    fn run(
        &self,
        snap: &Snapshot,
        q: &Query,
        eval: Evaluation,
        tiers: Option<usize>,
    ) -> Result<(Hits, Option<Hits>)> {
        // A shard scores with its collection's statistics; an index alone, with its own.
        let stats = q.corpus.as_ref().map_or(snap.stats, |g| g.stats);
        let mut p = Prepared::new(q, FieldNorms::new(&q.params, &stats))?;
        let factors = snap.cache.doc_factors(&snap.segments, &p.norms);
        let mut infos: Vec<Vec<Option<TermInfo>>> =
            vec![Vec::with_capacity(p.terms.len()); snap.segments.len()];
        for (t, term) in p.terms.iter().enumerate() {
            let entry = snap.cache.term(&snap.segments, term)?;
            for (row, info) in infos.iter_mut().zip(&entry.infos) {
                row.push(*info);
            }
            let df = match &q.corpus {
                None => entry.df,
                Some(g) => *g.df.get(term).ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "the corpus statistics have no document frequency for '{term}': \
                         gather them with Index.term_stats over the query's terms"
                    ))
                })?,
            };
            p.df[t] = df;
            p.idf[t] = stats.idf(df);
        }
        p.relax_common(q.common_cutoff, stats.docs);
        // Strict hits are docs that hold every required clause: no more than the docs of
        // the rarest one (the sum of its alternatives' df, tombstoned docs included).
        let tiers = tiers.is_some_and(|below| {
            let rarest = p
                .clauses
                .iter()
                .filter(|(_, required)| *required)
                .map(|(alts, _)| alts.iter().map(|&(t, _)| p.df[t]).sum::<u64>())
                .min();
            rarest.is_some_and(|n| n < below as u64)
        });
        if tiers {
            p.strict = false;
        }
        let one = |i: usize,
                   s: &LoadedSegment,
                   top: TopK<HitKey>,
                   strict: Option<TopK<HitKey>>|
         -> Result<(SegmentHits, Option<SegmentHits>)> {
            let allowed = match &q.allow {
                None => None,
                Some(kbids) => {
                    let mut set = Tombstones::new(s.reader.doc_count());
                    for k in kbids {
                        if let Some(o) = s.reader.ord_of(k)? {
                            set.insert(o);
                        }
                    }
                    Some(set)
                }
            };
            let view = SegmentView {
                index: i as u32,
                reader: &s.reader,
                dead: s.dead.as_deref(),
                allowed: allowed.as_ref(),
                infos: &infos[i],
                factors: &factors[i],
            };
            if let Some(strict) = strict {
                let (relaxed, strict) = search_segment_tiers(&p, &view, top, strict)?;
                return Ok((relaxed, Some(strict)));
            }
            Ok((search_segment(&p, &view, top, eval)?, None))
        };
        let mut hits = Hits {
            clause_bounds: p.clause_bounds(),
            common: p.common.clone(),
            ..Hits::default()
        };
        let mut masks = Vec::with_capacity(snap.segments.len());
        let mut strict_tier = tiers.then(|| (TopK::new(q.limit), 0u64, Vec::new()));
        let top = if !tiers && snap.segments.len() > 1 && snap.stats.docs >= PARALLEL_MIN_DOCS {
            let results = snap
                .segments
                .par_iter()
                .enumerate()
                .map(|(i, s)| one(i, s, TopK::new(q.limit), None).map(|r| r.0))
                .collect::<Result<Vec<_>>>()?;
            let mut top: TopK<HitKey> = TopK::new(q.limit);
            for r in results {
                top.extend(r.top);
                hits.total += r.total;
                masks.push(r.masks);
            }
            top
        } else {
            // One heap through every segment, largest first: each segment starts with the
            // threshold the ones before it reached, so MaxScore prunes it from its first doc.
            let mut order: Vec<usize> = (0..snap.segments.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(snap.segments[i].reader.doc_count()));
            masks.resize_with(snap.segments.len(), Vec::new);
            let mut top: TopK<HitKey> = TopK::new(q.limit);
            for i in order {
                let strict = strict_tier
                    .as_mut()
                    .map(|t| std::mem::replace(&mut t.0, TopK::new(0)));
                let (r, strict) = one(i, &snap.segments[i], top, strict)?;
                top = r.top;
                hits.total += r.total;
                masks[i] = r.masks;
                if let (Some(tier), Some(s)) = (strict_tier.as_mut(), strict) {
                    tier.0 = s.top;
                    tier.1 += s.total;
                    tier.2.resize_with(snap.segments.len(), Vec::new);
                    tier.2[i] = s.masks;
                }
            }
            top
        };
        let ranked = top.into_sorted();
        let required: Vec<bool> = p.clauses.iter().map(|c| c.1).collect();
        fill_ranked(&mut hits, &ranked, &masks, &required, &snap.segments);
        let strict = strict_tier.map(|(top, total, masks)| {
            let mut strict = Hits {
                clause_bounds: hits.clause_bounds.clone(),
                common: hits.common.clone(),
                total,
                ..Hits::default()
            };
            fill_ranked(
                &mut strict,
                &top.into_sorted(),
                &masks,
                &required,
                &snap.segments,
            );
            strict
        });
        let mut explain = Vec::new();
        if q.explain {
            // Per segment in ordinal order, so each term's cursor only moves forward.
            let mut order: Vec<usize> = (0..ranked.len()).collect();
            order.sort_unstable_by_key(|&i| (ranked[i].key.1, ranked[i].key.2));
            let mut parts: Vec<Vec<Part>> = vec![Vec::new(); ranked.len()];
            for run in order.chunk_by(|&a, &b| ranked[a].key.1 == ranked[b].key.1) {
                let seg = ranked[run[0]].key.1 as usize;
                let ords: Vec<_> = run.iter().map(|&i| ranked[i].key.2).collect();
                let s = &snap.segments[seg];
                let view = SegmentView {
                    index: seg as u32,
                    reader: &s.reader,
                    dead: None,
                    allowed: None,
                    infos: &infos[seg],
                    factors: &factors[seg],
                };
                for (&i, found) in run.iter().zip(explain_hits(&p, &view, &ords)?) {
                    parts[i] = found;
                }
            }
            explain = parts
                .into_iter()
                .map(|hit| {
                    hit.into_iter()
                        .map(|(clause, t, f, score)| Contribution {
                            clause,
                            term: p.terms[t].clone(),
                            field: FIELD_NAMES[f],
                            score,
                        })
                        .collect()
                })
                .collect();
        }
        hits.explain = q.explain.then_some(explain);
        Ok((hits, strict))
    }
}

/// The ranked hits' kbids, scores and clause masks (`masks`: per segment, `n_clauses`
/// bytes per heap slot), appended to `hits`.
fn fill_ranked(
    hits: &mut Hits,
    ranked: &[Scored<HitKey>],
    masks: &[Vec<u8>],
    required: &[bool],
    segments: &[LoadedSegment],
) {
    let n_clauses = required.len();
    let any_required = required.iter().any(|&r| r);
    for item in ranked {
        let (kbid, seg, ord, slot) = item.key;
        let position = hits.kbids.len() as u32;
        let lens = segments
            .get(seg as usize)
            .map(|s| s.reader.field_lens(ord))
            .unwrap_or_default();
        if lens[1] == 0 && lens[2] == 0 {
            hits.bodiless.push(position);
        }
        let at = slot as usize * n_clauses;
        let mask = masks
            .get(seg as usize)
            .and_then(|m| m.get(at..at + n_clauses))
            .unwrap_or_default();
        let in_path = required
            .iter()
            .zip(mask)
            .all(|(&r, &m)| !r || m & FIELD_PATH != 0);
        if any_required && in_path {
            hits.in_path.push(position);
        }
        hits.kbids.push(format_kbid(&kbid));
        hits.scores.push(item.score);
        hits.matched.push(mask.to_vec());
    }
}
