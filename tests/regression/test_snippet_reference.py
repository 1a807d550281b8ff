"""The Rust snippet window (``Analyzer.snippet``) against the Python implementation it
replaced, kept here verbatim as the reference, on generated text: same snippet for every
input, and highlight spans that cover exactly the matched words."""

from __future__ import annotations

import random
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbdb import _core
from kbdb.errors import InvalidArgumentError
from kbdb.search.snippet import make_snippet, make_snippet_spans

ANALYZER = _core.Analyzer()
ELLIPSIS = "…"


def reference_snippet(
    text: str,
    terms: Collection[str],
    width: int = 200,
    *,
    fallback: str | None = None,
) -> str:
    text = text.strip()
    hits = [(s, e, t) for t, _, s, e in ANALYZER.tokens(text) if t in terms] if terms else []
    if not hits and fallback is not None and terms:
        return reference_snippet(fallback, terms, width)
    if len(text) <= width:
        return _squash(text)
    if not hits:
        return _cut(text, 0, width)
    best_start, best_key = hits[0][0], (0, 0)
    j = 0
    for i, (start, _, _) in enumerate(hits):
        while j < len(hits) and hits[j][1] <= start + width:
            j += 1
        window = hits[i:j]
        key = (len({t for _, _, t in window}), len(window))
        if key > best_key:
            best_key, best_start = key, start
    start = max(0, min(best_start - width // 4, len(text) - width))
    return _cut(text, start, start + width)


def _cut(text: str, start: int, end: int) -> str:
    end = min(end, len(text))
    if start > 0:
        space = text.find(" ", start, start + 30)
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", max(start, end - 30), end)
        end = space if space != -1 else end
    out = _squash(text[start:end])
    return (ELLIPSIS if start > 0 else "") + out + (ELLIPSIS if end < len(text) else "")


def _squash(s: str) -> str:
    return " ".join(s.split())


WORDS = [
    "ownership",
    "borrowing",
    "HashMap",
    "hash_map",
    "the",
    "of",
    "café",
    "Straße",
    "東京の天気",
    "XR-2000",
    "snake_case_name",
    "camelCaseName",
    "I/O",
    "naïve",
    "😀",
    "x",
    "lorem",
    "ipsum",
    "dolor",
    "unwrap()",
    "Result<T,",
    "E>",
    "12.5%",
]
SEPARATORS = [" ", "  ", "\n", "\t", " \u00a0 ", "\u3000", "\x1f", "\r\n", ". ", ", "]


@st.composite
def texts(draw: st.DrawFn) -> str:
    n = draw(st.integers(0, 160))
    parts = []
    for _ in range(n):
        parts.append(draw(st.sampled_from(WORDS)))
        parts.append(draw(st.sampled_from(SEPARATORS)))
    return draw(st.sampled_from(["", " ", "\n"])) + "".join(parts)


def _terms(words: list[str]) -> set[str]:
    return {t for w in words for t in ANALYZER.terms(w)}


@settings(max_examples=400, deadline=None)
@given(
    text=texts(),
    words=st.lists(st.sampled_from(WORDS), max_size=4),
    width=st.sampled_from([200, 200, 80, 40, 12]),
    fallback=st.one_of(st.none(), texts()),
)
def test_rust_snippet_equals_reference(
    text: str, words: list[str], width: int, fallback: str | None
) -> None:
    terms = _terms(words)
    want = reference_snippet(text, terms, width, fallback=fallback)
    assert make_snippet(text, terms, ANALYZER, width, fallback=fallback) == want


@settings(max_examples=200, deadline=None)
@given(text=texts(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_highlights_cover_matched_words(text: str, words: list[str]) -> None:
    terms = _terms(words)
    snippet, spans = make_snippet_spans(text, terms, ANALYZER)
    assert spans == sorted(spans)
    for (_a, b), (c, _d) in zip(spans, spans[1:], strict=False):
        assert b < c
    for a, b in spans:
        assert 0 <= a < b <= len(snippet)
        word = snippet[a:b]
        assert not any(ch.isspace() for ch in word)
        assert any(t in terms for t in ANALYZER.terms(word)), (word, terms)


@settings(max_examples=150, deadline=None)
@given(
    jobs=st.lists(
        st.tuples(
            texts(),
            st.one_of(st.none(), texts()),
            st.lists(st.integers(0, 3), max_size=4),
        ),
        max_size=6,
    ),
    clause_words=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=2), min_size=4, max_size=4
    ),
    width=st.sampled_from([200, 80]),
)
def test_batched_snippets_equal_one_at_a_time(
    jobs: list[tuple[str, str | None, list[int]]], clause_words: list[list[str]], width: int
) -> None:
    """``Analyzer.snippets`` (a page of results in one call) gives each job the snippet of
    the terms of the clauses it lists."""
    alternatives = [sorted(_terms(words)) for words in clause_words]
    got = ANALYZER.snippets(jobs, alternatives, width=width)
    want = [
        reference_snippet(
            text, {t for c in clauses for t in alternatives[c]}, width, fallback=fallback
        )
        for text, fallback, clauses in jobs
    ]
    assert got == want


def test_snippets_from_many_threads_at_once_equal_the_reference() -> None:
    """Six threads showing the same texts again and again, at once, each get the
    reference's snippets (the analyzer is shared by the MCP server's worker threads)."""
    rng = random.Random(7)
    pages = []
    for _ in range(12):
        jobs = [
            (
                "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(90)),
                None,
                [rng.randrange(3)],
            )
            for _ in range(5)
        ]
        alternatives = [sorted(_terms([rng.choice(WORDS)])) for _ in range(3)]
        want = [reference_snippet(text, set(alternatives[c[0]]), 80) for text, _, c in jobs]
        pages.append((jobs, alternatives, want))

    def show(_: int) -> int:
        for _ in range(6):
            for jobs, alternatives, want in pages:
                assert ANALYZER.snippets(jobs, alternatives, width=80) == want
        return 1

    with ThreadPoolExecutor(6) as pool:
        assert sum(pool.map(show, range(6))) == 6


def test_batched_snippets_reject_an_unknown_clause() -> None:
    with pytest.raises(InvalidArgumentError, match="clause 2 out of range"):
        ANALYZER.snippets([("some text", None, [0, 2])], [["some"], ["text"]])


def test_python_whitespace_matches_rust() -> None:
    """Squashing follows ``str.isspace`` exactly, over every code point."""
    for cp in range(0x3001):
        c = chr(cp)
        got = make_snippet(f"a{c}b", (), ANALYZER)
        assert got == _squash(f"a{c}b"), hex(cp)
