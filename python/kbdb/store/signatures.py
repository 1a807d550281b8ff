"""The near-duplicate band table (the SQL side of ``kbdb.knowledge.neardup``).

- ``neardup_sections(id, kbid, bands)``: one row per signed live section; ``bands`` holds
  its band keys as little-endian int64, so that removal deletes exactly its bucket rows.
- ``neardup_bands(key, id)``: the LSH buckets, clustered by key (``WITHOUT ROWID``).
- ``meta``: ``neardup_watermark`` (the change-log ``seq`` applied) and ``neardup_params``
  (the hashing parameters the rows were made with).

The tables are created on first use (``CREATE TABLE IF NOT EXISTS``), so a knowledge base
made before they existed opens unchanged and is backfilled by ``kbdb.knowledge.neardup.catch_up``.
"""

from __future__ import annotations

import json
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


def insert_many(conn: sqlite3.Connection, rows: Sequence[tuple[str, bytes]]) -> None:
    """Store sections' band keys (``(kbid, blob)``, ``blob``: little-endian int64) with two
    ``executemany``. The ids are those one ``INSERT`` each would get (``MAX(id) + 1`` on,
    the writer lock is held), and the bucket rows go in key order, the table's own."""
    if not rows:
        return
    (top,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM neardup_sections").fetchone()
    ids = range(top + 1, top + 1 + len(rows))
    conn.executemany(
        "INSERT INTO neardup_sections(id, kbid, bands) VALUES (?, ?, ?)",
        [(sid, kbid, blob) for sid, (kbid, blob) in zip(ids, rows, strict=True)],
    )
    import numpy as np  # as the near-duplicate check that follows every insert

    keys = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<i8")
    owners = np.repeat(np.asarray(ids, dtype=np.int64), [len(blob) // 8 for _, blob in rows])
    order = np.lexsort((owners, keys))  # by key, then id: a sort of tuples took longer
    conn.executemany(
        "INSERT OR IGNORE INTO neardup_bands(key, id) VALUES (?, ?)",
        zip(keys[order].tolist(), owners[order].tolist(), strict=True),
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
    sharing the most bands first (``live_candidates_many`` of one)."""
    return live_candidates_many(conn, [kbid], per_band=per_band, limit=limit).get(kbid, [])


_BUCKETS_SQL = (
    "SELECT key, ids FROM (SELECT j.value AS key, (SELECT group_concat(id) FROM"
    " (SELECT id FROM neardup_bands WHERE key = j.value ORDER BY id LIMIT ?)) AS ids"
    " FROM json_each(?) j) WHERE instr(ids, ',') > 0"
)
"""The first members (by id) of each bucket whose key is in a JSON array and that has more
than one member: one statement for thousands of buckets, each read through the primary key
with its own ``LIMIT``. Most buckets hold only the section whose key it is, and are left out
in SQL rather than parsed and dropped in Python."""
_KEYS_PER_STATEMENT = 8_192


def _shared_buckets(conn: sqlite3.Connection, keys: Sequence[int], n: int) -> dict[int, list[int]]:
    """The ``n`` smallest member ids of each bucket in ``keys`` with two members or more
    (sorted keys read in key order, the table's own). Each key comes from a stored
    section's bands, so a bucket with one member holds only that section."""
    out: dict[int, list[int]] = {}
    for i in range(0, len(keys), _KEYS_PER_STATEMENT):
        part = json.dumps(list(keys[i : i + _KEYS_PER_STATEMENT]))
        for key, ids in conn.execute(_BUCKETS_SQL, (n, part)):
            out[key] = sorted(map(int, ids.split(",")))
    return out


def live_candidates_many(
    conn: sqlite3.Connection, kbids: Sequence[str], *, per_band: int, limit: int
) -> dict[str, list[str]]:
    """For each of ``kbids``: the live sections sharing at least one band key with it
    (itself excluded), those sharing the most bands first; kbids without any are left out.
    At most ``per_band`` members are read from each bucket (the first by id, itself not
    counted) and ``limit`` kept, so a bucket of thousands of near-identical sections costs
    the same as a small one. Each distinct bucket is read once, in a few statements for the
    whole batch."""
    signed: list[tuple[str, int, bytes]] = []
    for i in range(0, len(kbids), _CHUNK):
        part = tuple(kbids[i : i + _CHUNK])
        marks = ",".join("?" * len(part))
        signed += conn.execute(
            f"SELECT kbid, id, bands FROM neardup_sections WHERE kbid IN ({marks})", part
        ).fetchall()
    keys = [(kbid, sid, _keys(blob)) for kbid, sid, blob in signed]
    heads = _shared_buckets(conn, sorted({k for _, _, ks in keys for k in ks}), per_band + 1)
    ranked: dict[str, list[int]] = {}
    for kbid, sid, ks in keys:
        shared: dict[int, int] = {}
        for key in ks:
            members = heads.get(key)
            if members is None:
                continue
            for other in [i for i in members if i != sid][:per_band]:
                shared[other] = shared.get(other, 0) + 1
        if shared:
            ranked[kbid] = sorted(shared, key=lambda i: (-shared[i], i))[:limit]
    if not ranked:
        return {}
    names = live_kbids_of_ids(conn, sorted({i for best in ranked.values() for i in best}))
    out: dict[str, list[str]] = {}
    for kbid, best in ranked.items():
        live = [names[i] for i in best if i in names]
        if live:
            out[kbid] = live
    return out


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
