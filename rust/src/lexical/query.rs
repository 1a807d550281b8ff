//! Query matching and scoring over one segment.
//!
//! A query is a list of clauses (a term and its synonyms, each with a weight; required or
//! optional) and phrases. Matching:
//!
//! - strict (`require_all` and at least one required clause or phrase): every required
//!   clause (any alternative) and every phrase term must occur. Their postings are
//!   intersected leapfrog-style, driven by the rarest group, with galloping seeks over the
//!   skip tables; survivors must then satisfy every phrase (all terms in one field at the
//!   given relative positions);
//! - relaxed (otherwise): a doc matches when any clause does (a union). Phrases do not
//!   filter in relaxed mode.
//!
//! Tombstoned docs and docs outside the `allow` set never match. Every match is scored
//! exhaustively with BM25F (a clause adds its best alternative's score × its weight) into a
//! bounded heap; the loop allocates nothing per doc.

use super::bm25f::{Bm25fParams, FieldNorms};
use super::postings::{Malformed, PostingsCursor, TERMINATED};
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
        }
    }
}

/// Ranks hits: score, then kbid, then where the doc lives.
pub type HitKey = (Kbid, u32, DocOrd);

/// A query with terms deduplicated and corpus-wide idf resolved.
pub struct Prepared {
    pub terms: Vec<String>,
    pub idf: Vec<Score>,
    /// Per clause: `(term index, weight)` alternatives, and required.
    pub clauses: Vec<(Vec<(usize, Score)>, bool)>,
    /// Per phrase: `(term index, offset ≥ 0)`.
    pub phrases: Vec<Vec<(usize, u32)>>,
    pub strict: bool,
    pub norms: FieldNorms,
}

impl Prepared {
    /// Interns the query's terms; `idf` is filled in later by the caller.
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
        Ok(Prepared {
            terms,
            idf,
            clauses,
            phrases,
            strict,
            norms,
        })
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
}

/// Matches and scores one segment; returns its best `limit` hits and its match count.
pub fn search_segment(
    p: &Prepared,
    seg: &SegmentView<'_>,
    limit: usize,
) -> Result<(TopK<HitKey>, u64)> {
    let mut cursors = Vec::with_capacity(seg.infos.len());
    for info in seg.infos {
        cursors.push(match info {
            Some(i) => Some(seg.reader.cursor(*i)?),
            None => None,
        });
    }
    let mut s = Searcher {
        p,
        seg,
        cursors,
        top: TopK::new(limit),
        total: 0,
        bufs: vec![Vec::new(); p.phrases.iter().map(Vec::len).max().unwrap_or(0)],
    };
    let run = if p.strict {
        s.run_strict()
    } else {
        s.run_relaxed()
    };
    match run {
        Ok(()) => Ok((s.top, s.total)),
        Err(SearchError::Malformed(m)) => Err(seg.reader.corrupt(m)),
        Err(SearchError::Other(e)) => Err(e),
    }
}

enum SearchError {
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

struct Searcher<'a, 's> {
    p: &'a Prepared,
    seg: &'a SegmentView<'s>,
    cursors: Vec<Option<PostingsCursor<'s>>>,
    top: TopK<HitKey>,
    total: u64,
    bufs: Vec<Vec<u32>>,
}

type Step<T> = std::result::Result<T, SearchError>;

impl Searcher<'_, '_> {
    /// Seeks every cursor of `group` to `target`; returns the smallest doc among them.
    fn group_seek(&mut self, group: &[usize], target: DocOrd) -> Step<DocOrd> {
        let mut min = TERMINATED;
        for &t in group {
            if let Some(c) = self.cursors[t].as_mut() {
                min = min.min(c.seek(target)?);
            }
        }
        Ok(min)
    }

    fn run_strict(&mut self) -> Step<()> {
        let p = self.p;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (alts, required) in &p.clauses {
            if *required {
                groups.push(
                    alts.iter()
                        .map(|a| a.0)
                        .filter(|&t| self.cursors[t].is_some())
                        .collect(),
                );
            }
        }
        for ph in &p.phrases {
            groups.extend(
                ph.iter()
                    .map(|&(t, _)| vec![t])
                    .filter(|g| self.cursors[g[0]].is_some()),
            );
            if ph.iter().any(|&(t, _)| self.cursors[t].is_none()) {
                return Ok(());
            }
        }
        if groups.iter().any(Vec::is_empty) {
            return Ok(());
        }
        let cost = |g: &Vec<usize>| -> u64 {
            g.iter()
                .filter_map(|&t| self.cursors[t].as_ref())
                .map(|c| u64::from(c.df()))
                .sum()
        };
        groups.sort_by_key(cost);
        let (driver, rest) = groups.split_first().ok_or(Malformed("no groups"))?;
        let mut d = self.group_seek(driver, 0)?;
        'outer: while d != TERMINATED {
            for g in rest {
                let gd = self.group_seek(g, d)?;
                if gd != d {
                    d = self.group_seek(driver, gd)?;
                    continue 'outer;
                }
            }
            if self.live(d) && self.phrases_match(d)? {
                self.collect(d)?;
            }
            d = self.group_seek(driver, d + 1)?;
        }
        Ok(())
    }

    fn run_relaxed(&mut self) -> Step<()> {
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
                self.collect(d)?;
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

    #[inline]
    fn live(&self, d: DocOrd) -> bool {
        !self.seg.dead.is_some_and(|t| t.contains(d))
            && self.seg.allowed.is_none_or(|a| a.contains(d))
    }

    fn phrases_match(&mut self, d: DocOrd) -> Step<bool> {
        let p = self.p;
        'phrase: for ph in &p.phrases {
            'field: for f in 0..FIELD_COUNT {
                for (i, &(t, _)) in ph.iter().enumerate() {
                    let Some(c) = self.cursors[t].as_mut() else {
                        return Ok(false);
                    };
                    if c.doc() != d || c.tfs()[f] == 0 {
                        continue 'field;
                    }
                    c.positions(f, &mut self.bufs[i])?;
                }
                let (first, off0) = (&self.bufs[0], ph[0].1);
                for &p0 in first {
                    let Some(start) = p0.checked_sub(off0) else {
                        continue;
                    };
                    let all = ph.iter().enumerate().skip(1).all(|(i, &(_, off))| {
                        start
                            .checked_add(off)
                            .is_some_and(|want| self.bufs[i].binary_search(&want).is_ok())
                    });
                    if all {
                        continue 'phrase;
                    }
                }
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn collect(&mut self, d: DocOrd) -> Step<()> {
        self.total += 1;
        let factors = self.p.norms.doc_factors(self.seg.reader.field_lens(d));
        let mut score: Score = 0.0;
        for (alts, _) in &self.p.clauses {
            let mut best: Score = 0.0;
            for &(t, w) in alts {
                if let Some(c) = self.cursors[t].as_mut() {
                    if c.seek(d)? == d {
                        best = best.max(w * self.p.norms.score(self.p.idf[t], c.tfs(), factors));
                    }
                }
            }
            score += best;
        }
        if self.top.would_accept(score) {
            let kbid = self.seg.reader.kbid(d)?;
            self.top.push(Scored {
                score,
                key: (kbid, self.seg.index, d),
            });
        }
        Ok(())
    }
}

/// One `explain` part: `(clause, term index, field index, score)`.
pub type Part = (u32, usize, usize, Score);

/// Per-clause field masks and, with `explain`, the contributions of one hit, recomputed
/// with fresh cursors.
pub fn hit_details(
    p: &Prepared,
    reader: &SegmentReader,
    infos: &[Option<TermInfo>],
    d: DocOrd,
    explain: bool,
) -> Result<(Vec<u8>, Vec<Part>)> {
    let mut tfs: Vec<Option<[u32; FIELD_COUNT]>> = Vec::with_capacity(infos.len());
    for info in infos {
        let mut v = None;
        if let Some(i) = info {
            let mut c = reader.cursor(*i)?;
            if c.seek(d).map_err(|m| reader.corrupt(m))? == d {
                v = Some(c.tfs());
            }
        }
        tfs.push(v);
    }
    let factors = p.norms.doc_factors(reader.field_lens(d));
    let mut masks = Vec::with_capacity(p.clauses.len());
    let mut parts = Vec::new();
    for (ci, (alts, _)) in p.clauses.iter().enumerate() {
        let mut mask = 0u8;
        let mut best: Option<(Score, usize)> = None;
        for &(t, w) in alts {
            let Some(tf) = tfs[t] else { continue };
            for (f, &n) in tf.iter().enumerate() {
                if n > 0 {
                    mask |= 1 << f;
                }
            }
            let s = w * p.norms.score(p.idf[t], tf, factors);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, t));
            }
        }
        masks.push(mask);
        if let (true, Some((s, t))) = (explain, best) {
            let tf = tfs[t].unwrap_or_default();
            let shares = super::bm25f::field_shares(s, tf, factors);
            for f in (0..FIELD_COUNT).filter(|&f| tf[f] > 0) {
                parts.push((ci as u32, t, f, shares[f]));
            }
        }
    }
    Ok((masks, parts))
}
