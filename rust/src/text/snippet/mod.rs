//! Snippets (SPEC §4.3): a window of about `width` characters around the densest cluster
//! of matched terms, cut at spaces, whitespace squashed, with `…` where cut.
//!
//! This is the hot part of hydrating a search result, so it runs here on one analysis of
//! the section instead of a Python pass over a token list. Its output is pinned to the
//! original Python implementation (`tests/regression/golden_search.json`), so offsets and
//! whitespace follow Python's rules: lengths and offsets count chars (code points), and
//! "whitespace" is Python's `str.isspace` (Unicode `White_Space` plus U+001C..U+001F).

use super::{pipeline, Analyzer};
use scan::{Bigrams, PrefixFilter};

mod scan;

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
            self.hits(text, terms)
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
