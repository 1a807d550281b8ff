"""Per-category metrics for ``kbdb eval``: which kinds of question a search answers.

A judged query's category comes from, in this order:

1. a ``--categories`` file (``categories=`` in :func:`kbdb.evaluation.run.run_eval`): one
   JSON object ``{query_id: category}``, values numbers or strings, the shape of LoCoMo's
   ``queries_by_category.json``;
2. its ``queries.jsonl`` record: a ``category`` field, or ``metadata.category``.

Categories are kept as given, as text (``1`` and ``"1"`` are one category). They get names
only when asked for by a documented mapping (``category_names="locomo"``): a generic file
whose categories happen to be 1–4 is never labelled with LoCoMo's names.

LoCoMo's numbering (Maharana et al., ACL 2024, arXiv:2402.17753) is that of the
benchmark's own evaluation code (github.com/snap-research/locomo): 1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop (5, adversarial questions without evidence, has no
relevant turn to find and is not in the retrieval set).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kbdb.errors import InvalidArgumentError
from kbdb.evaluation.metrics import mrr_at_k, ndcg_at_k, recall_at_k

__all__ = [
    "CATEGORY_NAMINGS",
    "CategoryNaming",
    "CategoryScores",
    "category_of",
    "load_categories",
    "name_categories",
    "score_categories",
]

CategoryNaming = Literal["locomo"]
CATEGORY_NAMINGS: dict[str, dict[str, str]] = {
    "locomo": {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"},
}

K = 10  # nDCG@10, Recall@10 and MRR@10 per category


@dataclass(frozen=True)
class CategoryScores:
    """The mean metrics of the judged queries of one category.

    Attributes:
        category: the category as given (text); None for the judged queries that have none.
        name: its name under the chosen mapping (``--category-names``), else None.
        queries: judged queries in it.
    """

    category: str | None
    name: str | None
    queries: int
    ndcg_at_10: float
    recall_at_10: float
    mrr_at_10: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "name": self.name,
            "queries": self.queries,
            "ndcg@10": round(self.ndcg_at_10, 6),
            "recall@10": round(self.recall_at_10, 6),
            "mrr@10": round(self.mrr_at_10, 6),
        }


def category_of(record: Mapping[str, Any]) -> str | None:
    """A ``queries.jsonl`` record's category: ``category``, else ``metadata.category``."""
    value = record.get("category")
    if value is None:
        meta = record.get("metadata")
        if isinstance(meta, Mapping):
            value = meta.get("category")
    return _text(value)


def load_categories(path: Path) -> dict[str, str]:
    """Read a ``{query_id: category}`` JSON file.

    Raises:
        InvalidArgumentError: a missing or unreadable file, not a JSON object, or a value
            that is neither a number nor a string (named by its query id).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidArgumentError(f"no such file: {path}", hint="check --categories") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"cannot read the categories file {path} ({e})") from None
    except json.JSONDecodeError as e:
        raise InvalidArgumentError(
            f"{path}:{e.lineno}: invalid JSON ({e.msg})",
            hint='expected one object {"query_id": category}',
        ) from None
    if not isinstance(data, dict):
        raise InvalidArgumentError(
            f"{path}: expected a JSON object mapping query ids to categories",
            hint='e.g. {"q1": 1, "q2": "temporal"}',
        )
    out: dict[str, str] = {}
    for qid, value in data.items():
        text = _text(value)
        if text is None:
            raise InvalidArgumentError(
                f"{path}: the category of query {qid!r} must be a number or a string "
                f"(got {json.dumps(value)})"
            )
        out[str(qid)] = text
    return out


def name_categories(categories: Mapping[str, str], naming: str | None) -> dict[str, str]:
    """``{category: name}`` under ``naming`` (None: no names).

    Raises:
        InvalidArgumentError: an unknown naming, or a category the naming does not define
            (a file that is not what the naming says it is).
    """
    if naming is None:
        return {}
    names = CATEGORY_NAMINGS.get(naming)
    if names is None:
        raise InvalidArgumentError(
            f"unknown category naming {naming!r} (known: {', '.join(CATEGORY_NAMINGS)})"
        )
    unknown = sorted(set(categories.values()) - set(names), key=_order)
    if unknown:
        raise InvalidArgumentError(
            f"category {unknown[0]!r} has no {naming} name "
            f"({naming} categories are {', '.join(f'{k} {v}' for k, v in names.items())})",
            hint="leave out --category-names to report the categories as given",
        )
    return dict(names)


def score_categories(
    queries: Sequence[str],
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    categories: Mapping[str, str],
    names: Mapping[str, str],
) -> tuple[CategoryScores, ...]:
    """Mean nDCG@10, Recall@10 and MRR@10 per category over the judged ``queries``, in
    category order (numbers by value, then text). Judged queries without a category form
    one last group, ``category`` None, when some queries have one; with none at all the
    result is empty."""
    groups: dict[str | None, list[str]] = {}
    for qid in queries:
        groups.setdefault(categories.get(qid), []).append(qid)
    if set(groups) <= {None}:
        return ()
    out: list[CategoryScores] = []
    for cat in sorted(groups, key=lambda c: (c is None, _order(c or ""))):
        qids = groups[cat]
        n = len(qids)
        sums = [0.0, 0.0, 0.0]
        for qid in qids:
            ranking = rankings.get(qid, [])
            judged = qrels.get(qid, {})
            sums[0] += ndcg_at_k(ranking, judged, K)
            sums[1] += recall_at_k(ranking, judged, K)
            sums[2] += mrr_at_k(ranking, judged, K)
        name = names.get(cat) if cat is not None else None
        out.append(CategoryScores(cat, name, n, sums[0] / n, sums[1] / n, sums[2] / n))
    return tuple(out)


def _text(value: Any) -> str | None:
    """A category as text: integral numbers without a fraction (``1.0`` is ``1``)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _order(cat: str) -> tuple[int, float, str]:
    try:
        return (0, float(cat), cat)
    except ValueError:
        return (1, 0.0, cat)
