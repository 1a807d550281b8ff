//! Snowball English stemming with a per-thread cache.
//!
//! Vocabularies are Zipfian, so most tokens repeat a word already seen: a thread-local
//! map from word to stem turns the Snowball run into one hash lookup and a copy. The map
//! is per thread (so the analyzer stays `Sync` with no locks, and rayon workers never
//! contend) and bounded: when it reaches [`CACHE_CAP`] entries it is cleared, which
//! bounds memory at a few MB per thread and costs one re-warm.
//!
//! Only ASCII words of three or more letters are stemmed. Snowball English leaves words of
//! two letters alone anyway, its suffixes are all ASCII, and keeping other scripts away
//! from it keeps non-English terms exactly as written.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rust_stemmers::{Algorithm, Stemmer};

use super::stopwords::is_stop_word;

/// Entries per thread before the cache is cleared.
const CACHE_CAP: usize = 1 << 16;

/// The Snowball English stemmer behind a per-thread cache. `Send + Sync`.
pub(crate) struct CachedStemmer {
    stemmer: Stemmer,
}

type Cache = HashMap<Box<str>, Box<str>, BuildHasherDefault<FxHasher>>;

/// Per simple word as written: its term, or `None` for a stop word.
type WordCache = HashMap<Box<str>, Option<Box<str>>, BuildHasherDefault<FxHasher>>;

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    static WORDS: RefCell<WordCache> = RefCell::new(WordCache::default());
}

impl CachedStemmer {
    pub(crate) fn english() -> Self {
        CachedStemmer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// True if `word` (lowercased) goes through the stemmer at all.
    pub(crate) fn applies_to(word: &str) -> bool {
        word.len() >= 3 && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'\'')
    }

    /// The term of a simple word (`identifier::is_simple`: an ASCII letter, then
    /// lowercase ASCII letters) as written, into `out`; false for a stop word. This is
    /// the word path's whole result for such a word (NFKC and possessive stripping leave
    /// it alone; it is lowercased, dropped if a stop word, else stemmed when
    /// [`Self::applies_to`]), found with one lookup: most words of prose are simple and
    /// repeat.
    pub(crate) fn simple_term_into(&self, word: &str, out: &mut String) -> bool {
        out.clear();
        let found = WORDS.try_with(|cell| {
            let Ok(mut cache) = cell.try_borrow_mut() else {
                return None;
            };
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
        if is_stop_word(&lower) {
            return None;
        }
        if Self::applies_to(&lower) {
            return Some(self.stemmer.stem(&lower).into_owned());
        }
        Some(lower)
    }

    /// Writes the stem of `word` (lowercased, [`Self::applies_to`]) into `out`, cleared first.
    pub(crate) fn stem_into(&self, word: &str, out: &mut String) {
        out.clear();
        let cached = CACHE.try_with(|cell| {
            let Ok(mut cache) = cell.try_borrow_mut() else {
                return false;
            };
            if let Some(stem) = cache.get(word) {
                out.push_str(stem);
                return true;
            }
            let stem = self.stemmer.stem(word);
            out.push_str(&stem);
            if cache.len() >= CACHE_CAP {
                cache.clear();
            }
            cache.insert(word.into(), stem.as_ref().into());
            true
        });
        if cached != Ok(true) {
            // Thread-local storage is being torn down: stem without the cache.
            out.push_str(&self.stemmer.stem(word));
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
        CachedStemmer::english().stem_into(w, &mut out);
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
        let s = CachedStemmer::english();
        for w in ["indexing", "indexes", "indexing", "queries", "queries"] {
            let mut out = String::new();
            s.stem_into(w, &mut out);
            assert_eq!(out, s.stemmer.stem(w));
        }
    }

    #[test]
    fn simple_terms_are_the_word_paths_terms() {
        let s = CachedStemmer::english();
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
        let s = CachedStemmer::english();
        let mut out = String::new();
        for i in 0..CACHE_CAP + 10 {
            s.stem_into(&format!("word{i}"), &mut out);
        }
        assert!(CACHE.with(|c| c.borrow().len()) <= CACHE_CAP);
    }

    #[test]
    fn only_ascii_words_of_three_letters_are_stemmed() {
        assert!(CachedStemmer::applies_to("running"));
        assert!(CachedStemmer::applies_to("don't"));
        assert!(!CachedStemmer::applies_to("is"));
        assert!(!CachedStemmer::applies_to("utf8"));
        assert!(!CachedStemmer::applies_to("naïve"));
    }
}
