"""The integrity check (SPEC §8.1): the database against its own rules, and the index files
against their checksums.

It streams: sections are read in chunks from one read snapshot, references are checked by
SQL, and cycles are found on an integer graph (rowid → rowid) that takes 8 bytes per
section. Nothing is written, and no lock is taken, so a check can run beside a learn.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

from kbdb import _core
from kbdb.errors import IndexCorruptError, IndexFormatError, KbdbError
from kbdb.ingest.kbid import compute_kbid
from kbdb.maintenance import links as link_check
from kbdb.store import Database
from kbdb.store import check as sql
from kbdb.store import queries as q
from kbdb.types import CheckIssue, CheckReport

MAX_PER_CODE = 1_000
"""Issues listed per code; past it one ``truncated`` issue gives the number left out, so
a badly damaged million-section base still yields a readable report. Link and orphan
warnings stop sooner (``kbdb.maintenance.links.LISTED_PER_CODE``)."""

KBID_RE = re.compile(r"[0-9a-f]{32}")
MIME_RE = re.compile(r"(text/[a-z0-9.+-]+|application/json|image/[a-z0-9.+-]+)")
TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

ProgressFn = Callable[[int, int], None]


@dataclass
class _Findings:
    errors: list[CheckIssue] = field(default_factory=list)
    warnings: list[CheckIssue] = field(default_factory=list)
    counts: dict[tuple[bool, str], int] = field(default_factory=dict)

    def add(
        self,
        code: str,
        detail: str,
        *,
        kbid: str | None = None,
        docid: str | None = None,
        line: int | None = None,
        warning: bool = False,
    ) -> None:
        key = (warning, code)
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n <= _listed(code):
            (self.warnings if warning else self.errors).append(
                CheckIssue(code=code, detail=detail, kbid=kbid, docid=docid, line=line)
            )

    def report(self, checked: dict[str, int]) -> CheckReport:
        for (warning, code), n in sorted(self.counts.items()):
            if n > _listed(code):
                (self.warnings if warning else self.errors).append(
                    CheckIssue(
                        code="truncated",
                        detail=f"{n - _listed(code)} more {code} issue(s) not listed",
                    )
                )
        return CheckReport(
            ok=not self.errors,
            errors=tuple(self.errors),
            warnings=tuple(self.warnings),
            checked=checked,
        )


def _listed(code: str) -> int:
    return link_check.LISTED_PER_CODE if code in link_check.CODES else MAX_PER_CODE


def run_check(
    db: Database,
    index_dir: Path,
    *,
    vector_model: str | None,
    progress: ProgressFn | None = None,
    quantized_scan: bool = False,
    language: str = "english",
    links: bool = True,
) -> CheckReport:
    """Check ``db`` and the indexes in ``index_dir``. ``vector_model``: the configured
    embedding model (None without a provider), which the vector index must match;
    ``quantized_scan``: whether ``vectors.q8`` should be current (a damaged one is reported
    either way); ``language``: the configured analyzer language, whose analyzer the
    lexical index must have been built by; ``links``: whether links between notes are
    kept (``learn.links``), and so warned about."""
    f = _Findings()
    checked: dict[str, int] = {}
    with db.read() as conn:
        total = q.count(conn, "sections")
        checked["sections"] = _scan_sections(conn, f, total, progress)
        checked["documents"] = q.count(conn, "documents")
        checked["document_entries"] = q.count(conn, "document_sections")
        _references(conn, f)
        _cycles(conn, f, "parent", "parents")
        _cycles(conn, f, "superseded_by", "supersession")
        for kbid in sql.iter_orphan_sections(conn):
            f.add("orphan_section", "section is in no document and in no history chain", kbid=kbid)
        for docid in sql.iter_orphan_documents(conn):
            f.add("orphan_document", "document has no sections left", docid=docid)
        for key, kbids in sql.iter_divergent(conn):
            for kbid in kbids:
                others = ", ".join(k for k in kbids if k != kbid)
                f.add(
                    "divergent_content",
                    f"live sections share source key {key!r} with different content"
                    f" (also {others})",
                    kbid=kbid,
                )
        if links:
            checked["links"] = link_check.check_links(conn, f.add)
        head = q.max_seq(conn)
        live = q.live_count(conn)
    checked["index_files"] = _check_lexical(index_dir, f, head, live, language)
    checked["vector_files"] = _check_vectors(
        index_dir, f, head, live, vector_model, quantized_scan=quantized_scan
    )
    if progress:
        progress(total, total)
    return f.report(checked)


def _text(raw: object) -> str | None:
    """A BLOB-read text column as str; raises ValueError when it is not UTF-8 text."""
    if raw is None:
        return None
    if isinstance(raw, bytes):
        return raw.decode("utf-8")
    raise ValueError(f"stored as {type(raw).__name__}")


def _scan_sections(
    conn: sqlite3.Connection, f: _Findings, total: int, progress: ProgressFn | None
) -> int:
    done = 0
    for rows in sql.iter_sections_raw(conn):
        for row in rows:
            _check_row(row, f)
        done += len(rows)
        if progress:
            progress(done, total)
    return done


def _check_row(row: tuple[object, ...], f: _Findings) -> None:
    _rowid, level_type, *raw = row
    values: dict[str, str | None] = {}
    label = repr(raw[0])
    for name, value in zip(sql.CHECK_COLUMNS, raw, strict=True):
        if name == "level":
            continue
        try:
            values[name] = _text(value)
        except (UnicodeDecodeError, ValueError) as e:
            f.add("type_mismatch", f"section {label}: {name} is not UTF-8 text ({e})")
            return
    kbid = values["kbid"] or ""
    if not KBID_RE.fullmatch(kbid):
        f.add("type_mismatch", f"kbid {kbid!r} is not 32 lower-case hex characters", kbid=kbid)
        return
    level = raw[sql.CHECK_COLUMNS.index("level")]
    if level_type != "integer" or not isinstance(level, int) or not 0 <= level <= 6:
        f.add("type_mismatch", f"level {level!r} is not an integer 0-6", kbid=kbid)
    for name in ("heading", "content", "type", "section_type", "created_at"):
        if values[name] is None:
            f.add("type_mismatch", f"{name} is missing", kbid=kbid)
            return
    mime = values["type"] or ""
    if not MIME_RE.fullmatch(mime):
        f.add("type_mismatch", f"type {mime!r} is not a supported MIME type", kbid=kbid)
    elif mime.startswith("image/") and not values["title"]:
        f.add("type_mismatch", "image section has no title", kbid=kbid)
    if not (values["section_type"] or "").strip():
        f.add("type_mismatch", "section_type is empty", kbid=kbid)
    for name in ("created_at", "retired_at"):
        v = values[name]
        if v is not None and not TIME_RE.fullmatch(v):
            f.add("type_mismatch", f"{name} {v!r} is not an ISO-8601 time", kbid=kbid)
    for name in ("parent", "superseded_by"):
        v = values[name]
        if v is not None and not KBID_RE.fullmatch(v):
            f.add("type_mismatch", f"{name} {v!r} is not a kbid", kbid=kbid)
    if values["superseded_by"] is not None and values["retired_at"] is None:
        f.add("type_mismatch", "a live section has superseded_by set", kbid=kbid)
    try:
        actual = compute_kbid(mime, values["heading"] or "", values["content"] or "")
    except KbdbError as e:
        f.add("checksum_mismatch", f"content cannot be hashed: {e.message}", kbid=kbid)
        return
    if actual != kbid:
        f.add("checksum_mismatch", f"content hashes to {actual}, not to its kbid", kbid=kbid)


def _references(conn: sqlite3.Connection, f: _Findings) -> None:
    for column in ("parent", "superseded_by"):
        for kbid, target in sql.iter_dangling(conn, column):
            f.add("broken_reference", f"{column} {target} names no section", kbid=kbid)
    for what, docid, kbid in sql.iter_dangling_links(conn):
        detail = {
            "section": f"document entry points to missing section {kbid}",
            "document": f"document entry of section {kbid} belongs to no document",
            "section_tag": "tag row of a missing section",
            "document_tag": "tag row of a missing document",
        }[what]
        f.add("broken_reference", detail, kbid=kbid, docid=docid)


def _cycles(conn: sqlite3.Connection, f: _Findings, column: str, name: str) -> None:
    """Cycles in one reference graph; each section on a cycle is reported once."""
    size = sql.max_rowid(conn) + 1
    target = array("q", [-1]) * size
    any_edge = False
    for edges in sql.iter_edges(conn, column):
        any_edge = True
        for src, dst in edges:
            target[src] = dst
    if not any_edge:
        return
    state = bytearray(size)  # 0 unseen, 1 on the current path, 2 done
    on_cycles: list[int] = []
    for start in range(size):
        if state[start] or target[start] < 0:
            continue
        path: list[int] = []
        node = start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = target[node]
        if node >= 0 and state[node] == 1:  # the walk came back onto itself
            on_cycles.extend(path[path.index(node) :])
        for n in path:
            state[n] = 2
    if on_cycles:
        names = sql.kbids_of_rowids(conn, on_cycles)
        for rowid in sorted(on_cycles, key=lambda r: names.get(r, "")):
            f.add(
                "circular_reference",
                f"{name} form a cycle through this section",
                kbid=names.get(rowid),
            )


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as fh:
            data: dict[str, object] = tomllib.load(fh)
            return data
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def segment_totals(index_dir: Path) -> tuple[int, int]:
    """(documents stored in segments, of which deleted) from the lexical manifest."""
    meta = _read_toml(index_dir / "meta.toml")
    segs = meta.get("segments", [])
    docs = deleted = 0
    if isinstance(segs, list):
        for s in segs:
            if isinstance(s, dict):
                docs += int(s.get("docs", 0))
                deleted += int(s.get("deleted", 0))
    return docs, deleted


def vector_dead(index_dir: Path) -> int:
    """Records ``vectors.idx`` and its append file hold beyond the live ones: what a
    compaction drops."""
    meta = _read_toml(index_dir / "vectors-meta.toml").get("vectors", {})
    if not isinstance(meta, dict):
        return 0
    stored = int(meta.get("record_count", 0)) + int(meta.get("append_count", 0))
    return max(0, stored - int(meta.get("section_count", 0)))


_Opened = TypeVar("_Opened", _core.Index, _core.VectorIndex)


def _open_verified(
    open_index: Callable[[], _Opened], what: str, f: _Findings
) -> tuple[_Opened, bool] | None:
    """Open an index and verify every file's checksum, recording each failure as
    ``checksum_mismatch``: (the index, whether every file verified), or None when it cannot
    even be opened."""
    try:
        index = open_index()
        problems = index.verify()
    except IndexFormatError as e:
        f.add("index_format_old", f"{what}: {e.message}; run 'kbdb rebuild'")
        return None
    except IndexCorruptError as e:
        f.add("checksum_mismatch", f"{what}: {e.message}")
        return None
    except FileNotFoundError as e:
        f.add("checksum_mismatch", f"{what} file missing: {e}")
        return None
    for p in problems:
        f.add("checksum_mismatch", f"{what}: {p}")
    return index, not problems


def _check_lexical(index_dir: Path, f: _Findings, head: int, live: int, language: str) -> int:
    if not (index_dir / "meta.toml").exists():
        f.add(
            "index_missing", "the lexical index is missing; it is rebuilt on next use", warning=True
        )
        return 0
    opened = _open_verified(lambda: _core.Index.open(str(index_dir)), "lexical index", f)
    if opened is None:
        return 1
    index, verified = opened
    wanted = _core.Analyzer(language).id
    if index.analyzer_id != wanted:
        f.add(
            "index_behind",
            f"the lexical index was built by analyzer {index.analyzer_id}, index.language"
            f" asks for {wanted}; searches fail with INDEX_STALE until 'kbdb rebuild'",
            warning=True,
        )
    if index.watermark < head:
        f.add(
            "index_behind",
            f"the lexical index has applied change {index.watermark} of"
            f" {head}; the next search or learn catches it up",
            warning=True,
        )
    elif index.watermark > head:
        f.add(
            "index_ahead",
            f"the lexical index is at change {index.watermark}, past the"
            f" database ({head}); it is rebuilt on next use",
            warning=True,
        )
    elif verified and index.doc_count != live:
        f.add(
            "index_out_of_sync",
            f"the lexical index holds {index.doc_count} live"
            f" sections, the database {live}; run 'kbdb rebuild'",
            warning=True,
        )
    return index.segment_count + 1


def _check_vectors(
    index_dir: Path,
    f: _Findings,
    head: int,
    live: int,
    model: str | None,
    *,
    quantized_scan: bool = False,
) -> int:
    if not (index_dir / "vectors-meta.toml").exists():
        if model is not None and live > 0:
            f.add(
                "vector_index_stale", "there is no vector index; run 'kbdb rebuild'", warning=True
            )
        return 0
    opened_vectors = _open_verified(
        lambda: _core.VectorIndex.open(str(index_dir)), "vector index", f
    )
    if opened_vectors is None:
        return 1
    index, verified = opened_vectors
    if model is not None and quantized_scan and verified:
        status = index.q8_status()
        if status != "current":
            f.add(
                "vector_index_behind",
                f"the quantized copy vectors.q8 is {status}; vector search scans float32"
                " until the next learn or 'kbdb rebuild' builds it",
                warning=True,
            )
    if model is not None:
        if index.model_name != model:
            f.add(
                "vector_index_stale",
                f"vectors come from {index.model_name!r}, the"
                f" configured model is {model!r}; run 'kbdb rebuild'",
                warning=True,
            )
        elif index.watermark < head:
            f.add(
                "vector_index_behind",
                f"the vector index has applied change"
                f" {index.watermark} of {head}; the next learn or vector search catches"
                " it up",
                warning=True,
            )
    return 1 + sum(1 for _ in _vector_files(index_dir))


def _vector_files(index_dir: Path) -> Iterator[Path]:
    yield from (p for p in index_dir.glob("vectors*") if p.name != "vectors-meta.toml")
