//! Searching an [`Index`]: resolves corpus-wide statistics for the query's terms, runs
//! every segment in parallel (rayon) on one snapshot, merges their top-k heaps, and
//! computes per-hit details (matched fields, `explain`) for the final hits only.

use rayon::prelude::*;

use super::bm25f::FieldNorms;
use super::query::{hit_details, search_segment, HitKey, Prepared, Query, SegmentView};
use super::termdict::TermInfo;
use super::topk::TopK;
use super::{format_kbid, Index, Score, Tombstones, FIELD_NAMES};
use crate::error::Result;

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
}

impl Index {
    /// BM25F top-`limit` over the current snapshot.
    pub fn search(&self, q: &Query) -> Result<Hits> {
        let snap = self.snapshot();
        let mut p = Prepared::new(q, FieldNorms::new(&q.params, &snap.stats))?;
        let mut infos: Vec<Vec<Option<TermInfo>>> = Vec::with_capacity(snap.segments.len());
        for s in &snap.segments {
            let dict = s.reader.termdict()?;
            let row = p
                .terms
                .iter()
                .map(|t| dict.get(t.as_bytes()).map_err(|m| s.reader.corrupt(m)));
            infos.push(row.collect::<Result<_>>()?);
        }
        for t in 0..p.terms.len() {
            let df: u64 = infos
                .iter()
                .filter_map(|row| row[t])
                .map(|i| u64::from(i.df))
                .sum();
            p.idf[t] = snap.stats.idf(df);
        }
        let results = snap
            .segments
            .par_iter()
            .enumerate()
            .map(|(i, s)| {
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
                };
                search_segment(&p, &view, q.limit)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut top: TopK<HitKey> = TopK::new(q.limit);
        let mut hits = Hits::default();
        for (t, n) in results {
            top.extend(t);
            hits.total += n;
        }
        let mut explain = Vec::new();
        for item in top.into_sorted() {
            let (kbid, seg, ord) = item.key;
            let s = &snap.segments[seg as usize];
            let (mask, parts) = hit_details(&p, &s.reader, &infos[seg as usize], ord, q.explain)?;
            hits.kbids.push(format_kbid(&kbid));
            hits.scores.push(item.score);
            hits.matched.push(mask);
            if q.explain {
                explain.push(
                    parts
                        .into_iter()
                        .map(|(clause, t, f, score)| Contribution {
                            clause,
                            term: p.terms[t].clone(),
                            field: FIELD_NAMES[f],
                            score,
                        })
                        .collect(),
                );
            }
        }
        hits.explain = q.explain.then_some(explain);
        Ok(hits)
    }
}
