//! Stop words per language. English: exactly Lucene's
//! `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`, the 33 words below. Danish, Dutch, Finnish,
//! French, German, Hungarian, Italian, Norwegian, Portuguese, Russian, Spanish and
//! Swedish: the Snowball project's lists, the files beside this module, copied unchanged
//! (source and BSD license in `README.md` here). The other languages have none.
//! A set is part of the analyzer id (`Analyzer::id`): changing it changes which terms
//! exist in an index, so it forces a rebuild.
//!
//! The check runs on the lowercased, NFKC-normalized, *unstemmed* form, once per word or
//! identifier part. For a language that folds accents, the set also holds each word's
//! folded form, so that `très` typed as `tres` is a stop word too. A stop word still takes
//! a position (the caller's job), so phrase queries keep their gaps.

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use super::language::Language;
use super::normalize::fold_accents_into;
use super::stem::FxHasher;

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

/// The stop words of one language.
pub(crate) enum StopWords {
    /// [`STOP_WORDS`], checked by [`is_stop_word`].
    English,
    /// A Snowball list (empty for a language without one).
    Set(HashSet<Box<str>, BuildHasherDefault<FxHasher>>),
}

impl StopWords {
    pub(crate) fn of(language: Language) -> StopWords {
        if language == Language::English {
            return StopWords::English;
        }
        let mut set = HashSet::default();
        let mut folded = String::new();
        for w in snowball_list(language).into_iter().flat_map(parse_list) {
            if language.folds_accents() {
                fold_accents_into(w, &mut folded);
                set.insert(folded.as_str().into());
            }
            set.insert(w.into());
        }
        StopWords::Set(set)
    }

    /// True if `w` (lowercased, unstemmed) is a stop word.
    #[inline]
    pub(crate) fn contains(&self, w: &str) -> bool {
        match self {
            StopWords::English => is_stop_word(w),
            StopWords::Set(set) => !set.is_empty() && set.contains(w),
        }
    }
}

/// The Snowball stop word file of `language`, if the Snowball project publishes one.
fn snowball_list(language: Language) -> Option<&'static str> {
    Some(match language {
        Language::Danish => include_str!("danish.txt"),
        Language::Dutch => include_str!("dutch.txt"),
        Language::Finnish => include_str!("finnish.txt"),
        Language::French => include_str!("french.txt"),
        Language::German => include_str!("german.txt"),
        Language::Hungarian => include_str!("hungarian.txt"),
        Language::Italian => include_str!("italian.txt"),
        Language::Norwegian => include_str!("norwegian.txt"),
        Language::Portuguese => include_str!("portuguese.txt"),
        Language::Russian => include_str!("russian.txt"),
        Language::Spanish => include_str!("spanish.txt"),
        Language::Swedish => include_str!("swedish.txt"),
        _ => return None,
    })
}

/// The words of a Snowball stop word file: `|` starts a comment, words are separated by
/// white space.
fn parse_list(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .flat_map(|line| line.split('|').next().unwrap_or("").split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::language::LANGUAGES;

    #[test]
    fn snowball_lists_parse() {
        for (language, n) in [
            (Language::German, 231),
            (Language::French, 154),
            (Language::Spanish, 308),
            (Language::Russian, 159),
            (Language::Finnish, 230),
        ] {
            let words: HashSet<&str> = snowball_list(language)
                .into_iter()
                .flat_map(parse_list)
                .collect();
            assert_eq!(words.len(), n, "{language:?}");
            assert!(words
                .iter()
                .all(|w| !w.contains('|') && w.chars().all(char::is_alphabetic)));
        }
    }

    #[test]
    fn each_language_has_its_own_set() {
        let de = StopWords::of(Language::German);
        assert!(de.contains("und") && de.contains("über") && !de.contains("the"));
        let fr = StopWords::of(Language::French);
        assert!(fr.contains("le") && fr.contains("était") && fr.contains("etait"));
        assert!(!fr.contains("ordinateur"));
        let en = StopWords::of(Language::English);
        assert!(en.contains("the") && !en.contains("und"));
        let tr = StopWords::of(Language::Turkish);
        assert!(!tr.contains("ve"));
        for l in LANGUAGES.into_iter().filter(|&l| l != Language::English) {
            let StopWords::Set(set) = StopWords::of(l) else {
                panic!("{l:?} is not English")
            };
            assert_eq!(snowball_list(l).is_some(), !set.is_empty(), "{l:?}");
        }
    }

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
