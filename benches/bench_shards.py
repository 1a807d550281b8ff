"""Sharded search against one knowledge base, in the same run (BENCHMARKS.md §2).

SciFact's corpus is learned into one knowledge base and split into 4 shards
(``kbdb shard create``). The 300 test queries run once each, one at a time, top 10,
lexical (and vector and hybrid with ``--model``), against:

- **one**: ``KnowledgeBase.search``;
- **4 shards, in process**: ``ShardedKnowledgeBase`` with its shards in this process:
  the statistics phase, each shard's engine call, the merge, the links and rows of the
  merged page from their shards;
- **4 shards, Ray**: the same coordinator with each shard a Ray actor on a local Ray
  cluster (``ray.init(num_cpus=2)``): every phase is one round of remote calls.

Rankings are compared query by query (kbids, and scores to 1e-6). The fan-out overhead is
the p50 difference to one knowledge base. Queries run in an order shuffled per round, all
systems interleaved, after one warm-up pass each (the shards' files and each process's
caches warm, as a serving collection is).

    python benches/bench_shards.py [--rounds 3] [--model DIR] [--no-ray]

Goal: the 4-shard p50 at most 3x one knowledge base's, with equal rankings.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import single_thread  # noqa: E402

single_thread()

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from common import SHARED, print_table, write_result  # noqa: E402

SHARDS = 4
GOAL = 3.0


def build(root: Path, model: Path | None) -> tuple[Path, Path]:
    import kbdb
    from kbdb.config import set_value
    from kbdb.evaluation.beir import dataset_paths, load_beir
    from kbdb.evaluation.run import learn_corpus
    from kbdb.shard import layout

    ds = load_beir(*dataset_paths(SHARED / "datasets" / "scifact"))
    kb = kbdb.KnowledgeBase.init(root / "one")
    if model is not None:
        set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
        set_value(kb.path / "worker.toml", "embedding.model_path", str(model))
        kb.close()
        kb = kbdb.KnowledgeBase.open(root / "one")
    learn_corpus(kb, ds.corpus)
    kbdir = kb.path
    kb.close()
    layout.create(kbdir, root / "coll", SHARDS)
    return root / "one", root / "coll"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", type=Path, help="an all-MiniLM-L6-v2 folder: vector, hybrid")
    ap.add_argument("--no-ray", action="store_true", help="leave out the Ray row")
    args = ap.parse_args()

    import kbdb
    from kbdb.evaluation.beir import dataset_paths, load_beir
    from kbdb.shard.coordinator import ShardedKnowledgeBase

    queries = [t for _, t in load_beir(*dataset_paths(SHARED / "datasets" / "scifact")).queries]
    tmp = tempfile.TemporaryDirectory(prefix="bench-shards-")
    t0 = time.perf_counter()
    one_path, coll_path = build(Path(tmp.name), args.model)
    print(f"built one knowledge base and {SHARDS} shards in {time.perf_counter() - t0:.1f} s")

    systems: dict[str, Any] = {
        "one": kbdb.KnowledgeBase.open(one_path),
        f"{SHARDS} shards, in process": ShardedKnowledgeBase.open(coll_path),
    }
    if not args.no_ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="kbdb")
        systems[f"{SHARDS} shards, Ray"] = ShardedKnowledgeBase.open(coll_path, ray="local")
    modes = ["lexical"] + (["vector", "hybrid"] if args.model else [])
    lat: dict[tuple[str, str], list[float]] = {(s, m): [] for s in systems for m in modes}
    mismatches: dict[tuple[str, str], int] = {(s, m): 0 for s in systems for m in modes}
    worst: dict[tuple[str, str], float] = {(s, m): 0.0 for s in systems for m in modes}
    rng = random.Random(7)
    for mode in modes:
        for kb in systems.values():  # warm-up pass
            for q in queries:
                kb.search(q, mode=mode)
        for r in range(args.rounds):
            order = list(queries)
            rng.shuffle(order)
            for q in order:
                results = {}
                names = list(systems)
                rng.shuffle(names)
                for name in names:
                    s = time.perf_counter()
                    results[name] = systems[name].search(q, mode=mode)
                    lat[(name, mode)].append(time.perf_counter() - s)
                ref = results["one"]
                for name, res in results.items():
                    if [i.kbid for i in res.items] != [i.kbid for i in ref.items]:
                        mismatches[(name, mode)] += 1
                    for a, b in zip(ref.items, res.items, strict=False):
                        worst[(name, mode)] = max(worst[(name, mode)], abs(a.score - b.score))
            print(f"{mode}: round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    out: dict[str, Any] = {}
    for mode in modes:
        base = statistics.median(lat[("one", mode)])
        for name in systems:
            p50 = statistics.median(lat[(name, mode)])
            p95 = statistics.quantiles(lat[(name, mode)], n=20)[18]
            rows.append(
                [
                    f"{mode}: {name}",
                    p50 * 1e3,
                    p95 * 1e3,
                    p50 / base,
                    (p50 - base) * 1e3,
                    f"{mismatches[(name, mode)]} of {len(queries) * args.rounds}",
                    worst[(name, mode)],
                ]
            )
            out[f"{mode}/{name}"] = {
                "p50_ms": p50 * 1e3,
                "p95_ms": p95 * 1e3,
                "ratio_to_one": p50 / base,
                "fanout_ms": (p50 - base) * 1e3,
                "ranking_mismatches": mismatches[(name, mode)],
                "max_score_diff": worst[(name, mode)],
            }
    print_table(
        f"SciFact, {len(queries)} queries x {args.rounds} rounds, top 10",
        ["system", "p50 ms", "p95 ms", "x one", "fan-out ms", "rankings differ", "max |Δscore|"],
        rows,
    )
    for mode in modes:
        key = f"{mode}/{SHARDS} shards, in process"
        met = out[key]["ratio_to_one"] <= GOAL and out[key]["ranking_mismatches"] == 0
        print(
            f"goal {mode} (in process): p50 <= {GOAL}x one and equal rankings: "
            f"{'met' if met else 'NOT met'}"
        )
    ray_name = f"{SHARDS} shards, Ray"
    if ray_name in systems:
        # The bound of the Ray row: one round of remote calls to every shard that do
        # nothing but read the snapshot's statistics.
        fan = systems[ray_name]._fanout  # the coordinator's fan-out, timed bare
        trips = []
        for _ in range(200):
            s = time.perf_counter()
            fan.all("term_stats", [])
            trips.append(time.perf_counter() - s)
        rt = statistics.median(trips) * 1e3
        out["ray_round_trip_ms"] = rt
        print(f"Ray: one round of {SHARDS} remote calls doing nothing: p50 {rt:.2f} ms")
    for kb in systems.values():
        kb.close()
    path = write_result("shards", {"goal": f"p50 <= {GOAL}x one, equal rankings", **out})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
