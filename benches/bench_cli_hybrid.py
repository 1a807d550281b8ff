"""A cold ``kbdb search --mode hybrid`` against a cold lexical one, in the same run.

Goal: at p50, a hybrid ``kbdb search`` from the command line costs at most 150 ms more
wall time than a lexical one.

The knowledge base is ``../shared/corpora/docker-cli`` learned with the ONNX provider
(``all-MiniLM-L6-v2`` from ``../shared/models``), built once in a temporary folder. Each
round runs every command once as a fresh process, in a shuffled order, with a query drawn
from ``QUERIES`` (questions written for this benchmark, never used to tune anything):

- ``lexical``: ``kbdb --db KB --json search QUERY``;
- ``hybrid``: the same with ``--mode hybrid``; the query is embedded by the warm
  embedding daemon (``embedding.daemon = true``, the default);
- ``hybrid in-process``: the same with ``KBDB_EMBED_DAEMON=0``: the process loads the
  model itself, as every hybrid search did before the daemon;
- ``hybrid before`` (with ``--baseline DIR``): the kbdb in ``DIR`` (an older checkout's
  ``python/`` folder), in-process.

The first call, which finds no daemon and starts one, is measured on its own
(``--first-calls`` times, each after stopping every daemon, next to a lexical search).

A second part shows where a cold in-process hybrid search spends its time, each step in a
fresh process (``--session-rounds`` rounds, variants interleaved): importing numpy, ONNX
Runtime and tokenizers; loading ``tokenizer.json``; creating the ONNX Runtime session (the
default ``ORT_ENABLE_ALL`` from ``model.onnx``, and ``ORT_DISABLE_ALL`` from a saved
pre-optimized model, ``SessionOptions.optimized_model_filepath``, at the extended and the
full level); the first and a second inference; opening ``vectors.idx`` and one scan. The
saved models are checked against the default session's vector.

The daemons of the run live in a private temporary folder (``KBDB_RUNTIME_DIR``) and are
stopped at the end. Results: ``benches/results/cli_hybrid.json``.

    python benches/bench_cli_hybrid.py [--rounds 30] [--first-calls 5] [--session-rounds 7]
                                       [--baseline OLD_CHECKOUT/python] [--kb DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, SHARED, print_table, write_result  # noqa: E402

GOAL_MS = 150
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "python"
MODEL = SHARED / "models" / "all-MiniLM-L6-v2"
QUERIES = (
    "how do I see why my container keeps restarting",
    "copy a file from the host into a running container",
    "limit how much memory a container can use",
    "remove all stopped containers and dangling images",
    "log in to a private registry",
    "show the environment variables of a container",
    "build an image without using the cache",
    "expose a port to the host machine",
    "follow the logs of a service",
    "rename an existing container",
    "share a folder between two containers",
    "check disk space used by docker",
    "run a command inside a container as root",
    "tag an image before pushing it",
    "create a network so containers can talk to each other",
    "pause and resume a container",
    "inspect the layers of an image",
    "set a restart policy",
    "export a container filesystem to a tar archive",
    "switch between docker contexts",
    "watch live resource usage of containers",
    "scale a swarm service to five replicas",
    "store a password as a secret",
    "update the cpu shares of a running container",
    "list images by size",
    "attach my terminal to a running container",
    "wait until a container stops and print its exit code",
    "see port mappings of a container",
    "load an image from a tar file",
    "enable experimental features on the client",
    "drain a node before maintenance",
    "which plugins are installed",
    "kill a container with a specific signal",
    "search docker hub for an image",
    "show the history of an image",
    "change the default logging driver",
    "create a volume with a specific driver",
    "view events from the daemon",
    "compare changes made to a container's filesystem",
    "sign an image with content trust",
)


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KBDB_DB")}
    env.update(NO_COLOR="1", COLUMNS="120", **extra)
    return env


def kbdb_argv(kb: Path, query: str, mode: str | None) -> list[str]:
    argv = [sys.executable, "-m", "kbdb.cli", "--db", str(kb), "--json", "search", query]
    return argv + (["--mode", mode] if mode else [])


def run_timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall milliseconds of one fresh process, and its stdout."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{argv}: {proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def stats(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    n = len(ordered)

    def pct(p: float) -> float:  # nearest rank
        return ordered[min(n - 1, max(0, round(p / 100 * n + 0.5) - 1))]

    return {
        "p50": statistics.median(ordered),
        "p95": pct(95),
        "min": ordered[0],
        "max": ordered[-1],
        "runs": n,
    }


def build_kb(root: Path, model: Path, corpus: Path) -> dict[str, Any]:
    """``root/.kbdb`` with ``corpus`` learned by the ONNX provider."""
    env = child_env(PYTHONPATH=str(SRC), KBDB_EMBED_DAEMON="0")
    kbdb = [sys.executable, "-m", "kbdb.cli", "--db", str(root)]
    t0 = time.perf_counter()
    for args in (
        ["init"],
        ["config", "set", "embedding.provider", "onnx"],
        ["config", "set", "embedding.model_path", str(model)],
        ["-q", "learn", str(corpus)],
    ):
        subprocess.run(kbdb + args, check=True, capture_output=True, env=env)
    stats_ = json.loads(
        subprocess.run(
            kbdb + ["--json", "stats"], check=True, capture_output=True, text=True, env=env
        ).stdout
    )
    return {
        "path": str(root),
        "learn_s": round(time.perf_counter() - t0, 1),
        "live_sections": stats_.get("live_sections"),
        "documents": stats_.get("documents"),
    }


def stop_daemons(rundir: Path) -> None:
    from kbdb.embedding.daemon import reap

    reap(rundir)


def cli_rounds(
    kb: Path, rundir: Path, rounds: int, seed: int, baseline: Path | None
) -> dict[str, Any]:
    """Every system once per round, shuffled; round -1 (untimed) warms the page cache,
    writes the byte code and starts the daemon."""
    common = {"KBDB_RUNTIME_DIR": str(rundir)}
    systems: dict[str, tuple[str | None, dict[str, str]]] = {
        "lexical": (None, child_env(PYTHONPATH=str(SRC), **common)),
        "hybrid": ("hybrid", child_env(PYTHONPATH=str(SRC), **common)),
        "hybrid in-process": (
            "hybrid",
            child_env(PYTHONPATH=str(SRC), KBDB_EMBED_DAEMON="0", **common),
        ),
    }
    if baseline is not None:
        systems["hybrid before"] = ("hybrid", child_env(PYTHONPATH=str(baseline), **common))
    rng = random.Random(seed)
    queries = list(QUERIES)
    rng.shuffle(queries)
    wall: dict[str, list[float]] = defaultdict(list)
    paired: dict[str, list[float]] = defaultdict(list)
    for r in range(-1, rounds):
        query = queries[r % len(queries)]
        names = list(systems)
        rng.shuffle(names)
        this: dict[str, float] = {}
        for name in names:
            mode, env = systems[name]
            this[name], _ = run_timed(kbdb_argv(kb, query, mode), env)
        if r >= 0:
            for name, ms in this.items():
                wall[name].append(ms)
                if name != "lexical":
                    paired[name].append(ms - this["lexical"])
    return {
        "systems": {
            name: {"wall_ms": stats(wall[name]), "runs_ms": [round(x, 1) for x in wall[name]]}
            for name in systems
        },
        "minus_lexical_paired_ms": {name: stats(v) for name, v in paired.items()},
    }


def first_calls(kb: Path, rundir: Path, count: int, seed: int) -> dict[str, Any]:
    """A hybrid search that finds no daemon (it starts one), next to a lexical search."""
    rng = random.Random(seed + 1)
    env = child_env(PYTHONPATH=str(SRC), KBDB_RUNTIME_DIR=str(rundir))
    hybrid: list[float] = []
    lexical: list[float] = []
    for _ in range(count):
        stop_daemons(rundir)
        query = rng.choice(QUERIES)
        order = ["lexical", "hybrid"]
        rng.shuffle(order)
        for name in order:
            ms, _ = run_timed(kbdb_argv(kb, query, None if name == "lexical" else "hybrid"), env)
            (lexical if name == "lexical" else hybrid).append(ms)
    return {
        "hybrid_first_ms": stats(hybrid),
        "lexical_ms": stats(lexical),
        "runs_ms": [round(x, 1) for x in hybrid],
    }


# -- where a cold in-process hybrid search spends its time ----------------------------------

PROBE = r"""
import json, sys, time
t = time.perf_counter
out = {}
variant, model, saved, tokenizer, indexes, threads = sys.argv[1:7]
t0 = t(); import numpy as np; out["import numpy"] = t() - t0
t0 = t(); import onnxruntime as ort; out["import onnxruntime"] = t() - t0
t0 = t(); import tokenizers; out["import tokenizers"] = t() - t0
t0 = t()
from kbdb.embedding.runtime import load_tokenizer
tok = load_tokenizer(__import__("pathlib").Path(tokenizer))
out["tokenizer load"] = t() - t0
opts = ort.SessionOptions()
opts.intra_op_num_threads = int(threads)
opts.inter_op_num_threads = 1
opts.log_severity_level = 3
L = ort.GraphOptimizationLevel
opts.graph_optimization_level = L.ORT_ENABLE_ALL if variant == "default" else L.ORT_DISABLE_ALL
path = model if variant == "default" else saved
t0 = t(); s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
out["session"] = t() - t0
ids = np.array([tok.encode("copy a file into a running container").ids], dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
feeds["token_type_ids"] = np.zeros_like(ids)
t0 = t(); h = s.run(None, feeds)[0]; out["first inference"] = t() - t0
t0 = t(); s.run(None, feeds); out["second inference"] = t() - t0
v = h.mean(axis=1)[0]
v = v / np.linalg.norm(v)
from kbdb import _core
t0 = t(); idx = _core.VectorIndex.open(indexes); out["vectors.idx open"] = t() - t0
t0 = t(); idx.search(v.astype(np.float32), limit=10); out["vector scan"] = t() - t0
print(json.dumps({"ms": {k: 1000 * x for k, x in out.items()}, "vector": v.tolist()}))
"""

SAVE = r"""
import sys, onnxruntime as ort
model, out, level = sys.argv[1:4]
opts = ort.SessionOptions()
opts.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
opts.optimized_model_filepath = out
opts.log_severity_level = 3
ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
"""


def session_breakdown(kb: Path, model: Path, work: Path, rounds: int, seed: int) -> dict[str, Any]:
    from kbdb.embedding.runtime import default_threads

    env = child_env(PYTHONPATH=str(SRC))
    saved = {
        "saved extended": work / "model-extended.onnx",
        "saved all": work / "model-all.onnx",
    }
    level = {"saved extended": "ORT_ENABLE_EXTENDED", "saved all": "ORT_ENABLE_ALL"}
    for name, path in saved.items():
        subprocess.run(
            [sys.executable, "-c", SAVE, str(model / "model.onnx"), str(path), level[name]],
            check=True,
            env=env,
        )
    variants = ["default", *saved]
    rng = random.Random(seed + 2)
    steps: dict[str, dict[str, list[float]]] = {v: defaultdict(list) for v in variants}
    vectors: dict[str, list[float]] = {}
    for r in range(-1, rounds):
        order = list(variants)
        rng.shuffle(order)
        for v in order:
            argv = [
                sys.executable,
                "-c",
                PROBE,
                v,
                str(model / "model.onnx"),
                str(saved.get(v, "")),
                str(model / "tokenizer.json"),
                str(kb / ".kbdb" / "indexes"),
                str(default_threads()),
            ]
            t0 = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
            total = (time.perf_counter() - t0) * 1000
            got = json.loads(proc.stdout)
            vectors[v] = got["vector"]
            if r >= 0:
                for step, ms in got["ms"].items():
                    steps[v][step].append(ms)
                steps[v]["process total"].append(total)
    ref = vectors["default"]
    return {
        "threads": default_threads(),
        "saved_bytes": {name: path.stat().st_size for name, path in saved.items()},
        "steps_ms": {
            v: {step: round(statistics.median(ms), 2) for step, ms in s.items()}
            for v, s in steps.items()
        },
        "max_abs_diff_to_default": {
            v: max(abs(a - b) for a, b in zip(vectors[v], ref, strict=True)) for v in saved
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--first-calls", type=int, default=5)
    ap.add_argument("--session-rounds", type=int, default=7)
    ap.add_argument("--corpus", type=Path, default=CORPORA / "docker-cli")
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--kb", type=Path, help="use (or build) the knowledge base here")
    ap.add_argument("--baseline", type=Path, help="an older checkout's python/ folder")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    sys.path.insert(0, str(SRC))
    compileall.compile_dir(str(SRC / "kbdb"), quiet=1)
    if args.baseline:
        compileall.compile_dir(str(args.baseline / "kbdb"), quiet=1)

    work = Path(tempfile.mkdtemp(prefix="kbdb-bench-hybrid-"))
    rundir = Path(tempfile.mkdtemp(prefix="kbdbb-", dir="/tmp"))  # short: a socket path
    try:
        kb = args.kb or work / "kb"
        if (kb / ".kbdb").exists():
            built: dict[str, Any] = {"path": str(kb), "reused": True}
        else:
            print(f"learning {args.corpus} with the ONNX provider into {kb}", flush=True)
            built = build_kb(kb, args.model, args.corpus)
        print(f"{args.rounds} rounds of cold searches", flush=True)
        rounds = cli_rounds(kb, rundir, args.rounds, args.seed, args.baseline)
        print(f"{args.first_calls} first calls (no daemon running)", flush=True)
        first = first_calls(kb, rundir, args.first_calls, args.seed)
        stop_daemons(rundir)
        print(f"{args.session_rounds} rounds of the in-process breakdown", flush=True)
        breakdown = session_breakdown(kb, args.model, work, args.session_rounds, args.seed)
    finally:
        stop_daemons(rundir)
        shutil.rmtree(rundir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)  # the saved models, and the KB unless --kb

    sysres = rounds["systems"]
    lex = sysres["lexical"]["wall_ms"]
    rows = []
    for name, res in sysres.items():
        w = res["wall_ms"]
        paired = rounds["minus_lexical_paired_ms"].get(name)
        rows.append(
            [
                name,
                w["p50"],
                w["p95"],
                w["p50"] - lex["p50"] if name != "lexical" else None,
                w["p95"] - lex["p95"] if name != "lexical" else None,
                paired["p50"] if paired else None,
            ]
        )
    fw = first["hybrid_first_ms"]
    rows.append(
        [
            "hybrid, first call (starts the daemon)",
            fw["p50"],
            fw["p95"],
            fw["p50"] - first["lexical_ms"]["p50"],
            None,
            None,
        ]
    )
    print_table(
        f"Cold kbdb search, {args.rounds} rounds (ms, wall)",
        ["system", "p50", "p95", "p50 − lexical", "p95 − lexical", "median paired − lexical"],
        rows,
    )
    diff = sysres["hybrid"]["wall_ms"]["p50"] - lex["p50"]
    steps = breakdown["steps_ms"]
    names = list(steps["default"])
    print_table(
        "Cold in-process hybrid: each step in a fresh process (median ms)",
        ["step", *steps],
        [[s, *(steps[v].get(s) for v in steps)] for s in names],
    )
    print(
        f"\ngoal: hybrid − lexical ≤ {GOAL_MS} ms at p50: {diff:.1f} ms "
        f"({'met' if diff <= GOAL_MS else 'NOT met'}); "
        f"saved-model vectors, max |diff| to default: {breakdown['max_abs_diff_to_default']}"
    )
    path = write_result(
        "cli_hybrid",
        {
            "goal": f"hybrid - lexical <= {GOAL_MS} ms at p50 (cold kbdb search, wall)",
            "goal_met": diff <= GOAL_MS,
            "hybrid_minus_lexical_p50_ms": round(diff, 1),
            "params": {
                "rounds": args.rounds,
                "first_calls": args.first_calls,
                "session_rounds": args.session_rounds,
                "corpus": str(args.corpus),
                "model": str(args.model),
                "baseline": str(args.baseline) if args.baseline else None,
                "seed": args.seed,
            },
            "knowledge_base": built,
            "cold_search": rounds,
            "first_call": first,
            "in_process_breakdown": breakdown,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
