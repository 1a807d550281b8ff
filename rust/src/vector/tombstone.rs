//! The tombstone file `vectors-del.<gen:x>.tomb`: kbids whose `vectors.idx` record is dead
//! (deleted, or superseded by a learn-time append).
//!
//! Payload (little-endian), then the engine footer (`format`, kind `VDEL`, version
//! [`TOMBSTONE_FORMAT_VERSION`]):
//!
//! ```text
//! 0    u32          count
//! 4    count × 16   kbid hashes, strictly ascending
//! ```
//!
//! A new file is written for every change (never edited in place); the meta file names the
//! current one and its count.

use std::path::Path;

use super::{KbidHash, KBID_LEN, TOMBSTONE_FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::format::{append_footer, validate, FileKind, FOOTER_LEN};

/// Footer kind of vector tombstone files.
pub const TOMBSTONE_KIND: FileKind = FileKind(*b"VDEL");

/// Serializes sorted, distinct kbids.
pub fn tombstones_to_bytes(kbids: &[KbidHash]) -> Vec<u8> {
    debug_assert!(kbids.windows(2).all(|w| w[0] < w[1]));
    let mut out = Vec::with_capacity(4 + kbids.len() * KBID_LEN + FOOTER_LEN);
    out.extend_from_slice(&(kbids.len() as u32).to_le_bytes());
    for k in kbids {
        out.extend_from_slice(k);
    }
    append_footer(&mut out, TOMBSTONE_KIND, TOMBSTONE_FORMAT_VERSION);
    out
}

/// Parses and validates a whole tombstone file.
pub fn parse_tombstones(path: &Path, bytes: &[u8]) -> Result<Vec<KbidHash>> {
    let p = validate(path, bytes, TOMBSTONE_KIND, TOMBSTONE_FORMAT_VERSION)?;
    let bad = |d: &str| Error::corrupt(path, d);
    if p.len() < 4 {
        return Err(bad("tombstone header truncated"));
    }
    let count = u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as u64;
    if p.len() as u64 != 4 + count * KBID_LEN as u64 {
        return Err(bad("tombstone list has the wrong size for its count"));
    }
    let kbids: Vec<KbidHash> = p[4..]
        .chunks_exact(KBID_LEN)
        .map(|c| c.try_into().expect("a 16-byte chunk"))
        .collect();
    if kbids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(bad("tombstones are not in strictly ascending kbid order"));
    }
    Ok(kbids)
}

pub fn read_tombstones(path: &Path) -> Result<Vec<KbidHash>> {
    let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
    parse_tombstones(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let kbids = vec![[1u8; 16], [2u8; 16], [9u8; 16]];
        let bytes = tombstones_to_bytes(&kbids);
        let p = Path::new("x.tomb");
        assert_eq!(parse_tombstones(p, &bytes).unwrap(), kbids);
        for cut in 0..bytes.len() {
            assert!(parse_tombstones(p, &bytes[..cut]).is_err());
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(parse_tombstones(p, &b).is_err(), "byte {i}");
        }
        let mut unsorted = vec![0u8; 0];
        unsorted.extend_from_slice(&2u32.to_le_bytes());
        unsorted.extend_from_slice(&[5u8; 16]);
        unsorted.extend_from_slice(&[4u8; 16]);
        append_footer(&mut unsorted, TOMBSTONE_KIND, TOMBSTONE_FORMAT_VERSION);
        assert!(matches!(
            parse_tombstones(p, &unsorted),
            Err(Error::Corrupt { .. })
        ));
    }
}
