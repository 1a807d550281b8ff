//! End-to-end tests of the analyzer's public contract: exact term/position lists per
//! behaviour of SPEC §4.1, the offset and position invariants as properties, and an
//! ignored throughput measurement on the Rust book.

use super::*;
use proptest::prelude::*;

/// `(term, position)` pairs from index-time analysis.
fn terms(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    Analyzer::new().analyze(text, |t, p, _, _| out.push((t.to_string(), p)));
    out
}

fn tp(list: &[(&str, u32)]) -> Vec<(String, u32)> {
    list.iter().map(|&(t, p)| (t.to_string(), p)).collect()
}

#[test]
fn analyzer_is_send_sync_and_shareable() {
    fn assert_send_sync<T: Send + Sync + std::fmt::Debug + Default>() {}
    assert_send_sync::<Analyzer>();
    assert_eq!(Analyzer::default().id(), Analyzer::new().id());
    assert!(format!("{:?}", Analyzer::new()).contains("en-snowball"));
}

#[test]
fn stop_words_leave_position_gaps() {
    assert_eq!(
        terms("The quick fox is in the box"),
        tp(&[("quick", 1), ("fox", 2), ("box", 6)])
    );
    assert!(terms("the and of to").is_empty());
}

#[test]
fn stemming() {
    assert_eq!(
        terms("running databases"),
        tp(&[("run", 0), ("databas", 1)])
    );
    assert_eq!(
        terms("Connections connected"),
        tp(&[("connect", 0), ("connect", 1)])
    );
}

#[test]
fn possessives() {
    assert_eq!(terms("John's book"), tp(&[("john", 0), ("book", 1)]));
    assert_eq!(
        terms("the parser’s state"),
        tp(&[("parser", 1), ("state", 2)])
    );
    assert_eq!(terms("don’t"), terms("don't"));
}

#[test]
fn nfkc_and_lowercase() {
    assert_eq!(terms("ＡＢＣ"), tp(&[("abc", 0)]));
    assert_eq!(terms("ﬁnd"), terms("find"));
    assert_eq!(terms("ΟΔΟΣ οδος"), tp(&[("οδοσ", 0), ("οδοσ", 1)]));
}

#[test]
fn camel_case_identifier() {
    assert_eq!(
        terms("parseHttpRequest"),
        tp(&[
            ("parsehttprequest", 0),
            ("pars", 0),
            ("http", 1),
            ("request", 2)
        ])
    );
    // The next word follows the last part.
    assert_eq!(terms("parseHttpRequest now")[4], ("now".to_string(), 3));
}

#[test]
fn snake_case_identifier() {
    assert_eq!(
        terms("snake_case"),
        tp(&[("snakecase", 0), ("snake", 0), ("case", 1)])
    );
    assert_eq!(terms("__init__"), tp(&[("init", 0)]));
}

#[test]
fn acronym_identifier() {
    assert_eq!(
        terms("HTTPServer"),
        tp(&[("httpserver", 0), ("http", 0), ("server", 1)])
    );
    assert_eq!(terms("HTTP"), tp(&[("http", 0)]));
}

#[test]
fn dotted_identifier() {
    assert_eq!(
        terms("foo.bar"),
        tp(&[("foobar", 0), ("foo", 0), ("bar", 1)])
    );
    assert_eq!(
        terms("os.path.join"),
        tp(&[("ospathjoin", 0), ("os", 0), ("path", 1), ("join", 2)])
    );
}

#[test]
fn letters_and_digits() {
    assert_eq!(terms("utf8"), tp(&[("utf8", 0), ("utf", 0), ("8", 1)]));
    assert_eq!(terms("UTF-8"), tp(&[("utf", 0), ("8", 1)]));
}

#[test]
fn identifier_parts_drop_stop_words_but_keep_positions() {
    assert_eq!(terms("isEmpty"), tp(&[("isempty", 0), ("empti", 1)]));
    assert_eq!(
        terms("get_the_value"),
        tp(&[("getthevalue", 0), ("get", 0), ("valu", 2)])
    );
}

#[test]
fn numbers_are_tokens() {
    assert_eq!(
        terms("port 8080 and 3.14"),
        tp(&[("port", 0), ("8080", 1), ("3.14", 3)])
    );
    assert_eq!(
        terms("commit 0efa37b"),
        tp(&[("commit", 0), ("0efa37b", 1)])
    );
}

#[test]
fn cjk_bigrams() {
    assert_eq!(terms("数据库"), tp(&[("数据", 0), ("据库", 1)]));
    assert_eq!(terms("库"), tp(&[("库", 0)]));
    assert_eq!(
        terms("数据库。索引"),
        tp(&[("数据", 0), ("据库", 1), ("索引", 2)])
    );
}

#[test]
fn cjk_mixed_with_latin() {
    assert_eq!(
        terms("Rust编程语言"),
        tp(&[("rust", 0), ("编程", 1), ("程语", 2), ("语言", 3)])
    );
    assert_eq!(
        terms("使用Rust数据库"),
        tp(&[("使用", 0), ("rust", 1), ("数据", 2), ("据库", 3)])
    );
    // UAX #29 joins Hangul with Latin letters; the analyzer splits them again.
    assert_eq!(
        terms("API한국어"),
        tp(&[("api", 0), ("한국", 1), ("국어", 2)])
    );
    assert_eq!(
        terms("東京タワー"),
        tp(&[("東京", 0), ("京タ", 1), ("タワ", 2), ("ワー", 3)])
    );
}

#[test]
fn cjk_offsets_are_per_gram() {
    let text = "用数据库";
    let q = Analyzer::new().analyze_query(text);
    let surfaces: Vec<&str> = q.iter().map(|t| t.surface.as_str()).collect();
    assert_eq!(surfaces, ["用数", "数据", "据库"]);
}

#[test]
fn long_terms_are_skipped_but_take_a_position() {
    let blob = "aGVsbG8gd29ybGQgdGhpcyBpcyBhIGJhc2U2NCBibG9iIHRoYXQgc2hvdWxkIGJlIHNraXBwZWQ";
    assert!(blob.len() > MAX_TOKEN_BYTES);
    assert_eq!(
        terms(&format!("before {blob} after")),
        tp(&[("befor", 0), ("after", 2)])
    );
    let long_word = "x".repeat(MAX_TOKEN_BYTES + 1);
    assert_eq!(terms(&format!("a {long_word} b")), tp(&[("b", 2)]));
    let ok_word = "7".repeat(MAX_TOKEN_BYTES);
    assert_eq!(terms(&ok_word), tp(&[(ok_word.as_str(), 0)]));
}

#[test]
fn long_identifiers_keep_their_parts() {
    let name = "test_analyzer_handles_possessive_forms_and_curly_apostrophes_correctly";
    assert!(name.len() > MAX_TOKEN_BYTES);
    let t = terms(name);
    // The whole form loses its 9 underscores and fits; each part is kept.
    assert_eq!(t[0], (name.replace('_', ""), 0));
    assert_eq!(t[1], ("test".to_string(), 0));
    assert!(t.iter().all(|(term, _)| term.len() <= MAX_TOKEN_BYTES));
    assert_eq!(t.last(), Some(&("correct".to_string(), 8)));
}

#[test]
fn offsets_point_at_the_source_word() {
    let text = "Ｈello, parseHttpRequest’s 数据";
    let mut spans = Vec::new();
    Analyzer::new().analyze(text, |t, _, s, e| spans.push((t.to_string(), &text[s..e])));
    assert_eq!(spans[0], ("hello".to_string(), "Ｈello"));
    assert_eq!(
        spans[1],
        ("parsehttprequest".to_string(), "parseHttpRequest’s")
    );
    assert_eq!(spans[4], ("request".to_string(), "parseHttpRequest’s"));
    assert_eq!(spans[5], ("数据".to_string(), "数据"));
}

#[test]
fn query_tokens_mark_the_whole_form_optional() {
    let q = Analyzer::new().analyze_query("the parseHttpRequest");
    let got: Vec<(&str, &str, u32, bool)> = q
        .iter()
        .map(|t| (t.term.as_str(), t.surface.as_str(), t.position, t.optional))
        .collect();
    assert_eq!(
        got,
        [
            ("parsehttprequest", "parseHttpRequest", 1, true),
            ("pars", "parseHttpRequest", 1, false),
            ("http", "parseHttpRequest", 2, false),
            ("request", "parseHttpRequest", 3, false),
        ]
    );
}

#[test]
fn empty_and_punctuation_only() {
    assert!(terms("").is_empty());
    assert!(terms("  ... --- !!! 🎉 ").is_empty());
}

#[test]
fn reentrant_sink_does_not_panic() {
    let a = Analyzer::new();
    let mut inner = 0;
    a.analyze("running databases", |_, _, _, _| {
        a.analyze("running", |_, _, _, _| inner += 1)
    });
    assert_eq!(inner, 2);
}

/// Characters that exercise every path: ASCII identifiers and numbers, curly apostrophes,
/// fullwidth forms, CJK with marks and selectors, case-mapping oddities.
const MIXED: &str =
    "[a-zA-Z0-9_.,:' ’ＡＢ１数据库東京タワーｶﾞ한국어\u{301}\u{E0100}\u{FE0F}ΣςİßǅⅫ½-]{0,80}";

fn check_invariants(text: &str) -> Result<(), TestCaseError> {
    check_invariants_in(text, Language::English)
}

fn check_invariants_in(text: &str, language: Language) -> Result<(), TestCaseError> {
    let a = Analyzer::for_language(language);
    let mut index = Vec::new();
    let mut last = 0u32;
    let mut bad = None;
    a.analyze(text, |t, p, s, e| {
        if !(s < e && e <= text.len() && text.is_char_boundary(s) && text.is_char_boundary(e))
            || p < last
            || t.is_empty()
            || t.len() > MAX_TOKEN_BYTES
        {
            bad.get_or_insert((t.to_string(), p, s, e));
        }
        last = p;
        index.push((t.to_string(), p));
    });
    prop_assert!(bad.is_none(), "bad token {:?} in {:?}", bad, text);
    let query: Vec<(String, u32)> = a
        .analyze_query(text)
        .into_iter()
        .map(|t| (t.term, t.position))
        .collect();
    prop_assert_eq!(&index, &query);
    // Term ids give the same terms and positions, on first sight and replayed from the
    // chunk cache, also after other texts filled the caches.
    let mut ids = TermIds::new();
    for _ in 0..2 {
        prop_assert_eq!(&ids_terms(&a, &mut ids, text), &index);
        ids_terms(
            &a,
            &mut ids,
            "Running, the camelCase DNA-binding 数据 x2 e.g. don't",
        );
    }
    Ok(())
}

/// `(term, position)` pairs from `analyze_ids`, the ids turned back into terms.
fn ids_terms(a: &Analyzer, ids: &mut TermIds, text: &str) -> Vec<(String, u32)> {
    let mut got = Vec::new();
    a.analyze_ids(text, ids, |id, p| got.push((id, p)));
    got.into_iter()
        .map(|(id, p)| (ids.term(id).to_string(), p))
        .collect()
}

#[test]
fn term_ids_match_analysis_with_a_warm_cache() {
    let a = Analyzer::new();
    let long_word = format!("{} tail", "abc".repeat(40));
    let long_chunk = format!("{} tail", "ab-".repeat(40));
    let texts = [
        "The quick brown fox's camelCase parseHTTPResponse, (DNA) and p53-dependent cells.",
        "Cells, cells; CELLS! the quick. 3.14 1,000 e.g. x_y __init__ std::io a:b",
        "數據庫 and 東京タワー after latin; then latin again: quick fox",
        "\u{301}combining after space \u{3000}ideographic space quick\u{00A0}nbsp",
        long_word.as_str(),
        long_chunk.as_str(),
        "",
        "   ",
    ];
    let mut ids = TermIds::new();
    for round in 0..3 {
        for t in texts {
            assert_eq!(ids_terms(&a, &mut ids, t), terms(t), "round {round}: {t:?}");
        }
    }
    assert!(!ids.is_empty());
    // Ids are dense and name distinct terms.
    let names: std::collections::HashSet<&str> =
        (0..ids.len() as u32).map(|i| ids.term(i)).collect();
    assert_eq!(names.len(), ids.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn invariants_on_any_unicode(text in any::<String>()) {
        check_invariants(&text)?;
    }

    #[test]
    fn invariants_on_mixed_scripts(text in MIXED) {
        check_invariants(&text)?;
    }

    #[test]
    fn invariants_in_every_language(
        text in prop_oneof![any::<String>(), MIXED.prop_map(String::from), LATIN],
        language in 0..LANGUAGES.len(),
    ) {
        check_invariants_in(&text, LANGUAGES[language])?;
    }
}

/// Words of the Latin, Greek and Cyrillic scripts with accents, ligatures, apostrophes
/// and elided articles: what elision, stemming and folding see.
const LATIN: &str = "((l|qu|dell|d)['’])?[a-zA-ZàâçéèêëîïôûùüÿñæœÀÉÖÜßåøáíóúãõșțăΑ-ωά-ώа-яё'\u{301}\u{308}]{1,30}( [a-zàéœß'’]{1,12}){0,6}";

/// Throughput on real prose and code (a folder of text files, `KBDB_TEXT_CORPUS`):
/// `cargo test --release text::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput() {
    let dir = std::env::var("KBDB_TEXT_CORPUS")
        .unwrap_or_else(|_| "/work/shared/corpora/rust-book/src".to_string());
    let dir = std::path::Path::new(&dir);
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if let Ok(s) = std::fs::read_to_string(entry.path()) {
            texts.push(s);
        }
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    assert!(bytes > 0, "no corpus at {}", dir.display());
    let a = Analyzer::new();
    let mut count = 0usize;
    for t in &texts {
        a.analyze(t, |_, _, _, _| count += 1); // warm the stem cache
    }
    let rounds = 10;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for t in &texts {
            a.analyze(t, |term, _, _, _| count += term.len());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let mb = (bytes * rounds) as f64 / 1e6;
    println!(
        "analyzer: {} files, {:.2} MB x {rounds} in {secs:.3}s = {:.1} MB/s (checksum {count})",
        texts.len(),
        bytes as f64 / 1e6,
        mb / secs
    );
}
