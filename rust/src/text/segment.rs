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
pub(crate) fn for_each_chunk(text: &str, mut f: impl FnMut(usize, usize, bool)) {
    let b = text.as_bytes();
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

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
