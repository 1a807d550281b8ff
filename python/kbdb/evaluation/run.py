"""``kbdb eval``: retrieval quality and speed on a BEIR-format dataset (SPEC §15).

The corpus is learned into a temporary knowledge base (or the one given as ``db``): one
document per BEIR document, its ``docid`` the BEIR ``_id``, the ``title`` as the section's
heading and the ``text`` as its body. Every judged query then runs once through
:meth:`KnowledgeBase.search`, single-threaded, and the hits are mapped back to BEIR ids
through their docids. The report holds nDCG@10, Recall@10, Recall@100 and MRR@10 (BEIR /
``pytrec_eval`` definitions, see :mod:`kbdb.evaluation.metrics`), queries/s and p50/p95
latency, the parameters used and the dataset checksums. When queries carry a category
(their records, or a ``categories`` file), it also holds nDCG@10, Recall@10 and MRR@10
per category (:mod:`kbdb.evaluation.category`). With ``per_query``, each judged
query's metrics, the ranks of its relevant documents and its top hits go to a JSON Lines
file (:func:`query_records`), so that the losses can be studied one query at a time.

Settings (``{"search.k1": "0.9"}``) are written to the temporary knowledge base's
``worker.toml`` before it is opened. With ``db`` they apply in memory only: an evaluation
never edits a user's configuration.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb.config import Config, config_keys, config_to_dict, set_value
from kbdb.errors import (
    ConfigInvalidError,
    EmbeddingProviderNotConfiguredError,
    InvalidArgumentError,
)
from kbdb.evaluation.beir import BeirDataset, BeirDoc, load_beir
from kbdb.evaluation.category import (
    CategoryNaming,
    CategoryScores,
    load_categories,
    name_categories,
    score_categories,
)
from kbdb.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase

__all__ = [
    "EvalProgress",
    "EvalReport",
    "Rankings",
    "learn_corpus",
    "override_config",
    "query_records",
    "run_eval",
    "run_queries",
    "score_rankings",
]

MODES = ("lexical", "vector", "hybrid")
LEARN_BATCH = 2_048  # documents per transaction and index commit while loading a corpus
NDCG_K = 10
RECALL_K = 100
RECALL_SHORT_K = 10  # Recall@10: what a top-10 page holds
MRR_K = 10
TOP_HITS = 10  # hits listed per query in the per-query file

EvalProgress = Callable[[str, int, int], None]
"""``(phase, done, total)``; ``phase`` is ``"learn"`` or ``"search"``."""

Rankings = dict[str, list[str]]
"""``{query_id: [beir_doc_id, ...]}``, best first."""


@dataclass(frozen=True)
class EvalReport:
    """The outcome of one evaluation. ``to_dict()`` is the JSON report."""

    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    qps: float
    p50_ms: float
    p95_ms: float
    index_s: float
    sections: int
    documents: int
    mode: str
    limit: int
    split: str
    settings: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)
    db: str | None = None
    categories: tuple[CategoryScores, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data; metric keys read ``ndcg@10``, ``recall@100``.
        ``categories`` is ``[]`` when no query has a category."""
        return {
            "ndcg@10": round(self.ndcg_at_10, 6),
            "recall@10": round(self.recall_at_10, 6),
            "recall@100": round(self.recall_at_100, 6),
            "mrr@10": round(self.mrr_at_10, 6),
            "queries": self.queries,
            "qps": round(self.qps, 2),
            "p50_ms": round(self.p50_ms, 3),
            "p95_ms": round(self.p95_ms, 3),
            "index_s": round(self.index_s, 3),
            "sections": self.sections,
            "documents": self.documents,
            "mode": self.mode,
            "limit": self.limit,
            "split": self.split,
            "settings": dict(self.settings),
            "params": dict(self.params),
            "checksums": dict(self.checksums),
            "db": self.db,
            "categories": [c.to_dict() for c in self.categories],
        }


def run_eval(
    corpus: Path,
    queries: Path,
    qrels: Path,
    *,
    mode: str = "lexical",
    db: Path | None = None,
    settings: Mapping[str, str] | None = None,
    limit: int = RECALL_K,
    split: str | None = None,
    progress: EvalProgress | None = None,
    per_query: Path | None = None,
    categories: Path | None = None,
    category_names: CategoryNaming | None = None,
) -> EvalReport:
    """Evaluate search on a BEIR dataset.

    Args:
        corpus: ``corpus.jsonl`` (``_id``, ``title``, ``text``).
        queries: ``queries.jsonl`` (``_id``, ``text``).
        qrels: the qrels TSV (``query-id corpus-id score``), or a ``qrels/`` folder.
        mode: ``lexical``, ``vector`` or ``hybrid``.
        db: learn into this knowledge base (created when missing) instead of a temporary
            one. Documents already learned are left unchanged, so a second run is fast.
        settings: ``worker.toml`` keys to override, as ``{"search.k1": "0.9"}``.
        limit: results per query (1–100); Recall@100 needs 100.
        split: the qrels split when ``qrels`` is a folder (default ``test``).
        progress: called as ``(phase, done, total)`` while learning and searching.
        per_query: write one JSON line per judged query here (see :func:`query_records`),
            replacing the file when the run is done; its folder must exist.
        categories: a JSON file ``{query_id: category}``; it takes precedence over the
            categories of the ``queries.jsonl`` records (``category``,
            ``metadata.category``).
        category_names: name the categories by a documented mapping: ``"locomo"`` (1
            multi-hop, 2 temporal, 3 open-domain, 4 single-hop). None reports them as
            given.

    Returns:
        The report.

    Raises:
        InvalidArgumentError: bad paths or dataset files, an unknown mode, a bad limit, a
            ``per_query`` path that is a folder or whose folder does not exist, a bad
            categories file (or one naming no judged query), a category the naming does
            not define.
        ConfigInvalidError: an unknown setting or an impossible value.
        EmbeddingProviderNotConfiguredError: ``vector``/``hybrid`` without a provider.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)} (got {mode!r})")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= RECALL_K:
        raise InvalidArgumentError(f"limit must be an integer in 1..{RECALL_K} (got {limit!r})")
    if per_query is not None:
        per_query = Path(per_query)
        _check_writable(per_query)
    settings = dict(settings or {})
    dataset = load_beir(Path(corpus), Path(queries), Path(qrels), split=split)
    query_categories = _categories(dataset, categories)
    names = name_categories(query_categories, category_names)
    from kbdb.kb import KnowledgeBase

    with tempfile.TemporaryDirectory(prefix="kbdb-eval-") as tmp:
        if db is None:
            kb = KnowledgeBase.init(Path(tmp))
            config_path = kb.path / "worker.toml"
            kb.close()
            for key, value in settings.items():
                set_value(config_path, key, value)
            kb = KnowledgeBase.open(Path(tmp))
        else:
            base = KnowledgeBase.init(Path(db))
            config = override_config(base.config, settings)
            base.close()
            kb = KnowledgeBase.open(Path(db), config=config)
        try:
            if mode != "lexical" and kb.config.embedding.provider == "none":
                raise EmbeddingProviderNotConfiguredError(
                    "Vector search requires a configured embedding provider",
                    hint="set embedding.provider, e.g. --set embedding.provider=onnx",
                )
            started = time.perf_counter()
            documents, sections = learn_corpus(kb, dataset.corpus, progress=progress)
            if mode != "lexical" and kb.stats().vector_index_stale:
                kb.rebuild(lexical=False)  # sections learned before the vectors existed
            index_s = time.perf_counter() - started
            hit_scores: dict[str, list[float]] | None = {} if per_query is not None else None
            rankings, latencies = run_queries(
                kb, dataset, mode=mode, limit=limit, progress=progress, scores=hit_scores
            )
            params = {
                "search": config_to_dict(kb.config)["search"],
                "analyzer": kb.stats().analyzer,
                "kbdb": _version(),
            }
            db_path = None if db is None else str(kb.path)
        finally:
            kb.close()

    scores = score_rankings(rankings, dataset.qrels)
    by_category = score_categories(
        [q for q, _ in dataset.queries], rankings, dataset.qrels, query_categories, names
    )
    if per_query is not None and hit_scores is not None:
        records = query_records(dataset, rankings, hit_scores, latencies, query_categories)
        _write_jsonl(per_query, records)
    total_s = sum(latencies)
    return EvalReport(
        ndcg_at_10=scores["ndcg@10"],
        recall_at_10=scores["recall@10"],
        recall_at_100=scores["recall@100"],
        mrr_at_10=scores["mrr@10"],
        queries=len(dataset.queries),
        qps=len(latencies) / total_s if total_s > 0 else 0.0,
        p50_ms=percentile(latencies, 50) * 1000,
        p95_ms=percentile(latencies, 95) * 1000,
        index_s=index_s,
        sections=sections,
        documents=documents,
        mode=mode,
        limit=limit,
        split=dataset.split,
        settings=settings,
        params=params,
        checksums=dataset.checksums,
        db=db_path,
        categories=by_category,
    )


def _categories(dataset: BeirDataset, path: Path | None) -> dict[str, str]:
    """The judged queries' categories: the file's, over those of the query records."""
    out = dict(dataset.categories)
    if path is None:
        return out
    given = load_categories(Path(path))
    judged = [q for q, _ in dataset.queries if q in given]
    if not judged:
        raise InvalidArgumentError(
            f"{path} names none of the {len(dataset.queries)} judged queries",
            hint="its keys must be query ids of the qrels",
        )
    out.update((q, given[q]) for q in judged)
    return out


def learn_corpus(
    kb: KnowledgeBase,
    docs: Sequence[BeirDoc],
    *,
    batch: int = LEARN_BATCH,
    progress: EvalProgress | None = None,
) -> tuple[int, int]:
    """Learn BEIR documents into ``kb``, ``batch`` documents per transaction.

    Each document becomes ``# {title}\\n\\n{text}`` with ``docid`` = its ``_id``. Text that
    the Markdown splitter would cut into several sections (a heading-like line inside an
    abstract) is learned as ``text/plain`` with the title, which the index also treats as
    heading text. Documents with neither title nor text are skipped: nothing can find them.

    Returns:
        ``(documents, sections)`` learned or already present.
    """
    from kbdb.ingest import split_markdown
    from kbdb.learn import LearnItem

    documents = sections = 0
    for start in range(0, len(docs), batch):
        items = []
        for doc in docs[start : start + batch]:
            title = " ".join(doc.title.split())
            if not title and not doc.text.strip():
                continue
            text = f"# {title}\n\n{doc.text}" if title else doc.text
            kind = "text/markdown"
            if len(split_markdown(text).sections) != 1:
                text, kind = doc.text, "text/plain"
            items.append(LearnItem(text, type=kind, title=title or None, docid=doc.id))
        report = kb.learn_many(items, batch=batch)
        documents += len(items)
        sections += len(report.sections)
        if progress:
            progress("learn", min(start + batch, len(docs)), len(docs))
    return documents, sections


def run_queries(
    kb: KnowledgeBase,
    dataset: BeirDataset,
    *,
    mode: str = "lexical",
    limit: int = RECALL_K,
    progress: EvalProgress | None = None,
    scores: dict[str, list[float]] | None = None,
) -> tuple[Rankings, list[float]]:
    """Run every judged query once, single-threaded, after one untimed warm-up query.

    ``scores``: when given, ``scores[query_id]`` is filled with the search score of each
    BEIR id of the ranking (that of the first hit naming it), in ranking order.

    Returns:
        The rankings as BEIR ids, and each query's wall time in seconds, in the order of
        ``dataset.queries``.
    """
    known = {d.id for d in dataset.corpus}
    if dataset.queries:
        kb.search(dataset.queries[0][1], mode=mode, limit=limit)
    rankings: Rankings = {}
    latencies: list[float] = []
    total = len(dataset.queries)
    for n, (qid, text) in enumerate(dataset.queries, 1):
        t0 = time.perf_counter()
        result = kb.search(text, mode=mode, limit=limit)
        latencies.append(time.perf_counter() - t0)
        if scores is None:
            rankings[qid] = to_beir_ids((item.docids for item in result.items), known)
        else:
            ranked = _beir_hits(((item.docids, item.score) for item in result.items), known)
            rankings[qid] = [d for d, _ in ranked]
            scores[qid] = [score for _, score in ranked]
        if progress and (n % 50 == 0 or n == total):
            progress("search", n, total)
    return rankings, latencies


def to_beir_ids(docids_per_hit: Iterable[Sequence[str]], known: set[str]) -> list[str]:
    """Flatten hits to BEIR ids, best first. A section shared by several documents (same
    content) stands for each of them; docids that are not in the corpus are dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for docids in docids_per_hit:
        for d in docids:
            if d in known and d not in seen:
                seen.add(d)
                out.append(d)
    return out


def _beir_hits(
    hits: Iterable[tuple[Sequence[str], float]], known: set[str]
) -> list[tuple[str, float]]:
    """:func:`to_beir_ids` keeping each BEIR id's score: that of the first hit naming it."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for docids, score in hits:
        for d in docids:
            if d in known and d not in seen:
                seen.add(d)
                out.append((d, score))
    return out


def query_records(
    dataset: BeirDataset,
    rankings: Mapping[str, Sequence[str]],
    scores: Mapping[str, Sequence[float]],
    latencies: Sequence[float],
    categories: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One record per judged query, in the order of ``dataset.queries``, for the
    per-query file:

    - ``query_id``, ``query`` (its text), and ``category`` when ``categories`` (or the
      dataset) gives it one;
    - ``ndcg@10``, ``recall@10``, ``recall@100``, ``mrr@10`` (as in the report, for this
      query alone) and ``latency_ms``;
    - ``retrieved``: how many BEIR documents the search returned;
    - ``relevant``: each judged-relevant document (relevance > 0) as ``{doc_id, gain,
      rank}``, ``rank`` 1-based in the retrieved list or null when it was not retrieved;
      found ones first, by rank;
    - ``hits``: the top 10 as ``{rank, doc_id, score, relevant, gain}``, ``gain`` the
      judged relevance (0 for judged not relevant) or null when the document is not judged.

    ``latencies`` are in seconds, in the order of ``dataset.queries``. ``categories``
    defaults to ``dataset.categories``.
    """
    if categories is None:
        categories = dataset.categories
    out: list[dict[str, Any]] = []
    for (qid, text), seconds in zip(dataset.queries, latencies, strict=True):
        judged = dataset.qrels.get(qid, {})
        ranking = list(rankings.get(qid, ()))
        hit_scores = list(scores.get(qid, ()))
        rank_of = {d: i for i, d in enumerate(ranking, 1)}
        relevant = [
            {"doc_id": d, "gain": g, "rank": rank_of.get(d)} for d, g in judged.items() if g > 0
        ]
        relevant.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0))
        hits = [
            {
                "rank": i,
                "doc_id": d,
                "score": score,
                "relevant": judged.get(d, 0) > 0,
                "gain": judged.get(d),
            }
            for i, (d, score) in enumerate(zip(ranking[:TOP_HITS], hit_scores, strict=False), 1)
        ]
        record: dict[str, Any] = {"query_id": qid, "query": text}
        if qid in categories:
            record["category"] = categories[qid]
        record.update(
            {
                "ndcg@10": round(ndcg_at_k(ranking, judged, NDCG_K), 6),
                "recall@10": round(recall_at_k(ranking, judged, RECALL_SHORT_K), 6),
                "recall@100": round(recall_at_k(ranking, judged, RECALL_K), 6),
                "mrr@10": round(mrr_at_k(ranking, judged, MRR_K), 6),
                "latency_ms": round(seconds * 1000, 3),
                "retrieved": len(ranking),
                "relevant": relevant,
                "hits": hits,
            }
        )
        out.append(record)
    return out


def _check_writable(path: Path) -> None:
    """Fail before the run, not after it, when the per-query file cannot be written."""
    if path.is_dir():
        raise InvalidArgumentError(
            f"per-query file {path} is a folder", hint="give a file name, e.g. per-query.jsonl"
        )
    folder = path.parent
    if not folder.is_dir():
        raise InvalidArgumentError(
            f"cannot write the per-query file {path}: folder {folder} does not exist",
            hint="create the folder first, or give another path",
        )
    if not os.access(folder, os.W_OK):
        raise InvalidArgumentError(
            f"cannot write the per-query file {path}: folder {folder} is not writable",
            hint="give a path in a folder you can write to",
        )


def _write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    """Write ``records`` as JSON Lines to a temporary file beside ``path``, then rename it
    over ``path``: a reader sees the old file or the whole new one, never a part. The file
    gets the permissions a new file would (mkstemp's are owner-only)."""
    umask = os.umask(0)
    os.umask(umask)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def score_rankings(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean nDCG@10, Recall@10, Recall@100 and MRR@10 over the judged queries. A judged
    query with no ranking scores 0."""
    sums = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    if not qrels:
        return sums
    n = len(qrels)
    for qid, judged in qrels.items():
        ranking = rankings.get(qid, [])
        sums["ndcg@10"] += ndcg_at_k(ranking, judged, NDCG_K)
        sums["recall@10"] += recall_at_k(ranking, judged, RECALL_SHORT_K)
        sums["recall@100"] += recall_at_k(ranking, judged, RECALL_K)
        sums["mrr@10"] += mrr_at_k(ranking, judged, MRR_K)
    return {k: v / n for k, v in sums.items()}


def override_config(config: Config, settings: Mapping[str, str]) -> Config:
    """``config`` with ``settings`` (``{"search.k1": "0.9"}``) applied, validated like
    ``kbdb config set``; nothing is written."""
    keys = {k.dotted: k for k in config_keys()}
    changes: dict[str, dict[str, Any]] = {}
    for name, text in settings.items():
        spec = keys.get(name)
        if spec is None:
            raise ConfigInvalidError(
                f"unknown setting {name!r} (allowed: {', '.join(keys)})",
                hint="settings look like search.k1=0.9",
            )
        changes.setdefault(spec.section, {})[spec.name] = spec.parse(str(text))
    for section, values in changes.items():
        config = replace(config, **{section: replace(getattr(config, section), **values)})
    return config


def _version() -> str:
    import kbdb

    return kbdb.__version__
