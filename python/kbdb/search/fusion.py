"""Fusing the lexical and the vector ranked lists (SPEC §4.2).

RRF (Cormack, Clarke & Büttcher, 2009, "Reciprocal Rank Fusion outperforms Condorcet and
individual rank learning methods"), optionally weighted per list:

    score(d) = Σ_lists w_list / (k + rank_list(d))   ranks are 1-based; a list that
                                                     misses d contributes 0; w = 1 is
                                                     plain RRF

Linear: each list's scores are min-max normalized to [0, 1] (a list with one distinct
score maps it to 1), then ``weight · vector + (1 − weight) · lexical``; a list that misses
``d`` contributes 0.

Convex: each list's scores are divided by the list's best score (BM25F scores are ≥ 0 and
cosines are clamped at 0, so 0 stays the bottom and the gaps between scores are kept), then
``w_lex · lexical + w_vec · vector``. ``benches/tune_fusion.py`` measures it as the other
way to combine the adaptive weights.

Adaptive: weighted RRF, with the two weights taken from the query's own results
(:func:`arm_weights`):

    w_lex = ramp(coverage; coverage_low, coverage_high)
    w_vec = floor + (1 − floor) · ramp(gap; gap_low, gap_high)
    ramp(x; lo, hi) = clamp((x − lo) / (hi − lo), 0, 1)

*coverage* is the largest share of the required query words that one lexical candidate
matched: 1 as soon as one hit is strict, low when the lexical list is a relaxed scatter of
partial matches. *gap* is the vector list's top cosine minus the mean cosine of its ranks
2–10: large when one section stands out, small when the best hit is one of many alike. A
lexical arm that matched little of the query gets no say, whatever its BM25F scores, so
its noise cannot push the vector arm's hits down; a vector arm without a clear best hit
counts for less against a lexical arm that matched the query well. The vector weight
never drops below ``floor``, so a query that neither arm matches well is ranked by the
vector arm.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

Ranked = Sequence[tuple[str, float]]
"""(kbid, score), best first."""

# The smallest vector weight of the adaptive fusion.
VECTOR_FLOOR = 0.1
# The gap: the top cosine minus the mean cosine of ranks 2..GAP_RANKS.
GAP_RANKS = 10


class Fused(NamedTuple):
    """One fused item (a named tuple: a hybrid search makes a few hundred of these)."""

    kbid: str
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    lexical_score: float | None
    vector_score: float | None
    lexical_part: float
    vector_part: float
    lexical_weight: float = 1.0
    vector_weight: float = 1.0


@dataclass(frozen=True)
class Signals:
    """How strong each arm's result is for one query.

    ``coverage``: the largest share of the required query words that one lexical candidate
    matched, in [0, 1] (0 without lexical candidates); ``top_cosine``: the vector list's
    best cosine (None without vector candidates); ``gap``: ``top_cosine`` minus the mean
    cosine of the vector ranks 2 to ``GAP_RANKS`` (0 with fewer than two candidates)."""

    coverage: float
    top_cosine: float | None
    gap: float


@dataclass(frozen=True)
class AdaptiveParams:
    """The ramps of :func:`arm_weights` (``[search] adaptive_*`` in ``worker.toml``, whose
    defaults ``benches/tune_fusion.py`` chose)."""

    coverage_low: float
    coverage_high: float
    gap_low: float
    gap_high: float
    vector_floor: float = VECTOR_FLOOR


def cosine_gap(cosines: Sequence[float]) -> float:
    """The best cosine minus the mean of the next ``GAP_RANKS - 1`` (0 for fewer than two)."""
    ranked = sorted(cosines, reverse=True)[:GAP_RANKS]
    if len(ranked) < 2:
        return 0.0
    return ranked[0] - sum(ranked[1:]) / (len(ranked) - 1)


def ramp(x: float, lo: float, hi: float) -> float:
    """0 at or below ``lo``, 1 at or above ``hi``, linear between (a step at ``lo`` when
    ``hi <= lo``)."""
    if hi <= lo:
        return 1.0 if x > lo else 0.0
    return min(max((x - lo) / (hi - lo), 0.0), 1.0)


def arm_weights(signals: Signals, params: AdaptiveParams) -> tuple[float, float]:
    """``(lexical weight, vector weight)`` for one query, each in [0, 1]."""
    w_lex = ramp(signals.coverage, params.coverage_low, params.coverage_high)
    strength = ramp(signals.gap, params.gap_low, params.gap_high)
    return w_lex, params.vector_floor + (1.0 - params.vector_floor) * strength


def rrf(
    lexical: Ranked, vector: Ranked, *, k: float, weights: tuple[float, float] = (1.0, 1.0)
) -> list[Fused]:
    """Reciprocal Rank Fusion of two ranked lists, best first (ties by kbid); ``weights``
    (lexical, vector) multiply each list's terms."""
    w_lex, w_vec = weights

    def lex(rank: int, _score: float, _lo: float, _hi: float) -> float:
        return w_lex / (k + rank)

    def vec(rank: int, _score: float, _lo: float, _hi: float) -> float:
        return w_vec / (k + rank)

    return _fuse(lexical, vector, lex, vec, weights)


def linear(lexical: Ranked, vector: Ranked, *, weight: float) -> list[Fused]:
    """Min-max normalized weighted sum: ``weight`` on the vector list."""

    def lex(_rank: int, score: float, lo: float, hi: float) -> float:
        return (1.0 - weight) * _minmax(score, lo, hi)

    def vec(_rank: int, score: float, lo: float, hi: float) -> float:
        return weight * _minmax(score, lo, hi)

    return _fuse(lexical, vector, lex, vec, (1.0 - weight, weight))


def convex(lexical: Ranked, vector: Ranked, *, weights: tuple[float, float]) -> list[Fused]:
    """``w_lex · score / best`` over the lexical list plus the same over the vector list;
    negative scores count as 0."""
    w_lex, w_vec = weights

    def lex(_rank: int, score: float, _lo: float, hi: float) -> float:
        return w_lex * _by_best(score, hi)

    def vec(_rank: int, score: float, _lo: float, hi: float) -> float:
        return w_vec * _by_best(score, hi)

    return _fuse(lexical, vector, lex, vec, weights)


def adaptive(
    lexical: Ranked, vector: Ranked, signals: Signals, params: AdaptiveParams, *, k: float
) -> list[Fused]:
    """:func:`rrf` with ``k`` and the weights of :func:`arm_weights`."""
    return rrf(lexical, vector, k=k, weights=arm_weights(signals, params))


def _minmax(score: float, lo: float, hi: float) -> float:
    return 1.0 if hi <= lo else (score - lo) / (hi - lo)


def _by_best(score: float, hi: float) -> float:
    return max(score, 0.0) / hi if hi > 0 else 0.0


PartFn = Callable[[int, float, float, float], float]
"""(rank, score, list min score, list max score) -> this list's contribution."""


def _fuse(
    lexical: Ranked,
    vector: Ranked,
    lex_part: PartFn,
    vec_part: PartFn,
    weights: tuple[float, float],
) -> list[Fused]:
    # Per kbid: [lexical rank, vector rank, lexical score, vector score, lexical part,
    # vector part].
    rows: dict[str, list[Any]] = {}
    for which, ranked, part in ((0, lexical, lex_part), (1, vector, vec_part)):
        if not ranked:
            continue
        scores = [s for _, s in ranked]
        lo = min(scores)
        hi = max(scores)
        for rank, (kbid, score) in enumerate(ranked, start=1):
            row = rows.get(kbid)
            if row is None:
                row = rows[kbid] = [None, None, None, None, 0.0, 0.0]
            elif row[which] is not None:
                continue  # a kbid listed twice keeps its best rank
            row[which] = rank
            row[2 + which] = score
            row[4 + which] = part(rank, score, lo, hi)
    w_lex, w_vec = weights
    fused = [
        Fused(kbid, r[4] + r[5], r[0], r[1], r[2], r[3], r[4], r[5], w_lex, w_vec)
        for kbid, r in rows.items()
    ]
    fused.sort(key=lambda f: (-f.score, f.kbid))
    return fused
