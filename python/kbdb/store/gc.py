"""SQL of gc (SPEC §8.2): the removal plan in temporary tables, carrying it out, and the
embedding cache rows no section needs any more."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from kbdb.store import history, signatures
from kbdb.store.check import ORPHAN_DOCUMENTS, ORPHANS_BEYOND_PLAN, chunked, has_link_tables


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
    while conn.execute(f"INSERT OR IGNORE INTO gc_sections {ORPHANS_BEYOND_PLAN}").rowcount:
        pass  # removing a section can orphan its predecessor; settle
    conn.execute(
        "INSERT INTO gc_documents "
        + ORPHAN_DOCUMENTS.format(extra="AND ds.kbid NOT IN (SELECT kbid FROM gc_sections)")
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
    conn.execute("DELETE FROM section_validity WHERE kbid IN (SELECT kbid FROM gc_sections)")
    conn.execute("DELETE FROM section_anchors WHERE kbid IN (SELECT kbid FROM gc_sections)")
    if history.has_turns(conn):
        conn.execute("DELETE FROM section_turns WHERE kbid IN (SELECT kbid FROM gc_sections)")
    if signatures.has_tables(conn):  # near-duplicate signatures of sections now gone
        dead = [
            r[0]
            for r in conn.execute(
                "SELECT kbid FROM neardup_sections WHERE kbid NOT IN (SELECT kbid FROM sections)"
            )
        ]
        signatures.forget(conn, dead)
    conn.execute("DELETE FROM documents WHERE docid IN (SELECT docid FROM gc_documents)")
    if has_link_tables(conn):
        _forget_note_links(conn)
    return sum(conn.execute(f"DELETE FROM {w}").rowcount for w in _DEAD_LINKS)


def _forget_note_links(conn: sqlite3.Connection) -> None:
    """A removed section's links between notes (as written and resolved) and its anchor
    text go with it. Documents whose links pointed into it are marked, so the commit hook
    of this transaction (``kbdb.store.links.catch_up``) resolves them again."""
    conn.execute(
        "INSERT OR IGNORE INTO links_dirty(docid) SELECT DISTINCT docid FROM links"
        " WHERE target_kbid IN (SELECT kbid FROM gc_sections)"
    )
    for table in ("links", "section_links", "section_anchors"):
        conn.execute(f"DELETE FROM {table} WHERE kbid NOT IN (SELECT kbid FROM sections)")


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


def vacuum(conn: sqlite3.Connection) -> None:
    """Rewrite the file without its free pages, then empty the write-ahead log, so the
    bytes gc freed leave the disk now (outside any transaction)."""
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
