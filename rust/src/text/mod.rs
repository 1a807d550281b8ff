//! The analyzer: one and the same text pipeline for indexing and for queries (SPEC §4.1).
//!
//! PLACEHOLDER INTERFACE: the real pipeline (Unicode segmentation, NFKC, stop words,
//! Snowball stemming, identifier splitting, CJK bigrams) replaces the body of these
//! functions; the signatures are the contract the lexical index and the bindings use.

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

/// The analyzer. Cheap to share across threads (`Send + Sync`).
#[derive(Debug, Default)]
pub struct Analyzer {}

impl Analyzer {
    pub fn new() -> Self {
        Analyzer {}
    }

    /// A stable id of this analyzer's configuration; stored in the index manifest. A
    /// mismatch forces a rebuild.
    pub fn id(&self) -> &'static str {
        "placeholder-0"
    }

    /// Index-time analysis. Calls `sink(term, position, start, end)` for each term in text
    /// order; `start..end` are byte offsets of the source word in `text` (always on char
    /// boundaries). Positions start at 0 for each call.
    pub fn analyze(&self, text: &str, mut sink: impl FnMut(&str, u32, usize, usize)) {
        let mut pos = 0u32;
        for (start, word) in split_words(text) {
            let lower = word.to_lowercase();
            sink(&lower, pos, start, start + word.len());
            pos += 1;
        }
    }

    /// Query-time analysis: the same pipeline, plus the surface form and `optional`.
    pub fn analyze_query(&self, text: &str) -> Vec<QueryToken> {
        let mut out = Vec::new();
        self.analyze(text, |term, position, start, end| {
            out.push(QueryToken {
                term: term.to_string(),
                surface: text[start..end].to_string(),
                position,
                optional: false,
            })
        });
        out
    }
}

fn split_words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split(|c: char| !c.is_alphanumeric())
        .scan(0usize, move |offset, piece| {
            let start = *offset;
            *offset += piece.len() + 1;
            Some((start, piece))
        })
        .filter(|(_, w)| !w.is_empty())
}
