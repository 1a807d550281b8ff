"""Keeping the lexical index in step with the store (DESIGN §3).

The index records the change-log ``seq`` it has applied (its watermark). Writers catch it
up after every commit, under the writer lock. Readers that find it behind (a writer is
mid-update, or one crashed after its database commit) catch it up themselves when the lock
is free, and otherwise serve the last published snapshot, which is consistent: search
results are hydrated from the database and retired sections are dropped there.

The index also records the analyzer that built it (``analyzer_id``: language and pipeline
version). An index built by another analyzer than the configured one (``index.language``
changed, or a kbdb whose analyzer changed) is never searched or added to: terms of two
analyzers would not match. Using it raises ``INDEX_STALE`` until ``kbdb rebuild``; an
index that holds nothing is rebuilt on the spot instead.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path

from kbdb import _core
from kbdb._log import log
from kbdb.errors import IndexCorruptError, IndexStaleError, KbLockedError
from kbdb.languages import LANGUAGES
from kbdb.search.fields import index_fields
from kbdb.store import Database, WriteLock
from kbdb.store import queries as q


def _manifest_stamp(directory: Path) -> tuple[int, int, int, int] | None:
    """The index manifest's inode, size and modification and change times, or None when
    it cannot be read."""
    try:
        st = os.stat(directory / "meta.toml")
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# Changes applied per index commit during a catch-up; bounds memory on large gaps.
CATCH_UP_BATCH = 20_000

IndexDoc = tuple[str, str, str, str, str, str]
"""What ``_core.Index`` indexes of a section: (kbid, heading, body, code, path, anchor)."""


def index_doc(row: q.IndexRow, anchors: Mapping[str, str]) -> IndexDoc:
    """The indexed texts of a section's row (read with ``place=True``), with its anchor
    text from ``anchors`` (``queries.anchor_texts``; none: empty)."""
    kbid, heading, content, type, title, description, _, key, doc_title, doc_path, aliases = row
    fields = index_fields(
        heading,
        content,
        type,
        title,
        description,
        (key, doc_title, doc_path),
        anchor=anchors.get(kbid, ""),
        aliases=aliases.split("\n") if aliases else (),
    )
    return (kbid, *fields)


def describe_analyzer(analyzer_id: str) -> str:
    """``de-snowball-v1`` -> ``de-snowball-v1 (german)``; the id alone when its language is
    not one this kbdb knows."""
    code = analyzer_id.split("-", 1)[0]
    name = next((n for n, c in LANGUAGES.items() if c == code), None)
    return f"{analyzer_id} ({name})" if name else analyzer_id


class LexicalIndex:
    """The ``_core.Index`` under ``.kbdb/indexes/``, plus the logic that keeps it current.
    ``language``: the configured analyzer language (``index.language``)."""

    def __init__(
        self, directory: Path, db: Database, lock: WriteLock, language: str = "english"
    ) -> None:
        self.directory = directory
        self._db = db
        self._lock = lock
        self._index: _core.Index | None = None
        self._mutex = threading.Lock()
        self.language = language
        self.analyzer = _core.Analyzer(language)
        # Per thread: the read cache (its connection's) and the database version at which
        # ``refresh`` last found the index in step with the database.
        self._agreed = threading.local()

    @property
    def core(self) -> _core.Index:
        """The engine index, opened (and built if missing) on first use.

        Raises:
            IndexStaleError: another analyzer than the configured one built it.
        """
        index = self.opened()
        if index.analyzer_id != self.analyzer.id:
            index.reload()  # another process may have rebuilt it since it was loaded
            if index.analyzer_id != self.analyzer.id:
                raise self.stale_error(index.analyzer_id)
        return index

    def opened(self) -> _core.Index:
        """The engine index as it is, whichever analyzer built it: for ``stats`` and the
        checks, which report what it holds. Searching and learning use :attr:`core`."""
        if self._index is None:
            with self._mutex:
                if self._index is None:
                    self._index = self._open()
        return self._index

    def stale_error(self, built_by: str) -> IndexStaleError:
        """The error of an index that ``built_by`` (an analyzer id) built."""
        return IndexStaleError(
            f"the lexical index was built by analyzer {describe_analyzer(built_by)}, and "
            f"index.language asks for {describe_analyzer(self.analyzer.id)}",
            hint=f"run 'kbdb rebuild' to index the knowledge base in {self.language}",
        )

    def _open(self) -> _core.Index:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = str(self.directory)
        try:
            index = _core.Index.open(path, language=self.language)
        except FileNotFoundError:
            log.info("lexical index missing in %s; building it", self.directory)
            with self._lock.hold():
                index = _core.Index.open(path, create=True, language=self.language)
                self._rebuild(index)
            return index
        if index.analyzer_id != self.analyzer.id and index.doc_count == 0:
            log.info("empty index of analyzer %s; rebuilding it", index.analyzer_id)
            with self._lock.hold():
                self._rebuild(index)
        return index

    def refresh(self) -> None:
        """Pick up other processes' commits; catch up if the index is behind and the writer
        lock is free (never waits)."""
        conn = self._db.conn()
        if conn.in_transaction:
            # Its snapshot may predate an index another writer has just published: the
            # catch-up would see that index "ahead" of the database and rebuild it back.
            raise RuntimeError("LexicalIndex.refresh called inside a database transaction")
        index = self.core
        # Before the reload: a manifest published after it then shows as a change.
        manifest = _manifest_stamp(self.directory)
        index.reload()
        if index.analyzer_id != self.analyzer.id:
            raise self.stale_error(index.analyzer_id)  # rebuilt by another configuration
        # The head, and the version of the database it was read at (``current``).
        with self._db.read():
            cache = self._db.cache()
            head = q.max_seq(conn)
        if index.watermark == head:
            if cache is not None and manifest is not None:
                self._agreed.at = (weakref.ref(cache), cache.version, manifest)
            return
        try:
            with self._lock.hold(timeout=0):
                self.catch_up()
        except KbLockedError:
            pass  # a writer holds the lock and will publish; serve the current snapshot

    def current(self) -> bool:
        """Inside a read snapshot: whether it shows the database at the version at which
        this thread's ``refresh`` last found the index in step with it (its head at the
        index's watermark), with the index manifest as it was then. Then no other
        connection has committed since and this one has not written, so the head has not
        moved; and every publish that changes what the index holds either follows a
        database commit or (a merge, or a ``kbdb rebuild`` repairing a damaged index)
        replaces the manifest, which its stat shows. (Should a replaced manifest reuse its
        inode, size and timestamps, the loaded snapshot, whose files its maps keep, serves
        until the next commit.) False outside a snapshot, when the connection is not the
        one that agreed, or when the index is closed."""
        agreed = getattr(self._agreed, "at", None)
        if agreed is None or self._index is None:
            return False
        cache = self._db.cache()
        return (
            cache is not None
            and agreed[0]() is cache
            and agreed[1] == cache.version
            and agreed[2] == _manifest_stamp(self.directory)
        )

    def catch_up(self) -> dict[str, int]:
        """Apply change-log rows past the watermark. Caller holds the writer lock. Returns
        the number of indexed terms of each section added."""
        index = self.core
        index.reload()
        with self._db.read() as conn:
            head = q.max_seq(conn)
            if index.watermark > head:
                log.warning(
                    "index watermark %d is ahead of the database (%d); rebuilding",
                    index.watermark,
                    head,
                )
                self._rebuild(index)
                return {}
            if index.watermark == head:
                return {}
            changed = q.changed_kbids(conn, index.watermark)
            rows = q.index_rows(conn, changed, place=True)
            anchors = q.anchor_texts(conn, [r[0] for r in rows if r[6]])
        terms: dict[str, int] = {}
        for i in range(0, max(len(changed), 1), CATCH_UP_BATCH):
            batch = changed[i : i + CATCH_UP_BATCH]
            batch_set = set(batch)
            adds = [index_doc(r, anchors) for r in rows if r[6] and r[0] in batch_set]
            last = i + CATCH_UP_BATCH >= len(changed)
            counts = index.commit(adds, batch, watermark=head if last else index.watermark)
            terms.update((a[0], n) for a, n in zip(adds, counts, strict=True))
        return terms

    def index_terms(
        self, heading: str, content: str, type: str, title: str | None, description: str | None
    ) -> int:
        """How many terms a section contributes (for learn reports)."""
        return sum(
            len(self.analyzer.terms(t))
            for t in index_fields(heading, content, type, title, description)
        )

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Regenerate the index from the database, repairing a missing or corrupt one.
        Caller holds the writer lock. Returns the number of sections indexed.
        ``progress(sections read, total)`` follows the read of the database."""
        with self._mutex:
            self.directory.mkdir(parents=True, exist_ok=True)
            try:
                index = self._index or _core.Index.open(
                    str(self.directory), create=True, language=self.language
                )
            except IndexCorruptError:
                log.warning("lexical index in %s is corrupt; rebuilding", self.directory)
                index = _core.Index.open(str(self.directory), reset=True, language=self.language)
            n = self._rebuild(index, progress)
            self._index = index
        return n

    def _rebuild(
        self, index: _core.Index, progress: Callable[[int, int], None] | None = None
    ) -> int:
        docs: list[IndexDoc] = []
        with self._db.read() as conn:
            head = q.max_seq(conn)
            total = q.live_count(conn) if progress else 0
            for batch in q.iter_live_index_rows(conn, place=True):
                anchors = q.anchor_texts(conn, [r[0] for r in batch])
                docs.extend(index_doc(r, anchors) for r in batch)
                if progress:
                    progress(len(docs), total)
        index.rebuild(docs, watermark=head)
        return len(docs)

    def close(self) -> None:
        self._index = None
