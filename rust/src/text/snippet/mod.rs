//! Snippets (SPEC §4.3): a window of about `width` characters around the densest cluster
//! of matched terms, cut at spaces, whitespace squashed, with `…` where cut.
//!
//! This is the hot part of hydrating a search result, so it runs here on one analysis of
//! the section instead of a Python pass over a token list. Its output is pinned to the
//! original Python implementation (`tests/regression/golden_search.json`), so offsets and
//! whitespace follow Python's rules: lengths and offsets count chars (code points), and
//! "whitespace" is Python's `str.isspace` (Unicode `White_Space` plus U+001C..U+001F).

use super::{identifier, pipeline, Analyzer, MAX_TOKEN_BYTES};

pub(crate) mod cache;

pub const ELLIPSIS: char = '…';

/// A snippet and the spans of the matched words in it, as char offsets into `text`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snippet {
    pub text: String,
    pub highlights: Vec<(usize, usize)>,
}

/// Python's `str.isspace`.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// One matched word: char offsets in the stripped text, and the index of its term.
#[derive(Clone, Copy)]
struct Hit {
    start: usize,
    end: usize,
    term: usize,
}

impl Analyzer {
    /// The best window of `text` for the analyzed `terms`, with the matched words'
    /// spans. When none occurs in `text` and `fallback` is given (the full content, code
    /// included), the window comes from `fallback`; otherwise it is the start of `text`.
    pub fn snippet(
        &self,
        text: &str,
        terms: &[&str],
        width: usize,
        fallback: Option<&str>,
    ) -> Snippet {
        self.snippet_with(text, terms, width, fallback, true)
    }

    /// [`Analyzer::snippet`]'s text alone: the spans are not worked out.
    pub fn snippet_text(
        &self,
        text: &str,
        terms: &[&str],
        width: usize,
        fallback: Option<&str>,
    ) -> String {
        self.snippet_with(text, terms, width, fallback, false).text
    }

    fn snippet_with(
        &self,
        text: &str,
        terms: &[&str],
        width: usize,
        fallback: Option<&str>,
        spans: bool,
    ) -> Snippet {
        let text = text.trim_matches(is_py_space);
        let hits = if terms.is_empty() {
            Vec::new()
        } else {
            cache::hits(self, text, terms)
        };
        if hits.is_empty() && !terms.is_empty() {
            if let Some(fb) = fallback {
                return self.snippet_with(fb, terms, width, None, spans);
            }
        }
        // Only the window's chars are decoded (none of an ASCII text's): the rest of the
        // text is counted, not read. `cut` looks up to 30 chars past the window's start
        // for a space, even past its end.
        let ascii = text.is_ascii();
        let n = if ascii {
            text.len()
        } else {
            text.chars().count()
        };
        let (start, end) = best_window(&hits, terms.len(), width, n);
        let to = end.max(start + 30).min(n);
        if ascii {
            cut(&text.as_bytes()[start..to], start, end, n, &hits, spans)
        } else {
            let window: Vec<char> = text.chars().skip(start).take(to - start).collect();
            cut(&window, start, end, n, &hits, spans)
        }
    }

    /// The words of `text` whose term is one of `terms`, in text order (char offsets).
    ///
    /// Most of a text is words that cannot produce a query term, so they are passed over
    /// unanalyzed: in an ASCII chunk (between the breaks UAX #29 always makes at ASCII
    /// whitespace) whole runs are, by [`Bigrams`]; in any other chunk, simple words, by
    /// [`PrefixFilter`].
    fn hits(&self, text: &str, terms: &[&str]) -> Vec<Hit> {
        let bigrams = Bigrams::new(terms);
        let prefix = std::cell::OnceCell::new();
        let skip = |w: &str| prefix.get_or_init(|| PrefixFilter::new(terms)).skips(w);
        let mut out = Vec::new();
        let mut term = String::new();
        // Consecutive ASCII chunks are scanned as one stretch: only ASCII whitespace lies
        // between them, which ends runs anyway, and one call per stretch instead of per
        // word saves most of the scan's overhead (all of it for ASCII text).
        if text.is_ascii() {
            self.ascii_hits(text, (0, text.len()), &bigrams, terms, &mut term, &mut out);
            return out;
        }
        let mut stretch: Option<(usize, usize)> = None;
        super::segment::for_each_chunk(text, |start, end, ascii| {
            if ascii {
                stretch = Some((stretch.map_or(start, |(s, _)| s), end));
                return;
            }
            if let Some(range) = stretch.take() {
                self.ascii_hits(text, range, &bigrams, terms, &mut term, &mut out);
            }
            pipeline::run_skipping(&self.stemmer, &text[start..end], Some(&skip), |t| {
                if let Some(term) = terms.iter().position(|&x| x == t.text) {
                    out.push(Hit {
                        start: start + t.start,
                        end: start + t.end,
                        term,
                    });
                }
            });
        });
        if let Some(range) = stretch {
            self.ascii_hits(text, range, &bigrams, terms, &mut term, &mut out);
        }
        if !text.is_ascii() {
            to_char_offsets(text, &mut out);
        }
        out
    }
}

/// The snippet's window `start..end` over a text of `n` chars: the whole text when it
/// fits; the start when nothing matched; otherwise the `width` chars around the window of
/// hits with the most distinct terms (then the most hits), from a quarter-window before
/// its first hit.
fn best_window(hits: &[Hit], terms: usize, width: usize, n: usize) -> (usize, usize) {
    if n <= width {
        return (0, n);
    }
    if hits.is_empty() {
        return (0, width);
    }
    let mut best_start = hits[0].start;
    let mut best_key = (0usize, 0usize);
    let mut seen = vec![usize::MAX; terms];
    let mut j = 0;
    for (i, h) in hits.iter().enumerate() {
        while j < hits.len() && hits[j].end <= h.start + width {
            j += 1;
        }
        let window = if j > i { &hits[i..j] } else { &[][..] };
        let mut distinct = 0;
        for w in window {
            if seen[w.term] != i {
                seen[w.term] = i;
                distinct += 1;
            }
        }
        let key = (distinct, window.len());
        if key > best_key {
            best_key = key;
            best_start = h.start;
        }
    }
    // Centre the cluster a little: start a quarter-window before the first hit.
    let start = best_start.saturating_sub(width / 4).min(n - width);
    (start, start + width)
}

/// Turns the hits' byte offsets into char offsets. The walk yields terms in text order,
/// so starts ascend and so do ends: each is counted on from the last one (or from the
/// hit's start), in about one pass over the text; one that goes back is counted afresh.
fn to_char_offsets(text: &str, hits: &mut [Hit]) {
    /// A byte offset and the chars before it.
    #[derive(Clone, Copy, Default)]
    struct At {
        byte: usize,
        chars: usize,
    }
    fn count_to(text: &str, from: At, byte: usize) -> At {
        let from = if from.byte <= byte {
            from
        } else {
            At::default()
        };
        At {
            byte,
            chars: from.chars + text[from.byte..byte].chars().count(),
        }
    }
    let (mut start, mut end) = (At::default(), At::default());
    for h in hits {
        start = count_to(text, start, h.start);
        let from = if end.byte <= h.end && end.byte >= start.byte {
            end
        } else {
            start
        };
        end = count_to(text, from, h.end);
        (h.start, h.end) = (start.chars, end.chars);
    }
}

impl Analyzer {
    /// [`Analyzer::hits`] of the all-ASCII `text[from..to]` (one or more chunks, with the
    /// whitespace between them), as byte offsets: only the runs that [`Bigrams`] lets
    /// through are analyzed. A run is a maximal stretch of letters, digits and the
    /// characters that can join them into one word (`_ ' . : , ;`); ASCII word segmentation never looks
    /// past one, so analyzing a run alone yields exactly the terms (and byte offsets,
    /// shifted) that it yields inside the whole text.
    ///
    /// A run that is one simple word (`identifier::is_simple`) is looked up directly: the
    /// pipeline would make it one segment and take the same one-lookup path.
    fn ascii_hits(
        &self,
        text: &str,
        (from, to): (usize, usize),
        filter: &Bigrams,
        terms: &[&str],
        term: &mut String,
        out: &mut Vec<Hit>,
    ) {
        let chunk = &text.as_bytes()[from..to];
        let runs = RunMasks::new(chunk);
        // Part starts are taken in order; once one lets its run through, the run is
        // analyzed whole and the scan resumes past its end.
        let mut resume = 0;
        for i in runs.part_starts() {
            if i < resume || !filter.may_start_at(chunk, i) {
                continue;
            }
            let (start, end) = runs.run_around(i);
            resume = end;
            let base = from + start;
            let run = &text[base..from + end];
            if run.len() <= MAX_TOKEN_BYTES && identifier::is_simple(run) {
                if self.stemmer.simple_term_into(run, term) {
                    if let Some(t) = terms.iter().position(|&x| x == term.as_str()) {
                        out.push(Hit {
                            start: base,
                            end: from + end,
                            term: t,
                        });
                    }
                }
                continue;
            }
            pipeline::run(&self.stemmer, run, |t| {
                if let Some(term) = terms.iter().position(|&x| x == t.text) {
                    out.push(Hit {
                        start: base + t.start,
                        end: base + t.end,
                        term,
                    });
                }
            });
        }
    }
}

/// Byte classes of the ASCII scan: a run is a maximal stretch of non-`BREAK` bytes.
const BREAK: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 3;
/// `_ ' . : , ;`: can join letters or digits into one word, or separate its parts.
const JOIN: u8 = 4;

/// Byte classes of 64 bytes as bitmaps (bit `j` for byte `j`).
#[derive(Debug, PartialEq, Eq)]
struct Classes {
    /// ASCII letters and digits.
    alnum: u64,
    upper: u64,
    digit: u64,
    /// The joiners `_ ' . : , ;`.
    join: u64,
}

impl Classes {
    fn of(block: &[u8; 64]) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it.
            unsafe { Self::of_sse2(block) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self::of_scalar(block)
        }
    }

    /// The reference: one byte at a time (and the code off x86_64).
    #[cfg(any(test, not(target_arch = "x86_64")))]
    fn of_scalar(block: &[u8; 64]) -> Self {
        let mut c = Classes {
            alnum: 0,
            upper: 0,
            digit: 0,
            join: 0,
        };
        for (j, &b) in block.iter().enumerate() {
            let is_upper = b.is_ascii_uppercase();
            let is_digit = b.is_ascii_digit();
            c.alnum |= u64::from(b.is_ascii_alphanumeric()) << j;
            c.upper |= u64::from(is_upper) << j;
            c.digit |= u64::from(is_digit) << j;
            c.join |= u64::from(matches!(b, b'_' | b'\'' | b'.' | b':' | b',' | b';')) << j;
        }
        c
    }

    /// Sixteen bytes per step: a range test is one add and one signed compare (the add
    /// moves the range's first byte to -128), and `movemask` gathers the bits.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse2")]
    fn of_sse2(block: &[u8; 64]) -> Self {
        use std::arch::x86_64::*;
        // Bytes in `lo..lo + n`, as 0xFF lanes.
        #[target_feature(enable = "sse2")]
        fn range(v: __m128i, lo: u8, n: u8) -> __m128i {
            let shifted = _mm_add_epi8(v, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
            _mm_cmplt_epi8(shifted, _mm_set1_epi8(0x80u8.wrapping_add(n) as i8))
        }
        #[target_feature(enable = "sse2")]
        fn eq(v: __m128i, b: u8) -> __m128i {
            _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8))
        }
        #[target_feature(enable = "sse2")]
        fn bits(m: __m128i, k: usize) -> u64 {
            u64::from(_mm_movemask_epi8(m) as u16) << (16 * k)
        }
        let (mut alnum, mut upper, mut digit, mut join) = (0u64, 0u64, 0u64, 0u64);
        for k in 0..4 {
            let lane: &[u8; 16] = block[16 * k..16 * k + 16].try_into().expect("16 bytes");
            // SAFETY: `lane` is 16 readable bytes; the load needs no alignment.
            let v = unsafe { _mm_loadu_si128(lane.as_ptr().cast()) };
            let up = range(v, b'A', 26);
            let lo = range(v, b'a', 26);
            let di = range(v, b'0', 10);
            let jo = _mm_or_si128(
                _mm_or_si128(
                    _mm_or_si128(eq(v, b'_'), eq(v, b'\'')),
                    _mm_or_si128(eq(v, b'.'), eq(v, b':')),
                ),
                _mm_or_si128(eq(v, b','), eq(v, b';')),
            );
            alnum |= bits(_mm_or_si128(_mm_or_si128(up, lo), di), k);
            upper |= bits(up, k);
            digit |= bits(di, k);
            join |= bits(jo, k);
        }
        Classes {
            alnum,
            upper,
            digit,
            join,
        }
    }
}

/// Bitmaps of an ASCII chunk, one bit per byte and 64 bytes per word: where a part of a
/// word can start, and which bytes break runs (`BREAK`). A part can start at a letter or
/// digit after a joiner, a break or the chunk's start; at a capital; and between a letter
/// and a digit (never at a joiner): a superset of the identifier splitter's boundaries.
/// Built a block at a time from byte comparisons (which compile to vector code) rather
/// than a table lookup per byte: most of a text's bytes are passed over here.
struct RunMasks {
    starts: Vec<u64>,
    breaks: Vec<u64>,
    len: usize,
}

impl RunMasks {
    fn new(chunk: &[u8]) -> Self {
        let words = chunk.len().div_ceil(64);
        let mut starts = Vec::with_capacity(words);
        let mut breaks = Vec::with_capacity(words);
        // The byte before the chunk counts as a separator: its first letter starts a part.
        let (mut sep_before, mut digit_before) = (1u64, 0u64);
        for block in super::blocks64(chunk) {
            let block = &block; // the padding, NUL, is a break
            let Classes {
                alnum,
                upper,
                digit,
                join,
            } = Classes::of(block);
            // Bits past the chunk's end are breaks; `run_around` clamps to the length.
            let brk = !(alnum | join);
            let sep = brk | join;
            let after_sep = (sep << 1) | sep_before;
            let after_digit = (digit << 1) | digit_before;
            starts.push(alnum & (after_sep | upper | (digit ^ after_digit)));
            breaks.push(brk);
            sep_before = sep >> 63;
            digit_before = digit >> 63;
        }
        RunMasks {
            starts,
            breaks,
            len: chunk.len(),
        }
    }

    /// The positions where a part can start, in order.
    fn part_starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.starts.iter().enumerate().flat_map(|(w, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let at = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    at
                })
            })
        })
    }

    /// The run (maximal stretch of non-break bytes) holding position `i`, as `start..end`.
    fn run_around(&self, i: usize) -> (usize, usize) {
        let mut w = i / 64;
        let mut bits = self.breaks[w] & (u64::MAX << (i % 64));
        let end = loop {
            if bits != 0 {
                break (w * 64 + bits.trailing_zeros() as usize).min(self.len);
            }
            w += 1;
            if w == self.breaks.len() {
                break self.len;
            }
            bits = self.breaks[w];
        };
        let mut w = i / 64;
        let mut bits = self.breaks[w] & ((1u64 << (i % 64)) - 1);
        let start = loop {
            if bits != 0 {
                break w * 64 + 64 - bits.leading_zeros() as usize;
            }
            if w == 0 {
                break 0;
            }
            w -= 1;
            bits = self.breaks[w];
        };
        (start, end)
    }
}

static CLASS: [u8; 256] = {
    let mut t = [BREAK; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = if b.is_ascii_lowercase() {
            LOWER
        } else if b.is_ascii_uppercase() {
            UPPER
        } else if b.is_ascii_digit() {
            DIGIT
        } else if matches!(b, b'_' | b'\'' | b'.' | b':' | b',' | b';') {
            JOIN
        } else {
            BREAK
        };
        c += 1;
    }
    t
};

/// Which ASCII runs can produce one of the query's terms, by the terms' first two
/// characters. Every term a run yields is, lowercased (ASCII NFKC is the identity):
/// - a part of it, or that part's Snowball English stem: the part is a substring of the
///   run, and its stem starts with the part's first two characters (see
///   [`PrefixFilter`]: the three exceptions "dying", "lying" and "tying" are added as
///   "dy", "ly" and "ty"), or is one character of it;
/// - or the whole form of a split identifier, its parts concatenated, whose first two
///   characters are adjacent once the run's separators are dropped.
///
/// So a run that contains none of the terms' first two characters, neither as written
/// nor with its separators dropped, and no one-character term, yields no term. The
/// property test `ascii_runs_find_the_same_hits` checks this against full analysis.
struct Bigrams {
    /// Bit `b` of `pairs[a]`: some term starts with the ASCII bytes `a b`.
    pairs: [[u64; 2]; 128],
    /// Bit `a`: the ASCII byte `a` alone is a term.
    singles: [u64; 2],
}

impl Bigrams {
    fn new(terms: &[&str]) -> Self {
        let mut f = Bigrams {
            pairs: [[0; 2]; 128],
            singles: [0; 2],
        };
        let set = |bits: &mut [u64; 2], b: u8| bits[usize::from(b >> 6)] |= 1 << (b & 63);
        for t in terms {
            match *t.as_bytes() {
                [a] if a.is_ascii() => set(&mut f.singles, a),
                [a, b, ..] if a.is_ascii() && b.is_ascii() => set(&mut f.pairs[a as usize], b),
                _ => {}
            }
            if matches!(*t, "die" | "lie" | "tie") {
                set(&mut f.pairs[t.as_bytes()[0] as usize], b'y');
            }
        }
        f
    }

    #[inline]
    fn pair(&self, a: u8, b: u8) -> bool {
        let (a, b) = (a & 127, b & 127);
        self.pairs[a as usize][usize::from(b >> 6)] >> (b & 63) & 1 == 1
    }

    /// Whether a part starting at `chunk[p]` (a letter or digit) can yield one of the
    /// terms, as itself, a stem of it, or the first part of a whole form.
    #[inline]
    fn may_start_at(&self, chunk: &[u8], p: usize) -> bool {
        let c = chunk[p].to_ascii_lowercase();
        if self.singles[usize::from(c >> 6)] >> (c & 63) & 1 == 1
            && (alone(chunk, p) || is_vowel(c))
        {
            return true;
        }
        let Some(&next) = chunk.get(p + 1) else {
            return false;
        };
        if self.pair(c, next.to_ascii_lowercase()) {
            return true;
        }
        // A whole form: the next letter or digit past the separators, within the run.
        if !next.is_ascii_alphanumeric() {
            let after = chunk[p + 1..]
                .iter()
                .take_while(|&&x| CLASS[x as usize] != BREAK)
                .find(|x| x.is_ascii_alphanumeric());
            if let Some(&x) = after {
                return self.pair(c, x.to_ascii_lowercase());
            }
        }
        false
    }
}

/// Whether the part that starts at `run[p]` can be that one character: unless the next
/// character surely continues it (after a letter, a lowercase letter, or an apostrophe
/// before a letter, which joins them and stays inside the part; after a digit, a digit, or a `.`, `,` or `'` between digits).
/// A capital after a capital may start a new part (`PServer`), so it does not count.
fn alone(run: &[u8], p: usize) -> bool {
    let Some(&n) = run.get(p + 1) else {
        return true;
    };
    let after = run.get(p + 2);
    let continues = if run[p].is_ascii_digit() {
        n.is_ascii_digit()
            || (matches!(n, b'.' | b',' | b'\'') && after.is_some_and(u8::is_ascii_digit))
    } else {
        // `'s` may be a possessive, which is stripped: `D's` is `D`.
        n.is_ascii_lowercase()
            || (n == b'\''
                && after.is_some_and(|&a| a.is_ascii_alphabetic() && !matches!(a, b's' | b'S')))
    };
    !continues
}

/// A one-letter stem can come from a longer word only through a vowel ("aing" → "a").
fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// Which simple ASCII words (`identifier::is_simple`: a letter, then lowercase letters)
/// can produce one of the query's terms. A simple word's term is its lowercased form, or
/// the Snowball English stem of it, and Snowball English:
/// - never lengthens a word;
/// - keeps its first two letters, or all of a stem shorter than two ("aing" → "a"): its
///   suffix rules act from the third letter on (step 1a's "ies" → "ie", step 1c's y → i
///   after a non-first consonant, R1 which starts at the third letter at the earliest),
/// - except for three words of its exception list, "dying", "lying" and "tying", which
///   become "die", "lie" and "tie".
///
/// So a word can match only a term that starts with the word's own first two letters
/// (lowercased), or is its first letter alone, and is no longer than the word. The
/// property test `prefix_filter_keeps_every_hit` checks this against full analysis on
/// the shared corpora's vocabulary.
struct PrefixFilter {
    /// `[first letter]`: 1 if that letter alone is a term.
    one: [bool; 26],
    /// `[first letter][second letter]`: the length of the shortest term of two or more
    /// letters that starts with them, or `u8::MAX` (terms are at most `MAX_TOKEN_BYTES`).
    two: [[u8; 26]; 26],
}

impl PrefixFilter {
    fn new(terms: &[&str]) -> Self {
        let mut f = PrefixFilter {
            one: [false; 26],
            two: [[u8::MAX; 26]; 26],
        };
        let letter = |b: u8| b.is_ascii_lowercase().then(|| (b - b'a') as usize);
        for t in terms {
            let b = t.as_bytes();
            match b {
                [a] => {
                    if let Some(a) = letter(*a) {
                        f.one[a] = true;
                    }
                }
                [a, c, ..] => {
                    if let (Some(a), Some(c)) = (letter(*a), letter(*c)) {
                        f.two[a][c] = f.two[a][c].min(b.len().min(254) as u8);
                    }
                }
                [] => {}
            }
            if let Some(first) = match *t {
                "die" => Some(b'd'),
                "lie" => Some(b'l'),
                "tie" => Some(b't'),
                _ => None,
            } {
                let a = (first - b'a') as usize;
                let y = (b'y' - b'a') as usize;
                f.two[a][y] = f.two[a][y].min("dying".len() as u8);
            }
        }
        f
    }

    /// True when the simple word `w` cannot produce any of the terms. Anything that is
    /// not a simple word is never skipped.
    #[inline]
    fn skips(&self, w: &str) -> bool {
        let index = |b: u8| {
            let i = b.to_ascii_lowercase().wrapping_sub(b'a') as usize;
            (i < 26).then_some(i)
        };
        let b = w.as_bytes();
        let Some(a) = b.first().and_then(|&x| index(x)) else {
            return false;
        };
        if self.one[a] {
            return false;
        }
        match b.get(1) {
            None => true,
            Some(&c) => index(c).is_some_and(|c| b.len() < usize::from(self.two[a][c])),
        }
    }
}

/// One char of a snippet's window: a byte of an all-ASCII text (read in place), or a
/// decoded char of any other.
trait WindowChar: Copy {
    /// Python's `str.isspace`.
    fn is_py_space(self) -> bool;
    /// The plain space, U+0020, where the cut may move to.
    fn is_blank(self) -> bool;
    fn push_to(self, out: &mut String);

    /// Appends `chars` squashed: its words joined by one space, no space at either end.
    fn squash(chars: &[Self], out: &mut String);
}

impl WindowChar for u8 {
    #[inline]
    fn is_py_space(self) -> bool {
        // The ASCII chars `is_py_space` accepts: TAB..CR, and U+001C..U+0020.
        matches!(self, b'\t'..=b'\r' | 0x1c..=b' ')
    }

    #[inline]
    fn is_blank(self) -> bool {
        self == b' '
    }

    #[inline]
    fn push_to(self, out: &mut String) {
        out.push(char::from(self));
    }

    /// A byte at a time into a byte buffer, checked as UTF-8 once (ASCII: it is).
    fn squash(chars: &[u8], out: &mut String) {
        let mut bytes = Vec::with_capacity(chars.len());
        let mut pending_space = false;
        for &b in chars {
            if b.is_py_space() {
                pending_space = !bytes.is_empty();
                continue;
            }
            if pending_space {
                bytes.push(b' ');
                pending_space = false;
            }
            bytes.push(b);
        }
        out.push_str(std::str::from_utf8(&bytes).unwrap_or_default());
    }
}

impl WindowChar for char {
    #[inline]
    fn is_py_space(self) -> bool {
        is_py_space(self)
    }

    #[inline]
    fn is_blank(self) -> bool {
        self == ' '
    }

    #[inline]
    fn push_to(self, out: &mut String) {
        out.push(self);
    }

    fn squash(chars: &[char], out: &mut String) {
        let mut words = chars.split(|c| c.is_py_space()).filter(|w| !w.is_empty());
        if let Some(first) = words.next() {
            out.extend(first);
            for w in words {
                out.push(' ');
                out.extend(w);
            }
        }
    }
}

/// Python's `_cut`: the text's chars `base..end` (of `n`) moved to spaces (within 30
/// chars), squashed, with ellipses where cut; `hits` inside the window become highlight
/// spans when `spans` is set (otherwise `highlights` is left empty). `window` holds the
/// text's chars from `base` to `max(end, base + 30)` (or `n`): the only ones read.
fn cut<C: WindowChar>(
    window: &[C],
    base: usize,
    end: usize,
    n: usize,
    hits: &[Hit],
    spans: bool,
) -> Snippet {
    let mut start = base;
    let mut end = end.min(n);
    let at = |i: usize| window[i - base];
    if start > 0 {
        if let Some(p) = (start..(start + 30).min(n)).find(|&i| at(i).is_blank()) {
            start = p + 1;
        }
    }
    if end < n {
        if let Some(p) = (start.max(end.saturating_sub(30))..end)
            .rev()
            .find(|&i| at(i).is_blank())
        {
            end = p;
        }
    }
    let slice: &[C] = if start < end {
        &window[start - base..end - base]
    } else {
        &[]
    };
    // Two ellipses of three bytes, and up to four bytes a char.
    let mut out = String::with_capacity(6 + std::mem::size_of_val(slice));
    let mut offset = 0usize; // chars written
    if start > 0 {
        out.push(ELLIPSIS);
        offset = 1;
    }
    if !spans {
        C::squash(slice, &mut out);
        if end < n {
            out.push(ELLIPSIS);
        }
        return Snippet {
            text: out,
            highlights: Vec::new(),
        };
    }
    // Squash: words joined by one space, each source char mapped to its output position.
    let mut pos = vec![0usize; slice.len() + 1];
    let mut written = offset;
    let mut pending_space = false;
    let mut any = false;
    for (k, &c) in slice.iter().enumerate() {
        if c.is_py_space() {
            pending_space = any;
            pos[k] = written;
            continue;
        }
        if pending_space {
            out.push(' ');
            written += 1;
            pending_space = false;
        }
        pos[k] = written;
        c.push_to(&mut out);
        written += 1;
        any = true;
    }
    if end < n {
        out.push(ELLIPSIS);
    }
    pos[slice.len()] = written;
    // Spans of the matched words inside the window, sorted, overlaps merged (a split
    // identifier's whole form and its parts cover the same word).
    let mut spans: Vec<(usize, usize)> = hits
        .iter()
        .filter(|h| h.start >= start && h.end <= end && h.start < h.end)
        .map(|h| (pos[h.start - start], pos[h.end - start - 1] + 1))
        .collect();
    spans.sort_unstable();
    let mut highlights: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (a, b) in spans {
        match highlights.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => highlights.push((a, b)),
        }
    }
    Snippet {
        text: out,
        highlights,
    }
}

#[cfg(test)]
mod tests;
