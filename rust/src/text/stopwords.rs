//! English stop words: exactly Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`, the
//! 33 words below. The set is part of the analyzer id (`Analyzer::id`): changing it
//! changes which terms exist in an index, so it forces a rebuild.
//!
//! The check runs on the lowercased, NFKC-normalized, *unstemmed* form, once per word or
//! identifier part. A stop word still takes a position (the caller's job), so phrase
//! queries keep their gaps.

/// Lucene's English default stop set, sorted.
pub const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// True if `w` (already lowercased) is one of [`STOP_WORDS`].
///
/// A `match` on string literals compiles to a length switch plus a few compares, which
/// beats hashing for a set this small.
pub fn is_stop_word(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "and"
            | "are"
            | "as"
            | "at"
            | "be"
            | "but"
            | "by"
            | "for"
            | "if"
            | "in"
            | "into"
            | "is"
            | "it"
            | "no"
            | "not"
            | "of"
            | "on"
            | "or"
            | "such"
            | "that"
            | "the"
            | "their"
            | "then"
            | "there"
            | "these"
            | "they"
            | "this"
            | "to"
            | "was"
            | "will"
            | "with"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_predicate_agree() {
        assert_eq!(STOP_WORDS.len(), 33);
        assert!(
            STOP_WORDS.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        for w in STOP_WORDS {
            assert!(is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn ordinary_words_are_not_stop_words() {
        for w in [
            "", "database", "i", "you", "which", "The", "THE", "from", "have", "its",
        ] {
            assert!(!is_stop_word(w), "{w}");
        }
    }
}
