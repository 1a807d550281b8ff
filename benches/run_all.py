"""Run every benchmark script, then regenerate the README table (``make bench``).

Each script runs in its own process with this interpreter; a failing script is reported
and the others still run. The exit code is 1 when any script failed.

    python benches/run_all.py [--tune] [--only quality --only learn]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = {
    "quality": "bench_quality.py",
    "navigation": "bench_navigation.py",  # docker-cli known-item queries, a few seconds
    "lexical_speed": "bench_lexical_speed.py",
    "first_pass": "bench_first_pass.py",  # fresh process per system, docker-cli and rust-book
    "learn": "bench_learn.py",
    "vector_scan": "bench_vector_scan.py",
    "embed": "bench_embed.py",
    "embed_roofline": "embed_roofline.py",
    "maintenance": "bench_maintenance.py",
    "neardup": "bench_neardup.py",
    "mcp_latency": "bench_mcp.py",
    "scale": "bench_scale.py",  # 10k and 100k sections by default (1M: --sizes, by hand)
    "cold_start": "bench_cold_start.py",  # reuses its cached 100k knowledge base
    "cli_hybrid": "bench_cli_hybrid.py",  # learns docker-cli with the model, ~3 minutes
    "watch": "bench_watch.py",  # a 10,000-file tree, ~3 minutes (60 s of it idle)
    "locomo_chat": "bench_locomo_chat.py",  # LoCoMo as chat logs beside kbdb eval, seconds
}
TUNE = "tune_bm25.py"  # minutes long; with --tune only


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(SCRIPTS), default=None)
    ap.add_argument("--tune", action="store_true", help="also run the BM25 parameter sweep")
    args = ap.parse_args()
    names = args.only or list(SCRIPTS)
    scripts = [SCRIPTS[n] for n in names] + ([TUNE] if args.tune else [])
    failed: list[str] = []
    for script in scripts:
        print(f"\n=== {script} ===", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(HERE / script)])
        print(f"=== {script}: exit {rc} in {time.perf_counter() - t0:.0f}s ===", flush=True)
        if rc != 0:
            failed.append(script)
    subprocess.call([sys.executable, str(HERE / "update_readme.py")])
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
