//! Searching an [`Index`]: resolves corpus-wide statistics for the query's terms, runs
//! every segment on one snapshot (in parallel with rayon when the index is large enough to
//! repay the hand-off), and merges their top-k heaps. Matched fields were recorded when a
//! hit entered its heap; `explain` is recomputed for the final hits only, one cursor per
//! term per segment.

use rayon::prelude::*;

use super::bm25f::FieldNorms;
use super::query::{
    explain_hits, search_segment, Evaluation, HitKey, Part, Prepared, Query, SegmentView,
};
use super::termdict::TermInfo;
use super::topk::TopK;
use super::{format_kbid, Index, LoadedSegment, Score, Tombstones, FIELD_NAMES};
use crate::error::Result;

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
}

impl Index {
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

    fn run_search(&self, q: &Query, eval: Evaluation) -> Result<Hits> {
        let snap = self.snapshot();
        let mut p = Prepared::new(q, FieldNorms::new(&q.params, &snap.stats))?;
        let factors = snap.cache.doc_factors(&snap.segments, &p.norms);
        let mut infos: Vec<Vec<Option<TermInfo>>> =
            vec![Vec::with_capacity(p.terms.len()); snap.segments.len()];
        for (t, term) in p.terms.iter().enumerate() {
            let entry = snap.cache.term(&snap.segments, term)?;
            for (row, info) in infos.iter_mut().zip(&entry.infos) {
                row.push(*info);
            }
            p.df[t] = entry.df;
            p.idf[t] = snap.stats.idf(entry.df);
        }
        let one = |i: usize, s: &LoadedSegment, top: TopK<HitKey>| {
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
            search_segment(&p, &view, top, eval)
        };
        let mut hits = Hits {
            clause_bounds: p.clause_bounds(),
            ..Hits::default()
        };
        let mut masks = Vec::with_capacity(snap.segments.len());
        let top = if snap.segments.len() > 1 && snap.stats.docs >= PARALLEL_MIN_DOCS {
            let results = snap
                .segments
                .par_iter()
                .enumerate()
                .map(|(i, s)| one(i, s, TopK::new(q.limit)))
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
                let r = one(i, &snap.segments[i], top)?;
                top = r.top;
                hits.total += r.total;
                masks[i] = r.masks;
            }
            top
        };
        let ranked = top.into_sorted();
        let n_clauses = p.clauses.len();
        for item in &ranked {
            let (kbid, seg, _, slot) = item.key;
            let at = slot as usize * n_clauses;
            let mask = masks[seg as usize]
                .get(at..at + n_clauses)
                .unwrap_or_default();
            hits.kbids.push(format_kbid(&kbid));
            hits.scores.push(item.score);
            hits.matched.push(mask.to_vec());
        }
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
        Ok(hits)
    }
}
