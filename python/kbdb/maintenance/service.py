"""``Maintenance``: ``rebuild``, ``check``, ``gc``, ``export``, ``import_snapshot`` and
``stats`` over one knowledge base: the argument checks and the locking around the workers
of this room (``check``, ``gc``, ``transfer``) and the indexes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb import failpoints
from kbdb.errors import InvalidArgumentError, KbdbError
from kbdb.knowledge import neardup
from kbdb.store import DB_NAME
from kbdb.store import queries as q
from kbdb.types import RebuildReport, Stats

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.types import CheckReport, ExportReport, GcReport, ImportReport

ProgressFn = Callable[[int, int], None]


class Maintenance:
    """The maintenance operations of SPEC §8, and the counts of ``stats``."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def rebuild(
        self,
        lexical: bool,
        vectors: bool,
        reembed: bool,
        progress: ProgressFn | None,
        ray: str | None = None,
    ) -> RebuildReport:
        """Both indexes regenerated under the writer lock, the lexical one (and the
        near-duplicate bands) first. With ``ray``, the texts are embedded on a Ray cluster
        into the embedding cache before the lock is taken (a long run does not hold other
        writers back), and the vector index is then written from the cache."""
        ctx = self._ctx
        started = time.perf_counter()
        sections = embedded = 0
        if ray is not None and vectors and ctx.vectors.enabled:
            from kbdb.distributed import embed_sections

            embed_sections(ctx, reembed=reembed, address=ray, progress=progress)
            reembed = False  # the cache now holds what --reembed asked for
        with ctx.lock.hold():
            if lexical:
                sections = ctx.index.rebuild(progress)
                with ctx.db.write() as conn:
                    neardup.rebuild(conn)
                failpoints.hit("rebuild.after_lexical")
            if vectors and ctx.vectors.enabled:
                embedded = ctx.vectors.rebuild(reembed=reembed, progress=progress)
        return RebuildReport(
            sections=sections,
            vectors=embedded,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def check(self, progress: ProgressFn | None) -> CheckReport:
        """The integrity check, told which model the vector index should have been built by."""
        ctx = self._ctx
        from kbdb.maintenance.check import run_check

        model: str | None = None
        if ctx.vectors.enabled:
            try:
                model = ctx.vectors.model_name
            except KbdbError:  # the provider cannot start; its configured model still counts
                model = ctx.config.embedding.model
        return run_check(
            ctx.db,
            ctx.index_dir,
            vector_model=model,
            progress=progress,
            quantized_scan=ctx.config.embedding.quantized_scan,
            language=ctx.config.index.language,
            links=ctx.config.learn.links,
        )

    def gc(self, dry_run: bool, prune_retired: bool, older_than_days: float | None) -> GcReport:
        """Garbage collection, after checking that ``older_than_days`` makes sense."""
        ctx = self._ctx
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
            kbdir=ctx.path,
            db=ctx.db,
            lexical=ctx.index,
            vectors=ctx.vectors,
            dry_run=dry_run,
            prune_before=cutoff(older_than_days) if prune_retired else None,
            lock=ctx.lock,
        )

    def import_snapshot(self, path: str | os.PathLike[str], merge: bool | None) -> ImportReport:
        """Validate the whole snapshot, restore it in one transaction, then catch the indexes
        up, all under the writer lock."""
        ctx = self._ctx
        from kbdb.maintenance.transfer import import_report, restore, validate

        started = time.perf_counter()
        root = Path(path).expanduser().absolute()
        sec_files, doc_files = validate(root)
        with ctx.lock.hold():
            with ctx.db.write() as conn:
                live_before = q.live_count(conn)
                counts = restore(conn, sec_files, doc_files, merge=merge)
            ctx.index.catch_up()
            ctx.vectors.catch_up(live_before=live_before)
        return import_report(root, counts, started)

    def stats(self) -> Stats:
        """The counts of the database, the sizes on disk and the index generation, after
        picking up other processes' index commits."""
        ctx = self._ctx
        index = ctx.index.opened()  # a stale index is reported as it is, not refused
        index.reload()
        with ctx.db.read() as conn:
            c = q.counts(conn)
        db_bytes = sum(
            (ctx.path / n).stat().st_size
            for n in (DB_NAME, DB_NAME + "-wal")
            if (ctx.path / n).exists()
        )
        embedding = ctx.config.embedding
        return Stats(
            documents=c["documents"],
            sections=c["sections"],
            live_sections=c["live_sections"],
            retired_sections=c["sections"] - c["live_sections"],
            tags=c["tags"],
            db_bytes=db_bytes,
            index_bytes=index.size_bytes(),
            index_segments=index.segment_count,
            index_generation=index.generation,
            index_watermark=index.watermark,
            changelog_seq=c["changelog_seq"],
            analyzer=index.analyzer_id,
            embedding_provider=embedding.provider,
            embedding_model=embedding.model if embedding.provider != "none" else None,
            vector_index_stale=ctx.vectors.stale(),
            path=str(ctx.path),
        )

    def export(self, path: str | os.PathLike[str], progress: ProgressFn | None) -> ExportReport:
        """A snapshot folder of the database (``transfer.export``)."""
        from kbdb.maintenance.transfer import export

        return export(self._ctx.db, path, progress=progress)
