//! Identifier splitting: where one normalized (NFKC, case-preserving) word breaks into
//! parts. `parseHttpRequest` → `parse|Http|Request`, `HTTPServer` → `HTTP|Server`,
//! `snake_case` → `snake|case`, `foo.bar` → `foo|bar`, `utf8` → `utf|8`.
//!
//! Rules, in order:
//! - Separators (ASCII punctuation other than `'`, and any other non-alphanumeric that is
//!   not a combining mark or a joiner) end a part and are dropped. A `.` or `,` between
//!   two digits is not a separator, so `3.14`, `1,000` and `1.2.3` stay one part.
//! - Inside a separator-free chunk, a part boundary falls at lower→Upper, between a letter
//!   and a digit (either way), and before the last capital of an acronym that runs into a
//!   capitalized word (`HTTPServer`), but not before a lone lowercase letter (`URLs`,
//!   `IPv4`). No boundary falls next to an apostrophe or a mark (`O'Reilly`).
//! - A chunk that looks like a hash (≥ 7 single-case hex digits with ≥ 2 digits and a
//!   letter, e.g. a git SHA) or a `0x` literal is one part: splitting it at every
//!   letter/digit edge would only fill the dictionary with noise.
//!
//! Invariants: parts are non-empty, in order, non-overlapping byte ranges of the word on
//! char boundaries, and every part contains at least one letter or digit.

use super::normalize::is_mark_or_joiner;

/// One part of a word: a byte range `start..end` of the normalized word.
pub(crate) type Part = (usize, usize);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Upper,
    /// Lowercase and caseless letters.
    Lower,
    Digit,
    /// Ends a part and is dropped.
    Sep,
    /// Stays inside the current part without affecting boundaries: `'`, combining
    /// marks, ZWJ/ZWNJ, variation selectors.
    Other,
}

fn kind(c: char) -> Kind {
    if c.is_ascii() {
        return match c {
            'a'..='z' => Kind::Lower,
            'A'..='Z' => Kind::Upper,
            '0'..='9' => Kind::Digit,
            '\'' => Kind::Other,
            _ => Kind::Sep,
        };
    }
    if c.is_alphabetic() {
        if c.is_uppercase() {
            Kind::Upper
        } else {
            Kind::Lower
        }
    } else if c.is_numeric() {
        Kind::Digit
    } else if is_mark_or_joiner(c) {
        Kind::Other
    } else {
        Kind::Sep
    }
}

/// True if `word` needs no splitting: ASCII letters with no capital after the first.
/// This is most English prose, so it skips the general splitter.
pub(crate) fn is_simple(word: &str) -> bool {
    let b = word.as_bytes();
    !b.is_empty() && b[0].is_ascii_alphabetic() && b[1..].iter().all(|c| c.is_ascii_lowercase())
}

/// Splits `word` into parts, replacing the contents of `parts`.
pub(crate) fn split(word: &str, parts: &mut Vec<Part>) {
    parts.clear();
    let mut chunk_start: Option<usize> = None;
    let mut prev = Kind::Sep;
    let mut it = word.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let k = kind(c);
        if k == Kind::Sep {
            let in_number = matches!(c, '.' | ',')
                && prev == Kind::Digit
                && it.peek().is_some_and(|&(_, n)| kind(n) == Kind::Digit);
            if !in_number {
                if let Some(s) = chunk_start.take() {
                    split_chunk(word, s, i, parts);
                }
                prev = Kind::Sep;
                continue;
            }
        }
        chunk_start.get_or_insert(i);
        prev = k;
    }
    if let Some(s) = chunk_start {
        split_chunk(word, s, word.len(), parts);
    }
}

/// Splits the separator-free chunk `word[start..end]` at case and letter/digit edges.
fn split_chunk(word: &str, start: usize, end: usize, parts: &mut Vec<Part>) {
    let chunk = &word[start..end];
    if is_hex_literal(chunk) {
        parts.push((start, end));
        return;
    }
    let mut part_start = 0;
    // The kind of the last letter or digit, and whether anything came between it and `c`.
    let mut last: Option<Kind> = None;
    let mut adjacent = false;
    let mut it = chunk.char_indices();
    while let Some((i, c)) = it.next() {
        let k = kind(c);
        // Inside a chunk a `Sep` can only be the `.`/`,` of a number.
        if matches!(k, Kind::Other | Kind::Sep) {
            adjacent = false;
            continue;
        }
        if let (Some(l), true) = (last, adjacent) {
            let boundary = match (l, k) {
                (Kind::Lower, Kind::Upper) => true,
                (Kind::Upper | Kind::Lower, Kind::Digit)
                | (Kind::Digit, Kind::Upper | Kind::Lower) => true,
                (Kind::Upper, Kind::Upper) => acronym_ends_before(it.clone()),
                _ => false,
            };
            if boundary {
                parts.push((start + part_start, start + i));
                part_start = i;
            }
        }
        last = Some(k);
        adjacent = true;
    }
    if last.is_some() {
        parts.push((start + part_start, end));
    }
}

/// Called at a capital that follows a capital, with the characters after it: true if
/// the capital starts a new word (`HTTP|Server`), which takes two lowercase letters after
/// it. A single one is a plural or a suffix of the acronym (`URLs`, `IDs`, `IPv4`).
fn acronym_ends_before(mut rest: std::str::CharIndices<'_>) -> bool {
    let mut lower = || rest.next().is_some_and(|(_, c)| kind(c) == Kind::Lower);
    lower() && lower()
}

/// A git SHA, digest or `0x` literal: kept whole (see the module doc).
fn is_hex_literal(chunk: &str) -> bool {
    let b = chunk.as_bytes();
    if let Some(rest) = b.strip_prefix(b"0x").or_else(|| b.strip_prefix(b"0X")) {
        return !rest.is_empty() && rest.iter().all(u8::is_ascii_hexdigit);
    }
    if b.len() < 7 || !b.iter().all(u8::is_ascii_hexdigit) {
        return false;
    }
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    let lower = b.iter().any(u8::is_ascii_lowercase);
    let upper = b.iter().any(u8::is_ascii_uppercase);
    digits >= 2 && (lower != upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(w: &str) -> Vec<&str> {
        let mut p = Vec::new();
        split(w, &mut p);
        p.iter().map(|&(s, e)| &w[s..e]).collect()
    }

    #[test]
    fn camel_and_pascal_case() {
        assert_eq!(parts("parseHttpRequest"), ["parse", "Http", "Request"]);
        assert_eq!(parts("ParseHttpRequest"), ["Parse", "Http", "Request"]);
        assert_eq!(parts("iPhone"), ["i", "Phone"]);
    }

    #[test]
    fn acronyms() {
        assert_eq!(parts("HTTPServer"), ["HTTP", "Server"]);
        assert_eq!(parts("IOError"), ["IO", "Error"]);
        assert_eq!(parts("XMLHttpRequest"), ["XML", "Http", "Request"]);
        assert_eq!(parts("HTTP"), ["HTTP"]);
        assert_eq!(parts("URLs"), ["URLs"]);
        assert_eq!(parts("APIsFor"), ["APIs", "For"]);
        assert_eq!(parts("HTTPSession"), ["HTTP", "Session"]);
        assert_eq!(parts("IDs"), ["IDs"]);
        assert_eq!(parts("IPv4"), ["IPv", "4"]);
        // Ambiguous by nature; index and query split it alike.
        assert_eq!(parts("SQLite"), ["SQ", "Lite"]);
    }

    #[test]
    fn separators() {
        assert_eq!(parts("snake_case"), ["snake", "case"]);
        assert_eq!(parts("__init__"), ["init"]);
        assert_eq!(parts("foo.bar"), ["foo", "bar"]);
        assert_eq!(parts("key:value"), ["key", "value"]);
        assert_eq!(parts("MAX_TOKEN_BYTES"), ["MAX", "TOKEN", "BYTES"]);
    }

    #[test]
    fn letters_and_digits() {
        assert_eq!(parts("utf8"), ["utf", "8"]);
        assert_eq!(parts("HTTP2Server"), ["HTTP", "2", "Server"]);
        assert_eq!(parts("100ms"), ["100", "ms"]);
        assert_eq!(parts("sha256sum"), ["sha", "256", "sum"]);
    }

    #[test]
    fn numbers_keep_their_points() {
        assert_eq!(parts("3.14"), ["3.14"]);
        assert_eq!(parts("1,000"), ["1,000"]);
        assert_eq!(parts("v1.2.3"), ["v", "1.2.3"]);
        assert_eq!(parts("foo.1"), ["foo", "1"]);
    }

    #[test]
    fn hashes_stay_whole() {
        assert_eq!(parts("0efa37b"), ["0efa37b"]);
        assert_eq!(parts("0xFF"), ["0xFF"]);
        assert_eq!(parts("DEADBEEF00"), ["DEADBEEF00"]);
        // Mixed case is an identifier, not a digest.
        assert_eq!(parts("deadBeef12"), ["dead", "Beef", "12"]);
        // Too short to be a digest.
        assert_eq!(parts("abc123"), ["abc", "123"]);
    }

    #[test]
    fn apostrophes_and_marks_stay_inside_parts() {
        assert_eq!(parts("don't"), ["don't"]);
        assert_eq!(parts("O'Reilly"), ["O'Reilly"]);
        assert_eq!(parts("cafe\u{301}_bar"), ["cafe\u{301}", "bar"]);
    }

    #[test]
    fn non_ascii_letters() {
        assert_eq!(parts("größeÄnderung"), ["größe", "Änderung"]);
        assert_eq!(parts("naïve"), ["naïve"]);
    }

    #[test]
    fn nothing_alphanumeric_gives_no_parts() {
        assert!(parts("_").is_empty());
        assert!(parts("").is_empty());
        assert!(parts("'").is_empty());
    }

    #[test]
    fn simple_fast_path() {
        assert!(is_simple("The"));
        assert!(is_simple("database"));
        assert!(!is_simple("fooBar"));
        assert!(!is_simple("HTTP"));
        assert!(!is_simple("utf8"));
        assert!(!is_simple(""));
    }
}
