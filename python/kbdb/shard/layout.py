"""A sharded collection on disk: ``shards.toml`` and one ordinary knowledge base per shard.

::

    COLLECTION/
      shards.toml          count, routing, and each shard's folder
      shard-000/.kbdb/     an ordinary knowledge base
      shard-001/.kbdb/
      ...

A document belongs to shard ``route(docid, count)``: the first 8 bytes of the SHA-256 of
its docid, big-endian, modulo the count. A section linked to no document is routed by its
kbid the same way. Every shard is a whole knowledge base: it can be opened, checked,
searched or exported on its own. ``shards.toml`` is written last, by rename, so a
collection that ``create`` did not finish is never mistaken for a whole one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbdb.errors import InvalidArgumentError, KbNotFoundError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

SHARDS_FILE = "shards.toml"
ROUTING = "sha256-docid"
FORMAT = 1
MAX_SHARDS = 1024

ProgressFn = Callable[[int, int], None]


def route(key: str, count: int) -> int:
    """The shard of a docid (or of a loose section's kbid) among ``count``."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def _owner(count: int, shard: int) -> Callable[[str], bool]:
    """Whether a key (docid, or a loose section's kbid) routes to ``shard``."""

    def owns(key: str) -> bool:
        return route(key, count) == shard

    return owns


@dataclass(frozen=True)
class Layout:
    """A collection's shards: ``root/shards.toml`` and its ``count`` shard folders."""

    root: Path
    count: int

    def shard_dir(self, i: int) -> Path:
        return self.root / f"shard-{i:03d}"

    @property
    def shard_dirs(self) -> list[Path]:
        return [self.shard_dir(i) for i in range(self.count)]

    def route(self, key: str) -> int:
        return route(key, self.count)


def check_count(count: object) -> int:
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_SHARDS:
        raise InvalidArgumentError(
            f"the number of shards must be an integer in 1..{MAX_SHARDS} (got {count!r})"
        )
    return count


def is_collection(path: Path) -> bool:
    return (path / SHARDS_FILE).is_file()


def load(root: str | os.PathLike[str]) -> Layout:
    """The layout of the collection at ``root``; a clear error when ``shards.toml`` or a
    shard's knowledge base is missing or malformed."""
    root = Path(root).expanduser()
    path = root / SHARDS_FILE
    if not path.is_file():
        raise KbNotFoundError(
            f"no sharded collection at {root} ({SHARDS_FILE} is missing)",
            hint="create one with 'kbdb shard create --shards N --from KB COLLECTION'",
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InvalidArgumentError(
            f"{path} is not valid TOML: {e}",
            hint="restore it from a backup or re-create the collection",
        ) from None
    if data.get("format") != FORMAT or data.get("routing") != ROUTING:
        raise InvalidArgumentError(
            f"{path}: unsupported format {data.get('format')!r} or routing "
            f"{data.get('routing')!r} (this kbdb reads format {FORMAT}, routing {ROUTING!r})",
            hint="upgrade kbdb, or re-create the collection",
        )
    try:
        count = check_count(data.get("shards"))
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{path}: {e.message}") from None
    layout = Layout(root.resolve(), count)
    from kbdb.store import DB_NAME

    for i, d in enumerate(layout.shard_dirs):
        if not (d / ".kbdb" / DB_NAME).is_file():
            raise KbNotFoundError(
                f"shard {i} of {root} is missing: no knowledge base at {d}",
                hint="restore the shard's folder from a backup, or re-create the collection",
            )
    return layout


def _write_manifest(layout: Layout) -> None:
    text = (
        "# A sharded kbdb collection: one knowledge base per shard-NNN folder.\n"
        f"format = {FORMAT}\n"
        f'routing = "{ROUTING}"\n'
        f"shards = {layout.count}\n"
    )
    tmp = layout.root / (SHARDS_FILE + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, layout.root / SHARDS_FILE)


@dataclass(frozen=True)
class CreateReport:
    shards: int
    documents: list[int]  # per shard
    sections: list[int]  # per shard


def create(
    source: Path, target: str | os.PathLike[str], count: int, progress: ProgressFn | None = None
) -> CreateReport:
    """Split the knowledge base at ``source`` (a ``.kbdb`` folder) into ``count`` shards in
    the new or empty folder ``target``. Each shard is a copy of the database that keeps
    only what it owns, with its indexes rebuilt (vectors from the embedding cache: no
    model run for text the source had embedded). The cache is copied whole; ``kbdb gc``
    on a shard drops the rows none of its sections uses. The source is only read."""
    from kbdb.context import CONFIG_NAME, Context
    from kbdb.context import create as create_kb
    from kbdb.knowledge import neardup
    from kbdb.store import DB_NAME
    from kbdb.store import shard as sql

    count = check_count(count)
    root = Path(target).expanduser()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidArgumentError(
            f"{root} is not an empty folder; shard create writes a new collection",
            hint="choose a new folder",
        )
    root.mkdir(parents=True, exist_ok=True)
    layout = Layout(root.resolve(), count)
    src = Context(source)
    documents: list[int] = []
    sections: list[int] = []
    try:
        for i, d in enumerate(layout.shard_dirs):
            kbdir = create_kb(d)
            shutil.copyfile(source / CONFIG_NAME, kbdir / CONFIG_NAME)
            (kbdir / DB_NAME).unlink()
            with src.db.read() as conn:
                sql.copy_database(conn, kbdir / DB_NAME)
            ctx = Context(kbdir)
            try:
                with ctx.lock.hold():
                    with ctx.db.write() as conn:
                        owns = _owner(count, i)
                        docs, secs = sql.keep_only(conn, owns, owns)
                    ctx.index.rebuild()
                    with ctx.db.write() as conn:
                        neardup.rebuild(conn)
                    if ctx.vectors.enabled:
                        ctx.vectors.rebuild()
            finally:
                ctx.close()
            documents.append(docs)
            sections.append(secs)
            if progress is not None:
                progress(i + 1, count)
    finally:
        src.close()
    _write_manifest(layout)
    return CreateReport(count, documents, sections)


@dataclass(frozen=True)
class Problem:
    shard: int
    code: str
    detail: str
    kbid: str | None = None
    docid: str | None = None


def check(layout: Layout, progress: ProgressFn | None = None) -> list[Problem]:
    """Every shard's ``check`` errors, and every document in a shard its docid does not
    route to (``SHARD_MISROUTED``). A parent or successor reference that names a section
    of another shard is sound: a section shared by documents of two shards keeps the
    parent it was first learned under."""
    from kbdb.context import Context
    from kbdb.maintenance.check import run_check
    from kbdb.store import shard as sql

    problems: list[Problem] = []
    dangling: list[tuple[int, str, str, str]] = []
    reports = []
    for i, d in enumerate(layout.shard_dirs):
        ctx = Context(d / ".kbdb")
        try:
            model = ctx.config.embedding.model if ctx.vectors.enabled else None
            reports.append(
                run_check(
                    ctx.db,
                    ctx.index_dir,
                    vector_model=model,
                    progress=None,
                    language=ctx.config.index.language,
                )
            )
            with ctx.db.read() as conn:
                dangling += [(i, c, k, t) for c, k, t in sql.dangling(conn)]
                for docid in sql.misrouted(conn, _owner(layout.count, i)):
                    problems.append(
                        Problem(
                            i,
                            "SHARD_MISROUTED",
                            f"document {docid!r} belongs in shard {layout.route(docid)}",
                            docid=docid,
                        )
                    )
        finally:
            ctx.close()
        if progress is not None:
            progress(i + 1, layout.count)
    targets = sorted({t for _, _, _, t in dangling})
    found: set[str] = set()
    for d in layout.shard_dirs:
        ctx = Context(d / ".kbdb")
        try:
            with ctx.db.read() as conn:
                found |= sql.has_sections(conn, targets)
        finally:
            ctx.close()
    # Per shard, the kbids whose every dangling reference is in another shard.
    sound: dict[int, set[str]] = {}
    unsound: dict[int, set[str]] = {}
    for i, _, k, t in dangling:
        (sound if t in found else unsound).setdefault(i, set()).add(k)
    for i, rep in enumerate(reports):
        for e in rep.errors:
            if (
                e.code == "broken_reference"
                and e.kbid in sound.get(i, set())
                and e.kbid not in unsound.get(i, set())
                and e.detail.startswith(("parent ", "superseded_by "))
            ):
                continue
            problems.append(Problem(i, e.code, e.detail, e.kbid, e.docid))
    return problems
