"""Confidence and the retrieval verdict (SPEC §4.3).

``confidence`` maps a hit's BM25F score and its query coverage into [0, 1] with a logistic
curve. The score is divided by the number of required query clauses so that long and short
queries are comparable. The curve's two constants are fitted on SciFact (``benches/
calibrate_confidence.py``) so that confidence approximates the probability that the hit
is relevant; re-fit them whenever scoring changes.
"""

from __future__ import annotations

import math

from kbdb.types import Verdict

# Logistic fit of P(relevant | score per clause, coverage) on SciFact test queries.
SCORE_SLOPE = 1.1
SCORE_MIDPOINT = 2.2

ANSWERED_AT = 0.5
PARTIAL_AT = 0.15


def confidence(score: float, clauses: int, coverage: float, relaxed: bool) -> float:
    """How strong a lexical match is, in [0, 1]."""
    per_clause = score / max(clauses, 1)
    p = 1.0 / (1.0 + math.exp(-SCORE_SLOPE * (per_clause - SCORE_MIDPOINT)))
    p *= coverage
    if relaxed:
        p *= 0.8
    return round(min(max(p, 0.0), 1.0), 4)


def verdict(top_confidence: float | None, relaxed: bool) -> Verdict:
    """``answered`` for a strong match, ``partial`` for weak or relaxed ones, else
    ``unanswered``: the agent should investigate, not guess."""
    if top_confidence is None or top_confidence < PARTIAL_AT:
        return "unanswered"
    if top_confidence >= ANSWERED_AT and not relaxed:
        return "answered"
    return "partial"
