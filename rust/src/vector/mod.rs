//! The vector index: `vectors.idx` (the seed's format, byte-exact), learn-time side files,
//! `vectors-meta.toml`, SIMD dot-product kernels and the exact top-k scan.
//!
//! Files in the index directory (`.kbdb/indexes/`), all written by this module only:
//!
//! ```text
//! vectors.idx                 KBVX header + records sorted by kbid_hash (see `file`);
//!                             written by a full `write` (rebuild) and by compaction
//! vectors-meta.toml           model, dimensions, counts, watermark, checksums of the
//!                             other files, side-file names (see `meta`)
//! vectors-add.<gen:x>.idx     learn-time appends since the last compaction: the same
//!                             KBVX format, sorted, no duplicates (see `file`)
//! vectors-del.<gen:x>.tomb    kbids whose `vectors.idx` record is dead: deleted, or
//!                             superseded by an append (see `tombstone`)
//! vectors.q8                  optional int8 copy of `vectors.idx` for the quantized
//!                             scan, naming its source by crc32 (see `q8`)
//! .vectors*.tmp-<pid>-<n>     a write in progress; removed by the next write
//! ```
//!
//! The live set is `(records of vectors.idx whose kbid is not a tombstone) ∪ appends`; the
//! two never share a kbid, so a scan visits each live section exactly once. Tombstones
//! only ever name kbids present in `vectors.idx`.
//!
//! Invariants: a published file is never modified (side files carry the meta generation
//! in their name; `vectors.idx` is replaced by rename); the meta file only names files
//! that were durably written before it; integrity of `vectors.idx` and the append file is
//! their crc32 in the meta file (the seed's header has no room for one), the tombstone
//! file has the engine footer (`format`). Readers map the files and validate every size,
//! count and checksum before use, so damaged bytes give [`crate::Error::Corrupt`] or
//! [`crate::Error::FormatVersion`], never a panic or an out-of-bounds read.
//!
//! Modules: `file` (the KBVX reader and serializer), `tombstone`, `meta`, `kernel` (dot
//! products, one instruction set per file), `filter` (bitsets), `topk`, `scan` (the
//! parallel exact search), `index` (the public [`VectorIndex`] and its snapshots) and
//! `update` (append, delete, write, compact: publishing and cleanup).

mod file;
mod filter;
mod index;
pub mod kernel;
mod meta;
pub mod q8;
mod scan;
mod tombstone;
mod topk;
mod update;

pub use file::{RecordWriter, VectorReader, HEADER_LEN, MAGIC};
pub use filter::Bitset;
pub use index::{OpenMode, Q8Status, Snapshot, VectorIndex, MAX_QUERIES_PER_PASS};
pub use meta::{Meta, VectorState, META_FILE};
pub use scan::{scan, scan_many, stream_read, Part, Threads, PARALLEL_MIN_RECORDS};
pub use tombstone::{read_tombstones, tombstones_to_bytes};
pub use topk::TopK;
pub use update::{compaction_threshold, Staged};

/// The first 16 bytes of a section kbid: the record key.
pub type KbidHash = [u8; 16];
/// A dot product (cosine for L2-normalized vectors).
pub type Score = f32;

/// `vectors.idx` format version (the header's `version` byte), per the seed.
pub const FORMAT_VERSION: u8 = 1;
/// Format version of the tombstone file's footer.
pub const TOMBSTONE_FORMAT_VERSION: u32 = 1;
/// Bytes of the key at the start of every record.
pub const KBID_LEN: usize = 16;
/// Bytes per stored component (`f32`).
pub const COMPONENT_BYTES: usize = 4;

/// Record size of the seed: `16 + dimensions * 4` bytes.
pub const fn record_len(dimensions: usize) -> usize {
    KBID_LEN + dimensions * COMPONENT_BYTES
}

/// Encodes native `f32`s as the little-endian bytes the files store.
pub fn f32s_to_le_bytes(values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * COMPONENT_BYTES);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Decodes little-endian `f32` bytes (a stored vector); a trailing partial value is
/// ignored.
pub fn le_bytes_to_f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(COMPONENT_BYTES)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
