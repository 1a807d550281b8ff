"""The vector path: embedding sections, keeping ``vectors.idx`` in step with the store,
and scanning it (SPEC §4.2, §6; the seed's "Embedding Lifecycle").

- **Embedding text**: ``"{title}\\n{content}"``; a section without a title uses its
  heading; an image embeds its title and description. A section with none of these is not
  embedded.
- **Learn time**: after the lexical commit, the sections changed since the vector index's
  watermark are embedded (through the SQLite embedding cache) and appended; retired ones
  are deleted. When the provider fails, those sections stay lexical-only until a rebuild,
  and the learn report says ``vector_embedding_failed``.
- **Stale**: the index was built by another model (or not built although sections exist):
  vector and hybrid searches fall back to lexical and say ``vector_index_stale``.
- **Quantized scan** (``[embedding] quantized_scan = true``): searches scan the int8 copy
  ``vectors.q8`` and rescore its best candidates exactly. The copy is written with every
  new ``vectors.idx`` (rebuild, compaction); turned on for an existing index, it is built
  by the next catch-up (learn, forget, revise, or a search after another process's learn)
  or rebuild. Until then, and whenever it is stale, searches scan f32 exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb import _core
from kbdb._log import log
from kbdb.config import EmbeddingConfig
from kbdb.errors import EmbeddingFailedError, IndexCorruptError, KbdbError
from kbdb.store import Database
from kbdb.store import queries as q

if TYPE_CHECKING:
    from kbdb.embedding import EmbeddingProvider
    from kbdb.embedding.provider import ProgressCallback

REBUILD_BATCH = 64
"""Sections per provider call during a rebuild (the seed's batches of up to 64)."""

AUTO_BUILD_LIMIT = 2_000
"""With a provider configured but no vector index yet, a learn builds it (embedding every
live section) when at most this many sections existed before that learn; above it the
index is stale until ``kbdb rebuild``, so a learn never turns into an unannounced hour of
embedding the old sections."""

ProgressFn = Callable[[int, int], None]
"""(sections embedded so far, total)"""


def embedding_text(
    heading: str, content: str, type: str, title: str | None, description: str | None
) -> str | None:
    """The text a section is embedded as, or None when it has nothing to embed."""
    if type.startswith("image/"):
        text = "\n".join(p for p in (title, description) if p)
        return text or None
    head = title or heading
    if not head.strip() and not content.strip():
        return None
    return f"{head}\n{content}"


def text_sha(text: str) -> str:
    import hashlib  # here: loading OpenSSL costs a lexical search ~3 ms at start-up

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class VectorStore:
    """``vectors.idx`` under ``.kbdb/indexes/`` plus the provider that fills it."""

    def __init__(self, directory: Path, db: Database, cfg: EmbeddingConfig, kbdir: Path) -> None:
        self.directory = directory
        self._db = db
        self._cfg = cfg
        self._kbdir = kbdir
        self._provider: EmbeddingProvider | None = None
        self._index: _core.VectorIndex | None = None
        self._mutex = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._cfg.provider != "none"

    @property
    def provider(self) -> EmbeddingProvider:
        if self._provider is None:
            from kbdb.embedding import make_provider

            self._provider = make_provider(self._cfg, kbdir=self._kbdir)
        return self._provider

    def load_model(self, progress: ProgressCallback | None) -> None:
        """Resolve the model now (downloading it on first use, reporting bytes to
        ``progress``) and load it, instead of on the first embedding."""
        if self._cfg.provider != "onnx":
            return
        from kbdb.embedding import make_provider
        from kbdb.embedding.local import OnnxEmbeddingProvider

        if self._provider is None:
            self._provider = make_provider(self._cfg, kbdir=self._kbdir, progress=progress)
        if isinstance(self._provider, OnnxEmbeddingProvider):
            self._provider.load()

    @property
    def model_name(self) -> str:
        return self.provider.model_name()

    def index(self) -> _core.VectorIndex | None:
        """The vector index, or None when it has never been built."""
        if self._index is None:
            with self._mutex:
                if self._index is None:
                    try:
                        self._index = _core.VectorIndex.open(
                            str(self.directory), quantized_scan=self._cfg.quantized_scan
                        )
                    except FileNotFoundError:
                        return None
        else:
            self._index.reload()
        return self._index

    def stale(self) -> bool:
        """True when vector search cannot be trusted: built by another model, or missing
        although the knowledge base has sections."""
        if not self.enabled:
            return False
        index = self.index()
        if index is None:
            with self._db.read() as conn:
                return q.live_count(conn) > 0
        return index.model_name != self.model_name

    def quantized_pending(self) -> bool:
        """True when ``quantized_scan`` is on but ``vectors.q8`` is missing or stale (the
        next catch-up builds it)."""
        if not self._cfg.quantized_scan or not self.enabled:
            return False
        index = self.index()
        return (
            index is not None
            and not index.quantized_ready
            and index.model_name == self.model_name  # a stale index is not built upon
        )

    def search(
        self, query: str, *, limit: int, allow: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        """The top ``limit`` (kbid, cosine) for ``query``."""
        if self.index() is None or (allow is not None and not allow):
            return []
        return self.search_vector(self.embed_query(query), limit=limit, allow=allow)

    def embed_query(self, query: str) -> Any:
        """The query's vector (float32), as the scan takes it."""
        from kbdb.embedding.base import embed_query

        return embed_query(self.provider, query)

    def search_vector(
        self, vector: Any, *, limit: int, allow: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        """The top ``limit`` (kbid, cosine) for an embedded query."""
        index = self.index()
        if index is None or (allow is not None and not allow):
            return []
        kbids, scores = index.search(vector, limit=limit, allow=allow)
        return list(zip(kbids, scores, strict=True))

    def snapshot(self, rows: Sequence[q.IndexRow], directory: Path) -> VectorStore:
        """A store over the vectors of ``rows`` only, in a new ``vectors.idx`` under
        ``directory`` (time travel, ``index/snapshot.py``): their cached embeddings, and
        any missing computed now without being cached (a search writes nothing)."""
        kbids, vectors, _failed = self._embed_rows(rows, reuse_cache=True, keep=False)
        provider = self.provider
        index = _core.VectorIndex.open(
            str(directory),
            create=True,
            dimensions=provider.dimensions(),
            model_name=provider.model_name(),
        )
        index.write(kbids, vectors, model_name=provider.model_name(), watermark=0)
        snap = VectorStore(directory, self._db, self._cfg, self._kbdir)
        snap._provider = provider
        snap._index = index
        return snap

    # -- writing (callers hold the writer lock) ------------------------------------------

    def catch_up(self, *, live_before: int | None = None) -> set[str]:
        """Embed and append sections changed since the watermark; delete retired ones.
        ``live_before``: live sections before the learn that calls this (they decide
        whether a missing index is built now). Returns the kbids whose embedding failed."""
        if not self.enabled:
            return set()
        index = self.index()
        with self._db.read() as conn:
            head = q.max_seq(conn)
            if index is None:
                before = q.live_count(conn) if live_before is None else live_before
                if before > AUTO_BUILD_LIMIT:
                    return set()  # many sections predate the vectors: stale until a rebuild
                index = self._create()
            if index.model_name != self.model_name:
                return set()
            if index.watermark >= head:
                if self._cfg.quantized_scan:
                    index.ensure_quantized()
                return set()
            changed = q.changed_kbids(conn, index.watermark)
            rows = q.index_rows(conn, changed)
        live = [r for r in rows if r[6]]
        dead = [r[0] for r in rows if not r[6]]
        kbids, vectors, failed = self._embed_rows(live, reuse_cache=True)
        # Appends first, keeping the old watermark: a crash before the delete publishes
        # makes the next catch-up redo both, and an append replaces an older vector.
        if kbids:
            index.append(kbids, vectors, watermark=index.watermark)
        embedded = set(kbids)
        # With quantized_scan on, the delete's publish also builds a missing vectors.q8.
        index.delete(dead + [r[0] for r in live if r[0] not in embedded], watermark=head)
        return failed

    def _create(self) -> _core.VectorIndex:
        provider = self.provider
        index = _core.VectorIndex.open(
            str(self.directory),
            create=True,
            dimensions=provider.dimensions(),
            model_name=provider.model_name(),
            quantized_scan=self._cfg.quantized_scan,
        )
        self._index = index
        return index

    def rebuild(self, *, reembed: bool = False, progress: ProgressFn | None = None) -> int:
        """Re-embed every live section (reusing the cache unless ``reembed``) and write
        ``vectors.idx`` and its meta file atomically. Returns the number of vectors."""
        if not self.enabled:
            return 0
        with self._db.read() as conn:
            head = q.max_seq(conn)
            rows = [r for batch in q.iter_live_index_rows(conn) for r in batch]
        kbids, vectors, failed = self._embed_rows(rows, reuse_cache=not reembed, progress=progress)
        if failed:
            raise EmbeddingFailedError(
                f"{len(failed)} of {len(rows)} sections could not be embedded; "
                "the previous vector index stays in use",
                hint="check the embedding provider, then run 'kbdb rebuild' again",
            )
        provider = self.provider
        try:
            index = self.index()
        except IndexCorruptError:
            index = None
        if index is None:
            # A reset also removes any vectors.q8 (possibly the damaged file), so turning
            # the quantized scan on afterwards cannot fail on it.
            index = _core.VectorIndex.open(
                str(self.directory),
                reset=True,
                dimensions=provider.dimensions(),
                model_name=provider.model_name(),
                quantized_scan=self._cfg.quantized_scan,
            )
        # write() replaces vectors.q8 too when quantized_scan is on (and removes it when off).
        index.write(
            kbids,
            vectors,
            model_name=provider.model_name(),
            watermark=head,
            dimensions=provider.dimensions(),
        )
        self._index = index
        return len(kbids)

    # -- embedding elsewhere (a Ray cluster) through the cache ---------------------------

    def cached_shas(self) -> list[str]:
        """The text SHA-256s the embedding cache holds for this provider's model."""
        with self._db.read() as conn:
            return q.embedding_shas(conn, self.model_name)

    def texts_to_embed(self, *, reembed: bool) -> list[tuple[str, str]]:
        """``(text SHA-256, text)`` of the live sections' embedding texts, one per distinct
        text, leaving out those the cache holds for this model unless ``reembed``: what
        a rebuild would send to the provider."""
        texts: dict[str, str] = {}
        with self._db.read() as conn:
            for batch in q.iter_live_index_rows(conn):
                for _, heading, content, type_, title, description, *_ in batch:
                    text = embedding_text(heading, content, type_, title, description)
                    if text is not None:
                        texts.setdefault(text_sha(text), text)
            if not reembed and texts:
                cached = set(q.embedding_shas(conn, self.model_name))
                texts = {sha: t for sha, t in texts.items() if sha not in cached}
        return list(texts.items())

    def store_embeddings(self, rows: Sequence[tuple[str, bytes]]) -> None:
        """Cache ``(text SHA-256, float32 bytes)`` made elsewhere for this model (the
        caller holds the writer lock)."""
        if rows:
            with self._db.write() as conn:
                q.store_embeddings(conn, self.model_name, rows)

    def _embed_rows(
        self,
        rows: Sequence[q.IndexRow],
        *,
        reuse_cache: bool,
        progress: ProgressFn | None = None,
        keep: bool = True,
    ) -> tuple[list[str], bytes, set[str]]:
        """Embed rows: ``(kbids, float32 bytes row by row, failed kbids)``. ``keep``: store
        the new embeddings in the cache."""
        import numpy as np

        model = self.model_name
        texts: list[tuple[str, str, str]] = []  # (kbid, text, sha)
        for kbid, heading, content, type_, title, description, *_ in rows:
            text = embedding_text(heading, content, type_, title, description)
            if text is not None:
                texts.append((kbid, text, text_sha(text)))
        cached: dict[str, bytes] = {}
        if reuse_cache and texts:
            with self._db.read() as conn:
                cached = q.cached_embeddings(conn, model, [t[2] for t in texts])
        todo = [t for t in texts if t[2] not in cached]
        failed: set[str] = set()
        fresh: list[tuple[str, bytes]] = []
        done = len(texts) - len(todo)
        if progress:
            progress(done, len(texts))
        for start in range(0, len(todo), REBUILD_BATCH):
            batch = todo[start : start + REBUILD_BATCH]
            try:
                vecs = self.provider.embed([t[1] for t in batch])
            except KbdbError as e:
                log.warning("embedding failed for %d sections: %s", len(batch), e)
                failed.update(t[0] for t in batch)
                continue
            for (_, _, sha), vec in zip(batch, vecs, strict=True):
                raw = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
                cached[sha] = raw
                fresh.append((sha, raw))
            done += len(batch)
            if progress:
                progress(done, len(texts))
        if fresh and keep:
            with self._db.write() as conn:
                q.store_embeddings(conn, model, fresh)
        kbids = [t[0] for t in texts if t[0] not in failed]
        blob = b"".join(cached[t[2]] for t in texts if t[0] not in failed)
        return kbids, blob, failed

    def close(self) -> None:
        self._index = None
