"""Results of check, gc, export and import (SPEC §8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record

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
    "link_dangling",
    "link_outside",
    "link_ambiguous",
    "link_missing_heading",
    "link_attachments",
    "note_orphan",
    "truncated",
]


@dataclass(frozen=True)
class CheckIssue(Record):
    """One problem found by ``check``; ``kbid``/``docid`` name what it is about, and
    ``line`` the line of the linking file for a link warning (when its lines are known)."""

    code: str
    detail: str
    kbid: str | None = None
    docid: str | None = None
    line: int | None = None

    _optional = frozenset({"kbid", "docid", "line"})


@dataclass(frozen=True)
class CheckReport(Record):
    """The integrity check (SPEC §8.1). ``ok`` is false when there is any error; warnings
    (indexes behind, a stale vector index) do not make it false."""

    ok: bool
    errors: tuple[CheckIssue, ...]
    warnings: tuple[CheckIssue, ...]
    checked: dict[str, int]


@dataclass(frozen=True)
class GcReport(Record):
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
class ExportReport(Record):
    path: str
    sections_exported: int
    documents_exported: int
    elapsed_ms: float


@dataclass(frozen=True)
class ImportReport(Record):
    path: str
    sections_imported: int
    documents_imported: int
    sections_skipped: int
    elapsed_ms: float
