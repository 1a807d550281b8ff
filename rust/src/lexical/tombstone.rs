//! Tombstones: which docs of one segment are deleted, as a bitset in its own small file.
//!
//! A change never edits a tombstone file: the writer publishes a new file named after the
//! manifest generation (`seg-<id>.<gen:x>.del`) and the manifest points at it. Payload
//! (little-endian, then the `format` footer, kind `TOMB`):
//!
//! ```text
//! 0   u32                     doc_count of the segment
//! 4   u32                     deleted count (must equal the popcount)
//! 8   ceil(doc_count/64) × u64  bitset, bit i of word i/64 set = doc i deleted
//! ```

use std::path::Path;

use super::codec::{put_u32, put_u64, u32_at, u64_at};
use super::{DocOrd, TOMBSTONE_FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::format::{append_footer, validate, FileKind};

/// A per-segment deletion bitset (also used for `allow` filters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstones {
    doc_count: u32,
    words: Vec<u64>,
}

impl Tombstones {
    pub fn new(doc_count: u32) -> Self {
        Tombstones {
            doc_count,
            words: vec![0; (doc_count as usize).div_ceil(64)],
        }
    }

    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    #[inline]
    pub fn contains(&self, doc: DocOrd) -> bool {
        self.words
            .get(doc as usize / 64)
            .is_some_and(|w| w >> (doc % 64) & 1 == 1)
    }

    /// Sets `doc`; returns true if it was not set before. Ignores out-of-range ordinals.
    pub fn insert(&mut self, doc: DocOrd) -> bool {
        match self.words.get_mut(doc as usize / 64) {
            Some(w) if doc < self.doc_count => {
                let was = *w >> (doc % 64) & 1 == 1;
                *w |= 1 << (doc % 64);
                !was
            }
            _ => false,
        }
    }

    /// The bitset: bit `i % 64` of word `i / 64` is doc `i`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// Size of this bitset's file in bytes.
    pub fn file_len(&self) -> u64 {
        (8 + self.words.len() * 8 + crate::format::FOOTER_LEN) as u64
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.words.len() * 8 + crate::format::FOOTER_LEN);
        put_u32(&mut out, self.doc_count);
        put_u32(&mut out, self.count());
        self.words.iter().for_each(|&w| put_u64(&mut out, w));
        append_footer(&mut out, FileKind::TOMBSTONE, TOMBSTONE_FORMAT_VERSION);
        out
    }

    /// Parses and validates a whole tombstone file.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Tombstones> {
        let p = validate(path, bytes, FileKind::TOMBSTONE, TOMBSTONE_FORMAT_VERSION)?;
        let bad = |d: &str| Error::corrupt(path, d);
        let doc_count = u32_at(p, 0).ok_or_else(|| bad("tombstone header truncated"))?;
        let deleted = u32_at(p, 4).ok_or_else(|| bad("tombstone header truncated"))?;
        let n_words = (doc_count as usize).div_ceil(64);
        if p.len() != 8 + n_words * 8 {
            return Err(bad("tombstone bitset has the wrong size"));
        }
        let words: Vec<u64> = (0..n_words).filter_map(|i| u64_at(p, 8 + i * 8)).collect();
        let t = Tombstones { doc_count, words };
        let tail_bits = doc_count % 64;
        if tail_bits != 0 && t.words.last().is_some_and(|w| w >> tail_bits != 0) {
            return Err(bad("tombstone bit set past the segment's last doc"));
        }
        if t.count() != deleted {
            return Err(bad("tombstone count disagrees with its bitset"));
        }
        Ok(t)
    }

    pub fn read(path: &Path) -> Result<Tombstones> {
        let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
        Tombstones::from_bytes(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut t = Tombstones::new(130);
        assert!(t.insert(0));
        assert!(t.insert(129));
        assert!(!t.insert(129));
        assert!(!t.insert(130));
        let back = Tombstones::from_bytes(Path::new("x"), &t.to_bytes()).unwrap();
        assert_eq!(back, t);
        assert!(back.contains(129) && !back.contains(1) && !back.contains(5000));
        assert_eq!(back.count(), 2);
    }
}
