//! The word path's last steps for one language (`language`): elision, stop words,
//! Snowball stemming and accent folding, with a per-thread cache.
//!
//! Vocabularies are Zipfian, so most tokens repeat a word already seen: a thread-local
//! map from word to term turns the Snowball run into one hash lookup and a copy. The maps
//! are per thread (so the analyzer stays `Sync` with no locks, and rayon workers never
//! contend), one per language (analyzers of several languages may share a thread), and
//! bounded: when one reaches [`CACHE_CAP`] entries it is cleared, which bounds memory at a
//! few MB per thread and costs one re-warm.
//!
//! English stems only ASCII words of three or more letters. Snowball English leaves words
//! of two letters alone anyway, its suffixes are all ASCII, and keeping other scripts away
//! from it keeps non-English terms exactly as written. The other languages stem every
//! word of two or more letters (their suffixes are not ASCII), and leave words with
//! digits as written.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rust_stemmers::Stemmer;

use super::language::{Language, LANGUAGES};
use super::normalize::{fold_accents_into, is_mark_or_joiner};
use super::stopwords::StopWords;

/// Entries per thread and language before the cache is cleared.
const CACHE_CAP: usize = 1 << 16;

/// One language's stemmer, stop words, elisions and folding, behind a per-thread cache.
/// `Send + Sync`.
pub(crate) struct CachedStemmer {
    language: Language,
    stemmer: Stemmer,
    stop_words: StopWords,
}

type Cache = HashMap<Box<str>, Box<str>, BuildHasherDefault<FxHasher>>;

/// Per simple word as written: its term, or `None` for a stop word.
type WordCache = HashMap<Box<str>, Option<Box<str>>, BuildHasherDefault<FxHasher>>;

/// One cache per language, indexed by [`Language::ordinal`].
type PerLanguage<C> = [C; LANGUAGES.len()];

thread_local! {
    static CACHE: RefCell<PerLanguage<Cache>> = RefCell::new(Default::default());
    static WORDS: RefCell<PerLanguage<WordCache>> = RefCell::new(Default::default());
}

impl CachedStemmer {
    pub(crate) fn new(language: Language) -> Self {
        CachedStemmer {
            language,
            stemmer: Stemmer::create(language.algorithm()),
            stop_words: StopWords::of(language),
        }
    }

    pub(crate) fn language(&self) -> Language {
        self.language
    }

    /// True if `word` (lowercased, unstemmed) is a stop word of the language.
    #[inline]
    pub(crate) fn is_stop_word(&self, word: &str) -> bool {
        self.stop_words.contains(word)
    }

    /// `word` (lowercased) without an elided article or pronoun in front (`l'`, `qu'`),
    /// for the languages that elide; unchanged otherwise, and when nothing would be left.
    pub(crate) fn elide<'w>(&self, word: &'w str) -> &'w str {
        let elisions = self.language.elisions();
        if elisions.is_empty() {
            return word;
        }
        match word.split_once('\'') {
            Some((head, rest)) if !rest.is_empty() && elisions.contains(&head) => rest,
            _ => word,
        }
    }

    /// True if `word` (lowercased) goes through the stemmer at all.
    pub(crate) fn applies_to(&self, word: &str) -> bool {
        if self.language == Language::English {
            return word.len() >= 3 && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'\'');
        }
        word.chars().nth(1).is_some()
            && word
                .chars()
                .all(|c| c.is_alphabetic() || c == '\'' || is_mark_or_joiner(c))
    }

    /// The term of a simple word (`identifier::is_simple`: an ASCII letter, then
    /// lowercase ASCII letters) as written, into `out`; false for a stop word. This is
    /// the word path's whole result for such a word (NFKC, possessive stripping, elision
    /// and folding leave it alone; it is lowercased, dropped if a stop word, else stemmed
    /// when [`Self::applies_to`]), found with one lookup: most words of prose are simple
    /// and repeat.
    pub(crate) fn simple_term_into(&self, word: &str, out: &mut String) -> bool {
        out.clear();
        let found = WORDS.try_with(|cell| {
            let Ok(mut caches) = cell.try_borrow_mut() else {
                return None;
            };
            let cache = &mut caches[self.language.ordinal()];
            if let Some(term) = cache.get(word) {
                if let Some(t) = term {
                    out.push_str(t);
                }
                return Some(term.is_some());
            }
            let term = self.simple_term(word);
            if cache.len() >= CACHE_CAP {
                cache.clear();
            }
            let kept = term.is_some();
            if let Some(t) = &term {
                out.push_str(t);
            }
            cache.insert(word.into(), term.map(String::into_boxed_str));
            Some(kept)
        });
        match found {
            Ok(Some(kept)) => kept,
            // Thread-local storage is being torn down (or re-entered): no cache.
            _ => match self.simple_term(word) {
                Some(t) => {
                    out.push_str(&t);
                    true
                }
                None => false,
            },
        }
    }

    fn simple_term(&self, word: &str) -> Option<String> {
        let lower = word.to_ascii_lowercase();
        if self.is_stop_word(&lower) {
            return None;
        }
        if self.applies_to(&lower) {
            return Some(self.stemmer.stem(&lower).into_owned());
        }
        Some(lower)
    }

    /// The term of `word` (lowercased, elided, not a stop word): its stem when
    /// [`Self::applies_to`], then with its accents folded when the language folds them;
    /// `word` itself when neither applies, or when they would leave nothing (a word of
    /// combining letters only, such as Tibetan subjoined ones). `out` holds the term when
    /// it is not `word`.
    pub(crate) fn term<'a>(&self, word: &'a str, out: &'a mut String) -> &'a str {
        if self.applies_to(word) {
            self.stem_into(word, out);
        } else if self.language.folds_accents() && !word.is_ascii() {
            fold_accents_into(word, out);
        } else {
            return word;
        }
        if out.is_empty() {
            return word;
        }
        out.as_str()
    }

    /// The stem of `word`, folded when the language folds accents (uncached).
    fn stem_folded(&self, word: &str) -> String {
        let stem = self.stemmer.stem(word);
        if !self.language.folds_accents() || stem.is_ascii() {
            return stem.into_owned();
        }
        let mut folded = String::with_capacity(stem.len());
        fold_accents_into(&stem, &mut folded);
        folded
    }

    /// Writes the (folded) stem of `word` ([`Self::applies_to`]) into `out`, cleared first.
    fn stem_into(&self, word: &str, out: &mut String) {
        out.clear();
        let cached = CACHE.try_with(|cell| {
            let Ok(mut caches) = cell.try_borrow_mut() else {
                return false;
            };
            let cache = &mut caches[self.language.ordinal()];
            if let Some(stem) = cache.get(word) {
                out.push_str(stem);
                return true;
            }
            let stem = self.stem_folded(word);
            out.push_str(&stem);
            if cache.len() >= CACHE_CAP {
                cache.clear();
            }
            cache.insert(word.into(), stem.into_boxed_str());
            true
        });
        if cached != Ok(true) {
            // Thread-local storage is being torn down: stem without the cache.
            out.push_str(&self.stem_folded(word));
        }
    }
}

/// The Fx hash (rustc's `FxHasher`): a multiply-rotate per word. The keys are short
/// words from the analyzer, not attacker-chosen map keys of a server, so SipHash's
/// DoS resistance buys nothing and costs a third of the lookup.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            self.add(load_short(rest) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// The 1–7 bytes of `b` as a little-endian integer (zero-extended), without a copy into a
/// buffer: two overlapping loads whose shared bytes are equal, so OR-ing them is exact.
#[inline(always)]
pub(crate) fn load_short(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!(n < 8);
    if n >= 4 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]);
        u64::from(lo) | (u64::from(hi) << (8 * (n - 4)))
    } else if n >= 2 {
        let lo = u16::from_le_bytes([b[0], b[1]]);
        let hi = u16::from_le_bytes([b[n - 2], b[n - 1]]);
        u64::from(lo) | (u64::from(hi) << (8 * (n - 2)))
    } else if n == 1 {
        u64::from(b[0])
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stem(w: &str) -> String {
        let mut out = String::new();
        CachedStemmer::new(Language::English).stem_into(w, &mut out);
        out
    }

    #[test]
    fn short_loads_are_zero_extended_little_endian() {
        let bytes = [0x11u8, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77];
        for n in 0..8 {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(load_short(&bytes[..n]), u64::from_le_bytes(w), "{n} bytes");
        }
    }

    #[test]
    fn snowball_english() {
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("databases"), "databas");
        assert_eq!(stem("database"), "databas");
        assert_eq!(stem("connections"), "connect");
        assert_eq!(stem("generously"), "generous");
    }

    #[test]
    fn cached_and_uncached_agree() {
        let s = CachedStemmer::new(Language::English);
        for w in ["indexing", "indexes", "indexing", "queries", "queries"] {
            let mut out = String::new();
            s.stem_into(w, &mut out);
            assert_eq!(out, s.stemmer.stem(w));
        }
    }

    #[test]
    fn simple_terms_are_the_word_paths_terms() {
        let s = CachedStemmer::new(Language::English);
        for (w, want) in [
            ("Running", Some("run")),
            ("running", Some("run")),
            ("The", None),
            ("the", None),
            ("is", None),
            ("Go", Some("go")),
            ("Databases", Some("databas")),
        ] {
            for _ in 0..2 {
                let mut out = String::from("junk");
                let kept = s.simple_term_into(w, &mut out);
                assert_eq!(kept.then_some(out.as_str()), want, "{w}");
            }
        }
    }

    #[test]
    fn cache_is_bounded() {
        let s = CachedStemmer::new(Language::English);
        let mut out = String::new();
        for i in 0..CACHE_CAP + 10 {
            s.stem_into(&format!("word{i}"), &mut out);
        }
        assert!(CACHE.with(|c| c.borrow()[Language::English.ordinal()].len()) <= CACHE_CAP);
    }

    #[test]
    fn only_ascii_words_of_three_letters_are_stemmed_in_english() {
        let s = CachedStemmer::new(Language::English);
        assert!(s.applies_to("running"));
        assert!(s.applies_to("don't"));
        assert!(!s.applies_to("is"));
        assert!(!s.applies_to("utf8"));
        assert!(!s.applies_to("naïve"));
    }

    #[test]
    fn other_languages_stem_every_word_of_letters() {
        let s = CachedStemmer::new(Language::German);
        assert!(s.applies_to("häuser"));
        assert!(s.applies_to("zu"));
        assert!(!s.applies_to("x"));
        assert!(!s.applies_to("utf8"));
    }

    #[test]
    fn languages_keep_their_own_caches() {
        let en = CachedStemmer::new(Language::English);
        let de = CachedStemmer::new(Language::German);
        let mut out = String::new();
        for _ in 0..2 {
            assert!(en.simple_term_into("die", &mut out));
            assert_eq!(out, "die");
            assert!(!de.simple_term_into("die", &mut out));
            assert!(!en.simple_term_into("the", &mut out));
        }
    }

    #[test]
    fn elision_drops_the_article_only() {
        let fr = CachedStemmer::new(Language::French);
        assert_eq!(fr.elide("l'ordinateur"), "ordinateur");
        assert_eq!(fr.elide("qu'il"), "il");
        assert_eq!(fr.elide("aujourd'hui"), "aujourd'hui");
        assert_eq!(fr.elide("l'"), "l'");
        assert_eq!(
            CachedStemmer::new(Language::English).elide("l'amour"),
            "l'amour"
        );
    }

    #[test]
    fn folding_languages_fold_after_stemming() {
        let fr = CachedStemmer::new(Language::French);
        let mut a = String::new();
        let mut b = String::new();
        let accented = fr.term("développement", &mut a);
        assert_eq!(accented, fr.term("developpement", &mut b));
        assert!(accented.is_ascii(), "{accented}");
        assert_eq!(fr.term("é2", &mut a), "e2", "unstemmed terms fold too");
        assert_eq!(fr.term("\u{f99}", &mut a), "\u{f99}", "never an empty term");
        let de = CachedStemmer::new(Language::German);
        assert_eq!(
            de.term("schön", &mut a),
            "schon",
            "the German stemmer removes umlauts"
        );
        let sv = CachedStemmer::new(Language::Swedish);
        assert_eq!(sv.term("år", &mut a), "år", "Swedish keeps å");
    }
}
