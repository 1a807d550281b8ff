"""``kbdb eval``: retrieval quality and speed on a BEIR-format dataset (SPEC §15).

The corpus is learned into a temporary knowledge base (or the one given as ``db``): one
document per BEIR document, its ``docid`` the BEIR ``_id``, the ``title`` as the section's
heading and the ``text`` as its body. Every judged query then runs once through
:meth:`KnowledgeBase.search`, single-threaded, and the hits are mapped back to BEIR ids
through their docids. The report holds nDCG@10, Recall@100 and MRR@10 (BEIR /
``pytrec_eval`` definitions, see :mod:`kbdb.evaluation.metrics`), queries/s and p50/p95
latency, the parameters used and the dataset checksums.

Settings (``{"search.k1": "0.9"}``) are written to the temporary knowledge base's
``worker.toml`` before it is opened. With ``db`` they apply in memory only: an evaluation
never edits a user's configuration.
"""

from __future__ import annotations

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
from kbdb.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase

__all__ = [
    "EvalProgress",
    "EvalReport",
    "Rankings",
    "learn_corpus",
    "override_config",
    "run_eval",
    "run_queries",
    "score_rankings",
]

MODES = ("lexical", "vector", "hybrid")
LEARN_BATCH = 2_048  # documents per transaction and index commit while loading a corpus
NDCG_K = 10
RECALL_K = 100
MRR_K = 10

EvalProgress = Callable[[str, int, int], None]
"""``(phase, done, total)``; ``phase`` is ``"learn"`` or ``"search"``."""

Rankings = dict[str, list[str]]
"""``{query_id: [beir_doc_id, ...]}``, best first."""


@dataclass(frozen=True)
class EvalReport:
    """The outcome of one evaluation. ``to_dict()`` is the JSON report."""

    ndcg_at_10: float
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

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data; metric keys read ``ndcg@10``, ``recall@100``."""
        return {
            "ndcg@10": round(self.ndcg_at_10, 6),
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

    Returns:
        The report.

    Raises:
        InvalidArgumentError: bad paths or dataset files, an unknown mode, a bad limit.
        ConfigInvalidError: an unknown setting or an impossible value.
        EmbeddingProviderNotConfiguredError: ``vector``/``hybrid`` without a provider.
    """
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)} (got {mode!r})")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= RECALL_K:
        raise InvalidArgumentError(f"limit must be an integer in 1..{RECALL_K} (got {limit!r})")
    settings = dict(settings or {})
    dataset = load_beir(Path(corpus), Path(queries), Path(qrels), split=split)
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
            rankings, latencies = run_queries(
                kb, dataset, mode=mode, limit=limit, progress=progress
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
    total_s = sum(latencies)
    return EvalReport(
        ndcg_at_10=scores["ndcg@10"],
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
    )


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
) -> tuple[Rankings, list[float]]:
    """Run every judged query once, single-threaded, after one untimed warm-up query.

    Returns:
        The rankings as BEIR ids, and each query's wall time in seconds.
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
        rankings[qid] = to_beir_ids((item.docids for item in result.items), known)
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


def score_rankings(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean nDCG@10, Recall@100 and MRR@10 over the judged queries. A judged query with no
    ranking scores 0."""
    if not qrels:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    n = len(qrels)
    sums = {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for qid, judged in qrels.items():
        ranking = rankings.get(qid, [])
        sums["ndcg@10"] += ndcg_at_k(ranking, judged, NDCG_K)
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
