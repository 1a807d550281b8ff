"""BENCHMARKS.md §5 (learn throughput): ``learn`` of ../shared/corpora/tldr and rust-book.

Each learn runs in a fresh subprocess (``KnowledgeBase.init(tmp).learn_path(corpus)``, the
call ``kbdb learn`` makes) so that its peak RSS is its own: the parent reads ``ru_maxrss``
from ``wait4``. A subprocess that only imports kbdb and creates an empty knowledge base
gives the baseline RSS in the same run.

    python benches/bench_learn.py [--corpus tldr --corpus rust-book] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, print_table, write_result  # noqa: E402

DEFAULT_CORPORA = ("tldr", "rust-book")


def worker(corpus: str | None, db: str) -> None:
    """Runs in the subprocess: learn ``corpus`` into a new knowledge base at ``db``."""
    from kbdb import KnowledgeBase

    t0 = time.perf_counter()
    kb = KnowledgeBase.init(db)
    out: dict[str, Any] = {"init_s": time.perf_counter() - t0}
    if corpus is not None:
        t1 = time.perf_counter()
        report = kb.learn_path(corpus)
        out["learn_s"] = time.perf_counter() - t1
        out["files"] = (
            report.documents_added + report.documents_updated + (report.documents_unchanged)
        )
        out["files_skipped"] = len(report.files_skipped)
        out["sections"] = len(report.sections)
        stats = kb.stats()
        out["live_sections"] = stats.live_sections
        out["db_bytes"] = stats.db_bytes
        out["index_bytes"] = stats.index_bytes
    kb.close()
    print(json.dumps(out))


def run_child(corpus: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-learn-") as tmp:
        cmd = [sys.executable, __file__, "--worker", tmp]
        if corpus is not None:
            cmd += ["--worker-corpus", str(corpus)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        stdout = proc.stdout.read()
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"learn of {corpus} failed:\n{stderr.decode(errors='replace')}")
    out: dict[str, Any] = json.loads(stdout.decode().strip().splitlines()[-1])
    out["wall_s"] = wall
    out["peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: KiB
    out["cpu_s"] = usage.ru_utime + usage.ru_stime  # well below wall_s: waiting on fsync
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", help="folder name under shared/corpora")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-corpus", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker_corpus, args.worker)
        return 0

    baseline = run_child(None)
    results: list[dict[str, Any]] = []
    for name in args.corpus or DEFAULT_CORPORA:
        path = CORPORA / name
        if not path.is_dir():
            results.append({"corpus": name, "status": f"missing: {path}"})
            continue
        runs = [run_child(path) for _ in range(args.rounds)]
        best = min(runs, key=lambda r: r["learn_s"])
        best.update(
            {
                "corpus": name,
                "files_per_s": best["files"] / best["learn_s"],
                "sections_per_s": best["sections"] / best["learn_s"],
                "rounds": len(runs),
            }
        )
        results.append(best)

    print_table(
        "learn throughput (fresh knowledge base, one process per learn)",
        [
            "corpus",
            "files",
            "sections",
            "seconds",
            "files/s",
            "sections/s",
            "peak RSS MB",
            "process CPU s",
        ],
        [
            [
                r["corpus"],
                r.get("files", r.get("status")),
                r.get("sections"),
                r.get("learn_s"),
                r.get("files_per_s"),
                r.get("sections_per_s"),
                r.get("peak_rss_mb"),
                r.get("cpu_s"),
            ]
            for r in results
        ],
    )
    print(f"baseline (import kbdb + init, no learn): peak RSS {baseline['peak_rss_mb']:.1f} MB")
    headline = [
        {
            "what": f"learn {r['corpus']} ({r['files']:,} files)",
            "kbdb": f"{r['files_per_s']:,.0f} files/s, {r['sections_per_s']:,.0f} sections/s",
            "peers": f"peak RSS {r['peak_rss_mb']:.0f} MB",
        }
        for r in results
        if "files" in r
    ]
    write_result(
        "learn",
        {
            "corpora": {r["corpus"]: r for r in results},
            "baseline": baseline,
            "headline": headline,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
