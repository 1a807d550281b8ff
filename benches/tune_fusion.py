"""Sweep the hybrid fusion parameters (RRF ``k``, linear ``weight``) on a BEIR dataset.

Each judged query runs both paths once, exactly as ``kb.search(mode="hybrid")`` does (the
facade's lexical ranking with the sibling boost, and the vector scan, ``max(100, limit)``
candidates each); every setting then fuses those two lists with the same functions the
facade uses (``kbdb.search.fusion``). So the sweep costs one pass over the queries.

SciFact ships only its test qrels, so besides the full-set score every setting gets a
cross-validated estimate: the queries are split in two halves at random (20 seeded
splits); the ``k`` chosen on one half is scored on the other. That estimate says how much of
the full-set gain is choice-on-test.

    python benches/tune_fusion.py --model DIR [--db PATH] [--dataset DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SCIFACT, print_table, write_result  # noqa: E402
from kbdb.config import load_config  # noqa: E402
from kbdb.eval import (  # noqa: E402
    NDCG_K,
    RECALL_K,
    learn_corpus,
    ndcg_at_k,
    override_config,
    to_beir_ids,
)
from kbdb.evaluation.beir import dataset_paths, load_beir  # noqa: E402
from kbdb.search.fusion import linear, rrf  # noqa: E402

RRF_K = (5, 10, 15, 20, 30, 40, 60, 80, 100)
LINEAR_W = (0.2, 0.3, 0.4, 0.5, 0.6)
SPLITS = 20


def main() -> int:
    from kbdb import KnowledgeBase
    from kbdb.store import queries as q

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=SCIFACT)
    ap.add_argument("--model", type=Path, required=True, help="folder with model.onnx")
    ap.add_argument("--db", type=Path, help="reuse (or create) this knowledge base")
    args = ap.parse_args()
    ds = load_beir(*dataset_paths(args.dataset))
    root = args.db or Path(tempfile.mkdtemp(prefix="kbdb-fusion-"))
    KnowledgeBase.init(root).close()
    settings = {"embedding.provider": "onnx", "embedding.model_path": str(args.model)}
    kb = KnowledgeBase.open(
        root, config=override_config(load_config(root / ".kbdb" / "worker.toml"), settings)
    )
    t0 = time.perf_counter()
    learn_corpus(kb, ds.corpus)
    print(f"learned and embedded in {time.perf_counter() - t0:.1f} s")

    known = {d.id for d in ds.corpus}
    lexical = kb._lexical()
    lists: dict[str, tuple[list[tuple[str, float]], list[tuple[str, float]]]] = {}
    for qid, text in ds.queries:
        ranking = lexical.rank(
            lexical.parse(text), want=RECALL_K, page_end=RECALL_K, allow=None, explain=False
        )
        lex = [(h.kbid, h.score) for h in ranking.hits[:RECALL_K]]
        vec = list(kb._vectors.search(text, limit=RECALL_K, allow=None))
        lists[qid] = (lex, vec)
    kbids = {k for lex, vec in lists.values() for k, _ in lex + vec}
    with kb._db.read() as conn:
        docids = {k: tuple(v) for k, v in q.docids_of(conn, list(kbids)).items()}

    def per_query(fuse: object) -> dict[str, float]:
        out = {}
        for qid, (lex, vec) in lists.items():
            fused = fuse(lex, vec)  # type: ignore[operator]
            ranked = to_beir_ids((docids.get(f.kbid, ()) for f in fused), known)
            out[qid] = ndcg_at_k(ranked, ds.qrels.get(qid, {}), NDCG_K)
        return out

    judged = [qid for qid, _ in ds.queries if qid in ds.qrels]
    grid = {f"rrf k={k}": per_query(lambda a, b, k=k: rrf(a, b, k=k)) for k in RRF_K}
    grid |= {f"linear w={w}": per_query(lambda a, b, w=w: linear(a, b, weight=w)) for w in LINEAR_W}
    grid["lexical only"] = per_query(lambda a, b: rrf(a, [], k=60))
    grid["vector only"] = per_query(lambda a, b: rrf([], b, k=60))
    full = {name: mean(s[qid] for qid in judged) for name, s in grid.items()}

    # Cross-validation of the RRF k: choose on one half, score on the other.
    rng = random.Random(13)
    rrf_names = [f"rrf k={k}" for k in RRF_K]
    held_out = []
    for _ in range(SPLITS):
        order = judged[:]
        rng.shuffle(order)
        halves = (order[: len(order) // 2], order[len(order) // 2 :])
        for tune, test in (halves, halves[::-1]):
            best = max(rrf_names, key=lambda n: mean(grid[n][x] for x in tune))
            held_out.append(mean(grid[best][x] for x in test))
    cv = mean(held_out)

    rows = [(name, round(v, 4)) for name, v in full.items()]
    print_table("hybrid fusion on the judged queries (nDCG@10)", ("setting", "nDCG@10"), rows)
    print(f"RRF k chosen on half the queries, scored on the other half: {cv:.4f}")
    write_result(
        "tune_fusion",
        {
            "dataset": {"path": str(args.dataset), "queries": len(judged)},
            "model": str(args.model),
            "ndcg@10": {name: round(v, 6) for name, v in full.items()},
            "rrf_k_cross_validated": {"splits": SPLITS * 2, "ndcg@10": round(cv, 6)},
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
