"""Ranking metrics, as BEIR computes them with ``pytrec_eval`` (trec_eval semantics).

All functions take one query's ranking (document ids, best first, no duplicates) and its
judgements ``{doc_id: relevance}``. A document is relevant when its relevance is > 0;
judgements of 0 (or below) count as judged non-relevant.

- nDCG@k (Järvelin & Kekäläinen 2002, trec_eval ``ndcg_cut``): the gain of the document
  at rank ``i`` (1-based) is its graded relevance, discounted by ``log2(i + 1)``:
  ``DCG@k = sum_{i<=k} rel_i / log2(i + 1)``. The ideal DCG ranks all judged relevances in
  descending order; ``nDCG@k = DCG@k / IDCG@k``, 0 when the query has no relevant document.
- Recall@k: relevant documents in the top ``k`` over all relevant documents.
- MRR@k: ``1 / rank`` of the first relevant document within the top ``k``, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["dcg", "mrr_at_k", "ndcg_at_k", "percentile", "recall_at_k"]


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of ``gains`` listed by rank (rank 1 first)."""
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Normalized DCG of the top ``k`` of ``ranking`` with graded gains (gain = relevance)."""
    ideal = dcg(sorted((r for r in qrels.values() if r > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    gains = [max(qrels.get(d, 0), 0) for d in ranking[:k]]
    return dcg(gains) / ideal


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """Share of the relevant documents found in the top ``k``; 0 when none is relevant."""
    relevant = {d for d, r in qrels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document in the top ``k``, else 0."""
    for i, d in enumerate(ranking[:k]):
        if qrels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0–100) with linear interpolation (numpy's default)."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
