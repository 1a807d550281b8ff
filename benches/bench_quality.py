"""BENCHMARKS.md §1: retrieval quality on SciFact (BEIR test, 300 queries).

kbdb runs through ``kbdb.evaluation.run.run_eval`` (what ``kbdb eval`` does), in lexical
mode with the default settings unless ``--set`` is given. bm25s (+PyStemmer), tantivy-py
and rank-bm25 run
on the same documents in the same script; all systems are scored by the same metric code
(cross-checked against pytrec_eval when it is installed).

    python benches/bench_quality.py [--set search.k1=0.9 ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SCIFACT, print_table, write_result  # noqa: E402
from kbdb.evaluation.beir import dataset_paths, load_beir  # noqa: E402
from kbdb.evaluation.run import run_eval, score_rankings  # noqa: E402
from peers import load_peers  # noqa: E402

PUBLISHED = (
    ("Lucene BM25-flat (Pyserini, published)", 0.679, 0.925),
    ("Lucene BM25-multifield (Pyserini, published)", 0.665, None),
)
GOAL_NDCG = 0.679


def pytrec_check(
    rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]
) -> dict[str, float] | None:
    """Mean nDCG@10 and Recall@100 by pytrec_eval, when installed (rank → descending score)."""
    try:
        import pytrec_eval
    except ImportError:
        return None
    run = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in rankings.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    res = ev.evaluate(run)
    n = len(qrels)
    return {
        "ndcg@10": sum(v["ndcg_cut_10"] for v in res.values()) / n,
        "recall@100": sum(v["recall_100"] for v in res.values()) / n,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=SCIFACT)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    settings = dict(s.split("=", 1) for s in args.set)
    corpus, queries, qrels = dataset_paths(args.dataset)
    ds = load_beir(corpus, queries, qrels)

    systems: list[dict[str, object]] = []
    report = run_eval(corpus, queries, qrels, settings=settings)
    systems.append(
        {
            "system": "kbdb lexical",
            "ndcg@10": report.ndcg_at_10,
            "recall@100": report.recall_at_100,
            "mrr@10": report.mrr_at_10,
            "index_s": report.index_s,
            "params": report.params,
            "settings": settings,
        }
    )

    peers, missing = load_peers()
    for peer in peers:
        t0 = time.perf_counter()
        peer.index(ds.corpus)
        index_s = time.perf_counter() - t0
        rankings = {qid: peer.search(text, 100) for qid, text in ds.queries}
        scores = score_rankings(rankings, ds.qrels)
        check = pytrec_check(rankings, ds.qrels)
        systems.append(
            {
                "system": peer.name,
                **scores,
                "index_s": index_s,
                "pytrec_eval": check,
            }
        )
    for name, why in missing.items():
        systems.append({"system": name, "status": why})

    rows = []
    for s in systems:
        if "status" in s:
            rows.append([s["system"], s["status"], None, None])
        else:
            rows.append([s["system"], s["ndcg@10"], s["recall@100"], s["mrr@10"]])
    for name, ndcg, r100 in PUBLISHED:
        rows.append([name, ndcg, r100, None])
    print_table(
        "SciFact test (300 queries): quality", ["system", "nDCG@10", "R@100", "MRR@10"], rows
    )
    kb_ndcg = report.ndcg_at_10
    verdict = "meets" if kb_ndcg >= GOAL_NDCG else "BELOW"
    print(f"kbdb lexical nDCG@10 {kb_ndcg:.3f} {verdict} the goal {GOAL_NDCG}")

    sp = report.params["search"]
    bm25 = f"k1={sp['k1']} b={sp['b_body']} w_heading={sp['w_heading']}"
    headline = [
        {
            "what": f"SciFact nDCG@10 (lexical, {bm25})",
            "kbdb": f"{kb_ndcg:.3f}",
            "peers": ", ".join(
                f"{s['system']} {s['ndcg@10']:.3f}"
                if "status" not in s
                else f"{s['system']} {s['status']}"
                for s in systems[1:]
            ),
        },
        {
            "what": "SciFact Recall@100 (lexical)",
            "kbdb": f"{report.recall_at_100:.3f}",
            "peers": ", ".join(
                f"{s['system']} {s['recall@100']:.3f}" for s in systems[1:] if "status" not in s
            ),
        },
    ]
    write_result(
        "quality",
        {
            "dataset": {
                "name": "scifact",
                "split": ds.split,
                "queries": len(ds.queries),
                "documents": len(ds.corpus),
                "checksums": ds.checksums,
            },
            "systems": systems,
            "published": [{"system": n, "ndcg@10": a, "recall@100": b} for n, a, b in PUBLISHED],
            "goal": {"ndcg@10": GOAL_NDCG, "met": kb_ndcg >= GOAL_NDCG},
            "kbdb_report": report.to_dict(),
            "headline": headline,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
