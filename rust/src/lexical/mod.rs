//! The lexical index: immutable segments, tombstones and a manifest, scored with BM25F.
//!
//! Layout of an index directory (every binary file ends with the `format` footer):
//!
//! ```text
//! meta.toml                     the manifest: generation, watermark, analyzer id, format
//!                               version, counts, segments and their tombstone files, and a
//!                               checksum; replaced by atomic rename (see `manifest`)
//! seg-<id:016x>.seg             an immutable segment (see `segment`)
//! seg-<id:016x>.<gen:x>.del     its tombstones as of manifest generation <gen> (see `tombstone`)
//! ```
//!
//! Invariants: a file is never modified after it is published; a manifest only names files
//! that were durably written before it; files no longer named by the newest manifest are
//! deleted after it is published (best effort), so a reader that finds a file gone re-reads
//! the manifest. Corpus statistics are summed over all segments, tombstoned docs included
//! until a merge drops them (Lucene's semantics), so scores do not depend on segmentation.
//!
//! Modules: `codec` (varints, bit packing), `postings`, `termdict`, `segment` (file
//! format), `writer` (in-memory build), `tombstone`, `manifest`, `merge` (policy and
//! merger), `bm25f` (scoring), `query` (request types, per-segment state, exhaustive
//! evaluation), `strict` (AND matching), `maxscore` (pruned OR evaluation), `topk`, `index`
//! (the public [`Index`] and snapshots), `cache` (per-snapshot doc factors and term
//! lookups), `update` (commit, rebuild, merge) and `search`.

mod bm25f;
mod cache;
mod codec;
mod dense;
mod index;
mod manifest;
mod maxscore;
mod merge;
pub mod postings;
mod query;
mod search;
mod segment;
mod strict;
mod termdict;
mod tombstone;
pub mod topk;
mod update;
mod writer;

pub use bm25f::{Bm25fParams, CorpusStats};
pub use index::{Index, LoadedSegment, Snapshot};
pub use manifest::{Manifest, SegmentMeta};
pub use query::{Clause, Evaluation, GlobalStats, Query};
pub use search::{Contribution, Hits};
pub use segment::{SegmentReader, SegmentSerializer};
pub use tombstone::Tombstones;
pub use writer::build_segment;

use crate::error::{Error, Result};

/// A document's ordinal inside one segment.
pub type DocOrd = u32;
/// A BM25F score.
pub type Score = f32;
/// A section id: 16 bytes, written as 32 lower-case hex characters.
pub type Kbid = [u8; 16];

/// Fields per section: heading, body, code, path (the section's place in its document:
/// the document's title and the headings above the section), and anchor (the labels of
/// the links in other notes that point at the section; empty in a knowledge base without
/// links, where it scores nothing).
pub const FIELD_COUNT: usize = 5;
/// Field bits, as a clause's match mask holds them (bit `f` for field `f`).
pub const FIELD_HEADING: u8 = 1;
pub const FIELD_BODY: u8 = 2;
pub const FIELD_CODE: u8 = 4;
pub const FIELD_PATH: u8 = 8;
pub const FIELD_ANCHOR: u8 = 16;
/// Field names in field order, as `explain` reports them.
pub const FIELD_NAMES: [&str; FIELD_COUNT] = ["heading", "body", "code", "path", "anchor"];
// A match mask is a byte: one bit per field.
const _: () = assert!(FIELD_COUNT <= 8);

/// Format versions; bump on any byte-layout change. Segment format 4 added the path
/// field, 5 the anchor field.
pub const SEGMENT_FORMAT_VERSION: u32 = 5;
pub const TOMBSTONE_FORMAT_VERSION: u32 = 1;
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// A section to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub kbid: Kbid,
    /// heading, body, code, path, anchor
    pub fields: [String; FIELD_COUNT],
}

/// Parses 32 lower-case hex characters.
pub fn parse_kbid(s: &str) -> Result<Kbid> {
    let bad = || Error::InvalidArgument(format!("kbid '{s}' is not 32 lower-case hex characters"));
    let b = s.as_bytes();
    if b.len() != 32 {
        return Err(bad());
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (nibble(b[2 * i]).ok_or_else(bad)? << 4) | nibble(b[2 * i + 1]).ok_or_else(bad)?;
    }
    Ok(out)
}

pub fn format_kbid(k: &Kbid) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Into a fixed buffer, then one allocation (a push per char checks capacity each time).
    let mut out = [0u8; 32];
    for (pair, &b) in out.chunks_exact_mut(2).zip(k) {
        pair[0] = HEX[usize::from(b >> 4)];
        pair[1] = HEX[usize::from(b & 15)];
    }
    String::from_utf8(out.to_vec()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kbid_round_trip() {
        let s = "0123456789abcdef0123456789abcdef";
        assert_eq!(format_kbid(&parse_kbid(s).unwrap()), s);
        assert!(parse_kbid("0123456789ABCDEF0123456789abcdef").is_err());
        assert!(parse_kbid("abc").is_err());
        assert!(parse_kbid("é123456789abcdef0123456789abcde").is_err());
    }
}
