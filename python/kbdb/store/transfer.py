"""SQL of export and import (SPEC §8.4): sections and documents read in kbid order, and a
snapshot's rows restored or merged."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from kbdb.store import history
from kbdb.store.check import chunked, has_link_tables

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
    # A conversation turn's speaker and time (NULL for other sections, and for every
    # section of a knowledge base that has never learned a conversation).
    turns = (
        " (SELECT speaker FROM section_turns u WHERE u.kbid = s.kbid) AS speaker,"
        " (SELECT spoken_at FROM section_turns u WHERE u.kbid = s.kbid) AS spoken_at,"
        if history.has_turns(conn)
        else " NULL AS speaker, NULL AS spoken_at,"
    )
    conn.row_factory = sqlite3.Row
    try:
        cur = conn.execute(
            f"SELECT {EXPORT_COLUMNS},{turns}"
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


def iter_section_links(
    conn: sqlite3.Connection,
) -> Iterator[tuple[str, list[tuple[str, str, str | None, str | None, int]]]]:
    """``(kbid, links)`` of every section with links, in kbid order (as
    ``iter_export_sections``, so the two merge in one pass): each link's ``(kind, target,
    fragment, label, line)`` in stored order. Nothing when the link tables do not exist
    yet (a knowledge base no write has brought up to date)."""
    if not has_link_tables(conn):
        return
    cur = conn.cursor()
    cur.row_factory = None  # export reads sections through sqlite3.Row meanwhile
    cur.execute(
        "SELECT kbid, kind, target, fragment, label, line FROM section_links ORDER BY kbid, n"
    )
    kbid: str | None = None
    links: list[tuple[str, str, str | None, str | None, int]] = []
    for rows in chunked(cur, 5_000):
        for k, *link in rows:
            if k != kbid:
                if kbid is not None:
                    yield kbid, links
                kbid, links = k, []
            links.append((link[0], link[1], link[2], link[3], int(link[4])))
    if kbid is not None:
        yield kbid, links


def document_aliases(conn: sqlite3.Connection, docid: str) -> list[str]:
    """A document's front-matter aliases, sorted by their lookup key (the link tables
    must exist: ``has_link_tables``)."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT name FROM document_names WHERE docid = ? AND kind = 'alias' ORDER BY key, name",
            (docid,),
        )
    ]


Link = tuple[str, int, bool, int | None, int | None, int | None]
"""A document's entry: (kbid, ord, live, start_line, end_line, page)."""


def document_links(conn: sqlite3.Connection, docid: str) -> list[Link]:
    """A document's entries, in a total order."""
    return [
        (str(k), int(o), bool(v), a, b, p)
        for k, o, v, a, b, p in conn.execute(
            "SELECT kbid, ord, live, start_line, end_line, page FROM document_sections"
            " WHERE docid = ? ORDER BY ord, kbid, live",
            (docid,),
        )
    ]


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


def insert_turn(conn: sqlite3.Connection, s: dict[str, Any], *, inserted: bool) -> None:
    """Restore a section's conversation turn (``speaker``, ``spoken_at``). A turn inserted
    now gets its first validity interval from its time, as a learn gives it, so ``as_of``
    answers the same after the import."""
    if s.get("speaker") is None:
        return
    conn.execute(
        "INSERT OR IGNORE INTO section_turns(kbid, speaker, spoken_at) VALUES (?, ?, ?)",
        (s["kbid"], s["speaker"], s.get("spoken_at")),
    )
    if inserted and s.get("spoken_at") is not None:
        conn.execute(
            "INSERT INTO section_validity(kbid, valid_from, valid_until) VALUES (?, ?, ?)",
            (s["kbid"], s["spoken_at"], s.get("retired_at")),
        )


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


def import_document(conn: sqlite3.Connection, d: dict[str, Any], links: Sequence[Link]) -> bool:
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
    retired = _retired(conn, [link[0] for link in links])
    links = [(k, o, v and k not in retired, a, b, p) for k, o, v, a, b, p in links]
    insert = (
        "INSERT INTO document_sections(docid, kbid, ord, live, start_line, end_line, page)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    if new:
        conn.executemany(insert, [(docid, k, o, int(v), a, b, p) for k, o, v, a, b, p in links])
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
    for k, _o, v, a, b, p in links:
        if (k, v) in have or (k, True) in have:
            continue
        conn.execute(insert, (docid, k, base, int(v), a, b, p))
        have.add((k, v))
        base += 1
    return False
