//! Per-word normalization: NFKC, apostrophe folding, English possessive stripping,
//! lowercasing and, for the languages that ask for it, accent folding. It owns no segmentation; it turns one source word into the buffers the
//! identifier splitter and the stemmer read.
//!
//! Invariants: every function writes into a caller-owned `String` (cleared or appended
//! to, as documented), so the hot path allocates nothing per token once the buffers have
//! grown. ASCII input, the common case, skips NFKC entirely (it is the identity there).
//! Case is *kept* by [`nfkc_into`] because identifier splitting needs it; [`push_lower`]
//! lowercases afterwards, part by part.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// Writes the NFKC form of `word` into `out` (cleared first), with curly and modifier
/// apostrophes folded to `'`. Case is preserved.
pub(crate) fn nfkc_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
    } else if is_nfkc_quick(word.chars()) == IsNormalized::Yes {
        out.extend(word.chars().map(fold_apostrophe));
    } else {
        out.extend(word.nfkc().map(fold_apostrophe));
    }
}

/// Folds the apostrophe look-alikes that appear inside English words to ASCII `'`.
/// (U+FF07 FULLWIDTH APOSTROPHE is already `'` after NFKC.)
fn fold_apostrophe(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
        c => c,
    }
}

/// True for characters that belong to the letter before them without being letters:
/// combining marks, ZWNJ/ZWJ and variation selectors. They never split a word or a run.
pub(crate) fn is_mark_or_joiner(c: char) -> bool {
    !c.is_ascii()
        && (is_combining_mark(c)
            || matches!(c, '\u{200C}' | '\u{200D}')
            || is_variation_selector(c))
}

/// Variation selectors (standardized and ideographic).
pub(crate) fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// Strips a trailing English possessive `'s` / `'S` (Lucene's `EnglishPossessiveFilter`),
/// unless that would leave nothing.
pub(crate) fn strip_possessive(word: &mut String) {
    let b = word.as_bytes();
    if b.len() > 2 && b[b.len() - 2] == b'\'' && matches!(b[b.len() - 1], b's' | b'S') {
        word.truncate(word.len() - 2);
    }
}

/// Appends the lowercase form of `s` to `out`. Final sigma is folded to `σ` so that a
/// word typed in lowercase matches the same word in capitals (as case folding does).
pub(crate) fn push_lower(s: &str, out: &mut String) {
    if s.is_ascii() {
        let at = out.len();
        out.push_str(s);
        out[at..].make_ascii_lowercase();
        return;
    }
    for c in s.chars() {
        for l in c.to_lowercase() {
            out.push(if l == 'ς' { 'σ' } else { l });
        }
    }
}

/// Writes `term` with its accents folded into `out` (cleared first): the canonical
/// decomposition without its combining marks (`é` → `e`, `ç` → `c`, `ά` → `α`), and the
/// ligatures `œ` and `æ` spelled out, as a user without those keys types them.
pub(crate) fn fold_accents_into(term: &str, out: &mut String) {
    out.clear();
    if term.is_ascii() {
        out.push_str(term);
        return;
    }
    for c in term.nfd() {
        match c {
            'œ' => out.push_str("oe"),
            'æ' => out.push_str("ae"),
            c if is_combining_mark(c) => {}
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(w: &str) -> String {
        let mut s = String::new();
        nfkc_into(w, &mut s);
        strip_possessive(&mut s);
        let mut out = String::new();
        push_lower(&s, &mut out);
        out
    }

    #[test]
    fn nfkc_folds_fullwidth_and_ligatures() {
        assert_eq!(norm("ＡＢＣ"), "abc");
        assert_eq!(norm("ﬁle"), "file");
        assert_eq!(norm("①"), "1");
        assert_eq!(norm("Ｒｕｓｔ１２"), "rust12");
    }

    #[test]
    fn possessives_are_stripped_with_any_apostrophe() {
        assert_eq!(norm("John's"), "john");
        assert_eq!(norm("John’s"), "john");
        assert_eq!(norm("JOHN'S"), "john");
        assert_eq!(norm("John＇s"), "john");
        assert_eq!(norm("'s"), "'s");
        assert_eq!(norm("don’t"), "don't");
    }

    #[test]
    fn lowercase_folds_final_sigma() {
        assert_eq!(norm("ΟΔΟΣ"), "οδοσ");
        assert_eq!(norm("οδος"), "οδοσ");
        assert_eq!(norm("Straße"), "straße");
    }

    #[test]
    fn accents_fold_to_the_base_letters() {
        let fold = |w: &str| {
            let mut out = String::new();
            fold_accents_into(w, &mut out);
            out
        };
        assert_eq!(fold("développ"), "developp");
        assert_eq!(fold("garçon"), "garcon");
        assert_eq!(fold("canción"), "cancion");
        assert_eq!(fold("informação"), "informacao");
        assert_eq!(fold("cœur"), "coeur");
        assert_eq!(fold("ἀγάπη"), "αγαπη");
        assert_eq!(fold("plain"), "plain");
    }

    #[test]
    fn case_is_kept_until_push_lower() {
        let mut s = String::new();
        nfkc_into("ｐａｒｓｅＨｔｔｐ", &mut s);
        assert_eq!(s, "parseHttp");
    }
}
