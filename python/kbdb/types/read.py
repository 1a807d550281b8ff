"""Results of ``recall`` and ``stats`` (SPEC §2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbdb.types.base import Record
from kbdb.types.search import UNKNOWN_SOURCE, SourceRef
from kbdb.types.watch import WatchedFolder


@dataclass(frozen=True)
class Section(Record):
    """A full section, as ``recall`` returns it (SPEC §2)."""

    kbid: str
    heading: str
    level: int
    parent: str | None
    content: str
    type: str
    section_type: str
    title: str | None
    description: str | None
    tags: tuple[str, ...]
    docids: tuple[str, ...]
    source_key: str | None
    created_at: str
    retired_at: str | None
    superseded_by: str | None
    retired: bool = False
    # This version's latest live interval (time travel): from ``valid_from`` until
    # ``valid_until`` (None while live). A version retired and learned again was live
    # before too; ``as_of`` searches see every interval.
    valid_from: str | None = None
    valid_until: str | None = None
    # Where it is in its document's file (SPEC §4.3): in the document asked for by
    # ``recall(docid=…)``, else in the first of ``docids``.
    source: SourceRef = UNKNOWN_SOURCE


@dataclass(frozen=True)
class RecallResult(Record):
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class Stats(Record):
    documents: int
    sections: int
    live_sections: int
    retired_sections: int
    tags: int
    db_bytes: int
    index_bytes: int
    index_segments: int
    index_generation: int
    index_watermark: int
    changelog_seq: int
    analyzer: str
    embedding_provider: str
    embedding_model: str | None
    vector_index_stale: bool
    path: str
    extra: dict[str, Any] = field(default_factory=dict)
    # The folders this process keeps fresh (``kbdb mcp --watch``); left out otherwise.
    watching: tuple[WatchedFolder, ...] | None = None

    _optional = frozenset({"watching"})
