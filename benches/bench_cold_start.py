"""BENCHMARKS.md §5 (cold start): a lexical ``kbdb search`` on a
100,000-section knowledge base, against ``python -c pass``, in the same run.

Goal: ``kbdb search QUERY`` takes at most 100 ms more wall time than ``python -c pass``.

The knowledge base is the scale curve's (``benches/bench_scale.py``: corpus paragraphs
with 15 % of the words swapped, 8 sections per document, random unit vectors), built once
and cached under ``--cache`` (default ``$KBDB_BENCH_CACHE``, else
``<tmp>/kbdb-bench-cache``); a cached one is reused when it opens and has the right size.

Each round runs every command once as a fresh process, in a shuffled order (so that no
command always follows another), with a different query per round:

- ``python -c pass`` and ``python -c "import kbdb"`` (the floor);
- ``kbdb --db KB search QUERY`` (the table, rich, stdout to a pipe);
- ``kbdb --db KB --json search QUERY``.

It reports wall time (what the goal is about) and the children's CPU time (user + sys,
from ``wait4``; steadier when other work shares the machine) as p50 and min, the
difference to ``python -c pass`` and to the goal. Then ``-X importtime`` of the same
search (median per module over several runs: the top modules by self time and the total
per top-level package), and the open path in-process: ``KnowledgeBase.open``, mapping the
lexical index, the first and a second search, at 10,000 and at 100,000 sections (to show
whether opening grows with the knowledge base).

The kbdb package is byte-compiled first and the children run without
``PYTHONDONTWRITEBYTECODE``: an installed wheel has its ``.pyc`` files, and a source
module recompiled on every start would be measured instead of kbdb.

    python benches/bench_cold_start.py [--sections 100000] [--rounds 21] [--cache DIR]
                                       [--baseline OLD_CHECKOUT/python]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, write_result  # noqa: E402

GOAL_ABOVE_PYTHON_MS = 100
QUERIES = (
    "ownership borrowing",
    "list files recursively",
    "compress a directory archive",
    "error handling with result",
    "git commit message",
    "lifetime of references",
    "download file over http",
)
SMALL = 10_000
IMPORTTIME_RUNS = 9
OPEN_RUNS = 7


def cache_dir(arg: Path | None) -> Path:
    base = arg or Path(
        os.environ.get("KBDB_BENCH_CACHE") or Path(tempfile.gettempdir()) / "kbdb-bench-cache"
    )
    base.mkdir(parents=True, exist_ok=True)
    return base


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KBDB_DB")}
    env.update(NO_COLOR="1", COLUMNS="120")
    return env


def live_sections(root: Path) -> int | None:
    """The live section count of a cached knowledge base, or None when it does not open."""
    kbdb = Path(sys.executable).with_name("kbdb")
    proc = subprocess.run(
        [str(kbdb), "--db", str(root), "--json", "stats"],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    if proc.returncode != 0:
        return None
    return int(json.loads(proc.stdout)["live_sections"])


def knowledge_base(base: Path, n: int, seed: int, rebuild: bool) -> tuple[Path, dict[str, Any]]:
    """A knowledge base of ``n`` sections: the cached one, else built now (bench_scale)."""
    root = base / f"kb-{n}-seed{seed}"
    if not rebuild and root.exists():
        live = live_sections(root)
        # documents() writes n sections; identical paragraphs dedup to a few less
        if live is not None and n * 0.95 <= live <= n:
            return root, {"cached": True, "live_sections": live}
        print(f"cached knowledge base at {root} is unusable ({live}); rebuilding", flush=True)
    building = root.with_name(root.name + ".building")
    for stale in (building, root):
        if stale.exists():
            subprocess.run(["rm", "-rf", str(stale)], check=True)
    print(f"building {n:,} sections at {root} (cached for later runs)", flush=True)
    scale = Path(__file__).resolve().with_name("bench_scale.py")
    proc = subprocess.run(
        [sys.executable, str(scale), "--worker-build", str(building), str(n), "--seed", str(seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    building.rename(root)
    built = json.loads(proc.stdout.strip().splitlines()[-1])
    return root, {"cached": False, "live_sections": built["sections"], "build_s": built["learn_s"]}


def timed_rounds(
    commands: dict[str, Any], envs: dict[str, dict[str, str]], rounds: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Run every command once per round, shuffled; wall and CPU per run. ``envs``: extra
    environment variables per command (the baseline's PYTHONPATH)."""
    import resource

    rng = random.Random(seed)
    wall: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    for r in range(-1, rounds):  # round -1 warms the page cache and writes any .pyc
        names = list(commands)
        rng.shuffle(names)
        query = QUERIES[r % len(QUERIES)]
        for name in names:
            argv = commands[name](query)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            env = child_env() | envs.get(name, {})
            proc = subprocess.run(argv, capture_output=True, env=env, check=False)
            elapsed = (time.perf_counter() - t0) * 1000
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if proc.returncode != 0:
                raise RuntimeError(f"{argv}: {proc.stderr.decode(errors='replace')[-2000:]}")
            if r >= 0:
                wall[name].append(elapsed)
                cpu[name].append(
                    (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
                )
    return {
        name: {
            "argv": commands[name]("QUERY"),
            "wall_ms": summary(wall[name]),
            "cpu_ms": summary(cpu[name]),
        }
        for name in commands
    }


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50": statistics.median(ordered),
        "min": ordered[0],
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "runs": len(ordered),
    }


IMPORT_LINE = re.compile(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|( *)(\S+)")


def import_times(argv: list[str], runs: int) -> dict[str, Any]:
    """Median self and cumulative import time per module over ``runs`` runs of
    ``python -X importtime``, the top modules by self time, and self time summed per
    top-level package (``kbdb``, ``click``, ``rich``, the standard library ...)."""
    env = child_env()
    selfs: dict[str, list[int]] = defaultdict(list)
    cums: dict[str, list[int]] = defaultdict(list)
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *argv],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        for line in proc.stderr.splitlines():
            m = IMPORT_LINE.match(line)
            if m:
                selfs[m.group(4)].append(int(m.group(1)))
                cums[m.group(4)].append(int(m.group(2)))
    med_self = {k: statistics.median(v) / 1000 for k, v in selfs.items()}
    med_cum = {k: statistics.median(v) / 1000 for k, v in cums.items()}
    stdlib = set(sys.stdlib_module_names)
    by_package: dict[str, float] = defaultdict(float)
    for name, ms in med_self.items():
        root = name.split(".")[0]
        key = root if root in ("kbdb", "click", "rich") else "stdlib" if root in stdlib else root
        if key not in ("kbdb", "click", "rich", "stdlib"):
            key = f"other ({root})"
        by_package[key] += ms
    top = sorted(med_self, key=lambda k: -med_self[k])[:20]
    return {
        "runs": runs,
        "modules": len(med_self),
        "total_self_ms": sum(med_self.values()),
        "by_package_self_ms": dict(sorted(by_package.items(), key=lambda kv: -kv[1])),
        "top_self": [
            {"module": k, "self_ms": med_self[k], "cumulative_ms": med_cum[k]} for k in top
        ],
        "kbdb_modules": sorted(k for k in med_self if k.split(".")[0] == "kbdb"),
    }


OPEN_PROBE = """
import json, sys, time
t0 = time.perf_counter()
from kbdb.kb import KnowledgeBase
t1 = time.perf_counter()
kb = KnowledgeBase.open(sys.argv[1])
t2 = time.perf_counter()
kb.context.index.core
t3 = time.perf_counter()
kb.search(sys.argv[2])
t4 = time.perf_counter()
kb.search(sys.argv[3])
t5 = time.perf_counter()
kb.close()
ms = lambda a, b: (b - a) * 1000
print(json.dumps({"import_kb": ms(t0, t1), "open": ms(t1, t2), "map_index": ms(t2, t3),
                  "first_search": ms(t3, t4), "second_search": ms(t4, t5)}))
"""


def open_path(root: Path, runs: int) -> dict[str, float]:
    """Median milliseconds of each step from import to a second search, in fresh processes."""
    steps: dict[str, list[float]] = defaultdict(list)
    for i in range(runs + 1):
        q1, q2 = QUERIES[i % len(QUERIES)], QUERIES[(i + 3) % len(QUERIES)]
        proc = subprocess.run(
            [sys.executable, "-c", OPEN_PROBE, str(root), q1, q2],
            capture_output=True,
            text=True,
            env=child_env(),
            check=True,
        )
        if i == 0:
            continue  # warm-up
        for k, v in json.loads(proc.stdout).items():
            steps[k].append(v)
    return {k: statistics.median(v) for k, v in steps.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached knowledge bases")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="also time `kbdb search` with this source tree first on PYTHONPATH (another "
        "checkout's python/ folder, with its _core extension), in the same rounds",
    )
    args = ap.parse_args()

    import kbdb

    package = Path(kbdb.__file__).parent
    compileall.compile_dir(str(package), quiet=1)
    base = cache_dir(args.cache)
    root, kb_info = knowledge_base(base, args.sections, args.seed, args.rebuild)
    small, small_info = knowledge_base(base, SMALL, args.seed, args.rebuild)

    py = sys.executable
    script = str(Path(py).with_name("kbdb"))
    commands = {
        "python -c pass": lambda q: [py, "-c", "pass"],
        "python -c 'import kbdb'": lambda q: [py, "-c", "import kbdb"],
        "kbdb search": lambda q: [script, "--db", str(root), "search", q],
        "kbdb --json search": lambda q: [script, "--db", str(root), "--json", "search", q],
    }
    envs: dict[str, dict[str, str]] = {}
    if args.baseline:
        compileall.compile_dir(str(args.baseline / "kbdb"), quiet=1)
        commands["kbdb search (baseline)"] = commands["kbdb search"]
        envs["kbdb search (baseline)"] = {"PYTHONPATH": str(args.baseline.resolve())}
    load_start = os.getloadavg()
    timings = timed_rounds(commands, envs, args.rounds, args.seed)
    load_end = os.getloadavg()
    base_wall = timings["python -c pass"]["wall_ms"]
    base_cpu = timings["python -c pass"]["cpu_ms"]
    above: dict[str, dict[str, float]] = {}
    for name in timings:
        if name == "python -c pass":
            continue
        t = timings[name]
        above[name] = {
            "wall_p50_ms": t["wall_ms"]["p50"] - base_wall["p50"],
            "wall_min_ms": t["wall_ms"]["min"] - base_wall["min"],
            "cpu_p50_ms": t["cpu_ms"]["p50"] - base_cpu["p50"],
        }
    imports = import_times([script, "--db", str(root), "search", QUERIES[0]], IMPORTTIME_RUNS)
    opening = {
        str(args.sections): open_path(root, OPEN_RUNS),
        str(SMALL): open_path(small, OPEN_RUNS),
    }

    print_table(
        f"cold start, {kb_info['live_sections']:,} sections, {args.rounds} interleaved rounds",
        ("command", "wall p50 ms", "wall min ms", "CPU p50 ms", "above python p50 / min ms"),
        [
            (
                name,
                t["wall_ms"]["p50"],
                t["wall_ms"]["min"],
                t["cpu_ms"]["p50"],
                "—"
                if name == "python -c pass"
                else f"{above[name]['wall_p50_ms']:.1f} / {above[name]['wall_min_ms']:.1f}",
            )
            for name, t in timings.items()
        ],
    )
    print_table(
        f"-X importtime of `kbdb search`, median of {IMPORTTIME_RUNS} runs (self ms)",
        ("module", "self ms", "cumulative ms"),
        [(m["module"], m["self_ms"], m["cumulative_ms"]) for m in imports["top_self"][:12]],
    )
    print("self import time by package:", json.dumps(imports["by_package_self_ms"], indent=None))
    print_table(
        "open path in-process (median ms)",
        ("sections", *next(iter(opening.values())).keys()),
        [(n, *v.values()) for n, v in opening.items()],
    )
    search = above["kbdb search"]
    meets = search["wall_p50_ms"] <= GOAL_ABOVE_PYTHON_MS
    print(
        f"kbdb search: +{search['wall_p50_ms']:.1f} ms p50 above python -c pass "
        f"(goal <= {GOAL_ABOVE_PYTHON_MS} ms: {'met' if meets else 'NOT met'}, "
        f"{search['wall_p50_ms'] / GOAL_ABOVE_PYTHON_MS:.2f}x the budget); "
        f"load average {load_start[0]:.1f} -> {load_end[0]:.1f}"
    )
    as_json = above["kbdb --json search"]
    import_kbdb = above["python -c 'import kbdb'"]
    peers = (
        f"`python -c pass` {base_wall['p50']:.0f} ms, `import kbdb` "
        f"+{import_kbdb['wall_p50_ms']:.0f} ms"
    )
    if "kbdb search (baseline)" in above:
        before = above["kbdb search (baseline)"]["wall_p50_ms"]
        peers += f", `kbdb search` of the --baseline tree +{before:.0f} ms"
    write_result(
        "cold_start",
        {
            "sections": kb_info["live_sections"],
            "seed": args.seed,
            "generator": "benches/bench_scale.py documents(): corpora paragraphs, 15% words "
            "swapped, 8 sections per document; random unit vectors",
            "knowledge_base": {str(args.sections): kb_info, str(SMALL): small_info},
            "rounds": args.rounds,
            "baseline": str(args.baseline) if args.baseline else None,
            "queries": list(QUERIES),
            "output": "stdout and stderr to a pipe; NO_COLOR=1, COLUMNS=120",
            "load_average": {"start": load_start, "end": load_end},
            "goal_above_python_ms": GOAL_ABOVE_PYTHON_MS,
            "meets_goal": meets,
            "commands": timings,
            "above_python": above,
            "importtime": imports,
            "open_path_ms": opening,
            "headline": [
                {
                    "what": f"cold `kbdb search` (lexical) at {kb_info['live_sections']:,} "
                    "sections, wall time above `python -c pass`",
                    "kbdb": f"+{search['wall_p50_ms']:.0f} ms p50 wall (goal ≤ "
                    f"{GOAL_ABOVE_PYTHON_MS} ms: {search['wall_p50_ms'] / GOAL_ABOVE_PYTHON_MS:.2f}"
                    f"× the budget), +{search['wall_min_ms']:.0f} ms min, CPU "
                    f"+{search['cpu_p50_ms']:.0f} ms; `--json` +{as_json['wall_p50_ms']:.0f} ms; "
                    f"load average {load_start[0]:.1f}",
                    "peers": peers,
                }
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
