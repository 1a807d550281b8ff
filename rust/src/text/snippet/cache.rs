//! A process-wide cache of whole analyses of snippet texts, by content.
//!
//! A page's snippets are most of what hydrating a search costs once its rows are read
//! (SPEC §4.3; `docs/benchmarks.md`), and a long-running process (the MCP server, an
//! agent's session) keeps showing the same sections for related queries. The filtered
//! scan ([`Analyzer::hits`]) analyzes only the words that can yield the query's terms, so
//! it must run again for every new query; a text's whole analysis, once kept, answers any
//! query's hits with one pass over its words.
//!
//! - Keyed by the text itself (a hash of its length and ends, then the text compared in
//!   full), so an entry can never be stale: a changed section is another text. Only the trimmed text that
//!   [`Analyzer::hits`] would scan is kept, with every term the pipeline yields for it
//!   (as an id in the cache's term table) and its char offsets.
//! - Built on a text's third sighting ([`KEEP_AT`]): the earlier ones are answered by the
//!   filtered scan and only counted (by hash), so a one-off search pays a hash of the text
//!   more, not a whole analysis. The whole analysis (with the indexer's shortcuts,
//!   [`Tables`]) costs about two and a half scans, and a kept text's hits about half a
//!   scan (SciFact), so a text pays for it from its fifth sighting on; waiting for the
//!   third keeps the texts a process shows only once or twice from paying it at all.
//! - The hits it gives are exactly the filtered scan's: both are the terms
//!   [`pipeline::run`] yields for the text, in its order, kept when they are one of the
//!   query's (the scan's property tests hold it to that reference; `tests.rs` holds the
//!   cache to the scan).
//! - Bounded: at most [`LIMIT`] bytes of heap for the process (the texts, their words,
//!   the maps and the tables, counted by capacity), emptied whole, and freed, rather than
//!   pass it; texts over [`MAX_TEXT_BYTES`] are never kept.
//! - One for the process, behind a lock, not one per thread: the MCP server runs each
//!   call on whichever worker thread is free, and a bound per thread would multiply by
//!   the threads. The lock is held for a lookup and a kept text's matching (a few µs),
//!   and for a text's analysis when it is kept; never for a scan, and never waited for
//!   (see [`hits`]).
//!
//! The analysis depends on the text alone: the analyzer has one configuration
//! ([`Analyzer::id`]), so one cache serves every `Analyzer`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{LazyLock, Mutex};

use super::{to_char_offsets, Hit};
use crate::text::intern::{simple_word_id, STOP};
use crate::text::stem::CachedStemmer;
use crate::text::strtable::{Found, StrTable};
use crate::text::{pipeline, Analyzer, FxHasher};

/// Bytes at each end of a text that its key hashes.
const HASHED_BYTES: usize = 128;
/// Bytes the cache counts before it is emptied.
pub(crate) const LIMIT: usize = 32 << 20;
/// Texts longer than this are scanned each time, never kept.
pub(crate) const MAX_TEXT_BYTES: usize = 1 << 20;
/// A text is kept on this sighting; the earlier ones are scanned and counted.
pub(super) const KEEP_AT: u8 = 3;
/// Texts seen but not kept that the cache counts; forgotten all at once when full.
const SEEN_LIMIT: usize = 1 << 16;
/// What an entry's two boxes cost beyond their bytes (the allocator's headers, rounding).
const ENTRY_OVERHEAD: usize = 64;

type Fx = BuildHasherDefault<FxHasher>;

/// One word of a kept text: its term's id and its char offsets.
#[derive(Clone, Copy)]
struct Word {
    term: u32,
    start: u32,
    end: u32,
}

/// A kept text and its whole analysis: every term it yields, in the pipeline's order.
struct Analyzed {
    text: Box<str>,
    words: Box<[Word]>,
}

impl Analyzed {
    /// What the entry's boxes hold on the heap.
    fn heap_bytes(&self) -> usize {
        ENTRY_OVERHEAD + self.text.len() + std::mem::size_of_val(&*self.words)
    }
}

/// The heap a hash map of `capacity` entries of `T` holds, from above: its buckets (at
/// most 8/7 of the capacity, and a group's worth) with a control byte each.
fn map_bytes<T>(capacity: usize) -> usize {
    (capacity * 8 / 7 + 16) * (std::mem::size_of::<T>() + 1)
}

pub(super) struct Cache {
    /// Sightings of texts not kept, by hash.
    seen: HashMap<u64, u8, Fx>,
    texts: HashMap<u64, Analyzed, Fx>,
    /// The terms of the kept texts, by id, and the shortcuts of their analysis.
    tables: Tables,
    /// The kept entries' heap (`Analyzed::heap_bytes`).
    entries: usize,
    /// What [`Cache::heap_bytes`] may reach; the cache is emptied rather than pass it.
    limit: usize,
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(Cache::new(LIMIT)));

/// [`Analyzer::hits`] of `text` for `terms`, from the process's cache where it can.
///
/// Never waits for the lock: a thread that finds it taken (another thread looking up,
/// or analyzing a body to keep it) scans instead, for the same hits. So one thread's
/// analysis of a large body never delays another's snippets, and a child process forked
/// while the lock was held (it inherits it held, for good) still makes every snippet, by
/// scanning. A poisoned lock leaves every text to the scan too.
pub(super) fn hits(analyzer: &Analyzer, text: &str, terms: &[&str]) -> Vec<Hit> {
    if text.len() > MAX_TEXT_BYTES {
        return analyzer.hits(text, terms);
    }
    let cached = CACHE
        .try_lock()
        .ok()
        .and_then(|mut cache| cache.hits(analyzer, text, terms));
    cached.unwrap_or_else(|| analyzer.hits(text, terms))
}

/// Whether the process's cache keeps `text`, and its sightings counted if not.
#[cfg(test)]
pub(super) fn state_of(text: &str) -> (bool, u8) {
    let cache = CACHE.lock().expect("not poisoned");
    let key = hash(text);
    let kept = cache.texts.get(&key).is_some_and(|k| &*k.text == text);
    (kept, cache.seen.get(&key).copied().unwrap_or(0))
}

/// The key of `text`: a hash of its length and of its first and last [`HASHED_BYTES`]
/// bytes (all of a shorter text). Texts that share those and differ in between share a
/// key; the text compared in full tells them apart (the second is then scanned, never
/// served the first one's words), so this costs only speed, not exactness, and saves
/// hashing every byte of every text shown.
pub(super) fn hash(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut h = FxHasher::default();
    h.write_usize(bytes.len());
    if bytes.len() <= 2 * HASHED_BYTES {
        h.write(bytes);
    } else {
        h.write(&bytes[..HASHED_BYTES]);
        h.write(&bytes[bytes.len() - HASHED_BYTES..]);
    }
    h.finish()
}

impl Cache {
    pub(super) fn new(limit: usize) -> Self {
        Cache {
            seen: HashMap::default(),
            texts: HashMap::default(),
            tables: Tables::default(),
            entries: 0,
            limit,
        }
    }

    /// (texts kept, texts seen but not kept, bytes counted).
    #[cfg(test)]
    pub(super) fn stats(&self) -> (usize, usize, usize) {
        (self.texts.len(), self.seen.len(), self.heap_bytes())
    }

    /// The hits from the kept analysis of `text`, making it on the text's
    /// [`KEEP_AT`]th sighting; `None` when the caller is to scan (an earlier sighting, a
    /// hash collision).
    pub(super) fn hits(
        &mut self,
        analyzer: &Analyzer,
        text: &str,
        terms: &[&str],
    ) -> Option<Vec<Hit>> {
        let key = hash(text);
        if let Some(kept) = self.texts.get(&key) {
            return (&*kept.text == text).then(|| self.matching(kept, terms));
        }
        let sightings = self.seen.entry(key).or_insert(0);
        *sightings += 1;
        if *sightings < KEEP_AT {
            if self.seen.len() > SEEN_LIMIT {
                self.seen.clear();
            }
            return None;
        }
        self.seen.remove(&key);
        let mut kept = self.analyze(analyzer, text);
        if self.heap_bytes() + kept.heap_bytes() > self.limit {
            // Emptied, then analyzed again: emptying renumbers the terms.
            self.clear();
            kept = self.analyze(analyzer, text);
            if self.heap_bytes() + kept.heap_bytes() > self.limit {
                self.clear();
                return None;
            }
        }
        self.entries += kept.heap_bytes();
        let hits = self.matching(&kept, terms);
        self.texts.insert(key, kept);
        Some(hits)
    }

    /// The whole analysis of `text`, its terms added to the table.
    fn analyze(&mut self, analyzer: &Analyzer, text: &str) -> Analyzed {
        let mut hits: Vec<Hit> = Vec::new();
        pipeline::run_sink(
            &analyzer.stemmer,
            text,
            WordSink {
                tables: &mut self.tables,
                text,
                out: &mut hits,
                recording: None,
            },
        );
        if !text.is_ascii() {
            to_char_offsets(text, &mut hits);
        }
        // Offsets fit in u32: the text is at most `MAX_TEXT_BYTES`; ids too (`LIMIT`
        // bounds the table far lower).
        let words = hits
            .iter()
            .map(|h| Word {
                term: h.term as u32,
                start: h.start as u32,
                end: h.end as u32,
            })
            .collect();
        Analyzed {
            text: text.into(),
            words,
        }
    }

    /// The words of `kept` whose term is one of `terms` (distinct), as hits on `terms`,
    /// in the pipeline's order.
    fn matching(&self, kept: &Analyzed, terms: &[&str]) -> Vec<Hit> {
        let ids: Vec<Option<u32>> = terms
            .iter()
            .map(|t| match self.tables.terms.find(t) {
                Found::At(i) => Some(i as u32),
                Found::Vacant { .. } => None,
            })
            .collect();
        // Bit `id % 64` of each id: most words are passed over on one test of it.
        let mask = ids.iter().flatten().fold(0u64, |m, &id| m | 1 << (id % 64));
        if mask == 0 {
            return Vec::new();
        }
        kept.words
            .iter()
            .filter(|w| mask >> (w.term % 64) & 1 == 1)
            .filter_map(|w| {
                let term = ids.iter().position(|&id| id == Some(w.term))?;
                Some(Hit {
                    start: w.start as usize,
                    end: w.end as usize,
                    term,
                })
            })
            .collect()
    }

    /// Everything the cache holds on the heap, from above: the kept entries, the maps'
    /// buckets and the tables, by capacity.
    fn heap_bytes(&self) -> usize {
        self.entries
            + map_bytes::<(u64, u8)>(self.seen.capacity())
            + map_bytes::<(u64, Analyzed)>(self.texts.capacity())
            + self.tables.heap_bytes()
    }

    /// Empties the cache and frees what it held.
    fn clear(&mut self) {
        self.seen = HashMap::default();
        self.texts = HashMap::default();
        self.tables = Tables::default();
        self.entries = 0;
    }
}

/// The term table of the kept texts, and two shortcuts of their analysis that the
/// indexer's [`crate::text::TermIds`] also takes: a simple word as written to its term's
/// id, and an all-ASCII chunk (at most [`CHUNK_MAX_BYTES`]) to the terms it yields, with
/// their offsets in it. Prose repeats its chunks and words, so most of a text is looked
/// up, not analyzed; the result is the same (a chunk's terms depend on the chunk alone).
#[derive(Default)]
struct Tables {
    terms: StrTable<()>,
    words: StrTable<u32>,
    chunks: StrTable<ChunkSpans>,
    /// `(term id, start, end)`, the offsets from the chunk's start.
    spans: Vec<(u32, u8, u8)>,
}

/// Longer chunks rarely repeat, and their offsets would not fit a `u8`.
const CHUNK_MAX_BYTES: usize = 48;

/// Where a chunk's terms are in `Tables::spans`, and how many positions it takes.
#[derive(Clone, Copy)]
struct ChunkSpans {
    start: u32,
    len: u32,
    advance: u32,
}

impl Tables {
    fn term(&mut self, term: &str) -> u32 {
        // Fewer than 2^31 keys (the table checks): never `STOP`.
        self.terms.insert(term, ()).0 as u32
    }

    /// What the tables hold on the heap, by capacity.
    fn heap_bytes(&self) -> usize {
        self.terms.heap_bytes()
            + self.words.heap_bytes()
            + self.chunks.heap_bytes()
            + self.spans.capacity() * std::mem::size_of::<(u32, u8, u8)>()
    }
}

/// The walk's sink for a kept text: each term, as an id, with its byte offsets.
struct WordSink<'a> {
    tables: &'a mut Tables,
    text: &'a str,
    out: &'a mut Vec<Hit>,
    /// While a chunk is analyzed to be remembered: its byte offset and where its terms
    /// start in `spans`.
    recording: Option<(usize, usize)>,
}

impl WordSink<'_> {
    #[inline]
    fn emit(&mut self, id: u32, start: usize, end: usize) {
        if let Some((base, _)) = self.recording {
            let spans = &mut self.tables.spans;
            spans.push((id, (start - base) as u8, (end - base) as u8));
        }
        self.out.push(Hit {
            start,
            end,
            term: id as usize,
        });
    }

    /// Where `chunk`, a slice of the text, starts in it.
    fn offset_of(&self, chunk: &str) -> usize {
        chunk.as_ptr() as usize - self.text.as_ptr() as usize
    }
}

impl pipeline::Sink for WordSink<'_> {
    #[inline]
    fn term(&mut self, t: pipeline::Term<'_>) {
        let id = self.tables.term(t.text);
        self.emit(id, t.start, t.end);
    }

    #[inline]
    fn simple(
        &mut self,
        stemmer: &CachedStemmer,
        word: &str,
        scratch: &mut String,
        (_, start, end): (u32, usize, usize),
    ) {
        let terms = &mut self.tables.terms;
        let id = simple_word_id(&mut self.tables.words, stemmer, word, scratch, |t| {
            terms.insert(t, ()).0 as u32
        });
        if id != STOP {
            self.emit(id, start, end);
        }
    }

    #[inline]
    fn replay(&mut self, chunk: &str, _position: u32) -> Option<u32> {
        let c = self.tables.chunks.get(chunk)?;
        let base = self.offset_of(chunk);
        let spans = &self.tables.spans[c.start as usize..(c.start + c.len) as usize];
        self.out.extend(spans.iter().map(|&(id, start, end)| Hit {
            start: base + usize::from(start),
            end: base + usize::from(end),
            term: id as usize,
        }));
        Some(c.advance)
    }

    #[inline]
    fn begin_chunk(&mut self, chunk: &str, _position: u32) -> bool {
        if chunk.len() > CHUNK_MAX_BYTES {
            return false;
        }
        self.recording = Some((self.offset_of(chunk), self.tables.spans.len()));
        true
    }

    #[inline]
    fn end_chunk(&mut self, chunk: &str, advance: u32) {
        let Some((_, start)) = self.recording.take() else {
            return;
        };
        let len = self.tables.spans.len() - start;
        let c = ChunkSpans {
            start: start as u32,
            len: len as u32,
            advance,
        };
        self.tables.chunks.insert(chunk, c);
    }
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    use super::*;

    /// The filtered scan's hits, as comparable tuples.
    fn scan(a: &Analyzer, text: &str, terms: &[&str]) -> Vec<(usize, usize, usize)> {
        tuples(&a.hits(text, terms))
    }

    fn tuples(hits: &[Hit]) -> Vec<(usize, usize, usize)> {
        hits.iter().map(|h| (h.start, h.end, h.term)).collect()
    }

    /// Every term `text` yields, and a few it does not.
    fn terms_of(a: &Analyzer, text: &str) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        a.analyze(text, |t, _, _, _| all.push(t.to_string()));
        all.extend(["zzyzx", "ownership", "cell", "東京"].map(String::from));
        all.sort();
        all.dedup();
        all
    }

    /// The cache answers a text's first sightings with `None` (the caller scans), keeps it
    /// on the [`KEEP_AT`]th, and from then on gives the scan's hits for any terms.
    fn check(text: &str) {
        let a = Analyzer::new();
        let mut cache = Cache::new(LIMIT);
        let all = terms_of(&a, text);
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        for _ in 1..KEEP_AT {
            assert!(cache.hits(&a, text, &refs).is_none(), "{text:?}");
            assert_eq!(cache.stats().0, 0);
        }
        let kept = cache
            .hits(&a, text, &refs)
            .expect("kept on the third sighting");
        assert_eq!(tuples(&kept), scan(&a, text, &refs), "{text:?}");
        assert_eq!(cache.stats().0, 1);
        for (k, t) in refs.iter().enumerate() {
            let one = cache.hits(&a, text, &[t]).expect("kept");
            assert_eq!(tuples(&one), scan(&a, text, &[t]), "{text:?} term {t:?}");
            // Pairs, in both orders: the hits' term indices follow the caller's order.
            let other = refs[(k * 7 + 3) % refs.len()];
            if other != *t {
                for pair in [[*t, other], [other, *t]] {
                    let got = cache.hits(&a, text, &pair).expect("kept");
                    assert_eq!(tuples(&got), scan(&a, text, &pair), "{text:?} {pair:?}");
                }
            }
        }
        assert!(cache.hits(&a, text, &["zzyzx"]).expect("kept").is_empty());
    }

    #[test]
    fn kept_analyses_give_the_scans_hits() {
        check(
            "Dying cells, lying skies: the Ownership of HashMap<K, V> in hash_map files, \
             TtcA x_ray X-Ray v3.14beta 1,000 e.g. std::io can't Bob's IL-6 mRNA CD4+ \
             __init__ getHTTPResponse2Code tying ties 'quoted' end. The cells' cell cells.",
        );
        check(
            "Straße naïve cafés; 東京の天気 数据库 한국어 ｶﾞ e\u{301}t\u{e9} \u{a0}β-cells \
             and Cell-free DNA in 东京 cells.",
        );
        check("");
        check("the a of");
        // Hundreds of distinct terms in one text: ids past 64, the matching mask's width.
        for words in super::super::tests::vocabulary().chunks(300).take(3) {
            check(&words.join(" "));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        #[test]
        fn kept_analyses_match_the_scan_on_any_text(
            text in "([A-Za-z]{1,8}|[A-Z][a-z]?|[0-9]{1,3}|dying|x_ray|HTTPServer|v2\\.0|D's|Straße|naïve|数据库|東京の天気|ｶﾞ|\u{301}|\u{200D}|[ \t\n_.:,;'()+/-]|\u{a0}|é){0,30}"
        ) {
            check(&text);
        }
    }

    #[test]
    fn the_process_cache_serves_snippets() {
        let a = Analyzer::new();
        // A text no other test uses, so the cache sees it first here.
        let text =
            "Kept snippets: zebrafish cardiomyocytes regenerate; zebrafish fins too. ".repeat(8);
        let trimmed = text.trim_end();
        let want = a.snippet(&text, &["zebrafish", "fin"], 60, None);
        // Other tests' snippets may hold the lock at a sighting, which is then scanned
        // and not counted: the text is kept after at least `KEEP_AT` sightings.
        let mut calls = 1;
        while !state_of(trimmed).0 {
            let (_, seen) = state_of(trimmed);
            assert!(seen < KEEP_AT);
            assert_eq!(a.snippet(&text, &["zebrafish", "fin"], 60, None), want);
            calls += 1;
            assert!(calls < 1000, "never kept");
        }
        assert!(calls >= usize::from(KEEP_AT));
        // Kept: served from the cache, from another thread too.
        std::thread::scope(|s| {
            s.spawn(|| {
                let b = Analyzer::new();
                assert_eq!(b.snippet(&text, &["zebrafish", "fin"], 60, None), want);
            });
        });
        assert_eq!(state_of(trimmed), (true, 0));
    }

    #[test]
    fn a_held_lock_is_never_waited_for() {
        let a = Analyzer::new();
        let text = "Lock holders: axolotl limbs regrow while the cache is busy.";
        let want = scan(&a, text, &["axolotl", "limb"]);
        // As in a child forked while another thread held it: held for good.
        let held = CACHE.lock().expect("not poisoned");
        let got = std::thread::scope(|s| {
            s.spawn(|| {
                (0..=KEEP_AT)
                    .map(|_| tuples(&hits(&a, text, &["axolotl", "limb"])))
                    .collect::<Vec<_>>()
            })
            .join()
            .expect("no panic")
        });
        drop(held);
        assert!(got.iter().all(|g| *g == want));
        assert_eq!(state_of(text), (false, 0));
    }

    #[test]
    fn what_is_counted_covers_the_heap() {
        let a = Analyzer::new();
        let texts: Vec<String> = (0..400)
            .map(|i| {
                format!(
                    "Section {i}: cells{i} divide (n = {i}); getHTTPResponse{i} returns \
                     naïve café 東京{i} data, and tissue_{i} grows in vitro. "
                )
                .repeat(1 + i % 5)
            })
            .collect();
        // This thread's stem caches grow on new words: grown first, so that what the
        // cache's life adds to this thread's heap is the cache's own.
        for t in &texts {
            a.analyze(t, |_, _, _, _| {});
        }
        let before = live_bytes();
        let mut cache = Cache::new(LIMIT);
        for t in &texts {
            for _ in 0..KEEP_AT {
                cache.hits(&a, t, &["cell", "divid"]);
            }
        }
        let held = usize::try_from(live_bytes() - before).expect("grew");
        let (kept, _, counted) = cache.stats();
        assert_eq!(kept, texts.len());
        assert!(held <= counted, "{held} bytes held, {counted} counted");
        assert!(counted <= 2 * held, "{held} bytes held, {counted} counted");
        drop(cache);
        assert!(live_bytes() - before <= 0, "freed");
    }

    #[test]
    fn a_full_cache_is_emptied_and_stays_bounded() {
        let a = Analyzer::new();
        let limit = 64 << 10;
        let mut cache = Cache::new(limit);
        let mut emptied = 0;
        let mut last_kept = 0;
        for i in 0..400 {
            let text =
                format!("Section {i}: cells{i} divide, and tissue{i} grows in vitro.").repeat(6);
            for sighting in 1..=KEEP_AT {
                let got = cache.hits(&a, &text, &["cell", "divid"]);
                assert_eq!(got.is_some(), sighting == KEEP_AT);
                if let Some(got) = got {
                    assert_eq!(tuples(&got), scan(&a, &text, &["cell", "divid"]));
                }
            }
            let (kept, _, bytes) = cache.stats();
            assert!(bytes <= limit, "{bytes} bytes counted over a {limit} limit");
            if kept < last_kept {
                emptied += 1;
            }
            last_kept = kept;
        }
        assert!(emptied >= 2, "emptied {emptied} times");
        // The terms were renumbered at each emptying: the kept texts still match.
        let text = "Section 399: cells399 divide, and tissue399 grows in vitro.".repeat(6);
        let got = cache.hits(&a, &text, &["tissue399", "grow"]).expect("kept");
        assert_eq!(tuples(&got), scan(&a, &text, &["tissue399", "grow"]));
    }

    #[test]
    fn an_entry_is_used_only_for_its_own_text() {
        let a = Analyzer::new();
        let mut cache = Cache::new(LIMIT);
        let (text, other) = ("cells divide", "tissue grows");
        // Another text kept under this one's hash, as a collision would.
        let kept = cache.analyze(&a, other);
        cache.texts.insert(hash(text), kept);
        assert!(cache.hits(&a, text, &["cell"]).is_none());
        assert!(cache.hits(&a, text, &["cell"]).is_none());
    }

    #[test]
    fn texts_with_the_same_ends_are_told_apart() {
        let a = Analyzer::new();
        let mut cache = Cache::new(LIMIT);
        let ends = "Prologue words of a template. ".repeat(6);
        let (one, two) = (
            format!("{ends} cells divide {ends}"),
            format!("{ends} tissue grows {ends}"),
        );
        assert_eq!(one.len(), two.len());
        assert_eq!(hash(&one), hash(&two));
        for _ in 0..KEEP_AT {
            cache.hits(&a, &one, &["cell"]);
        }
        assert!(cache.hits(&a, &one, &["cell"]).is_some());
        for _ in 0..=KEEP_AT {
            // Never the first text's words: scanned each time.
            assert!(cache.hits(&a, &two, &["cell", "tissu"]).is_none());
        }
        assert_eq!(scan(&a, &two, &["cell", "tissu"]).len(), 1);
    }

    #[test]
    fn long_texts_are_not_kept() {
        let a = Analyzer::new();
        let text = "cells ".repeat(MAX_TEXT_BYTES / 6 + 1);
        let text = text.trim_end();
        assert!(text.len() > MAX_TEXT_BYTES);
        for _ in 0..=KEEP_AT {
            assert_eq!(hits(&a, text, &["cell"]).len(), MAX_TEXT_BYTES / 6 + 1);
            assert_eq!(state_of(text), (false, 0));
        }
    }

    /// Bytes this thread has allocated and not freed, by the counting allocator below.
    fn live_bytes() -> isize {
        LIVE.with(Cell::get)
    }

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
    }

    /// The system allocator, counting each thread's live bytes (the tests of this crate
    /// only: `cargo test`'s library binary).
    struct Counting;

    // SAFETY: every call is passed to the system allocator unchanged; the count is a
    // thread-local `Cell`, which allocates nothing (`try_with`: not during thread exit).
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract for `alloc`, passed on.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                count(layout.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            // SAFETY: `p` came from `alloc`/`realloc` above, which are the system's.
            unsafe { System.dealloc(p, layout) };
            count(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            // SAFETY: as for `dealloc`, and the caller's contract for `realloc`.
            let q = unsafe { System.realloc(p, layout, size) };
            if !q.is_null() {
                count(size as isize - layout.size() as isize);
            }
            q
        }
    }

    fn count(delta: isize) {
        let _ = LIVE.try_with(|live| live.set(live.get() + delta));
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;
}
