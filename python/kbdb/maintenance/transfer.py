"""``export`` and ``import`` of a snapshot folder (SPEC §8.4; format in ``snapshot.py``).

Export reads one database snapshot and writes only inside its target: every path is
``target/<fixed folder>/<name from a kbid or sanitized docid>``, and folders on the way must
be real folders (not symlinks). In a new or empty target, files are created with
``O_EXCL | O_NOFOLLOW`` (one create each: file creation dominates export time). In an
earlier export they are written to a temporary name and renamed over, which replaces a
symlink instead of following it; a file whose bytes are already right is left alone, so
re-exporting into a git checkout shows only what changed.

Import validates the whole snapshot before it writes anything (every file parsed, every
kbid re-hashed, every reference resolved), then stores it in one transaction under the
writer lock, so a bad snapshot, or a crash, changes nothing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from kbdb.errors import InvalidArgumentError
from kbdb.ingest.links import Link
from kbdb.maintenance import snapshot as snap
from kbdb.store import Database
from kbdb.store import links as link_store
from kbdb.store import queries as q
from kbdb.store import transfer as sql
from kbdb.store.check import has_link_tables
from kbdb.types import ExportReport, ImportReport

ProgressFn = Callable[[int, int], None]


class _Writer:
    """Writes files strictly below ``root``."""

    def __init__(self, root: Path, *, fresh: bool) -> None:
        self.root = root
        self.fresh = fresh
        self.written: set[Path] = set()
        self._dirs: set[Path] = set()

    def _dir(self, parts: tuple[str, ...]) -> Path:
        d = self.root
        for part in parts:
            d = d / part
            if d in self._dirs:
                continue
            if d.is_symlink():
                raise InvalidArgumentError(
                    f"{d} is a symbolic link; export never writes through links",
                    hint="remove the link or export to a new folder",
                )
            d.mkdir(exist_ok=True)
            self._dirs.add(d)
        return d

    def write(self, parts: tuple[str, ...], data: bytes) -> None:
        for p in parts:
            if not p or p in (".", "..") or "/" in p or "\\" in p or "\x00" in p:
                raise InvalidArgumentError(f"unsafe file name {p!r} in an export")
        path = self._dir(parts[:-1]) / parts[-1]
        self.written.add(path)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        if self.fresh:  # nothing of ours is there: create in place, never over anything
            with os.fdopen(os.open(path, flags | os.O_EXCL, 0o644), "wb") as fh:
                fh.write(data)
            return
        if not path.is_symlink() and path.is_file():
            try:
                if path.stat().st_size == len(data) and path.read_bytes() == data:
                    return
            except OSError:
                pass
        tmp = path.with_name(f".{parts[-1]}.tmp")
        if tmp.is_symlink():
            tmp.unlink()
        with os.fdopen(os.open(tmp, flags | os.O_TRUNC, 0o644), "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)


def _prepare_target(root: Path) -> bool:
    """Refuse a non-empty folder that is not an earlier export. True when it is one."""
    if root.exists() and not root.is_dir():
        raise InvalidArgumentError(
            f"export target {root} is a file", hint="give a folder path (default ./kbdb-export)"
        )
    if not root.exists():
        root.mkdir(parents=True)
        return False
    if not any(root.iterdir()):
        return False
    catalog = root / snap.CATALOG
    try:
        snap.parse_catalog(root)
    except snap.SnapshotError:
        raise InvalidArgumentError(
            f"export target {root} is not empty and is not an earlier kbdb export"
            + ("" if catalog.exists() else f" (no {snap.CATALOG})"),
            hint="choose an empty or new folder",
        ) from None
    return True


def _stale_files(root: Path) -> list[Path]:
    """Files of an earlier export (by name pattern) that this one may replace."""
    out: list[Path] = []
    sec = root / snap.SECTIONS
    if sec.is_dir() and not sec.is_symlink():
        for shard in sec.iterdir():
            if shard.is_dir() and not shard.is_symlink():
                out += [f for f in shard.iterdir() if f.name.endswith(".md")]
    docs = root / snap.DOCUMENTS
    if docs.is_dir() and not docs.is_symlink():
        out += [f for f in docs.iterdir() if snap.DOC_FILE_RE.fullmatch(f.name)]
    return out


def export(
    db: Database, path: str | os.PathLike[str], *, progress: ProgressFn | None = None
) -> ExportReport:
    started = time.perf_counter()
    root = Path(path).expanduser().absolute()
    with db.read() as conn:
        bad = sql.bad_kbids(conn)
        if bad:
            raise InvalidArgumentError(
                f"section kbid {bad[0]!r} is not 32 lower-case hex characters; "
                "export refuses to derive a file name from it",
                hint="run 'kbdb check', then repair or remove that section",
            )
        earlier = _prepare_target(root)
        old = _stale_files(root) if earlier else []
        w = _Writer(root, fresh=not earlier)
        total = q.count(conn, "sections")
        n_sections = 0
        links = sql.iter_section_links(conn)  # in kbid order, as the sections
        pending = next(links, None)
        for rows in sql.iter_export_sections(conn):
            for r in rows:
                s = {k: r[k] for k in r.keys()}  # noqa: SIM118 - sqlite3.Row
                s["tags"] = s["tags"].split("\x1f") if s["tags"] else []
                s["docids"] = s["docids"].split("\x1f") if s["docids"] else []
                while pending is not None and pending[0] < s["kbid"]:
                    pending = next(links, None)
                if pending is not None and pending[0] == s["kbid"]:
                    s["links"] = [dict(zip(_LINK_FIELDS, k, strict=True)) for k in pending[1]]
                w.write(snap.section_parts(s["kbid"]), snap.encode_section(s))
            n_sections += len(rows)
            if progress:
                progress(n_sections, total)
        docids = _export_documents(conn, w)
        w.write((snap.CATALOG,), snap.encode_catalog(n_sections, docids))
    for f in old:
        if f not in w.written:
            f.unlink()
    for shard in (root / snap.SECTIONS).glob("*"):
        if shard.is_dir() and not shard.is_symlink() and not any(shard.iterdir()):
            shard.rmdir()
    return ExportReport(
        path=str(root),
        sections_exported=n_sections,
        documents_exported=len(docids),
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


_LINK_FIELDS = tuple(k for k, _t, _r in snap.LINK_KEYS)


def _export_documents(conn: sqlite3.Connection, w: _Writer) -> list[str]:
    docids: list[str] = []
    names = has_link_tables(conn)
    for r in sql.iter_export_documents(conn):
        d = {k: r[k] for k in r.keys()}  # noqa: SIM118 - sqlite3.Row
        d["tags"] = sql.document_tags(conn, d["docid"])
        d["aliases"] = (sql.document_aliases(conn, d["docid"]) if names else None) or None
        entries = sql.document_links(conn, d["docid"])
        w.write((snap.DOCUMENTS, snap.document_file(d["docid"])), snap.encode_document(d, entries))
        docids.append(d["docid"])
    return docids


# -- import ----------------------------------------------------------------------------------


def validate(root: Path, progress: ProgressFn | None = None) -> tuple[list[Path], list[Path]]:
    """Check every file of the snapshot; returns (section files, document files)."""
    n_sections, docids = snap.parse_catalog(root)
    sec_files = snap.section_files(root)
    doc_files = snap.document_files(root)
    if len(sec_files) != n_sections:
        raise snap.SnapshotError(
            f"the catalog lists {n_sections} sections, {root / snap.SECTIONS} holds"
            f" {len(sec_files)}",
            hint="the snapshot is incomplete; export it again",
        )
    expected = {snap.document_file(d) for d in docids}
    if {f.name for f in doc_files} != expected:
        raise snap.SnapshotError(
            f"the documents in {root / snap.DOCUMENTS} do not match the catalog",
            hint="the snapshot is incomplete; export it again",
        )
    kbids: set[str] = set()
    targets: dict[str, Path] = {}
    for i, f in enumerate(sec_files, 1):
        s = snap.parse_section(f)
        kbids.add(s["kbid"])
        for key in ("parent", "superseded_by"):
            if s[key] is not None:
                targets.setdefault(s[key], f)
        if progress and i % 1000 == 0:
            progress(i, len(sec_files))
    for target, where in targets.items():
        if target not in kbids:
            raise snap.SnapshotError(
                f"invalid snapshot file {where}: it refers to section {target}, which the"
                " snapshot lacks",
                hint="export again from a knowledge base that 'kbdb check' finds ok",
            )
    for f in doc_files:
        _d, entries = snap.parse_document(f)
        for kbid, *_rest in entries:
            if kbid not in kbids:
                raise snap.SnapshotError(
                    f"invalid snapshot file {f}: entry {kbid} has no section file",
                    hint="the snapshot is incomplete; export it again",
                )
    return sec_files, doc_files


def restore(
    conn: sqlite3.Connection,
    sec_files: list[Path],
    doc_files: list[Path],
    *,
    merge: bool | None,
) -> tuple[int, int, int]:
    """Store a validated snapshot inside the caller's write transaction. Returns (sections
    imported, documents imported, sections skipped because their kbid was stored)."""
    if merge is False and not sql.is_empty(conn):
        raise InvalidArgumentError(
            "the knowledge base is not empty and merging was not asked for",
            hint="import into a new knowledge base, or merge (kbdb import --merge)",
        )
    imported = skipped = docs = 0
    for f in sec_files:
        s = snap.parse_section(f)
        inserted = sql.insert_section(conn, s)
        if inserted:
            imported += 1
        else:
            skipped += 1
        sql.insert_turn(conn, s, inserted=inserted)
        sql.add_section_tags(conn, s["kbid"], s["tags"])
        # A section stored already keeps its links; one learned before links were kept
        # gains the snapshot's.
        link_store.add_section_links(conn, s["kbid"], [Link(**k) for k in s["links"]])
    for f in doc_files:
        d, entries = snap.parse_document(f)
        if sql.import_document(conn, d, entries):
            docs += 1
            # What the document is called, so links resolve to it; the commit hook of
            # the write transaction (``kbdb.store.links.catch_up``) resolves them.
            link_store.set_names(conn, d["docid"], d["title"], d["aliases"] or ())
    return imported, docs, skipped


def import_report(root: Path, counts: tuple[int, int, int], started: float) -> ImportReport:
    return ImportReport(
        path=str(root),
        sections_imported=counts[0],
        documents_imported=counts[1],
        sections_skipped=counts[2],
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )
