"""Read queries over ``kb.sqlite``: index catch-up, filters, hydration, recall, stats.

Every function takes a connection, so callers choose the snapshot (``Database.read``).
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from kbdb.store import history
from kbdb.store.history import INTERVALS, LEGACY_INTERVALS, LIVE_AT, LIVE_NOW

# SQLite's default limit on host parameters is 32766; stay well below it.
_CHUNK = 900

SECTION_COLUMNS = (
    "kbid, heading, level, parent, content, type, section_type, title, description,"
    " source_key, created_at, retired_at, superseded_by"
)


# A section's time in an ``iv`` row: a conversation turn's time when it has one, else the
# start of its live interval (the table of turns may be missing in a knowledge base that
# predates it: ``history.has_turns``).
INTERVAL_TIME = "iv.valid_from"
TURN_OR_INTERVAL_TIME = (
    "COALESCE((SELECT t.spoken_at FROM section_turns t WHERE t.kbid = iv.kbid), iv.valid_from)"
)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i : i + _CHUNK]


def count(conn: sqlite3.Connection, table: str) -> int:
    """The rows of ``table`` (a name from this package, never user input)."""
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # noqa: S608


def max_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changelog").fetchone()
    return int(row[0])


def changed_kbids(conn: sqlite3.Connection, since: int) -> list[str]:
    """Distinct kbids with a change-log row after ``since``."""
    rows = conn.execute("SELECT DISTINCT kbid FROM changelog WHERE seq > ?", (since,)).fetchall()
    return [r[0] for r in rows]


IndexRow = tuple[
    str,
    str,
    str,
    str,
    str | None,
    str | None,
    bool,
    str | None,
    str | None,
    str | None,
    str | None,
]
"""(kbid, heading, content, type, title, description, live, source_key, document title,
document source path, document aliases). The last four, the section's place, are read
only when asked for (``place=True``, the lexical index's ``path`` field; None otherwise):
the document is the section's first live link's (or, for a retired section, its first
link's). The aliases are one text, a line each (None: none)."""

_SECTION_COLUMNS = (
    "s.kbid, s.heading, s.content, s.type, s.title, s.description, s.retired_at IS NULL"
)
# With the section's place: its source key and its first document's title and path.
_PLACE_COLUMNS = (
    f"{_SECTION_COLUMNS}, s.source_key, d.title, d.source_path, {{}}"
    " FROM sections s LEFT JOIN documents d ON d.docid = ("
    "SELECT ds.docid FROM document_sections ds WHERE ds.kbid = s.kbid"
    " ORDER BY ds.live DESC, ds.id LIMIT 1)"
)
_PLAIN_COLUMNS = f"{_SECTION_COLUMNS}, NULL, NULL, NULL, NULL FROM sections s"
_ALIASES = (
    "(SELECT group_concat(n.name, char(10)) FROM document_names n"
    " WHERE n.docid = d.docid AND n.kind = 'alias')"
)


_PLACE_WITH_ALIASES = _PLACE_COLUMNS.format(_ALIASES)
_PLACE_WITHOUT_ALIASES = _PLACE_COLUMNS.format("NULL")


def _has_names(conn: sqlite3.Connection) -> bool:
    """Whether the database has ``document_names`` (a knowledge base no kbdb with names
    has written to yet lacks it: its sections have no aliases)."""
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'document_names'"
        ).fetchone()
        is not None
    )


def _index_row(r: sqlite3.Row | tuple[Any, ...]) -> IndexRow:
    return (r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7], r[8], r[9], r[10])


def index_rows(
    conn: sqlite3.Connection, kbids: Sequence[str], *, place: bool = False
) -> list[IndexRow]:
    if not place:
        columns = _PLAIN_COLUMNS
    elif _has_names(conn):
        columns = _PLACE_WITH_ALIASES
    else:
        columns = _PLACE_WITHOUT_ALIASES
    out: list[IndexRow] = []
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT {columns} WHERE s.kbid IN ({marks})",
            tuple(chunk),
        ):
            out.append(_index_row(r))
    return out


def iter_live_index_rows(
    conn: sqlite3.Connection, batch: int = 5000, *, place: bool = False
) -> Iterator[list[IndexRow]]:
    """All live sections, in batches, for a full rebuild."""
    if not place:
        columns = _PLAIN_COLUMNS
    elif _has_names(conn):
        columns = _PLACE_WITH_ALIASES
    else:
        columns = _PLACE_WITHOUT_ALIASES
    cur = conn.execute(f"SELECT {columns} WHERE s.retired_at IS NULL ORDER BY s.rowid")
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            return
        yield [_index_row(r) for r in rows]


def anchor_texts(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, str]:
    """The anchor text (``section_anchors``) of each of ``kbids`` that has one: the lexical
    index's ``anchor`` field. A knowledge base without links has none, and one that no
    kbdb with the table has written to yet lacks the table: both give ``{}`` after one
    query."""
    if not kbids:
        return {}
    try:
        if conn.execute("SELECT 1 FROM section_anchors LIMIT 1").fetchone() is None:
            return {}
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return {}
        raise
    out: dict[str, str] = {}
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        out.update(
            conn.execute(
                f"SELECT kbid, text FROM section_anchors WHERE kbid IN ({marks})",
                tuple(chunk),
            ).fetchall()
        )
    return out


def allowed_kbids(
    conn: sqlite3.Connection,
    *,
    tags: Sequence[str] | None,
    docid: str | None,
    type: str | None,
    section_type: str | None,
    since: str | None = None,
    until: str | None = None,
    at: str | None = None,
    speaker: str | None = None,
) -> list[str]:
    """Live kbids that pass every given filter (tags: all of them). ``since`` / ``until``:
    the section's time (when its live interval began, or a conversation turn's time) is
    at or after / before that time. ``at``: sections live at that moment instead of now
    (a document filter then takes every section ever linked to the document, the links
    keeping no time). ``speaker``: conversation turns of that speaker (ASCII letters
    matched without regard to case)."""
    params: list[Any] = []
    head = (
        INTERVALS
        if at is None and since is None and until is None
        else (INTERVALS if history.has_validity(conn) else LEGACY_INTERVALS)
    )
    live = LIVE_NOW if at is None else LIVE_AT
    if at is None:
        where = ["s.retired_at IS NULL"]
    else:
        where = [f"s.kbid IN ({head}SELECT kbid FROM iv WHERE {live})"]
        params.extend(history.between_params(None, None, at))
    if since is not None or until is not None:
        span = [live]
        when = TURN_OR_INTERVAL_TIME if history.has_turns(conn) else INTERVAL_TIME
        if since is not None:
            span.append(f"{when} >= ?")
        if until is not None:
            span.append(f"{when} < ?")
        where.append(f"s.kbid IN ({head}SELECT kbid FROM iv WHERE {' AND '.join(span)})")
        params.extend(history.between_params(since, until, at))
    if type is not None:
        where.append("s.type = ?")
        params.append(type)
    if section_type is not None:
        where.append("s.section_type = ?")
        params.append(section_type)
    if docid is not None:
        live = " AND live = 1" if at is None else ""
        where.append(f"s.kbid IN (SELECT kbid FROM document_sections WHERE docid = ?{live})")
        params.append(docid)
    for tag in tags or ():
        where.append("s.kbid IN (SELECT kbid FROM section_tags WHERE tag = ?)")
        params.append(tag)
    if speaker is not None:
        if not history.has_turns(conn):
            return []
        where.append("s.kbid IN (SELECT kbid FROM section_turns WHERE speaker = ? COLLATE NOCASE)")
        params.append(speaker)
    sql = f"SELECT s.kbid FROM sections s WHERE {' AND '.join(where)}"
    return [r[0] for r in conn.execute(sql, params)]


def sections(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, sqlite3.Row]:
    """Full section rows by kbid (retired ones included)."""
    conn.row_factory = sqlite3.Row
    try:
        out: dict[str, sqlite3.Row] = {}
        for chunk in _chunks(kbids):
            marks = ",".join("?" * len(chunk))
            for r in conn.execute(
                f"SELECT {SECTION_COLUMNS} FROM sections WHERE kbid IN ({marks})", tuple(chunk)
            ):
                out[r["kbid"]] = r
        return out
    finally:
        conn.row_factory = None


def docids_of(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, list[str]]:
    """Documents of each section: the documents it is live in; for a section that is live
    in none (retired), the documents it was part of."""
    live: dict[str, list[str]] = defaultdict(list)
    dead: dict[str, list[str]] = defaultdict(list)
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        for kbid, docid, is_live in conn.execute(
            f"SELECT DISTINCT kbid, docid, live FROM document_sections WHERE kbid IN ({marks})"
            " ORDER BY docid",
            tuple(chunk),
        ):
            (live if is_live else dead)[kbid].append(docid)
    return {k: live[k] or list(dict.fromkeys(dead[k])) for k in {*live, *dead}}


def sources_of(
    conn: sqlite3.Connection, kbids: Sequence[str], docid: str | None = None
) -> dict[str, str | None]:
    """Each section's citation cell (``SOURCE_CELL``): in ``docid`` when given (its live
    link there), else in the document a result names first."""
    out: dict[str, str | None] = {}
    if docid is not None:
        for kbid, cell in conn.execute(
            "SELECT ds.kbid, json_array(d.source_path, ds.start_line, ds.end_line, ds.page)"
            " FROM document_sections ds JOIN documents d ON d.docid = ds.docid"
            " WHERE ds.docid = ? AND ds.live = 1",
            (docid,),
        ):
            out.setdefault(kbid, cell)
    rest = [k for k in kbids if k not in out]
    for chunk in _chunks(rest):
        marks = ",".join("?" * len(chunk))
        out.update(
            conn.execute(
                f"SELECT s.kbid, {SOURCE_CELL} FROM sections s WHERE s.kbid IN ({marks})",
                tuple(chunk),
            ).fetchall()
        )
    return out


def live_docids_of(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        for kbid, docid in conn.execute(
            f"SELECT DISTINCT kbid, docid FROM document_sections WHERE live = 1"
            f" AND kbid IN ({marks})",
            tuple(chunk),
        ):
            out[kbid].append(docid)
    return out


def tags_of(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        for kbid, tag in conn.execute(
            f"SELECT kbid, tag FROM section_tags WHERE kbid IN ({marks}) ORDER BY tag",
            tuple(chunk),
        ):
            out[kbid].append(tag)
    return out


def document_kbids(conn: sqlite3.Connection, docid: str) -> list[str] | None:
    """A document's live sections in order, or None when the document is unknown."""
    if conn.execute("SELECT 1 FROM documents WHERE docid = ?", (docid,)).fetchone() is None:
        return None
    return [
        r[0]
        for r in conn.execute(
            "SELECT kbid FROM document_sections WHERE docid = ? AND live = 1 ORDER BY ord",
            (docid,),
        )
    ]


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return {
        "documents": one("SELECT COUNT(*) FROM documents"),
        "sections": one("SELECT COUNT(*) FROM sections"),
        "live_sections": one("SELECT COUNT(*) FROM sections WHERE retired_at IS NULL"),
        "tags": one("SELECT COUNT(DISTINCT tag) FROM section_tags"),
        "changelog_seq": max_seq(conn),
    }


def cached_embeddings(
    conn: sqlite3.Connection, model: str, shas: Sequence[str]
) -> dict[str, bytes]:
    """Cached float32 vectors (raw bytes) by text SHA-256, for one model."""
    out: dict[str, bytes] = {}
    for chunk in _chunks(shas):
        marks = ",".join("?" * len(chunk))
        for sha, vec in conn.execute(
            f"SELECT text_sha, vector FROM embeddings WHERE model = ? AND text_sha IN ({marks})",
            (model, *chunk),
        ):
            out[sha] = bytes(vec)
    return out


def embedding_shas(conn: sqlite3.Connection, model: str) -> list[str]:
    """The text SHA-256s cached for ``model``."""
    return [
        sha for (sha,) in conn.execute("SELECT text_sha FROM embeddings WHERE model = ?", (model,))
    ]


def store_embeddings(
    conn: sqlite3.Connection, model: str, rows: Sequence[tuple[str, bytes]]
) -> None:
    """Cache ``(text_sha, float32 bytes)`` rows for ``model`` (inside a write)."""
    conn.executemany(
        "INSERT OR REPLACE INTO embeddings(text_sha, model, vector) VALUES (?, ?, ?)",
        [(sha, model, vec) for sha, vec in rows],
    )


def live_count(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT COUNT(*) FROM sections WHERE retired_at IS NULL").fetchone()
    return int(row[0])


# One query per page of search results: the section columns hydration shows, and its tags
# as a JSON array (sorted by the caller: SQLite's BINARY collation and Python's str order
# agree).
# A section's citation, as the JSON array [path, start_line, end_line, page], from the
# document a result names first (live links first, then by docid: ``docids_of``'s order).
SOURCE_CELL = (
    "(SELECT json_array(d.source_path, ds.start_line, ds.end_line, ds.page)"
    " FROM document_sections ds JOIN documents d ON d.docid = ds.docid"
    " WHERE ds.kbid = s.kbid ORDER BY ds.live DESC, ds.docid LIMIT 1)"
)
_HIT_ROWS = (
    "SELECT s.kbid, s.heading, s.level, s.parent, s.content, s.type, s.section_type,"
    " s.title, s.created_at, s.retired_at,"
    " (SELECT json_group_array(t.tag) FROM section_tags t WHERE t.kbid = s.kbid),"
    f" {SOURCE_CELL}, s.source_key"
    " FROM sections s WHERE s.kbid IN ({marks})"
)


def hit_rows(conn: sqlite3.Connection, kbids: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """``(kbid, heading, level, parent, content, type, section_type, title, created_at,
    retired_at, tags as a JSON array, citation as a JSON array or None, source_key)`` of
    those of ``kbids`` that exist."""
    for chunk in _chunks(kbids):
        yield from conn.execute(_HIT_ROWS.format(marks=",".join("?" * len(chunk))), tuple(chunk))


def link_rows(conn: sqlite3.Connection, kbids: Sequence[str]) -> list[tuple[str, str, bool]]:
    """``(kbid, docid, live)`` of every document link of ``kbids``, sorted, once each."""
    out: set[tuple[str, str, bool]] = set()
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        out.update(
            (kbid, docid, live != 0)
            for kbid, docid, live in conn.execute(
                f"SELECT kbid, docid, live FROM document_sections WHERE kbid IN ({marks})",
                tuple(chunk),
            )
        )
    # Deduplicated and sorted here, not by SQLite's DISTINCT and ORDER BY (a temporary
    # B-tree, slower for a few dozen rows); SQLite's BINARY collation orders UTF-8 as
    # Python orders str, so the order is the same.
    return sorted(out)


def live_of(conn: sqlite3.Connection, kbids: Sequence[str]) -> set[str]:
    """The kbids among ``kbids`` that are live sections."""
    out: set[str] = set()
    for chunk in _chunks(kbids):
        marks = ",".join("?" * len(chunk))
        out.update(
            r[0]
            for r in conn.execute(
                f"SELECT kbid FROM sections WHERE retired_at IS NULL AND kbid IN ({marks})",
                tuple(chunk),
            )
        )
    return out
