"""The SQL side of sharding: copying a knowledge base's database and keeping in the copy
only what one shard owns.

A shard owns the documents whose docid routes to it, every section linked to one of them
(live or not: a document's history stays with it), and the sections linked to no document
whose kbid routes to it. Everything else is deleted from the copy; the derived tables
(near-duplicate signatures, the indexes) are rebuilt by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path


def copy_database(conn: sqlite3.Connection, target: Path) -> None:
    """A consistent copy of ``conn``'s database at ``target`` (SQLite's online backup:
    readers and writers of the source are not blocked for long)."""
    dest = sqlite3.connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()


def docids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT docid FROM documents ORDER BY docid")]


def loose_kbids(conn: sqlite3.Connection) -> list[str]:
    """Sections linked to no document."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT kbid FROM sections s WHERE NOT EXISTS"
            " (SELECT 1 FROM document_sections ds WHERE ds.kbid = s.kbid) ORDER BY kbid"
        )
    ]


def keep_only(
    conn: sqlite3.Connection,
    owns_doc: Callable[[str], bool],
    owns_loose: Callable[[str], bool],
) -> tuple[int, int]:
    """Delete the documents ``owns_doc`` refuses, with their tags and links, then every
    section no kept document links to (unless it was linked to none and ``owns_loose``
    takes it), with its tags. Inside a write. Returns ``(documents, sections)`` kept."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS shard_docs (docid TEXT PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS shard_loose (kbid TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM shard_docs")
    conn.execute("DELETE FROM shard_loose")
    conn.executemany(
        "INSERT INTO shard_docs VALUES (?)", ((d,) for d in docids(conn) if owns_doc(d))
    )
    conn.executemany(
        "INSERT INTO shard_loose VALUES (?)", ((k,) for k in loose_kbids(conn) if owns_loose(k))
    )
    conn.execute("DELETE FROM document_tags WHERE docid NOT IN (SELECT docid FROM shard_docs)")
    conn.execute("DELETE FROM document_sections WHERE docid NOT IN (SELECT docid FROM shard_docs)")
    conn.execute("DELETE FROM documents WHERE docid NOT IN (SELECT docid FROM shard_docs)")
    gone = (
        "kbid NOT IN (SELECT kbid FROM document_sections)"
        " AND kbid NOT IN (SELECT kbid FROM shard_loose)"
    )
    conn.execute(f"DELETE FROM section_tags WHERE {gone}")
    conn.execute(f"DELETE FROM sections WHERE {gone}")
    conn.execute("DROP TABLE shard_docs")
    conn.execute("DROP TABLE shard_loose")
    docs = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    sections = conn.execute("SELECT COUNT(*) FROM sections").fetchone()[0]
    return int(docs), int(sections)


def misrouted(conn: sqlite3.Connection, owns_doc: Callable[[str], bool]) -> list[str]:
    """The docids of this database that ``owns_doc`` refuses (routed to another shard)."""
    return [d for d in docids(conn) if not owns_doc(d)]


def dangling(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """``(column, kbid, target)`` of sections whose parent or successor is not in this
    database (a shard may hold a section whose parent is in another shard)."""
    from kbdb.store.check import iter_dangling

    return [(c, k, t) for c in ("parent", "superseded_by") for k, t in iter_dangling(conn, c)]


def has_sections(conn: sqlite3.Connection, kbids: list[str]) -> set[str]:
    """Those of ``kbids`` that this database holds."""
    out: set[str] = set()
    for i in range(0, len(kbids), 500):
        chunk = kbids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        out.update(
            r[0] for r in conn.execute(f"SELECT kbid FROM sections WHERE kbid IN ({marks})", chunk)
        )
    return out
