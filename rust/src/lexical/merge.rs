//! Merging: the tiered policy that keeps the segment count logarithmic, and the merger
//! that streams several segments into one, dropping tombstoned docs.
//!
//! Policy: a segment's tier is `floor(log10(live docs))` (tier 0: 1–9 docs, tier 1:
//! 10–99, …). Whenever a tier holds [`MERGE_FACTOR`] or more segments they are merged into
//! one, which lands roughly one tier up; repeating this leaves at most
//! `MERGE_FACTOR − 1` segments per tier, so `O(MERGE_FACTOR · log10 N)` segments in all.
//!
//! Merger: source segments are concatenated in list order (so remapped ordinals stay
//! sorted); the term dictionaries are merged k-way with a heap, and each term's postings
//! and positions are re-encoded with the new ordinals. Memory is one output segment.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::manifest::SegmentMeta;
use super::postings::{Malformed, TermPostings, TERMINATED};
use super::segment::{SegmentReader, SegmentSerializer};
use super::tombstone::Tombstones;
use super::{DocOrd, Kbid, FIELD_COUNT};
use crate::error::Result;

/// Segments per tier that trigger a merge; also the size ratio between tiers.
pub const MERGE_FACTOR: usize = 10;

fn tier(live: u32) -> u32 {
    live.max(1).ilog10()
}

/// The groups of segment indices to merge now, lowest tier first (a plan for one round;
/// the caller repeats until it is empty).
pub fn plan(segments: &[SegmentMeta]) -> Vec<Vec<usize>> {
    let max_tier = segments.iter().map(|s| tier(s.live())).max().unwrap_or(0);
    (0..=max_tier)
        .map(|t| {
            let members: Vec<usize> = (0..segments.len())
                .filter(|&i| tier(segments[i].live()) == t)
                .collect();
            members
        })
        .filter(|m| m.len() >= MERGE_FACTOR)
        .collect()
}

/// One input of a merge.
pub struct MergeSource<'a> {
    pub reader: &'a SegmentReader,
    pub dead: Option<&'a Tombstones>,
}

/// Merges `sources` into the bytes of one segment; returns the bytes and its doc count.
///
/// Each source's checksum is checked first: opening a segment does not check it, and a
/// merge would otherwise carry damaged bytes into a new file under a fresh, valid checksum
/// where `verify` could no longer see them. The merge reads every byte anyway.
pub fn merge_segments(sources: &[MergeSource<'_>]) -> Result<(Vec<u8>, u32)> {
    for s in sources {
        s.reader.verify_checksum()?;
    }
    let mut maps: Vec<Vec<DocOrd>> = Vec::with_capacity(sources.len());
    let mut kbids: Vec<Kbid> = Vec::new();
    let mut lens: Vec<[u32; FIELD_COUNT]> = Vec::new();
    for s in sources {
        let mut map = Vec::with_capacity(s.reader.doc_count() as usize);
        for d in 0..s.reader.doc_count() {
            if s.dead.is_some_and(|t| t.contains(d)) {
                map.push(TERMINATED);
            } else {
                map.push(kbids.len() as DocOrd);
                kbids.push(s.reader.kbid(d)?);
                lens.push(s.reader.field_lens(d));
            }
        }
        maps.push(map);
    }
    let dicts = sources
        .iter()
        .map(|s| s.reader.termdict())
        .collect::<Result<Vec<_>>>()?;
    let mut heap = BinaryHeap::new();
    for (si, dict) in dicts.iter().enumerate() {
        if !dict.is_empty() {
            heap.push(Reverse((
                dict.term(0).map_err(|m| sources[si].reader.corrupt(m))?,
                si,
                0usize,
            )));
        }
    }
    let mut ser = SegmentSerializer::new();
    let mut out = TermPostings::default();
    let mut buf = Vec::new();
    while let Some(Reverse((term, _, _))) = heap.peek().copied() {
        out.clear();
        while let Some(&Reverse((t, si, ti))) = heap.peek() {
            if t != term {
                break;
            }
            heap.pop();
            let src = &sources[si];
            let corrupt = |m: Malformed| src.reader.corrupt(m);
            let info = dicts[si].info(ti).map_err(corrupt)?;
            let mut c = src.reader.cursor(info)?;
            while c.doc() != TERMINATED {
                let new = *maps[si]
                    .get(c.doc() as usize)
                    .ok_or(corrupt(Malformed("doc ordinal")))?;
                if new != TERMINATED {
                    out.docs.push(new);
                    let tfs = c.tfs().map_err(corrupt)?;
                    out.tfs.push(tfs);
                    for (f, &tf) in tfs.iter().enumerate() {
                        c.positions(f, &mut buf).map_err(corrupt)?;
                        if buf.len() != tf as usize {
                            return Err(corrupt(Malformed(
                                "positions disagree with term frequency",
                            )));
                        }
                        out.positions.extend_from_slice(&buf);
                    }
                }
                c.advance().map_err(corrupt)?;
            }
            if ti + 1 < dicts[si].len() {
                let next = dicts[si].term(ti + 1).map_err(corrupt)?;
                if next <= t {
                    return Err(corrupt(Malformed("term dictionary not sorted")));
                }
                heap.push(Reverse((next, si, ti + 1)));
            }
        }
        ser.add_term(term, &out)?;
    }
    let n = kbids.len() as u32;
    Ok((ser.finish(&kbids, &lens)?, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(live: u32) -> SegmentMeta {
        SegmentMeta {
            file: String::new(),
            docs: live,
            deleted: 0,
            tombstones: None,
        }
    }

    #[test]
    fn policy_merges_full_tiers_only() {
        let segs: Vec<_> = (0..9).map(|_| meta(3)).collect();
        assert!(plan(&segs).is_empty());
        let mut segs: Vec<_> = (0..10).map(|_| meta(3)).collect();
        segs.push(meta(50));
        assert_eq!(plan(&segs), vec![(0..10).collect::<Vec<_>>()]);
    }
}
