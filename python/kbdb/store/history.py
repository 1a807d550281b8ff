"""The SQL of time: when each section was live (its validity intervals), which sections
were live at a moment, and which became live in a span (``since`` / ``until``).

Times are the store's UTC text form ``YYYY-MM-DDTHH:MM:SSZ``, which orders as it reads, so
SQLite compares them as strings. A section's intervals are its ``section_validity`` rows;
a section stored before that table existed (or imported from a snapshot) has none, and its
one interval is ``created_at`` to ``retired_at``. An interval holds its start and not its
end: a section is live at ``T`` when ``valid_from <= T < valid_until`` (or no end).

A conversation turn (a ``section_turns`` row with a time) has that time as its time: its
first interval starts there, and ``since`` / ``until`` and the ordering by time read it
instead of the start of the interval live now.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

# Every interval of every stored section: the table's rows, and for a section without
# any, its created_at .. retired_at.
INTERVALS = (
    "WITH iv(kbid, valid_from, valid_until) AS ("
    "SELECT v.kbid, v.valid_from, v.valid_until FROM section_validity v"
    " JOIN sections s ON s.kbid = v.kbid"
    " UNION ALL SELECT s.kbid, s.created_at, s.retired_at FROM sections s"
    " WHERE NOT EXISTS (SELECT 1 FROM section_validity x WHERE x.kbid = s.kbid)) "
)
# Before the table exists (an older knowledge base not yet written to by this version).
LEGACY_INTERVALS = (
    "WITH iv(kbid, valid_from, valid_until) AS (SELECT kbid, created_at, retired_at FROM sections) "
)

_CHUNK = 900

LIVE_AT = "iv.valid_from <= ? AND (iv.valid_until IS NULL OR iv.valid_until > ?)"
LIVE_NOW = "iv.valid_until IS NULL"


def has_validity(conn: sqlite3.Connection) -> bool:
    """Whether the database has the ``section_validity`` table (a knowledge base written
    to by this version): then ``INTERVALS``, else ``LEGACY_INTERVALS``."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'section_validity'"
    ).fetchone()
    return found is not None


def has_turns(conn: sqlite3.Connection) -> bool:
    """Whether the database has the ``section_turns`` table (written to by a version
    that learns conversations)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'section_turns'"
    ).fetchone()
    return found is not None


def turn_times(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, str]:
    """The time of each of ``kbids`` that is a conversation turn with a time."""
    if not kbids or not has_turns(conn):
        return {}
    out: dict[str, str] = {}
    for i in range(0, len(kbids), _CHUNK):
        chunk = kbids[i : i + _CHUNK]
        marks = ",".join("?" * len(chunk))
        out.update(
            conn.execute(
                "SELECT kbid, spoken_at FROM section_turns WHERE spoken_at IS NOT NULL"
                f" AND kbid IN ({marks})",
                tuple(chunk),
            ).fetchall()
        )
    return out


def _live_params(at: str | None) -> tuple[str, ...]:
    """The parameters of ``LIVE_AT`` (``at`` given) or ``LIVE_NOW`` (None)."""
    return () if at is None else (at, at)


def intervals(
    conn: sqlite3.Connection, kbids: Sequence[str]
) -> dict[str, list[tuple[str, str | None]]]:
    """Each kbid's ``(valid_from, valid_until)`` intervals, oldest first."""
    out: dict[str, list[tuple[str, str | None]]] = {}
    head = INTERVALS if has_validity(conn) else LEGACY_INTERVALS
    for i in range(0, len(kbids), _CHUNK):
        chunk = kbids[i : i + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for kbid, start, end in conn.execute(
            f"{head}SELECT kbid, valid_from, valid_until FROM iv WHERE kbid IN ({marks})"
            " ORDER BY kbid, valid_from",
            tuple(chunk),
        ):
            out.setdefault(kbid, []).append((start, end))
    return out


def live_at(conn: sqlite3.Connection, at: str) -> list[str]:
    """The kbids live at ``at``, ascending."""
    cond = LIVE_NOW if at is None else LIVE_AT
    params = _live_params(at)
    head = INTERVALS if has_validity(conn) else LEGACY_INTERVALS
    return [
        r[0]
        for r in conn.execute(
            f"{head}SELECT DISTINCT kbid FROM iv WHERE {cond} ORDER BY kbid", params
        )
    ]


def started(conn: sqlite3.Connection, kbids: Sequence[str], at: str | None) -> dict[str, str]:
    """When each of ``kbids`` became live for the interval it is in now (``at`` None) or
    was in at ``at``, or, for a conversation turn, when it was said; kbids in none are
    left out."""
    cond = LIVE_NOW if at is None else LIVE_AT
    params = _live_params(at)
    head = INTERVALS if has_validity(conn) else LEGACY_INTERVALS
    out: dict[str, str] = {}
    for i in range(0, len(kbids), _CHUNK):
        chunk = kbids[i : i + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for kbid, start in conn.execute(
            f"{head}SELECT kbid, MAX(valid_from) FROM iv WHERE {cond}"
            f" AND kbid IN ({marks}) GROUP BY kbid",
            (*params, *chunk),
        ):
            out[kbid] = start
    for kbid, said in turn_times(conn, list(out)).items():
        out[kbid] = said
    return out


def between_params(since: str | None, until: str | None, at: str | None) -> tuple[str, ...]:
    params = _live_params(at)
    return (*params, *(v for v in (since, until) if v is not None))
