"""``contradictions`` (SPEC §8.5): groups of live sections from different documents that
cover the same ground, below the near-duplicate threshold, for a person to read together.

Neither method compares every pair of sections:

- **vector** (an embedding provider is configured and the vector index is current): the
  cached embeddings of the live sections are clustered by a few rounds of spherical
  k-means on a sample (``sqrt(n)`` centroids); each section joins its ``PROBES`` nearest
  clusters, and cosines are computed inside each cluster only. The cost grows as
  ``n**1.5``, not ``n**2``; a pair split across clusters can be missed.
- **lexical**: pairs that share a MinHash band in the near-duplicate table
  (``kbdb.knowledge.neardup``), verified by exact shingle Jaccard. The band table is tuned for
  J >= 0.85, so a pair at J = 0.5 is found with probability 0.47, at 0.6 with 0.87 and at
  0.7 with 0.98 (docs/knowledge.md).

Accepted pairs are joined into groups (connected components); a group's similarity is its
best pair's, and groups come most similar first.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from kbdb.args import check_tags
from kbdb.errors import InvalidArgumentError
from kbdb.knowledge import neardup
from kbdb.store import Database
from kbdb.store import queries as q
from kbdb.types import ContradictionGroup, ContradictionMember, ContradictionsResult

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.index.vectors import VectorStore

Method = Literal["vector", "lexical"]
DEFAULT_VECTOR_THRESHOLD = 0.75
DEFAULT_LEXICAL_THRESHOLD = 0.5
PROBES = 2
KMEANS_ROUNDS = 6
KMEANS_SAMPLE = 20_000
BLOCK = 512
SNIPPET_CHARS = 200
SEED = 0x6B626462


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    similarity: float


def default_threshold(method: Method) -> float:
    return DEFAULT_VECTOR_THRESHOLD if method == "vector" else DEFAULT_LEXICAL_THRESHOLD


def lexical_pairs(conn: sqlite3.Connection, low: float, high: float) -> list[Pair]:
    """Band-sharing pairs with ``low <= Jaccard < high``."""
    cache = neardup.ShingleCache(conn)
    out = []
    for a, b in neardup.candidate_pairs(conn):
        sets = cache.get([a, b])
        if a in sets and b in sets:
            j = neardup.jaccard(sets[a], sets[b])
            if low <= j < high:
                out.append(Pair(a, b, round(j, 4)))
    return out


def vector_pairs(db: Database, vectors: VectorStore, low: float, high: float) -> list[Pair]:
    """Pairs with ``low <= cosine < high``, by clustered blocking (module docstring)."""
    import numpy as np

    with db.read() as conn:
        rows = [r for batch in q.iter_live_index_rows(conn) for r in batch]
        cached = neardup.cached_vectors(conn, vectors, rows)
    kbids = sorted(cached)
    n = len(kbids)
    if n < 2:
        return []
    mat = np.frombuffer(b"".join(cached[k] for k in kbids), dtype=np.float32).reshape(n, -1)
    mat = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    groups = _clusters(mat)
    best: dict[tuple[int, int], float] = {}
    for members in groups:
        idx = np.asarray(members, dtype=np.int64)
        for start in range(0, len(idx), BLOCK):
            rows_i = idx[start : start + BLOCK]
            sims = mat[rows_i] @ mat[idx].T
            ii, jj = np.nonzero((sims >= low) & (sims < high))
            for i, j in zip(ii.tolist(), jj.tolist(), strict=True):
                a, b = int(rows_i[i]), int(idx[j])
                if a < b:
                    best[(a, b)] = float(sims[i, j])
    return [Pair(kbids[a], kbids[b], round(s, 4)) for (a, b), s in best.items()]


def _clusters(mat: object) -> list[list[int]]:
    """Spherical k-means on a sample; every row joins its ``PROBES`` nearest centroids."""
    import numpy as np

    x = np.asarray(mat, dtype=np.float32)
    n = len(x)
    k = max(1, int(math.sqrt(n)))
    if k <= PROBES:
        return [list(range(n))]
    rng = np.random.default_rng(SEED)
    sample = x[rng.choice(n, size=min(n, KMEANS_SAMPLE), replace=False)]
    cent = sample[rng.choice(len(sample), size=k, replace=False)].copy()
    for _ in range(KMEANS_ROUNDS):
        assign = np.argmax(sample @ cent.T, axis=1)
        for c in range(k):
            members = sample[assign == c]
            if len(members):
                v = members.sum(axis=0)
                cent[c] = v / max(float(np.linalg.norm(v)), 1e-12)
    out: list[list[int]] = [[] for _ in range(k)]
    for start in range(0, n, BLOCK):
        sims = x[start : start + BLOCK] @ cent.T
        near = np.argpartition(-sims, PROBES - 1, axis=1)[:, :PROBES]
        for i, cs in enumerate(near.tolist()):
            for c in cs:
                out[c].append(start + i)
    return [m for m in out if len(m) > 1]


def group(
    conn: sqlite3.Connection,
    pairs: Sequence[Pair],
    *,
    method: Method,
    threshold: float,
    tags: Sequence[str] | None,
    limit: int,
) -> ContradictionsResult:
    """Filter pairs (different documents, tags), join them into groups, rank, hydrate."""
    kbids = sorted({k for p in pairs for k in (p.a, p.b)})
    docs = {k: set(v) for k, v in q.live_docids_of(conn, kbids).items()}
    if tags:
        tag_map = q.tags_of(conn, kbids)
        wanted = set(tags)
        allowed = {k for k in kbids if wanted <= set(tag_map.get(k, ()))}
    else:
        allowed = set(kbids)
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    kept = [
        p
        for p in pairs
        if p.a in allowed
        and p.b in allowed
        and docs.get(p.a)
        and docs.get(p.b)
        and not (docs[p.a] & docs[p.b])
    ]
    for p in kept:
        parent[find(p.a)] = find(p.b)
    best: dict[str, float] = {}
    members: dict[str, set[str]] = {}
    for p in kept:
        root = find(p.a)
        best[root] = max(best.get(root, 0.0), p.similarity)
        members.setdefault(root, set()).update((p.a, p.b))
    order = sorted(best, key=lambda r: (-best[r], min(members[r])))[:limit]
    shown = sorted({k for r in order for k in members[r]})
    rows = q.sections(conn, shown)
    groups = []
    for r in order:
        items = []
        for k in sorted(members[r]):
            row = rows[k]
            items.append(
                ContradictionMember(
                    kbid=k,
                    heading=row["heading"],
                    docids=tuple(sorted(docs.get(k, ()))),
                    snippet=_snippet(row["content"]),
                )
            )
        groups.append(ContradictionGroup(similarity=best[r], sections=tuple(items)))
    return ContradictionsResult(method=method, threshold=threshold, groups=tuple(groups))


def _snippet(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


class Contradictions:
    """``KnowledgeBase.contradictions`` over one knowledge base."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def find(
        self, threshold: float | None, limit: int, tags: Sequence[str] | None
    ) -> ContradictionsResult:
        """Pairs by cosine when the vector index is current, else by Jaccard over the
        near-duplicate bands, grouped; ``threshold`` must stay below the near-duplicate
        one."""
        ctx = self._ctx
        vector = ctx.vectors.enabled and not ctx.vectors.stale()
        method: Method = "vector" if vector else "lexical"
        learn = ctx.config.learn
        high = learn.near_duplicate_cosine if vector else learn.near_duplicate_jaccard
        low = default_threshold(method) if threshold is None else threshold
        if not isinstance(low, (int, float)) or isinstance(low, bool) or not 0 < low < high:
            raise InvalidArgumentError(
                f"threshold must be a number above 0 and below the near-duplicate threshold"
                f" {high} ({method} similarity; got {threshold!r})",
                hint="near-duplicates are reported by learn; lower the threshold",
            )
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidArgumentError(f"limit must be an integer in 1..1000 (got {limit!r})")
        wanted = check_tags(tags) if tags else None
        if vector:
            ctx.refresh_vectors()
            pairs = vector_pairs(ctx.db, ctx.vectors, float(low), high)
        else:
            self.catch_up_signatures()
            with ctx.db.read() as conn:
                pairs = lexical_pairs(conn, float(low), high)
        with ctx.db.read() as conn:
            return group(conn, pairs, method=method, threshold=float(low), tags=wanted, limit=limit)

    def catch_up_signatures(self) -> None:
        """Bring the near-duplicate band table up to the change log (forget, revise and
        import write only the log); readers never wait for it."""
        ctx = self._ctx
        with ctx.db.read() as conn:
            behind = neardup.is_behind(conn)
        if behind:
            with ctx.lock.hold(), ctx.db.write() as conn:
                neardup.catch_up(conn)
