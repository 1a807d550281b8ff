//! The ASCII side of the snippet scan ([`Analyzer::hits`]): which runs and words of a
//! text can yield one of the query's terms, found from byte-class bitmaps and the terms'
//! first two letters, so that the rest of the text is passed over unanalyzed.

use super::Hit;
use crate::text::{identifier, pipeline, Analyzer, MAX_TOKEN_BYTES};

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
    pub(super) fn ascii_hits(
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
pub(super) struct Classes {
    /// ASCII letters and digits.
    alnum: u64,
    upper: u64,
    digit: u64,
    /// The joiners `_ ' . : , ;`.
    join: u64,
}

impl Classes {
    pub(super) fn of(block: &[u8; 64]) -> Self {
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
    pub(super) fn of_scalar(block: &[u8; 64]) -> Self {
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
pub(super) struct RunMasks {
    starts: Vec<u64>,
    breaks: Vec<u64>,
    len: usize,
}

impl RunMasks {
    pub(super) fn new(chunk: &[u8]) -> Self {
        let words = chunk.len().div_ceil(64);
        let mut starts = Vec::with_capacity(words);
        let mut breaks = Vec::with_capacity(words);
        // The byte before the chunk counts as a separator: its first letter starts a part.
        let (mut sep_before, mut digit_before) = (1u64, 0u64);
        for block in crate::text::blocks64(chunk) {
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
    pub(super) fn part_starts(&self) -> impl Iterator<Item = usize> + '_ {
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
    pub(super) fn run_around(&self, i: usize) -> (usize, usize) {
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
pub(super) struct Bigrams {
    /// Bit `b` of `pairs[a]`: some term starts with the ASCII bytes `a b`.
    pairs: [[u64; 2]; 128],
    /// Bit `a`: the ASCII byte `a` alone is a term.
    singles: [u64; 2],
}

impl Bigrams {
    pub(super) fn new(terms: &[&str]) -> Self {
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
pub(super) struct PrefixFilter {
    /// `[first letter]`: 1 if that letter alone is a term.
    one: [bool; 26],
    /// `[first letter][second letter]`: the length of the shortest term of two or more
    /// letters that starts with them, or `u8::MAX` (terms are at most `MAX_TOKEN_BYTES`).
    two: [[u8; 26]; 26],
}

impl PrefixFilter {
    pub(super) fn new(terms: &[&str]) -> Self {
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
    pub(super) fn skips(&self, w: &str) -> bool {
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
