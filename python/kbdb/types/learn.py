"""Results of ``learn`` and ``rebuild`` (SPEC §3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record


@dataclass(frozen=True)
class NearDuplicate(Record):
    kbid: str
    similarity: float


@dataclass(frozen=True)
class SectionReport(Record):
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
class SkippedFile(Record):
    path: str
    reason: str
    code: str


@dataclass(frozen=True)
class LearnReport(Record):
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
class RebuildReport(Record):
    sections: int
    vectors: int
    elapsed_ms: float
