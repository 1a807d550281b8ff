"""Shared helpers of the benchmark scripts (BENCHMARKS.md).

Every script records the machine (CPU model, cores, thread settings), the versions of kbdb
and its peers, and the dataset checksums; writes ``benches/results/<name>.json``; and prints
a table (rich when installed, plain text otherwise).

The shared data lives in ``../shared`` beside the repository; ``KBDB_SHARED`` overrides it.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benches" / "results"
SHARED = Path(os.environ.get("KBDB_SHARED", ROOT.parent / "shared"))
SCIFACT = SHARED / "datasets" / "scifact"
CORPORA = SHARED / "corpora"

# Distributions whose versions every result records; absent ones read "not installed".
PACKAGES = (
    "kbdb",
    "bm25s",
    "PyStemmer",
    "tantivy",
    "rank-bm25",
    "numpy",
    "scipy",
    "onnxruntime",
    "faiss-cpu",
    "usearch",
    "pytrec-eval-terrier",
)
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "RAYON_NUM_THREADS",
)
NOT_INSTALLED = "not installed"


def single_thread() -> None:
    """Pin numeric libraries and Rust thread pools to one thread. Call before importing
    numpy or any peer."""
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_id() -> dict[str, Any]:
    """Family, model and AVX-512 flag from /proc/cpuinfo: "AMD EPYC" names both Zen 4
    (family 25), whose AVX-512 runs on 256-bit units, and Zen 5 (family 26), whose units are
    512 bits wide; matrix-bound results (embedding) differ by about 2x between them."""
    fields: dict[str, Any] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("cpu family", "model") and key.replace(" ", "_") not in fields:
                fields[key.replace(" ", "_")] = int(value)
            elif key == "flags":
                fields["avx512f"] = "avx512f" in value.split()
                break
    except (OSError, ValueError):
        pass
    return fields


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def machine_info() -> dict[str, Any]:
    """What a result depends on besides the code: CPU, cores, versions, threads, and the
    load average when the result is written (other work on the machine moves timings)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 1
    return {
        "cpu": cpu_model(),
        "cpu_id": cpu_id(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {p: version(p) for p in PACKAGES},
        "threads": {v: os.environ.get(v) for v in THREAD_VARS},
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def sha256(path: Path) -> str:
    from kbdb.evaluation import sha256_file

    return sha256_file(path)


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``benches/results/<name>.json`` with the machine info and the command."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {
        "name": name,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join(["python", *sys.argv]),
        "machine": machine_info(),
        **payload,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_result(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table on stdout: rich when it is installed, aligned plain text otherwise."""
    cells = [[fmt(c) for c in row] for row in rows]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
        print(f"\n{title}")
        print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
        print("  ".join("-" * w for w in widths))
        for r in cells:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
        return
    table = Table(title=title)
    for i, h in enumerate(headers):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in cells:
        table.add_row(*r)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # piped or captured: do not squeeze to 80 columns
    console.print(table)


def latency_stats(seconds: Sequence[float]) -> dict[str, float]:
    """queries/s (n over the summed wall time) and p50/p95 in milliseconds."""
    from kbdb.evaluation import percentile

    total = sum(seconds)
    return {
        "qps": len(seconds) / total if total > 0 else 0.0,
        "p50_ms": percentile(seconds, 50) * 1000,
        "p95_ms": percentile(seconds, 95) * 1000,
    }


def time_each(fn: Callable[[Any], Any], items: Sequence[Any], warmup: int = 5) -> list[float]:
    """Wall time of ``fn(item)`` per item, after ``warmup`` untimed calls."""
    for item in items[:warmup]:
        fn(item)
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return out


def peak_rss_mb() -> float:
    """This process's peak resident set size, in MiB (Linux reports KiB)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 if sys.platform != "darwin" else r / (1024 * 1024)


def ratio(a: float | None, b: float | None) -> float | None:
    if not a or not b:
        return None
    return a / b
