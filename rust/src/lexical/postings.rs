//! Postings: per term, the sorted doc ordinals with per-field term frequencies, in blocks
//! of [`BLOCK_LEN`] docs behind a skip table, and the term's positions in a parallel stream.
//!
//! Byte layout of one term's postings (at `postings_off` in the postings section):
//!
//! ```text
//! skip table   n_blocks × { last_doc u32, block_end u32, positions_end u32 }   (LE)
//! blocks       per block: first per doc varint(doc − previous doc), then per doc
//!              varint(tf heading), varint(tf body), varint(tf code); "previous doc" of a
//!              block's first doc is the previous block's last_doc (0 for block 0, whose
//!              first delta is the doc itself)
//! ```
//!
//! Doc ordinals come before the frequencies so that seeking and counting decode one varint
//! per doc (format version 2; version 1 interleaved them).
//!
//! `n_blocks = ceil(df / BLOCK_LEN)`; `block_end` is relative to the first byte after the
//! skip table, `positions_end` to the term's first positions byte. Positions (at
//! `positions_off` in the positions section): per doc, per field with tf > 0, tf varints,
//! the first absolute and the rest deltas. Positions of one doc are found by skipping the
//! previous docs of its block (their counts are the tf sums).
//!
//! The writer is [`TermPostings`] + [`serialize_term`]; the reader is [`PostingsCursor`],
//! which checks every offset, ordinal and varint and reports [`Malformed`] instead of
//! panicking.

use super::codec::{u32_at, write_varint, ByteReader};
use super::{DocOrd, FIELD_COUNT};

/// Docs per postings block.
pub const BLOCK_LEN: usize = 128;
/// Bytes per skip-table entry.
pub const SKIP_ENTRY_BYTES: usize = 12;
/// `doc()` of an exhausted cursor.
pub const TERMINATED: DocOrd = DocOrd::MAX;

/// Bad bytes found while decoding; the caller adds the file path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

/// One term's postings in memory, in doc order: the writer side.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TermPostings {
    pub docs: Vec<DocOrd>,
    pub tfs: Vec<[u32; FIELD_COUNT]>,
    /// Per doc, per field, `tf` absolute positions in ascending order.
    pub positions: Vec<u32>,
}

impl TermPostings {
    pub fn clear(&mut self) {
        self.docs.clear();
        self.tfs.clear();
        self.positions.clear();
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// Appends `p` to the two section buffers; returns `(postings_off, positions_off)`.
/// Fails only when one term's postings exceed 4 GiB.
pub fn serialize_term(
    p: &TermPostings,
    postings: &mut Vec<u8>,
    positions: &mut Vec<u8>,
) -> Result<(u64, u64), Malformed> {
    let too_big = Malformed("one term's postings exceed 4 GiB");
    let postings_off = postings.len() as u64;
    let positions_off = positions.len() as u64;
    let n_blocks = p.docs.len().div_ceil(BLOCK_LEN);
    let skip_at = postings.len();
    postings.resize(skip_at + n_blocks * SKIP_ENTRY_BYTES, 0);
    let data_at = postings.len();
    let mut prev: DocOrd = 0;
    let mut pos_i = 0usize;
    let mut scratch = Vec::new();
    for (b, chunk) in p.docs.chunks(BLOCK_LEN).enumerate() {
        for &doc in chunk {
            write_varint(postings, doc - prev);
            prev = doc;
        }
        let first = b * BLOCK_LEN;
        for tfs in &p.tfs[first..first + chunk.len()] {
            for &tf in tfs {
                write_varint(postings, tf);
                let mut field_positions = &p.positions[pos_i..pos_i + tf as usize];
                if !field_positions.is_sorted() {
                    // Analyzers may emit a split identifier's parts out of order; deltas need
                    // ascending positions.
                    scratch.clear();
                    scratch.extend_from_slice(field_positions);
                    scratch.sort_unstable();
                    field_positions = &scratch;
                }
                let mut last = 0u32;
                for &pos in field_positions {
                    write_varint(positions, pos - last);
                    last = pos;
                }
                pos_i += tf as usize;
            }
        }
        let block_end = u32::try_from(postings.len() - data_at).map_err(|_| too_big)?;
        let pos_end = u32::try_from(positions.len() as u64 - positions_off).map_err(|_| too_big)?;
        let e = skip_at + b * SKIP_ENTRY_BYTES;
        postings[e..e + 4].copy_from_slice(&prev.to_le_bytes());
        postings[e + 4..e + 8].copy_from_slice(&block_end.to_le_bytes());
        postings[e + 8..e + 12].copy_from_slice(&pos_end.to_le_bytes());
    }
    Ok((postings_off, positions_off))
}

/// Reads one term's postings block by block. `doc()` is [`TERMINATED`] when exhausted.
///
/// Loading a block decodes its doc ordinals only; term frequencies are decoded on the first
/// [`tfs`](PostingsCursor::tfs) call in that block, so seeking through a list and counting
/// its docs never pays for them.
pub struct PostingsCursor<'a> {
    skips: &'a [u8],
    data: &'a [u8],
    positions: &'a [u8],
    df: u32,
    n_blocks: usize,
    max_doc: DocOrd,
    block: usize,
    len: usize,
    idx: usize,
    docs: [DocOrd; BLOCK_LEN],
    /// The current block's tf varints: `data[tfs_at..tfs_end]`.
    tfs_at: usize,
    tfs_end: usize,
    tfs_loaded: bool,
    tfs: [[u32; FIELD_COUNT]; BLOCK_LEN],
    /// Positions state: doc `pos_doc` of the current block starts at `positions[pos_at]`.
    pos_block: usize,
    pos_doc: usize,
    pos_at: usize,
}

impl<'a> PostingsCursor<'a> {
    /// `postings`/`positions` are the term's regions (each may extend past the term);
    /// `max_doc` is the segment's doc count.
    pub fn new(
        postings: &'a [u8],
        positions: &'a [u8],
        df: u32,
        max_doc: DocOrd,
    ) -> Result<Self, Malformed> {
        let n_blocks = (df as usize).div_ceil(BLOCK_LEN);
        if df == 0 || df > max_doc {
            return Err(Malformed("term document frequency out of range"));
        }
        let skip_len = n_blocks * SKIP_ENTRY_BYTES;
        let skips = postings
            .get(..skip_len)
            .ok_or(Malformed("skip table out of bounds"))?;
        let mut c = PostingsCursor {
            skips,
            data: &postings[skip_len..],
            positions,
            df,
            n_blocks,
            max_doc,
            block: 0,
            len: 0,
            idx: 0,
            docs: [0; BLOCK_LEN],
            tfs_at: 0,
            tfs_end: 0,
            tfs_loaded: false,
            tfs: [[0; FIELD_COUNT]; BLOCK_LEN],
            pos_block: usize::MAX,
            pos_doc: 0,
            pos_at: 0,
        };
        c.load_block(0)?;
        Ok(c)
    }

    pub fn df(&self) -> u32 {
        self.df
    }

    fn skip(&self, b: usize, field: usize) -> Result<u32, Malformed> {
        u32_at(self.skips, b * SKIP_ENTRY_BYTES + field * 4).ok_or(Malformed("skip entry"))
    }

    /// Decodes block `b`'s doc ordinals and checks them against the skip table.
    fn load_block(&mut self, b: usize) -> Result<(), Malformed> {
        let (base, start) = if b == 0 {
            (0, 0)
        } else {
            (self.skip(b - 1, 0)?, self.skip(b - 1, 1)?)
        };
        let end = self.skip(b, 1)? as usize;
        let bytes = self
            .data
            .get(start as usize..end)
            .ok_or(Malformed("postings block out of bounds"))?;
        let n = if b + 1 == self.n_blocks {
            self.df as usize - b * BLOCK_LEN
        } else {
            BLOCK_LEN
        };
        let mut r = ByteReader::new(bytes);
        let mut prev = base;
        for (i, slot) in self.docs[..n].iter_mut().enumerate() {
            let delta = r.varint().ok_or(Malformed("truncated postings block"))?;
            if delta == 0 && (b > 0 || i > 0) {
                return Err(Malformed("doc ordinals not increasing"));
            }
            prev = prev
                .checked_add(delta)
                .ok_or(Malformed("doc ordinal overflow"))?;
            *slot = prev;
        }
        if prev >= self.max_doc {
            return Err(Malformed("doc ordinal out of range"));
        }
        if prev != self.skip(b, 0)? {
            return Err(Malformed("postings block disagrees with its skip entry"));
        }
        self.block = b;
        self.len = n;
        self.idx = 0;
        self.tfs_at = start as usize + r.pos();
        self.tfs_end = end;
        self.tfs_loaded = false;
        Ok(())
    }

    /// Decodes the current block's term frequencies.
    fn load_tfs(&mut self) -> Result<(), Malformed> {
        let bytes = self
            .data
            .get(self.tfs_at..self.tfs_end)
            .ok_or(Malformed("postings block out of bounds"))?;
        let mut r = ByteReader::new(bytes);
        for row in &mut self.tfs[..self.len] {
            for tf in row.iter_mut() {
                *tf = r.varint().ok_or(Malformed("truncated postings block"))?;
            }
        }
        if !r.is_empty() {
            return Err(Malformed("postings block disagrees with its skip entry"));
        }
        self.tfs_loaded = true;
        Ok(())
    }

    #[inline]
    pub fn doc(&self) -> DocOrd {
        if self.idx < self.len {
            self.docs[self.idx]
        } else {
            TERMINATED
        }
    }

    /// Per-field term frequencies of the current doc (zeros when exhausted).
    #[inline]
    pub fn tfs(&mut self) -> Result<[u32; FIELD_COUNT], Malformed> {
        if self.idx >= self.len {
            return Ok([0; FIELD_COUNT]);
        }
        if !self.tfs_loaded {
            self.load_tfs()?;
        }
        Ok(self.tfs[self.idx])
    }

    pub fn advance(&mut self) -> Result<DocOrd, Malformed> {
        if self.idx < self.len {
            self.idx += 1;
            if self.idx == self.len && self.block + 1 < self.n_blocks {
                self.load_block(self.block + 1)?;
            }
        }
        Ok(self.doc())
    }

    /// Calls `f` with every doc from the current one to the end, decoding doc ordinals only,
    /// and leaves the cursor exhausted.
    pub fn drain_docs(&mut self, mut f: impl FnMut(DocOrd)) -> Result<(), Malformed> {
        loop {
            for &d in &self.docs[self.idx.min(self.len)..self.len] {
                f(d);
            }
            self.idx = self.len;
            if self.block + 1 >= self.n_blocks {
                return Ok(());
            }
            self.load_block(self.block + 1)?;
        }
    }

    /// Moves to the first doc `>= target`: gallops over the skip table, then over the block.
    pub fn seek(&mut self, target: DocOrd) -> Result<DocOrd, Malformed> {
        if self.doc() >= target {
            return Ok(self.doc());
        }
        if self.docs[self.len - 1] < target {
            // Gallop over block last_docs, then binary-search the bracket.
            let mut lo = self.block + 1;
            let mut step = 1;
            let mut hi = lo;
            while hi < self.n_blocks && self.skip(hi, 0)? < target {
                lo = hi + 1;
                hi += step;
                step *= 2;
            }
            let mut hi = hi.min(self.n_blocks);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if self.skip(mid, 0)? < target {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if lo == self.n_blocks {
                self.idx = self.len;
                return Ok(TERMINATED);
            }
            self.load_block(lo)?;
        }
        let rest = &self.docs[self.idx..self.len];
        self.idx += rest.partition_point(|&d| d < target);
        Ok(self.doc())
    }

    /// Appends the current doc's positions in `field` to `out` (cleared first).
    pub fn positions(&mut self, field: usize, out: &mut Vec<u32>) -> Result<(), Malformed> {
        out.clear();
        if self.idx >= self.len {
            return Ok(());
        }
        if !self.tfs_loaded {
            self.load_tfs()?;
        }
        if self.pos_block != self.block || self.pos_doc > self.idx {
            self.pos_block = self.block;
            self.pos_doc = 0;
            self.pos_at = if self.block == 0 {
                0
            } else {
                self.skip(self.block - 1, 2)? as usize
            };
        }
        let end = self.skip(self.block, 2)? as usize;
        let bytes = self
            .positions
            .get(..end)
            .ok_or(Malformed("positions out of bounds"))?;
        let mut r = ByteReader::new(bytes.get(self.pos_at..).ok_or(Malformed("positions"))?);
        let mut skip = 0usize;
        for d in self.pos_doc..self.idx {
            skip += self.tfs[d].iter().map(|&t| t as usize).sum::<usize>();
        }
        r.skip_varints(skip)
            .ok_or(Malformed("truncated positions"))?;
        self.pos_at += r.pos();
        self.pos_doc = self.idx;
        let mut r = ByteReader::new(&bytes[self.pos_at..]);
        for f in 0..FIELD_COUNT {
            let tf = self.tfs[self.idx][f] as usize;
            if f != field {
                r.skip_varints(tf).ok_or(Malformed("truncated positions"))?;
                continue;
            }
            let mut p = 0u32;
            for _ in 0..tf {
                let delta = r.varint().ok_or(Malformed("truncated positions"))?;
                p = p.checked_add(delta).ok_or(Malformed("position overflow"))?;
                out.push(p);
            }
            break;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u32) -> TermPostings {
        let mut p = TermPostings::default();
        for i in 0..n {
            let doc = i * 3 + 1;
            let tfs = [i % 2, 1 + i % 3, 0];
            p.docs.push(doc);
            p.tfs.push(tfs);
            for (f, &tf) in tfs.iter().enumerate() {
                for k in 0..tf {
                    p.positions.push(k * 2 + f as u32);
                }
            }
        }
        p
    }

    #[test]
    fn seek_and_positions() {
        let p = sample(1000);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        serialize_term(&p, &mut a, &mut b).unwrap();
        let mut c = PostingsCursor::new(&a, &b, 1000, 5000).unwrap();
        assert_eq!(c.doc(), 1);
        assert_eq!(c.seek(500).unwrap(), 502);
        assert_eq!(c.tfs().unwrap(), [167 % 2, 1 + 167 % 3, 0]);
        let mut out = Vec::new();
        c.positions(1, &mut out).unwrap();
        assert_eq!(
            out,
            (0..c.tfs().unwrap()[1])
                .map(|k| k * 2 + 1)
                .collect::<Vec<_>>()
        );
        assert_eq!(c.seek(2998).unwrap(), 2998);
        assert_eq!(c.seek(2999).unwrap(), TERMINATED);
        assert_eq!(c.advance().unwrap(), TERMINATED);
    }
}
