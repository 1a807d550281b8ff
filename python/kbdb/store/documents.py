"""Writing documents and their sections: the one learn transaction (SPEC §3).

``apply_document`` stores a document's new section list atomically and works out
supersession. Every section that becomes live or retired gets a change-log row, which the
indexes follow.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kbdb.store import links as link_store

if TYPE_CHECKING:
    from kbdb.ingest.links import Link

ReplaceMode = Literal["document", "source_key", "append"]
"""``document``: the new list replaces the document's sections (re-learning a file).
``source_key``: sections superseded by source key, others kept (``replace=True``).
``append``: keep everything, add the new sections (``replace=False``)."""


@dataclass(frozen=True)
class NewSection:
    kbid: str
    heading: str
    level: int
    parent: str | None
    content: str
    type: str
    section_type: str
    title: str | None
    description: str | None
    source_key: str
    tags: tuple[str, ...]
    speaker: str | None = None  # a conversation turn's speaker (``section_turns``)
    spoken_at: str | None = None  # and its time, which is then the section's time
    # Where the section is in its source (a citation): first and last line, from 1, and
    # the page of a paged format. None when unknown.
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    links: tuple[Link, ...] = ()  # the links in its text (``kbdb.store.links``)


@dataclass(frozen=True)
class NewDocument:
    docid: str
    title: str | None
    description: str | None
    source_path: str | None
    type: str
    checksum: str
    tags: tuple[str, ...]
    sections: tuple[NewSection, ...]
    aliases: tuple[str, ...] = ()  # other names of the document (front matter)


@dataclass
class DocumentOutcome:
    """What ``apply_document`` did."""

    created: bool = False
    unchanged: bool = False
    status: dict[str, Literal["added", "unchanged", "linked"]] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)  # new kbid -> old kbid
    retired: list[str] = field(default_factory=list)


def document_checksum(conn: sqlite3.Connection, docid: str) -> str | None:
    row = conn.execute("SELECT checksum FROM documents WHERE docid = ?", (docid,)).fetchone()
    return None if row is None else str(row[0])


def apply_document(
    conn: sqlite3.Connection, doc: NewDocument, *, mode: ReplaceMode, now: str
) -> DocumentOutcome:
    """Store ``doc`` inside the caller's transaction and return what changed."""
    out = DocumentOutcome()
    existing = conn.execute(
        "SELECT checksum FROM documents WHERE docid = ?", (doc.docid,)
    ).fetchone()
    if existing is None:
        out.created = True
        conn.execute(
            "INSERT INTO documents(docid, title, description, source_path, type, checksum,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                doc.docid,
                doc.title,
                doc.description,
                doc.source_path,
                doc.type,
                doc.checksum,
                now,
                now,
            ),
        )
    elif mode == "document" and existing[0] == doc.checksum:
        out.unchanged = True
        for s in doc.sections:
            out.status[s.kbid] = "unchanged"
            # Sections learned before links were kept get theirs now.
            link_store.add_section_links(conn, s.kbid, s.links)
        _fill_citations(conn, doc)
        link_store.set_names(conn, doc.docid, doc.title, doc.aliases)
        return out
    else:
        conn.execute(
            "UPDATE documents SET title = COALESCE(?, title),"
            " description = COALESCE(?, description), source_path = COALESCE(?, source_path),"
            " checksum = ?, updated_at = ? WHERE docid = ?",
            (doc.title, doc.description, doc.source_path, doc.checksum, now, doc.docid),
        )
    if doc.tags:
        conn.executemany(
            "INSERT OR IGNORE INTO document_tags(docid, tag) VALUES (?, ?)",
            [(doc.docid, t) for t in doc.tags],
        )
    title = conn.execute("SELECT title FROM documents WHERE docid = ?", (doc.docid,))
    link_store.set_names(conn, doc.docid, title.fetchone()[0], doc.aliases)

    old_links: list[tuple[str, str]] = []
    if not out.created:
        old_links = conn.execute(
            "SELECT ds.kbid, s.source_key FROM document_sections ds JOIN sections s USING (kbid)"
            " WHERE ds.docid = ? AND ds.live = 1 ORDER BY ds.ord",
            (doc.docid,),
        ).fetchall()
    old_kbids = {k for k, _ in old_links}
    new_kbids = {s.kbid for s in doc.sections}
    by_source_key = {s.source_key: s.kbid for s in doc.sections}

    # Which old sections leave this document.
    if mode == "document":
        leaving = [(k, sk) for k, sk in old_links if k not in new_kbids]
    elif mode == "source_key":
        leaving = [(k, sk) for k, sk in old_links if sk in by_source_key and by_source_key[sk] != k]
    else:
        leaving = []

    # Re-number the document: in "document" mode the new list is the whole document;
    # otherwise the new sections follow the sections that stay.
    leaving_kbids = {k for k, _ in leaving}
    if out.created:
        base = 0
    elif mode == "document":
        conn.executemany(
            "DELETE FROM document_sections WHERE docid = ? AND kbid = ?",
            [(doc.docid, k) for k in new_kbids],
        )
        conn.execute("UPDATE document_sections SET live = 0 WHERE docid = ?", (doc.docid,))
        base = 0
    else:
        for k in leaving_kbids:
            conn.execute(
                "UPDATE document_sections SET live = 0 WHERE docid = ? AND kbid = ?",
                (doc.docid, k),
            )
        row = conn.execute(
            "SELECT COALESCE(MAX(ord) + 1, 0) FROM document_sections WHERE docid = ? AND live = 1",
            (doc.docid,),
        ).fetchone()
        base = int(row[0])

    ord_ = base
    for s in doc.sections:
        if mode != "document" and s.kbid in old_kbids and s.kbid not in leaving_kbids:
            out.status[s.kbid] = "unchanged"
            add_tags(conn, s.kbid, s.tags)
            continue
        _link(conn, doc.docid, s, ord_)
        ord_ += 1
        if s.kbid in old_kbids:
            out.status.setdefault(s.kbid, "unchanged")
            if s.speaker is not None:
                update_turn_context(conn, s.kbid, s.description)
        elif insert_or_revive(conn, s, now):
            out.status[s.kbid] = "added"
        else:
            out.status.setdefault(s.kbid, "linked")
        add_tags(conn, s.kbid, s.tags)
        link_store.add_section_links(conn, s.kbid, s.links)
        if s.speaker is not None:
            add_turn(conn, s.kbid, s.speaker, s.spoken_at)

    for kbid, source_key in leaving:
        if _live_link_count(conn, kbid) > 0:
            continue  # still part of another document
        successor = by_source_key.get(source_key) if source_key else None
        if successor == kbid:
            successor = None
        retire(
            conn,
            kbid,
            now=now,
            superseded_by=successor,
            reason="superseded" if successor else "removed",
        )
        out.retired.append(kbid)
        if successor is not None:
            out.superseded[successor] = kbid
    return out


def retire(
    conn: sqlite3.Connection, kbid: str, *, now: str, superseded_by: str | None, reason: str
) -> None:
    """Retire one section: it leaves search but stays readable (SPEC §2). Its open
    validity interval ends ``now``."""
    keep_legacy_interval(conn, kbid)
    retired = conn.execute(
        "UPDATE sections SET retired_at = ?, superseded_by = ?, retire_reason = ?"
        " WHERE kbid = ? AND retired_at IS NULL",
        (now, superseded_by, reason, kbid),
    ).rowcount
    if retired:
        conn.execute(
            "UPDATE section_validity SET valid_until = ? WHERE kbid = ? AND valid_until IS NULL",
            (now, kbid),
        )
    conn.execute("INSERT INTO changelog(op, kbid) VALUES ('retire', ?)", (kbid,))


def keep_legacy_interval(conn: sqlite3.Connection, kbid: str) -> None:
    """Before a section stored without validity rows changes, record its one interval so
    far (``created_at`` to ``retired_at``) as a row."""
    conn.execute(
        "INSERT INTO section_validity(kbid, valid_from, valid_until)"
        " SELECT kbid, created_at, retired_at FROM sections WHERE kbid = ?"
        " AND NOT EXISTS (SELECT 1 FROM section_validity WHERE kbid = ?)",
        (kbid, kbid),
    )


def _open_interval(conn: sqlite3.Connection, kbid: str, now: str) -> None:
    conn.execute(
        "INSERT INTO section_validity(kbid, valid_from, valid_until) VALUES (?, ?, NULL)",
        (kbid, now),
    )


def _link(conn: sqlite3.Connection, docid: str, s: NewSection, ord_: int) -> None:
    conn.execute(
        "INSERT INTO document_sections(docid, kbid, ord, live, start_line, end_line, page)"
        " VALUES (?, ?, ?, 1, ?, ?, ?)",
        (docid, s.kbid, ord_, s.start_line, s.end_line, s.page),
    )


def _fill_citations(conn: sqlite3.Connection, doc: NewDocument) -> None:
    """An unchanged document whose links were stored before kbdb recorded lines (an
    upgraded knowledge base) gets them now, so learning a folder again fills them in."""
    known = [s for s in doc.sections if s.start_line is not None or s.page is not None]
    if not known:
        return
    unknown = conn.execute(
        "SELECT 1 FROM document_sections WHERE docid = ? AND live = 1"
        " AND start_line IS NULL AND page IS NULL LIMIT 1",
        (doc.docid,),
    ).fetchone()
    if unknown is None:
        return
    conn.executemany(
        "UPDATE document_sections SET start_line = ?, end_line = ?, page = ?"
        " WHERE docid = ? AND kbid = ? AND live = 1 AND start_line IS NULL AND page IS NULL",
        [(s.start_line, s.end_line, s.page, doc.docid, s.kbid) for s in known],
    )


def _live_link_count(conn: sqlite3.Connection, kbid: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM document_sections WHERE kbid = ? AND live = 1", (kbid,)
    ).fetchone()
    return int(row[0])


def update_turn_context(conn: sqlite3.Connection, kbid: str, context: str | None) -> None:
    """A kept conversation turn whose neighbour changed: its context (the description,
    indexed with it but not part of its kbid) is updated in place and the turn queued for
    re-indexing, so that the index never matches words its neighbour no longer says."""
    cur = conn.execute(
        "UPDATE sections SET description = ? WHERE kbid = ? AND description IS NOT ?",
        (context, kbid, context),
    )
    if cur.rowcount:
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))


def add_turn(conn: sqlite3.Connection, kbid: str, speaker: str, spoken_at: str | None) -> None:
    """Record a section as a conversation turn. The first record stays: the turn's time is
    in its heading, so one kbid has one speaker and one time."""
    conn.execute(
        "INSERT OR IGNORE INTO section_turns(kbid, speaker, spoken_at) VALUES (?, ?, ?)",
        (kbid, speaker, spoken_at),
    )


def add_tags(conn: sqlite3.Connection, kbid: str, tags: Sequence[str]) -> None:
    if not tags:  # most sections: skip the statement (a learn makes one per section)
        return
    conn.executemany(
        "INSERT OR IGNORE INTO section_tags(kbid, tag) VALUES (?, ?)", [(kbid, t) for t in tags]
    )


def insert_or_revive(conn: sqlite3.Connection, s: NewSection, now: str) -> bool:
    """Insert a new section. Returns False when the content already existed (live, or
    retired and now revived)."""
    inserted = conn.execute(
        "INSERT OR IGNORE INTO sections(kbid, heading, level, parent, content, type,"
        " section_type, title, description, source_key, created_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            s.kbid,
            s.heading,
            s.level,
            s.parent,
            s.content,
            s.type,
            s.section_type,
            s.title,
            s.description,
            s.source_key,
            now,
        ),
    ).rowcount
    if inserted:
        # A conversation turn is live from when it was said, not from when it was learned:
        # ``as_of`` before that moment does not see it (docs/conversations.md).
        _open_interval(conn, s.kbid, s.spoken_at or now)
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (s.kbid,))
        return True
    # The same content learned again after it was retired is live once more, from now.
    keep_legacy_interval(conn, s.kbid)
    revived = conn.execute(
        "UPDATE sections SET retired_at = NULL, superseded_by = NULL, retire_reason = NULL"
        " WHERE kbid = ? AND retired_at IS NOT NULL",
        (s.kbid,),
    ).rowcount
    if revived:
        _open_interval(conn, s.kbid, now)
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (s.kbid,))
    return False
