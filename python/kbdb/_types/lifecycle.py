"""Results of revise, history, forget and navigation (SPEC §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types import _Dict


@dataclass(frozen=True)
class ReviseResult(_Dict):
    """``kbid`` is the new version; ``previous`` the one it retired. When only fields
    outside the content address changed (title, description, tags, section type) the
    section is updated in place and both are the same kbid."""

    kbid: str
    previous: str


@dataclass(frozen=True)
class HistoryEntry(_Dict):
    kbid: str
    created_at: str
    retired_at: str | None
    reason: str | None  # why it was retired: superseded, revised, removed, forgotten


@dataclass(frozen=True)
class HistoryResult(_Dict):
    kbid: str
    versions: tuple[HistoryEntry, ...]  # oldest first


@dataclass(frozen=True)
class ForgetResult(_Dict):
    retired: tuple[str, ...]
    already_retired: tuple[str, ...]


@dataclass(frozen=True)
class DocumentInfo(_Dict):
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
class DocumentList(_Dict):
    items: tuple[DocumentInfo, ...]
    total: int
    offset: int
    limit: int
    has_more: bool


@dataclass(frozen=True)
class OutlineNode(_Dict):
    kbid: str
    heading: str
    level: int
    children: tuple[OutlineNode, ...] = ()


@dataclass(frozen=True)
class Outline(_Dict):
    docid: str
    title: str | None
    nodes: tuple[OutlineNode, ...]


@dataclass(frozen=True)
class TagCount(_Dict):
    tag: str
    count: int


@dataclass(frozen=True)
class TagList(_Dict):
    tags: tuple[TagCount, ...]


@dataclass(frozen=True)
class RelatedItem(_Dict):
    """``score`` is the cosine for ``vector``, the BM25F score for ``lexical``, and None
    for a ``sibling`` (siblings come first by position, not by score)."""

    kbid: str
    heading: str
    docids: tuple[str, ...]
    relation: Literal["sibling", "vector", "lexical"]
    score: float | None


@dataclass(frozen=True)
class RelatedResult(_Dict):
    kbid: str
    method: Literal["vector", "lexical"]
    items: tuple[RelatedItem, ...]
