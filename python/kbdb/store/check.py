"""SQL of the integrity check (SPEC §8.1), and the chunked reads that gc and export share.

Every scan is a cursor read in chunks, so memory stays bounded however many sections the
knowledge base holds. Text columns are read as BLOBs by the check, so a tampered row that
is not valid UTF-8 becomes a finding instead of a crash.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

CHUNK = 2_000
MARKS = 900

# Orphans: in no (existing) document and in no history chain (SPEC §8.1). The uncorrelated
# NOT IN is evaluated once into an ephemeral index, so this is one pass, not one scan per
# section. gc runs it again with {going} naming its plan, until nothing more qualifies.
ORPHANS = """
SELECT s.kbid FROM sections s
WHERE NOT EXISTS (
    SELECT 1 FROM document_sections ds JOIN documents d ON d.docid = ds.docid
    WHERE ds.kbid = s.kbid)
  AND (s.superseded_by IS NULL OR s.superseded_by IN ({going}))
  AND s.kbid NOT IN (
    SELECT superseded_by FROM sections
    WHERE superseded_by IS NOT NULL AND kbid NOT IN ({going}))
  AND s.kbid NOT IN ({going})
ORDER BY s.kbid
"""
ORPHAN_SECTIONS = ORPHANS.format(going="SELECT NULL WHERE 0")
ORPHANS_BEYOND_PLAN = ORPHANS.format(going="SELECT kbid FROM temp.gc_sections")

ORPHAN_DOCUMENTS = """
SELECT d.docid FROM documents d
WHERE NOT EXISTS (
    SELECT 1 FROM document_sections ds JOIN sections s ON s.kbid = ds.kbid
    WHERE ds.docid = d.docid {extra})
ORDER BY d.docid
"""


def chunked(cur: sqlite3.Cursor, size: int = CHUNK) -> Iterator[list[Any]]:
    while True:
        rows = cur.fetchmany(size)
        if not rows:
            return
        yield rows


def placeholders(items: Sequence[Any]) -> Iterator[tuple[Sequence[Any], str]]:
    for i in range(0, len(items), MARKS):
        part = items[i : i + MARKS]
        yield part, ",".join("?" * len(part))


CHECK_COLUMNS = (
    "kbid",
    "heading",
    "level",
    "parent",
    "content",
    "type",
    "section_type",
    "title",
    "description",
    "source_key",
    "created_at",
    "retired_at",
    "superseded_by",
)


def iter_sections_raw(conn: sqlite3.Connection) -> Iterator[list[tuple[Any, ...]]]:
    """Every section as ``(rowid, typeof(level), *CHECK_COLUMNS)`` with text columns as
    BLOBs (bytes) and ``level`` as stored."""
    cols = ", ".join(c if c == "level" else f"CAST({c} AS BLOB)" for c in CHECK_COLUMNS)
    cur = conn.execute(f"SELECT rowid, typeof(level), {cols} FROM sections ORDER BY rowid")
    yield from chunked(cur)


def iter_dangling(conn: sqlite3.Connection, column: str) -> Iterator[tuple[str, str]]:
    """``(kbid, target)`` of sections whose ``column`` (parent, superseded_by) names no
    section."""
    cur = conn.execute(
        f"SELECT s.kbid, s.{column} FROM sections s WHERE s.{column} IS NOT NULL"
        f" AND NOT EXISTS (SELECT 1 FROM sections t WHERE t.kbid = s.{column})"
        " ORDER BY s.kbid"
    )
    for rows in chunked(cur):
        yield from rows


def iter_dangling_links(conn: sqlite3.Connection) -> Iterator[tuple[str, str, str]]:
    """``(what, docid, kbid)`` of document entries and tags that point nowhere: ``what`` is
    ``section`` (a link to a missing section), ``document`` (a link from a missing
    document), ``section_tag`` or ``document_tag``."""
    queries = (
        (
            "section",
            "SELECT docid, kbid FROM document_sections ds WHERE NOT EXISTS"
            " (SELECT 1 FROM sections s WHERE s.kbid = ds.kbid) ORDER BY docid, kbid",
        ),
        (
            "document",
            "SELECT docid, kbid FROM document_sections ds WHERE NOT EXISTS"
            " (SELECT 1 FROM documents d WHERE d.docid = ds.docid) ORDER BY docid, kbid",
        ),
        (
            "section_tag",
            "SELECT NULL, kbid FROM section_tags t WHERE NOT EXISTS"
            " (SELECT 1 FROM sections s WHERE s.kbid = t.kbid) ORDER BY kbid",
        ),
        (
            "document_tag",
            "SELECT docid, NULL FROM document_tags t WHERE NOT EXISTS"
            " (SELECT 1 FROM documents d WHERE d.docid = t.docid) ORDER BY docid",
        ),
    )
    for what, sql in queries:
        for rows in chunked(conn.execute(sql)):
            for docid, kbid in rows:
                yield what, docid, kbid


def iter_orphan_sections(conn: sqlite3.Connection) -> Iterator[str]:
    for rows in chunked(conn.execute(ORPHAN_SECTIONS)):
        yield from (r[0] for r in rows)


def iter_orphan_documents(conn: sqlite3.Connection) -> Iterator[str]:
    for rows in chunked(conn.execute(ORPHAN_DOCUMENTS.format(extra=""))):
        yield from (r[0] for r in rows)


def iter_divergent(conn: sqlite3.Connection) -> Iterator[tuple[str, list[str]]]:
    """``(source_key, kbids)`` where several live sections share a source key."""
    cur = conn.execute(
        "SELECT source_key, group_concat(kbid, ' ') FROM sections"
        " WHERE retired_at IS NULL AND source_key IS NOT NULL"
        " GROUP BY source_key HAVING COUNT(*) > 1 ORDER BY source_key"
    )
    for rows in chunked(cur):
        for key, kbids in rows:
            yield key, sorted(kbids.split(" "))


def iter_edges(conn: sqlite3.Connection, column: str) -> Iterator[list[tuple[int, int]]]:
    """``(rowid, target rowid)`` of each ``column`` (parent, superseded_by) reference that
    resolves: the section graph as integers, small enough to hold for 1M sections."""
    cur = conn.execute(
        f"SELECT s.rowid, t.rowid FROM sections s JOIN sections t ON t.kbid = s.{column}"
        f" WHERE s.{column} IS NOT NULL"
    )
    yield from chunked(cur, 20_000)


def max_rowid(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM sections").fetchone()[0])


def kbids_of_rowids(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for part, marks in placeholders(rowids):
        for rowid, kbid in conn.execute(
            f"SELECT rowid, kbid FROM sections WHERE rowid IN ({marks})", tuple(part)
        ):
            out[int(rowid)] = str(kbid)
    return out


# -- links between notes (kbdb.store.links) ----------------------------------------------------

_LINK_TABLES = ("links", "section_links", "document_names")


def has_link_tables(conn: sqlite3.Connection) -> bool:
    """Whether the link tables exist: a knowledge base that no write of a kbdb keeping
    links has touched yet has none (they come with its first write)."""
    marks = ",".join("?" * len(_LINK_TABLES))
    row = conn.execute(
        f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({marks})",
        _LINK_TABLES,
    ).fetchone()
    return int(row[0]) == len(_LINK_TABLES)


def link_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM links").fetchone()[0])


def iter_link_problems(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    """``(status, docid, kbid, line, kind, target, fragment, name, target_docid)`` of every
    link that is not plainly resolved, by linking document and place in it. ``line`` is
    the line in the linking file (None when its lines are unknown)."""
    cur = conn.execute(
        "SELECT l.status, l.docid, l.kbid,"
        " CASE WHEN ds.start_line IS NULL THEN NULL ELSE ds.start_line + sl.line END,"
        " sl.kind, sl.target, sl.fragment, sl.name, l.target_docid"
        " FROM links l JOIN section_links sl ON sl.kbid = l.kbid AND sl.n = l.n"
        " JOIN document_sections ds ON ds.docid = l.docid AND ds.kbid = l.kbid AND ds.live = 1"
        " WHERE l.status != 'resolved' ORDER BY l.docid, ds.ord, l.n"
    )
    for rows in chunked(cur):
        yield from rows


def live_named(conn: sqlite3.Connection, key: str, kind: str, limit: int) -> list[str]:
    """Live documents whose ``kind`` name (``file``, ``alias``) has lookup key ``key``."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT n.docid FROM document_names n WHERE n.key = ? AND n.kind = ?"
            " AND EXISTS (SELECT 1 FROM document_sections ds WHERE ds.docid = n.docid"
            " AND ds.live = 1) ORDER BY n.docid LIMIT ?",
            (key, kind, limit),
        )
    ]


def iter_orphan_notes(conn: sqlite3.Connection) -> Iterator[str]:
    """Live Markdown and HTML documents that no link of another document resolves to, in
    docid order; nothing when no link resolves at all (every note would be one)."""
    if (
        conn.execute(
            "SELECT 1 FROM links WHERE status IN ('resolved', 'ambiguous', 'missing_heading')"
            " LIMIT 1"
        ).fetchone()
        is None
    ):
        return
    cur = conn.execute(
        "SELECT d.docid FROM documents d WHERE d.type IN ('text/markdown', 'text/html')"
        " AND EXISTS (SELECT 1 FROM document_sections ds WHERE ds.docid = d.docid"
        " AND ds.live = 1)"
        " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.target_docid = d.docid"
        " AND l.docid != d.docid)"
        " ORDER BY d.docid"
    )
    for rows in chunked(cur):
        yield from (r[0] for r in rows)
