"""Opening ``kb.sqlite``: pragmas, schema, per-thread connections, write transactions.

Durability (SPEC §13): WAL with ``synchronous=FULL``, so a learn that returned survives
``kill -9`` and power loss. Every write runs in ``BEGIN IMMEDIATE`` under the writer lock.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kbdb.errors import KbdbError, KbLockedError
from kbdb.store.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, UPGRADES

DB_NAME = "kb.sqlite"
BUSY_TIMEOUT_MS = 30_000
# Reads go through a memory map of the first MMAP_BYTES of ``kb.sqlite``: a page comes
# from the map instead of a read() into SQLite's page cache, which makes a search's
# statements cheaper; pages past it are read as before. The map is read-only, and what
# it holds is the OS's shared file cache, not the process's own memory; but it counts in
# the process's resident size (the kernel maps 64 KiB around each touched page), so it is
# capped: a knowledge base of a few tens of thousands of sections is mapped whole, and a
# large one adds at most this much to the RSS of a long-running server or a bulk learn.
MMAP_BYTES = 64 << 20
# The read cache (``Database.cache``) of each thread that searches holds at most this
# many entries per table, and values of at most this many bytes in all (as ``text_bytes``
# and its callers estimate them, from above); past either it is emptied and refills. A
# value of more than a sixteenth of the byte bound is not kept.
CACHE_ENTRIES = 16_384
CACHE_BYTES = 16 << 20


class DatabaseError(KbdbError):
    """SQLite refused to open or read the database; the message carries its error and path."""

    code = "INDEX_CORRUPT"


def text_bytes(s: str | None) -> int:
    """An upper bound on the memory ``s`` holds while cached: its own size, plus, unless it
    is ASCII, the UTF-8 copy that CPython attaches to it once the engine reads it (at most
    4 bytes a character, and a NUL)."""
    if s is None:
        return 0
    return sys.getsizeof(s) + (0 if s.isascii() else 4 * len(s) + 1)


class ReadCache:
    """Rows read from the database, kept across read snapshots for as long as the database
    does not change: each table a dict by key, filled by its reader.

    It belongs to one thread's connection and is checked once per snapshot against
    SQLite's ``data_version`` (which moves when another connection commits) and the count
    of this connection's own write transactions (which do not move it); when either moved,
    it is emptied. So what it serves is exactly what the snapshot would read.
    """

    def __init__(self) -> None:
        self.version: tuple[int, int] | None = None
        self.checked = False  # the version was compared in the current snapshot
        self.tables: dict[str, dict[Any, Any]] = {}
        self.bytes = 0

    def table(self, name: str) -> dict[Any, Any]:
        table = self.tables.get(name)
        if table is None:
            table = self.tables[name] = {}
        return table

    def put(self, table: dict[Any, Any], key: Any, value: Any, size: int) -> None:
        """Keeps ``value``, which holds at most ``size`` bytes (toward ``CACHE_BYTES``)."""
        if size > CACHE_BYTES // 16:
            return
        if len(table) >= CACHE_ENTRIES or self.bytes + size > CACHE_BYTES:
            self.clear()
        table[key] = value
        self.bytes += size

    def clear(self) -> None:
        for table in self.tables.values():
            table.clear()
        self.bytes = 0


class Database:
    """Per-thread connections to one ``kb.sqlite``.

    Every change to the database goes through ``write()``: the read cache (``cache()``)
    relies on it, since a connection's own commits do not move its ``data_version``.
    """

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._local = threading.local()
        self._upgraded = False
        # Run inside every write transaction, last, before its commit: derived tables
        # that must commit with the change (the links, ``kbdb.store.links.catch_up``).
        self.commit_hooks: list[Callable[[sqlite3.Connection], object]] = []
        if create:
            # executescript commits on its own, so the schema goes in as one script.
            self.conn().executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\nCOMMIT;")
            with self.write() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
        self._check_schema()

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; transactions are explicit)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA foreign_keys=OFF")
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            except sqlite3.DatabaseError as e:
                raise self._error(e) from e
            self._local.conn = conn
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on error)."""
        conn = self.conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise KbLockedError(f"database {self.path} is busy: {e}") from e
            raise self._error(e) from e
        upgrading = not self._upgraded
        try:
            if upgrading:
                for stmt in UPGRADES:
                    conn.execute(stmt)
            yield conn
            for hook in self.commit_hooks:
                hook(conn)
        except BaseException:
            try:
                conn.execute("ROLLBACK")
            finally:
                self._wrote()
            raise
        try:
            conn.execute("COMMIT")
        finally:
            self._wrote()
        if upgrading:
            self._upgraded = True

    def read(self) -> _ReadSnapshot:
        """A consistent read snapshot (one deferred transaction); inside one already (or
        a write transaction), that one."""
        return _ReadSnapshot(self)

    def _wrote(self) -> None:
        """Counts a write transaction of this thread's connection, whose commits do not move
        its own ``data_version`` (``ReadCache``)."""
        local = self._local
        local.writes = getattr(local, "writes", 0) + 1

    def cache(self) -> ReadCache | None:
        """This thread's read cache, checked against the current read snapshot; None
        outside one (in autocommit, or in a write transaction, whose own changes it must
        not keep)."""
        local = self._local
        if not getattr(local, "snapshot", False):
            return None
        cache: ReadCache | None = getattr(local, "cache", None)
        if cache is None:
            cache = local.cache = ReadCache()
        if not cache.checked:
            # Inside the snapshot, the pragma reads the version the snapshot sees.
            row = self.conn().execute("PRAGMA data_version").fetchone()
            version = (int(row[0]), getattr(local, "writes", 0))
            if version != cache.version:
                cache.clear()
                cache.version = version
            cache.checked = True
        return cache

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        # A new connection counts its data_version afresh.
        self._local.cache = None

    def _check_schema(self) -> None:
        version = self._version()
        if version is not None and any(version == v for v, _ in MIGRATIONS):
            self._migrate()
            version = self._version()
        if version != SCHEMA_VERSION:
            newer = version is not None and version > SCHEMA_VERSION
            raise DatabaseError(
                f"{self.path} has schema version {version if version is not None else 'none'},"
                f" this kbdb reads {SCHEMA_VERSION}",
                hint="upgrade kbdb to open it"
                if newer
                else "export with the kbdb that wrote it, then import",
            )

    def _version(self) -> int | None:
        try:
            row = (
                self.conn()
                .execute("SELECT value FROM meta WHERE key = 'schema_version'")
                .fetchone()
            )
        except sqlite3.DatabaseError as e:
            raise self._error(e) from e
        try:
            return None if row is None else int(row[0])
        except ValueError:
            return None

    def _migrate(self) -> None:
        """Bring an older knowledge base to ``SCHEMA_VERSION``, one version per step, in
        one write transaction: another process opening it at the same time waits for the
        lock and then finds the work done."""
        conn = self.conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if "readonly" in str(e).replace(" ", "").lower():
                raise self._read_only() from e
            if "locked" in str(e) or "busy" in str(e):
                raise KbLockedError(
                    f"database {self.path} needs a schema upgrade and is busy: {e}",
                    hint="retry when the other kbdb process is done",
                ) from e
            raise self._error(e) from e
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0])
            for from_version, stmt in MIGRATIONS:
                if from_version >= version:
                    conn.execute(stmt)
            version = max(version, SCHEMA_VERSION)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
            conn.execute("COMMIT")
        except sqlite3.OperationalError as e:
            conn.execute("ROLLBACK")
            if "readonly" in str(e).replace(" ", "").lower():
                raise self._read_only() from e
            raise self._error(e) from e
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _read_only(self) -> DatabaseError:
        return DatabaseError(
            f"{self.path} needs an upgrade to schema version {SCHEMA_VERSION}, but it is read-only",
            hint="open it once where it can be written, or use the kbdb that wrote it",
        )

    def _error(self, e: sqlite3.DatabaseError) -> DatabaseError:
        return DatabaseError(
            f"cannot use database {self.path}: {e}",
            hint="restore it from a backup or 'kbdb export' snapshot",
        )


class _ReadSnapshot:
    """``Database.read()``: a context manager class, not a generator one (a search enters
    three: its own and two nested ones, which cost nothing here). Entered once, in the
    thread that enters it."""

    __slots__ = ("_conn", "_db", "_outer")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: sqlite3.Connection | None = None
        self._outer = False

    def __enter__(self) -> sqlite3.Connection:
        if self._conn is not None:
            raise RuntimeError("a Database.read() snapshot can be entered only once")
        conn = self._conn = self._db.conn()
        if conn.in_transaction:
            return conn
        conn.execute("BEGIN")
        self._outer = True
        self._db._local.snapshot = True
        return conn

    def __exit__(self, *exc: object) -> None:
        conn = self._conn
        if not self._outer or conn is None:
            return
        local = self._db._local
        local.snapshot = False
        cache: ReadCache | None = getattr(local, "cache", None)
        if cache is not None:
            cache.checked = False
        conn.execute("COMMIT")
