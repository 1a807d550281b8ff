//! The analysis walk: one pass over the text that segments it, routes each piece to the
//! word path or the CJK path, and assigns positions.
//!
//! - Segmentation is UAX #29 word bounds (`segment`). A segment is split further where it switches
//!   between CJK and non-CJK characters (UAX #29 joins Hangul with Latin letters, and
//!   `_` with Katakana). Contiguous CJK characters, across segments, form one run.
//! - A non-CJK piece with a letter or digit is a *word*: NFKC, apostrophes, possessive,
//!   identifier split, then per part lowercase, elision, stop word check, stemming and
//!   accent folding (the last three per language, `stem`). A split
//!   identifier also yields its *whole form* (the lowercased parts concatenated,
//!   unstemmed) at its first part's position, flagged `whole`, before its parts.
//! - Positions: each word part, each stop word, each skipped term and each CJK gram takes
//!   one position; the whole form shares one. Offsets are source-text bytes: the whole
//!   word for word terms, the gram's own characters for CJK.
//! - Length: a term over `MAX_TOKEN_BYTES` is skipped but keeps its position. A word over
//!   it whose parts average under [`MIN_MEAN_PART_BYTES`] (base64, minified code) is
//!   skipped whole, as one position, rather than shredded into junk parts.
//!
//! Invariants (checked by the property tests): `start < end <= text.len()`, both on char
//! boundaries; positions never decrease; no input panics.

use super::cjk;
use super::identifier::{self, Part};
use super::normalize::{nfkc_into, push_lower, strip_possessive};
use super::segment::{chunk_segments, for_each_chunk};
use super::stem::CachedStemmer;
use super::MAX_TOKEN_BYTES;

/// A long word (over `MAX_TOKEN_BYTES`) is kept as parts only if they average at least
/// this many bytes: `test_parser_handles_unicode_…` passes, base64 (≈2) does not.
const MIN_MEAN_PART_BYTES: usize = 3;

/// One emitted term.
pub(crate) struct Term<'a> {
    pub text: &'a str,
    pub position: u32,
    pub start: usize,
    pub end: usize,
    /// The whole form of a split identifier.
    pub whole: bool,
}

/// Where the walk's terms go. Every closure over [`Term`] is one; the indexer's
/// [`super::TermIds`] sink is the other, which turns a simple word into a term id in one
/// lookup of the word as written.
pub(crate) trait Sink {
    fn term(&mut self, t: Term<'_>);

    /// A simple word (`identifier::is_simple`, at most `MAX_TOKEN_BYTES`) as written, at
    /// `position`. It yields the term `stemmer.simple_term_into` gives, or nothing for a
    /// stop word; this default finds it so and passes it on. `scratch` is free to use.
    #[inline]
    fn simple(
        &mut self,
        stemmer: &CachedStemmer,
        word: &str,
        scratch: &mut String,
        (position, start, end): (u32, usize, usize),
    ) {
        if stemmer.simple_term_into(word, scratch) {
            self.term(Term {
                text: scratch,
                position,
                start,
                end,
                whole: false,
            });
        }
    }

    /// A sink may remember what an all-ASCII chunk (a whitespace-delimited piece of text,
    /// see `segment::for_each_chunk`) yields: its terms depend on the chunk alone. If it
    /// has `chunk`, it emits the chunk's terms at `position` onwards and returns how many
    /// positions the chunk takes; otherwise `None`, and the walk analyzes it.
    #[inline]
    fn replay(&mut self, _chunk: &str, _position: u32) -> Option<u32> {
        None
    }

    /// Called before the walk analyzes an all-ASCII `chunk` whose first position is
    /// `position`; true asks for [`Sink::end_chunk`] after its terms.
    #[inline]
    fn begin_chunk(&mut self, _chunk: &str, _position: u32) -> bool {
        false
    }

    /// The chunk that [`Sink::begin_chunk`] announced is done; it took `advance`
    /// positions.
    #[inline]
    fn end_chunk(&mut self, _chunk: &str, _advance: u32) {}
}

impl<F: FnMut(Term<'_>)> Sink for F {
    #[inline]
    fn term(&mut self, t: Term<'_>) {
        self(t)
    }
}

/// Runs the pipeline over `text`, calling `sink` per term in text order.
pub(crate) fn run(stemmer: &CachedStemmer, text: &str, sink: impl FnMut(Term<'_>)) {
    walk(stemmer, text, None, sink);
}

/// [`run`] with any [`Sink`].
pub(crate) fn run_sink(stemmer: &CachedStemmer, text: &str, sink: impl Sink) {
    walk(stemmer, text, None, sink);
}

/// As [`run`], but an ASCII segment that is a simple word (`identifier::is_simple`) for
/// which `skip` returns true is passed over unanalyzed (it still takes its one position).
/// Snippets use this to analyze only the words that can produce a query term.
pub(crate) fn run_skipping(
    stemmer: &CachedStemmer,
    text: &str,
    skip: Option<&dyn Fn(&str) -> bool>,
    sink: impl FnMut(Term<'_>),
) {
    walk(stemmer, text, skip, sink);
}

fn walk(stemmer: &CachedStemmer, text: &str, skip: Option<&dyn Fn(&str) -> bool>, sink: impl Sink) {
    let mut walk = Walk {
        text,
        stemmer,
        skip,
        sink,
        pos: 0,
        run: None,
        norm: String::new(),
        lower: String::new(),
        stem: String::new(),
        whole: String::new(),
        parts: Vec::new(),
        bounds: Vec::new(),
    };
    for_each_chunk(text, |start, end, ascii| {
        // An ASCII chunk after an open CJK run would close it: not a chunk on its own.
        if ascii && start < end && walk.run.is_none() {
            let chunk = &text[start..end];
            let position = walk.pos;
            if let Some(advance) = walk.sink.replay(chunk, position) {
                walk.pos = position.saturating_add(advance);
                return;
            }
            if walk.sink.begin_chunk(chunk, position) {
                chunk_segments(text, start, end, ascii, |s, seg| walk.segment(s, seg));
                walk.sink.end_chunk(chunk, walk.pos - position);
                return;
            }
        }
        chunk_segments(text, start, end, ascii, |s, seg| walk.segment(s, seg));
    });
    walk.flush_run();
}

struct Walk<'t, 's, F> {
    text: &'t str,
    stemmer: &'s CachedStemmer,
    skip: Option<&'s dyn Fn(&str) -> bool>,
    sink: F,
    pos: u32,
    /// The open CJK run, as a byte range of `text`.
    run: Option<(usize, usize)>,
    // Scratch buffers, reused for every word so the steady state allocates nothing.
    norm: String,
    lower: String,
    stem: String,
    whole: String,
    parts: Vec<Part>,
    bounds: Vec<usize>,
}

impl<F: Sink> Walk<'_, '_, F> {
    fn segment(&mut self, start: usize, seg: &str) {
        if seg.is_ascii() {
            self.flush_run();
            if seg.bytes().any(|b| b.is_ascii_alphanumeric()) {
                if self
                    .skip
                    .is_some_and(|f| identifier::is_simple(seg) && f(seg))
                {
                    self.pos = self.pos.saturating_add(1);
                    return;
                }
                self.word(start, start + seg.len());
            }
            return;
        }
        let mut other: Option<usize> = None;
        for (i, c) in seg.char_indices() {
            let at = start + i;
            let in_run =
                cjk::is_cjk(c) || (other.is_none() && self.run.is_some() && cjk::continues_run(c));
            if !in_run {
                if other.is_none() {
                    self.flush_run();
                    other = Some(at);
                }
                continue;
            }
            if let Some(o) = other.take() {
                self.word_if_alphanumeric(o, at);
            }
            let end = at + c.len_utf8();
            match &mut self.run {
                Some((_, e)) if *e == at => *e = end,
                _ => {
                    self.flush_run();
                    self.run = Some((at, end));
                }
            }
        }
        if let Some(o) = other {
            self.word_if_alphanumeric(o, start + seg.len());
        }
    }

    fn word_if_alphanumeric(&mut self, start: usize, end: usize) {
        if self.text[start..end].chars().any(char::is_alphanumeric) {
            self.word(start, end);
        }
    }

    fn flush_run(&mut self) {
        let Some((start, end)) = self.run.take() else {
            return;
        };
        let Walk {
            text,
            sink,
            pos,
            bounds,
            whole: buf,
            ..
        } = self;
        cjk::grams(&text[start..end], start, bounds, buf, |gram, s, e| {
            if gram.len() <= MAX_TOKEN_BYTES {
                sink.term(Term {
                    text: gram,
                    position: *pos,
                    start: s,
                    end: e,
                    whole: false,
                });
            }
            *pos = pos.saturating_add(1);
        });
    }

    /// The word `text[start..end]`, which contains a letter or digit.
    fn word(&mut self, start: usize, end: usize) {
        let raw = &self.text[start..end];
        if raw.len() <= MAX_TOKEN_BYTES && identifier::is_simple(raw) {
            // The common case, in one cache lookup: see `CachedStemmer::simple_term_into`.
            let position = self.pos;
            self.pos = self.pos.saturating_add(1);
            self.sink
                .simple(self.stemmer, raw, &mut self.stem, (position, start, end));
            return;
        }
        nfkc_into(raw, &mut self.norm);
        strip_possessive(&mut self.norm);
        if identifier::is_simple(&self.norm) {
            self.lower.clear();
            push_lower(&self.norm, &mut self.lower);
            self.part(self.pos, start, end);
            self.pos = self.pos.saturating_add(1);
            return;
        }
        identifier::split(&self.norm, &mut self.parts);
        let n = self.parts.len();
        if n == 0 {
            return;
        }
        if self.norm.len() > MAX_TOKEN_BYTES {
            let part_bytes: usize = self.parts.iter().map(|&(s, e)| e - s).sum();
            if n == 1 || part_bytes < MIN_MEAN_PART_BYTES * n {
                self.pos = self.pos.saturating_add(1);
                return;
            }
        }
        if n >= 2 {
            self.whole.clear();
            for &(s, e) in &self.parts {
                push_lower(&self.norm[s..e], &mut self.whole);
            }
            if self.whole.len() <= MAX_TOKEN_BYTES {
                self.sink.term(Term {
                    text: &self.whole,
                    position: self.pos,
                    start,
                    end,
                    whole: true,
                });
            }
        }
        for i in 0..n {
            let (s, e) = self.parts[i];
            self.lower.clear();
            push_lower(&self.norm[s..e], &mut self.lower);
            self.part(self.pos, start, end);
            self.pos = self.pos.saturating_add(1);
        }
    }

    /// Emits the part in `self.lower` (stop words and over-long parts emit nothing).
    fn part(&mut self, position: u32, start: usize, end: usize) {
        let stemmer = self.stemmer;
        let lower = stemmer.elide(self.lower.as_str());
        if lower.len() > MAX_TOKEN_BYTES || stemmer.is_stop_word(lower) {
            return;
        }
        let term = stemmer.term(lower, &mut self.stem);
        self.sink.term(Term {
            text: term,
            position,
            start,
            end,
            whole: false,
        });
    }
}
