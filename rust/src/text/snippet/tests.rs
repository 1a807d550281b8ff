//! Tests of the snippet window and of the scans that skip words (`super`).

use super::scan::{Classes, PrefixFilter, RunMasks};
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

/// The byte squash (ASCII windows) gives what the char squash gives, on every mix of
/// words and the spaces Python's `str.split` knows (TAB..CR, U+001C..U+0020).
#[test]
fn byte_squash_matches_char_squash() {
    let alphabet = b"ab \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f.";
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for len in 0..400 {
        let bytes: Vec<u8> = (0..len % 23)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                alphabet[(seed % alphabet.len() as u64) as usize]
            })
            .collect();
        let chars: Vec<char> = bytes.iter().map(|&b| char::from(b)).collect();
        let (mut by_byte, mut by_char) = (String::new(), String::new());
        <u8 as WindowChar>::squash(&bytes, &mut by_byte);
        <char as WindowChar>::squash(&chars, &mut by_char);
        assert_eq!(by_byte, by_char, "{bytes:?}");
    }
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

/// Simple words of the shared corpora (SciFact and the Markdown trees), or a fixed
/// list of Snowball's awkward cases when they are not beside the checkout.
pub(super) fn vocabulary() -> Vec<String> {
    let mut words: Vec<String> = "dying lying tying skies skis idly gently ugly early \
        only singly sky news howe atlas cosmos bias andes aing oed eing ued uing ied ies \
        cries ayed eyes oing using hoping generously generational communication arsenal \
        sensibility conditional happy cry by sky yelling Yes Dying Lying a I o y ye"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = [here.join("../../shared"), "/work/shared".into()];
    let Some(root) = roots.iter().find(|r| r.is_dir()) else {
        return words;
    };
    let mut files = vec![root.join("datasets/scifact/corpus.jsonl")];
    let mut dirs = vec![root.join("corpora")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for w in text.split(|c: char| !c.is_ascii_alphabetic()) {
            if crate::text::identifier::is_simple(w) && seen.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
    }
    assert!(
        words.len() > 20_000,
        "{} words under {}",
        words.len(),
        root.display()
    );
    words
}

#[test]
fn prefix_filter_keeps_every_hit() {
    let a = Analyzer::new();
    for w in vocabulary() {
        let mut terms = Vec::new();
        a.analyze(&w, |t, _, _, _| terms.push(t.to_string()));
        for t in &terms {
            let f = PrefixFilter::new(&[t.as_str()]);
            assert!(!f.skips(&w), "{w:?} -> {t:?} would be skipped");
        }
    }
}

#[test]
fn prefix_filter_skips_other_words() {
    let f = PrefixFilter::new(&["cell", "protein", "die"]);
    for w in ["cells", "Cellular", "proteins", "dying", "die"] {
        assert!(!f.skips(w), "{w}");
    }
    for w in ["cat", "cel", "pr", "apple", "dead", "lying", "Protest"] {
        assert_eq!(f.skips(w), w != "Protest", "{w}");
    }
}

/// Full analysis's hits of each term of `text` alone, and of all of them at once.
fn check_runs(a: &Analyzer, text: &str) {
    let mut all: Vec<String> = Vec::new();
    a.analyze(text, |t, _, _, _| all.push(t.to_string()));
    all.sort();
    all.dedup();
    let reference = |terms: &[&str]| {
        let mut want = Vec::new();
        pipeline::run(&a.stemmer, text, |t| {
            if let Some(term) = terms.iter().position(|&x| x == t.text) {
                let char_at = |b: usize| text[..b].chars().count();
                want.push((char_at(t.start), char_at(t.end), term));
            }
        });
        want
    };
    let got = |terms: &[&str]| -> Vec<(usize, usize, usize)> {
        a.hits(text, terms)
            .iter()
            .map(|h| (h.start, h.end, h.term))
            .collect()
    };
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    assert_eq!(got(&refs), reference(&refs), "{text:?}");
    for t in &refs {
        assert_eq!(got(&[t]), reference(&[t]), "{text:?} term {t:?}");
    }
}

#[test]
fn ascii_runs_find_the_same_hits() {
    let a = Analyzer::new();
    check_runs(
        &a,
        "Dying cells, lying skies: the Ownership of HashMap<K, V> in hash_map files, \
         TtcA x_ray X-Ray v3.14beta 1,000 e.g. std::io can't Bob's IL-6 mRNA CD4+ T-cells \
         __init__ a..b getHTTPResponse2Code aing oed tying ties 'quoted' end.",
    );
    for w in vocabulary().chunks(400) {
        check_runs(&a, &w.join(" "));
    }
    // Real ASCII lines of the Markdown corpora: code, identifiers, numbers, links.
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = [
        here.join("../../shared/corpora"),
        "/work/shared/corpora".into(),
    ];
    let Some(root) = roots.iter().find(|r| r.is_dir()) else {
        return;
    };
    let (mut dirs, mut lines) = (vec![root.clone()], 0);
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            for chunk in text.lines().step_by(7).take(20) {
                check_runs(&a, chunk);
                lines += 1;
            }
        }
    }
    assert!(
        lines > 1000,
        "only {lines} corpus lines under {}",
        root.display()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    #[test]
    fn ascii_runs_match_full_analysis(
        text in "([A-Za-z]{1,8}|[A-Z][a-z]?|[0-9]{1,4}|dying|Lying|aing|x_ray|HTTPServer|PServer|iPSC|pH|B12|PrP|v2\\.0|1\\.|I'm|D's|X'S|[ _.:,;'()+/-]){0,30}"
    ) {
        check_runs(&Analyzer::new(), &text);
    }

    #[test]
    fn mixed_text_matches_full_analysis(
        text in "([A-Za-z]{1,8}|[0-9]{1,3}|Straße|naïve|café|数据库|東京の天気|ｶﾞ|한국어|\u{301}|\u{200D}|[ \t\n_.:,;'()+/-]|\u{a0}|\u{3000}|é|β){0,30}"
    ) {
        check_runs(&Analyzer::new(), &text);
    }
}

#[test]
fn python_whitespace() {
    assert!(is_py_space('\u{1f}') && is_py_space('\u{a0}') && is_py_space('\u{3000}'));
    assert!(!is_py_space('\u{200b}') && !is_py_space('x'));
}

#[test]
fn byte_classes_agree_with_the_scalar_reference() {
    // Every byte value at every position of a block, among neighbours of every class.
    let fill: Vec<u8> = b"aZ5_ .;:,'\n\x00\x7f\xff@[`{".to_vec();
    for b in 0..=255u8 {
        for at in 0..64 {
            let mut block = [0u8; 64];
            for (j, x) in block.iter_mut().enumerate() {
                *x = fill[(j + usize::from(b)) % fill.len()];
            }
            block[at] = b;
            assert_eq!(
                Classes::of(&block),
                Classes::of_scalar(&block),
                "byte {b} at {at}"
            );
        }
    }
}

#[test]
fn runs_and_part_starts_across_blocks() {
    // Runs that cross the 64-byte block boundaries, and a chunk that ends mid-block.
    let text = format!("{}ab{}Cd9e  x", "y".repeat(62), "z".repeat(63));
    let runs = RunMasks::new(text.as_bytes());
    let starts: Vec<usize> = runs.part_starts().collect();
    // `yy…ab zz…` is one run: its part starts are its first byte, `C` and the digit
    // boundaries (`d9`, `9e`); then `x`.
    assert_eq!(starts, vec![0, 127, 129, 130, 133]);
    assert_eq!(runs.run_around(0), (0, 131));
    assert_eq!(runs.run_around(127), (0, 131));
    assert_eq!(runs.run_around(130), (0, 131));
    assert_eq!(runs.run_around(133), (133, 134));

    // A letter-digit boundary across a block boundary (bytes 63 and 64), and a chunk of
    // exactly two blocks whose last run ends at its end.
    let text = format!("{}a1b{}", " ".repeat(63), "c".repeat(62));
    assert_eq!(text.len(), 128);
    let runs = RunMasks::new(text.as_bytes());
    assert_eq!(runs.part_starts().collect::<Vec<_>>(), vec![63, 64, 65]);
    assert_eq!(runs.run_around(64), (63, 128));
    let a = Analyzer::new();
    check_runs(&a, &text);
    check_runs(&a, &format!("{}9x", "Q".repeat(63)));
}

#[test]
fn ascii_window_chars_are_python_spaces_as_chars_are() {
    for b in 0u8..128 {
        assert_eq!(
            WindowChar::is_py_space(b),
            is_py_space(char::from(b)),
            "byte {b:#04x}"
        );
        assert_eq!(b.is_blank(), char::from(b).is_blank(), "byte {b:#04x}");
    }
}

/// The cut as it was before windows: over every char of the text. The reference for `cut`,
/// which is given only the chars it reads.
fn cut_whole(chars: &[char], start: usize, end: usize, hits: &[Hit]) -> Snippet {
    let n = chars.len();
    let (mut start, mut end) = (start, end.min(n));
    if start > 0 {
        if let Some(p) = (start..(start + 30).min(n)).find(|&i| chars[i] == ' ') {
            start = p + 1;
        }
    }
    if end < n {
        if let Some(p) = (start.max(end.saturating_sub(30))..end)
            .rev()
            .find(|&i| chars[i] == ' ')
        {
            end = p;
        }
    }
    let mut out = String::new();
    if start > 0 {
        out.push(ELLIPSIS);
    }
    let slice: &[char] = if start < end { &chars[start..end] } else { &[] };
    let mut pos = vec![0usize; slice.len() + 1];
    let (mut written, mut pending, mut any) = (usize::from(start > 0), false, false);
    for (k, &c) in slice.iter().enumerate() {
        if is_py_space(c) {
            pending = any;
            pos[k] = written;
            continue;
        }
        if pending {
            out.push(' ');
            written += 1;
            pending = false;
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
    let mut spans: Vec<(usize, usize)> = hits
        .iter()
        .filter(|h| h.start >= start && h.end <= end && h.start < h.end)
        .map(|h| (pos[h.start - start], pos[h.end - start - 1] + 1))
        .collect();
    spans.sort_unstable();
    let mut highlights: Vec<(usize, usize)> = Vec::new();
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

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

    #[test]
    fn a_window_cuts_as_the_whole_text(
        text in "([a-z]{1,6}|é|数|[ \t\n\r\x0B\x0C\x1C-\x1F]|\u{a0}){0,80}",
        start_frac in 0.0f64..1.0,
        width in 0usize..60,
        hit_pairs in proptest::collection::vec((0usize..200, 1usize..8), 0..6),
    ) {
        let chars: Vec<char> = text.chars().collect();
        let n = chars.len();
        let start = ((n as f64) * start_frac) as usize;
        let end = (start + width).min(n);
        let hits: Vec<Hit> = hit_pairs
            .iter()
            .filter(|&&(s, _)| s < n)
            .map(|&(s, len)| Hit { start: s, end: (s + len).min(n), term: 0 })
            .collect();
        let to = end.max(start + 30).min(n);
        let want = cut_whole(&chars, start, end, &hits);
        let got = cut(&chars[start..to], start, end, n, &hits, true);
        proptest::prop_assert_eq!(&got, &want);
        // Without spans: the same text.
        let text_only = cut(&chars[start..to], start, end, n, &hits, false);
        proptest::prop_assert_eq!(&text_only.text, &want.text);
        proptest::prop_assert!(text_only.highlights.is_empty());
        // An ASCII text is cut from its bytes, in place: the same snippet.
        if text.is_ascii() {
            let got = cut(&text.as_bytes()[start..to], start, end, n, &hits, true);
            proptest::prop_assert_eq!(&got, &want);
            let text_only = cut(&text.as_bytes()[start..to], start, end, n, &hits, false);
            proptest::prop_assert_eq!(&text_only.text, &want.text);
        }
    }
}

#[test]
fn char_offsets_in_any_order() {
    let text = "naïve 東京の天気 café Straße x";
    let bytes: Vec<usize> = text
        .char_indices()
        .map(|(b, _)| b)
        .chain([text.len()])
        .collect();
    let chars = |b: usize| text[..b].chars().count();
    // Ascending, overlapping (as CJK grams), going back, and repeated.
    let pairs = [
        (0, 3),
        (1, 4),
        (2, 4),
        (6, 9),
        (0, 1),
        (5, 10),
        (5, 10),
        (12, 13),
    ];
    let mut hits: Vec<Hit> = pairs
        .iter()
        .map(|&(s, e)| Hit {
            start: bytes[s],
            end: bytes[e],
            term: 0,
        })
        .collect();
    let want: Vec<(usize, usize)> = hits
        .iter()
        .map(|h| (chars(h.start), chars(h.end)))
        .collect();
    to_char_offsets(text, &mut hits);
    let got: Vec<(usize, usize)> = hits.iter().map(|h| (h.start, h.end)).collect();
    assert_eq!(got, want);
}
