"""SQL of the maintenance operations: the integrity check, gc, export and import (SPEC §8).

Every scan is a cursor read in chunks, so memory stays bounded however many sections the
knowledge base holds. Text columns are read as BLOBs by the check, so a tampered row that
is not valid UTF-8 becomes a finding instead of a crash.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kbdb.store import signatures

CHUNK = 2_000
_MARKS = 900

# Orphans: in no (existing) document and in no history chain (SPEC §8.1). The uncorrelated
# NOT IN is evaluated once into an ephemeral index, so this is one pass, not one scan per
# section. gc runs it again with {going} naming its plan, until nothing more qualifies.
_ORPHANS = """
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
_ORPHAN_SECTIONS = _ORPHANS.format(going="SELECT NULL WHERE 0")
_ORPHANS_BEYOND_PLAN = _ORPHANS.format(going="SELECT kbid FROM temp.gc_sections")

_ORPHAN_DOCUMENTS = """
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


def _marks(items: Sequence[Any]) -> Iterator[tuple[Sequence[Any], str]]:
    for i in range(0, len(items), _MARKS):
        part = items[i : i + _MARKS]
        yield part, ",".join("?" * len(part))


def count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608


def max_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changelog").fetchone()[0])


def live_count(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COUNT(*) FROM sections WHERE retired_at IS NULL").fetchone()
    return int(row[0])


# -- check -----------------------------------------------------------------------------------

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
    for rows in chunked(conn.execute(_ORPHAN_SECTIONS)):
        yield from (r[0] for r in rows)


def iter_orphan_documents(conn: sqlite3.Connection) -> Iterator[str]:
    for rows in chunked(conn.execute(_ORPHAN_DOCUMENTS.format(extra=""))):
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
    for part, marks in _marks(rowids):
        for rowid, kbid in conn.execute(
            f"SELECT rowid, kbid FROM sections WHERE rowid IN ({marks})", tuple(part)
        ):
            out[int(rowid)] = str(kbid)
    return out


def live_of(conn: sqlite3.Connection, kbids: Sequence[str]) -> set[str]:
    """The kbids among ``kbids`` that are live sections."""
    out: set[str] = set()
    for part, marks in _marks(kbids):
        out.update(
            r[0]
            for r in conn.execute(
                f"SELECT kbid FROM sections WHERE retired_at IS NULL AND kbid IN ({marks})",
                tuple(part),
            )
        )
    return out


# -- gc --------------------------------------------------------------------------------------


def plan_removal(conn: sqlite3.Connection, *, prune_before: str | None) -> None:
    """Fill the temporary tables ``gc_sections`` (kbids to remove: orphans, plus retired
    sections retired before ``prune_before`` when given) and ``gc_documents`` (documents
    left with no section). A retired section that a kept section names as its parent is
    not pruned, so pruning never cuts a heading tree; an orphan is removed even then, and
    its children lose their parent (it was in no document)."""
    conn.execute("DROP TABLE IF EXISTS temp.gc_sections")
    conn.execute("DROP TABLE IF EXISTS temp.gc_documents")
    conn.execute("CREATE TEMP TABLE gc_sections(kbid TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.execute("CREATE TEMP TABLE gc_documents(docid TEXT PRIMARY KEY) WITHOUT ROWID")
    if prune_before is not None:
        conn.execute(
            "INSERT OR IGNORE INTO gc_sections SELECT kbid FROM sections"
            " WHERE retired_at IS NOT NULL AND retired_at < ?",
            (prune_before,),
        )
        while True:  # heading trees are at most six deep; this settles in a few rounds
            kept_parents = conn.execute(
                "DELETE FROM gc_sections WHERE kbid IN (SELECT s.parent FROM sections s"
                " WHERE s.parent IS NOT NULL"
                " AND s.kbid NOT IN (SELECT kbid FROM gc_sections))"
            ).rowcount
            if not kept_parents:
                break
    while conn.execute(f"INSERT OR IGNORE INTO gc_sections {_ORPHANS_BEYOND_PLAN}").rowcount:
        pass  # removing a section can orphan its predecessor; settle
    conn.execute(
        "INSERT INTO gc_documents "
        + _ORPHAN_DOCUMENTS.format(extra="AND ds.kbid NOT IN (SELECT kbid FROM gc_sections)")
    )


def planned(conn: sqlite3.Connection) -> tuple[list[str], list[str], list[str]]:
    """(kbids, docids, live kbids) in the plan, sorted."""
    kbids = [r[0] for r in conn.execute("SELECT kbid FROM gc_sections ORDER BY kbid")]
    docids = [r[0] for r in conn.execute("SELECT docid FROM gc_documents ORDER BY docid")]
    live = [
        r[0]
        for r in conn.execute(
            "SELECT g.kbid FROM gc_sections g JOIN sections s USING (kbid)"
            " WHERE s.retired_at IS NULL ORDER BY g.kbid"
        )
    ]
    return kbids, docids, live


def planned_bytes(conn: sqlite3.Connection) -> int:
    """Rough size of the planned rows plus SQLite's free pages (a dry run's estimate)."""
    row = conn.execute(
        "SELECT COALESCE(SUM(length(CAST(content AS BLOB)) + length(heading) + 200), 0)"
        " FROM sections WHERE kbid IN (SELECT kbid FROM gc_sections)"
    ).fetchone()
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return int(row[0]) + page * free


_DEAD_LINKS = (
    "document_sections WHERE kbid NOT IN (SELECT kbid FROM sections)"
    " OR docid NOT IN (SELECT docid FROM documents)",
    "section_tags WHERE kbid NOT IN (SELECT kbid FROM sections)",
    "document_tags WHERE docid NOT IN (SELECT docid FROM documents)",
)

# Rows that will dangle once the plan is carried out (counted before it is).
_PLANNED_LINKS = (
    "document_sections WHERE kbid NOT IN (SELECT kbid FROM sections)"
    " OR kbid IN (SELECT kbid FROM gc_sections)"
    " OR docid NOT IN (SELECT docid FROM documents)"
    " OR docid IN (SELECT docid FROM gc_documents)",
    "section_tags WHERE kbid NOT IN (SELECT kbid FROM sections)"
    " OR kbid IN (SELECT kbid FROM gc_sections)",
    "document_tags WHERE docid NOT IN (SELECT docid FROM documents)"
    " OR docid IN (SELECT docid FROM gc_documents)",
)


def planned_links(conn: sqlite3.Connection) -> int:
    return sum(int(conn.execute(f"SELECT COUNT(*) FROM {w}").fetchone()[0]) for w in _PLANNED_LINKS)


def carry_out(conn: sqlite3.Connection) -> int:
    """Delete the planned sections and documents and every row that pointed at them
    (inside the caller's write transaction), near-duplicate signatures included. Removed
    live sections get a change-log ``retire`` row first, so the indexes drop them.
    Returns the link and tag rows removed."""
    conn.execute(
        "INSERT INTO changelog(op, kbid) SELECT 'retire', g.kbid FROM gc_sections g"
        " JOIN sections s USING (kbid) WHERE s.retired_at IS NULL ORDER BY g.kbid"
    )
    for column in ("superseded_by", "parent"):  # pruning keeps parents; orphans may be one
        conn.execute(
            f"UPDATE sections SET {column} = NULL WHERE {column} IN (SELECT kbid FROM gc_sections)"
        )
    conn.execute("DELETE FROM sections WHERE kbid IN (SELECT kbid FROM gc_sections)")
    if signatures.has_tables(conn):  # near-duplicate signatures of sections now gone
        dead = [
            r[0]
            for r in conn.execute(
                "SELECT kbid FROM neardup_sections WHERE kbid NOT IN (SELECT kbid FROM sections)"
            )
        ]
        signatures.forget(conn, dead)
    conn.execute("DELETE FROM documents WHERE docid IN (SELECT docid FROM gc_documents)")
    return sum(conn.execute(f"DELETE FROM {w}").rowcount for w in _DEAD_LINKS)


def drop_plan(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS temp.gc_sections")
    conn.execute("DROP TABLE IF EXISTS temp.gc_documents")
    conn.execute("DROP TABLE IF EXISTS temp.gc_shas")


def has_embeddings(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM embeddings LIMIT 1").fetchone() is not None


def iter_embedding_inputs(
    conn: sqlite3.Connection, *, excluding_plan: bool
) -> Iterator[list[tuple[str, str, str, str | None, str | None]]]:
    """``(heading, content, type, title, description)`` of every section that stays."""
    where = "WHERE kbid NOT IN (SELECT kbid FROM gc_sections)" if excluding_plan else ""
    cur = conn.execute(f"SELECT heading, content, type, title, description FROM sections {where}")
    yield from chunked(cur)


def stage_shas(conn: sqlite3.Connection, shas: Iterable[str]) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS gc_shas(sha TEXT PRIMARY KEY) WITHOUT ROWID")
    conn.executemany("INSERT OR IGNORE INTO gc_shas(sha) VALUES (?)", ((s,) for s in shas))


def unreferenced_embeddings(conn: sqlite3.Connection, *, delete: bool) -> int:
    """Cache rows whose text no staged section embeds (``stage_shas``)."""
    where = "text_sha NOT IN (SELECT sha FROM gc_shas)"
    if delete:
        return conn.execute(f"DELETE FROM embeddings WHERE {where}").rowcount
    return int(conn.execute(f"SELECT COUNT(*) FROM embeddings WHERE {where}").fetchone()[0])


# -- export ----------------------------------------------------------------------------------

EXPORT_COLUMNS = (
    "kbid, heading, level, parent, content, type, section_type, title, description,"
    " source_key, created_at, retired_at, superseded_by, retire_reason"
)


def bad_kbids(conn: sqlite3.Connection, limit: int = 5) -> list[str]:
    """Stored kbids that are not 32 lower-case hex characters (never safe as file names)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT kbid FROM sections WHERE typeof(kbid) != 'text' OR length(kbid) != 32"
            " OR kbid GLOB '*[^0-9a-f]*' LIMIT ?",
            (limit,),
        )
    ]


def iter_export_sections(conn: sqlite3.Connection) -> Iterator[list[sqlite3.Row]]:
    """Sections in kbid order, each with its tags and docids (as ``\\x1f``-joined text)."""
    conn.row_factory = sqlite3.Row
    try:
        cur = conn.execute(
            f"SELECT {EXPORT_COLUMNS},"
            " (SELECT group_concat(tag, char(31)) FROM"
            "   (SELECT tag FROM section_tags t WHERE t.kbid = s.kbid ORDER BY tag)) AS tags,"
            " (SELECT group_concat(docid, char(31)) FROM"
            "   (SELECT DISTINCT docid FROM document_sections d WHERE d.kbid = s.kbid"
            "    ORDER BY docid)) AS docids"
            " FROM sections s ORDER BY kbid"
        )
        yield from chunked(cur, 1_000)
    finally:
        conn.row_factory = None


DOCUMENT_COLUMNS = "docid, title, description, source_path, type, checksum, created_at, updated_at"


def iter_export_documents(conn: sqlite3.Connection) -> Iterator[sqlite3.Row]:
    conn.row_factory = sqlite3.Row
    try:
        cur = conn.execute(f"SELECT {DOCUMENT_COLUMNS} FROM documents ORDER BY docid")
        for rows in chunked(cur, 500):
            yield from rows
    finally:
        conn.row_factory = None


def document_tags(conn: sqlite3.Connection, docid: str) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT tag FROM document_tags WHERE docid = ? ORDER BY tag", (docid,)
        )
    ]


def document_links(conn: sqlite3.Connection, docid: str) -> list[tuple[str, int, bool]]:
    """``(kbid, ord, live)`` of a document's entries, in a total order."""
    return [
        (str(k), int(o), bool(v))
        for k, o, v in conn.execute(
            "SELECT kbid, ord, live FROM document_sections WHERE docid = ?"
            " ORDER BY ord, kbid, live",
            (docid,),
        )
    ]


# -- import ----------------------------------------------------------------------------------


def is_empty(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT 1 FROM sections LIMIT 1").fetchone() is None
        and conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is None
    )


def insert_section(conn: sqlite3.Connection, s: dict[str, Any]) -> bool:
    """Insert a section row as exported (``created_at`` and retirement kept); False when
    the kbid is already stored, which keeps the stored one. A live insert gets a change-log
    ``add`` row so the indexes follow."""
    inserted = conn.execute(
        f"INSERT OR IGNORE INTO sections({EXPORT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        tuple(s.get(c.strip()) for c in EXPORT_COLUMNS.split(",")),
    ).rowcount
    if not inserted:
        return False
    if s.get("retired_at") is None:
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (s["kbid"],))
    return True


def add_section_tags(conn: sqlite3.Connection, kbid: str, tags: Sequence[str]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO section_tags(kbid, tag) VALUES (?, ?)", [(kbid, t) for t in tags]
    )


def _retired(conn: sqlite3.Connection, kbids: Sequence[str]) -> set[str]:
    """Which of ``kbids`` are stored retired."""
    out: set[str] = set()
    for start in range(0, len(kbids), 500):
        chunk = list(kbids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        out.update(
            str(r[0])
            for r in conn.execute(
                f"SELECT kbid FROM sections WHERE retired_at IS NOT NULL AND kbid IN ({marks})",
                chunk,
            )
        )
    return out


def import_document(
    conn: sqlite3.Connection, d: dict[str, Any], links: Sequence[tuple[str, int, bool]]
) -> bool:
    """Insert a document with its tags and entries. When the docid exists (a merge) its
    metadata stays, its tags gain the snapshot's, and entries it lacks are appended after
    its own. Returns True when the document is new."""
    cols = [c.strip() for c in DOCUMENT_COLUMNS.split(",")]
    new = conn.execute(
        f"INSERT OR IGNORE INTO documents({DOCUMENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
        tuple(d.get(c) for c in cols),
    ).rowcount
    conn.executemany(
        "INSERT OR IGNORE INTO document_tags(docid, tag) VALUES (?, ?)",
        [(d["docid"], t) for t in d.get("tags", ())],
    )
    docid = d["docid"]
    # A section retired here (revised or forgotten) stays retired: the snapshot's live link
    # to it becomes a dead one, or the document would list both versions.
    retired = _retired(conn, [k for k, _o, _v in links])
    links = [(k, o, v and k not in retired) for k, o, v in links]
    if new:
        conn.executemany(
            "INSERT INTO document_sections(docid, kbid, ord, live) VALUES (?, ?, ?, ?)",
            [(docid, k, o, int(v)) for k, o, v in links],
        )
        return True
    have = {
        (str(k), bool(v))
        for k, v in conn.execute(
            "SELECT kbid, live FROM document_sections WHERE docid = ?", (docid,)
        )
    }
    base = int(
        conn.execute(
            "SELECT COALESCE(MAX(ord) + 1, 0) FROM document_sections WHERE docid = ?", (docid,)
        ).fetchone()[0]
    )
    for k, _o, v in links:
        if (k, v) in have or (k, True) in have:
            continue
        conn.execute(
            "INSERT INTO document_sections(docid, kbid, ord, live) VALUES (?, ?, ?, ?)",
            (docid, k, base, int(v)),
        )
        have.add((k, v))
        base += 1
    return False
