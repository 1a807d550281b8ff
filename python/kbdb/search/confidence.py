"""Confidence and the retrieval verdict (SPEC §4.3).

A hit's ``confidence`` estimates the probability that it is relevant. Each mode has a
logistic model over features that mean the same on every collection, fitted on the top-10
hits of every judged query of every dev set (SciFact, Cranfield, MEDLINE, LISA, TIME,
LoCoMo and the paraphrase set), each set weighing the same
(``benches/calibrate_confidence.py``; the figures are in docs/search.md):

- **lexical**: *saturation*, the hit's BM25F score (without boosts) over the sum of the
  query's clause bounds (per clause the largest weight × idf; BM25F saturates below idf, so
  no score reaches the sum), which does not depend on the size of the knowledge base;
  *coverage*, the share of the required query words it matched; *relative*, its score over
  the first hit's (the recency decay undone); and whether it reaches it (a relaxed hit can
  outscore the first, strict, one);
- **vector**: its cosine; the cosine minus the best hit's; the list's *gap* (the best
  cosine minus the mean of ranks 2–10: does one hit stand out?); and whether it is first;
- **hybrid**: the log-odds of its lexical and of its vector confidence, each in its own
  list (or that it is missing from the list), the lists' agreement (the share of the vector
  top 10 that the lexical list holds), and whether it is the first fused hit.

``retrieval_verdict`` predicts whether the top hit is relevant: ``answered`` when its
confidence reaches the mode's upper threshold (and, in lexical mode, the hit matched every
required word: a relaxed match is ``partial``), ``unanswered`` below the lower one, else
``partial``. The thresholds are those with which, on every dev set, the top hit is relevant
for at least 70 % of ``answered`` queries and for at most 25 % of ``unanswered`` ones, or
as close to it as the worst set allows (docs/search.md, "Confidence and verdict").
Re-fit the weights whenever scoring or fusion changes.
"""

from __future__ import annotations

import math
from typing import Literal

from kbdb.search.rounding import round_to
from kbdb.types import Verdict

# Fitted by benches/calibrate_confidence.py (see docs/search.md).
LEXICAL = (-4.573, 3.620, 0.122, 3.208, -0.200)  # 1, saturation, coverage, relative, first
VECTOR = (-5.212, 7.254, 5.214, 7.363, 0.157)  # 1, cosine, cosine - best, gap, first
# 1, lexical log-odds, not in the lexical list, vector log-odds, not in the vector list,
# agreement, first
HYBRID = (-1.070, 0.462, -0.271, 0.512, -1.801, 1.876, 0.548)

# (answered at or above, unanswered below) the top hit's confidence, per mode.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "lexical": (0.8, 0.225),
    "vector": (0.925, 0.2),
    "hybrid": (0.675, 0.3),
}

Mode = Literal["lexical", "vector", "hybrid"]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _log_odds(p: float) -> float:
    p = min(max(p, 1e-4), 1.0 - 1e-4)
    return math.log(p / (1.0 - p))


def confidence(score: float, bound: float, coverage: float, relative: float, first: bool) -> float:
    """A lexical hit's confidence, in [0, 1]: ``score`` is its BM25F score without boosts,
    ``bound`` the sum of the query's clause bounds, ``relative`` its (boosted) score over
    the best hit's, ``first`` whether it is the best hit."""
    saturation = min(score / bound, 1.0) if bound > 0 else 0.0
    w0, w_sat, w_cov, w_rel, w_first = LEXICAL
    z = w0 + w_sat * saturation + w_cov * coverage + w_rel * min(relative, 1.0) + w_first * first
    return round_to(_sigmoid(z), 4)


def vector_confidence(cosine: float, best: float, gap: float, first: bool) -> float:
    """A vector hit's confidence: ``best`` is its list's best cosine, ``gap`` that best
    minus the mean cosine of ranks 2–10 (:func:`cosine_gap`)."""
    w0, w_cos, w_rel, w_gap, w_first = VECTOR
    z = w0 + w_cos * cosine + w_rel * (cosine - best) + w_gap * gap + w_first * first
    return round_to(_sigmoid(z), 4)


def hybrid_confidence(
    lexical: float | None, vector: float | None, agreement: float, first: bool
) -> float:
    """A fused hit's confidence from its confidence in each list (None: not in it)."""
    w0, w_lex, w_no_lex, w_vec, w_no_vec, w_agree, w_first = HYBRID
    z = w0 + w_agree * agreement + w_first * first
    z += w_no_lex if lexical is None else w_lex * _log_odds(lexical)
    z += w_no_vec if vector is None else w_vec * _log_odds(vector)
    return round_to(_sigmoid(z), 4)


def cosine_gap(cosines: list[float]) -> float:
    """The best cosine minus the mean of ranks 2–10 (0 with fewer than two)."""
    ranked = sorted(cosines, reverse=True)[:10]
    if len(ranked) < 2:
        return 0.0
    return ranked[0] - sum(ranked[1:]) / (len(ranked) - 1)


def verdict(top_confidence: float | None, relaxed: bool, mode: Mode = "lexical") -> Verdict:
    """``answered`` for a top hit likely relevant, ``unanswered`` for one likely not (the
    agent should investigate, not guess), ``partial`` between, and for a relaxed lexical
    match."""
    answered_at, unanswered_below = THRESHOLDS[mode]
    if top_confidence is None or top_confidence < unanswered_below:
        return "unanswered"
    if top_confidence >= answered_at and not relaxed:
        return "answered"
    return "partial"
