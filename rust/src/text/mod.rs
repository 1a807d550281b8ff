//! The analyzer: one and the same text pipeline for indexing and for queries (SPEC §4.1).
//!
//! This module owns the public contract that `lexical/` and `py/` use; the work happens in
//! its children:
//! - `segment`: UAX #29 word segmentation with an ASCII fast path;
//! - `pipeline`: word vs CJK routing, positions and offsets;
//! - `normalize`: NFKC, apostrophes, possessive `'s`, lowercase;
//! - `identifier`: camelCase / snake_case / acronym / letter-digit splitting;
//! - `language`: the languages, and what each changes in the word path;
//! - `stopwords`: Lucene's 33 English stop words, the Snowball lists of other languages;
//! - `stem`: elision, stop words, Snowball stemming and accent folding per language, with
//!   a per-thread cache;
//! - `cjk`: CJK runs as overlapping character bigrams (in every language).
//!
//! Invariants: `analyze` and `analyze_query` produce identical `(term, position)`
//! sequences for the same text; offsets are byte offsets into the caller's text, on char
//! boundaries; positions start at 0 per call and never decrease. Any change to what terms
//! come out must change [`Analyzer::id`], because indexes store it and rebuild on mismatch.

mod cjk;
mod identifier;
mod intern;
mod language;
mod normalize;
mod pipeline;
mod segment;
pub mod snippet;
mod stem;

pub(crate) use stem::FxHasher;
mod stopwords;
mod strtable;
#[cfg(test)]
mod tests;

pub use intern::TermIds;
pub use language::{Language, LANGUAGES};
pub use stopwords::{is_stop_word, STOP_WORDS};

/// Terms longer than this (in UTF-8 bytes, after normalization) are not indexed; they
/// still take a position. Keeps base64 blobs and minified code out of the dictionary.
pub const MAX_TOKEN_BYTES: usize = 64;

/// `bytes` in blocks of 64, the last one padded with NUL bytes: the unit of the byte-class
/// bitmaps (`segment::ByteMasks`, the snippet scan's `RunMasks`), bit `j` for byte `j`.
pub(crate) fn blocks64(bytes: &[u8]) -> impl Iterator<Item = [u8; 64]> + '_ {
    bytes.chunks(64).map(|block| {
        let mut padded = [0u8; 64];
        padded[..block.len()].copy_from_slice(block);
        padded
    })
}

/// One token a query produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryToken {
    /// The analyzed (normalized, stemmed) term, as stored in the index.
    pub term: String,
    /// The word as the user typed it, for `matched_terms`.
    pub surface: String,
    /// Position, with the same spacing as at index time (stop words leave gaps).
    pub position: u32,
    /// True for the whole form of a split identifier: it scores but is not required.
    pub optional: bool,
}

/// The analyzer of one [`Language`] (English by default). Cheap to share across threads
/// (`Send + Sync`): it holds the stemmer's function pointer and the stop words; the stem
/// cache is per thread.
pub struct Analyzer {
    stemmer: stem::CachedStemmer,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer").field("id", &self.id()).finish()
    }
}

impl Analyzer {
    /// The English analyzer.
    pub fn new() -> Self {
        Self::for_language(Language::English)
    }

    pub fn for_language(language: Language) -> Self {
        Analyzer {
            stemmer: stem::CachedStemmer::new(language),
        }
    }

    pub fn language(&self) -> Language {
        self.stemmer.language()
    }

    /// A stable id of this analyzer's configuration (its language and the version of the
    /// pipeline); stored in the index manifest. A mismatch asks for a rebuild.
    pub fn id(&self) -> &'static str {
        self.language().analyzer_id()
    }

    /// Index-time analysis. Calls `sink(term, position, start, end)` for each term in text
    /// order; `start..end` are byte offsets of the source word in `text` (always on char
    /// boundaries). Positions start at 0 for each call.
    pub fn analyze(&self, text: &str, mut sink: impl FnMut(&str, u32, usize, usize)) {
        pipeline::run(&self.stemmer, text, |t| {
            sink(t.text, t.position, t.start, t.end)
        });
    }

    /// Index-time analysis to term ids: [`Self::analyze`]'s terms, each as its id in
    /// `ids` (given on first sight), with its position. The same terms and positions, at
    /// one hash lookup per token for the common simple word.
    pub fn analyze_ids(&self, text: &str, ids: &mut TermIds, sink: impl FnMut(u32, u32)) {
        pipeline::run_sink(
            &self.stemmer,
            text,
            intern::IdSink {
                ids,
                sink,
                recording: None,
            },
        );
    }

    /// Query-time analysis: the same pipeline, plus the surface form and `optional`.
    pub fn analyze_query(&self, text: &str) -> Vec<QueryToken> {
        let mut out = Vec::new();
        pipeline::run(&self.stemmer, text, |t| {
            out.push(QueryToken {
                term: t.text.to_string(),
                surface: text.get(t.start..t.end).unwrap_or_default().to_string(),
                position: t.position,
                optional: t.whole,
            })
        });
        out
    }
}
