"""``ShardServer``: one shard of a collection, answering the coordinator's phases with
plain, picklable values, so the same object serves in process or as a Ray actor.

The phases of a search (``coordinator``):
1. ``term_stats``: this shard's part of the collection's statistics;
2. ``search`` / ``search_tiers``: the engine's top hits scored with the collection's
   statistics;
3. ``links``, ``rows``: what the sibling boost and hydration read for the merged hits
   this shard owns. ``vector_search`` is the vector path's one phase.

Phase 1 brings the shard's index up to its database (as a search on one knowledge base
does); the later phases of the same search read that snapshot.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

from kbdb.search.lexical import DocLinks, Filters, Row


class HitList(NamedTuple):
    """``_core.Hits`` as plain values: what the lexical ranking reads of an engine call."""

    kbids: list[str]
    scores: list[float]
    matched: list[bytes]
    total: int
    in_path: list[int]
    bodiless: list[int]
    clause_bounds: list[float]
    common: list[bool]
    explain: list[list[tuple[int, str, str, float]]] | None


def hit_list(h: Any) -> HitList:
    return HitList(
        list(h.kbids),
        list(h.scores),
        list(h.matched),
        int(h.total),
        list(h.in_path),
        list(h.bodiless),
        list(h.clause_bounds),
        list(h.common),
        h.explain,
    )


class ShardServer:
    """Opens the shard's knowledge base at ``path`` (its folder or ``.kbdb``)."""

    def __init__(self, path: str | os.PathLike[str], index: int) -> None:
        from kbdb.kb import KnowledgeBase

        self.index = index
        self.path = str(path)
        self._kb = KnowledgeBase.open(path)
        self._ctx = self._kb.context

    def describe(self) -> dict[str, Any]:
        """What the coordinator checks the shards agree on, and this shard's size."""
        from kbdb.search.synonyms import load_groups

        ctx = self._ctx
        ctx.index.refresh()
        return {
            "shard": self.index,
            "path": str(ctx.path),
            "analyzer": ctx.index.analyzer.id,
            "search": repr(ctx.config.search),
            "embedding": ctx.config.embedding.model if ctx.vectors.enabled else None,
            "config": ctx.config,
            "synonyms": load_groups(ctx.path) if ctx.config.search.synonyms else None,
            "sections": ctx.index.core.doc_count,
        }

    # -- search phases -------------------------------------------------------------------

    def term_stats(
        self, terms: Sequence[str]
    ) -> tuple[int, tuple[int, int, int, int, int], list[int]]:
        ctx = self._ctx
        ctx.index.refresh()
        return ctx.index.core.term_stats(list(terms))

    def search(self, clauses: Any, kwargs: dict[str, Any]) -> HitList:
        return hit_list(self._ctx.index.core.search(clauses, **kwargs))

    def search_linked(
        self, clauses: Any, kwargs: dict[str, Any]
    ) -> tuple[HitList, dict[str, DocLinks]]:
        """``search``, with the document links of its hits: what the boosts will read of
        them, sent in the same round trip (for shards behind a network)."""
        hits = self.search(clauses, kwargs)
        links = self.links(hits.kbids)
        # A hit without links is sent as empty links: known, not missing.
        return hits, {k: links.get(k, DocLinks((), ())) for k in hits.kbids}

    def search_tiers_linked(
        self, clauses: Any, relaxed_below: int, kwargs: dict[str, Any]
    ) -> tuple[HitList, HitList | None, dict[str, DocLinks]]:
        """The strict hits and, unless this shard alone has ``relaxed_below`` of them (then
        the collection has too), the relaxed ones, with the links of both: the two tiers
        of a collection's search in one round trip."""
        strict = self.search(clauses, {**kwargs, "require_all": True})
        loose = None
        if len(strict.kbids) < relaxed_below:
            loose = self.search(clauses, {**kwargs, "require_all": False, "phrases": []})
        kbids = list(dict.fromkeys([*strict.kbids, *(loose.kbids if loose else ())]))
        links = self.links(kbids)
        return strict, loose, {k: links.get(k, DocLinks((), ())) for k in kbids}

    def search_tiers(
        self, clauses: Any, relaxed_below: int, kwargs: dict[str, Any]
    ) -> tuple[HitList, HitList | None]:
        strict, loose = self._ctx.index.core.search_tiers(
            clauses, relaxed_below=relaxed_below, **kwargs
        )
        return hit_list(strict), None if loose is None else hit_list(loose)

    def links(self, kbids: Sequence[str]) -> dict[str, DocLinks]:
        source = self._ctx.searcher().source
        with source.read() as conn:
            return source.links(conn, kbids)

    def rows(self, kbids: Sequence[str]) -> dict[str, Row]:
        source = self._ctx.searcher().source
        with source.read() as conn:
            return source.rows(conn, kbids)

    def allowed(self, filters: Filters) -> list[str] | None:
        return self._ctx.searcher().allow(filters)

    def starts(self, kbids: Sequence[str], at: str | None) -> dict[str, str]:
        source = self._ctx.searcher().source
        with source.read() as conn:
            return source.starts(conn, kbids, at)

    def embed_query(self, query: str) -> bytes:
        """The query's vector as float32 bytes (picklable, as the scan takes them)."""
        return bytes(memoryview(self._ctx.vectors.embed_query(query)))

    def vector_search(
        self, vector: bytes, limit: int, allow: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        ctx = self._ctx
        ctx.refresh_vectors()
        return ctx.vectors.search_vector(vector, limit=limit, allow=allow)

    def vectors_stale(self) -> bool:
        return self._ctx.vectors.stale()

    # -- writes ------------------------------------------------------------------------

    def learn_many(self, items: Sequence[Any]) -> Any:
        return self._kb.learn_many(items)

    def store_files(self, parsed: Sequence[Any], notable_only: bool) -> Any:
        """Store files parsed by the coordinator (``learn.learner.ParsedFile``) through
        this shard's learn batches."""
        return self._kb.learn_parsed(parsed, notable_only=notable_only)

    def documents(self, tags: Sequence[str] | None, limit: int) -> Any:
        """The first ``limit`` documents (``limit`` may pass a single page's bound)."""
        items: list[Any] = []
        total = 0
        while True:
            want = max(1, min(1000, limit - len(items)))
            page = self._kb.documents(tags=tags, limit=want, offset=len(items))
            total = page.total
            items.extend(page.items)
            if len(items) >= min(limit, total) or not page.items:
                break
        return dataclasses.replace(
            page, items=tuple(items[:limit]), offset=0, limit=limit, has_more=total > limit
        )

    def forget(self, kbids: Sequence[str], docid: str | None) -> Any:
        return self._kb.forget(*kbids, docid=docid)

    def forget_held(self, kbids: Sequence[str]) -> Any:
        """``forget`` of those of ``kbids`` this shard holds (None when it holds none)."""
        held = self._held(kbids)
        return self._kb.forget(*held) if held else None

    def recall(self, kbids: Sequence[str], docid: str | None) -> Any:
        return self._kb.recall(*kbids, docid=docid)

    def recall_held(self, kbids: Sequence[str]) -> list[Any]:
        """The sections of ``kbids`` this shard holds."""
        held = self._held(kbids)
        return list(self._kb.recall(*held).sections) if held else []

    def _held(self, kbids: Sequence[str]) -> list[str]:
        from kbdb.store import shard as sql

        with self._ctx.db.read() as conn:
            have = sql.has_sections(conn, list(kbids))
        return [k for k in kbids if k in have]

    def stats(self) -> Any:
        return self._kb.stats()

    def close(self) -> None:
        self._kb.close()
