//! Byte-level encoding shared by the segment sections: LEB128 varints, bit-packed u32 runs
//! and a bounds-checked little-endian reader.
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

/// Bits needed for the largest of `values` (0 when all are 0).
#[cfg(test)]
pub fn bit_width(values: impl Iterator<Item = u32>) -> u32 {
    32 - values.fold(0, |a, v| a | v).leading_zeros()
}

/// Bytes that `n` values of `width` bits take packed.
#[inline]
pub fn packed_len(n: usize, width: u32) -> usize {
    (n * width as usize).div_ceil(8)
}

/// Appends `values` as `width`-bit fields, least significant bit first, padded to a byte.
/// Every value must fit in `width` bits.
pub fn pack(values: impl Iterator<Item = u32>, width: u32, out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u32);
    for v in values {
        debug_assert!(
            width == 32 || v >> width == 0,
            "{v} does not fit in {width} bits"
        );
        acc |= u64::from(v) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

/// Fills `out` from `width`-bit fields packed by [`pack`]; `None` if `bytes` is shorter than
/// [`packed_len`]. `bytes` may run past the packed values: the spare bytes let whole groups
/// of 8 values be read as 8-byte windows.
#[inline]
pub fn unpack(bytes: &[u8], width: u32, out: &mut [u32]) -> Option<()> {
    if width > 32 || bytes.len() < packed_len(out.len(), width) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    if crate::simd::avx2() {
        // SAFETY: the CPU has AVX2 (`simd::avx2` checked it).
        unsafe { unpack_avx2(bytes, width, out) };
        return Some(());
    }
    unpack_checked(bytes, width, out);
    Some(())
}

/// [`unpack_checked`] compiled for AVX2 (`crate::simd`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn unpack_avx2(bytes: &[u8], width: u32, out: &mut [u32]) {
    unpack_checked(bytes, width, out);
}

/// [`unpack`] once `width` and the length of `bytes` are checked.
#[inline(always)]
fn unpack_checked(bytes: &[u8], width: u32, out: &mut [u32]) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => unpack_fixed::<$w>(bytes, out),)*
                _ => out.fill(0),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        31 32);
}

/// Value `index` of a run packed by [`pack`], or `None` past the end of `bytes`.
#[inline]
pub fn read_packed(bytes: &[u8], index: usize, width: u32) -> Option<u32> {
    if width == 0 {
        return Some(0);
    }
    if width > 32 {
        return None;
    }
    let bit = index * width as usize;
    let last = (bit + width as usize - 1) / 8;
    bytes.get(last)?;
    let mut word = 0u64;
    for (k, &b) in bytes[bit / 8..=last].iter().enumerate() {
        word |= u64::from(b) << (8 * k);
    }
    Some(((word >> (bit % 8)) & ((1u64 << width) - 1)) as u32)
}

/// [`unpack`] for one width, so that every shift and offset is a constant. The caller
/// checked that `bytes` holds `packed_len(out.len(), W)` bytes.
#[inline(always)]
fn unpack_fixed<const W: usize>(bytes: &[u8], out: &mut [u32]) {
    let mask = (1u64 << W) - 1;
    let mut i = 0;
    // Eight values take exactly W bytes; their 8-byte windows end within W + 8 bytes.
    while i + 8 <= out.len() {
        let Some(group) = bytes.get(i / 8 * W..i / 8 * W + W + 8) else {
            break;
        };
        let dst = &mut out[i..i + 8];
        for (j, o) in dst.iter_mut().enumerate() {
            let bit = j * W;
            let mut window = [0u8; 8];
            window.copy_from_slice(&group[bit / 8..bit / 8 + 8]);
            *o = ((u64::from_le_bytes(window) >> (bit % 8)) & mask) as u32;
        }
        i += 8;
    }
    for (k, o) in out.iter_mut().enumerate().skip(i) {
        let bit = k * W;
        let mut word = 0u64;
        for (b, &byte) in bytes[bit / 8..].iter().take(5).enumerate() {
            word |= u64::from(byte) << (8 * b);
        }
        *o = ((word >> (bit % 8)) & mask) as u32;
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
        assert_eq!(r.pos(), buf.len());
        assert_eq!(r.varint(), None);
        let mut r = ByteReader::new(&buf);
        r.skip_varints(6).unwrap();
        assert_eq!(r.varint(), Some(u32::MAX));
    }

    /// Under both copies of `unpack` (`crate::simd`): the AVX2 one where the CPU has it,
    /// and the portable one.
    #[test]
    fn packing_round_trips_at_every_width() {
        round_trips_at_every_width();
        crate::simd::portable(round_trips_at_every_width);
    }

    fn round_trips_at_every_width() {
        for width in 0..=32u32 {
            for n in [0usize, 1, 7, 8, 9, 63, 128] {
                let max = if width == 0 {
                    0
                } else {
                    u32::MAX >> (32 - width)
                };
                let vals: Vec<u32> = (0..n as u32)
                    .map(|i| i.wrapping_mul(2_654_435_761) & max)
                    .collect();
                assert!(bit_width(vals.iter().copied()) <= width);
                let mut buf = Vec::new();
                pack(vals.iter().copied(), width, &mut buf);
                assert_eq!(buf.len(), packed_len(n, width));
                let mut out = vec![u32::MAX; n];
                unpack(&buf, width, &mut out).unwrap();
                assert_eq!(out, vals, "width {width}, n {n}");
                // Spare bytes after the run (the next run's) must not leak into values.
                let mut padded = buf.clone();
                padded.extend_from_slice(&[0xa5; 9]);
                unpack(&padded, width, &mut out).unwrap();
                assert_eq!(out, vals, "width {width}, n {n}, padded");
                for (i, &v) in vals.iter().enumerate() {
                    assert_eq!(read_packed(&padded, i, width), Some(v));
                    assert_eq!(read_packed(&buf, i, width), Some(v));
                }
                if !buf.is_empty() {
                    assert_eq!(unpack(&buf[..buf.len() - 1], width, &mut out), None);
                    assert_eq!(read_packed(&buf[..buf.len() - 1], n - 1, width), None);
                }
            }
        }
        assert_eq!(bit_width([0, 1, 5].into_iter()), 3);
        assert_eq!(bit_width([].into_iter()), 0);
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
