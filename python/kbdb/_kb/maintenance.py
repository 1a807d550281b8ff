"""``KnowledgeBase.rebuild``, ``check``, ``gc`` and ``import_snapshot``: the argument
checks and the locking around the workers in ``kbdb.maintenance`` and the indexes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb import failpoints, neardup
from kbdb.errors import InvalidArgumentError, KbdbError
from kbdb.kb import INDEX_DIR
from kbdb.store import queries as q
from kbdb.types import RebuildReport

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase
    from kbdb.types import CheckReport, GcReport, ImportReport

ProgressFn = Callable[[int, int], None]


def rebuild(
    kb: KnowledgeBase, lexical: bool, vectors: bool, reembed: bool, progress: ProgressFn | None
) -> RebuildReport:
    """Both indexes regenerated under the writer lock, the lexical one (and the
    near-duplicate bands) first."""
    started = time.perf_counter()
    sections = embedded = 0
    with kb._lock.hold():
        if lexical:
            sections = kb._index.rebuild(progress)
            with kb._db.write() as conn:
                neardup.rebuild(conn)
            failpoints.hit("rebuild.after_lexical")
        if vectors and kb._vectors.enabled:
            embedded = kb._vectors.rebuild(reembed=reembed, progress=progress)
    return RebuildReport(
        sections=sections,
        vectors=embedded,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def check(kb: KnowledgeBase, progress: ProgressFn | None) -> CheckReport:
    """The integrity check, told which model the vector index should have been built by."""
    from kbdb.maintenance.check import run_check

    model: str | None = None
    if kb._vectors.enabled:
        try:
            model = kb._vectors.model_name
        except KbdbError:  # the provider cannot start; its configured model still counts
            model = kb.config.embedding.model
    return run_check(
        kb._db,
        kb.path / INDEX_DIR,
        vector_model=model,
        progress=progress,
        quantized_scan=kb.config.embedding.quantized_scan,
    )


def gc(
    kb: KnowledgeBase, dry_run: bool, prune_retired: bool, older_than_days: float | None
) -> GcReport:
    """Garbage collection, after checking that ``older_than_days`` makes sense."""
    from kbdb.maintenance.gc import cutoff, run_gc

    if older_than_days is not None:
        if prune_retired is False:
            raise InvalidArgumentError(
                "older_than_days applies only with prune_retired",
                hint="add --prune-retired",
            )
        days = older_than_days
        if isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0:
            raise InvalidArgumentError(
                f"older_than_days must be a number of days >= 0 (got {older_than_days!r})"
            )
    return run_gc(
        kbdir=kb.path,
        db=kb._db,
        lexical=kb._index,
        vectors=kb._vectors,
        dry_run=dry_run,
        prune_before=cutoff(older_than_days) if prune_retired else None,
        lock=kb._lock,
    )


def import_snapshot(
    kb: KnowledgeBase, path: str | os.PathLike[str], merge: bool | None
) -> ImportReport:
    """Validate the whole snapshot, restore it in one transaction, then catch the indexes
    up, all under the writer lock."""
    from kbdb.maintenance.transfer import import_report, restore, validate

    started = time.perf_counter()
    root = Path(path).expanduser().absolute()
    sec_files, doc_files = validate(root)
    with kb._lock.hold():
        with kb._db.write() as conn:
            live_before = q.live_count(conn)
            counts = restore(conn, sec_files, doc_files, merge=merge)
        kb._index.catch_up()
        kb._vectors.catch_up(live_before=live_before)
    return import_report(root, counts, started)
