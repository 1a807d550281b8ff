//! Per-snapshot caches that queries share. A snapshot's segments, lengths and corpus
//! statistics never change, so nothing here goes stale; a new snapshot starts empty.
//!
//! - Doc factors: per segment, per doc, `w_f / norm_f(d)` for one set of BM25F parameters
//!   (three divisions per doc, paid once per parameter set instead of once per scored
//!   doc). The last [`FACTOR_SETS`] parameter sets are kept.
//! - Term lookups: per term, its [`TermInfo`] in every segment and its df summed over
//!   them, so a repeated query term costs a hash lookup instead of a binary search of every
//!   segment's dictionary. At most [`MAX_TERMS`] terms; the map is cleared when full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::bm25f::FieldNorms;
use super::index::LoadedSegment;
use super::termdict::TermInfo;
use super::{Score, FIELD_COUNT};
use crate::error::Result;

/// Per segment, per doc: `w_f / norm_f(d)` for one set of BM25F parameters.
pub type DocFactors = Vec<Vec<[Score; FIELD_COUNT]>>;
type NormsKey = [u32; 3 * FIELD_COUNT];

/// Parameter sets whose doc factors a snapshot keeps (queries rarely vary them).
pub const FACTOR_SETS: usize = 2;
/// Terms whose lookups a snapshot keeps.
pub const MAX_TERMS: usize = 1 << 16;

/// One term across a snapshot's segments.
#[derive(Debug)]
pub struct TermEntry {
    /// Per segment: where its postings are, if it occurs there.
    pub infos: Vec<Option<TermInfo>>,
    /// Docs containing it, summed over segments (tombstoned ones included).
    pub df: u64,
}

#[derive(Default)]
pub struct SnapshotCache {
    factors: Mutex<Vec<(NormsKey, Arc<DocFactors>)>>,
    terms: RwLock<HashMap<Box<str>, Arc<TermEntry>>>,
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
        let entry = Arc::new(TermEntry { infos, df });
        let mut terms = self.terms.write().unwrap_or_else(PoisonError::into_inner);
        if terms.len() >= MAX_TERMS {
            terms.clear();
        }
        terms.insert(term.into(), entry.clone());
        Ok(entry)
    }
}
