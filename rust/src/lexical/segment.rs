//! An immutable segment file: everything needed to search a batch of sections.
//!
//! Payload layout (little-endian; then the 24-byte footer of [`crate::format`], kind
//! `SEGM`):
//!
//! ```text
//! 0     u32        doc_count
//! 4     u32        term_count
//! 8     5 × u64    total field lengths (heading, body, code, path, anchor), for average
//!                  lengths
//! 48    8 × {u64 offset, u64 len}   section table, offsets from payload start
//! 176   sections:
//!   0 kbids        doc_count × 16 bytes, in ordinal order (ordinal → kbid)
//!   1 kbid order   doc_count × u32 ordinals, sorted by kbid (kbid → ordinal)
//!   2 field lens   doc_count × 5 × u32: terms per field per doc
//!   3–5            term dictionary (see `termdict`)
//!   6 postings     (see `postings`)
//!   7 positions    (see `postings`)
//! ```
//!
//! [`SegmentSerializer`] assembles the bytes; [`SegmentReader`] maps and validates them.
//! Opening reads only the footer and the header: it checks the footer (not its checksum,
//! which would read the whole file on every open), the header, and every section's bounds,
//! size and place (the sections tile the payload in order). Everything read later is
//! bounds-checked again and reported as corruption; [`SegmentReader::check_all`] (behind
//! `verify`) adds the checksum and a decode of every posting.

use std::path::Path;

use super::codec::{put_u32, put_u64, u32_at, u64_at};
use super::postings::{serialize_term, Malformed, PostingsCursor, TermPostings};
use super::termdict::{TermDictReader, TermDictSerializer, TermInfo};
use super::{DocOrd, Kbid, FIELD_COUNT, SEGMENT_FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::format::{append_footer, FileKind, MappedFile};

const SECTION_COUNT: usize = 8;
/// Where the section table starts: after the counts and the field-length totals.
const TABLE_AT: usize = 8 + FIELD_COUNT * 8;
const HEADER_LEN: usize = TABLE_AT + SECTION_COUNT * 16;
// The layout above, in numbers.
const _: () = assert!(TABLE_AT == 48 && HEADER_LEN == 176);
/// Bytes of one doc's row of field lengths.
const LENS_ROW: usize = FIELD_COUNT * 4;
const KBIDS: usize = 0;
const KBID_ORDER: usize = 1;
const FIELD_LENS: usize = 2;
const TERM_OFFSETS: usize = 3;
const TERM_BYTES: usize = 4;
const TERM_INFOS: usize = 5;
const POSTINGS: usize = 6;
const POSITIONS: usize = 7;

/// Builds a segment's bytes. Terms must be added in strictly increasing byte order.
pub struct SegmentSerializer {
    dict: TermDictSerializer,
    postings: Vec<u8>,
    positions: Vec<u8>,
    last_term: Option<Vec<u8>>,
}

impl Default for SegmentSerializer {
    fn default() -> Self {
        Self::new()
    }
}

impl SegmentSerializer {
    pub fn new() -> Self {
        SegmentSerializer {
            dict: TermDictSerializer::new(),
            postings: Vec::new(),
            positions: Vec::new(),
            last_term: None,
        }
    }

    pub fn add_term(&mut self, term: &[u8], p: &TermPostings) -> Result<()> {
        if p.is_empty() {
            return Ok(());
        }
        if self.last_term.as_deref().is_some_and(|last| last >= term) {
            return Err(Error::InvalidArgument("segment terms out of order".into()));
        }
        let bad = |m: Malformed| Error::InvalidArgument(m.0.to_string());
        let (postings_off, positions_off) =
            serialize_term(p, &mut self.postings, &mut self.positions).map_err(bad)?;
        let info = TermInfo {
            df: p.len() as u32,
            postings_off,
            positions_off,
        };
        self.dict.add(term, info).map_err(bad)?;
        self.last_term = Some(term.to_vec());
        Ok(())
    }

    /// The file bytes, footer included. `kbids[i]` and `lens[i]` describe doc `i`.
    pub fn finish(self, kbids: &[Kbid], lens: &[[u32; FIELD_COUNT]]) -> Result<Vec<u8>> {
        assert_eq!(kbids.len(), lens.len(), "one field-length row per kbid");
        let doc_count = u32::try_from(kbids.len())
            .map_err(|_| Error::InvalidArgument("too many sections for one segment".into()))?;
        let mut order: Vec<u32> = (0..doc_count).collect();
        order.sort_unstable_by_key(|&o| kbids[o as usize]);
        let mut totals = [0u64; FIELD_COUNT];
        let mut lens_bytes = Vec::with_capacity(lens.len() * LENS_ROW);
        for row in lens {
            for f in 0..FIELD_COUNT {
                totals[f] += u64::from(row[f]);
                put_u32(&mut lens_bytes, row[f]);
            }
        }
        let mut order_bytes = Vec::with_capacity(order.len() * 4);
        order.iter().for_each(|&o| put_u32(&mut order_bytes, o));
        let sections: [&[u8]; SECTION_COUNT] = [
            kbids.as_flattened(),
            &order_bytes,
            &lens_bytes,
            &self.dict.offsets,
            &self.dict.bytes,
            &self.dict.infos,
            &self.postings,
            &self.positions,
        ];
        let total: usize = HEADER_LEN + sections.iter().map(|s| s.len()).sum::<usize>();
        let mut out = Vec::with_capacity(total + crate::format::FOOTER_LEN);
        put_u32(&mut out, doc_count);
        put_u32(&mut out, self.dict.len());
        totals.iter().for_each(|&t| put_u64(&mut out, t));
        let mut at = HEADER_LEN as u64;
        for s in &sections {
            put_u64(&mut out, at);
            put_u64(&mut out, s.len() as u64);
            at += s.len() as u64;
        }
        for s in &sections {
            out.extend_from_slice(s);
        }
        append_footer(&mut out, FileKind::SEGMENT, SEGMENT_FORMAT_VERSION);
        Ok(out)
    }
}

/// A mapped, validated segment.
pub struct SegmentReader {
    file: MappedFile,
    doc_count: u32,
    term_count: u32,
    field_totals: [u64; FIELD_COUNT],
    sections: [(usize, usize); SECTION_COUNT],
}

impl SegmentReader {
    /// Maps and validates the segment at `path`, reading its footer and header only.
    pub fn open(path: &Path) -> Result<SegmentReader> {
        SegmentReader::open_with(path, false)
    }

    /// [`SegmentReader::open`], checking the whole file's checksum first when `checksum`
    /// is set (`verify`: damage is then reported as what it is, not as whatever the
    /// header check trips over).
    pub fn open_with(path: &Path, checksum: bool) -> Result<SegmentReader> {
        let file =
            MappedFile::open_with(path, FileKind::SEGMENT, SEGMENT_FORMAT_VERSION, checksum)?;
        let p = file.payload();
        let bad = |d: &str| Error::corrupt(path, d);
        if p.len() < HEADER_LEN {
            return Err(bad("segment header truncated"));
        }
        let doc_count = u32_at(p, 0).ok_or_else(|| bad("header"))?;
        let term_count = u32_at(p, 4).ok_or_else(|| bad("header"))?;
        let mut field_totals = [0u64; FIELD_COUNT];
        for (f, t) in field_totals.iter_mut().enumerate() {
            *t = u64_at(p, 8 + f * 8).ok_or_else(|| bad("header"))?;
        }
        let mut sections = [(0usize, 0usize); SECTION_COUNT];
        let mut next = HEADER_LEN as u64;
        for (i, s) in sections.iter_mut().enumerate() {
            let off = u64_at(p, TABLE_AT + i * 16).ok_or_else(|| bad("header"))?;
            let len = u64_at(p, TABLE_AT + 8 + i * 16).ok_or_else(|| bad("header"))?;
            let end = off
                .checked_add(len)
                .ok_or_else(|| bad("section bounds overflow"))?;
            if off < HEADER_LEN as u64 || end > p.len() as u64 {
                return Err(bad(&format!("section {i} lies outside the file")));
            }
            // The writer lays the sections out back to back, in order, after the header.
            if off != next {
                return Err(bad(&format!(
                    "section {i} is not where the previous one ends"
                )));
            }
            next = end;
            *s = (off as usize, end as usize);
        }
        if next != p.len() as u64 {
            return Err(bad("the sections do not end where the payload does"));
        }
        let n = doc_count as usize;
        let t = term_count as usize;
        let expect = [
            (KBIDS, n * 16),
            (KBID_ORDER, n * 4),
            (FIELD_LENS, n * LENS_ROW),
            (TERM_OFFSETS, (t + 1) * 4),
            (TERM_INFOS, t * super::termdict::TERM_INFO_BYTES),
        ];
        for (i, len) in expect {
            if sections[i].1 - sections[i].0 != len {
                return Err(bad(&format!("section {i} has the wrong size")));
            }
        }
        Ok(SegmentReader {
            file,
            doc_count,
            term_count,
            field_totals,
            sections,
        })
    }

    fn section(&self, i: usize) -> &[u8] {
        let (a, b) = self.sections[i];
        // In bounds: checked against the payload length in `open`.
        &self.file.payload()[a..b]
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn file_len(&self) -> usize {
        self.file.file_len()
    }

    /// Docs in the segment, tombstoned ones included.
    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    pub fn term_count(&self) -> u32 {
        self.term_count
    }

    pub fn field_totals(&self) -> [u64; FIELD_COUNT] {
        self.field_totals
    }

    /// Turns a decoding failure into an error naming this file.
    pub fn corrupt(&self, m: Malformed) -> Error {
        Error::corrupt(self.path(), m.0)
    }

    pub fn kbid(&self, ord: DocOrd) -> Result<Kbid> {
        let at = ord as usize * 16;
        let s = self.section(KBIDS).get(at..at + 16);
        let s = s.ok_or_else(|| self.corrupt(Malformed("doc ordinal out of range")))?;
        let mut k = [0u8; 16];
        k.copy_from_slice(s);
        Ok(k)
    }

    /// The ordinal of `kbid`, by binary search over the kbid order section.
    pub fn ord_of(&self, kbid: &Kbid) -> Result<Option<DocOrd>> {
        let order = self.section(KBID_ORDER);
        let (mut lo, mut hi) = (0usize, self.doc_count as usize);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let ord =
                u32_at(order, mid * 4).ok_or_else(|| self.corrupt(Malformed("kbid order")))?;
            match self.kbid(ord)?.cmp(kbid) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(ord)),
            }
        }
        Ok(None)
    }

    /// Terms per field of doc `ord` (zeros for an out-of-range ordinal, which cursors never
    /// produce: they check ordinals against `doc_count`).
    #[inline]
    pub fn field_lens(&self, ord: DocOrd) -> [u32; FIELD_COUNT] {
        let s = self.section(FIELD_LENS);
        let at = ord as usize * LENS_ROW;
        std::array::from_fn(|f| u32_at(s, at + 4 * f).unwrap_or(0))
    }

    pub fn termdict(&self) -> Result<TermDictReader<'_>> {
        TermDictReader::new(
            self.section(TERM_OFFSETS),
            self.section(TERM_BYTES),
            self.section(TERM_INFOS),
            self.term_count as usize,
        )
        .map_err(|m| self.corrupt(m))
    }

    pub fn term_info(&self, term: &[u8]) -> Result<Option<TermInfo>> {
        self.termdict()?.get(term).map_err(|m| self.corrupt(m))
    }

    pub fn cursor(&self, info: TermInfo) -> Result<PostingsCursor<'_>> {
        let (postings, positions) = self.regions(info)?;
        PostingsCursor::new(postings, positions, info.df, self.doc_count)
            .map_err(|m| self.corrupt(m))
    }

    /// A cursor at the term's first doc `>= target`, unpacking no block before it.
    pub fn cursor_at(&self, info: TermInfo, target: DocOrd) -> Result<PostingsCursor<'_>> {
        let (postings, positions) = self.regions(info)?;
        PostingsCursor::starting_at(postings, positions, info.df, self.doc_count, target)
            .map_err(|m| self.corrupt(m))
    }

    /// The term's postings and positions, each running to the end of its section.
    fn regions(&self, info: TermInfo) -> Result<(&[u8], &[u8])> {
        let bad = || self.corrupt(Malformed("term postings offset out of bounds"));
        let postings = self
            .section(POSTINGS)
            .get(info.postings_off as usize..)
            .ok_or_else(bad)?;
        let positions = self
            .section(POSITIONS)
            .get(info.positions_off as usize..)
            .ok_or_else(bad)?;
        Ok((postings, positions))
    }

    /// Checks the footer's crc32 over the whole file (reads every byte).
    pub fn verify_checksum(&self) -> Result<()> {
        self.file.verify_checksum()
    }

    /// Checks the file's checksum, then decodes every term, posting and position: the deep
    /// check behind `verify`.
    pub fn check_all(&self) -> Result<()> {
        self.verify_checksum()?;
        let dict = self.termdict()?;
        let corrupt = |m: Malformed| self.corrupt(m);
        let mut prev: Option<&[u8]> = None;
        let mut buf = Vec::new();
        for i in 0..dict.len() {
            let term = dict.term(i).map_err(corrupt)?;
            if prev.is_some_and(|p| p >= term) {
                return Err(corrupt(Malformed("term dictionary not sorted")));
            }
            prev = Some(term);
            let mut c = self.cursor(dict.info(i).map_err(corrupt)?)?;
            let mut n = 0u32;
            while c.doc() != super::postings::TERMINATED {
                for f in 0..FIELD_COUNT {
                    c.positions(f, &mut buf).map_err(corrupt)?;
                    if buf.len() != c.tfs().map_err(corrupt)?[f] as usize {
                        return Err(corrupt(Malformed("positions disagree with term frequency")));
                    }
                }
                n += 1;
                c.advance().map_err(corrupt)?;
            }
            if n != c.df() {
                return Err(corrupt(Malformed(
                    "postings length disagrees with document frequency",
                )));
            }
        }
        Ok(())
    }
}
