"""Distributed embedding on Ray (SPEC §17, docs/scale.md): does a second embedding actor
double the rate, and is a Ray learn on one machine as fast as a local one?

One run, one local Ray cluster (``ray.init(num_cpus=CORES)``), the same tree of
``--files`` tldr pages (one section each: a few thousand sections), the fp32
all-MiniLM-L6-v2 model, and a fresh knowledge base per row:

- **embedding only** (``rebuild --reembed --ray``: ``pipeline.embed_sections``) with one and
  with two single-threaded actors: texts/s, the speed-up and the scaling efficiency
  (speed-up / actors). Goals: >= 1.7x, >= 85 %.
- **learn**: ``learn_path(ray=...)`` with two single-threaded actors against a local
  ``learn_path`` whose ONNX session uses both cores (``embedding.threads = 2``).
  Goal: the Ray learn no slower.
- **per-block overhead**: the model time an actor spent per block (timed inside the actor)
  against the wall time per block seen by the driver (wall x actors / blocks); the
  difference is what Ray costs a block (scheduling, serialization, the driver's share).

Cluster start-up is not in any row (it is reported on its own); actor start-up (process
and model load) is, as a user pays it on every run.

    python benches/bench_ray_embed.py [--files 3000] [--cores 2]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kbdb  # noqa: E402
from common import CORPORA, SHARED, print_table, ratio, write_result  # noqa: E402
from kbdb.config import set_value  # noqa: E402
from kbdb.distributed import RunStats, learn_paths, pipeline  # noqa: E402

MODEL = SHARED / "models" / "all-MiniLM-L6-v2"


def make_tree(root: Path, files: int) -> Path:
    pages = sorted((CORPORA / "tldr" / "pages").rglob("*.md"))[:files]
    for p in pages:
        dest = root / p.relative_to(CORPORA / "tldr" / "pages")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest)
    return root


def new_kb(path: Path, threads: int) -> kbdb.KnowledgeBase:
    kb = kbdb.KnowledgeBase.init(path)
    cfg = kb.path / "worker.toml"
    set_value(cfg, "embedding.provider", "onnx")
    set_value(cfg, "embedding.model_path", str(MODEL))
    set_value(cfg, "embedding.threads", str(threads))
    kb.close()
    return kbdb.KnowledgeBase.open(path)


def block_row(name: str, stats: RunStats, actors: int, wall: float) -> dict[str, Any]:
    model_s = sum(stats.embed_seconds)
    per_block_model = model_s / stats.blocks if stats.blocks else 0.0
    per_block_wall = wall * actors / stats.blocks if stats.blocks else 0.0
    return {
        "run": name,
        "actors": actors,
        "blocks": stats.blocks,
        "texts": stats.texts,
        "wall_s": wall,
        "texts_per_s": stats.texts / wall if wall else 0.0,
        "model_s_per_block": per_block_model,
        "wall_s_per_block_per_actor": per_block_wall,
        "overhead_s_per_block": per_block_wall - per_block_model,
        "actor_busy": model_s / (wall * actors) if wall else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--cores", type=int, default=2)
    args = ap.parse_args()

    import ray

    work = Path(tempfile.mkdtemp(prefix="kbdb-bench-ray-"))
    try:
        tree = make_tree(work / "tree", args.files)
        t0 = time.perf_counter()
        ray.init(num_cpus=args.cores, include_dashboard=False, logging_level=logging.ERROR)
        cluster_start = time.perf_counter() - t0

        # Learn: local on both cores, then on Ray with one actor per core.
        local = new_kb(work / "local", threads=args.cores)
        t0 = time.perf_counter()
        local_report = local.learn_path(tree)
        local_wall = time.perf_counter() - t0
        sections = local.stats().live_sections
        local.close()

        learned = new_kb(work / "ray", threads=1)
        ray_learn = RunStats()
        t0 = time.perf_counter()
        ray_report = learn_paths(
            learned.context,
            learned._learner(),  # noqa: SLF001  (what learn_path(ray=...) passes)
            [tree],
            tags=(),
            docid=None,
            progress=None,
            notable_only=True,
            address="local",
            actors=args.cores,
            stats=ray_learn,
        )
        ray_learn_wall = time.perf_counter() - t0
        assert ray_report.sections_added == local_report.sections_added

        # Embedding only: the same texts, one actor, then one per core.
        embeds = []
        for actors in (1, args.cores):
            stats = RunStats()
            t0 = time.perf_counter()
            done = pipeline.embed_sections(
                learned.context,
                reembed=True,
                address="local",
                progress=None,
                actors=actors,
                stats=stats,
            )
            wall = time.perf_counter() - t0
            assert done == stats.texts
            embeds.append(block_row(f"embed, {actors} actor(s)", stats, actors, wall))
        learned.close()
        ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    one, many = embeds
    speedup = ratio(many["texts_per_s"], one["texts_per_s"])
    learn_row = block_row(f"learn, {args.cores} actors", ray_learn, args.cores, ray_learn_wall)
    local_rate = sections / local_wall
    ray_rate = sections / ray_learn_wall
    result = {
        "corpus": f"tldr pages, first {args.files} files (sorted paths)",
        "sections": sections,
        "cores": args.cores,
        "cluster_start_s": cluster_start,
        "embed": embeds,
        "embed_speedup": speedup,
        "scaling_efficiency": speedup / args.cores if speedup else None,
        "learn_local_both_cores": {"wall_s": local_wall, "sections_per_s": local_rate},
        "learn_ray": {**learn_row, "sections_per_s": ray_rate},
        "learn_ray_vs_local": ratio(ray_rate, local_rate),
        "goals": {"speedup": 1.7, "scaling_efficiency": 0.85, "learn_ray_vs_local": 1.0},
    }
    write_result("ray_embed", result)
    print_table(
        f"Ray embedding, {sections} sections, {args.cores} cores (same run)",
        [
            "run",
            "texts/s",
            "wall s",
            "blocks",
            "model s/block",
            "wall s/block/actor",
            "overhead s/block",
            "actors busy",
        ],
        [
            [
                r["run"],
                r["texts_per_s"],
                r["wall_s"],
                r["blocks"],
                r["model_s_per_block"],
                r["wall_s_per_block_per_actor"],
                r["overhead_s_per_block"],
                r["actor_busy"],
            ]
            for r in [*embeds, learn_row]
        ],
    )
    print_table(
        "Ratios",
        ["measure", "value", "goal"],
        [
            [f"embed speed-up, {args.cores} actors vs 1", speedup, ">= 1.7"],
            ["scaling efficiency", result["scaling_efficiency"], ">= 0.85"],
            [
                "learn: Ray (1 thread x actors) vs local (threads = cores), sections/s",
                result["learn_ray_vs_local"],
                ">= 1.0",
            ],
            ["local learn sections/s", local_rate, ""],
            ["Ray learn sections/s", ray_rate, ""],
            ["cluster start s (not in the rows)", cluster_start, ""],
        ],
    )


if __name__ == "__main__":
    main()
