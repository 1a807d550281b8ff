//! Term ids for one indexing batch: the analyzer hands the indexer dense `u32` ids instead
//! of strings, so a token costs one hash lookup, not two (the analyzer's word cache, then
//! the indexer's term map) plus a copy of the term.
//!
//! Three maps, from the coarsest unit the analysis can be replayed for to the finest:
//! - `chunks`: an all-ASCII whitespace-delimited chunk (`cells,`, `(DNA)`, `the`) to the
//!   terms it yields, as (id, position offset) runs in `spans`, and the positions it takes.
//!   Only chunks of at most [`CHUNK_MAX_BYTES`]: longer ones rarely repeat.
//!   A chunk's terms depend on the chunk alone, and prose repeats its chunks, so most
//!   text becomes one lookup per chunk. Bounded: cleared at [`CHUNK_CAP`] entries.
//! - `words`: a simple word *as written* (`The`, `cells`) to its term's id (or [`STOP`]),
//!   for the words of chunks seen for the first time.
//! - `terms`: a term to its id, which every other path (split identifiers, non-ASCII
//!   words, CJK grams) goes through.
//!
//! Ids are given in order of first appearance, `0..len()`.

use super::pipeline::{Sink, Term};
use super::stem::CachedStemmer;
use super::strtable::{Found, StrTable};

/// `words` value of a stop word.
const STOP: u32 = u32::MAX;

/// The term id of the simple word `word` as written: from `words`, or, the first time,
/// its term (`stemmer.simple_term_into`, in `scratch`) given an id by `term_id` and the
/// word added; [`STOP`] for a stop word.
#[inline]
fn simple_word_id(
    words: &mut StrTable<u32>,
    stemmer: &CachedStemmer,
    word: &str,
    scratch: &mut String,
    term_id: impl FnOnce(&str) -> u32,
) -> u32 {
    match words.find(word) {
        Found::At(i) => words.value(i),
        Found::Vacant { slot, hash } => {
            let id = if stemmer.simple_term_into(word, scratch) {
                term_id(scratch)
            } else {
                STOP
            };
            words.insert_vacant(word, slot, hash, id);
            id
        }
    }
}
/// Chunks remembered at most; the cache is cleared when it is full (a few tens of MB).
const CHUNK_CAP: usize = 1 << 18;
/// Longer chunks (URLs, minified code) rarely repeat: they are analyzed, not remembered.
const CHUNK_MAX_BYTES: usize = 48;

/// Where a chunk's terms are in `spans`, and how many positions it takes.
#[derive(Clone, Copy)]
struct ChunkTerms {
    start: u32,
    len: u32,
    advance: u32,
}

/// The term ids of one batch; see the module doc.
#[derive(Default)]
pub struct TermIds {
    chunks: StrTable<ChunkTerms>,
    /// (term id, position offset from the chunk's first position)
    spans: Vec<(u32, u32)>,
    words: StrTable<u32>,
    /// Term `id` is key `id`.
    terms: StrTable<()>,
}

impl TermIds {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `term`, given it on first sight.
    #[inline]
    pub fn id(&mut self, term: &str) -> u32 {
        let (id, _) = self.terms.insert(term, ());
        // Fewer than 2^32 - 1 keys (the table checks), so never `STOP`.
        id as u32
    }

    /// Distinct terms so far.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.len() == 0
    }

    /// Term `id`.
    #[inline]
    pub fn term(&self, id: u32) -> &str {
        self.terms.key(id as usize)
    }
}

/// The walk's sink for [`super::Analyzer::analyze_ids`].
pub(crate) struct IdSink<'a, F> {
    pub ids: &'a mut TermIds,
    pub sink: F,
    /// While a chunk is being analyzed for the cache: its first position and where its
    /// terms start in `spans`.
    pub recording: Option<(u32, usize)>,
}

impl<F: FnMut(u32, u32)> IdSink<'_, F> {
    #[inline]
    fn emit(&mut self, id: u32, position: u32) {
        if let Some((base, _)) = self.recording {
            self.ids.spans.push((id, position - base));
        }
        (self.sink)(id, position);
    }
}

impl<F: FnMut(u32, u32)> Sink for IdSink<'_, F> {
    #[inline]
    fn term(&mut self, t: Term<'_>) {
        let id = self.ids.id(t.text);
        self.emit(id, t.position);
    }

    #[inline]
    fn simple(
        &mut self,
        stemmer: &CachedStemmer,
        word: &str,
        scratch: &mut String,
        (position, _, _): (u32, usize, usize),
    ) {
        let terms = &mut self.ids.terms;
        let id = simple_word_id(&mut self.ids.words, stemmer, word, scratch, |t| {
            // Fewer than 2^32 - 1 keys (the table checks), so never `STOP`.
            terms.insert(t, ()).0 as u32
        });
        if id != STOP {
            self.emit(id, position);
        }
    }

    #[inline]
    fn replay(&mut self, chunk: &str, position: u32) -> Option<u32> {
        let c = self.ids.chunks.get(chunk)?;
        let spans = &self.ids.spans[c.start as usize..(c.start + c.len) as usize];
        for &(id, offset) in spans {
            (self.sink)(id, position.saturating_add(offset));
        }
        Some(c.advance)
    }

    #[inline]
    fn begin_chunk(&mut self, chunk: &str, position: u32) -> bool {
        if chunk.len() > CHUNK_MAX_BYTES {
            return false;
        }
        if self.ids.chunks.len() >= CHUNK_CAP {
            self.ids.chunks.clear();
            self.ids.spans.clear();
        }
        self.recording = Some((position, self.ids.spans.len()));
        true
    }

    #[inline]
    fn end_chunk(&mut self, chunk: &str, advance: u32) {
        let Some((_, start)) = self.recording.take() else {
            return;
        };
        let len = self.ids.spans.len() - start;
        if let (Ok(start), Ok(len)) = (u32::try_from(start), u32::try_from(len)) {
            let c = ChunkTerms {
                start,
                len,
                advance,
            };
            self.ids.chunks.insert(chunk, c);
        }
    }
}
