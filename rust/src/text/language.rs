//! The languages of the analyzer: one per Snowball stemmer that `rust-stemmers` ships, and
//! what each one changes in the word path (SPEC §20).
//!
//! A language fixes, for word terms (CJK runs are bigrams in every language):
//! - the Snowball stemmer;
//! - the stop words: Lucene's 33 for English (the default, unchanged since the first
//!   index format), the Snowball project's list for the languages that have one (`stopwords/`),
//!   none for the others;
//! - elision (French, Italian): a leading article or pronoun with an apostrophe is dropped
//!   (`l'ordinateur` → `ordinateur`), as Lucene's `ElisionFilter` does;
//! - accent folding after stemming (French, Spanish, Portuguese, Italian, Romanian, Greek):
//!   combining marks are removed (`développ` → `developp`), `œ` and `æ` become `oe` and
//!   `ae`, so a query typed without accents finds accented text. Stemming comes first
//!   because the Snowball rules are written for accented words. The other languages keep
//!   their marks: in German and Dutch the stemmer itself removes umlauts; in Hungarian
//!   `á é ő ű` are vowels of their own; in the Nordic languages and Turkish
//!   `å ä ö ø ç ş` are letters of their own; in Russian `й` is not `и`; in Tamil and
//!   Arabic the marks are vowels.
//!
//! Each language's analyzer id, stored in the index manifest, names the language and the
//! version of this pipeline: changing what a language does means a new id, so indexes
//! built the old way ask for a rebuild.

use rust_stemmers::Algorithm;

use crate::error::{Error, Result};

/// A language of the analyzer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    Arabic,
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
}

/// Every language, in the order of their English names.
pub const LANGUAGES: [Language; 18] = [
    Language::Arabic,
    Language::Danish,
    Language::Dutch,
    Language::English,
    Language::Finnish,
    Language::French,
    Language::German,
    Language::Greek,
    Language::Hungarian,
    Language::Italian,
    Language::Norwegian,
    Language::Portuguese,
    Language::Romanian,
    Language::Russian,
    Language::Spanish,
    Language::Swedish,
    Language::Tamil,
    Language::Turkish,
];

impl Language {
    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        match self {
            Language::Arabic => "ar",
            Language::Danish => "da",
            Language::Dutch => "nl",
            Language::English => "en",
            Language::Finnish => "fi",
            Language::French => "fr",
            Language::German => "de",
            Language::Greek => "el",
            Language::Hungarian => "hu",
            Language::Italian => "it",
            Language::Norwegian => "no",
            Language::Portuguese => "pt",
            Language::Romanian => "ro",
            Language::Russian => "ru",
            Language::Spanish => "es",
            Language::Swedish => "sv",
            Language::Tamil => "ta",
            Language::Turkish => "tr",
        }
    }

    /// The English name, lowercase: the canonical spelling in `worker.toml`.
    pub fn name(self) -> &'static str {
        match self {
            Language::Arabic => "arabic",
            Language::Danish => "danish",
            Language::Dutch => "dutch",
            Language::English => "english",
            Language::Finnish => "finnish",
            Language::French => "french",
            Language::German => "german",
            Language::Greek => "greek",
            Language::Hungarian => "hungarian",
            Language::Italian => "italian",
            Language::Norwegian => "norwegian",
            Language::Portuguese => "portuguese",
            Language::Romanian => "romanian",
            Language::Russian => "russian",
            Language::Spanish => "spanish",
            Language::Swedish => "swedish",
            Language::Tamil => "tamil",
            Language::Turkish => "turkish",
        }
    }

    /// The language named by its ISO 639-1 code or English name, in any case
    /// (`de`, `German`); an unknown name is an `InvalidArgument` that lists the valid ones.
    pub fn parse(text: &str) -> Result<Language> {
        let wanted = text.trim().to_lowercase();
        LANGUAGES
            .into_iter()
            .find(|l| l.code() == wanted || l.name() == wanted)
            .ok_or_else(|| {
                let valid: Vec<String> = LANGUAGES
                    .iter()
                    .map(|l| format!("{} ({})", l.name(), l.code()))
                    .collect();
                Error::InvalidArgument(format!(
                    "unknown language '{text}'; valid languages: {}",
                    valid.join(", ")
                ))
            })
    }

    /// The analyzer id stored in the index manifest. English keeps the id of the first
    /// index format, so existing English indexes stay valid.
    pub fn analyzer_id(self) -> &'static str {
        match self {
            Language::Arabic => "ar-snowball-v1",
            Language::Danish => "da-snowball-v1",
            Language::Dutch => "nl-snowball-v1",
            Language::English => "en-snowball-v1",
            Language::Finnish => "fi-snowball-v1",
            Language::French => "fr-snowball-v1",
            Language::German => "de-snowball-v1",
            Language::Greek => "el-snowball-v1",
            Language::Hungarian => "hu-snowball-v1",
            Language::Italian => "it-snowball-v1",
            Language::Norwegian => "no-snowball-v1",
            Language::Portuguese => "pt-snowball-v1",
            Language::Romanian => "ro-snowball-v1",
            Language::Russian => "ru-snowball-v1",
            Language::Spanish => "es-snowball-v1",
            Language::Swedish => "sv-snowball-v1",
            Language::Tamil => "ta-snowball-v1",
            Language::Turkish => "tr-snowball-v1",
        }
    }

    /// The index of this language in [`LANGUAGES`] (the per-thread caches are per language).
    pub(crate) fn ordinal(self) -> usize {
        self as usize
    }

    pub(crate) fn algorithm(self) -> Algorithm {
        match self {
            Language::Arabic => Algorithm::Arabic,
            Language::Danish => Algorithm::Danish,
            Language::Dutch => Algorithm::Dutch,
            Language::English => Algorithm::English,
            Language::Finnish => Algorithm::Finnish,
            Language::French => Algorithm::French,
            Language::German => Algorithm::German,
            Language::Greek => Algorithm::Greek,
            Language::Hungarian => Algorithm::Hungarian,
            Language::Italian => Algorithm::Italian,
            Language::Norwegian => Algorithm::Norwegian,
            Language::Portuguese => Algorithm::Portuguese,
            Language::Romanian => Algorithm::Romanian,
            Language::Russian => Algorithm::Russian,
            Language::Spanish => Algorithm::Spanish,
            Language::Swedish => Algorithm::Swedish,
            Language::Tamil => Algorithm::Tamil,
            Language::Turkish => Algorithm::Turkish,
        }
    }

    /// True if word terms have their accents folded after stemming (see the module doc).
    pub fn folds_accents(self) -> bool {
        matches!(
            self,
            Language::French
                | Language::Spanish
                | Language::Portuguese
                | Language::Italian
                | Language::Romanian
                | Language::Greek
        )
    }

    /// The elided words (before an apostrophe) dropped from the front of a word: Lucene's
    /// `FrenchAnalyzer` and `ItalianAnalyzer` article sets.
    pub(crate) fn elisions(self) -> &'static [&'static str] {
        match self {
            Language::French => &[
                "l", "m", "t", "qu", "n", "s", "j", "d", "c", "jusqu", "quoiqu", "lorsqu", "puisqu",
            ],
            Language::Italian => &[
                "c", "l", "all", "dall", "dell", "nell", "sull", "coll", "pell", "gl", "agl",
                "dagl", "degl", "negl", "sugl", "un", "m", "t", "s", "v", "d",
            ],
            _ => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Analyzer;

    fn terms(language: Language, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Analyzer::for_language(language).analyze(text, |t, _, _, _| out.push(t.to_string()));
        out
    }

    /// Inflected forms that the language's Snowball stemmer brings to one term (pairs from
    /// the Snowball project's sample vocabularies and grammar books), folded where the
    /// language folds accents.
    #[test]
    fn each_language_stems_its_inflections() {
        let cases: [(Language, &[(&str, &str)]); 18] = [
            (Language::Arabic, &[("الكتاب", "كتاب"), ("كتاب", "كتاب")]),
            (
                Language::Danish,
                &[("indtager", "indtag"), ("indtagelse", "indtag")],
            ),
            (
                Language::Dutch,
                &[("lichamelijk", "licham"), ("lichamelijke", "licham")],
            ),
            (
                Language::English,
                &[("connections", "connect"), ("connected", "connect")],
            ),
            (Language::Finnish, &[("taloissa", "talo"), ("talo", "talo")]),
            (
                Language::French,
                &[("continuait", "continu"), ("continuer", "continu")],
            ),
            (
                Language::German,
                &[("katzen", "katz"), ("katze", "katz"), ("häuser", "haus")],
            ),
            (Language::Greek, &[("δρόμοι", "δρομ"), ("δρόμος", "δρομ")]),
            (Language::Hungarian, &[("házakban", "ház"), ("ház", "ház")]),
            (
                Language::Italian,
                &[("abbandonata", "abbandon"), ("abbandonare", "abbandon")],
            ),
            (Language::Norwegian, &[("bilene", "bil"), ("bil", "bil")]),
            (
                Language::Portuguese,
                &[
                    ("quilométricas", "quilometr"),
                    ("quilométrico", "quilometr"),
                ],
            ),
            (
                Language::Romanian,
                &[("frumoasele", "frumoas"), ("frumoasă", "frumoas")],
            ),
            (Language::Russian, &[("книги", "книг"), ("книга", "книг")]),
            (Language::Spanish, &[("chicas", "chic"), ("chica", "chic")]),
            (
                Language::Swedish,
                &[("klokhet", "klok"), ("klokheten", "klok")],
            ),
            (Language::Tamil, &[("வீடுகள்", "வீடு"), ("வீடு", "வீடு")]),
            (
                Language::Turkish,
                &[("kitaplar", "kitap"), ("evlerde", "ev")],
            ),
        ];
        for (i, (language, pairs)) in cases.iter().enumerate() {
            assert_eq!(*language, LANGUAGES[i], "one case per language, in order");
            for (word, term) in *pairs {
                assert_eq!(terms(*language, word), [*term], "{language:?} {word}");
            }
        }
    }

    #[test]
    fn stop_words_drop_per_language() {
        assert_eq!(
            terms(Language::German, "die Katzen und der Hund"),
            ["katz", "hund"]
        );
        assert_eq!(
            terms(Language::French, "les chats et le chien"),
            ["chat", "chien"]
        );
        assert_eq!(
            terms(Language::Spanish, "los gatos y el perro"),
            ["gat", "perr"]
        );
        // English keeps its 33 Lucene words; German words are content words there.
        assert_eq!(terms(Language::English, "die and und"), ["die", "und"]);
    }

    #[test]
    fn accents_fold_where_the_language_folds_them() {
        for language in [Language::French, Language::Spanish, Language::Portuguese] {
            for (accented, plain) in [
                ("développement", "developpement"),
                ("canción", "cancion"),
                ("código", "codigo"),
            ] {
                assert_eq!(
                    terms(language, accented),
                    terms(language, plain),
                    "{language:?} {accented}"
                );
            }
        }
        // Folding follows stemming: an accent in a suffix the stemmer removes only when
        // written is not recovered (docs/languages.md, "Accent folding").
        assert_ne!(
            terms(Language::Portuguese, "informação"),
            terms(Language::Portuguese, "informacao")
        );
        // Stop words are dropped typed either way.
        assert!(terms(Language::French, "était etait").is_empty());
        assert_ne!(
            terms(Language::Swedish, "år"),
            terms(Language::Swedish, "ar")
        );
    }

    #[test]
    fn french_and_italian_elide_articles() {
        assert_eq!(terms(Language::French, "l'ordinateur"), ["ordin"]);
        assert_eq!(
            terms(Language::French, "l’ordinateur d’un ami"),
            ["ordin", "ami"]
        );
        assert_eq!(
            terms(Language::Italian, "dell'albero"),
            terms(Language::Italian, "albero")
        );
    }

    #[test]
    fn cjk_is_bigrams_in_every_language() {
        for language in LANGUAGES {
            assert_eq!(terms(language, "東京都"), ["東京", "京都"], "{language:?}");
        }
        assert_eq!(
            terms(Language::French, "le serveur 東京都"),
            ["serveur", "東京", "京都"]
        );
    }

    #[test]
    fn codes_and_names_parse_in_any_case() {
        for l in LANGUAGES {
            assert_eq!(Language::parse(l.code()).unwrap(), l);
            assert_eq!(Language::parse(l.name()).unwrap(), l);
            assert_eq!(Language::parse(&l.name().to_uppercase()).unwrap(), l);
        }
        assert_eq!(Language::parse(" De ").unwrap(), Language::German);
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = Language::parse("klingon").unwrap_err().to_string();
        assert!(e.contains("unknown language 'klingon'"), "{e}");
        assert!(
            e.contains("german (de)") && e.contains("french (fr)"),
            "{e}"
        );
    }

    #[test]
    fn ordinals_index_the_table_and_ids_are_distinct() {
        let mut ids = std::collections::HashSet::new();
        for (i, l) in LANGUAGES.into_iter().enumerate() {
            assert_eq!(l.ordinal(), i);
            assert!(ids.insert(l.analyzer_id()));
            assert!(l.analyzer_id().starts_with(l.code()));
        }
        assert_eq!(Language::English.analyzer_id(), "en-snowball-v1");
    }
}
