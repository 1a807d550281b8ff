"""Retrieval evaluation on BEIR-format datasets (SPEC §15): the data loader and the metrics.

The entry point is :func:`kbdb.evaluation.run.run_eval`; this package holds its parts.
"""

from kbdb.evaluation.beir import BeirDataset, load_beir, sha256_file
from kbdb.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k

__all__ = [
    "BeirDataset",
    "load_beir",
    "mrr_at_k",
    "ndcg_at_k",
    "percentile",
    "recall_at_k",
    "sha256_file",
]
