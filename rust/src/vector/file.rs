//! The KBVX record file: `vectors.idx` and the learn-time append file share this format.
//!
//! Byte layout, exactly the seed's (all little-endian, no padding, no footer):
//!
//! ```text
//! offset  size  field
//! 0       4     magic         b"KBVX"
//! 4       1     version       u8, 1
//! 5       2     dimensions    u16
//! 7       4     record_count  u32
//! 11      R     record 0      kbid_hash u8[16], then f32[dimensions]
//! 11+R    R     record 1      ...
//! ```
//!
//! `R = 16 + 4 * dimensions`, so the file is exactly `11 + record_count * R` bytes. Records
//! are sorted by `kbid_hash` (byte-wise), strictly: no kbid appears twice, and lookup is a
//! binary search. Vectors start at odd offsets; every read of them is unaligned.
//!
//! The header has no checksum, so the file's crc32 lives in `vectors-meta.toml`. The full
//! check ([`Check::Full`]) is, in order: header length, magic, checksum (so that any
//! flipped bit is reported as such), version ([`Error::FormatVersion`]), dimensions and
//! record count against the meta file, exact file size, then strict key order. The bounded
//! check ([`Check::Bounded`]) leaves out the checksum and the key order, the two steps that
//! read every byte, so that it reads one page whatever the file's size; it is what an
//! ordinary open does (see `index`), the full check being `verify` (`kbdb check`). Every
//! later read stays inside the size validated here, so damage it misses cannot make a
//! read go out of bounds or panic.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapOptions};
use rayon::prelude::*;

use super::{record_len, KbidHash, COMPONENT_BYTES, FORMAT_VERSION, KBID_LEN};
use crate::error::{Error, Result};

/// `b"KBVX"`, the format sentinel.
pub const MAGIC: [u8; 4] = *b"KBVX";
/// Bytes of the header.
pub const HEADER_LEN: usize = 11;
/// Files above this size are checksummed in parallel pieces of this size.
const CRC_PIECE_BYTES: usize = 64 << 20;

/// The parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub dimensions: u16,
    pub record_count: u32,
}

/// What the meta file says a record file must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub dimensions: u16,
    pub record_count: u32,
    pub checksum: u32,
}

/// crc32 of `bytes`, in parallel pieces for large inputs (crc32 pieces combine exactly).
pub fn checksum(bytes: &[u8]) -> u32 {
    if bytes.len() <= CRC_PIECE_BYTES {
        return crc32fast::hash(bytes);
    }
    checksum_in_pieces(bytes, CRC_PIECE_BYTES)
}

fn checksum_in_pieces(bytes: &[u8], piece: usize) -> u32 {
    let pieces: Vec<crc32fast::Hasher> = bytes
        .par_chunks(piece)
        .map(|c| {
            let mut h = crc32fast::Hasher::new();
            h.update(c);
            h
        })
        .collect();
    let mut total = crc32fast::Hasher::new();
    for p in &pieces {
        total.combine(p);
    }
    total.finalize()
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// How much of a record file to check when opening it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Header and size against the meta file: bounded cost, one page.
    Bounded,
    /// Also the checksum and the key order: reads the whole file.
    Full,
}

/// Validates a whole record file against `expect` (see the module docs for the order).
pub fn validate(path: &Path, bytes: &[u8], expect: &Expected) -> Result<Header> {
    validate_with(path, bytes, expect, Check::Full)
}

/// [`validate`] at depth `check`.
pub fn validate_with(path: &Path, bytes: &[u8], expect: &Expected, check: Check) -> Result<Header> {
    let bad = |d: String| Error::corrupt(path, d);
    if bytes.len() < HEADER_LEN {
        return Err(bad(format!(
            "file is {} bytes, shorter than its {HEADER_LEN}-byte header",
            bytes.len()
        )));
    }
    if bytes[..4] != MAGIC {
        return Err(bad("bad magic (not a KBVX vector file)".into()));
    }
    let actual = if check == Check::Full {
        checksum(bytes)
    } else {
        expect.checksum
    };
    if actual != expect.checksum {
        return Err(bad(format!(
            "checksum mismatch (vectors-meta.toml says {:08x}, computed {actual:08x})",
            expect.checksum
        )));
    }
    let header = Header {
        version: bytes[4],
        dimensions: le_u16(bytes, 5),
        record_count: le_u32(bytes, 7),
    };
    if header.version != FORMAT_VERSION {
        return Err(Error::FormatVersion {
            path: path.to_path_buf(),
            found: u32::from(header.version),
            expected: u32::from(FORMAT_VERSION),
        });
    }
    if header.dimensions == 0 || header.dimensions != expect.dimensions {
        return Err(bad(format!(
            "header says {} dimensions, vectors-meta.toml says {}",
            header.dimensions, expect.dimensions
        )));
    }
    if header.record_count != expect.record_count {
        return Err(bad(format!(
            "header says {} records, vectors-meta.toml says {}",
            header.record_count, expect.record_count
        )));
    }
    let want = HEADER_LEN as u64
        + u64::from(header.record_count) * record_len(usize::from(header.dimensions)) as u64;
    if bytes.len() as u64 != want {
        return Err(bad(format!(
            "file is {} bytes, its header ({} records of {} dimensions) needs {want}",
            bytes.len(),
            header.record_count,
            header.dimensions
        )));
    }
    if check == Check::Bounded {
        return Ok(header);
    }
    let stride = record_len(usize::from(header.dimensions));
    let records = &bytes[HEADER_LEN..];
    let mut keys = records.chunks_exact(stride).map(|r| &r[..KBID_LEN]);
    if let Some(mut prev) = keys.next() {
        for k in keys {
            if k <= prev {
                return Err(bad(
                    "records are not in strictly ascending kbid order".into()
                ));
            }
            prev = k;
        }
    }
    Ok(header)
}

/// Asks for 2 MiB page-table entries over the map, before the checksum first touches it.
///
/// Where the page cache holds the file in 2 MiB folios (ext4 and XFS on recent kernels do
/// when it was written in large aligned writes, which [`super::Staged`] does, or read
/// ahead for a huge-page mapping), the scan then streams with 512× fewer TLB entries and
/// no hardware-prefetcher restart at every 4 KiB page: on 1M × 384 a pure read runs at
/// ~27 GB/s on one core against ~20 without (`benches/bench_vector_scan.py`). Elsewhere it is
/// a no-op; failure is ignored.
fn prefer_huge_pages(map: &Mmap) {
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    #[cfg(not(target_os = "linux"))]
    let _ = map;
}

/// Opens and maps a published index file (`vectors.idx`, an append file, `vectors.q8`),
/// with huge pages preferred: `Corrupt` when it is not a regular file or is shorter than
/// `min_len` bytes ("file is N bytes, shorter than its `what`").
pub(super) fn map_published(path: &Path, min_len: usize, what: &str) -> Result<Mmap> {
    let file = File::open(path).map_err(|e| Error::read(path, e))?;
    let stat = file.metadata().map_err(|e| Error::read(path, e))?;
    if !stat.is_file() {
        return Err(Error::corrupt(path, "not a regular file"));
    }
    let len = stat.len();
    debug_assert!(min_len > 0, "every index file has a header");
    if len < min_len as u64 {
        return Err(Error::corrupt(
            path,
            format!("file is {len} bytes, shorter than its {what}"),
        ));
    }
    // SAFETY: index files are immutable once published (written under a temporary name,
    // fsynced and renamed into place; never modified in place, only unlinked or replaced
    // by rename, which keeps this mapping's pages valid). The file is non-empty (at least
    // `min_len` bytes, checked above; every caller's header is longer than 0).
    let map = unsafe { MmapOptions::new().map(&file) }.map_err(|e| Error::io(path, e))?;
    prefer_huge_pages(&map);
    Ok(map)
}

/// A validated, memory-mapped record file.
pub struct VectorReader {
    path: PathBuf,
    map: Mmap,
    dims: usize,
    count: usize,
    checksum: u32,
}

impl VectorReader {
    /// Maps `path` and validates it fully against `expect`.
    pub fn open(path: &Path, expect: &Expected) -> Result<VectorReader> {
        VectorReader::open_with(path, expect, Check::Full)
    }

    /// Maps `path` and validates it against `expect` at depth `check`.
    pub fn open_with(path: &Path, expect: &Expected, check: Check) -> Result<VectorReader> {
        let map = map_published(path, HEADER_LEN, &format!("{HEADER_LEN}-byte header"))?;
        let header = validate_with(path, &map, expect, check)?;
        Ok(VectorReader {
            path: path.to_path_buf(),
            map,
            dims: usize::from(header.dimensions),
            count: header.record_count as usize,
            checksum: expect.checksum,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn checksum(&self) -> u32 {
        self.checksum
    }

    /// The full check of the mapped bytes (checksum and key order included).
    pub fn verify(&self) -> Result<()> {
        let expect = Expected {
            dimensions: self.dims as u16,
            record_count: self.count as u32,
            checksum: self.checksum,
        };
        validate(&self.path, &self.map, &expect).map(|_| ())
    }

    /// Bytes per record.
    pub fn stride(&self) -> usize {
        record_len(self.dims)
    }

    /// Size of the whole file.
    pub fn file_len(&self) -> usize {
        self.map.len()
    }

    /// All records, `len() * stride()` bytes (validated at open).
    pub fn records(&self) -> &[u8] {
        &self.map[HEADER_LEN..]
    }

    /// The key of record `i` (`i < len()`).
    pub fn kbid(&self, i: usize) -> &KbidHash {
        let at = HEADER_LEN + i * self.stride();
        self.map[at..at + KBID_LEN]
            .try_into()
            .expect("a 16-byte slice")
    }

    /// The little-endian `f32` bytes of record `i` (`i < len()`).
    pub fn vector_bytes(&self, i: usize) -> &[u8] {
        let at = HEADER_LEN + i * self.stride() + KBID_LEN;
        &self.map[at..at + self.dims * COMPONENT_BYTES]
    }

    /// The record index of `kbid`, by binary search.
    pub fn find(&self, kbid: &KbidHash) -> Option<usize> {
        let i = self.lower_bound(kbid);
        (i < self.count && self.kbid(i) == kbid).then_some(i)
    }

    /// The first record index whose key is not below `kbid`.
    pub fn lower_bound(&self, kbid: &KbidHash) -> usize {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.kbid(mid) < kbid {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Streams a record file: the header, then records in strictly ascending kbid order.
/// The serializer for both `vectors.idx` and the append file; also used on a `Vec<u8>`.
pub struct RecordWriter<W: Write> {
    out: W,
    path: PathBuf,
    hasher: crc32fast::Hasher,
    dims: usize,
    expected: u32,
    written: u32,
    last: Option<KbidHash>,
}

impl<W: Write> RecordWriter<W> {
    /// Writes the header of a file that will hold `record_count` records; `path` only
    /// names the target in errors.
    pub fn new(out: W, path: &Path, dimensions: u16, record_count: u32) -> Result<Self> {
        if dimensions == 0 {
            return Err(Error::InvalidArgument(
                "dimensions must be at least 1".into(),
            ));
        }
        let mut w = RecordWriter {
            out,
            path: path.to_path_buf(),
            hasher: crc32fast::Hasher::new(),
            dims: usize::from(dimensions),
            expected: record_count,
            written: 0,
            last: None,
        };
        let mut header = [0u8; HEADER_LEN];
        header[..4].copy_from_slice(&MAGIC);
        header[4] = FORMAT_VERSION;
        header[5..7].copy_from_slice(&dimensions.to_le_bytes());
        header[7..11].copy_from_slice(&record_count.to_le_bytes());
        w.write(&header)?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Appends one record; `vector` is `dimensions` little-endian `f32`s.
    pub fn push(&mut self, kbid: &KbidHash, vector: &[u8]) -> Result<()> {
        if vector.len() != self.dims * COMPONENT_BYTES {
            return Err(Error::DimensionMismatch {
                expected: self.dims,
                found: vector.len() / COMPONENT_BYTES,
            });
        }
        if self.last.is_some_and(|l| l >= *kbid) {
            return Err(Error::InvalidArgument(
                "records must be pushed in strictly ascending kbid order".into(),
            ));
        }
        if self.written == self.expected {
            return Err(Error::InvalidArgument(format!(
                "more records than the {} announced in the header",
                self.expected
            )));
        }
        self.write(kbid)?;
        self.write(vector)?;
        self.written += 1;
        self.last = Some(*kbid);
        Ok(())
    }

    /// Checks the record count and returns the sink and the file's crc32.
    pub fn finish(self) -> Result<(W, u32)> {
        if self.written != self.expected {
            return Err(Error::InvalidArgument(format!(
                "{} records written, the header announced {}",
                self.written, self.expected
            )));
        }
        Ok((self.out, self.hasher.finalize()))
    }
}

/// A whole record file in memory from `(kbid, vector)` pairs in ascending kbid order.
pub fn records_to_bytes(dimensions: u16, records: &[(KbidHash, &[u8])]) -> Result<(Vec<u8>, u32)> {
    let count = u32::try_from(records.len())
        .map_err(|_| Error::InvalidArgument("more than 2^32 - 1 records".into()))?;
    let cap = HEADER_LEN + records.len() * record_len(usize::from(dimensions));
    let mut w = RecordWriter::new(
        Vec::with_capacity(cap),
        Path::new("<memory>"),
        dimensions,
        count,
    )?;
    for (k, v) in records {
        w.push(k, v)?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<u8>, u32) {
        let v1: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|f| f.to_le_bytes()).collect();
        let v2: Vec<u8> = [3.0f32, -4.0]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        records_to_bytes(2, &[([1; 16], &v1), ([2; 16], &v2)]).unwrap()
    }

    #[test]
    fn header_and_size() {
        let (bytes, crc) = sample();
        assert_eq!(&bytes[..4], b"KBVX");
        assert_eq!(bytes.len(), HEADER_LEN + 2 * 24);
        let e = Expected {
            dimensions: 2,
            record_count: 2,
            checksum: crc,
        };
        let h = validate(Path::new("x"), &bytes, &e).unwrap();
        assert_eq!(h.record_count, 2);
        for cut in 0..bytes.len() {
            assert!(validate(Path::new("x"), &bytes[..cut], &e).is_err());
        }
    }

    #[test]
    fn writer_rejects_disorder_and_wrong_counts() {
        let v = [0u8; 8];
        let mut w = RecordWriter::new(Vec::new(), Path::new("x"), 2, 2).unwrap();
        w.push(&[2; 16], &v).unwrap();
        assert!(w.push(&[2; 16], &v).is_err());
        assert!(w.push(&[1; 16], &v).is_err());
        assert!(w.push(&[3; 16], &v[..4]).is_err());
        assert!(w.finish().is_err());
    }

    #[test]
    fn crc_pieces_combine() {
        let data: Vec<u8> = (0..100_003).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(checksum_in_pieces(&data, 4096), crc32fast::hash(&data));
        assert_eq!(checksum_in_pieces(&data, 1 << 20), crc32fast::hash(&data));
    }
}
