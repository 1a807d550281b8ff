"""Time travel (``as_of``): indexes of the sections that were live at a moment.

The lexical index and ``vectors.idx`` hold only the sections live now, and the lexical
index's statistics count tombstones until a merge. An ``as_of`` search therefore runs over
an index built for it: the sections live at ``T`` (``store.history.live_at``), indexed with
the writer a rebuild uses into a temporary folder, so the BM25F statistics (N, document
frequencies, average field lengths) are exactly those of the snapshot. Vectors come from
the embedding cache in ``kb.sqlite`` (which keeps every stored section's embedding), into a
temporary ``vectors.idx`` made on the first vector or hybrid ``as_of`` search.

Snapshots are kept per (moment, change-log head) for the process, the last
``KEEP`` of them; any change to the store moves the head, so a kept one is never stale.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb import _core
from kbdb.index.lexical import index_doc
from kbdb.store import Database, history
from kbdb.store import queries as q

if TYPE_CHECKING:
    from kbdb.index.vectors import VectorStore

KEEP = 4
"""Snapshots kept per open knowledge base."""


class Snapshot:
    """The indexes of the sections live at ``at``, in a temporary folder, analyzed in
    ``language`` (the knowledge base's ``index.language``)."""

    def __init__(self, db: Database, at: str, language: str = "english") -> None:
        self.at = at
        self._db = db
        self._dir = Path(tempfile.mkdtemp(prefix="kbdb-asof-"))
        self._vectors: VectorStore | None = None
        self._mutex = threading.Lock()
        with db.read() as conn:
            self.head = q.max_seq(conn)
            self.kbids = history.live_at(conn, at)
            rows = q.index_rows(conn, self.kbids, place=True)
            # Today's anchor text: the links' past is not kept.
            anchors = q.anchor_texts(conn, self.kbids)
        docs = [index_doc(r, anchors) for r in rows]
        self.index = _core.Index.open(str(self._dir), create=True, language=language)
        self.index.rebuild(docs, watermark=0)

    def vectors(self, store: VectorStore) -> VectorStore:
        """A vector store over the snapshot's sections (their cached embeddings; any
        missing are embedded, not stored)."""
        if self._vectors is None:
            with self._mutex:
                if self._vectors is None:
                    with self._db.read() as conn:
                        rows = q.index_rows(conn, self.kbids)
                    self._vectors = store.snapshot(rows, self._dir)
        return self._vectors

    def close(self) -> None:
        self._vectors = None
        shutil.rmtree(self._dir, ignore_errors=True)


class Snapshots:
    """The snapshots of one open knowledge base, the last ``KEEP`` used."""

    def __init__(self, db: Database, language: str = "english") -> None:
        self._db = db
        self._language = language
        self._kept: OrderedDict[tuple[str, int], Snapshot] = OrderedDict()
        self._mutex = threading.Lock()

    def get(self, at: str) -> Snapshot:
        with self._db.read() as conn:
            head = q.max_seq(conn)
        with self._mutex:
            snap = self._kept.get((at, head))
            if snap is not None:
                self._kept.move_to_end((at, head))
                return snap
            snap = Snapshot(self._db, at, self._language)
            self._kept[(at, snap.head)] = snap
            while len(self._kept) > KEEP:
                _, old = self._kept.popitem(last=False)
                old.close()
            return snap

    def close(self) -> None:
        with self._mutex:
            for snap in self._kept.values():
                snap.close()
            self._kept.clear()
