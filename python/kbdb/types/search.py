"""The results of a search (SPEC §4.3): the classes a cold ``kbdb search`` loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbdb.types.base import Record, SearchMode, Verdict


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
