"""The near-duplicate band table (the SQL side of ``kbdb.neardup``).

- ``neardup_sections(id, kbid, bands)``: one row per signed live section; ``bands`` holds
  its band keys as little-endian int64, so that removal deletes exactly its bucket rows.
- ``neardup_bands(key, id)``: the LSH buckets, clustered by key (``WITHOUT ROWID``).
- ``meta``: ``neardup_watermark`` (the change-log ``seq`` applied) and ``neardup_params``
  (the hashing parameters the rows were made with).

The tables are created on first use (``CREATE TABLE IF NOT EXISTS``), so a knowledge base
made before they existed opens unchanged and is backfilled by ``kbdb.neardup.catch_up``.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterator, Sequence

WATERMARK_KEY = "neardup_watermark"
PARAMS_KEY = "neardup_params"
_CHUNK = 900

TABLES = (
    "CREATE TABLE IF NOT EXISTS neardup_sections ("
    " id INTEGER PRIMARY KEY, kbid TEXT NOT NULL UNIQUE, bands BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS neardup_bands ("
    " key INTEGER NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (key, id)) WITHOUT ROWID",
)


def _keys(blob: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(blob) // 8}q", blob)


def ensure_tables(conn: sqlite3.Connection) -> None:
    """Inside a write transaction."""
    for stmt in TABLES:
        conn.execute(stmt)


def has_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'neardup_bands'"
    ).fetchone()
    return row is not None


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def clear(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM neardup_bands")
    conn.execute("DELETE FROM neardup_sections")


def insert(conn: sqlite3.Connection, kbid: str, blob: bytes) -> None:
    """Store one section's band keys (``blob``: little-endian int64)."""
    sid = conn.execute(
        "INSERT INTO neardup_sections(kbid, bands) VALUES (?, ?)", (kbid, blob)
    ).lastrowid
    conn.executemany(
        "INSERT OR IGNORE INTO neardup_bands(key, id) VALUES (?, ?)",
        [(k, sid) for k in _keys(blob)],
    )


def forget(conn: sqlite3.Connection, kbids: Sequence[str]) -> int:
    """Drop the rows of ``kbids``; unknown kbids are ignored. Returns sections dropped."""
    if not kbids or not has_tables(conn):
        return 0
    dropped = 0
    for i in range(0, len(kbids), _CHUNK):
        chunk = tuple(kbids[i : i + _CHUNK])
        marks = ",".join("?" * len(chunk))
        found = conn.execute(
            f"SELECT id, bands FROM neardup_sections WHERE kbid IN ({marks})", chunk
        ).fetchall()
        for sid, blob in found:
            conn.executemany(
                "DELETE FROM neardup_bands WHERE key = ? AND id = ?",
                [(k, sid) for k in _keys(blob)],
            )
        conn.executemany("DELETE FROM neardup_sections WHERE id = ?", [(r[0],) for r in found])
        dropped += len(found)
    return dropped


def live_candidates(conn: sqlite3.Connection, kbid: str, *, per_band: int, limit: int) -> list[str]:
    """Live sections sharing at least one band key with ``kbid`` (itself excluded), those
    sharing the most bands first. At most ``per_band`` members are read from each bucket
    and ``limit`` returned, so a bucket of thousands of near-identical sections costs the
    same as a small one."""
    row = conn.execute("SELECT id, bands FROM neardup_sections WHERE kbid = ?", (kbid,)).fetchone()
    if row is None:
        return []
    sid, blob = row
    shared: dict[int, int] = {}
    for key in _keys(blob):
        for (other,) in conn.execute(
            "SELECT id FROM neardup_bands WHERE key = ? AND id != ? LIMIT ?", (key, sid, per_band)
        ):
            shared[other] = shared.get(other, 0) + 1
    best = sorted(shared, key=lambda i: (-shared[i], i))[:limit]
    names = live_kbids_of_ids(conn, best)
    return [names[i] for i in best if i in names]


def buckets(conn: sqlite3.Connection) -> Iterator[list[int]]:
    """Every bucket with more than one member, as section ids: one pass in key order."""
    bucket: list[int] = []
    last: int | None = None
    for key, sid in conn.execute("SELECT key, id FROM neardup_bands ORDER BY key"):
        if key != last:
            if len(bucket) > 1:
                yield bucket
            bucket = []
            last = key
        bucket.append(sid)
    if len(bucket) > 1:
        yield bucket


def live_kbids_of_ids(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for i in range(0, len(ids), _CHUNK):
        part = tuple(ids[i : i + _CHUNK])
        marks = ",".join("?" * len(part))
        for sid, kbid in conn.execute(
            "SELECT s.id, s.kbid FROM neardup_sections s JOIN sections x ON x.kbid = s.kbid"
            f" WHERE x.retired_at IS NULL AND s.id IN ({marks})",
            part,
        ):
            out[sid] = kbid
    return out
