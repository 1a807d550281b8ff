"""``kbdb watch`` on a 10,000-file tree: save-to-searchable latency, idle cost, and a burst.

The tree is small Markdown files made from the tldr pages (``corpora/tldr``): each page
once, then again with a numbered title until there are ``--files`` of them. One
``kbdb watch --json`` process follows it (a separate process, as a user runs it); this
script is the reader.

- **latency**: ``--saves`` times, one file is rewritten with a new word; the time from the
  write to the first ``kb.search`` (this process, polling every 5 ms) that finds it.
  p50/p95; goal p95 <= 1 s.
- **idle**: the watcher's CPU time (``/proc/PID/stat`` utime + stime) over ``--idle``
  seconds with nothing changing, as a share of one core; goal < 1 %.
- **burst**: every file rewritten at once (a git checkout); the batches the watcher
  commits until it has them all (goal <= 20), the time until then, and ``kbdb export`` of
  the watched knowledge base against a fresh ``learn`` of the same tree, timestamps left
  out. The watched one also keeps the versions it saw (history), so the comparison is of
  the live sections and live document entries; goal: equal.

    python benches/bench_watch.py [--files 10000] [--saves 30] [--idle 60]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, ROOT, print_table, write_result  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import kbdb  # noqa: E402

GOAL_P95_MS = 1_000
GOAL_IDLE_CPU_PCT = 1.0
GOAL_BURST_BATCHES = 20
TIMESTAMPS = ("created_at", "updated_at", "retired_at")
WORDS = ["qajx", "vorp", "mivu", "tesk", "brelo", "dunfa", "zorpi", "kelvu", "snard", "plimo"]


def make_tree(root: Path, files: int) -> list[Path]:
    # Hidden names (tldr has a page for "..") are not learned, by learn or watch.
    pages = sorted(p for p in (CORPORA / "tldr").rglob("*.md") if not p.name.startswith("."))
    if not pages:
        raise SystemExit(f"no tldr pages under {CORPORA / 'tldr'}")
    out = []
    for i in range(files):
        src = pages[i % len(pages)]
        text = src.read_text(encoding="utf-8")
        rnd = i // len(pages)
        if rnd:
            first, _, rest = text.partition("\n")
            text = f"{first} ({rnd})\n{rest}"
        rel = src.relative_to(CORPORA / "tldr").with_suffix("")
        dest = root / f"set{rnd}" / f"{rel}.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        out.append(dest)
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Watch:
    """The ``kbdb watch --json`` process and its batches, read on a thread."""

    def __init__(self, kbdir: Path, tree: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")])
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbdb.cli", "--db", str(kbdir), "watch", "--json", str(tree)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.batches: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.batches.put((time.perf_counter(), json.loads(line)))

    def until(self, files: int, timeout: float = 600) -> tuple[list[dict[str, Any]], float]:
        """Batches until they have learned ``files`` files; and the time of the last."""
        got: list[dict[str, Any]] = []
        learned = 0
        when = time.perf_counter()
        deadline = time.monotonic() + timeout
        while learned < files:
            when, b = self.batches.get(timeout=max(0.1, deadline - time.monotonic()))
            got.append(b)
            learned += b["files_learned"]
        return got, when

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=120)


def export_view(folder: Path) -> dict[str, Any]:
    """The live part of an export as data, timestamps left out."""
    out: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file() or p.name == "kbdb-export.toml":
            continue
        text = p.read_text(encoding="utf-8")
        if p.suffix == ".md":
            _, front, body = text.split("+++\n", 2)
            data = tomllib.loads(front)
            if "retired_at" in data:
                continue
            data["body"] = body
        else:
            data = tomllib.loads(text)
            data["entries"] = [e for e in data.get("entries", []) if e["live"]]
            if not data["entries"]:
                continue
        for key in TIMESTAMPS:
            data.pop(key, None)
        out[p.relative_to(folder).as_posix()] = data
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--saves", type=int, default=30)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of idle measurement")
    args = ap.parse_args()
    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="kbdb-bench-watch-"))
    try:
        tree = work / "tree"
        files = make_tree(tree, args.files)
        kb = kbdb.KnowledgeBase.init(work / "watched")
        watch = Watch(kb.path, tree)
        t0 = time.perf_counter()
        sync, t_sync = watch.until(len(files))
        sync_s = t_sync - t0
        print(f"initial sync: {len(files)} files in {sync_s:.1f} s, {len(sync)} batches")

        # (b) idle cost, before anything else changes
        time.sleep(2)
        c0, w0 = cpu_seconds(watch.proc.pid), time.perf_counter()
        time.sleep(args.idle)
        idle_pct = 100 * (cpu_seconds(watch.proc.pid) - c0) / (time.perf_counter() - w0)

        # (a) save -> searchable latency
        latencies = []
        for i in range(args.saves):
            path = rng.choice(files)
            word = f"{WORDS[i % len(WORDS)]}{chr(97 + i // len(WORDS))}wtch"
            text = path.read_text(encoding="utf-8")
            t_save = time.perf_counter()
            path.write_text(text + f"\n- Saved with {word}.\n", encoding="utf-8")
            while not kb.search(word).items:
                if time.perf_counter() - t_save > 30:
                    raise SystemExit(f"save {i} ({word}) never became searchable")
                time.sleep(0.005)
            latencies.append(time.perf_counter() - t_save)
            watch.until(1)
            time.sleep(rng.uniform(0.2, 0.4))
        lat_ms = sorted(x * 1000 for x in latencies)
        p50 = lat_ms[len(lat_ms) // 2]
        p95 = lat_ms[min(len(lat_ms) - 1, round(0.95 * (len(lat_ms) - 1)))]

        # (c) burst: every file rewritten at once
        c0 = cpu_seconds(watch.proc.pid)
        t_burst = time.perf_counter()
        for n, path in enumerate(files):
            path.write_text(
                path.read_text(encoding="utf-8") + f"\nCheckout line {n}.\n", encoding="utf-8"
            )
        t_written = time.perf_counter()
        burst, t_done = watch.until(len(files))
        burst_cpu = cpu_seconds(watch.proc.pid) - c0
        time.sleep(3)  # anything after the last expected batch counts too
        while not watch.batches.empty():
            burst.append(watch.batches.get()[1])
        code = watch.stop()
        kb.close()

        fresh = kbdb.KnowledgeBase.init(work / "fresh")
        fresh.learn_path(tree)
        fresh.close()
        kb = kbdb.KnowledgeBase.open(work / "watched")
        kb.export(work / "export-watched")
        kb.close()
        fresh = kbdb.KnowledgeBase.open(work / "fresh")
        fresh.export(work / "export-fresh")
        fresh.close()
        a, b = export_view(work / "export-watched"), export_view(work / "export-fresh")
        differing = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    p95_ok, idle_ok = p95 <= GOAL_P95_MS, idle_pct < GOAL_IDLE_CPU_PCT
    burst_ok = len(burst) <= GOAL_BURST_BATCHES
    rows = [
        ["initial sync (s)", round(sync_s, 2), "—", ""],
        ["save -> searchable p50 (ms)", round(p50, 1), "—", ""],
        ["save -> searchable p95 (ms)", round(p95, 1), f"<= {GOAL_P95_MS}", _met(p95_ok)],
        ["idle CPU (% of a core)", round(idle_pct, 3), f"< {GOAL_IDLE_CPU_PCT}", _met(idle_ok)],
        ["burst batches", len(burst), f"<= {GOAL_BURST_BATCHES}", _met(burst_ok)],
        ["burst: write (s)", round(t_written - t_burst, 2), "—", ""],
        ["burst: until all committed (s)", round(t_done - t_burst, 2), "—", ""],
        ["burst: watcher CPU (s)", round(burst_cpu, 2), "—", ""],
        ["export vs fresh learn: files differing", len(differing), "0", _met(not differing)],
    ]
    print_table(f"kbdb watch, {len(files):,} files", ["measure", "value", "goal", ""], rows)
    print(f"watch exit code after SIGTERM: {code}")
    if differing:
        print("first differing export files:", differing[:5])
    path = write_result(
        "watch",
        {
            "files": len(files),
            "initial_sync_s": sync_s,
            "initial_sync_batches": len(sync),
            "latency_ms": {"p50": p50, "p95": p95, "all": lat_ms},
            "idle_seconds": args.idle,
            "idle_cpu_pct": idle_pct,
            "burst_batches": len(burst),
            "burst_batch_files": [b["files_learned"] for b in burst],
            "burst_write_s": t_written - t_burst,
            "burst_committed_s": t_done - t_burst,
            "burst_cpu_s": burst_cpu,
            "export_files_differing": len(differing),
            "export_files": len(a),
            "sigterm_exit_code": code,
        },
    )
    print(f"wrote {path}")
    flags = f"--files {args.files} --saves {args.saves} --idle {args.idle:g}"
    print(f"reproduce: python benches/bench_watch.py {flags}")


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


if __name__ == "__main__":
    main()
