"""Result objects: frozen dataclasses whose ``to_dict()`` gives the JSON shapes of SPEC §3–§5.

The CLI's ``--json`` and the MCP server print exactly these dictionaries.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

SearchMode = Literal["lexical", "vector", "hybrid"]
Verdict = Literal["answered", "partial", "unanswered"]
Field = Literal["heading", "body", "code"]

DEFAULT_TYPE = "text/markdown"
DEFAULT_SECTION_TYPE = "section"


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict()  # type: ignore[attr-defined]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class _Dict:
    """``to_dict()`` for frozen dataclasses; fields listed in ``_optional`` are left out when
    they are None."""

    _optional: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.name in self._optional:
                continue
            out[f.name] = _plain(value)
        return out


@dataclass(frozen=True)
class NearDuplicate(_Dict):
    kbid: str
    similarity: float


@dataclass(frozen=True)
class SectionReport(_Dict):
    """One section of a learn (SPEC §3, result table)."""

    kbid: str
    heading: str
    indexed_terms_count: int
    superseded: str | None = None
    warnings: tuple[str, ...] = ()
    near_duplicates: tuple[NearDuplicate, ...] = ()
    vector_embedding_failed: bool = False
    docid: str | None = None
    status: Literal["added", "unchanged", "linked"] = "added"

    _optional = frozenset({"docid"})


@dataclass(frozen=True)
class SkippedFile(_Dict):
    path: str
    reason: str
    code: str


@dataclass(frozen=True)
class LearnReport(_Dict):
    """The whole learn call: per-section results and totals."""

    sections: tuple[SectionReport, ...]
    documents_added: int = 0
    documents_updated: int = 0
    documents_unchanged: int = 0
    sections_added: int = 0
    sections_unchanged: int = 0
    sections_retired: int = 0
    files_skipped: tuple[SkippedFile, ...] = ()
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.files_skipped


@dataclass(frozen=True)
class SearchItem(_Dict):
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


@dataclass(frozen=True)
class SearchResult(_Dict):
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


@dataclass(frozen=True)
class Section(_Dict):
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


@dataclass(frozen=True)
class RecallResult(_Dict):
    sections: tuple[Section, ...]


@dataclass(frozen=True)
class Stats(_Dict):
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


@dataclass(frozen=True)
class RebuildReport(_Dict):
    sections: int
    vectors: int
    elapsed_ms: float


# -- lifecycle: revise, history, forget, navigation (SPEC §5) ------------------------------


# -- near-duplicates, contradictions and skills (SPEC §8.5, §9) ----------------------------


# -- maintenance: check, gc, export, import (SPEC §8) --------------------------------------
