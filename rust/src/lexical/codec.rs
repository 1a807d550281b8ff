//! Byte-level encoding shared by the segment sections: LEB128 varints and a bounds-checked
//! little-endian reader.
//!
//! Every read goes through [`ByteReader`], which returns `None` instead of reading past the
//! end; callers turn `None` into [`crate::Error::Corrupt`] with the file's path. This is the
//! one place where "never read out of bounds" is enforced for decoded data.

/// Appends `v` as an unsigned LEB128 varint (1–5 bytes).
#[inline]
pub fn write_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over a byte slice whose reads fail instead of panicking.
#[derive(Clone, Copy)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        ByteReader { bytes, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Reads one LEB128 varint of at most 5 bytes that fits in a u32.
    #[inline]
    pub fn varint(&mut self) -> Option<u32> {
        let mut v: u32 = 0;
        for shift in [0u32, 7, 14, 21, 28] {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            if shift == 28 && b > 0x0f {
                return None;
            }
            v |= u32::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// Skips `n` varints without decoding them.
    pub fn skip_varints(&mut self, mut n: usize) -> Option<()> {
        while n > 0 {
            let b = *self.bytes.get(self.pos)?;
            self.pos += 1;
            if b < 0x80 {
                n -= 1;
            }
        }
        Some(())
    }
}

/// Reads a little-endian u32 at `at`, or `None` when out of bounds.
#[inline]
pub fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let s = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Reads a little-endian u64 at `at`, or `None` when out of bounds.
#[inline]
pub fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let s = bytes.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Some(u64::from_le_bytes(a))
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_skip() {
        let vals = [0u32, 1, 127, 128, 16_383, 16_384, u32::MAX];
        let mut buf = Vec::new();
        for v in vals {
            write_varint(&mut buf, v);
        }
        let mut r = ByteReader::new(&buf);
        for v in vals {
            assert_eq!(r.varint(), Some(v));
        }
        assert!(r.is_empty());
        assert_eq!(r.varint(), None);
        let mut r = ByteReader::new(&buf);
        r.skip_varints(6).unwrap();
        assert_eq!(r.varint(), Some(u32::MAX));
    }

    #[test]
    fn overlong_varint_is_rejected() {
        assert_eq!(
            ByteReader::new(&[0xff, 0xff, 0xff, 0xff, 0x7f]).varint(),
            None
        );
        assert_eq!(ByteReader::new(&[0x80, 0x80]).varint(), None);
        assert_eq!(u32_at(&[1, 2, 3], 0), None);
        assert_eq!(u64_at(&[0; 8], usize::MAX - 2), None);
    }
}
