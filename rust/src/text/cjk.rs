//! CJK runs and their character bigrams.
//!
//! UAX #29 gives every Han ideograph and kana as its own word, and has no dictionary, so
//! Chinese and Japanese are indexed the way Lucene's `CJKBigramFilter` does it: a run of
//! contiguous CJK characters (Han, Hiragana, Katakana, Hangul) becomes its overlapping
//! bigrams, one position each; a run of one character becomes that unigram.
//!
//! Units are extended grapheme clusters, not code points, so a base letter and its
//! combining or voiced marks (`ｶﾞ`, a Hangul jamo sequence, an ideograph with a variation
//! selector) stay together. Each gram is NFKC-normalized with variation selectors
//! dropped; its offsets are those of its own clusters in the source text.

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};
use unicode_segmentation::UnicodeSegmentation;

use super::normalize::{is_mark_or_joiner, is_variation_selector};

/// True for the characters that form CJK runs.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF         // Hangul Jamo
        | 0x2E80..=0x2FDF       // CJK and Kangxi radicals
        | 0x3005..=0x3007       // 々 〆 〇
        | 0x3021..=0x3029       // Hangzhou numerals
        | 0x3031..=0x3035       // kana repeat marks
        | 0x303B..=0x303C       // 〻 〼
        | 0x3041..=0x309F       // Hiragana (incl. voiced marks)
        | 0x30A1..=0x30FA       // Katakana
        | 0x30FC..=0x30FF       // ー and Katakana iteration marks (not the ・ dot)
        | 0x3130..=0x318F       // Hangul compatibility jamo
        | 0x31F0..=0x31FF       // Katakana phonetic extensions
        | 0x3400..=0x4DBF       // CJK Extension A
        | 0x4E00..=0x9FFF       // CJK Unified Ideographs
        | 0xA960..=0xA97F       // Hangul Jamo Extended-A
        | 0xAC00..=0xD7FF       // Hangul syllables, Jamo Extended-B
        | 0xF900..=0xFAFF       // CJK compatibility ideographs
        | 0xFF66..=0xFF9F       // halfwidth Katakana
        | 0xFFA0..=0xFFDC       // halfwidth Hangul
        | 0x1B000..=0x1B16F     // Kana supplement / extended
        | 0x20000..=0x2FA1F     // CJK Extensions B–F, compatibility supplement
        | 0x30000..=0x323AF     // CJK Extensions G, H
    )
}

/// Marks that continue an open run: combining marks, joiners, variation selectors.
pub(crate) fn continues_run(c: char) -> bool {
    is_mark_or_joiner(c)
}

/// Calls `emit(gram, start, end)` for each gram of the run `run` (whose first byte is at
/// `base` in the source text), in order. `bounds` and `buf` are scratch buffers.
pub(crate) fn grams(
    run: &str,
    base: usize,
    bounds: &mut Vec<usize>,
    buf: &mut String,
    mut emit: impl FnMut(&str, usize, usize),
) {
    bounds.clear();
    bounds.extend(run.grapheme_indices(true).map(|(i, _)| i));
    bounds.push(run.len());
    let clean =
        is_nfkc_quick(run.chars()) == IsNormalized::Yes && !run.chars().any(is_variation_selector);
    let mut one = |s: usize, e: usize| {
        let gram = &run[s..e];
        if clean {
            emit(gram, base + s, base + e);
        } else {
            buf.clear();
            buf.extend(gram.nfkc().filter(|&c| !is_variation_selector(c)));
            emit(buf, base + s, base + e);
        }
    };
    match bounds.len() {
        0 | 1 => {}
        2 => one(bounds[0], bounds[1]),
        _ => {
            for w in bounds.windows(3) {
                one(w[0], w[2]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(run: &str) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        grams(run, 10, &mut Vec::new(), &mut String::new(), |g, s, e| {
            out.push((g.to_string(), s, e))
        });
        out
    }

    fn terms(run: &str) -> Vec<String> {
        all(run).into_iter().map(|t| t.0).collect()
    }

    #[test]
    fn bigrams_overlap() {
        assert_eq!(terms("数据库"), ["数据", "据库"]);
        assert_eq!(terms("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(terms("한국어"), ["한국", "국어"]);
    }

    #[test]
    fn offsets_are_source_bytes() {
        assert_eq!(
            all("数据库"),
            [("数据".into(), 10, 16), ("据库".into(), 13, 19)]
        );
    }

    #[test]
    fn single_char_is_a_unigram() {
        assert_eq!(terms("库"), ["库"]);
        assert!(terms("").is_empty());
    }

    #[test]
    fn clusters_are_normalized() {
        // Halfwidth katakana with a voiced mark is one cluster, NFKC-composed.
        assert_eq!(terms("ｶﾞｷ"), ["ガキ"]);
        // A compatibility ideograph maps to its unified form.
        assert_eq!(terms("\u{F900}"), ["\u{8C48}"]);
        // Variation selectors are dropped.
        assert_eq!(terms("葛\u{E0100}城"), ["葛城"]);
    }

    #[test]
    fn classification() {
        for c in ['数', 'あ', 'ア', 'ｱ', '한', 'ー', '々', '𠀀'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', '1', '。', '，', '・', 'Ａ', ' '] {
            assert!(!is_cjk(c), "{c}");
        }
    }
}
