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

Adaptive (the default): per list, a blend of the normalized score and the rank,

    part(d) = w_list · ((1 − mix) · minmax(score(d)) + mix · (k + 1) / (k + rank(d)))

so rank 1 of a list is worth ``w_list`` from either half. The weights come from the query's
own two lists (:func:`arm_weights`):

    w_vec = clamp(vector_weight + agreement_slope · (agreement − 1/2), 0.05, 0.95)
    w_lex = (1 − w_vec) · ramp(coverage + agreement; gate_low, gate_high)
    ramp(x; lo, hi) = clamp((x − lo) / (hi − lo), 0, 1)

*coverage* is the largest share of the required query words that one lexical candidate
matched; *agreement* is the share of the vector list's top 10 that the lexical candidates
also hold. Where the two lists find the same sections, the vector list gets more say (on
collections where both arms are good they agree, and fusing them gains most); where they
disagree, the lexical list, which matched the query's own words, keeps the larger share.
Only when the lexical list matched little of the query *and* shares almost nothing with the
vector list (a paraphrase: the question has none of the words of its answer) does the gate
close and the vector list rank alone. Neither signal depends on the query's length the way
a raw coverage threshold does: a long question that matches a third of its words in the
right abstracts still agrees with the vector list.

Every list's part falls with its rank and no weight is negative, so a section that both
lists rank above another is fused above it; ties go by the better of the two ranks, then
by kbid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

Ranked = Sequence[tuple[str, float]]
"""(kbid, score), best first."""

# The adaptive fusion's vector share stays within [VECTOR_MIN, 1 - VECTOR_MIN].
VECTOR_MIN = 0.05
# Agreement: the share of the vector list's top AGREEMENT_RANKS in the lexical candidates.
AGREEMENT_RANKS = 10
# Scores are normalized over each list's first NORM_DEPTH entries, so that a deeper page
# (a longer list) does not change the scores of the first ones.
NORM_DEPTH = 100


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
    """What one query's two candidate lists say about each other.

    ``coverage``: the largest share of the required query words that one lexical candidate
    matched, in [0, 1] (0 without lexical candidates); ``agreement``: the share of the
    vector list's top ``AGREEMENT_RANKS`` that are lexical candidates too, in [0, 1] (0
    when either list is empty); ``top_cosine``: the vector list's best cosine (None without
    vector candidates; shown by ``explain``, not used by the weights)."""

    coverage: float
    agreement: float
    top_cosine: float | None


@dataclass(frozen=True)
class AdaptiveParams:
    """The adaptive fusion's settings (``[search] adaptive_*`` in ``worker.toml``, whose
    defaults ``benches/tune_fusion.py`` chose)."""

    gate_low: float
    gate_high: float
    vector_weight: float
    agreement_slope: float
    rank_mix: float


def agreement(lexical: Sequence[str], vector: Sequence[str]) -> float:
    """The share of ``vector``'s first ``AGREEMENT_RANKS`` kbids that ``lexical`` holds."""
    top = vector[:AGREEMENT_RANKS]
    if not top or not lexical:
        return 0.0
    held = set(lexical)
    return sum(1 for k in top if k in held) / len(top)


def ramp(x: float, lo: float, hi: float) -> float:
    """0 at or below ``lo``, 1 at or above ``hi``, linear between (a step at ``lo`` when
    ``hi <= lo``)."""
    if hi <= lo:
        return 1.0 if x > lo else 0.0
    return min(max((x - lo) / (hi - lo), 0.0), 1.0)


def arm_weights(signals: Signals, params: AdaptiveParams) -> tuple[float, float]:
    """``(lexical weight, vector weight)`` for one query, each in [0, 1], summing to 1
    unless the gate closes the lexical list."""
    share = params.vector_weight + params.agreement_slope * (signals.agreement - 0.5)
    w_vec = min(max(share, VECTOR_MIN), 1.0 - VECTOR_MIN)
    gate = ramp(signals.coverage + signals.agreement, params.gate_low, params.gate_high)
    return (1.0 - w_vec) * gate, w_vec


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
    """Per list ``w · ((1 − mix) · minmax(score) + mix · (k + 1) / (k + rank))``, with the
    weights of :func:`arm_weights` and ``mix = params.rank_mix``."""
    weights = arm_weights(signals, params)
    mix = params.rank_mix

    def part(w: float) -> PartFn:
        def fn(rank: int, score: float, lo: float, hi: float) -> float:
            return w * ((1.0 - mix) * _minmax(score, lo, hi) + mix * (k + 1.0) / (k + rank))

        return fn

    return _fuse(lexical, vector, part(weights[0]), part(weights[1]), weights)


def _minmax(score: float, lo: float, hi: float) -> float:
    return 1.0 if hi <= lo else max(score - lo, 0.0) / (hi - lo)


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
        scores = [s for _, s in ranked[:NORM_DEPTH]]
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
    fused.sort(key=_order)
    return fused


def _order(f: Fused) -> tuple[float, int, str]:
    """Best score first; a tie goes to the better of the two ranks, then to the kbid."""
    best = min(r for r in (f.lexical_rank, f.vector_rank, 1 << 30) if r is not None)
    return (-f.score, best, f.kbid)
