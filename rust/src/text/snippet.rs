//! Snippets (SPEC §4.3): a window of about `width` characters around the densest cluster
//! of matched terms, cut at spaces, whitespace squashed, with `…` where cut.
//!
//! This is the hot part of hydrating a search result, so it runs here on one analysis of
//! the section instead of a Python pass over a token list. Its output is pinned to the
//! original Python implementation (`tests/regression/golden_search.json`), so offsets and
//! whitespace follow Python's rules: lengths and offsets count chars (code points), and
//! "whitespace" is Python's `str.isspace` (Unicode `White_Space` plus U+001C..U+001F).

use super::{pipeline, Analyzer};

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
    /// The best window of `text` for the analyzed `terms`. When none occurs in `text` and
    /// `fallback` is given (the full content, code included), the window comes from
    /// `fallback`; otherwise it is the start of `text`.
    pub fn snippet(
        &self,
        text: &str,
        terms: &[&str],
        width: usize,
        fallback: Option<&str>,
    ) -> Snippet {
        let text = text.trim_matches(is_py_space);
        let hits = if terms.is_empty() {
            Vec::new()
        } else {
            self.hits(text, terms)
        };
        if hits.is_empty() && !terms.is_empty() {
            if let Some(fb) = fallback {
                return self.snippet(fb, terms, width, None);
            }
        }
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        if n <= width {
            return cut(&chars, 0, n, &hits);
        }
        if hits.is_empty() {
            return cut(&chars, 0, width, &hits);
        }
        let mut best_start = hits[0].start;
        let mut best_key = (0usize, 0usize);
        let mut seen = vec![usize::MAX; terms.len()];
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
        cut(&chars, start, start + width, &hits)
    }

    /// The words of `text` whose term is one of `terms`, in text order (char offsets).
    fn hits(&self, text: &str, terms: &[&str]) -> Vec<Hit> {
        // Byte -> char offsets; the identity for ASCII text.
        let map: Option<Vec<u32>> = (!text.is_ascii()).then(|| {
            let mut m = vec![0u32; text.len() + 1];
            let mut chars = 0u32;
            for (b, c) in text.char_indices() {
                for slot in &mut m[b..b + c.len_utf8()] {
                    *slot = chars;
                }
                chars += 1;
            }
            m[text.len()] = chars;
            m
        });
        let to_char = |b: usize| map.as_ref().map_or(b, |m| m[b.min(text.len())] as usize);
        // A simple ASCII word's term (its stem, or itself) starts with its own first
        // letter, lowercased, and is no longer than the word: Snowball English never
        // changes a word's first letter and never lengthens it. So a simple word shorter
        // than every term that starts with its first letter cannot match, and is skipped
        // without normalizing, lowercasing or stemming it (most of the text).
        let mut shortest = [usize::MAX; 128];
        for t in terms {
            if let Some(&b) = t.as_bytes().first() {
                if b.is_ascii() {
                    shortest[b as usize] = shortest[b as usize].min(t.len());
                }
            }
        }
        let skip = |w: &str| w.len() < shortest[w.as_bytes()[0].to_ascii_lowercase() as usize];
        let mut out = Vec::new();
        pipeline::run_skipping(&self.stemmer, text, Some(&skip), |t| {
            if let Some(term) = terms.iter().position(|&x| x == t.text) {
                out.push(Hit {
                    start: to_char(t.start),
                    end: to_char(t.end),
                    term,
                });
            }
        });
        out
    }
}

/// Python's `_cut`: `chars[start..end]` moved to spaces (within 30 chars), squashed, with
/// ellipses where cut; `hits` inside the window become highlight spans.
fn cut(chars: &[char], start: usize, end: usize, hits: &[Hit]) -> Snippet {
    let n = chars.len();
    let mut start = start;
    let mut end = end.min(n);
    if start > 0 {
        if let Some(p) = find_space(chars, start, (start + 30).min(n)) {
            start = p + 1;
        }
    }
    if end < n {
        if let Some(p) = rfind_space(chars, start.max(end.saturating_sub(30)), end) {
            end = p;
        }
    }
    let mut out = String::new();
    let mut offset = 0usize; // chars written
    if start > 0 {
        out.push(ELLIPSIS);
        offset = 1;
    }
    // Squash: words joined by one space; map each source char to its output position.
    let slice: &[char] = if start < end { &chars[start..end] } else { &[] };
    let mut pos = vec![0usize; slice.len() + 1];
    let mut written = offset;
    let mut pending_space = false;
    let mut any = false;
    for (k, &c) in slice.iter().enumerate() {
        if is_py_space(c) {
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
        out.push(c);
        written += 1;
        any = true;
    }
    pos[slice.len()] = written;
    if end < n {
        out.push(ELLIPSIS);
    }
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

fn find_space(chars: &[char], from: usize, to: usize) -> Option<usize> {
    (from..to).find(|&i| chars[i] == ' ')
}

fn rfind_space(chars: &[char], from: usize, to: usize) -> Option<usize> {
    (from..to).rev().find(|&i| chars[i] == ' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snip(text: &str, terms: &[&str], width: usize, fallback: Option<&str>) -> Snippet {
        Analyzer::new().snippet(text, terms, width, fallback)
    }

    #[test]
    fn short_text_is_squashed_whole() {
        let s = snip("  Hello   big\n\tworld  ", &["world"], 200, None);
        assert_eq!(s.text, "Hello big world");
        assert_eq!(s.highlights, vec![(10, 15)]);
    }

    #[test]
    fn window_moves_to_the_densest_cluster() {
        let filler = "lorem ipsum dolor sit amet ".repeat(20);
        let text = format!("{filler}the ownership rules of borrowing and ownership {filler}");
        let s = snip(&text, &["ownership", "borrow"], 80, None);
        assert!(
            s.text.starts_with('…') && s.text.ends_with('…'),
            "{}",
            s.text
        );
        assert!(s.text.contains("ownership rules of borrowing"));
        let chars: Vec<char> = s.text.chars().collect();
        let words: Vec<String> = s
            .highlights
            .iter()
            .map(|&(a, b)| chars[a..b].iter().collect())
            .collect();
        assert_eq!(words, vec!["ownership", "borrowing", "ownership"]);
    }

    #[test]
    fn fallback_when_no_term_in_text() {
        let s = snip("nothing here", &["hashmap"], 200, Some("use a HashMap"));
        assert_eq!(s.text, "use a HashMap");
        assert_eq!(s.highlights, vec![(6, 13)]);
        let s = snip("nothing here", &["hashmap"], 200, None);
        assert_eq!(s.text, "nothing here");
        assert!(s.highlights.is_empty());
    }

    #[test]
    fn non_ascii_offsets_are_chars() {
        let a = Analyzer::new();
        let mut term = String::new();
        a.analyze("Straße", |t, _, _, _| term = t.to_string());
        let s = a.snippet("Der Café an der Straße", &[term.as_str()], 200, None);
        let chars: Vec<char> = s.text.chars().collect();
        assert_eq!(s.highlights.len(), 1);
        let (a, b) = s.highlights[0];
        assert_eq!(chars[a..b].iter().collect::<String>(), "Straße");
    }

    #[test]
    fn skipping_finds_the_same_hits_as_full_analysis() {
        let a = Analyzer::new();
        let text = "Dying cells, lying skies: the Ownership of HashMap<K, V> in hash_map \
                    files, TtcA and naïve cafés; yes, Yelling 2000 times at 東京の天気. \
                    Generational organizations communicate universally, it's Bob's job.";
        let mut all: Vec<String> = Vec::new();
        a.analyze(text, |t, _, _, _| all.push(t.to_string()));
        all.sort();
        all.dedup();
        for term in &all {
            let mut want = Vec::new();
            a.analyze(text, |t, _, s, e| {
                if t == term.as_str() {
                    want.push((s, e));
                }
            });
            let got: Vec<(usize, usize)> = a
                .hits(text, &[term.as_str()])
                .iter()
                .map(|h| (h.start, h.end))
                .collect();
            let want: Vec<(usize, usize)> = want
                .into_iter()
                .map(|(s, e)| (text[..s].chars().count(), text[..e].chars().count()))
                .collect();
            assert_eq!(got, want, "term {term}");
        }
    }

    #[test]
    fn python_whitespace() {
        assert!(is_py_space('\u{1f}') && is_py_space('\u{a0}') && is_py_space('\u{3000}'));
        assert!(!is_py_space('\u{200b}') && !is_py_space('x'));
    }
}
