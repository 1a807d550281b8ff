"""Fit the confidence curves on SciFact (SPEC §4.3: confidence "must be calibrated on the
benchmark, so that it is comparable across queries").

Lexical: logistic regression of "hit is relevant" on (saturation, coverage) over the
top-10 hits of the 300 test queries. Vector: logistic regression on the cosine, when
``--model DIR`` is given. Prints the weights to paste into ``kbdb/search/confidence.py``
and ``kbdb/search/hybrid.py``, and the calibration table (predicted vs observed).

    python benches/calibrate_confidence.py [--model ../shared/models/all-MiniLM-L6-v2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

import kbdb
from kbdb.evaluation.beir import dataset_paths, load_beir
from kbdb.evaluation.run import learn_corpus

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "scifact"


def fit_logistic(x: np.ndarray, y: np.ndarray, steps: int = 4000, lr: float = 0.5) -> np.ndarray:
    """Plain gradient descent on the log loss; x gets a bias column."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        w -= lr * xb.T @ (p - y) / len(y)
    return w


def table(p: np.ndarray, y: np.ndarray) -> list[tuple[str, int, float, float]]:
    rows = []
    for lo in np.arange(0, 1, 0.1):
        m = (p >= lo) & (p < lo + 0.1)
        if m.any():
            rows.append(
                (f"{lo:.1f}-{lo + 0.1:.1f}", int(m.sum()), float(p[m].mean()), float(y[m].mean()))
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument(
        "--db", type=Path, default=None, help="reuse a knowledge base holding the corpus"
    )
    args = ap.parse_args()
    ds = load_beir(*dataset_paths(args.data))
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = str(args.db or tmp_dir)
        kb = kbdb.KnowledgeBase.init(tmp)
        if args.model:
            from kbdb.evaluation.run import override_config

            config = override_config(
                kb.config,
                {"embedding.model_path": str(args.model), "embedding.provider": "onnx"},
            )
            kb.close()
            kb = kbdb.KnowledgeBase.open(tmp, config=config)
        learn_corpus(kb, ds.corpus)
        searcher = kb.context.searcher()
        feats, labels, cos, cos_y = [], [], [], []
        for qid, text in ds.queries:
            rel = ds.qrels.get(qid, {})
            parsed = searcher.parse(text)
            ranking = searcher.rank(parsed, want=10, page_end=10, allow=None, explain=False)
            required = sum(1 for _, r in parsed.clauses if r) or len(parsed.clauses)
            for h in ranking.hits[:10]:
                covered = sum(1 for i, m in enumerate(h.matched) if m and parsed.clauses[i][1])
                sat = (h.score / h.boost) / h.bound if h.bound > 0 else 0.0
                docids = kb.recall(h.kbid).sections[0].docids
                feats.append((min(sat, 1.0), covered / required))
                labels.append(1.0 if any(rel.get(d, 0) > 0 for d in docids) else 0.0)
            if args.model:
                for kbid, c in kb.context.vectors.search(text, limit=10, allow=None):
                    docids = kb.recall(kbid).sections[0].docids
                    cos.append((c,))
                    cos_y.append(1.0 if any(rel.get(d, 0) > 0 for d in docids) else 0.0)
        x, y = np.array(feats), np.array(labels)
        w = fit_logistic(x, y)
        p = 1 / (1 + np.exp(-(w[0] + x @ w[1:])))
        out["lexical"] = {"W0": w[0], "W_SAT": w[1], "W_COV": w[2], "table": table(p, y)}
        if args.model:
            cx, cy = np.array(cos), np.array(cos_y)
            wc = fit_logistic(cx, cy, steps=20000, lr=2.0)
            pc = 1 / (1 + np.exp(-(wc[0] + cx @ wc[1:])))
            out["vector"] = {
                "COSINE_SLOPE": wc[1],
                "COSINE_MIDPOINT": -wc[0] / wc[1],
                "table": table(pc, cy),
            }
        kb.close()
    print(json.dumps(out, indent=2, default=float))


if __name__ == "__main__":
    main()
