"""Opening ``kb.sqlite``: pragmas, schema, per-thread connections, write transactions.

Durability (SPEC §13): WAL with ``synchronous=FULL``, so a learn that returned survives
``kill -9`` and power loss. Every write runs in ``BEGIN IMMEDIATE`` under the writer lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbdb.errors import KbdbError, KbLockedError
from kbdb.store.schema import SCHEMA, SCHEMA_VERSION, UPGRADES

DB_NAME = "kb.sqlite"
BUSY_TIMEOUT_MS = 30_000
# Reads go through a memory map of the first MMAP_BYTES of ``kb.sqlite``: a page comes
# from the map instead of a read() into SQLite's page cache, which makes a search's
# statements cheaper (docs/benchmarks.md §2, "Session 8"); pages past it are read as
# before. The map is read-only, and what it holds is the OS's shared file cache, not the
# process's own memory; but it counts in the process's resident size (the kernel maps
# 64 KiB around each touched page), so it is capped: a knowledge base of a few tens of
# thousands of sections is mapped whole, and a large one adds at most this much to the
# RSS of a long-running server or a bulk learn.
MMAP_BYTES = 64 << 20


class DatabaseError(KbdbError):
    """SQLite refused to open or read the database; the message carries its error and path."""

    code = "INDEX_CORRUPT"


class Database:
    """Per-thread connections to one ``kb.sqlite``."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        self.path = path
        self._local = threading.local()
        self._upgraded = False
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
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if upgrading:
            self._upgraded = True

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read snapshot (one deferred transaction)."""
        conn = self.conn()
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _check_schema(self) -> None:
        try:
            row = (
                self.conn()
                .execute("SELECT value FROM meta WHERE key = 'schema_version'")
                .fetchone()
            )
        except sqlite3.DatabaseError as e:
            raise self._error(e) from e
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise DatabaseError(
                f"{self.path} has schema version {row[0] if row else 'none'}, "
                f"this kbdb reads {SCHEMA_VERSION}",
                hint="export with the kbdb that wrote it, then import",
            )

    def _error(self, e: sqlite3.DatabaseError) -> DatabaseError:
        return DatabaseError(
            f"cannot use database {self.path}: {e}",
            hint="restore it from a backup or 'kbdb export' snapshot",
        )
