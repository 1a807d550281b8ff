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


_SCALARS = (str, int, float, bool, type(None))
# Field names per class: dataclasses.fields() per call was most of to_dict's cost, and the
# MCP server calls to_dict on every result (benches/bench_mcp.py).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, _SCALARS):  # the common case first
        return value
    if isinstance(value, _Dict):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict()  # type: ignore[attr-defined]
    return value


class _Dict:
    """``to_dict()`` for frozen dataclasses; fields listed in ``_optional`` are left out when
    they are None."""

    _optional: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
            _FIELD_NAMES[type(self)] = names
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if value is None and name in self._optional:
                continue
            out[name] = _plain(value)
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


# -- near-duplicates, contradictions and skills (SPEC §8.5, §9) ----------------------------


@dataclass(frozen=True)
class ContradictionMember(_Dict):
    """One section of a ``contradictions`` group."""

    kbid: str
    heading: str
    docids: tuple[str, ...]
    snippet: str


@dataclass(frozen=True)
class ContradictionGroup(_Dict):
    """Sections from different documents that cover the same ground. ``similarity`` is
    the highest pairwise similarity inside the group."""

    similarity: float
    sections: tuple[ContradictionMember, ...]


@dataclass(frozen=True)
class ContradictionsResult(_Dict):
    """SPEC §8.5. ``method``: ``vector`` (embedding cosine) or ``lexical`` (shingle
    Jaccard); ``threshold``: the lowest similarity a pair needed."""

    method: Literal["vector", "lexical"]
    threshold: float
    groups: tuple[ContradictionGroup, ...]


@dataclass(frozen=True)
class SkillLearnResult(_Dict):
    """``previous``: the kbid of the version this one replaced, or None."""

    name: str
    kbid: str
    previous: str | None = None


@dataclass(frozen=True)
class SkillInfo(_Dict):
    name: str
    description: str
    tags: tuple[str, ...]
    kbid: str
    updated_at: str


@dataclass(frozen=True)
class SkillList(_Dict):
    skills: tuple[SkillInfo, ...]


@dataclass(frozen=True)
class Skill(_Dict):
    """A skill in full (SPEC §9): its Markdown instructions in ``content``."""

    name: str
    description: str
    content: str
    tags: tuple[str, ...]
    kbid: str
    created_at: str


# -- maintenance: check, gc, export, import (SPEC §8) --------------------------------------


CheckCode = Literal[
    "checksum_mismatch",
    "orphan_section",
    "orphan_document",
    "broken_reference",
    "type_mismatch",
    "circular_reference",
    "divergent_content",
    "index_missing",
    "index_behind",
    "index_ahead",
    "index_out_of_sync",
    "vector_index_behind",
    "vector_index_stale",
    "truncated",
]


@dataclass(frozen=True)
class CheckIssue(_Dict):
    """One problem found by ``check``; ``kbid``/``docid`` name what it is about."""

    code: str
    detail: str
    kbid: str | None = None
    docid: str | None = None

    _optional = frozenset({"kbid", "docid"})


@dataclass(frozen=True)
class CheckReport(_Dict):
    """The integrity check (SPEC §8.1). ``ok`` is false when there is any error; warnings
    (indexes behind, a stale vector index) do not make it false."""

    ok: bool
    errors: tuple[CheckIssue, ...]
    warnings: tuple[CheckIssue, ...]
    checked: dict[str, int]


@dataclass(frozen=True)
class GcReport(_Dict):
    """What ``gc`` removed, or would remove with ``dry_run`` (SPEC §8.2). ``removed`` lists
    ``section:<kbid>`` and ``document:<docid>`` entries, sorted. ``bytes_freed`` is measured
    on a real run and estimated on a dry run."""

    dry_run: bool
    sections_removed: int
    documents_removed: int
    index_entries_removed: int
    bytes_freed: int
    removed: tuple[str, ...]
    elapsed_ms: float
    links_removed: int = 0
    cache_entries_removed: int = 0


@dataclass(frozen=True)
class ExportReport(_Dict):
    path: str
    sections_exported: int
    documents_exported: int
    elapsed_ms: float


@dataclass(frozen=True)
class ImportReport(_Dict):
    path: str
    sections_imported: int
    documents_imported: int
    sections_skipped: int
    elapsed_ms: float
