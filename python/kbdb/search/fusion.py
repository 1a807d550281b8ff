"""Fusing the lexical and the vector ranked lists (SPEC §4.2).

RRF (Cormack, Clarke & Büttcher, 2009, "Reciprocal Rank Fusion outperforms Condorcet and
individual rank learning methods"):

    score(d) = Σ_lists 1 / (k + rank_list(d))        ranks are 1-based; a list that
                                                     misses d contributes 0

Linear: each list's scores are min-max normalized to [0, 1] (a list with one distinct
score maps it to 1), then ``weight · vector + (1 − weight) · lexical``; a list that misses
``d`` contributes 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Ranked = Sequence[tuple[str, float]]
"""(kbid, score), best first."""


@dataclass(frozen=True)
class Fused:
    kbid: str
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    lexical_score: float | None
    vector_score: float | None
    lexical_part: float
    vector_part: float


PartFn = Callable[[int, float, float, float], float]
"""(rank, score, list min score, list max score) -> this list's contribution."""


def rrf(lexical: Ranked, vector: Ranked, *, k: float) -> list[Fused]:
    """Reciprocal Rank Fusion of two ranked lists, best first (ties by kbid)."""

    def part(rank: int, _score: float, _lo: float, _hi: float) -> float:
        return 1.0 / (k + rank)

    return _fuse(lexical, vector, part, part)


def linear(lexical: Ranked, vector: Ranked, *, weight: float) -> list[Fused]:
    """Min-max normalized weighted sum: ``weight`` on the vector list."""

    def lex(_rank: int, score: float, lo: float, hi: float) -> float:
        return (1.0 - weight) * _minmax(score, lo, hi)

    def vec(_rank: int, score: float, lo: float, hi: float) -> float:
        return weight * _minmax(score, lo, hi)

    return _fuse(lexical, vector, lex, vec)


def _minmax(score: float, lo: float, hi: float) -> float:
    return 1.0 if hi <= lo else (score - lo) / (hi - lo)


@dataclass
class _Row:
    ranks: list[int | None] = field(default_factory=lambda: [None, None])
    scores: list[float | None] = field(default_factory=lambda: [None, None])
    parts: list[float] = field(default_factory=lambda: [0.0, 0.0])


def _fuse(lexical: Ranked, vector: Ranked, lex_part: PartFn, vec_part: PartFn) -> list[Fused]:
    rows: dict[str, _Row] = {}
    for which, ranked, part in ((0, lexical, lex_part), (1, vector, vec_part)):
        if not ranked:
            continue
        lo = min(s for _, s in ranked)
        hi = max(s for _, s in ranked)
        for rank, (kbid, score) in enumerate(ranked, start=1):
            row = rows.setdefault(kbid, _Row())
            if row.ranks[which] is not None:
                continue  # a kbid listed twice keeps its best rank
            row.ranks[which] = rank
            row.scores[which] = score
            row.parts[which] = part(rank, score, lo, hi)
    fused = [
        Fused(
            kbid=kbid,
            score=row.parts[0] + row.parts[1],
            lexical_rank=row.ranks[0],
            vector_rank=row.ranks[1],
            lexical_score=row.scores[0],
            vector_score=row.scores[1],
            lexical_part=row.parts[0],
            vector_part=row.parts[1],
        )
        for kbid, row in rows.items()
    ]
    fused.sort(key=lambda f: (-f.score, f.kbid))
    return fused
