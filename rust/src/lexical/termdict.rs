//! The term dictionary: a sorted table of terms, looked up by binary search.
//!
//! Three sections of the segment file (little-endian):
//!
//! ```text
//! term offsets  (term_count + 1) × u32   start of term i in the term bytes; last = total
//! term bytes    the terms' UTF-8 bytes, concatenated in strictly increasing byte order
//! term infos    term_count × { df u32, postings_off u64, positions_off u64 }  (20 bytes)
//! ```
//!
//! A sorted table rather than an fst: it is simpler to validate and fast enough (one binary
//! search per query term per segment). The reader checks every offset it follows.

use std::cmp::Ordering;

use super::codec::{put_u32, put_u64, u32_at, u64_at};
use super::postings::Malformed;

/// Bytes per term-info record.
pub const TERM_INFO_BYTES: usize = 20;

/// Where one term's postings live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermInfo {
    /// Docs in this segment containing the term (tombstoned ones included).
    pub df: u32,
    pub postings_off: u64,
    pub positions_off: u64,
}

/// Builds the three sections; terms must arrive in strictly increasing order.
#[derive(Default)]
pub struct TermDictSerializer {
    pub offsets: Vec<u8>,
    pub bytes: Vec<u8>,
    pub infos: Vec<u8>,
    count: u32,
}

impl TermDictSerializer {
    pub fn new() -> Self {
        let mut s = TermDictSerializer::default();
        put_u32(&mut s.offsets, 0);
        s
    }

    pub fn add(&mut self, term: &[u8], info: TermInfo) -> Result<(), Malformed> {
        self.bytes.extend_from_slice(term);
        let end =
            u32::try_from(self.bytes.len()).map_err(|_| Malformed("term bytes exceed 4 GiB"))?;
        put_u32(&mut self.offsets, end);
        put_u32(&mut self.infos, info.df);
        put_u64(&mut self.infos, info.postings_off);
        put_u64(&mut self.infos, info.positions_off);
        self.count += 1;
        Ok(())
    }

    pub fn len(&self) -> u32 {
        self.count
    }
}

/// A view over the three sections of a mapped segment.
#[derive(Clone, Copy)]
pub struct TermDictReader<'a> {
    offsets: &'a [u8],
    bytes: &'a [u8],
    infos: &'a [u8],
    count: usize,
}

impl<'a> TermDictReader<'a> {
    /// Section lengths must match `count`; the caller checked they are in the file.
    pub fn new(
        offsets: &'a [u8],
        bytes: &'a [u8],
        infos: &'a [u8],
        count: usize,
    ) -> Result<Self, Malformed> {
        if offsets.len() != (count + 1) * 4 || infos.len() != count * TERM_INFO_BYTES {
            return Err(Malformed("term dictionary sections have the wrong size"));
        }
        Ok(TermDictReader {
            offsets,
            bytes,
            infos,
            count,
        })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn term(&self, i: usize) -> Result<&'a [u8], Malformed> {
        let bad = Malformed("term offsets out of bounds");
        let start = u32_at(self.offsets, i * 4).ok_or(bad)? as usize;
        let end = u32_at(self.offsets, i * 4 + 4).ok_or(bad)? as usize;
        self.bytes.get(start..end).ok_or(bad)
    }

    pub fn info(&self, i: usize) -> Result<TermInfo, Malformed> {
        let bad = Malformed("term info out of bounds");
        let at = i * TERM_INFO_BYTES;
        Ok(TermInfo {
            df: u32_at(self.infos, at).ok_or(bad)?,
            postings_off: u64_at(self.infos, at + 4).ok_or(bad)?,
            positions_off: u64_at(self.infos, at + 12).ok_or(bad)?,
        })
    }

    /// Binary search for `term`.
    pub fn get(&self, term: &[u8]) -> Result<Option<TermInfo>, Malformed> {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.term(mid)?.cmp(term) {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return self.info(mid).map(Some),
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup() {
        let mut s = TermDictSerializer::new();
        let terms = ["alpha", "beta", "delta", "gamma", "é"];
        for (i, t) in terms.iter().enumerate() {
            let info = TermInfo {
                df: i as u32 + 1,
                postings_off: i as u64 * 10,
                positions_off: 7,
            };
            s.add(t.as_bytes(), info).unwrap();
        }
        let r = TermDictReader::new(&s.offsets, &s.bytes, &s.infos, terms.len()).unwrap();
        for (i, t) in terms.iter().enumerate() {
            assert_eq!(r.get(t.as_bytes()).unwrap().unwrap().df, i as u32 + 1);
            assert_eq!(r.term(i).unwrap(), t.as_bytes());
        }
        assert_eq!(r.get(b"carrot").unwrap(), None);
        assert_eq!(r.get(b"").unwrap(), None);
        assert_eq!(r.get(b"zzz").unwrap(), None);
    }
}
