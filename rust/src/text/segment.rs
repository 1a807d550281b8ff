//! Word segmentation: UAX #29 word bounds, with an ASCII fast path.
//!
//! `unicode-segmentation` runs at about 40 MB/s, which made it most of the analyzer's
//! cost on English prose and code. UAX #29 always breaks before a run of ASCII whitespace
//! and after one that is followed by another ASCII character, so the text is cut there
//! into chunks; an all-ASCII chunk is segmented by hand with the ASCII subset of the
//! rules, any other chunk (including whitespace followed by a possible combining mark) by
//! `unicode-segmentation`.
//!
//! The ASCII rules (UAX #29 WB5–WB13b restricted to ASCII): letters and digits and `_`
//! join; `:` joins two letters; `.` and `'` join two letters or two digits; `,` and `;`
//! join two digits. Everything else is a break.
//!
//! Invariant (checked against `unicode-segmentation` by a property test): the segments
//! that contain a letter or digit are exactly UAX #29's. Other segments may be dropped.

use unicode_segmentation::UnicodeSegmentation;

/// Calls `f(start, segment)` for every UAX #29 word segment of `text` that contains a
/// letter or digit, in order, and possibly for some that do not. (The pipeline walks
/// [`for_each_chunk`] and [`chunk_segments`] itself; this is their composition.)
#[cfg(test)]
pub(crate) fn for_each_segment<'t>(text: &'t str, mut f: impl FnMut(usize, &'t str)) {
    for_each_chunk(text, |start, end, ascii| {
        chunk_segments(text, start, end, ascii, &mut f)
    });
}

/// Calls `f(start, end, ascii)` for each chunk of `text` between the breaks that UAX #29
/// always makes at ASCII whitespace (see the module doc), in order. No word segment
/// crosses a chunk's edge; `ascii` says the chunk is all ASCII.
///
/// A chunk ends at a run of ASCII whitespace followed by an ASCII byte or the text's end;
/// a run followed by any other byte stays inside its chunk. Texts of a block or more are
/// walked run by run on bitmaps of their whitespace and non-ASCII bytes ([`ByteMasks`]);
/// shorter ones (queries, single runs) byte by byte, as [`for_each_chunk_bytes`], the
/// reference they are tested against.
pub(crate) fn for_each_chunk(text: &str, mut f: impl FnMut(usize, usize, bool)) {
    let b = text.as_bytes();
    if b.len() < 64 {
        return for_each_chunk_bytes(b, f);
    }
    let masks = ByteMasks::new(b);
    let mut chunk_start = 0;
    // The first non-ASCII byte at or after `chunk_start` (found again only once passed).
    let mut non_ascii = masks.next_non_ascii(0);
    let mut from = 0;
    while let Some(space) = masks.next_space(from) {
        let end = masks.run_end(space);
        if end == b.len() || !masks.is_non_ascii(end) {
            f(chunk_start, space, non_ascii >= space);
            chunk_start = end;
            if non_ascii < chunk_start {
                non_ascii = masks.next_non_ascii(chunk_start);
            }
        }
        from = end;
    }
    f(chunk_start, b.len(), non_ascii >= b.len());
}

/// [`for_each_chunk`] one byte at a time.
fn for_each_chunk_bytes(b: &[u8], mut f: impl FnMut(usize, usize, bool)) {
    let mut chunk_start = 0;
    let mut ascii = true;
    let mut j = 0;
    while j < b.len() {
        if is_space(b[j]) {
            let space = j;
            while j < b.len() && is_space(b[j]) {
                j += 1;
            }
            if j == b.len() || b[j].is_ascii() {
                f(chunk_start, space, ascii);
                chunk_start = j;
                ascii = true;
            } else {
                ascii = false;
            }
            continue;
        }
        ascii &= b[j].is_ascii();
        j += 1;
    }
    f(chunk_start, b.len(), ascii);
}

/// Which bytes of a text are ASCII whitespace ([`is_space`]) and which are not ASCII, as
/// bitmaps (bit `j % 64` of word `j / 64` for byte `j`), built 16 bytes at a time.
struct ByteMasks {
    space: Vec<u64>,
    non_ascii: Vec<u64>,
    len: usize,
}

impl ByteMasks {
    fn new(b: &[u8]) -> Self {
        let words = b.len().div_ceil(64);
        let mut masks = ByteMasks {
            space: Vec::with_capacity(words),
            non_ascii: Vec::with_capacity(words),
            len: b.len(),
        };
        // The padding, NUL, is neither whitespace nor non-ASCII.
        for block in super::blocks64(b) {
            let (space, non_ascii) = block_masks(&block);
            masks.space.push(space);
            masks.non_ascii.push(non_ascii);
        }
        masks
    }

    /// The first whitespace byte at or after `from`.
    fn next_space(&self, from: usize) -> Option<usize> {
        let at = next_bit(&self.space, from, false);
        (at < self.len).then_some(at)
    }

    /// The end of the whitespace run that holds `at`: its first non-whitespace byte, or
    /// the text's length.
    fn run_end(&self, at: usize) -> usize {
        next_bit(&self.space, at, true).min(self.len)
    }

    fn is_non_ascii(&self, at: usize) -> bool {
        self.non_ascii[at / 64] >> (at % 64) & 1 == 1
    }

    /// The first non-ASCII byte at or after `from`, or at least the text's length.
    fn next_non_ascii(&self, from: usize) -> usize {
        next_bit(&self.non_ascii, from, false)
    }
}

/// The first position at or after `from` whose bit is set (or clear, with `clear`) in
/// `words`; `words.len() * 64` if none.
fn next_bit(words: &[u64], from: usize, clear: bool) -> usize {
    let flip = if clear { u64::MAX } else { 0 };
    let mut w = from / 64;
    if w >= words.len() {
        return words.len() * 64;
    }
    let mut bits = (words[w] ^ flip) & (u64::MAX << (from % 64));
    loop {
        if bits != 0 {
            return w * 64 + bits.trailing_zeros() as usize;
        }
        w += 1;
        if w == words.len() {
            return w * 64;
        }
        bits = words[w] ^ flip;
    }
}

/// (whitespace, non-ASCII) bitmaps of one 64-byte block.
fn block_masks(block: &[u8; 64]) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
        unsafe { block_masks_sse2(block) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        block_masks_scalar(block)
    }
}

/// The reference: one byte at a time (and the code off x86_64).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn block_masks_scalar(block: &[u8; 64]) -> (u64, u64) {
    let (mut space, mut non_ascii) = (0u64, 0u64);
    for (j, &c) in block.iter().enumerate() {
        space |= u64::from(is_space(c)) << j;
        non_ascii |= u64::from(!c.is_ascii()) << j;
    }
    (space, non_ascii)
}

/// Whitespace is `\t`..=`\r` (one add and one signed compare) or a space; a non-ASCII
/// byte has its high bit set, which `movemask` gathers directly.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn block_masks_sse2(block: &[u8; 64]) -> (u64, u64) {
    use std::arch::x86_64::*;
    let (mut space, mut non_ascii) = (0u64, 0u64);
    for k in 0..4 {
        let lane: &[u8; 16] = block[16 * k..16 * k + 16].try_into().expect("16 bytes");
        // SAFETY: `lane` is 16 readable bytes; the load needs no alignment.
        let v = unsafe { _mm_loadu_si128(lane.as_ptr().cast()) };
        // Bytes 0x09..=0x0D, moved to -128..=-124.
        let shifted = _mm_add_epi8(v, _mm_set1_epi8((0x80u8 - 0x09) as i8));
        let controls = _mm_cmplt_epi8(shifted, _mm_set1_epi8((0x80u8 + 5) as i8));
        let blank = _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8));
        let sp = _mm_or_si128(controls, blank);
        space |= u64::from(_mm_movemask_epi8(sp) as u16) << (16 * k);
        non_ascii |= u64::from(_mm_movemask_epi8(v) as u16) << (16 * k);
    }
    (space, non_ascii)
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0B' | b'\x0C')
}

/// Calls `f(start, segment)` for the word segments of the chunk `text[start..end]` (one
/// that [`for_each_chunk`] gives, with its `ascii`), as [`for_each_segment`] does.
pub(crate) fn chunk_segments<'t>(
    text: &'t str,
    start: usize,
    end: usize,
    ascii: bool,
    mut f: impl FnMut(usize, &'t str),
) {
    let Some(chunk) = text.get(start..end).filter(|c| !c.is_empty()) else {
        return;
    };
    if ascii {
        ascii_words(chunk, start, &mut f);
    } else {
        for (s, seg) in chunk.split_word_bound_indices() {
            f(start + s, seg);
        }
    }
}

/// The word segments of an ASCII chunk that has no whitespace.
fn ascii_words<'t>(chunk: &'t str, base: usize, f: &mut impl FnMut(usize, &'t str)) {
    let b = chunk.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if !word(b[i]) {
            i += 1;
            continue;
        }
        let s = i;
        i += 1;
        loop {
            if i < b.len() && word(b[i]) {
                i += 1;
            } else if i + 1 < b.len() && joins(b[i - 1], b[i], b[i + 1]) {
                i += 2;
            } else {
                break;
            }
        }
        f(base + s, &chunk[s..i]);
    }
}

/// UAX #29 WB6/7 and WB11/12 for ASCII: does `mid` join `prev` and `next`?
fn joins(prev: u8, mid: u8, next: u8) -> bool {
    let letters = prev.is_ascii_alphabetic() && next.is_ascii_alphabetic();
    let digits = prev.is_ascii_digit() && next.is_ascii_digit();
    match mid {
        b':' => letters,
        b'.' | b'\'' => letters || digits,
        b',' | b';' => digits,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(text: &str) -> Vec<(usize, &str)> {
        let mut out = Vec::new();
        for_each_segment(text, |s, w| {
            if w.chars().any(char::is_alphanumeric) {
                out.push((s, w));
            }
        });
        out
    }

    /// Every ASCII class of the word-break rules, whitespace included.
    const ASCII: &str = "[a-zA-Z0-9_.,;:'\" \t\r\n\x0B\x0C()/+=#-]{0,40}";
    /// ASCII next to marks, joiners, CJK, emoji, regional indicators and Unicode spaces.
    const MIXED: &str = "[a-zA-Z0-9_.,;:' \t\n\r\u{301}\u{93F}\u{200D}\u{2019}é数据ア한ｶﾞ🎉\
                         \u{1F1FA}\u{1F1F8}\u{5D0}\u{85}\u{A0}\u{3000}-]{0,40}";

    fn reference(text: &str) -> Vec<(usize, &str)> {
        text.split_word_bound_indices()
            .filter(|(_, w)| w.chars().any(char::is_alphanumeric))
            .collect()
    }

    #[test]
    fn ascii_rules() {
        let t = "can't foo.bar a:b 3.14 1,000 x_y __init__ a..b 1.a e.g. std::io";
        assert_eq!(words(t), reference(t));
        let w: Vec<&str> = words(t).into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            w,
            [
                "can't", "foo.bar", "a:b", "3.14", "1,000", "x_y", "__init__", "a", "b", "1", "a",
                "e.g", "std", "io"
            ]
        );
    }

    #[test]
    fn whitespace_before_a_mark_goes_to_the_unicode_path() {
        for t in ["a \u{301}b", " \u{93F}x", "x\r\n\u{200D}y", "数据 库 x"] {
            assert_eq!(words(t), reference(t), "{t:?}");
        }
    }

    fn chunks(text: &str, bytewise: bool) -> Vec<(usize, usize, bool)> {
        let mut out = Vec::new();
        let f = |s, e, a| out.push((s, e, a));
        if bytewise {
            for_each_chunk_bytes(text.as_bytes(), f);
        } else {
            for_each_chunk(text, f);
        }
        out
    }

    #[test]
    fn block_masks_match_the_scalar_reference_on_every_byte() {
        for first in (0..=255u8).step_by(64) {
            let mut block = [0u8; 64];
            for (j, b) in block.iter_mut().enumerate() {
                *b = first.wrapping_add(j as u8);
            }
            assert_eq!(block_masks(&block), block_masks_scalar(&block), "{first}");
        }
    }

    #[test]
    fn chunks_of_long_texts_match_the_bytewise_walk() {
        let t = "word ".repeat(30) + "caf\u{e9} \u{301}x  \t\n end\u{a0} ";
        for cut in 0..t.len() {
            if let Some(text) = t.get(cut..) {
                assert_eq!(chunks(text, false), chunks(text, true), "{text:?}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn long_chunks_match_the_bytewise_walk(
            t in prop_oneof![
                "[a-zA-Z0-9_.,;:'\" \t\r\n\x0B\x0C()/+=#-]{60,300}",
                "[a-z \t\n\u{301}\u{93F}\u{200D}\u{2019}é数据\u{85}\u{A0}\u{3000}-]{30,200}",
                any::<String>(),
            ]
        ) {
            prop_assert_eq!(chunks(&t, false), chunks(&t, true));
        }

        #[test]
        fn long_texts_match_unicode_segmentation(
            t in prop_oneof![
                "[a-zA-Z0-9_.,;:' \t\n()-]{60,200}",
                "[a-zA-Z0-9_.,;:' \t\n\u{301}\u{93F}\u{200D}\u{2019}é数据\u{A0}-]{30,120}",
            ]
        ) {
            prop_assert_eq!(words(&t), reference(&t));
        }

        #[test]
        fn matches_unicode_segmentation(t in prop_oneof![ASCII, MIXED]) {
            prop_assert_eq!(words(&t), reference(&t));
        }

        #[test]
        fn matches_unicode_segmentation_any(t in any::<String>()) {
            prop_assert_eq!(words(&t), reference(&t));
        }
    }
}
