"""Results of revise, history, forget and navigation (SPEC §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record


@dataclass(frozen=True)
class ReviseResult(Record):
    """``kbid`` is the new version; ``previous`` the one it retired. When only fields
    outside the content address changed (title, description, tags, section type) the
    section is updated in place and both are the same kbid."""

    kbid: str
    previous: str


@dataclass(frozen=True)
class HistoryEntry(Record):
    kbid: str
    created_at: str
    retired_at: str | None
    reason: str | None  # why it was retired: superseded, revised, removed, forgotten
    valid_from: str | None = None  # this version's latest live interval (None: never live)
    valid_until: str | None = None  # its end; None while live


@dataclass(frozen=True)
class HistoryResult(Record):
    kbid: str
    versions: tuple[HistoryEntry, ...]  # oldest first


@dataclass(frozen=True)
class ForgetResult(Record):
    retired: tuple[str, ...]
    already_retired: tuple[str, ...]


@dataclass(frozen=True)
class DocumentInfo(Record):
    docid: str
    title: str | None
    description: str | None
    tags: tuple[str, ...]
    source_path: str | None
    type: str
    sections: int  # live sections
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class DocumentList(Record):
    items: tuple[DocumentInfo, ...]
    total: int
    offset: int
    limit: int
    has_more: bool


@dataclass(frozen=True)
class OutlineNode(Record):
    kbid: str
    heading: str
    level: int
    children: tuple[OutlineNode, ...] = ()


@dataclass(frozen=True)
class Outline(Record):
    docid: str
    title: str | None
    nodes: tuple[OutlineNode, ...]


@dataclass(frozen=True)
class TagCount(Record):
    tag: str
    count: int


@dataclass(frozen=True)
class TagList(Record):
    tags: tuple[TagCount, ...]


@dataclass(frozen=True)
class RelatedItem(Record):
    """``relation``: ``sibling`` (same document, same parent heading), ``link`` (one
    link away: the section or its document links to it, or it links to them), or the
    ``vector`` or ``lexical`` neighbours that follow. ``score`` is the cosine for
    ``vector``, the BM25F score for ``lexical``, and None for a ``sibling`` or a ``link``
    (they come first by position, not by score)."""

    kbid: str
    heading: str
    docids: tuple[str, ...]
    relation: Literal["sibling", "link", "vector", "lexical"]
    score: float | None


@dataclass(frozen=True)
class RelatedResult(Record):
    kbid: str
    method: Literal["vector", "lexical"]
    items: tuple[RelatedItem, ...]
