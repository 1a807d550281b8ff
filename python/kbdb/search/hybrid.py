"""Vector and hybrid search (SPEC §4.2): the vector path alone, or both paths fused.

Each path contributes its top ``max(100, offset + limit)`` candidates, with the filters
applied inside both. ``fusion``: ``"adaptive"`` (default: normalized scores and ranks
blended with per-query arm weights from the lexical coverage and the two lists' agreement;
``kbdb.search.fusion``),
``"rrf"`` (``rrf_k``) or ``"linear"`` (``linear_weight`` on the vector side). A stale
vector index makes both modes run lexical only, with ``retrieval_method: "lexical"`` and
``vector_index_stale: true``.

Confidence (``kbdb.search.confidence``): a vector hit's from its cosine, the list's best
cosine and gap; a hybrid hit's from its confidence in each list, the lists' agreement and
whether it is the first fused hit.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from kbdb.config import SearchConfig
from kbdb.index.vectors import VectorStore
from kbdb.search.confidence import confidence as lexical_confidence
from kbdb.search.confidence import cosine_gap, hybrid_confidence, vector_confidence, verdict
from kbdb.search.fusion import (
    AdaptiveParams,
    Fused,
    Signals,
    adaptive,
    agreement,
    linear,
    rrf,
)
from kbdb.search.lexical import Filters, Hit, LexicalSearcher
from kbdb.search.query import ParsedQuery
from kbdb.types import SearchResult, build

FUSION_CANDIDATES = 100


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
    fusion: Literal["rrf", "linear", "adaptive"],
    linear_weight: float,
    adaptive_params: AdaptiveParams | None = None,
) -> SearchResult:
    """``adaptive_params``: the adaptive fusion's settings; by default those of the
    lexical searcher's ``[search]`` settings."""
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
    signals: Signals | None = None
    if mode == "vector":
        fused = rrf([], vec_hits, k=rrf_k)
    elif fusion == "linear":
        fused = linear(lex_ranked, vec_hits, weight=linear_weight)
    elif fusion == "adaptive":
        signals = arm_signals(parsed, lex_hits, vec_hits)
        params = adaptive_params if adaptive_params is not None else params_of(lexical.cfg)
        fused = adaptive(lex_ranked, vec_hits, signals, params, k=rrf_k)
    else:
        fused = rrf(lex_ranked, vec_hits, k=rrf_k)
    # The fused hit that is first before any recency decay: confidence measures the match.
    best_kbid = fused[0].kbid if fused else None
    timing = lexical.timing
    starts: dict[str, str] = {}
    if timing is not None and timing.reorders:
        with lexical.source.read() as conn:
            starts = lexical.source.starts(conn, [f.kbid for f in fused], timing.as_of)
        fused = timing.order_fused(fused, starts)
    lists = _Lists(
        lex_best=lex_hits[0].score if lex_hits else 0.0,
        cos_best=vec_hits[0][1] if vec_hits else 0.0,
        gap=cosine_gap([c for _, c in vec_hits[:FUSION_CANDIDATES]]),
        agreement=signals.agreement
        if signals is not None
        else agreement(
            [h.kbid for h in lex_hits[:FUSION_CANDIDATES]],
            [k for k, _ in vec_hits[:FUSION_CANDIDATES]],
        ),
    )
    page = [
        _hit(f, by_kbid.get(f.kbid), parsed, mode, fusion, signals, lists, f.kbid == best_kbid)
        for f in fused[offset : offset + limit]
    ]
    if timing is not None and timing.reorders and explain:
        for h in page:
            start = starts.get(h.kbid)
            (h.extra or {})["recency"] = timing.explain(start, timing.factor(start))
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
        retrieval_verdict=verdict(top.confidence if top else None, False, mode),
    )


def params_of(cfg: SearchConfig) -> AdaptiveParams:
    """The adaptive fusion's ramps from the ``[search]`` settings."""
    return AdaptiveParams(
        gate_low=cfg.adaptive_gate_low,
        gate_high=cfg.adaptive_gate_high,
        vector_weight=cfg.adaptive_vector_weight,
        agreement_slope=cfg.adaptive_agreement_slope,
        rank_mix=cfg.adaptive_rank_mix,
    )


def coverage(matched: bytes, parsed: ParsedQuery) -> float:
    """The share of the query's required clauses that a hit (``Hit.matched``) matched; of
    all its clauses when none is required."""
    clauses = parsed.clauses
    if parsed.required == len(clauses) or not parsed.required:
        return (len(matched) - matched.count(0)) / len(clauses) if clauses else 0.0
    covered = sum(1 for mask, (_, req) in zip(matched, clauses, strict=False) if mask and req)
    return covered / parsed.required


def arm_signals(
    parsed: ParsedQuery, lex_hits: list[Hit], vec_hits: list[tuple[str, float]]
) -> Signals:
    """The adaptive fusion's view of one query's two candidate lists: the best lexical
    coverage and the lists' agreement, both over the first ``FUSION_CANDIDATES`` of each
    list (so a deeper page sees the same signals), and the best cosine."""
    lex_top = lex_hits[:FUSION_CANDIDATES]
    best = 0.0
    for h in lex_top:
        best = max(best, coverage(h.matched, parsed))
        if best >= 1.0:
            break
    agree = agreement([h.kbid for h in lex_top], [k for k, _ in vec_hits[:FUSION_CANDIDATES]])
    cosines = [c for _, c in vec_hits]
    return Signals(coverage=best, agreement=agree, top_cosine=max(cosines, default=None))


class _Lists(NamedTuple):
    """What a hit's confidence weighs it against: the best lexical score, the best cosine,
    the vector list's gap and the two lists' agreement."""

    lex_best: float
    cos_best: float
    gap: float
    agreement: float


def _hit(
    f: Fused,
    lex: Hit | None,
    parsed: ParsedQuery,
    mode: str,
    fusion: str,
    signals: Signals | None,
    lists: _Lists,
    first: bool,
) -> Hit:
    vec_conf = (
        vector_confidence(f.vector_score, lists.cos_best, lists.gap, f.vector_rank == 1)
        if f.vector_score is not None
        else None
    )
    if mode == "vector":
        conf = vec_conf if vec_conf is not None else 0.0
    else:
        lex_conf = (
            lexical_confidence(
                lex.score / lex.boost,
                lex.bound,
                coverage(lex.matched, parsed),
                lex.score / lists.lex_best if lists.lex_best > 0 else 1.0,
                lists.lex_best <= 0 or lex.score >= lists.lex_best,
            )
            if lex is not None
            else None
        )
        conf = hybrid_confidence(lex_conf, vec_conf, lists.agreement, first)
    extra: dict[str, object] = {
        "vector_rank": f.vector_rank,
        "cosine": None if f.vector_score is None else round(f.vector_score, 6),
    }
    if mode == "hybrid":
        extra.update(
            lexical_rank=f.lexical_rank,
            lexical_score=None if f.lexical_score is None else round(f.lexical_score, 6),
            fusion=fusion,
            lexical_weight=round(f.lexical_weight, 6),
            vector_weight=round(f.vector_weight, 6),
            lexical_part=round(f.lexical_part, 6),
            vector_part=round(f.vector_part, 6),
        )
        if signals is not None:
            extra["signals"] = {
                "coverage": round(signals.coverage, 6),
                "agreement": round(signals.agreement, 6),
                "top_cosine": None if signals.top_cosine is None else round(signals.top_cosine, 6),
            }
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
