"""The coordinator's side of a sharded search: what stands in for one knowledge base's
engine, vector index and database while ``search.lexical`` and ``search.hybrid`` rank.

- ``ShardedEngine``: ``Index.search`` / ``search_tiers`` over every shard, like
  Elasticsearch's ``dfs_query_then_fetch``: first the collection's statistics (each
  shard's document count, field lengths and the query terms' document frequencies,
  summed), then every shard's top hits scored with them, merged by score, then kbid:
  exactly the order and the scores one index of the whole collection gives.
- ``ShardedVectors``: the query embedded once, every shard's nearest vectors, merged by
  cosine, then kbid.
- ``ShardedSource``: the document links and rows of merged hits, each asked of the shards
  that hold it.

``Owners`` remembers, for one search, which shards returned each kbid.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from kbdb.search.fields import FIELD_NAMES
from kbdb.search.lexical import DocLinks, Filters, Links, Row
from kbdb.shard.fanout import Fanout
from kbdb.shard.server import HitList


class Owners:
    """kbid → the shards that hold it, filled as hits are merged; and the document links
    the shards sent along with their hits (``ShardedEngine(prefetch=True)``)."""

    def __init__(self) -> None:
        self.of: dict[str, list[int]] = {}
        self.links: dict[int, dict[str, DocLinks]] = {}

    def add(self, shard: int, kbids: Sequence[str]) -> None:
        for k in kbids:
            got = self.of.get(k)
            if got is None:
                self.of[k] = [shard]
            elif shard not in got:
                got.append(shard)

    def group(self, kbids: Sequence[str]) -> dict[int, list[str]]:
        """``kbids`` by the first shard that holds each (unknown ones are left out)."""
        out: dict[int, list[str]] = {}
        for k in kbids:
            shards = self.of.get(k)
            if shards:
                out.setdefault(shards[0], []).append(k)
        return out


def _terms(clauses: Sequence[Any], phrases: Sequence[Any]) -> list[str]:
    terms = {t for alts, _ in clauses for t, _ in alts}
    terms.update(t for ph in phrases for t, _ in ph)
    return sorted(terms)


def merge_hits(parts: Sequence[HitList], limit: int, owners: Owners) -> HitList:
    """One top-``limit`` of the shards' lists, as one index would rank it: score, then
    kbid. A kbid from two shards (a section shared by their documents) counts once."""
    rows: list[tuple[float, str, int, int]] = []
    for shard, h in enumerate(parts):
        owners.add(shard, h.kbids)
        rows.extend(
            (-s, k, shard, j) for j, (k, s) in enumerate(zip(h.kbids, h.scores, strict=True))
        )
    rows.sort()
    seen: set[str] = set()
    kbids: list[str] = []
    scores: list[float] = []
    matched: list[bytes] = []
    explain: list[Any] | None = [] if any(h.explain is not None for h in parts) else None
    in_path: list[int] = []
    bodiless: list[int] = []
    flags = [(set(h.in_path), set(h.bodiless)) for h in parts]
    for neg, k, shard, j in rows:
        if len(kbids) >= limit:
            break
        if k in seen:
            continue
        seen.add(k)
        h = parts[shard]
        pos = len(kbids)
        kbids.append(k)
        scores.append(-neg)
        matched.append(h.matched[j])
        if explain is not None:
            explain.append(h.explain[j] if h.explain is not None else [])
        if j in flags[shard][0]:
            in_path.append(pos)
        if j in flags[shard][1]:
            bodiless.append(pos)
    first = parts[0] if parts else None
    return HitList(
        kbids,
        scores,
        matched,
        sum(h.total for h in parts),
        in_path,
        bodiless,
        list(first.clause_bounds) if first else [],
        list(first.common) if first else [],
        explain,
    )


class ShardedEngine:
    """``_core.Index``'s search calls over a collection's shards."""

    def __init__(self, fanout: Fanout, owners: Owners, *, prefetch: bool = False) -> None:
        self._fanout = fanout
        self._owners = owners
        self._stats: tuple[tuple[str, ...], Any] | None = None
        # Shards behind a network send their hits' links with them: one round trip less.
        self._prefetch = prefetch

    def _search_all(self, clauses: Any, kwargs: dict[str, Any]) -> list[HitList]:
        if not self._prefetch:
            return cast("list[HitList]", self._fanout.all("search", clauses, kwargs))
        parts = []
        for shard, (hits, links) in enumerate(self._fanout.all("search_linked", clauses, kwargs)):
            self._owners.links.setdefault(shard, {}).update(links)
            parts.append(hits)
        return parts

    def corpus(self, clauses: Sequence[Any], phrases: Sequence[Any]) -> Any:
        """The collection's statistics for these terms (gathered once per search: a
        relaxed search after a strict one reuses them)."""
        terms = tuple(_terms(clauses, phrases))
        if self._stats is not None and self._stats[0] == terms:
            return self._stats[1]
        docs = 0
        totals = [0] * len(FIELD_NAMES)
        df = dict.fromkeys(terms, 0)
        for n, t, dfs in self._fanout.all("term_stats", list(terms)):
            docs += n
            for f, total in enumerate(t):
                totals[f] += total
            for term, d in zip(terms, dfs, strict=True):
                df[term] += d
        corpus = (docs, tuple(totals), df)
        self._stats = (terms, corpus)
        return corpus

    def search(self, clauses: Any, **kwargs: Any) -> HitList:
        kwargs["corpus"] = self.corpus(clauses, kwargs.get("phrases", ()))
        limit = kwargs.get("limit", 10)
        return merge_hits(self._search_all(clauses, kwargs), limit, self._owners)

    def search_tiers(
        self, clauses: Any, *, relaxed_below: int, **kwargs: Any
    ) -> tuple[HitList, HitList | None]:
        """The strict ranking, and the relaxed one when the merged strict hits are fewer
        than ``relaxed_below`` (a shard's own answer cannot tell: it holds a part)."""
        kwargs["corpus"] = self.corpus(clauses, kwargs.get("phrases", ()))
        limit = kwargs.get("limit", 10)
        if self._prefetch:
            return self._tiers_at_once(clauses, relaxed_below, kwargs)
        parts = self._search_all(clauses, {**kwargs, "require_all": True})
        strict = merge_hits(parts, limit, self._owners)
        if len(strict.kbids) >= relaxed_below:
            return strict, None
        loose_kwargs = {**kwargs, "require_all": False, "phrases": []}
        loose = merge_hits(self._search_all(clauses, loose_kwargs), limit, self._owners)
        return strict, loose

    def _tiers_at_once(
        self, clauses: Any, relaxed_below: int, kwargs: dict[str, Any]
    ) -> tuple[HitList, HitList | None]:
        """``search_tiers`` in one round trip: each shard sends its relaxed hits too when
        it alone cannot fill ``relaxed_below``; a shard that could did not, so when the
        merged strict hits still fall short (it then had fewer than the rest lacked),
        its relaxed hits are asked for in a second round."""
        limit = kwargs.get("limit", 10)
        got = self._fanout.all("search_tiers_linked", clauses, relaxed_below, kwargs)
        for shard, (_, _, links) in enumerate(got):
            self._owners.links.setdefault(shard, {}).update(links)
        strict = merge_hits([g[0] for g in got], limit, self._owners)
        if len(strict.kbids) >= relaxed_below:
            return strict, None
        loose_kwargs = {**kwargs, "require_all": False, "phrases": []}
        missing = {i: (clauses, loose_kwargs) for i, g in enumerate(got) if g[1] is None}
        extra = self._fanout.some("search_linked", missing) if missing else {}
        parts = []
        for i, g in enumerate(got):
            if g[1] is not None:
                parts.append(g[1])
            else:
                hits, links = extra[i]
                self._owners.links.setdefault(i, {}).update(links)
                parts.append(hits)
        return strict, merge_hits(parts, limit, self._owners)


class ShardedVectors:
    """``VectorStore.search`` over a collection's shards."""

    def __init__(self, fanout: Fanout, owners: Owners) -> None:
        self._fanout = fanout
        self._owners = owners

    def search(
        self, query: str, *, limit: int, allow: Sequence[str] | None
    ) -> list[tuple[str, float]]:
        if allow is not None and not allow:
            return []
        vector = self._fanout.some("embed_query", {0: (query,)})[0]
        parts = self._fanout.all("vector_search", vector, limit, allow)
        rows: list[tuple[float, str, int]] = []
        for shard, hits in enumerate(parts):
            self._owners.add(shard, [k for k, _ in hits])
            rows.extend((-s, k, shard) for k, s in hits)
        rows.sort()
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for neg, k, _ in rows:
            if k not in seen:
                seen.add(k)
                out.append((k, -neg))
            if len(out) >= limit:
                break
        return out

    def stale(self) -> bool:
        return any(self._fanout.all("vectors_stale"))


class ShardedSource:
    """The document links, rows and filters of a sharded search."""

    def __init__(self, fanout: Fanout, owners: Owners) -> None:
        self._fanout = fanout
        self._owners = owners

    @contextmanager
    def read(self) -> Iterator[None]:
        # Each shard reads its own snapshot per call.
        yield None

    def links(self, conn: Any, kbids: Sequence[str]) -> Links:
        # A section shared by documents of two shards has links in both.
        calls: dict[int, tuple[list[str]]] = {}
        got: dict[int, dict[str, DocLinks]] = {}
        for k in kbids:
            for shard in self._owners.of.get(k, ()):
                sent = self._owners.links.get(shard, {}).get(k)
                if sent is not None:
                    got.setdefault(shard, {})[k] = sent
                else:
                    calls.setdefault(shard, ([],))[0].append(k)
        for shard, links in self._fanout.some("links", calls).items():
            got.setdefault(shard, {}).update(links)
        out: Links = {}
        for shard in sorted(got):
            for k, dl in got[shard].items():
                if not dl.docids:
                    continue  # no links (as the database source leaves it out)
                prev = out.get(k)
                if prev is None:
                    out[k] = dl
                else:
                    live = tuple(sorted(set(prev.live) | set(dl.live)))
                    docids = live or tuple(sorted(set(prev.docids) | set(dl.docids)))
                    out[k] = DocLinks(live, docids)
        return out

    def rows(self, conn: Any, kbids: Sequence[str]) -> dict[str, Row]:
        calls = {shard: (ks,) for shard, ks in self._owners.group(kbids).items()}
        out: dict[str, Row] = {}
        for got in self._fanout.some("rows", calls).values():
            out.update(got)
        return out

    def starts(self, conn: Any, kbids: Sequence[str], at: str | None) -> dict[str, str]:
        calls = {shard: (ks, at) for shard, ks in self._owners.group(kbids).items()}
        out: dict[str, str] = {}
        for got in self._fanout.some("starts", calls).values():
            out.update(got)
        return out

    def allowed(self, conn: Any, filters: Filters) -> list[str] | None:
        parts = self._fanout.all("allowed", filters)
        if parts[0] is None:
            return None
        out: list[str] = []
        for shard, p in enumerate(parts):
            self._owners.add(shard, p)
            out.extend(p)
        return out
