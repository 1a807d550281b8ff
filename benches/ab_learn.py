"""Before/after of learn throughput in one run: two checkouts' ``python/`` folders,
alternated ``--rounds`` times, each doing ``kbdb learn`` of ../shared/corpora/tldr (the
CLI, as ``bench_learn.run_learn``) and ``learn_many`` of SciFact beside bm25s (as
``bench_learn --worker-many``). Best of the rounds per side. On a shared machine this is
the only fair comparison: both sides see the same load.

    python benches/ab_learn.py BEFORE/python AFTER/python [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_learn as bl  # noqa: E402
from common import CORPORA  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="the before checkout's python/ folder")
    ap.add_argument("after", help="the after checkout's python/ folder")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sides = {"before": args.before, "after": args.after}
    tldr = CORPORA / "tldr"
    files = bl.count_files(tldr)
    runs: dict[str, dict[str, list[Any]]] = {s: {"tldr": [], "many": []} for s in sides}
    for i in range(args.rounds):
        for side, path in sides.items():
            os.environ["PYTHONPATH"] = path
            r = bl.run_learn(tldr, files)
            runs[side]["tldr"].append([r["learn_s"], r["peak_rss_mb"], r["sections"]])
            worker = [sys.executable, bl.__file__, "--worker-many", "--rounds", "1"]
            m = json.loads(subprocess.run(worker, check=True, capture_output=True).stdout)
            runs[side]["many"].append(
                [m["learn_many_sections_per_s"], m["bm25s_docs_per_s"], m["ratio_vs_bm25s"]]
            )
            print(i, side, runs[side]["tldr"][-1], runs[side]["many"][-1], flush=True)
    for side in sides:
        secs, rss, sections = min(runs[side]["tldr"])
        many, bm25s, ratio = max(runs[side]["many"])
        print(
            f"{side}: kbdb learn tldr {secs:.2f} s, {files / secs:,.0f} files/s, "
            f"{sections / secs:,.0f} sections/s, peak RSS {rss:.0f} MB; learn_many SciFact "
            f"{many:,.0f} sections/s (bm25s {bm25s:,.0f}/s, {ratio:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
