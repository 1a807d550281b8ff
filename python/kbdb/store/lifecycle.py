"""The SQL of correcting, forgetting and navigating (SPEC §5).

Every change goes through ``retire`` and the ``add`` change-log rows, exactly as a learn
does, so the lexical and vector indexes follow from their watermarks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbdb.store import links as link_store
from kbdb.store.documents import NewSection, add_tags, insert_or_revive, retire


@dataclass(frozen=True)
class ChainRow:
    kbid: str
    created_at: str
    retired_at: str | None
    reason: str | None
    superseded_by: str | None
    source_key: str | None


def chain_row(conn: sqlite3.Connection, kbid: str) -> ChainRow | None:
    r = conn.execute(
        "SELECT kbid, created_at, retired_at, retire_reason, superseded_by, source_key"
        " FROM sections WHERE kbid = ?",
        (kbid,),
    ).fetchone()
    return None if r is None else ChainRow(*r)


def predecessors(conn: sqlite3.Connection, kbid: str, source_key: str | None) -> list[str]:
    """Sections retired in favour of ``kbid``, oldest first. Every supersession (re-learn,
    ``replace``, revise) keeps the source key, so its index finds them; only a section
    without a source key needs a scan."""
    if source_key is not None:
        sql = "SELECT kbid FROM sections WHERE source_key = ? AND superseded_by = ?"
        params: tuple[str, ...] = (source_key, kbid)
    else:
        sql = "SELECT kbid FROM sections WHERE superseded_by = ?"
        params = (kbid,)
    return [r[0] for r in conn.execute(sql + " ORDER BY created_at, rowid", params)]


def replace_section(
    conn: sqlite3.Connection, old: str, new: NewSection, *, now: str, reason: str
) -> bool:
    """Put ``new`` in ``old``'s place in every document that holds ``old`` live, then retire
    ``old`` with ``superseded_by``. The old links stay (not live) so that ``recall`` of the
    old kbid still names its documents. Returns True when ``new`` was a new section."""
    links = conn.execute(
        "SELECT id, docid, ord FROM document_sections WHERE kbid = ? AND live = 1", (old,)
    ).fetchall()
    added = insert_or_revive(conn, new, now)
    add_tags(conn, new.kbid, new.tags)
    link_store.add_section_links(conn, new.kbid, new.links)
    for link_id, docid, ord_ in links:
        conn.execute("UPDATE document_sections SET live = 0 WHERE id = ?", (link_id,))
        already = conn.execute(
            "SELECT 1 FROM document_sections WHERE docid = ? AND kbid = ? AND live = 1",
            (docid, new.kbid),
        ).fetchone()
        if already is None:
            conn.execute(
                "INSERT INTO document_sections(docid, kbid, ord, live) VALUES (?, ?, ?, 1)",
                (docid, new.kbid, ord_),
            )
        conn.execute("UPDATE documents SET updated_at = ? WHERE docid = ?", (now, docid))
    # Subsections keep their place in the heading tree under the new version.
    conn.execute(
        "UPDATE sections SET parent = ? WHERE parent = ? AND retired_at IS NULL", (new.kbid, old)
    )
    retire(conn, old, now=now, superseded_by=new.kbid, reason=reason)
    return added


def update_metadata(
    conn: sqlite3.Connection,
    kbid: str,
    *,
    title: str | None,
    description: str | None,
    section_type: str,
    tags: Sequence[str],
) -> None:
    """Change the fields that are not part of the kbid, in place, and queue the section for
    re-indexing (title and description are indexed as heading and body text)."""
    conn.execute(
        "UPDATE sections SET title = ?, description = ?, section_type = ? WHERE kbid = ?",
        (title, description, section_type, kbid),
    )
    conn.execute("DELETE FROM section_tags WHERE kbid = ?", (kbid,))
    add_tags(conn, kbid, tags)
    conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))


def forget_sections(conn: sqlite3.Connection, kbids: Sequence[str], *, now: str) -> None:
    """Retire sections everywhere: unlink them from every document, then retire."""
    for kbid in kbids:
        conn.execute("UPDATE document_sections SET live = 0 WHERE kbid = ?", (kbid,))
        retire(conn, kbid, now=now, superseded_by=None, reason="forgotten")


def forget_document(
    conn: sqlite3.Connection, docid: str, *, now: str
) -> tuple[list[str], list[str]]:
    """Unlink every section of ``docid``; retire those no other document holds. The
    checksum is cleared so that learning the same file again restores it. Returns
    (retired, kept because another document holds them)."""
    kbids = [
        r[0]
        for r in conn.execute(
            "SELECT kbid FROM document_sections WHERE docid = ? AND live = 1 ORDER BY ord",
            (docid,),
        )
    ]
    conn.execute("UPDATE document_sections SET live = 0 WHERE docid = ?", (docid,))
    conn.execute("UPDATE documents SET checksum = '', updated_at = ? WHERE docid = ?", (now, docid))
    retired: list[str] = []
    kept: list[str] = []
    for kbid in dict.fromkeys(kbids):
        still = conn.execute(
            "SELECT 1 FROM document_sections WHERE kbid = ? AND live = 1 LIMIT 1", (kbid,)
        ).fetchone()
        if still is not None:
            kept.append(kbid)
            continue
        retire(conn, kbid, now=now, superseded_by=None, reason="forgotten")
        retired.append(kbid)
    return retired, kept


def retired_kbids(conn: sqlite3.Connection, kbids: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for kbid in kbids:
        r = conn.execute("SELECT retired_at FROM sections WHERE kbid = ?", (kbid,)).fetchone()
        if r is not None and r[0] is not None:
            out.add(kbid)
    return out


# -- navigation --------------------------------------------------------------------------

_HAS_LIVE = "EXISTS (SELECT 1 FROM document_sections ds WHERE ds.docid = d.docid AND ds.live = 1)"


def list_documents(
    conn: sqlite3.Connection, *, tags: Sequence[str], limit: int, offset: int
) -> tuple[list[tuple[Any, ...]], int]:
    """Documents with at least one live section, by docid: one page and the total.
    Each row: docid, title, description, source_path, type, created_at, updated_at, live
    sections. ``EXISTS`` walks the (docid, live) index instead of grouping every link."""
    where = [_HAS_LIVE]
    params: list[Any] = []
    for tag in tags:
        where.append("d.docid IN (SELECT docid FROM document_tags WHERE tag = ?)")
        params.append(tag)
    clause = " AND ".join(where)
    total = int(
        conn.execute(f"SELECT COUNT(*) FROM documents d WHERE {clause}", params).fetchone()[0]
    )
    rows = conn.execute(
        "SELECT d.docid, d.title, d.description, d.source_path, d.type, d.created_at,"
        " d.updated_at, (SELECT COUNT(*) FROM document_sections ds"
        " WHERE ds.docid = d.docid AND ds.live = 1)"
        f" FROM documents d WHERE {clause} ORDER BY d.docid LIMIT ? OFFSET ?",
        (*params, limit, offset),
    ).fetchall()
    return [tuple(r) for r in rows], total


def document_tags(conn: sqlite3.Connection, docids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {d: [] for d in docids}
    for docid in docids:
        out[docid] = [
            r[0]
            for r in conn.execute(
                "SELECT tag FROM document_tags WHERE docid = ? ORDER BY tag", (docid,)
            )
        ]
    return out


def document_title(conn: sqlite3.Connection, docid: str) -> tuple[bool, str | None]:
    """(the document exists, its title)."""
    r = conn.execute("SELECT title FROM documents WHERE docid = ?", (docid,)).fetchone()
    return (False, None) if r is None else (True, r[0])


def document_headings(conn: sqlite3.Connection, docid: str) -> list[tuple[str, str, int]]:
    """(kbid, heading, level) of a document's live sections, in order."""
    return [
        (r[0], r[1], int(r[2]))
        for r in conn.execute(
            "SELECT s.kbid, s.heading, s.level FROM document_sections ds"
            " JOIN sections s ON s.kbid = ds.kbid"
            " WHERE ds.docid = ? AND ds.live = 1 ORDER BY ds.ord",
            (docid,),
        )
    ]


def tag_counts(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """Every tag on a live section, with how many live sections carry it."""
    return [
        (r[0], int(r[1]))
        for r in conn.execute(
            "SELECT st.tag, COUNT(*) AS n FROM section_tags st"
            " JOIN sections s ON s.kbid = st.kbid WHERE s.retired_at IS NULL"
            " GROUP BY st.tag ORDER BY n DESC, st.tag"
        )
    ]


def live_source_paths(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(docid, source_path) of every document learned from a file that still has a live
    section, by source path (as learn recorded it: the path given, joined with the
    file's path below it)."""
    rows = conn.execute(
        "SELECT d.docid, d.source_path FROM documents d"
        f" WHERE d.source_path IS NOT NULL AND {_HAS_LIVE} ORDER BY d.source_path"
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
