//! The in-memory segment writer: analyzes a batch of sections in parallel and builds its
//! inverted index, then hands the sorted terms to the [`SegmentSerializer`].
//!
//! Docs are split into chunks of [`CHUNK_DOCS`]; each rayon task indexes one chunk into its
//! own term map with global ordinals (chunk base + index), so concatenating the chunks'
//! postings in chunk order keeps every posting list sorted. Terms are allocated once per
//! chunk, never per token.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use super::postings::TermPostings;
use super::segment::SegmentSerializer;
use super::{Doc, DocOrd, Kbid, FIELD_COUNT};
use crate::error::Result;
use crate::text::{Analyzer, FxHasher};

/// Terms to postings. Fx rather than SipHash: a third of the cost of indexing a token was
/// hashing its term, and the keys are the user's own analyzed words.
type TermMap = HashMap<Box<str>, TermPostings, BuildHasherDefault<FxHasher>>;

/// Docs per parallel indexing task at least.
pub const CHUNK_DOCS: usize = 256;
/// Tasks per rayon thread at most: a few, for balance. Fewer, larger chunks build fewer
/// term maps, each of which allocates its whole vocabulary and is merged afterwards.
const TASKS_PER_THREAD: usize = 2;

struct ChunkIndex {
    terms: TermMap,
    lens: Vec<[u32; FIELD_COUNT]>,
}

fn index_chunk(analyzer: &Analyzer, base: DocOrd, docs: &[Doc]) -> ChunkIndex {
    let mut terms = TermMap::default();
    let mut lens = Vec::with_capacity(docs.len());
    for (i, doc) in docs.iter().enumerate() {
        let ord = base + i as DocOrd;
        let mut row = [0u32; FIELD_COUNT];
        for (f, text) in doc.fields.iter().enumerate() {
            analyzer.analyze(text, |term, position, _, _| {
                row[f] += 1;
                let p = match terms.get_mut(term) {
                    Some(p) => p,
                    None => terms.entry(term.into()).or_default(),
                };
                if p.docs.last() != Some(&ord) {
                    p.docs.push(ord);
                    p.tfs.push([0; FIELD_COUNT]);
                }
                if let Some(tfs) = p.tfs.last_mut() {
                    tfs[f] += 1;
                }
                p.positions.push(position);
            });
        }
        lens.push(row);
    }
    ChunkIndex { terms, lens }
}

/// Builds the bytes of one segment holding `docs` (ordinal = index in `docs`). Returns the
/// file bytes and, per doc, how many terms were indexed.
pub fn build_segment(analyzer: &Analyzer, docs: &[Doc]) -> Result<(Vec<u8>, Vec<u32>)> {
    let tasks = rayon::current_num_threads() * TASKS_PER_THREAD;
    let size = docs.len().div_ceil(tasks).max(CHUNK_DOCS);
    let chunks: Vec<ChunkIndex> = docs
        .par_chunks(size)
        .enumerate()
        .map(|(c, chunk)| index_chunk(analyzer, (c * size) as DocOrd, chunk))
        .collect();
    let mut lens = Vec::with_capacity(docs.len());
    let mut all = TermMap::default();
    for chunk in chunks {
        lens.extend_from_slice(&chunk.lens);
        for (term, p) in chunk.terms {
            match all.get_mut(&term) {
                Some(acc) => {
                    acc.docs.extend_from_slice(&p.docs);
                    acc.tfs.extend_from_slice(&p.tfs);
                    acc.positions.extend_from_slice(&p.positions);
                }
                None => {
                    all.insert(term, p);
                }
            }
        }
    }
    let mut sorted: Vec<(Box<str>, TermPostings)> = all.into_iter().collect();
    sorted.par_sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut ser = SegmentSerializer::new();
    for (term, p) in &sorted {
        ser.add_term(term.as_bytes(), p)?;
    }
    drop(sorted);
    let kbids: Vec<Kbid> = docs.iter().map(|d| d.kbid).collect();
    let counts = lens.iter().map(|r| r.iter().sum()).collect();
    Ok((ser.finish(&kbids, &lens)?, counts))
}
