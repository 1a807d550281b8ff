"""Is the verdict right and is confidence calibrated? Per dev set and mode (BENCHMARKS.md §1b).

For each dev set the corpus is learned once into ``CACHE/<set>`` (BEIR documents as
``kbdb eval`` learns them; with the local ONNX model when a vector mode is asked for, and
the embedding cache in ``kb.sqlite`` makes a re-run cheap). Every judged query then runs
once through the public ``kb.search(query, mode=mode, limit=10)``, and each hit is
relevant when one of its documents has a qrels gain > 0. Reported per set and mode:

- per verdict (``answered``, ``partial``, ``unanswered``): how many queries got it, and the
  share whose top hit is relevant (a query without hits has no relevant top hit);
- the expected calibration error (ECE) of the top hit's confidence against its relevance,
  and of every top-10 hit's: ten equal-width bins of confidence,
  ``ECE = Σ_b (n_b / N) · |mean confidence_b − share relevant_b|`` (Naeini et al. 2015,
  Guo et al. 2017);
- the goal check: ≥ 70 % relevant top hits under ``answered``, ≤ 25 % under
  ``unanswered`` (a verdict no query got passes vacuously and is marked so).

Dev sets: SciFact, Cranfield, MEDLINE, LISA, TIME and LoCoMo from the shared datasets, and
the paraphrase set (``benches/data/paraphrase``), whose questions share no word with their
memory: lexical search should say ``unanswered`` there.

    python benches/bench_calibration.py [--sets time,medline] [--modes lexical,hybrid]
        [--model DIR] [--cache DIR] [--limit-queries N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, SHARED, print_table, write_result  # noqa: E402
from kbdb.config import load_config  # noqa: E402
from kbdb.evaluation.beir import BeirDataset, dataset_paths, load_beir  # noqa: E402
from kbdb.evaluation.run import learn_corpus, override_config  # noqa: E402

if TYPE_CHECKING:
    from kbdb import KnowledgeBase

DATASETS = SHARED / "datasets"
DEV_SETS = {
    "scifact": DATASETS / "scifact",
    "cranfield": DATASETS / "cranfield",
    "medline": DATASETS / "medline",
    "lisa": DATASETS / "lisa",
    "time": DATASETS / "time",
    "locomo": DATASETS / "locomo",
    "paraphrase": ROOT / "benches" / "data" / "paraphrase",
}
MODES = ("lexical", "vector", "hybrid")
VERDICTS = ("answered", "partial", "unanswered")
MODEL = SHARED / "models" / "all-MiniLM-L6-v2"
CACHE = Path("/tmp/kbdb-calib-cache")
TOP_K = 10
BINS = 10
GOAL_ANSWERED = 0.70  # at least this share of answered queries has a relevant top hit
GOAL_UNANSWERED = 0.25  # at most this share of unanswered queries has one


@dataclass(frozen=True)
class Outcome:
    """One judged query's search: its verdict, and each hit's (confidence, relevant)."""

    qid: str
    verdict: str
    hits: tuple[tuple[float, bool], ...]

    @property
    def top_relevant(self) -> bool:
        return bool(self.hits) and self.hits[0][1]


def open_set(name: str, folder: Path, cache: Path, model: Path | None) -> KnowledgeBase:
    """The knowledge base of dev set ``name`` in ``cache/name``, learned when missing (or
    changed); with ``model``, embedded with it (``embedding.provider = onnx``), else with
    no provider. The cached ``worker.toml`` is never edited: settings apply in memory."""
    from kbdb import KnowledgeBase

    ds = load_beir(*dataset_paths(folder))
    root = cache / name
    KnowledgeBase.init(root).close()
    config = load_config(root / ".kbdb" / "worker.toml")
    if model is not None:
        settings = {"embedding.provider": "onnx", "embedding.model_path": str(model)}
        config = override_config(config, settings)
    kb = KnowledgeBase.open(root, config=config)
    t0 = time.perf_counter()
    learn_corpus(kb, ds.corpus)
    if model is not None and kb.stats().vector_index_stale:
        kb.rebuild(lexical=False)  # learned earlier without vectors
    print(f"{name}: ready in {time.perf_counter() - t0:.1f} s", flush=True)
    return kb


def judge(
    kb: KnowledgeBase, ds: BeirDataset, mode: str, *, limit_queries: int | None = None
) -> list[Outcome]:
    """Every judged query (the first ``limit_queries``) through ``kb.search``, top 10. A
    hit is relevant when one of its documents is judged relevant (gain > 0); a section
    shared by several documents (same content) stands for each of them."""
    out: list[Outcome] = []
    queries = ds.queries if limit_queries is None else ds.queries[:limit_queries]
    for qid, text in queries:
        judged = ds.qrels.get(qid, {})
        result = kb.search(text, mode=mode, limit=TOP_K)
        hits = tuple(
            (item.confidence, any(judged.get(d, 0) > 0 for d in item.docids))
            for item in result.items
        )
        out.append(Outcome(qid, result.retrieval_verdict, hits))
    return out


def ece(pairs: Iterable[tuple[float, bool]], bins: int = BINS) -> float | None:
    """Expected calibration error of ``(confidence, relevant)`` pairs over ``bins``
    equal-width bins of [0, 1] (a confidence of 1 falls in the last); None without pairs."""
    counts = [0] * bins
    conf_sums = [0.0] * bins
    hit_sums = [0] * bins
    n = 0
    for conf, relevant in pairs:
        b = min(int(conf * bins), bins - 1)
        counts[b] += 1
        conf_sums[b] += conf
        hit_sums[b] += relevant
        n += 1
    if n == 0:
        return None
    return sum(abs(conf_sums[b] - hit_sums[b]) for b in range(bins) if counts[b]) / n


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Per verdict ``{queries, relevant}`` (``relevant``: the share of its queries whose top
    hit is relevant, None when none got it), ``p_at_1``, the mean top confidence, both
    ECEs, and the goal check (``answered_ok``, ``unanswered_ok``: None when vacuous)."""
    per: dict[str, dict[str, Any]] = {}
    for v in VERDICTS:
        group = [o for o in outcomes if o.verdict == v]
        rel = sum(o.top_relevant for o in group)
        per[v] = {"queries": len(group), "relevant": rel / len(group) if group else None}
    tops = [o.hits[0] for o in outcomes if o.hits]
    answered, unanswered = per["answered"]["relevant"], per["unanswered"]["relevant"]
    return {
        "queries": len(outcomes),
        "verdicts": per,
        "p_at_1": sum(o.top_relevant for o in outcomes) / len(outcomes) if outcomes else None,
        "mean_top_confidence": sum(c for c, _ in tops) / len(tops) if tops else None,
        "ece_top": ece(tops),
        "ece_top10": ece(h for o in outcomes for h in o.hits),
        "answered_ok": None if answered is None else answered >= GOAL_ANSWERED,
        "unanswered_ok": None if unanswered is None else unanswered <= GOAL_UNANSWERED,
    }


def _pct(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.0f} %"


def _goal(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "NO")


def table_rows(results: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for r in results:
        s, per = r["summary"], r["summary"]["verdicts"]
        rows.append(
            [
                r["set"],
                r["mode"],
                s["queries"],
                *(
                    f"{per[v]['queries']} / {_pct(per[v]['relevant'])}"
                    for v in ("answered", "partial", "unanswered")
                ),
                s["p_at_1"],
                s["mean_top_confidence"],
                s["ece_top"],
                s["ece_top10"],
                f"{_goal(s['answered_ok'])} / {_goal(s['unanswered_ok'])}",
            ]
        )
    return rows


HEADERS = (
    "set",
    "mode",
    "queries",
    "answered n / rel",
    "partial n / rel",
    "unanswered n / rel",
    "P@1",
    "mean top conf",
    "ECE top",
    "ECE top-10",
    "goal ans / unans",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    ap.add_argument("--model", type=Path, default=MODEL, help="folder with model.onnx")
    ap.add_argument("--cache", type=Path, default=CACHE, help="knowledge bases, one per set")
    ap.add_argument(
        "--limit-queries", type=int, default=None, metavar="N", help="first N judged queries"
    )
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s]
    modes = [m for m in args.modes.split(",") if m]
    for n in names:
        if n not in DEV_SETS:
            ap.error(f"unknown set {n!r} (known: {', '.join(DEV_SETS)})")
    for m in modes:
        if m not in MODES:
            ap.error(f"unknown mode {m!r} (known: {', '.join(MODES)})")
    vectors = any(m != "lexical" for m in modes)
    args.cache.mkdir(parents=True, exist_ok=True)

    results: list[dict[str, Any]] = []
    checksums: dict[str, dict[str, str]] = {}
    for name in names:
        ds = load_beir(*dataset_paths(DEV_SETS[name]))
        checksums[name] = ds.checksums
        kb = open_set(name, DEV_SETS[name], args.cache, args.model if vectors else None)
        try:
            for mode in modes:
                t0 = time.perf_counter()
                outcomes = judge(kb, ds, mode, limit_queries=args.limit_queries)
                summary = summarize(outcomes)
                print(f"{name} {mode}: {len(outcomes)} queries in {time.perf_counter() - t0:.1f} s")
                results.append({"set": name, "mode": mode, "summary": summary})
        finally:
            kb.close()

    print_table(
        f"Verdict and confidence calibration (top {TOP_K}; goal: answered ≥ "
        f"{GOAL_ANSWERED:.0%} relevant, unanswered ≤ {GOAL_UNANSWERED:.0%})",
        HEADERS,
        table_rows(results),
    )
    met = [r for r in results if r["summary"]["answered_ok"] is not False]
    met = [r for r in met if r["summary"]["unanswered_ok"] is not False]
    print(f"goal met on {len(met)} of {len(results)} set × mode runs")
    path = write_result(
        "calibration",
        {
            "sets": names,
            "modes": modes,
            "model": str(args.model) if vectors else None,
            "limit_queries": args.limit_queries,
            "top_k": TOP_K,
            "bins": BINS,
            "goal": {"answered_min": GOAL_ANSWERED, "unanswered_max": GOAL_UNANSWERED},
            "checksums": checksums,
            "results": results,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
