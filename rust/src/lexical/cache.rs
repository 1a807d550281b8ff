//! Per-snapshot caches that queries share. A snapshot's segments, lengths and corpus
//! statistics never change, so nothing here goes stale; a new snapshot starts empty.
//!
//! - Doc factors: per segment, per doc, `w_f / norm_f(d)` for one set of BM25F parameters
//!   (three divisions per doc, paid once per parameter set instead of once per scored
//!   doc). The last [`FACTOR_SETS`] parameter sets are kept.
//! - Term lookups: per term, its [`TermInfo`] in every segment and its df summed over
//!   them, so a repeated query term costs a hash lookup instead of a binary search of every
//!   segment's dictionary. At most [`MAX_TERMS`] terms; the map is cleared when full.
//! - Scored postings ([`Impacts`]): per term and segment, from the term's
//!   [`IMPACTS_KEEP_AT`]-th term-at-a-time evaluation there on, its postings' docs, field
//!   patterns and scores (before the clause weight) under one parameter set, so a later
//!   query adds them to its cells without decoding or scoring a block. The scores are the
//!   ones the evaluation computed, so a kept term scores with the same bits. Kept once and
//!   read without a lock; under one parameter set per term (another decodes). At most
//!   [`IMPACT_BYTES`] in all: past that, nothing more is kept (until the snapshot is
//!   replaced, or the term map is cleared and returns their bytes).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use super::bm25f::FieldNorms;
use super::index::LoadedSegment;
use super::termdict::TermInfo;
use super::{DocOrd, Score, FIELD_COUNT};
use crate::error::Result;

/// Per segment, per doc: `w_f / norm_f(d)` for one set of BM25F parameters.
pub type DocFactors = Vec<Vec<[Score; FIELD_COUNT]>>;
type NormsKey = [u32; 3 * FIELD_COUNT];

/// Parameter sets whose doc factors a snapshot keeps (queries rarely vary them).
pub const FACTOR_SETS: usize = 2;
/// Terms whose lookups a snapshot keeps.
pub const MAX_TERMS: usize = 1 << 16;

/// Bytes of scored postings ([`Impacts`]) a snapshot keeps, at most.
pub const IMPACT_BYTES: usize = 32 << 20;
/// A term's postings in a segment are kept scored from its evaluation there with this
/// count on (a term used once costs no copy).
pub const IMPACTS_KEEP_AT: u32 = 2;

/// What scores depend on besides the snapshot and the term: the doc factors' parameters
/// ([`FieldNorms::key`]) and `k1`'s bits.
pub type ImpactKey = (NormsKey, u32);

/// One term across a snapshot's segments.
#[derive(Debug)]
pub struct TermEntry {
    /// Per segment: where its postings are, if it occurs there.
    pub infos: Vec<Option<TermInfo>>,
    /// Docs containing it, summed over segments (tombstoned ones included).
    pub df: u64,
    /// Per segment: its evaluations there so far, and its kept scored postings.
    impacts: Vec<ImpactSlot>,
}

#[derive(Debug, Default)]
struct ImpactSlot {
    uses: AtomicU32,
    kept: OnceLock<Impacts>,
}

/// A term's postings in one segment as the term-at-a-time evaluation adds them to its
/// cells: per posting, its doc, the pattern of the fields that hold the term (bit `f`:
/// field `f`) and its score before the clause weight, under the parameters `key`.
/// Returns its bytes to the snapshot's budget when dropped.
#[derive(Debug)]
pub struct Impacts {
    pub docs: Vec<DocOrd>,
    pub patterns: Vec<u8>,
    pub scores: Vec<Score>,
    key: ImpactKey,
    used: Arc<AtomicUsize>,
}

impl Impacts {
    fn bytes(&self) -> usize {
        self.docs.capacity() * size_of::<DocOrd>()
            + self.patterns.capacity()
            + self.scores.capacity() * size_of::<Score>()
    }
}

impl Drop for Impacts {
    fn drop(&mut self) {
        self.used.fetch_sub(self.bytes(), Relaxed);
    }
}

/// How an evaluation reads a term's postings in a segment.
pub enum ImpactUse<'e> {
    /// From its kept scored postings.
    Kept(&'e Impacts),
    /// By decoding and scoring its blocks, keeping what it computes ([`SnapshotCache::keep`]).
    Keep,
    /// By decoding and scoring its blocks.
    Decode,
}

impl TermEntry {
    fn new(infos: Vec<Option<TermInfo>>, df: u64) -> TermEntry {
        let impacts = infos.iter().map(|_| ImpactSlot::default()).collect();
        TermEntry { infos, df, impacts }
    }

    /// Counts an evaluation of this term in segment `seg` under the parameters `key`, and
    /// says how it reads the postings. Lock free: the kept postings are set once (by the
    /// first evaluation to keep them) and read in place. The first parameter set kept is
    /// the only one, for the snapshot's life: under another, the term is decoded.
    pub fn impacts(&self, seg: usize, key: ImpactKey) -> ImpactUse<'_> {
        let Some(slot) = self.impacts.get(seg) else {
            return ImpactUse::Decode;
        };
        match slot.kept.get() {
            Some(kept) if kept.key == key => ImpactUse::Kept(kept),
            Some(_) => ImpactUse::Decode,
            None if slot.uses.fetch_add(1, Relaxed).saturating_add(1) >= IMPACTS_KEEP_AT => {
                ImpactUse::Keep
            }
            None => ImpactUse::Decode,
        }
    }
}

#[derive(Default)]
pub struct SnapshotCache {
    factors: Mutex<Vec<(NormsKey, Arc<DocFactors>)>>,
    terms: RwLock<HashMap<Box<str>, Arc<TermEntry>>>,
    /// Bytes held by kept scored postings.
    impact_bytes: Arc<AtomicUsize>,
}

impl SnapshotCache {
    /// Every doc's length-normalization factors under `norms`.
    pub fn doc_factors(&self, segments: &[LoadedSegment], norms: &FieldNorms) -> Arc<DocFactors> {
        let key = norms.key();
        let mut sets = self.factors.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = sets.iter().position(|(k, _)| *k == key) {
            let entry = sets.remove(i);
            let table = entry.1.clone();
            sets.insert(0, entry);
            return table;
        }
        let table: Arc<DocFactors> = Arc::new(
            segments
                .iter()
                .map(|s| {
                    (0..s.reader.doc_count())
                        .map(|d| norms.doc_factors(s.reader.field_lens(d)))
                        .collect()
                })
                .collect(),
        );
        sets.insert(0, (key, table.clone()));
        sets.truncate(FACTOR_SETS);
        table
    }

    /// `term` looked up in every segment's dictionary (or in the cache).
    pub fn term(&self, segments: &[LoadedSegment], term: &str) -> Result<Arc<TermEntry>> {
        let terms = self.terms.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = terms.get(term) {
            return Ok(e.clone());
        }
        drop(terms);
        let mut infos = Vec::with_capacity(segments.len());
        for s in segments {
            let dict = s.reader.termdict()?;
            infos.push(dict.get(term.as_bytes()).map_err(|m| s.reader.corrupt(m))?);
        }
        let df = infos.iter().flatten().map(|i| u64::from(i.df)).sum();
        let entry = Arc::new(TermEntry::new(infos, df));
        let mut terms = self.terms.write().unwrap_or_else(PoisonError::into_inner);
        if terms.len() >= MAX_TERMS {
            terms.clear();
        }
        terms.insert(term.into(), entry.clone());
        Ok(entry)
    }

    /// Keeps `term`'s scored postings in segment `seg` under `key` (as [`ImpactUse::Keep`]
    /// asked), unless that would pass [`IMPACT_BYTES`] or another evaluation kept them
    /// first.
    pub fn keep(
        &self,
        term: &TermEntry,
        seg: usize,
        key: ImpactKey,
        docs: Vec<DocOrd>,
        patterns: Vec<u8>,
        scores: Vec<Score>,
    ) {
        let impacts = Impacts {
            docs,
            patterns,
            scores,
            key,
            used: self.impact_bytes.clone(),
        };
        let bytes = impacts.bytes();
        if self.impact_bytes.fetch_add(bytes, Relaxed) + bytes > IMPACT_BYTES {
            return; // dropping it returns the bytes
        }
        if let Some(slot) = term.impacts.get(seg) {
            // Another evaluation may have kept them first: then this copy is dropped.
            let _ = slot.kept.set(impacts);
        }
    }

    /// Whether the budget has room for the scored postings of a term in `df` docs (so
    /// that an evaluation does not copy what [`keep`](SnapshotCache::keep) would drop).
    pub fn has_room(&self, df: u32) -> bool {
        let bytes = df as usize * (size_of::<DocOrd>() + 1 + size_of::<Score>());
        self.impact_bytes.load(Relaxed) + bytes <= IMPACT_BYTES
    }

    /// Bytes held by kept scored postings (what [`IMPACT_BYTES`] bounds).
    pub fn impact_bytes(&self) -> usize {
        self.impact_bytes.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k1: f32) -> ImpactKey {
        ([0; 3 * FIELD_COUNT], k1.to_bits())
    }

    fn kept(entry: &TermEntry, seg: usize, k: ImpactKey) -> Option<&Impacts> {
        match entry.impacts(seg, k) {
            ImpactUse::Kept(i) => Some(i),
            _ => None,
        }
    }

    #[test]
    fn kept_from_the_second_use_per_segment_under_one_parameter_set() {
        let cache = SnapshotCache::default();
        let entry = TermEntry::new(vec![None, None], 3);
        assert!(matches!(entry.impacts(1, key(1.2)), ImpactUse::Decode));
        assert!(matches!(entry.impacts(1, key(1.2)), ImpactUse::Keep));
        cache.keep(&entry, 1, key(1.2), vec![2, 5], vec![1, 3], vec![0.5, 0.25]);
        let got = kept(&entry, 1, key(1.2)).unwrap();
        assert_eq!(
            (&got.docs[..], &got.patterns[..]),
            (&[2, 5][..], &[1, 3][..])
        );
        assert_eq!(got.scores, [0.5, 0.25]);
        assert_eq!(cache.impact_bytes(), got.bytes());
        // Segment 0 counts its own uses; a segment past the entry's is never kept.
        assert!(matches!(entry.impacts(0, key(1.2)), ImpactUse::Decode));
        assert!(matches!(entry.impacts(5, key(1.2)), ImpactUse::Decode));
        assert!(matches!(entry.impacts(5, key(1.2)), ImpactUse::Decode));
        // Under another parameter set the term decodes, every time.
        for _ in 0..3 {
            assert!(matches!(entry.impacts(1, key(2.0)), ImpactUse::Decode));
        }
        // Dropping the entry (the snapshot, or a full term map) returns the bytes.
        drop(entry);
        assert_eq!(cache.impact_bytes(), 0);
    }

    #[test]
    fn a_second_keep_and_one_past_the_bound_are_dropped() {
        let cache = SnapshotCache::default();
        let entry = TermEntry::new(vec![None], 1);
        entry.impacts(0, key(1.2));
        entry.impacts(0, key(1.2));
        cache.keep(&entry, 0, key(1.2), vec![1], vec![1], vec![1.0]);
        let one = cache.impact_bytes();
        cache.keep(&entry, 0, key(1.2), vec![7], vec![2], vec![2.0]);
        assert_eq!(cache.impact_bytes(), one);
        assert_eq!(kept(&entry, 0, key(1.2)).unwrap().docs, [1]);

        let big = TermEntry::new(vec![None], 1);
        big.impacts(0, key(1.2));
        big.impacts(0, key(1.2));
        let n = (IMPACT_BYTES - one) / 9 + 1;
        cache.keep(&big, 0, key(1.2), vec![0; n], vec![0; n], vec![0.0; n]);
        assert_eq!(cache.impact_bytes(), one);
        assert!(matches!(big.impacts(0, key(1.2)), ImpactUse::Keep));
        let fits = (IMPACT_BYTES - one) / 9;
        cache.keep(
            &big,
            0,
            key(1.2),
            vec![0; fits],
            vec![0; fits],
            vec![0.0; fits],
        );
        assert!(kept(&big, 0, key(1.2)).is_some());
        assert!(cache.impact_bytes() <= IMPACT_BYTES);
        assert!(!cache.has_room(1));
        drop(big);
        assert!(cache.has_room(((IMPACT_BYTES - one) / 9) as u32));
        assert!(!cache.has_room(((IMPACT_BYTES - one) / 9 + 1) as u32));
    }
}
