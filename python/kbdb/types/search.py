"""The results of a search (SPEC §4.3): the classes a cold ``kbdb search`` loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbdb.types.base import Record, SearchMode, Verdict


@dataclass(frozen=True)
class SourceRef(Record):
    """Where a section came from in its document's file (SPEC §4.3): a citation. Lines
    are 1-based and inclusive; ``page`` is set for paged formats (PDF). A field is None
    when unknown: the section was learned from text given in a call, from a format
    without lines, or before kbdb recorded them."""

    path: str | None
    start_line: int | None
    end_line: int | None
    page: int | None

    def cite(self) -> str | None:
        """``path:12-40``, ``path:12``, ``path p.3`` or ``path``; None without a path."""
        if self.path is None:
            return None
        if self.start_line is not None:
            end = self.end_line if self.end_line is not None else self.start_line
            lines = str(self.start_line) if end == self.start_line else f"{self.start_line}-{end}"
            return f"{self.path}:{lines}"
        if self.page is not None:
            return f"{self.path} p.{self.page}"
        return self.path


UNKNOWN_SOURCE = SourceRef(None, None, None, None)


def source_ref(cell: str | None) -> SourceRef:
    """A ``SourceRef`` from the JSON array ``[path, start, end, page]`` the store's queries
    select (``store.queries``), or the unknown one for NULL."""
    if cell is None:
        return UNKNOWN_SOURCE
    import json

    path, start, end, page = json.loads(cell)
    return SourceRef(path, start, end, page)


@dataclass(frozen=True)
class SearchItem(Record):
    """One ranked section of a search (SPEC §4.3). (A docstring also spares the import
    the dataclass's own, made from ``inspect.signature``: a cold search starts faster.)"""

    kbid: str
    heading: str
    level: int
    parent: str | None
    type: str
    section_type: str
    docids: tuple[str, ...]
    tags: tuple[str, ...]
    snippet: str
    matched_terms: tuple[str, ...]
    matched_fields: tuple[str, ...]
    score: float
    confidence: float
    created_at: str
    relaxed: bool = False
    source: SourceRef = UNKNOWN_SOURCE
    title: str | None = None
    content: str | None = None
    explain: dict[str, Any] | None = None

    _optional = frozenset({"title", "content", "explain"})


def search_item(
    kbid: str,
    heading: str,
    level: int,
    parent: str | None,
    type: str,
    section_type: str,
    docids: tuple[str, ...],
    tags: tuple[str, ...],
    snippet: str,
    matched_terms: tuple[str, ...],
    matched_fields: tuple[str, ...],
    score: float,
    confidence: float,
    created_at: str,
    relaxed: bool,
    source: SourceRef,
    title: str | None,
    content: str | None,
    explain: dict[str, Any] | None,
) -> SearchItem:
    """A ``SearchItem`` from every one of its fields, in order: the object ``build`` makes,
    without a keyword dict to collect and check (0.65 µs against 1.6; a search makes one
    per hit). ``tests/test_kb.py`` holds the parameters to the dataclass's fields."""
    obj = object.__new__(SearchItem)
    object.__setattr__(
        obj,
        "__dict__",
        {
            "kbid": kbid,
            "heading": heading,
            "level": level,
            "parent": parent,
            "type": type,
            "section_type": section_type,
            "docids": docids,
            "tags": tags,
            "snippet": snippet,
            "matched_terms": matched_terms,
            "matched_fields": matched_fields,
            "score": score,
            "confidence": confidence,
            "created_at": created_at,
            "relaxed": relaxed,
            "source": source,
            "title": title,
            "content": content,
            "explain": explain,
        },
    )
    return obj


@dataclass(frozen=True)
class SearchResult(Record):
    """``PagedSearchResult`` (SPEC §4.3)."""

    items: tuple[SearchItem, ...]
    total: int
    offset: int
    limit: int
    has_more: bool
    relaxed: bool
    search_mode: SearchMode
    retrieval_method: SearchMode
    vector_index_stale: bool
    retrieval_verdict: Verdict
