"""Vector and hybrid search (SPEC §4.2): the vector path alone, or both paths fused.

Each path contributes its top ``max(100, offset + limit)`` candidates, with the filters
applied inside both. ``fusion = "rrf"`` (default) or ``"linear"`` (``linear_weight`` on
the vector side). A stale vector index makes both modes run lexical only, with
``retrieval_method: "lexical"`` and ``vector_index_stale: true``.

Confidence: a vector hit's confidence is a logistic function of its cosine; a hybrid hit
takes the larger of its lexical and its vector confidence.
"""

from __future__ import annotations

import math
from typing import Literal

from kbdb.search.confidence import confidence as lexical_confidence
from kbdb.search.confidence import verdict
from kbdb.search.fusion import Fused, linear, rrf
from kbdb.search.lexical import Filters, Hit, LexicalSearcher
from kbdb.search.query import ParsedQuery
from kbdb.search.vectors import VectorStore
from kbdb.types import SearchResult, build

FUSION_CANDIDATES = 100

# Logistic fit of P(relevant | cosine) for all-MiniLM-L6-v2 on the top-10 vector hits of
# the SciFact test queries (benches/calibrate_confidence.py --model …).
COSINE_SLOPE = 12.13
COSINE_MIDPOINT = 0.740


def cosine_confidence(cos: float) -> float:
    return round(1.0 / (1.0 + math.exp(-COSINE_SLOPE * (cos - COSINE_MIDPOINT))), 4)


def search_fused(
    lexical: LexicalSearcher,
    vectors: VectorStore,
    query: str,
    *,
    mode: Literal["vector", "hybrid"],
    limit: int,
    offset: int,
    filters: Filters,
    content: bool,
    explain: bool,
    rrf_k: float,
    fusion: Literal["rrf", "linear"],
    linear_weight: float,
) -> SearchResult:
    want = max(FUSION_CANDIDATES, offset + limit)
    parsed = lexical.parse(query)
    allow = lexical.allow(filters)
    vec_hits = vectors.search(query, limit=want, allow=allow)
    lex_hits: list[Hit] = []
    relaxed = False
    if mode == "hybrid":
        ranking = lexical.rank(parsed, want=want, page_end=want, allow=allow, explain=explain)
        lex_hits, relaxed = ranking.hits[:want], ranking.relaxed
    by_kbid = {h.kbid: h for h in lex_hits}
    lex_ranked = [(h.kbid, h.score) for h in lex_hits]
    if mode == "vector":
        fused = rrf([], vec_hits, k=rrf_k)
    elif fusion == "linear":
        fused = linear(lex_ranked, vec_hits, weight=linear_weight)
    else:
        fused = rrf(lex_ranked, vec_hits, k=rrf_k)
    required = parsed_required(parsed)
    page = [
        _hit(f, by_kbid.get(f.kbid), required, mode, fusion) for f in fused[offset : offset + limit]
    ]
    items = lexical.hydrate(parsed, page, content=content, explain=explain)
    top = items[0] if items else None
    return build(
        SearchResult,
        items=tuple(items),
        total=len(fused),
        offset=offset,
        limit=limit,
        has_more=offset + limit < len(fused),
        relaxed=relaxed and mode == "hybrid" and not vec_hits,
        search_mode=mode,
        retrieval_method=mode,
        vector_index_stale=False,
        retrieval_verdict=verdict(top.confidence if top else None, False),
    )


def parsed_required(parsed: ParsedQuery) -> int:
    return sum(1 for _, req in parsed.clauses if req) or len(parsed.clauses)


def _hit(f: Fused, lex: Hit | None, required: int, mode: str, fusion: str) -> Hit:
    conf = cosine_confidence(f.vector_score) if f.vector_score is not None else 0.0
    if lex is not None:
        covered = sum(1 for mask in lex.matched if mask)
        coverage = min(covered / required, 1.0) if required else 1.0
        conf = max(
            conf,
            lexical_confidence(lex.score / lex.boost, lex.bound, coverage),
        )
    extra: dict[str, object] = {
        "vector_rank": f.vector_rank,
        "cosine": None if f.vector_score is None else round(f.vector_score, 6),
    }
    if mode == "hybrid":
        extra.update(
            lexical_rank=f.lexical_rank,
            fusion=fusion,
            lexical_part=round(f.lexical_part, 6),
            vector_part=round(f.vector_part, 6),
        )
    return Hit(
        kbid=f.kbid,
        score=f.score,
        matched=lex.matched if lex else b"",
        relaxed=bool(lex and lex.relaxed and f.vector_rank is None),
        explain=lex.explain if lex else None,
        boost=lex.boost if lex else 1.0,
        lexical_score=lex.score if lex else None,
        confidence=conf,
        extra=extra,
    )
