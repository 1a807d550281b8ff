"""int8 or fp32 on every dev set: nDCG@10 of the default hybrid search (and of vector and
lexical, for reference) with the fp32 model and with the int8 one (``embedding.quantized``).

The rule (docs/embeddings.md, "int8 or fp32"): int8 may become the default only if the
default hybrid nDCG@10 drops by at most ``MAX_LOSS`` (0.005) on EVERY dev set, not on
SciFact alone. The sets are those of ``benches/tune_fusion.py`` (SciFact, Cranfield, MEDLINE,
LISA, TIME, LoCoMo and the paraphrase set, test qrels).

Each set and model has one persistent knowledge base, ``CACHE/fp32/<set>`` and
``CACHE/int8/<set>`` (their vectors differ), learned and embedded by
``kbdb.evaluation.run.run_eval``, what ``kbdb eval --db`` does (``learn_corpus``, then a
vector rebuild when the index is stale), with ``embedding.provider = onnx``, the local
model and ``embedding.threads`` (1 by default); a re-run finds them learned and only embeds
the queries. Every mode is one ``run_eval`` call on that knowledge base, with the shipped
search defaults (hybrid: the default fusion).

An fp32 knowledge base that is missing is first copied from ``--seed`` (default
``/tmp/kbdb-calib-cache/<set>``, which ``tune_fusion.py`` and ``calibrate_confidence.py``
learn with the same model; the seed is only read) and verified before use:
``KnowledgeBase.check()`` must pass, the vector index must be the fp32 model's and
current, and ``SAMPLE`` of its cached vectors, re-embedded now in one call by the current
code, must have a cosine of at least ``SAMPLE_MIN_COSINE`` to the stored ones (fp32 vectors
do not move with the batching). A copy that fails is deleted and learned from scratch.
After the runs, the change-log head and the number of cached vectors tell whether
``run_eval`` had to learn or embed anything in a reused knowledge base (it must not: the
current code learns the same sections).

Reported per set: nDCG@10 (and Recall@100) of lexical, vector and hybrid, fp32 and int8,
the int8 - fp32 deltas, whether the hybrid loss is within ``MAX_LOSS``, the wall times of
learning and embedding and of the searches; then the rule's verdict over all sets.

    python benches/bench_int8_sets.py [--model DIR] [--cache DIR] [--seed DIR]
        [--sets scifact,cranfield,...] [--threads 1]

Writes ``benches/results/int8_sets.json`` (rewritten after each set, ``complete`` false
until the last one is done).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, sha256, write_result  # noqa: E402
from kbdb.evaluation.run import run_eval  # noqa: E402
from tune_fusion import DEV_SETS, MODEL  # noqa: E402

MAX_LOSS = 0.005  # hybrid nDCG@10 int8 may lose on a set and still be the default
MODES = ("lexical", "vector", "hybrid")
ARMS = ("fp32", "int8")
CACHE = Path("/tmp/kbdb-int8-sets-cache")
SEED = Path("/tmp/kbdb-calib-cache")
SAMPLE = 64  # cached fp32 vectors re-embedded to verify a seeded knowledge base
SAMPLE_MIN_COSINE = 0.99999
SPLIT = "test"
RESULT = "int8_sets"


def settings(model: Path, arm: str, threads: int) -> dict[str, str]:
    return {
        "embedding.provider": "onnx",
        "embedding.model_path": str(model),
        "embedding.threads": str(threads),
        "embedding.quantized": str(arm == "int8").lower(),
    }


def db_state(root: Path) -> dict[str, Any]:
    """Change-log head, live sections and cached vectors per model, read-only."""
    path = root / ".kbdb" / "kb.sqlite"
    if not path.is_file():
        return {"head": 0, "live": 0, "vectors": {}}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        head = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changelog").fetchone()[0]
        live = conn.execute("SELECT COUNT(*) FROM sections WHERE retired_at IS NULL").fetchone()[0]
        vectors = dict(conn.execute("SELECT model, COUNT(*) FROM embeddings GROUP BY model"))
    finally:
        conn.close()
    return {"head": int(head), "live": int(live), "vectors": vectors}


def verify_seeded(root: Path, model: Path, threads: int) -> dict[str, Any]:
    """Check a copied fp32 knowledge base: integrity, a current fp32 vector index, and a
    sample of its cached vectors against the current code's (see the module docstring)."""
    import numpy as np

    from kbdb import KnowledgeBase
    from kbdb.config import load_config
    from kbdb.evaluation.run import override_config
    from kbdb.index.vectors import embedding_text, text_sha
    from kbdb.store import queries as q

    config = override_config(
        load_config(root / ".kbdb" / "worker.toml"), settings(model, "fp32", threads)
    )
    kb = KnowledgeBase.open(root, config=config)
    try:
        report = kb.check()
        stats = kb.stats()
        vectors = kb.context.vectors
        name = vectors.model_name
        index = vectors.index()
        texts: list[tuple[str, str]] = []
        with kb.context.db.read() as conn:
            for batch in q.iter_live_index_rows(conn):
                for _, heading, content, type_, title, description, *_ in batch:
                    text = embedding_text(heading, content, type_, title, description)
                    if text is not None:
                        texts.append((text_sha(text), text))
            step = max(1, len(texts) // SAMPLE)
            sample = texts[::step][:SAMPLE]
            cached = q.cached_embeddings(conn, name, [s for s, _ in sample])
        fresh = vectors.provider.embed([t for _, t in sample])
        cosines = []
        for (sha, _), vec in zip(sample, fresh, strict=True):
            old = np.frombuffer(cached[sha], dtype=np.float32) if sha in cached else None
            cosines.append(float(np.dot(old, vec)) if old is not None else float("nan"))
        missing = sum(1 for s, _ in sample if s not in cached)
    finally:
        kb.close()
    cos_min = min(cosines) if cosines else float("nan")
    out = {
        "check_ok": report.ok,
        "check_errors": [str(e) for e in report.errors],
        "check_warnings": [str(w) for w in report.warnings],
        "vector_index_model": None if index is None else index.model_name,
        "vector_index_stale": stats.vector_index_stale,
        "sample": len(sample),
        "sample_missing_from_cache": missing,
        "sample_cosine_min": cos_min,
        "sample_cosine_mean": float(np.nanmean(cosines)) if cosines else float("nan"),
    }
    out["ok"] = bool(
        report.ok
        and not stats.vector_index_stale
        and index is not None
        and index.model_name == name
        and missing == 0
        and cos_min >= SAMPLE_MIN_COSINE
    )
    return out


def prepare_fp32(name: str, root: Path, seed: Path, model: Path, threads: int) -> dict[str, Any]:
    """Seed ``root`` from ``seed/<name>`` when it is missing, and verify the copy."""
    info: dict[str, Any] = {"seeded_from": None}
    src = seed / name
    if not root.exists() and (src / ".kbdb" / "kb.sqlite").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, root)
        info["seeded_from"] = str(src)
        check = verify_seeded(root, model, threads)
        info["verification"] = check
        print(
            f"{name} fp32: copied from {src}; check {'ok' if check['check_ok'] else 'FAILED'},"
            f" index {check['vector_index_model']} stale={check['vector_index_stale']},"
            f" {check['sample']} vectors re-embedded: cosine min {check['sample_cosine_min']:.7f}"
            f" ({'ok' if check['ok'] else 'FAILED: learning it from scratch'})",
            flush=True,
        )
        if not check["ok"]:
            shutil.rmtree(root)
            info["seeded_from"] = None
            info["rebuilt_after_failed_verification"] = True
    return info


def per_query_file(root: Path, mode: str) -> Path:
    return root.parent / f"{root.name}.{mode}.per-query.jsonl"


def read_per_query(path: Path) -> dict[str, float]:
    with path.open(encoding="utf-8") as f:
        return {r["query_id"]: r["ndcg@10"] for r in map(json.loads, f)}


def paired(fp32: dict[str, float], int8: dict[str, float]) -> dict[str, Any]:
    """Per-query nDCG@10 changes, int8 - fp32: how many queries moved each way, the largest
    single-query share of the mean, and the paired standard error of the mean delta."""
    deltas = [int8[q] - fp32[q] for q in fp32]
    n = len(deltas)
    mean = sum(deltas) / n if n else 0.0
    var = sum((d - mean) ** 2 for d in deltas) / (n - 1) if n > 1 else 0.0
    worst = min(fp32, key=lambda q: int8[q] - fp32[q]) if fp32 else None
    return {
        "queries": n,
        "improved": sum(d > 1e-9 for d in deltas),
        "worsened": sum(d < -1e-9 for d in deltas),
        "paired_se": math.sqrt(var / n) if n else 0.0,
        "worst_query": worst,
        "worst_query_share": (int8[worst] - fp32[worst]) / n if worst is not None else 0.0,
    }


def run_arm(name: str, arm: str, root: Path, model: Path, threads: int) -> dict[str, Any]:
    """The three modes through ``run_eval`` on the arm's knowledge base, timed; each
    query's metrics go to ``<root>.<mode>.per-query.jsonl`` beside it."""
    folder = DEV_SETS[name]
    root.parent.mkdir(parents=True, exist_ok=True)
    before = db_state(root)
    out: dict[str, Any] = {"db": str(root), "modes": {}}
    t_arm = time.perf_counter()
    for mode in MODES:
        t0 = time.perf_counter()
        report = run_eval(
            folder / "corpus.jsonl",
            folder / "queries.jsonl",
            folder / "qrels",
            mode=mode,
            db=root,
            settings=settings(model, arm, threads),
            split=SPLIT,
            per_query=per_query_file(root, mode),
        )
        wall = time.perf_counter() - t0
        out["modes"][mode] = {
            "ndcg@10": report.ndcg_at_10,
            "recall@10": report.recall_at_10,
            "recall@100": report.recall_at_100,
            "mrr@10": report.mrr_at_10,
            "queries": report.queries,
            "learn_and_embed_s": round(report.index_s, 3),
            "search_s": round(report.queries / report.qps, 3) if report.qps else None,
            "wall_s": round(wall, 3),
        }
        out.setdefault("checksums", report.checksums)
        out.setdefault("search", report.params.get("search"))
        out.setdefault("documents", report.documents)
        out.setdefault("sections", report.sections)
        print(
            f"{name} {arm} {mode}: nDCG@10 {report.ndcg_at_10:.4f}"
            f" (learn+embed {report.index_s:.1f} s, wall {wall:.1f} s)",
            flush=True,
        )
    out["wall_s"] = round(time.perf_counter() - t_arm, 3)
    after = db_state(root)
    out["before"] = before
    out["after"] = after
    vec_name = "all-MiniLM-L6-v2" + ("+int8" if arm == "int8" else "")
    out["sections_learned"] = after["head"] - before["head"]
    out["vectors_embedded"] = after["vectors"].get(vec_name, 0) - before["vectors"].get(vec_name, 0)
    return out


def int8_model_info(model: Path) -> dict[str, Any]:
    """The int8 file ``quantized = true`` loads (built on first use, cached), and its recipe."""
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding import make_provider
    from kbdb.embedding.local import OnnxEmbeddingProvider
    from kbdb.embedding.quantize import RECIPE

    cfg = EmbeddingConfig(provider="onnx", model_path=str(model), threads=1, quantized=True)
    provider = make_provider(cfg, kbdir=None)
    assert isinstance(provider, OnnxEmbeddingProvider)
    files = provider.load()
    return {
        "recipe": RECIPE,
        "path": str(files.model),
        "sha256": sha256(files.model),
        "bytes": files.model.stat().st_size,
        "batch_size": provider.batch_size,
        "batch_tokens": provider.batch_tokens,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=MODEL, help="folder with the fp32 model.onnx")
    ap.add_argument("--cache", type=Path, default=CACHE, help="knowledge bases, fp32/ and int8/")
    ap.add_argument("--seed", type=Path, default=SEED, help="fp32 knowledge bases to copy (read)")
    ap.add_argument("--sets", default=",".join(DEV_SETS), help="comma-separated dev sets")
    ap.add_argument("--threads", type=int, default=1, help="ONNX intra-op threads")
    args = ap.parse_args()
    names = [s for s in args.sets.split(",") if s]
    unknown = [s for s in names if s not in DEV_SETS]
    if unknown:
        ap.error(f"unknown set(s) {unknown}; known: {', '.join(DEV_SETS)}")
    model = args.model.resolve()
    t_all = time.perf_counter()
    int8 = int8_model_info(model)
    print(f"int8 model: {int8['path']} ({int8['recipe']})", flush=True)
    common = {
        "rule": f"int8 becomes the default only if hybrid nDCG@10 (int8 - fp32) >= -{MAX_LOSS}"
        " on every dev set",
        "max_loss": MAX_LOSS,
        "model": str(model),
        "model_sha256": sha256(model / "model.onnx"),
        "tokenizer_sha256": sha256(model / "tokenizer.json"),
        "int8_model": int8,
        "threads": args.threads,
        "split": SPLIT,
        "cache": str(args.cache),
        "seed": str(args.seed),
    }
    results: dict[str, Any] = {}
    for name in names:
        t0 = time.perf_counter()
        roots = {arm: args.cache / arm / name for arm in ARMS}
        prep = prepare_fp32(name, roots["fp32"], args.seed, model, args.threads)
        entry: dict[str, Any] = {"path": str(DEV_SETS[name]), "fp32_kb": prep}
        for arm in ARMS:
            entry[arm] = run_arm(name, arm, roots[arm], model, args.threads)
        for mode in MODES:
            entry[f"{mode}_delta"] = (
                entry["int8"]["modes"][mode]["ndcg@10"] - entry["fp32"]["modes"][mode]["ndcg@10"]
            )
            entry[f"{mode}_per_query"] = paired(
                read_per_query(per_query_file(roots["fp32"], mode)),
                read_per_query(per_query_file(roots["int8"], mode)),
            )
        entry["hybrid_within_rule"] = entry["hybrid_delta"] >= -MAX_LOSS
        entry["wall_s"] = round(time.perf_counter() - t0, 3)
        results[name] = entry
        print(
            f"{name}: hybrid {entry['fp32']['modes']['hybrid']['ndcg@10']:.4f} -> "
            f"{entry['int8']['modes']['hybrid']['ndcg@10']:.4f} "
            f"(delta {entry['hybrid_delta']:+.4f}, "
            f"{'within' if entry['hybrid_within_rule'] else 'OUTSIDE'} the rule);"
            f" set done in {entry['wall_s']:.0f} s",
            flush=True,
        )
        write_result(RESULT, {**common, "complete": False, "sets": results})

    def nd(n: str, arm: str, mode: str) -> float:
        return float(results[n][arm]["modes"][mode]["ndcg@10"])

    rows = [
        (
            n,
            f"{nd(n, 'fp32', 'lexical'):.4f}",
            f"{nd(n, 'int8', 'lexical'):.4f}",
            f"{nd(n, 'fp32', 'vector'):.4f}",
            f"{nd(n, 'int8', 'vector'):.4f}",
            f"{results[n]['vector_delta']:+.4f}",
            f"{nd(n, 'fp32', 'hybrid'):.4f}",
            f"{nd(n, 'int8', 'hybrid'):.4f}",
            f"{results[n]['hybrid_delta']:+.4f}",
            "yes" if results[n]["hybrid_within_rule"] else "NO",
        )
        for n in names
    ]
    print_table(
        f"nDCG@10, fp32 vs int8 (quantized = true), {SPLIT} qrels, {args.threads} ONNX thread(s)",
        (
            "set",
            "lexical fp32",
            "lexical int8",
            "vector fp32",
            "vector int8",
            "Δ vector",
            "hybrid fp32",
            "hybrid int8",
            "Δ hybrid",
            f"loss ≤ {MAX_LOSS}",
        ),
        rows,
    )
    print_table(
        "wall times (s): learning and embedding (the three runs' index_s), searches, whole arm",
        (
            "set",
            "fp32 learn+embed",
            "int8 learn+embed",
            "fp32 arm",
            "int8 arm",
            "vectors embedded fp32 / int8",
        ),
        [
            (
                n,
                f"{sum(m['learn_and_embed_s'] for m in results[n]['fp32']['modes'].values()):.1f}",
                f"{sum(m['learn_and_embed_s'] for m in results[n]['int8']['modes'].values()):.1f}",
                f"{results[n]['fp32']['wall_s']:.1f}",
                f"{results[n]['int8']['wall_s']:.1f}",
                f"{results[n]['fp32']['vectors_embedded']}"
                f" / {results[n]['int8']['vectors_embedded']}",
            )
            for n in names
        ],
    )
    print_table(
        "hybrid, per query (int8 - fp32 nDCG@10): queries moved, paired standard error of"
        " the mean delta, the single query that moved it most",
        ("set", "queries", "improved", "worsened", "Δ hybrid", "paired SE", "worst query (share)"),
        [
            (
                n,
                results[n]["hybrid_per_query"]["queries"],
                results[n]["hybrid_per_query"]["improved"],
                results[n]["hybrid_per_query"]["worsened"],
                f"{results[n]['hybrid_delta']:+.4f}",
                f"{results[n]['hybrid_per_query']['paired_se']:.4f}",
                f"{results[n]['hybrid_per_query']['worst_query']}"
                f" ({results[n]['hybrid_per_query']['worst_query_share']:+.4f})",
            )
            for n in names
        ],
    )
    failing = [n for n in names if not results[n]["hybrid_within_rule"]]
    worst = min(names, key=lambda n: results[n]["hybrid_delta"])
    passes = not failing and set(names) >= set(DEV_SETS)
    verdict = (
        "int8 PASSES the rule on every dev set"
        if passes
        else f"int8 FAILS the rule on {', '.join(failing)}"
        if failing
        else f"int8 holds on the {len(names)} set(s) run, but not every dev set was run"
    )
    print(
        f"\nverdict: {verdict} (worst hybrid delta {results[worst]['hybrid_delta']:+.4f}"
        f" on {worst}; limit -{MAX_LOSS}); total {time.perf_counter() - t_all:.0f} s",
        flush=True,
    )
    path = write_result(
        RESULT,
        {
            **common,
            "complete": True,
            "sets": results,
            "verdict": {
                "int8_may_be_default": passes,
                "failing_sets": failing,
                "worst_set": worst,
                "worst_hybrid_delta": results[worst]["hybrid_delta"],
                "all_dev_sets_run": set(names) >= set(DEV_SETS),
                "text": verdict,
            },
            "total_s": round(time.perf_counter() - t_all, 3),
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
