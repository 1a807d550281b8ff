"""Links between documents: stored as written, resolved against the live documents, and
turned into anchor text (docs/knowledge.md, Links).

Tables:
- ``section_links``: the links in a section's text as written (``kbdb.ingest.links``),
  stored once per section (its content decides them). ``line`` counts from the section's
  first line; ``name`` is the key a target is looked up by (``note_key``).
- ``document_names``: what a document is called: its file name (``file``), its
  ``title`` and its front-matter ``alias``es, each with its lookup key.
- ``links``: each link of each live section of each document, resolved: ``status`` and
  the target document and section. A section in two documents has its links in each,
  since a relative link means something else in another folder.
- ``section_anchors`` (shared with the lexical index): the anchor text of a section, the
  labels of the links of other documents that resolve to it.
- ``links_dirty``: documents whose sections or names changed since the links were last
  resolved. Triggers fill it, so no write path can forget to; ``catch_up`` empties it.

``catch_up`` runs inside every write transaction of a knowledge base (``Database``'s
commit hooks), so links, anchor text and the change log that re-indexes it commit
together with the change that caused them.
"""

from __future__ import annotations

import posixpath
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from kbdb.ingest.links import Link

TABLES = (
    "CREATE TABLE IF NOT EXISTS section_links ("
    "kbid TEXT NOT NULL, n INTEGER NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL,"
    " fragment TEXT, label TEXT, line INTEGER NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY (kbid, n)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS section_links_name ON section_links(name)",
    "CREATE TABLE IF NOT EXISTS links ("
    "docid TEXT NOT NULL, kbid TEXT NOT NULL, n INTEGER NOT NULL, status TEXT NOT NULL,"
    " target_docid TEXT, target_kbid TEXT, PRIMARY KEY (docid, kbid, n)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS links_target_docid ON links(target_docid)",
    "CREATE INDEX IF NOT EXISTS links_target_kbid ON links(target_kbid)",
    "CREATE TABLE IF NOT EXISTS document_names ("
    "docid TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,"
    " PRIMARY KEY (docid, kind, key)) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS document_names_key ON document_names(key)",
    "CREATE TABLE IF NOT EXISTS links_dirty (docid TEXT PRIMARY KEY) WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS links_dirty_link_added AFTER INSERT ON document_sections"
    " BEGIN INSERT OR IGNORE INTO links_dirty(docid) VALUES (NEW.docid); END",
    "CREATE TRIGGER IF NOT EXISTS links_dirty_link_live AFTER UPDATE OF live"
    " ON document_sections WHEN OLD.live IS NOT NEW.live"
    " BEGIN INSERT OR IGNORE INTO links_dirty(docid) VALUES (NEW.docid); END",
    "CREATE TRIGGER IF NOT EXISTS links_dirty_link_gone AFTER DELETE ON document_sections"
    " BEGIN INSERT OR IGNORE INTO links_dirty(docid) VALUES (OLD.docid); END",
    "CREATE TRIGGER IF NOT EXISTS links_dirty_document_gone AFTER DELETE ON documents"
    " BEGIN DELETE FROM document_names WHERE docid = OLD.docid;"
    " INSERT OR IGNORE INTO links_dirty(docid) VALUES (OLD.docid); END",
)
"""Created with the schema and on a knowledge base's first write (``UPGRADES``)."""

STATUSES = ("resolved", "ambiguous", "missing_heading", "dangling", "outside")
"""``resolved``; ``ambiguous``: two or more notes have the name, one was chosen as
Obsidian does; ``missing_heading``: the note exists, the heading or block does not (the
link goes to the note); ``dangling``: no such note; ``outside``: a path that leaves the
learned tree, never followed."""

RESOLVED = ("resolved", "ambiguous", "missing_heading")

MAX_ANCHOR_LINKS = 500
"""Incoming links whose labels make a section's anchor text, the first by source."""

NAMES_VERSION_KEY = "links.names"
NAMES_VERSION = "1"

NOTE_SUFFIXES = (".md", ".markdown", ".html", ".htm")
"""The extensions of notes: a link may name one without its extension."""
_SLUG_DROP = re.compile(r"[^\w\- ]")


def note_key(target: str) -> str:
    """The name a target or a document is looked up by: its last path component,
    without a note extension, case-folded (``Folder/My Note.md`` → ``my note``)."""
    name = target.replace("\\", "/").rstrip("/").rpartition("/")[2].strip()
    low = name.casefold()
    for suffix in NOTE_SUFFIXES:
        if low.endswith(suffix):
            return low[: -len(suffix)].strip()
    return low


def _without_suffix(path: str) -> str:
    low = path.casefold()
    for suffix in NOTE_SUFFIXES:
        if low.endswith(suffix):
            return low[: -len(suffix)]
    return low


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and most site generators write it."""
    return _SLUG_DROP.sub("", heading.strip().casefold()).replace(" ", "-")


# ----------------------------------------------------------------------------- writing


def add_section_links(conn: sqlite3.Connection, kbid: str, links: Sequence[Link]) -> None:
    """Store a section's links once (its content decides them)."""
    if not links:
        return
    conn.executemany(
        "INSERT OR IGNORE INTO section_links(kbid, n, kind, target, fragment, label, line, name)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (kbid, n, k.kind, k.target, k.fragment, k.label, k.line, note_key(k.target))
            for n, k in enumerate(links)
        ],
    )


def set_names(
    conn: sqlite3.Connection, docid: str, title: str | None, aliases: Sequence[str]
) -> bool:
    """Record what ``docid`` is called; True when that changed (the document is then
    marked for the links to be resolved again)."""
    want = {("file", note_key(docid), docid.rpartition("/")[2])}
    if title:
        want.add(("title", title.strip().casefold(), title.strip()))
    for a in aliases:
        want.add(("alias", a.strip().casefold(), a.strip()))
    have = set(
        conn.execute(
            "SELECT kind, key, name FROM document_names WHERE docid = ?", (docid,)
        ).fetchall()
    )
    if have == want:
        return False
    if {w for w in have if w[0] == "alias"} != {w for w in want if w[0] == "alias"}:
        # The aliases are in every section's ``path`` field: re-index them.
        conn.execute(
            "INSERT INTO changelog(op, kbid) SELECT 'add', kbid FROM document_sections"
            " WHERE docid = ? AND live = 1",
            (docid,),
        )
    conn.execute("DELETE FROM document_names WHERE docid = ?", (docid,))
    conn.executemany(
        "INSERT OR IGNORE INTO document_names(docid, kind, key, name) VALUES (?, ?, ?, ?)",
        [(docid, *w) for w in sorted(want)],
    )
    conn.execute("INSERT OR IGNORE INTO links_dirty(docid) VALUES (?)", (docid,))
    return True


def names_of(conn: sqlite3.Connection, docids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Per docid, its other names for the name boost: its aliases, and an alias that is
    a path by its last part too (its file name is its docid's own; its title is its first
    section's heading, which the heading boost compares). A document without any is left
    out."""
    out: dict[str, list[str]] = {}
    for chunk in _chunks(docids):
        marks = ",".join("?" * len(chunk))
        for docid, name in conn.execute(
            f"SELECT docid, name FROM document_names WHERE kind = 'alias' AND docid IN ({marks})",
            chunk,
        ):
            names = out.setdefault(docid, [])
            names.append(name)
            tail = name.rstrip("/").rpartition("/")[2].strip()
            if tail and tail != name:
                names.append(tail)  # an alias that is an old path names by its last part
    return {d: tuple(sorted(set(n))) for d, n in out.items()}


def aliases_of(conn: sqlite3.Connection, docids: Sequence[str]) -> dict[str, list[str]]:
    """Per docid, its aliases in order."""
    out: dict[str, list[str]] = {}
    for chunk in _chunks(docids):
        marks = ",".join("?" * len(chunk))
        for docid, name in conn.execute(
            f"SELECT docid, name FROM document_names WHERE kind = 'alias' AND docid IN ({marks})"
            " ORDER BY docid, key",
            chunk,
        ):
            out.setdefault(docid, []).append(name)
    return out


# --------------------------------------------------------------------------- resolving


@dataclass(frozen=True)
class _Written:
    docid: str  # the linking document
    kbid: str  # the linking section
    n: int
    kind: str
    target: str
    fragment: str | None
    name: str
    old: str | None  # the target section it resolved to before, if any


@dataclass(frozen=True)
class _Resolved:
    status: str
    docid: str | None
    kbid: str | None


class _Universe:
    """Lookups over the live documents, cached for one catch-up."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._named: dict[tuple[str, str], list[str]] = {}
        self._sections: dict[str, list[tuple[str, str, str]]] = {}

    def preload(self, keys: Iterable[str]) -> None:
        """Look up many file-name keys at once (``named`` then reads the cache)."""
        todo = sorted({k for k in keys if (k, "file") not in self._named})
        for chunk in _chunks(todo):
            marks = ",".join("?" * len(chunk))
            found: dict[str, list[str]] = {k: [] for k in chunk}
            for key, docid in self.conn.execute(
                f"SELECT dn.key, dn.docid FROM document_names dn WHERE dn.key IN ({marks})"
                " AND dn.kind = 'file' AND EXISTS (SELECT 1 FROM document_sections ds"
                " WHERE ds.docid = dn.docid AND ds.live = 1) ORDER BY dn.docid",
                chunk,
            ):
                found[key].append(docid)
            for key, docs in found.items():
                self._named[(key, "file")] = docs

    def named(self, key: str, kind: str) -> list[str]:
        """Live documents whose ``kind`` name (``file`` or ``alias``) has ``key``."""
        got = self._named.get((key, kind))
        if got is None:
            got = [
                r[0]
                for r in self.conn.execute(
                    "SELECT dn.docid FROM document_names dn WHERE dn.key = ? AND dn.kind = ?"
                    " AND EXISTS (SELECT 1 FROM document_sections ds"
                    " WHERE ds.docid = dn.docid AND ds.live = 1) ORDER BY dn.docid",
                    (key, kind),
                )
            ]
            self._named[(key, kind)] = got
        return got

    def sections(self, docid: str) -> list[tuple[str, str, str]]:
        """A live document's sections in order: (kbid, heading, source key)."""
        got = self._sections.get(docid)
        if got is None:
            got = [
                (r[0], r[1], r[2] or "")
                for r in self.conn.execute(
                    "SELECT s.kbid, s.heading, s.source_key FROM document_sections ds"
                    " JOIN sections s USING (kbid) WHERE ds.docid = ? AND ds.live = 1"
                    " ORDER BY ds.ord",
                    (docid,),
                )
            ]
            self._sections[docid] = got
        return got

    def block(self, docid: str, block: str) -> str | None:
        """The live section of ``docid`` that holds the block id ``^block``."""
        # At the end of a line, after a space or right after an embed (``![[x.png]]^id``).
        pattern = re.compile(rf"\^{re.escape(block)}[ \t]*$", re.MULTILINE)
        for kbid, _h, _k in self.sections(docid):
            row = self.conn.execute(
                "SELECT content FROM sections WHERE kbid = ?", (kbid,)
            ).fetchone()
            if row is not None and pattern.search(row[0]):
                return kbid
        return None


def _folder(docid: str) -> str:
    return docid.rpartition("/")[0]


def _pick(candidates: list[str], source: str) -> tuple[str, bool]:
    """One of several documents of a name, as Obsidian picks: the one in the linking
    note's folder, else the shortest path, then the first in order. ``(docid, was it
    ambiguous)``."""
    if len(candidates) == 1:
        return candidates[0], False
    here = _folder(source)
    same = [c for c in candidates if _folder(c) == here]
    pool = same or candidates
    return min(pool, key=lambda c: (c.count("/"), len(c), c)), True


def _resolve(w: _Written, u: _Universe) -> _Resolved:
    if not w.target:
        doc: str | None = w.docid  # ``[[#Heading]]``: the same note
        ambiguous = False
    else:
        doc, ambiguous, outside = _resolve_document(w, u)
        if outside:
            return _Resolved("outside", None, None)
    if doc is None:
        return _Resolved("dangling", None, None)
    sections = u.sections(doc)
    if not sections:
        return _Resolved("dangling", None, None)
    kbid = sections[0][0]
    status = "ambiguous" if ambiguous else "resolved"
    if w.fragment:
        found = _section_of(doc, w.fragment, w.kind, u)
        if found is None:
            status = "missing_heading"
        else:
            kbid = found
    return _Resolved(status, doc, kbid)


def _resolve_document(w: _Written, u: _Universe) -> tuple[str | None, bool, bool]:
    """(document, ambiguous, outside the tree) of a link with a target."""
    target = w.target.replace("\\", "/")
    candidates = u.named(w.name, "file")
    if w.kind in ("markdown", "html") or target.startswith(("./", "../", "/")):
        base = "" if target.startswith("/") else _folder(w.docid)
        path = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        if path == ".." or path.startswith("../") or path.startswith("/"):
            return None, False, True
        want = _without_suffix(path)
        exact = [c for c in candidates if c.casefold() == path.casefold()]
        hits = exact or [c for c in candidates if _without_suffix(c) == want]
        if hits:
            return hits[0], False, False
        if w.kind in ("markdown", "html"):
            return None, False, False
    if "/" in target.strip("/"):
        # A path from the vault's root, else the end of a path.
        want = _without_suffix(target.strip("/"))
        hits = [c for c in candidates if _without_suffix(c) == want]
        if not hits:
            hits = [c for c in candidates if _without_suffix(c).endswith("/" + want)]
    else:
        hits = candidates
    # Then a note's alias: the whole target as written.
    found = hits or u.named(target.strip().casefold(), "alias")
    if not found:
        return None, False, False
    doc, ambiguous = _pick(found, w.docid)
    return doc, ambiguous, False


def _section_of(docid: str, fragment: str, kind: str, u: _Universe) -> str | None:
    """The section of ``docid`` that a fragment names: ``^block``, a heading (the last
    of ``H1#H2``), or an anchor slug."""
    fragment = fragment.strip()
    if fragment.startswith("^"):
        return u.block(docid, fragment[1:])
    parts = [p.strip() for p in fragment.split("#") if p.strip()]
    if not parts:
        return None
    want = parts[-1].casefold()
    want_slug = slug(parts[-1])
    sections = u.sections(docid)
    for kbid, heading, _key in sections:
        if heading.strip().casefold() == want:
            return kbid
    for kbid, heading, _key in sections:
        if heading and slug(heading) in (want_slug, want):
            return kbid
    return None


# --------------------------------------------------------------------------- catch-up


def catch_up(conn: sqlite3.Connection) -> int:
    """Resolve the links that the changes since the last call may have moved, inside
    the caller's write transaction; update the anchor text of the sections they point
    at, and queue those sections for re-indexing. Returns the links resolved."""
    _backfill_names(conn)
    dirty = [r[0] for r in conn.execute("SELECT docid FROM links_dirty")]
    if not dirty:
        return 0
    if (
        conn.execute("SELECT 1 FROM section_links LIMIT 1").fetchone() is None
        and conn.execute("SELECT 1 FROM links LIMIT 1").fetchone() is None
    ):
        conn.execute("DELETE FROM links_dirty")
        return 0  # no document has a link: nothing to resolve
    u = _Universe(conn)
    touched: set[str] = set()  # target sections whose incoming links may have changed
    redo: dict[tuple[str, str, int], _Written] = {}
    for chunk in _chunks(dirty):
        marks = ",".join("?" * len(chunk))
        # Links out of a changed document: all of them afresh.
        touched.update(
            r[0]
            for r in conn.execute(
                f"SELECT target_kbid FROM links WHERE docid IN ({marks})"
                " AND target_kbid IS NOT NULL",
                chunk,
            )
        )
        conn.execute(f"DELETE FROM links WHERE docid IN ({marks})", chunk)
        for w in _written(conn, "source", chunk):
            redo[(w.docid, w.kbid, w.n)] = w
        # Links into a changed document, and links by one of its names.
        for w in _written(conn, "target", chunk):
            redo.setdefault((w.docid, w.kbid, w.n), w)
        keys: set[str] = set()
        for kind, key, name in conn.execute(
            f"SELECT kind, key, name FROM document_names WHERE docid IN ({marks})"
            " AND kind IN ('file', 'alias')",
            chunk,
        ):
            keys.add(key)
            if kind == "alias":
                keys.add(note_key(name))  # ``[[How to/Old name]]`` is stored by its tail
        for kchunk in _chunks(sorted(keys)):
            for w in _written(conn, "name", kchunk):
                redo.setdefault((w.docid, w.kbid, w.n), w)
    conn.execute("DELETE FROM links_dirty")
    u.preload({w.name for w in redo.values()})
    rows = []
    for key, w in redo.items():
        if w.old is not None:
            touched.add(w.old)
        r = _resolve(w, u)
        if r.kbid is not None:
            touched.add(r.kbid)
        rows.append((*key, r.status, r.docid, r.kbid))
    conn.executemany(
        "INSERT OR REPLACE INTO links(docid, kbid, n, status, target_docid, target_kbid)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    _update_anchors(conn, sorted(touched))
    return len(rows)


_LIVE = "JOIN document_sections ds ON ds.kbid = sl.kbid AND ds.live = 1"
_VIA_LINKS = (
    "JOIN links l ON l.kbid = sl.kbid AND l.n = sl.n"
    " JOIN document_sections ds ON ds.docid = l.docid AND ds.kbid = l.kbid AND ds.live = 1"
)


_OTHERS = " AND ds.docid NOT IN (SELECT docid FROM links_dirty)"


def _written(
    conn: sqlite3.Connection, by: Literal["source", "target", "name"], values: Sequence[str]
) -> Iterable[_Written]:
    """Stored links of live (document, section) pairs (``ds``) by the linking document,
    the target document or the target's name, with the section each resolved to before."""
    # ``source``: the links of these documents. ``target`` and ``name``: the links into
    # these documents, and those by these names, from other documents: the changed
    # documents' own links are all resolved afresh (``source``), and ``links_dirty``
    # holds those documents until the end.
    if by == "source":
        join, column, others = _LIVE, "ds.docid", ""
    elif by == "target":
        join, column, others = _VIA_LINKS, "l.target_docid", _OTHERS
    else:
        join, column, others = _LIVE, "sl.name", _OTHERS
    marks = ",".join("?" * len(values))
    for row in conn.execute(
        "SELECT DISTINCT ds.docid, sl.kbid, sl.n, sl.kind, sl.target, sl.fragment, sl.name,"
        f" o.target_kbid FROM section_links sl {join}"
        " LEFT JOIN links o ON o.docid = ds.docid AND o.kbid = sl.kbid AND o.n = sl.n"
        f" WHERE {column} IN ({marks}){others}",
        values,
    ):
        yield _Written(*row)


def _backfill_names(conn: sqlite3.Connection) -> None:
    """Give every document learned before names were kept its file name, once."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (NAMES_VERSION_KEY,)).fetchone()
    if row is not None and row[0] == NAMES_VERSION:
        return
    docs = conn.execute(
        "SELECT d.docid, d.title FROM documents d WHERE NOT EXISTS"
        " (SELECT 1 FROM document_names n WHERE n.docid = d.docid)"
    ).fetchall()
    for docid, title in docs:
        set_names(conn, docid, title, ())
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (NAMES_VERSION_KEY, NAMES_VERSION)
    )


def _update_anchors(conn: sqlite3.Connection, kbids: Sequence[str]) -> None:
    """Recompute the anchor text of ``kbids``; a section whose text changed and that is
    live gets a change-log row, so the lexical index re-indexes it."""
    for kbid in kbids:
        text = anchor_text(conn, kbid)
        row = conn.execute("SELECT text FROM section_anchors WHERE kbid = ?", (kbid,)).fetchone()
        old = row[0] if row is not None else ""
        if text == old:
            continue
        if text:
            conn.execute(
                "INSERT OR REPLACE INTO section_anchors(kbid, text) VALUES (?, ?)", (kbid, text)
            )
        else:
            conn.execute("DELETE FROM section_anchors WHERE kbid = ?", (kbid,))
        live = conn.execute(
            "SELECT 1 FROM sections WHERE kbid = ? AND retired_at IS NULL", (kbid,)
        ).fetchone()
        if live is not None:
            conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))


def anchor_text(conn: sqlite3.Connection, kbid: str) -> str:
    """The anchor text of a section: one line per incoming link from another document,
    its label, or for a wikilink without one, its target as written (with the heading).
    Embeds (an image's size, a transclusion) say nothing of their target and are left
    out. At most ``MAX_ANCHOR_LINKS`` links, the first by linking document."""
    lines: list[str] = []
    for kind, target, fragment, label in conn.execute(
        "SELECT sl.kind, sl.target, sl.fragment, sl.label FROM links l"
        " JOIN section_links sl ON sl.kbid = l.kbid AND sl.n = l.n"
        " WHERE l.target_kbid = ? AND l.docid != l.target_docid AND sl.kind != 'embed'"
        " ORDER BY l.docid, l.kbid, l.n LIMIT ?",
        (kbid, MAX_ANCHOR_LINKS),
    ):
        if label:
            lines.append(label)
        elif kind == "wikilink":
            heading = fragment if fragment and not fragment.startswith("^") else ""
            lines.append(" ".join(p for p in (target, heading.replace("#", " ")) if p))
    return "\n".join(lines)


def _chunks(items: Sequence[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


# ----------------------------------------------------------------------------- reading

LINK_COLUMNS = (
    "sl.kind, sl.target, sl.fragment, sl.label, l.status, l.docid, l.kbid, s.heading,"
    " CASE WHEN ds.start_line IS NULL THEN NULL ELSE ds.start_line + sl.line END,"
    " l.target_docid, l.target_kbid, t.heading"
)
"""The columns of a listed link (``kbdb.knowledge.links``), in ``LinkItem`` order."""

_LINK_FROM = (
    " FROM links l JOIN section_links sl ON sl.kbid = l.kbid AND sl.n = l.n"
    " JOIN sections s ON s.kbid = l.kbid"
    " JOIN document_sections ds ON ds.docid = l.docid AND ds.kbid = l.kbid AND ds.live = 1"
    " LEFT JOIN sections t ON t.kbid = l.target_kbid"
)


def outgoing(
    conn: sqlite3.Connection, docid: str, kbid: str | None = None
) -> list[tuple[object, ...]]:
    """The links out of a document (or of one of its sections), in document order."""
    where = "l.docid = ?" + (" AND l.kbid = ?" if kbid is not None else "")
    args = (docid,) if kbid is None else (docid, kbid)
    return conn.execute(
        f"SELECT {LINK_COLUMNS}{_LINK_FROM} WHERE {where} ORDER BY ds.ord, l.n", args
    ).fetchall()


def incoming(
    conn: sqlite3.Connection, docid: str | None, kbid: str | None = None
) -> list[tuple[object, ...]]:
    """The links into a document, or into one section, from every live section, in
    order of the linking document."""
    where = "l.target_kbid = ?" if kbid is not None else "l.target_docid = ?"
    args = (kbid,) if kbid is not None else (docid,)
    return conn.execute(
        f"SELECT {LINK_COLUMNS}{_LINK_FROM} WHERE {where} AND l.status IN"
        " ('resolved', 'ambiguous', 'missing_heading') ORDER BY l.docid, ds.ord, l.n",
        args,
    ).fetchall()


def problems(conn: sqlite3.Connection, limit: int) -> list[tuple[object, ...]]:
    """Links that are not plainly resolved (dangling, ambiguous, a missing heading, a
    path outside the tree), by linking document."""
    return conn.execute(
        f"SELECT {LINK_COLUMNS}{_LINK_FROM} WHERE l.status != 'resolved'"
        " ORDER BY l.docid, ds.ord, l.n LIMIT ?",
        (limit,),
    ).fetchall()


def orphans(conn: sqlite3.Connection, limit: int) -> list[str]:
    """Live Markdown and HTML documents no other document links to, when the knowledge
    base has links at all (without any, every note would be one)."""
    if (
        conn.execute(
            "SELECT 1 FROM links WHERE status IN ('resolved', 'ambiguous',"
            " 'missing_heading') LIMIT 1"
        ).fetchone()
        is None
    ):
        return []
    return [
        r[0]
        for r in conn.execute(
            "SELECT d.docid FROM documents d WHERE d.type IN ('text/markdown', 'text/html')"
            " AND EXISTS (SELECT 1 FROM document_sections ds WHERE ds.docid = d.docid"
            " AND ds.live = 1)"
            " AND NOT EXISTS (SELECT 1 FROM links l WHERE l.target_docid = d.docid"
            " AND l.docid != d.docid)"
            " ORDER BY d.docid LIMIT ?",
            (limit,),
        )
    ]


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many links of each status the knowledge base has."""
    return {s: n for s, n in conn.execute("SELECT status, COUNT(*) FROM links GROUP BY status")}
