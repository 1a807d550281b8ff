"""Garbage collection (SPEC §8.2): remove what nothing needs, compact what remains.

A run plans first (temporary tables of the sections and documents to remove), so a dry
run and a real run make the same decisions from the same state. The real run then, under
the writer lock:

1. deletes the planned rows in one transaction, with every row that pointed at them
   (document entries, tags, rows of extra per-section tables); removed live sections get
   a change-log ``retire`` row so both indexes drop them;
2. catches the indexes up, deletes vectors of sections that are no longer live, merges
   the lexical segments into one (dropping tombstoned entries) and compacts the vector
   side files into ``vectors.idx``;
3. drops embedding-cache rows no remaining section embeds;
4. runs ``VACUUM`` and truncates the WAL.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from kbdb import failpoints
from kbdb.index.lexical import LexicalIndex
from kbdb.index.vectors import VectorStore, embedding_text, text_sha
from kbdb.maintenance.check import segment_totals, vector_dead
from kbdb.store import DB_NAME, Database, WriteLock
from kbdb.store import gc as sql
from kbdb.store import queries as q
from kbdb.types import GcReport


@dataclass(frozen=True)
class _Plan:
    kbids: list[str]
    docids: list[str]
    live: list[str]
    links: int
    cache: int
    estimate: int


def cutoff(older_than_days: float | None, now: datetime | None = None) -> str:
    """The ``retired_at`` bound of ``--prune-retired``: sections retired before it go. No
    ``older_than_days`` prunes every retired section."""
    if older_than_days is None:
        return "9999-12-31T23:59:59Z"
    moment = (now or datetime.now(timezone.utc)) - timedelta(days=older_than_days)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _plan(conn: sqlite3.Connection, prune_before: str | None, model: str | None) -> _Plan:
    sql.plan_removal(conn, prune_before=prune_before)
    kbids, docids, live = sql.planned(conn)
    cache = 0
    if sql.has_embeddings(conn):
        for rows in sql.iter_embedding_inputs(conn, excluding_plan=True):
            texts = (embedding_text(*r) for r in rows)
            sql.stage_shas(conn, (text_sha(t) for t in texts if t is not None))
        sql.stage_shas(conn, ())
        cache = sql.unreferenced_embeddings(conn, delete=False)
    return _Plan(kbids, docids, live, sql.planned_links(conn), cache, sql.planned_bytes(conn))


def _disk_bytes(kbdir: Path, index_dir: Path) -> int:
    names = [kbdir / n for n in (DB_NAME, DB_NAME + "-wal")]
    files = [*names, *(index_dir.iterdir() if index_dir.is_dir() else ())]
    total = 0
    for p in files:
        with contextlib.suppress(FileNotFoundError):
            total += p.stat().st_size
    return total


def _vector_strays(vectors: VectorStore, db: Database, extra: list[str]) -> list[str]:
    """Vectors of kbids that are not live sections (besides ``extra``, about to go)."""
    index = vectors.index() if vectors.directory.joinpath("vectors-meta.toml").exists() else None
    if index is None:
        return []
    stored = index.kbids()
    with db.read() as conn:
        live = q.live_of(conn, stored)
    going = set(extra)
    return sorted(k for k in stored if k not in live or k in going)


def run_gc(
    *,
    kbdir: Path,
    db: Database,
    lexical: LexicalIndex,
    vectors: VectorStore,
    dry_run: bool,
    prune_before: str | None,
    lock: WriteLock,
) -> GcReport:
    """Plan, then (unless ``dry_run``) carry out, under the writer lock.

    ``index_entries_removed`` counts the lexical entries that are tombstoned now or will be
    (the removed live sections) plus the vector records beyond the live ones; after the
    forced merge and compaction none of them is left on disk."""
    started = time.perf_counter()
    index_dir = lexical.directory
    with lock.hold():
        lexical.catch_up()
        conn = db.conn()
        with db.read():
            plan = _plan(conn, prune_before, vectors.model_name if vectors.enabled else None)
        strays = _vector_strays(vectors, db, plan.live)
        docs, _deleted = segment_totals(index_dir)
        live_in_index = lexical.core.doc_count
        index_dead = (docs - live_in_index) + len(plan.live)
        index_dead += vector_dead(index_dir) + len(strays)
        removed = tuple(
            [f"section:{k}" for k in plan.kbids] + [f"document:{d}" for d in plan.docids]
        )
        if dry_run:
            with db.read():
                sql.drop_plan(conn)
            return GcReport(
                dry_run=True,
                sections_removed=len(plan.kbids),
                documents_removed=len(plan.docids),
                index_entries_removed=index_dead,
                bytes_freed=plan.estimate,
                removed=removed,
                elapsed_ms=_ms(started),
                links_removed=plan.links,
                cache_entries_removed=plan.cache,
            )
        before = _disk_bytes(kbdir, index_dir)
        with db.write() as wconn:
            links = sql.carry_out(wconn)
            cache = sql.unreferenced_embeddings(wconn, delete=True) if plan.cache else 0
            sql.drop_plan(wconn)
        failpoints.hit("gc.after_db_commit")
        _compact(lexical, vectors, db)
        sql.vacuum(conn)
        after = _disk_bytes(kbdir, index_dir)
    return GcReport(
        dry_run=False,
        sections_removed=len(plan.kbids),
        documents_removed=len(plan.docids),
        index_entries_removed=index_dead,
        bytes_freed=max(0, before - after),
        removed=removed,
        elapsed_ms=_ms(started),
        links_removed=links,
        cache_entries_removed=cache,
    )


def _compact(lexical: LexicalIndex, vectors: VectorStore, db: Database) -> None:
    """Catch both indexes up, drop vectors of non-live sections, then merge the segments
    into one and fold the vector side files into ``vectors.idx``."""
    index_dir = lexical.directory
    lexical.catch_up()
    index = lexical.core
    docs, _ = segment_totals(index_dir)
    if docs != index.doc_count or index.segment_count > 1:
        index.merge(force=True)
    vindex = vectors.index() if (index_dir / "vectors-meta.toml").exists() else None
    if vindex is not None:
        if vectors.enabled and vindex.model_name == vectors.model_name:
            vectors.catch_up()
        strays = _vector_strays(vectors, db, [])
        if strays:
            vindex.delete(strays, watermark=vindex.watermark)
        if vector_dead(index_dir) or vindex.side_count:
            vindex.compact(force=True)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
