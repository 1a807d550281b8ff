//! Postings: per term, the sorted doc ordinals with per-field term frequencies, in blocks
//! of [`BLOCK_LEN`] docs behind a skip table, and the term's positions in a parallel stream.
//!
//! Byte layout of one term's postings (at `postings_off` in the postings section):
//!
//! ```text
//! skip table   n_blocks × { last_doc u32, block_end u32, positions_end u32 }   (LE)
//! blocks       per block of n docs:
//!                u8 doc_bits, u8 tf_bits[5]          bit widths (0–32), a tf width per field
//!                doc deltas    n × doc_bits bits      packed LSB first, padded to a byte
//!                tf heading    n × tf_bits[0] bits    likewise
//!                tf body       n × tf_bits[1] bits
//!                tf code       n × tf_bits[2] bits
//!                tf path       n × tf_bits[3] bits
//!                tf anchor     n × tf_bits[4] bits
//! ```
//!
//! A doc delta is `doc − previous doc`; "previous doc" of a block's first doc is the
//! previous block's last_doc (0 for block 0, whose first delta is the doc itself). Fixed
//! widths make decoding a tight loop without branches per value, and let the reader find
//! each run from the header alone: seeking and counting unpack doc deltas only, frequencies
//! are unpacked on first use, and a field absent from a block costs nothing but its width
//! byte (width 0, no run): the anchor field of a knowledge base without links adds one byte
//! per block. Segment format 5 (the anchor field's width); format 4 added the path field's,
//! version 1 interleaved varints, version 2 put varint doc deltas first.
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

use super::codec::{pack, packed_len, read_packed, u32_at, unpack, write_varint, ByteReader};
use super::{DocOrd, FIELD_COUNT};

/// Docs per postings block.
pub const BLOCK_LEN: usize = 128;
/// Bytes per skip-table entry.
pub const SKIP_ENTRY_BYTES: usize = 12;
/// Bytes of a block's header: the bit widths.
const BLOCK_HEADER: usize = 1 + FIELD_COUNT;
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
    // A varint takes at most 5 bytes: no growth inside the loops below.
    positions.reserve(p.positions.len() * 5);
    let mut prev: DocOrd = 0;
    let mut pos_i = 0usize;
    let mut scratch = Vec::new();
    for (b, chunk) in p.docs.chunks(BLOCK_LEN).enumerate() {
        let n = chunk.len();
        let first = b * BLOCK_LEN;
        let tfs = &p.tfs[first..first + n];
        let deltas = chunk.iter().scan(prev, |last, &doc| {
            let delta = doc - *last;
            *last = doc;
            Some(delta)
        });
        let doc_bits = 32 - deltas.clone().fold(0, |a, d| a | d).leading_zeros();
        let any_tf = tfs.iter().fold([0u32; FIELD_COUNT], |a, t| {
            std::array::from_fn(|f| a[f] | t[f])
        });
        let tf_bits = any_tf.map(|v| 32 - v.leading_zeros());
        postings.push(doc_bits as u8);
        postings.extend(tf_bits.iter().map(|&w| w as u8));
        pack(deltas, doc_bits, postings);
        for (f, &w) in tf_bits.iter().enumerate() {
            if w > 0 {
                pack(tfs.iter().map(|t| t[f]), w, postings);
            }
        }
        prev = chunk[n - 1];
        for row in tfs {
            for &tf in row {
                let tf = tf as usize;
                let Some(field_positions) = p.positions.get(pos_i..pos_i + tf) else {
                    return Err(Malformed("positions disagree with term frequency"));
                };
                pos_i += tf;
                match field_positions {
                    [] => {}
                    [only] => write_varint(positions, *only),
                    _ => {
                        let mut field_positions = field_positions;
                        if !field_positions.is_sorted() {
                            // Analyzers may emit a split identifier's parts out of order;
                            // deltas need ascending positions.
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
                    }
                }
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

/// A view of a cursor's current block (see [`PostingsCursor::block`]).
pub struct Block<'c> {
    /// The docs from the cursor's current one to the block's end.
    pub docs: &'c [DocOrd],
    tfs: &'c [[u32; BLOCK_LEN]; FIELD_COUNT],
    at: usize,
    fields: u8,
}

impl Block<'_> {
    /// The fields with a frequency in this block (bit `f`: field `f`); the others' are all
    /// 0 (width 0), and adding them changes no score.
    #[inline]
    pub fn fields(&self) -> u8 {
        self.fields
    }

    /// Frequencies of `docs[j]` (zeros past the block's docs: a pooled buffer holds an
    /// earlier list's frequencies there).
    #[inline]
    pub fn tfs(&self, j: usize) -> [u32; FIELD_COUNT] {
        if j >= self.docs.len() {
            return [0; FIELD_COUNT];
        }
        std::array::from_fn(|f| self.tfs[f].get(self.at + j).copied().unwrap_or(0))
    }

    /// Field `f`'s frequencies of `docs[..n]`.
    #[inline]
    pub fn field_tfs(&self, f: usize, n: usize) -> &[u32] {
        self.tfs[f].get(self.at..self.at + n).unwrap_or_default()
    }
}

/// A cursor's decoded block: its doc ordinals and, field-major, their frequencies. Only
/// the first `len` entries of the current block are ever read, so a reused one needs no
/// clearing.
struct BlockBuf {
    docs: [DocOrd; BLOCK_LEN],
    tfs: [[u32; BLOCK_LEN]; FIELD_COUNT],
}

/// Block buffers kept per thread for the next cursors, at most this many: a search opens
/// one cursor per query term and segment, and zeroing 2 KiB for each (then moving it out
/// of the constructor) cost about 6 % of a `kb.search` (callgrind, SciFact).
const POOLED_BUFS: usize = 256;

thread_local! {
    // Boxed: a buffer moves between the pool and a cursor as one pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    static BUF_POOL: std::cell::RefCell<Vec<Box<BlockBuf>>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

fn take_buf() -> Box<BlockBuf> {
    BUF_POOL
        .try_with(|pool| pool.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            Box::new(BlockBuf {
                docs: [0; BLOCK_LEN],
                tfs: [[0; BLOCK_LEN]; FIELD_COUNT],
            })
        })
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
    /// The current block's docs and (once `tfs_loaded`) frequencies; back to the pool on
    /// drop.
    buf: std::mem::ManuallyDrop<Box<BlockBuf>>,
    /// The current block's packed frequencies: their widths and where the first run starts
    /// in `data`.
    tf_bits: [u32; FIELD_COUNT],
    /// The fields whose width is not 0 (bit `f`: field `f`).
    fields: u8,
    tfs_at: usize,
    tfs_loaded: bool,
    /// Positions state: doc `pos_doc` of the current block starts at `positions[pos_at]`.
    pos_block: usize,
    pos_doc: usize,
    pos_at: usize,
}

impl Drop for PostingsCursor<'_> {
    fn drop(&mut self) {
        // SAFETY: `buf` is taken once, here, and the cursor is not used after `drop`.
        let buf = unsafe { std::mem::ManuallyDrop::take(&mut self.buf) };
        // At thread exit the pool may be gone: the buffer is then simply freed.
        let _ = BUF_POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.len() < POOLED_BUFS {
                pool.push(buf);
            }
        });
    }
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
        let mut c = Self::new_unloaded(postings, positions, df, max_doc)?;
        c.load_block(0)?;
        Ok(c)
    }

    fn new_unloaded(
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
        Ok(PostingsCursor {
            skips,
            data: &postings[skip_len..],
            positions,
            df,
            n_blocks,
            max_doc,
            block: 0,
            len: 0,
            idx: 0,
            buf: std::mem::ManuallyDrop::new(take_buf()),
            tf_bits: [0; FIELD_COUNT],
            fields: 0,
            tfs_at: 0,
            tfs_loaded: false,
            pos_block: usize::MAX,
            pos_doc: 0,
            pos_at: 0,
        })
    }

    /// A cursor already at the first doc `>= target`: blocks before it are never unpacked.
    pub fn starting_at(
        postings: &'a [u8],
        positions: &'a [u8],
        df: u32,
        max_doc: DocOrd,
        target: DocOrd,
    ) -> Result<Self, Malformed> {
        let mut c = Self::new_unloaded(postings, positions, df, max_doc)?;
        let b = c.block_at_or_after(0, target)?;
        c.load_block(b.min(c.n_blocks - 1))?;
        let rest = &c.buf.docs[..c.len];
        c.idx = rest.partition_point(|&d| d < target);
        Ok(c)
    }

    pub fn df(&self) -> u32 {
        self.df
    }

    fn skip(&self, b: usize, field: usize) -> Result<u32, Malformed> {
        u32_at(self.skips, b * SKIP_ENTRY_BYTES + field * 4).ok_or(Malformed("skip entry"))
    }

    /// Unpacks block `b`'s doc ordinals and checks them and its size against the skip
    /// table.
    fn load_block(&mut self, b: usize) -> Result<(), Malformed> {
        let (base, start) = if b == 0 {
            (0, 0)
        } else {
            (self.skip(b - 1, 0)?, self.skip(b - 1, 1)? as usize)
        };
        let end = self.skip(b, 1)? as usize;
        let bad_block = Malformed("postings block disagrees with its skip entry");
        let bytes = self
            .data
            .get(start..end)
            .ok_or(Malformed("postings block out of bounds"))?;
        let n = if b + 1 == self.n_blocks {
            self.df as usize - b * BLOCK_LEN
        } else {
            BLOCK_LEN
        };
        let header = bytes.get(..BLOCK_HEADER).ok_or(bad_block)?;
        let doc_bits = u32::from(header[0]);
        let mut tf_bits = [0u32; FIELD_COUNT];
        let mut fields = 0u8;
        let mut size = BLOCK_HEADER + packed_len(n, doc_bits);
        for (f, (w, &h)) in tf_bits.iter_mut().zip(&header[1..]).enumerate() {
            *w = u32::from(h);
            fields |= u8::from(h > 0) << f;
            size += packed_len(n, *w);
        }
        if doc_bits > 32 || tf_bits.iter().any(|&w| w > 32) {
            return Err(Malformed("bit width out of range"));
        }
        if size != bytes.len() {
            return Err(bad_block);
        }
        let docs = &mut self.buf.docs[..n];
        // From the section's rest, not just the block: spare bytes speed up unpacking.
        let run = self.data.get(start + BLOCK_HEADER..).ok_or(bad_block)?;
        unpack(run, doc_bits, docs).ok_or(bad_block)?;
        // Deltas are > 0 except the very first; sums stay below max_doc ≤ u32::MAX once the
        // last one does, so the u64 running sum never truncates a valid ordinal.
        let zero = (docs[0] == 0 && b > 0) || docs[1..].iter().fold(false, |z, &d| z | (d == 0));
        if zero {
            return Err(Malformed("doc ordinals not increasing"));
        }
        let mut acc = u64::from(base);
        for d in docs.iter_mut() {
            acc += u64::from(*d);
            *d = acc as DocOrd;
        }
        if acc >= u64::from(self.max_doc) {
            return Err(Malformed("doc ordinal out of range"));
        }
        if acc != u64::from(self.skip(b, 0)?) {
            return Err(bad_block);
        }
        self.block = b;
        self.len = n;
        self.idx = 0;
        self.tf_bits = tf_bits;
        self.fields = fields;
        self.tfs_at = start + BLOCK_HEADER + packed_len(n, doc_bits);
        self.tfs_loaded = false;
        Ok(())
    }

    /// Unpacks the current block's term frequencies (sizes were checked by `load_block`).
    fn load_tfs(&mut self) -> Result<(), Malformed> {
        let mut at = self.tfs_at;
        for (f, &w) in self.tf_bits.iter().enumerate() {
            let bytes = self
                .data
                .get(at..)
                .ok_or(Malformed("postings block out of bounds"))?;
            unpack(bytes, w, &mut self.buf.tfs[f][..self.len])
                .ok_or(Malformed("truncated postings block"))?;
            at += packed_len(self.len, w);
        }
        self.tfs_loaded = true;
        Ok(())
    }

    #[inline]
    pub fn doc(&self) -> DocOrd {
        if self.idx < self.len {
            self.buf.docs[self.idx]
        } else {
            TERMINATED
        }
    }

    /// Per-field term frequencies of the current doc (zeros when exhausted).
    #[inline]
    pub fn tfs(&self) -> Result<[u32; FIELD_COUNT], Malformed> {
        let i = self.idx;
        if i >= self.len {
            return Ok([0; FIELD_COUNT]);
        }
        if self.tfs_loaded {
            return Ok(std::array::from_fn(|f| self.buf.tfs[f][i]));
        }
        // Read in place: cheaper than unpacking the block for a few docs of it.
        let mut out = [0; FIELD_COUNT];
        let mut at = self.tfs_at;
        for (o, &w) in out.iter_mut().zip(&self.tf_bits) {
            let run = self.data.get(at..).unwrap_or_default();
            *o = read_packed(run, i, w).ok_or(Malformed("truncated postings block"))?;
            at += packed_len(self.len, w);
        }
        Ok(out)
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

    /// Calls `f` with the rest of every block, from the current doc to the end, decoding
    /// doc ordinals only, and leaves the cursor exhausted.
    pub fn drain_blocks(&mut self, mut f: impl FnMut(&[DocOrd])) -> Result<(), Malformed> {
        loop {
            f(&self.buf.docs[self.idx.min(self.len)..self.len]);
            self.idx = self.len;
            if self.block + 1 >= self.n_blocks {
                return Ok(());
            }
            self.load_block(self.block + 1)?;
        }
    }

    /// The current block from the current doc on: its docs and, field-major, the whole
    /// block's frequencies with the offset of the current doc in them.
    #[inline]
    pub fn block(&mut self) -> Result<Block<'_>, Malformed> {
        if !self.tfs_loaded && self.idx < self.len {
            self.load_tfs()?;
        }
        Ok(Block {
            docs: &self.buf.docs[self.idx.min(self.len)..self.len],
            tfs: &self.buf.tfs,
            at: self.idx,
            fields: self.fields,
        })
    }

    /// Moves `n` docs ahead within the current block (at most to its end), then to the next
    /// block if this one is used up.
    #[inline]
    pub fn skip_in_block(&mut self, n: usize) -> Result<DocOrd, Malformed> {
        self.idx = (self.idx + n).min(self.len);
        if self.idx == self.len && self.block + 1 < self.n_blocks {
            self.load_block(self.block + 1)?;
        }
        Ok(self.doc())
    }

    /// The first block from `from` on whose last doc is `>= target` (`n_blocks` if none):
    /// gallops over the skip table, then binary-searches the bracket.
    fn block_at_or_after(&self, from: usize, target: DocOrd) -> Result<usize, Malformed> {
        let mut lo = from;
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
        Ok(lo)
    }

    /// Moves to the first doc `>= target`: gallops over the skip table, then over the block.
    pub fn seek(&mut self, target: DocOrd) -> Result<DocOrd, Malformed> {
        if self.doc() >= target {
            return Ok(self.doc());
        }
        if self.buf.docs[self.len - 1] < target {
            let b = self.block_at_or_after(self.block + 1, target)?;
            if b == self.n_blocks {
                self.idx = self.len;
                return Ok(TERMINATED);
            }
            self.load_block(b)?;
        }
        let rest = &self.buf.docs[self.idx..self.len];
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
        for field in &self.buf.tfs {
            skip += field[self.pos_doc..self.idx]
                .iter()
                .map(|&t| t as usize)
                .sum::<usize>();
        }
        r.skip_varints(skip)
            .ok_or(Malformed("truncated positions"))?;
        self.pos_at += r.pos();
        self.pos_doc = self.idx;
        let mut r = ByteReader::new(&bytes[self.pos_at..]);
        for f in 0..FIELD_COUNT {
            let tf = self.buf.tfs[f][self.idx] as usize;
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

    /// Doc `i`'s frequencies in `sample`: some in every field but code, the anchor field's
    /// rarest (one doc in five).
    fn sample_tfs(i: u32) -> [u32; FIELD_COUNT] {
        [i % 2, 1 + i % 3, 0, i % 4 / 3, i % 5 / 4]
    }

    fn sample_with(n: u32, tfs_of: impl Fn(u32) -> [u32; FIELD_COUNT]) -> TermPostings {
        let mut p = TermPostings::default();
        for i in 0..n {
            let doc = i * 3 + 1;
            let tfs = tfs_of(i);
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

    fn sample(n: u32) -> TermPostings {
        sample_with(n, sample_tfs)
    }

    #[test]
    fn seek_and_positions() {
        let p = sample(1000);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        serialize_term(&p, &mut a, &mut b).unwrap();
        let mut c = PostingsCursor::new(&a, &b, 1000, 5000).unwrap();
        assert_eq!(c.doc(), 1);
        assert_eq!(c.seek(500).unwrap(), 502);
        assert_eq!(c.tfs().unwrap(), sample_tfs(167));
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

    /// Every doc, its frequencies and its positions in field 1, read through `block()`,
    /// `tfs()` and `positions()`.
    fn read_all(c: &mut PostingsCursor<'_>) -> Vec<(DocOrd, [u32; FIELD_COUNT], Vec<u32>)> {
        let mut out = Vec::new();
        while c.doc() != TERMINATED {
            let block = c.block().unwrap();
            let first = (block.docs[0], block.tfs(0));
            let mut pos = Vec::new();
            c.positions(1, &mut pos).unwrap();
            assert_eq!(c.tfs().unwrap(), first.1);
            out.push((first.0, first.1, pos));
            c.advance().unwrap();
        }
        out
    }

    #[test]
    fn a_reused_block_buffer_shows_only_the_new_list() {
        // Cursors take their block buffers from a per-thread pool without clearing them:
        // a short list read after a long one must not see the long one's docs or tfs.
        let (long, short) = (sample(300), sample(3));
        let (mut la, mut lb, mut sa, mut sb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        serialize_term(&long, &mut la, &mut lb).unwrap();
        serialize_term(&short, &mut sa, &mut sb).unwrap();
        let fresh: Vec<_> = (0..3u32)
            .map(|i| {
                let tfs = sample_tfs(i);
                (
                    i * 3 + 1,
                    tfs,
                    (0..tfs[1]).map(|k| k * 2 + 1).collect::<Vec<_>>(),
                )
            })
            .collect();
        for _ in 0..3 {
            let mut c = PostingsCursor::new(&la, &lb, 300, 5000).unwrap();
            assert_eq!(read_all(&mut c).len(), 300);
            drop(c);
            let mut c = PostingsCursor::new(&sa, &sb, 3, 5000).unwrap();
            let block = c.block().unwrap();
            assert_eq!(block.docs.len(), 3);
            assert_eq!(block.tfs(3), [0; FIELD_COUNT]); // past the docs: not the long list's
            assert_eq!(read_all(&mut c), fresh);
            let mut c = PostingsCursor::starting_at(&sa, &sb, 3, 5000, 4).unwrap();
            assert_eq!(c.doc(), 4);
            assert_eq!(read_all(&mut c), fresh[1..]);
        }
    }

    /// A field with no frequency in a block (the anchor field of a knowledge base without
    /// links) costs its width byte and nothing else, and reads back as zeros.
    #[test]
    fn a_field_empty_in_a_block_costs_only_its_width_byte() {
        let n = 300u32;
        let no_anchor = |i| {
            let mut t = sample_tfs(i);
            t[FIELD_COUNT - 1] = 0;
            t
        };
        let p = sample_with(n, no_anchor);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        serialize_term(&p, &mut a, &mut b).unwrap();
        let n_blocks = (n as usize).div_ceil(BLOCK_LEN);
        let mut at = n_blocks * SKIP_ENTRY_BYTES;
        for block in 0..n_blocks {
            let len = (n as usize - block * BLOCK_LEN).min(BLOCK_LEN);
            let header = &a[at..at + BLOCK_HEADER];
            assert_eq!(header[FIELD_COUNT], 0, "the empty field's width");
            let runs: usize = header.iter().map(|&w| packed_len(len, u32::from(w))).sum();
            at += BLOCK_HEADER + runs;
        }
        assert_eq!(
            at,
            a.len(),
            "no bytes beyond the headers and the non-empty runs"
        );
        let mut c = PostingsCursor::new(&a, &b, n, 5000).unwrap();
        let mut i = 0;
        while c.doc() != TERMINATED {
            assert_eq!(c.tfs().unwrap(), no_anchor(i));
            let mut out = Vec::new();
            c.positions(FIELD_COUNT - 1, &mut out).unwrap();
            assert!(out.is_empty());
            c.advance().unwrap();
            i += 1;
        }
        assert_eq!(i, n);
    }
}
