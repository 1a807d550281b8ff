"""Results of ``watch``: one committed batch, and what a watcher follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record
from kbdb.types.learn import SkippedFile

__all__ = ["WatchBatch", "WatchedFolder"]


@dataclass(frozen=True)
class WatchBatch(Record):
    """One batch of a watcher: the files it read and the documents it forgot, committed in
    one transaction (docs/watch.md).

    ``kind`` is ``sync`` for a walk of a whole folder (at start, when the folder comes
    back, when an ignore file changed) and ``change`` for the files that events named.
    ``sections_added`` counts new sections that replace none, ``sections_superseded``
    new versions of a section learned before (same source key), ``sections_retired``
    sections that left with no successor (removed headings, deleted files)."""

    kind: Literal["sync", "change"]
    folder: str
    files_learned: int
    files_deleted: int
    sections_added: int
    sections_superseded: int
    sections_retired: int
    files_skipped: tuple[SkippedFile, ...]
    elapsed_ms: float
    committed_at: str


@dataclass(frozen=True)
class WatchedFolder(Record):
    """A folder a watcher follows. ``last_synced_at``: when its last batch committed
    (None before the first); ``present``: false while the folder does not exist (the
    watcher waits for it to come back)."""

    path: str
    present: bool
    last_synced_at: str | None
    batches: int
    documents: int
