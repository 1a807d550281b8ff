//! `vectors.q8`: an optional int8 scalar-quantized copy of `vectors.idx`, scanned first to
//! pick candidates that are then rescored exactly from `vectors.idx` (`[embedding]
//! quantized_scan = true`; see `docs/embeddings.md`).
//!
//! Byte layout (little-endian; kbdb's own format, the seed does not know it):
//!
//! ```text
//! offset        size            field
//! 0             4               magic            b"KBQ8"
//! 4             1               version          u8, 1
//! 5             1               reserved         0
//! 6             2               dimensions       u16, as vectors.idx
//! 8             4               record_count     u32, as vectors.idx
//! 12            4               stride           u32, bytes per row: dimensions rounded
//!                                                up to a multiple of 64
//! 16            4               source_checksum  u32, crc32 of the vectors.idx the rows
//!                                                were quantized from
//! 20            44              reserved         0 (the header is one 64-byte line)
//! 64            4 × dims        scale            f32 per dimension, finite, >= 0
//! 64 + 4 dims   4 × dims        offset           f32 per dimension, finite
//! P             count × stride  rows             u8 codes; row i is record i of
//!                                                vectors.idx; padding codes are 0
//! P + rows      4               checksum         crc32 of every byte before it
//! P + rows + 4  4               magic            b"KBQ8" (a truncated file is caught)
//! ```
//!
//! `P = 64 + round_up(8 × dims, 64)`, so every row starts on a 64-byte boundary of the
//! (page-aligned) map. Component `j` of record `i` is approximately
//! `offset[j] + scale[j] × code[i][j]`: per-dimension affine quantization over the
//! dimension's min..max in the file, which keeps ~8 bits on every dimension however its
//! spread differs from the others'.
//!
//! **Generation**: the file names the `vectors.idx` it mirrors by that file's crc32 (the
//! same value `vectors-meta.toml` holds). A q8 whose `source_checksum` differs from the
//! current `vectors.idx` is *stale*: never scanned, and replaced at the next write (see
//! `update`). A q8 that fails any other check is [`Error::Corrupt`].
//!
//! Validation order: size, both magics, checksum (so a flipped bit anywhere is reported
//! as a checksum mismatch), version ([`Error::FormatVersion`]), source checksum (stale),
//! dimensions and count against `vectors.idx`, stride, exact size, scales and offsets.
//!
//! The scan (`scan`): the query is folded into the scales (`q'[j] = q[j] × scale[j]`; the
//! offsets add the same constant to every row, so they do not change the order) and
//! quantized symmetrically to i8; each row's score is the exact integer
//! `Σ q8[j] × code[j]` (the kernels in `kernel` agree bit for bit). The best
//! [`candidates`] rows by that score are rescored with the f32 kernel from `vectors.idx`,
//! so returned scores are the exact ones, and the result equals the exact scan whenever
//! the exact top k are among the candidates.

mod kernel;
mod scan;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use rayon::prelude::*;

use super::file::{checksum, map_published, VectorReader};
use super::COMPONENT_BYTES;
use crate::error::{Error, Result};
use crate::failpoint;
use crate::format::{create_temp, sync_dir};

pub use kernel::{available, best, scalar, Q8Kernel, Q8Query};
pub use scan::{candidates, search_quantized, search_quantized_many};

/// The file name, beside `vectors.idx`.
pub const Q8_FILE: &str = "vectors.q8";
/// `b"KBQ8"`, at the start and at the end.
pub const Q8_MAGIC: [u8; 4] = *b"KBQ8";
/// The format version (header byte 4).
pub const Q8_VERSION: u8 = 1;
/// Bytes of the header.
pub const Q8_HEADER_LEN: usize = 64;
/// Bytes of the trailer (checksum, magic).
pub const Q8_TRAILER_LEN: usize = 8;
/// Rows (and the parameter block) are padded to this many bytes.
pub const Q8_ALIGN: usize = 64;
/// Rows quantized per parallel batch when writing.
const BUILD_BATCH_ROWS: usize = 16_384;

/// Bytes per row for `dims` dimensions.
pub fn stride_for(dims: usize) -> usize {
    dims.div_ceil(Q8_ALIGN).max(1) * Q8_ALIGN
}

/// Where the rows start for `dims` dimensions.
pub fn rows_offset(dims: usize) -> usize {
    Q8_HEADER_LEN + (2 * dims * COMPONENT_BYTES).div_ceil(Q8_ALIGN) * Q8_ALIGN
}

/// Per-dimension quantization parameters: `x ≈ offset + scale × code`.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub scale: Vec<f32>,
    pub offset: Vec<f32>,
}

impl Params {
    /// The min..max range of every dimension over `count` vectors (`row(i, out)` writes
    /// vector `i` into `out`), mapped onto codes 0..=255.
    pub fn fit(dims: usize, count: usize, row: impl Fn(usize, &mut [f32]) + Sync) -> Params {
        let init = || (vec![f32::INFINITY; dims], vec![f32::NEG_INFINITY; dims]);
        let (lo, hi) = (0..count)
            .into_par_iter()
            .fold(
                || (init(), vec![0f32; dims]),
                |((mut lo, mut hi), mut v), i| {
                    row(i, &mut v);
                    for (j, &x) in v.iter().enumerate() {
                        lo[j] = lo[j].min(x);
                        hi[j] = hi[j].max(x);
                    }
                    ((lo, hi), v)
                },
            )
            .map(|(lohi, _)| lohi)
            .reduce(init, |(mut lo, mut hi), (l2, h2)| {
                for j in 0..dims {
                    lo[j] = lo[j].min(l2[j]);
                    hi[j] = hi[j].max(h2[j]);
                }
                (lo, hi)
            });
        let mut scale = vec![0f32; dims];
        let mut offset = vec![0f32; dims];
        for j in 0..dims {
            if lo[j].is_finite() && hi[j].is_finite() {
                offset[j] = lo[j];
                let s = (hi[j] - lo[j]) / 255.0;
                scale[j] = if s.is_finite() { s } else { 0.0 };
            }
        }
        Params { scale, offset }
    }

    /// The codes of one vector into `out` (`stride` bytes; padding set to 0).
    pub fn encode(&self, v: &[f32], out: &mut [u8]) {
        out.fill(0);
        for (j, &x) in v.iter().enumerate() {
            let s = self.scale[j];
            out[j] = if s > 0.0 {
                ((x - self.offset[j]) / s).round().clamp(0.0, 255.0) as u8
            } else {
                0
            };
        }
    }
}

/// The parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Q8Header {
    pub version: u8,
    pub dimensions: u16,
    pub record_count: u32,
    pub stride: u32,
    pub source_checksum: u32,
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_f32s(b: &[u8]) -> Vec<f32> {
    super::le_bytes_to_f32s(b)
}

/// Little-endian f32 bytes into `out` (`out.len()` values).
fn decode(bytes: &[u8], out: &mut [f32]) {
    for (o, c) in out.iter_mut().zip(bytes.chunks_exact(COMPONENT_BYTES)) {
        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

/// What opening a q8 file found.
pub enum Q8Open {
    /// Valid and built from the current `vectors.idx`.
    Current(Q8Reader),
    /// Valid, but built from another `vectors.idx` (this crc32): not to be used.
    Stale { source_checksum: u32 },
}

/// Validates a whole q8 file (see the module docs for the order) against the
/// `vectors.idx` it should mirror.
pub fn validate(
    path: &Path,
    bytes: &[u8],
    dims: u16,
    count: u32,
    base_checksum: u32,
) -> Result<(Q8Header, Option<Params>)> {
    let bad = |d: String| Error::corrupt(path, d);
    let min = Q8_HEADER_LEN + Q8_TRAILER_LEN;
    if bytes.len() < min {
        return Err(bad(format!(
            "file is {} bytes, shorter than its {min}-byte header and trailer",
            bytes.len()
        )));
    }
    let body = bytes.len() - Q8_TRAILER_LEN;
    if bytes[..4] != Q8_MAGIC || bytes[body + 4..] != Q8_MAGIC {
        return Err(bad(
            "bad magic (truncated or not a kbdb q8 vector file)".into()
        ));
    }
    let stored = le_u32(bytes, body);
    let actual = checksum(&bytes[..body]);
    if stored != actual {
        return Err(bad(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x})"
        )));
    }
    let h = Q8Header {
        version: bytes[4],
        dimensions: le_u16(bytes, 6),
        record_count: le_u32(bytes, 8),
        stride: le_u32(bytes, 12),
        source_checksum: le_u32(bytes, 16),
    };
    if h.version != Q8_VERSION {
        return Err(Error::FormatVersion {
            path: path.to_path_buf(),
            found: u32::from(h.version),
            expected: u32::from(Q8_VERSION),
        });
    }
    if h.source_checksum != base_checksum {
        return Ok((h, None));
    }
    if h.dimensions != dims || h.record_count != count {
        return Err(bad(format!(
            "header says {} records of {} dimensions, vectors.idx has {count} of {dims}",
            h.record_count, h.dimensions
        )));
    }
    let d = usize::from(dims);
    if h.stride as usize != stride_for(d) {
        return Err(bad(format!(
            "row stride {} is not {} for {d} dimensions",
            h.stride,
            stride_for(d)
        )));
    }
    let want = rows_offset(d) as u64 + u64::from(count) * h.stride as u64 + Q8_TRAILER_LEN as u64;
    if bytes.len() as u64 != want {
        return Err(bad(format!(
            "file is {} bytes, its header ({count} rows of {} bytes) needs {want}",
            bytes.len(),
            h.stride
        )));
    }
    let at = Q8_HEADER_LEN;
    let n = d * COMPONENT_BYTES;
    let params = Params {
        scale: le_f32s(&bytes[at..at + n]),
        offset: le_f32s(&bytes[at + n..at + 2 * n]),
    };
    if params.scale.iter().any(|s| !s.is_finite() || *s < 0.0)
        || params.offset.iter().any(|o| !o.is_finite())
    {
        return Err(bad("a scale or offset is negative, NaN or infinite".into()));
    }
    Ok((h, Some(params)))
}

/// A validated, memory-mapped `vectors.q8` of the current `vectors.idx`.
pub struct Q8Reader {
    path: PathBuf,
    map: Mmap,
    dims: usize,
    count: usize,
    stride: usize,
    rows_at: usize,
    source_checksum: u32,
    params: Params,
}

impl Q8Reader {
    /// Maps and validates `path` against `base` (the `vectors.idx` it must mirror).
    pub fn open(path: &Path, base: &VectorReader) -> Result<Q8Open> {
        // Like `vectors.idx`, the file is immutable once published.
        let map = map_published(path, Q8_HEADER_LEN + Q8_TRAILER_LEN, "header")?;
        let dims = u16::try_from(base.dims()).unwrap_or(u16::MAX);
        let count = u32::try_from(base.len()).unwrap_or(u32::MAX);
        let (h, params) = validate(path, &map, dims, count, base.checksum())?;
        let Some(params) = params else {
            return Ok(Q8Open::Stale {
                source_checksum: h.source_checksum,
            });
        };
        Ok(Q8Open::Current(Q8Reader {
            path: path.to_path_buf(),
            dims: base.dims(),
            count: base.len(),
            stride: h.stride as usize,
            rows_at: rows_offset(base.dims()),
            source_checksum: h.source_checksum,
            params,
            map,
        }))
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

    pub fn stride(&self) -> usize {
        self.stride
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// crc32 of the `vectors.idx` this file mirrors.
    pub fn source_checksum(&self) -> u32 {
        self.source_checksum
    }

    pub fn file_len(&self) -> usize {
        self.map.len()
    }

    /// All rows, `len() * stride()` bytes.
    pub fn rows(&self) -> &[u8] {
        &self.map[self.rows_at..self.rows_at + self.count * self.stride]
    }
}

/// The whole q8 image of `base`'s records as bytes (tests and small files).
pub fn q8_bytes(base: &VectorReader) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write_q8(&mut out, base)?;
    Ok(out)
}

/// Streams the q8 image of `base` into `out`.
fn write_q8(out: &mut impl Write, base: &VectorReader) -> Result<()> {
    let dims = base.dims();
    let count = base.len();
    let stride = stride_for(dims);
    let params = Params::fit(dims, count, |i, out| decode(base.vector_bytes(i), out));
    let io = |e| Error::io(base.path(), e);
    let mut hasher = crc32fast::Hasher::new();
    let mut put = |b: &[u8], out: &mut dyn Write| -> Result<()> {
        hasher.update(b);
        out.write_all(b).map_err(io)
    };
    let mut header = [0u8; Q8_HEADER_LEN];
    header[..4].copy_from_slice(&Q8_MAGIC);
    header[4] = Q8_VERSION;
    header[6..8].copy_from_slice(&(dims as u16).to_le_bytes());
    header[8..12].copy_from_slice(&(count as u32).to_le_bytes());
    header[12..16].copy_from_slice(&(stride as u32).to_le_bytes());
    header[16..20].copy_from_slice(&base.checksum().to_le_bytes());
    put(&header, out)?;
    let mut block = super::f32s_to_le_bytes(&params.scale);
    block.extend(super::f32s_to_le_bytes(&params.offset));
    block.resize(rows_offset(dims) - Q8_HEADER_LEN, 0);
    put(&block, out)?;
    let mut buf = vec![0u8; BUILD_BATCH_ROWS.min(count.max(1)) * stride];
    for start in (0..count).step_by(BUILD_BATCH_ROWS) {
        let n = (count - start).min(BUILD_BATCH_ROWS);
        buf[..n * stride]
            .par_chunks_mut(stride)
            .enumerate()
            .for_each_init(
                || vec![0f32; dims],
                |v, (j, row)| {
                    decode(base.vector_bytes(start + j), v);
                    params.encode(v, row);
                },
            );
        put(&buf[..n * stride], out)?;
    }
    let crc = hasher.finalize();
    out.write_all(&crc.to_le_bytes()).map_err(io)?;
    out.write_all(&Q8_MAGIC).map_err(io)
}

/// Writes `dir/vectors.q8` for `base` atomically (temporary name, fsync, rename, fsync
/// the directory). The caller holds the index's writer lock.
pub fn build(dir: &Path, base: &VectorReader) -> Result<()> {
    let target = dir.join(Q8_FILE);
    let (tmp, file) = create_temp(&target)?;
    let result = (|| {
        // Aligned 4 MiB writes, as for vectors.idx: the page cache can then hold the file
        // in huge folios, which the scan maps with huge pages.
        let mut w = super::update::ChunkWriter::new(file);
        write_q8(&mut w, base)?;
        w.flush().map_err(|e| Error::io(&tmp, e))?;
        w.file.sync_all().map_err(|e| Error::io(&tmp, e))?;
        failpoint::hit("q8.before_rename");
        crate::format::remove_squatting_dir(&target)?;
        fs::rename(&tmp, &target).map_err(|e| Error::io(&target, e))?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes `dir/vectors.q8` if present (best effort: a leftover one is stale anyway).
pub fn remove(dir: &Path) {
    let path = dir.join(Q8_FILE);
    if path.exists() {
        crate::format::remove_entry(&path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned() {
        assert_eq!(stride_for(384), 384);
        assert_eq!(stride_for(1), 64);
        assert_eq!(stride_for(65), 128);
        assert_eq!(rows_offset(384), 64 + 3072);
        assert_eq!(rows_offset(3) % 64, 0);
    }

    #[test]
    fn encode_round_trips_within_half_a_step() {
        let v: Vec<Vec<f32>> = (0..50)
            .map(|i| {
                (0..7)
                    .map(|j| ((i * 13 + j * 7) % 23) as f32 / 7.0 - 1.5)
                    .collect()
            })
            .collect();
        let p = Params::fit(7, v.len(), |i, out| out.copy_from_slice(&v[i]));
        let mut row = vec![0u8; 64];
        for x in &v {
            p.encode(x, &mut row);
            for j in 0..7 {
                let back = p.offset[j] + p.scale[j] * f32::from(row[j]);
                assert!((back - x[j]).abs() <= p.scale[j] * 0.5 + 1e-6);
            }
            assert!(row[7..].iter().all(|&c| c == 0));
        }
    }
}
