"""Confidence and the retrieval verdict (SPEC §4.3).

A lexical hit's ``confidence`` is a logistic function of two corpus-independent features:

- **saturation**: its BM25F score divided by the sum of the query's clause bounds
  (``Hits.clause_bounds``: per clause the largest weight × idf; BM25F saturates below idf,
  so no score reaches the sum). It says how strongly the matched terms, weighted by their
  rarity, are present, whatever the size of the knowledge base.
- **coverage**: the fraction of required query words that matched.

    confidence = σ(W0 + W_SAT · saturation + W_COV · coverage)

The weights are fitted by logistic regression of "this hit is relevant" on the top-10 hits
of the 300 SciFact test queries (``benches/calibrate_confidence.py``), so that confidence
approximates the probability that the hit is relevant and means the same across queries.
Re-fit them whenever scoring changes.
"""

from __future__ import annotations

import math

from kbdb.search.rounding import round_to
from kbdb.types import Verdict

# Fitted by benches/calibrate_confidence.py on SciFact (see docs/search.md).
W0 = -6.34
W_SAT = 7.76
W_COV = 2.39

ANSWERED_AT = 0.5
PARTIAL_AT = 0.15


def confidence(score: float, bound: float, coverage: float) -> float:
    """How strong a lexical match is, in [0, 1]."""
    saturation = score / bound if bound > 0 else 0.0
    z = W0 + W_SAT * min(saturation, 1.0) + W_COV * coverage
    return round_to(1.0 / (1.0 + math.exp(-z)), 4)


def verdict(top_confidence: float | None, relaxed: bool) -> Verdict:
    """``answered`` for a strong match, ``partial`` for weak or relaxed ones, else
    ``unanswered``: the agent should investigate, not guess."""
    if top_confidence is None or top_confidence < PARTIAL_AT:
        return "unanswered"
    if top_confidence >= ANSWERED_AT and not relaxed:
        return "answered"
    return "partial"
