"""The SQL side of skills (SPEC §9): a skill is the one live section, of section type
``skill``, of the document ``skill:<name>``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

DOCID_PREFIX = "skill:"

_SELECT = (
    "SELECT d.docid, s.kbid, s.description, s.content, s.created_at, d.updated_at"
    " FROM documents d JOIN document_sections ds ON ds.docid = d.docid AND ds.live = 1"
    " JOIN sections s ON s.kbid = ds.kbid"
    " WHERE s.section_type = 'skill' AND s.retired_at IS NULL"
)

SkillRow = tuple[str, str, str, str, str, str]
"""(docid, kbid, description, content, created_at, updated_at)"""


def live_skills(conn: sqlite3.Connection) -> list[SkillRow]:
    """Every live skill, by name."""
    rows = conn.execute(
        _SELECT + " AND d.docid >= ? AND d.docid < ? ORDER BY d.docid",
        (DOCID_PREFIX, DOCID_PREFIX[:-1] + chr(ord(DOCID_PREFIX[-1]) + 1)),
    ).fetchall()
    return [(r[0], r[1], r[2] or "", r[3], r[4], r[5]) for r in rows]


def skill(conn: sqlite3.Connection, docid: str) -> SkillRow | None:
    r = conn.execute(_SELECT + " AND d.docid = ? ORDER BY ds.ord LIMIT 1", (docid,)).fetchone()
    return None if r is None else (r[0], r[1], r[2] or "", r[3], r[4], r[5])


def set_metadata(
    conn: sqlite3.Connection, docid: str, kbid: str, description: str, tags: Sequence[str]
) -> bool:
    """Make the section's description and the skill's tags exactly these (a new
    description or tag set with unchanged instructions keeps the kbid). Logs an ``add`` so
    the indexes re-read the section when something changed. Inside a write."""
    changed = (
        conn.execute(
            "UPDATE sections SET description = ? WHERE kbid = ? AND description IS NOT ?",
            (description, kbid, description),
        ).rowcount
        > 0
    )
    old = {r[0] for r in conn.execute("SELECT tag FROM section_tags WHERE kbid = ?", (kbid,))}
    if old != set(tags):
        changed = True
        conn.execute("DELETE FROM section_tags WHERE kbid = ?", (kbid,))
        conn.executemany(
            "INSERT INTO section_tags(kbid, tag) VALUES (?, ?)", [(kbid, t) for t in tags]
        )
    conn.execute("DELETE FROM document_tags WHERE docid = ?", (docid,))
    conn.executemany(
        "INSERT INTO document_tags(docid, tag) VALUES (?, ?)", [(docid, t) for t in tags]
    )
    if changed:
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))
    return changed
