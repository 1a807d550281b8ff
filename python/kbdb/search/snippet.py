"""Snippets: a window of about 200 characters around the densest cluster of matched terms,
cut at word boundaries, with ``…`` where cut (SPEC §4.3).

The window is chosen in the Rust core (``Analyzer.snippet``, ``rust/src/text/snippet/mod.rs``)
from one analysis of the section: hydrating a page of results used to spend most of its
time turning every token of every section into Python tuples. The rules:

- the text is stripped; a text of at most ``width`` characters is the snippet whole;
- otherwise the window starts a quarter-width before the matched word that begins the
  window of ``width`` characters with the most distinct matched terms (then the most
  matches), is moved inwards to the nearest space within 30 characters on each side, and
  gets ``…`` on each cut side;
- whitespace runs become one space;
- when no term occurs in the text but a ``fallback`` is given (the full content, code
  included), the window comes from the fallback; otherwise it is the start of the text.
"""

from __future__ import annotations

from collections.abc import Collection

from kbdb import _core

SNIPPET_CHARS = 200
ELLIPSIS = "…"


def make_snippet(
    text: str,
    terms: Collection[str],
    analyzer: _core.Analyzer,
    width: int = SNIPPET_CHARS,
    *,
    fallback: str | None = None,
) -> str:
    """The best window of ``text`` for the analyzed ``terms``."""
    return analyzer.snippet(text, terms, width, fallback)[0]


def make_snippet_spans(
    text: str,
    terms: Collection[str],
    analyzer: _core.Analyzer,
    width: int = SNIPPET_CHARS,
    *,
    fallback: str | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """The snippet and the ``(start, end)`` char spans of the matched words in it, sorted
    and non-overlapping, for callers that highlight."""
    return analyzer.snippet(text, terms, width, fallback)
