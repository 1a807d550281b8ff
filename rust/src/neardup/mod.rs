//! Near-duplicate signatures: word shingles, MinHash and LSH band keys (the hashing half of
//! `kbdb.neardup`; the tables, candidates and verification stay in Python).
//!
//! Every value is bit-identical to the Python implementation that made the band keys
//! already stored in knowledge bases (`PARAMS` is unchanged, so they stay valid):
//!
//! - **Tokens**: the text is lower-cased as `str.lower` does (full mapping, final sigma
//!   included; `python_lower`, from Python's tables), then cut into runs of word characters. A word character is what Python's
//!   `re` matches with `\w`: ASCII letters, digits and `_`, and the non-ASCII ranges of
//!   `tables::WORD_RANGES` (general categories L* and N* of Unicode
//!   `tables::UNICODE_VERSION`). Each token is hashed with CRC-32 of its UTF-8 bytes
//!   (`zlib.crc32`).
//! - **Shingles**: each run of `SHINGLE` consecutive token hashes `h` becomes
//!   `acc = SHINGLE; acc = acc * FNV + h[j]` (wrapping), then a splitmix-style finalizer. A
//!   text with fewer tokens than `SHINGLE` has one shingle, `acc = len; acc = acc * FNV +
//!   h[j]`, without the finalizer. A text without tokens has no shingles and no signature.
//! - **MinHash**: value `i` is the minimum over the shingles of the splitmix64 finalizer of
//!   `shingle XOR SEEDS[i]`.
//! - **Band keys**: band `b` is `sum_r sig[b * ROWS + r] * BAND_MUL[r] + b * GOLDEN`, then a
//!   finalizer.
//!
//! The seeds and the word table are generated from Python (`scripts/gen_neardup_tables.py`)
//! and checked against it in `tests/test_neardup_core.py`.

mod tables;

use rayon::prelude::*;

pub use tables::{BANDS, PARAMS, PERMS, ROWS, UNICODE_VERSION};
use tables::{BAND_MUL, CASED, CASE_IGNORABLE, LOWER, SEEDS, WORD_RANGES};

/// Tokens per shingle.
pub const SHINGLE: usize = 2;
const FNV: u64 = 0x0100_0000_01B3;
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// Texts per rayon task in the batch calls: large enough that scheduling is noise.
const PAR_CHUNK: usize = 64;

/// The band keys of one section.
pub type BandKeys = [u64; BANDS];

fn in_ranges(table: &[(u32, u32)], u: u32) -> bool {
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < u {
                std::cmp::Ordering::Less
            } else if lo > u {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Whether Python's `re` matches `c` with `\w`.
#[inline]
pub fn is_word(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    in_ranges(&WORD_RANGES, u)
}

fn is_cased(c: char) -> bool {
    in_ranges(&CASED, c as u32)
}

fn is_case_ignorable(c: char) -> bool {
    in_ranges(&CASE_IGNORABLE, c as u32)
}

const CAPITAL_SIGMA: char = '\u{3A3}';

/// Python's final-sigma rule for the capital sigma at `chars[i]`: final when a cased
/// letter precedes it and none follows, case-ignorable characters skipped both ways.
fn final_sigma(chars: &[char], i: usize) -> bool {
    let before = chars[..i].iter().rev().find(|c| !is_case_ignorable(**c));
    if !before.is_some_and(|c| is_cased(*c)) {
        return false;
    }
    let after = chars[i + 1..].iter().find(|c| !is_case_ignorable(**c));
    !after.is_some_and(|c| is_cased(*c))
}

/// `str.lower` of Python, from its own tables (so independent of the Unicode version of
/// Rust's standard library).
pub fn python_lower(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if c == CAPITAL_SIGMA {
            out.push(if final_sigma(&chars, i) {
                '\u{3C2}'
            } else {
                '\u{3C3}'
            });
        } else {
            match LOWER.binary_search_by_key(&(c as u32), |e| e.0) {
                Ok(k) => {
                    let (_, a, b) = LOWER[k];
                    out.extend(
                        [a, b]
                            .into_iter()
                            .filter(|&v| v != 0)
                            .filter_map(char::from_u32),
                    );
                }
                Err(_) => out.push(c),
            }
        }
    }
    out
}

/// Calls `f` with each token of `text` (lower-cased word runs), in order.
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    if text.is_ascii() {
        // ASCII: lower-case each token into a small buffer, no whole-text copy.
        let mut buf = String::new();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                buf.clear();
                buf.push_str(&text[start..i]);
                buf.make_ascii_lowercase();
                f(&buf);
            } else {
                i += 1;
            }
        }
        return;
    }
    let lower = python_lower(text);
    let mut start: Option<usize> = None;
    for (i, c) in lower.char_indices() {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                f(&lower[s..i]);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        f(&lower[s..]);
    }
}

/// The tokens of `text` (for tests and debugging; the hot path never allocates them).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

/// CRC-32 of each token, appended to `out`.
pub fn token_hashes(text: &str, out: &mut Vec<u64>) {
    for_each_token(text, |t| out.push(u64::from(crc32fast::hash(t.as_bytes()))));
}

/// The shingle hashes of a text's token hashes `th`, appended to `out` (duplicates kept,
/// in text order). Nothing for no tokens.
pub fn shingle_hashes(th: &[u64], out: &mut Vec<u64>) {
    if th.is_empty() {
        return;
    }
    if th.len() < SHINGLE {
        let mut acc = th.len() as u64;
        for &v in th {
            acc = acc.wrapping_mul(FNV).wrapping_add(v);
        }
        out.push(acc);
        return;
    }
    out.extend(th.windows(SHINGLE).map(shingle_of));
}

/// The sorted, distinct shingle hashes of `text` (empty: no tokens).
pub fn shingles(text: &str) -> Vec<u64> {
    let mut th = Vec::new();
    token_hashes(text, &mut th);
    let mut out = Vec::with_capacity(th.len());
    shingle_hashes(&th, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

#[inline(always)]
fn mix(x: u64) -> u64 {
    let mut z = x;
    z ^= z >> 30;
    z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 27;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline(always)]
fn minhash_into(sh: &[u64], sig: &mut [u64; PERMS]) {
    for &x in sh {
        for (m, &s) in sig.iter_mut().zip(SEEDS.iter()) {
            *m = (*m).min(mix(x ^ s));
        }
    }
}

/// The same loop compiled for AVX-512 (64-bit lane multiply and unsigned min), which the
/// baseline x86-64 target lacks: about 4x faster where the CPU has it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn minhash_avx512(sh: &[u64], sig: &mut [u64; PERMS]) {
    minhash_into(sh, sig)
}

/// Folds `sh` into the running minima `sig`.
fn minhash_update(sh: &[u64], sig: &mut [u64; PERMS]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
        {
            // SAFETY: the CPU has the features the function is compiled for.
            unsafe { minhash_avx512(sh, sig) };
            return;
        }
    }
    minhash_into(sh, sig);
}

/// `PERMS` MinHash values of a non-empty shingle list (duplicates do not change a minimum).
pub fn minhash(sh: &[u64]) -> [u64; PERMS] {
    let mut sig = [u64::MAX; PERMS];
    minhash_update(sh, &mut sig);
    sig
}

/// The `BANDS` keys of a MinHash signature.
pub fn band_keys_of(sig: &[u64; PERMS]) -> BandKeys {
    let mut keys = [0u64; BANDS];
    for (b, key) in keys.iter_mut().enumerate() {
        let rows = &sig[b * ROWS..(b + 1) * ROWS];
        let mut k = rows
            .iter()
            .zip(BAND_MUL.iter())
            .fold(0u64, |acc, (&v, &m)| acc.wrapping_add(v.wrapping_mul(m)));
        k = k.wrapping_add((b as u64).wrapping_mul(GOLDEN));
        k ^= k >> 31;
        k = k.wrapping_mul(0x94D0_49BB_1331_11EB);
        *key = k ^ (k >> 29);
    }
    keys
}

/// Shingles per MinHash update: the buffer between the token stream and the vectorised
/// loop, so a section of any size is signed in bounded memory.
const SIGN_CHUNK: usize = 1024;

/// The hash of one run of `SHINGLE` token hashes.
#[inline]
fn shingle_of(window: &[u64]) -> u64 {
    let mut acc = SHINGLE as u64;
    for &v in window {
        acc = acc.wrapping_mul(FNV).wrapping_add(v);
    }
    acc ^= acc >> 29;
    acc = acc.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    acc ^ (acc >> 32)
}

/// The band keys of `text`, or None when it has no tokens. Streams: tokens are hashed,
/// shingled and folded into the MinHash as they come, `SIGN_CHUNK` shingles at a time.
pub fn band_keys(text: &str) -> Option<BandKeys> {
    let mut buf = Vec::with_capacity(SIGN_CHUNK);
    band_keys_with(text, &mut buf)
}

fn band_keys_with(text: &str, buf: &mut Vec<u64>) -> Option<BandKeys> {
    buf.clear();
    let mut sig = [u64::MAX; PERMS];
    let mut window = [0u64; SHINGLE];
    let mut n = 0usize;
    for_each_token(text, |t| {
        let h = u64::from(crc32fast::hash(t.as_bytes()));
        if n < SHINGLE {
            window[n] = h;
        } else {
            window.copy_within(1.., 0);
            window[SHINGLE - 1] = h;
        }
        n += 1;
        if n >= SHINGLE {
            buf.push(shingle_of(&window));
            if buf.len() == SIGN_CHUNK {
                minhash_update(buf, &mut sig);
                buf.clear();
            }
        }
    });
    match n {
        0 => return None,
        n if n < SHINGLE => shingle_hashes(&window[..n], buf),
        _ => {}
    }
    minhash_update(buf, &mut sig);
    Some(band_keys_of(&sig))
}

/// `band_keys` of many texts, in parallel (rayon), in input order.
pub fn batch_band_keys<S: AsRef<str> + Sync>(texts: &[S]) -> Vec<Option<BandKeys>> {
    texts
        .par_chunks(PAR_CHUNK)
        .flat_map_iter(|chunk| {
            let mut buf = Vec::with_capacity(SIGN_CHUNK);
            chunk
                .iter()
                .map(|t| band_keys_with(t.as_ref(), &mut buf))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `shingles` of many texts, in parallel, in input order.
pub fn batch_shingles<S: AsRef<str> + Sync>(texts: &[S]) -> Vec<Vec<u64>> {
    texts
        .par_chunks(PAR_CHUNK)
        .flat_map_iter(|chunk| {
            chunk
                .iter()
                .map(|t| shingles(t.as_ref()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_follow_python_word_rules() {
        assert_eq!(tokens("Hello, World_2!"), ["hello", "world_2"]);
        assert_eq!(tokens(""), Vec::<String>::new());
        assert_eq!(tokens("  ...  "), Vec::<String>::new());
        // Final sigma, as str.lower; a combining mark (Mn) is not a word character.
        assert_eq!(tokens("ΟΔΟΣ ΟΔΟΣ."), ["οδος", "οδος"]);
        assert_eq!(tokens("cafe\u{301} Ünïcode"), ["cafe", "ünïcode"]);
        // U+0130 lower-cases to "i" + U+0307 (a mark): the token stops at the mark.
        assert_eq!(tokens("\u{130}x"), ["i", "x"]);
        assert_eq!(tokens("日本語 ٣٤"), ["日本語", "٣٤"]);
        // Case-ignorable characters are looked through: "A'Σ" ends in a final sigma.
        assert_eq!(python_lower("A'Σ"), "a'ς");
        assert_eq!(python_lower("Σ"), "σ");
        assert_eq!(python_lower("ΑΣ'Α"), "ασ'α");
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        for table in [&WORD_RANGES[..], &CASED[..], &CASE_IGNORABLE[..]] {
            for w in table.windows(2) {
                assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0);
            }
        }
        assert!(LOWER.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(is_word('é') && is_word('ß') && is_word('٣') && !is_word('\u{301}'));
        assert!(!is_word('-') && !is_word(' ') && is_word('_'));
    }

    #[test]
    fn short_and_empty_texts() {
        assert_eq!(band_keys(""), None);
        assert_eq!(band_keys("!!"), None);
        let one = shingles("word");
        assert_eq!(one.len(), 1);
        let h = u64::from(crc32fast::hash(b"word"));
        assert_eq!(one[0], FNV.wrapping_add(h));
        assert!(band_keys("word").is_some());
    }

    #[test]
    fn shingles_are_sorted_distinct_and_order_free_for_keys() {
        let sh = shingles("a b a b a b c");
        assert!(sh.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sh.len(), 3); // "a b", "b a", "b c"
        assert_eq!(band_keys("a b a b c"), band_keys("a b a b a b c"));
        assert_ne!(band_keys("a b c"), band_keys("c b a"));
    }

    #[test]
    fn streaming_keys_equal_keys_of_the_shingle_list() {
        let long: String = (0..5000).map(|i| format!("w{} ", i % 777)).collect();
        for text in ["one", "one two", "a b c d e f", long.as_str()] {
            let sh = shingles(text);
            assert_eq!(
                band_keys(text),
                Some(band_keys_of(&minhash(&sh))),
                "{text:.20}"
            );
        }
    }

    #[test]
    fn batch_matches_single() {
        let texts: Vec<String> = (0..300)
            .map(|i| format!("section {i} about {} things", i % 7))
            .chain([String::new(), "x".into()])
            .collect();
        let batch = batch_band_keys(&texts);
        for (t, b) in texts.iter().zip(&batch) {
            assert_eq!(&band_keys(t), b);
        }
        let sh = batch_shingles(&texts);
        for (t, s) in texts.iter().zip(&sh) {
            assert_eq!(&shingles(t), s);
        }
    }
}
