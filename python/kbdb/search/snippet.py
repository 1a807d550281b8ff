"""Snippets: a window of about 200 characters around the densest cluster of matched terms,
cut at word boundaries, with ``…`` where cut (SPEC §4.3)."""

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
    """The best window of ``text`` for the analyzed ``terms``. When none of them occurs in
    ``text`` but ``fallback`` is given (the full content, code included), the window comes
    from ``fallback``; otherwise it is the start of ``text``."""
    text = text.strip()
    hits = [(s, e, t) for t, _, s, e in analyzer.tokens(text) if t in terms] if terms else []
    if not hits and fallback is not None and terms:
        return make_snippet(fallback, terms, analyzer, width)
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
    # Centre the cluster a little: start a quarter-window before the first hit.
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
