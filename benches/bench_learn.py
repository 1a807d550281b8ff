"""BENCHMARKS.md §5 (learn throughput): ``kbdb learn`` on ../shared/corpora and on a
synthetic tree of 100k Markdown files, and ``learn_many`` on SciFact beside bm25s.

- **The CLI**: each learn is ``kbdb init`` then ``kbdb learn --db DB PATH`` in a fresh
  subprocess (``python -m kbdb.cli``, the interpreter running this script, so
  ``PYTHONPATH`` picks the checkout), timed by wall clock. Its peak RSS comes from
  ``wait4``; while it runs, the parent samples its RSS (``/proc/PID/status``) and the
  documents committed so far (a read-only SQLite query), and reports the RSS at 10, 50 and
  100 % of the files: flat memory shows as equal values. The RSS is also split into its
  anonymous part (the process's heaps) and its file part (the index segments mapped in,
  which grow with the index and which the kernel can drop).
- **The synthetic tree**: ``--files`` Markdown files (default 100,000), 1,000 per folder,
  each an H1 title, an intro and one to three H2 sections of 2-6 sentences drawn from the
  SciFact abstracts (seeded). It is written once under ``--cache`` and reused; its
  checksum (a SHA-256 over paths and contents) is in the result, with SciFact's.
- **learn_many vs bm25s**: SciFact's 5,183 abstracts through ``kbdb.evaluation.run.learn_corpus``
  (``KnowledgeBase.learn_many``, 1,024 per batch) into a fresh knowledge base, and
  ``bm25s.tokenize`` + ``BM25.index`` on the same texts, best of ``--rounds``, same run.

    python benches/bench_learn.py [--corpus tldr ...] [--files 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, SCIFACT, print_table, ratio, sha256, write_result  # noqa: E402

DEFAULT_CORPORA = ("tldr", "rust-book")
DEFAULT_FILES = 100_000
PER_FOLDER = 1_000
SEED = 20261202
RSS_MARKS = (10, 50, 100)
SAMPLE_S = 0.25


# -- data ------------------------------------------------------------------------------


def tree_checksum(root: Path) -> str:
    """SHA-256 over the sorted relative paths and contents of every file under ``root``."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.startswith("."):
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def scifact_sentences() -> list[str]:
    out: list[str] = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            text = json.loads(line).get("text", "")
            out += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 20]
    return out


def synthetic_tree(n: int, cache: Path) -> tuple[Path, str]:
    """``n`` Markdown files built from SciFact sentences, written once; its checksum."""
    root = cache / f"learn-tree-{n}-{SEED}"
    done = root / ".done"
    if done.exists():
        return root, done.read_text().strip()
    sentences = scifact_sentences()
    rng = random.Random(SEED)
    h = hashlib.sha256()
    for i in range(n):
        folder = root / f"d{i // PER_FOLDER:04d}"
        if i % PER_FOLDER == 0:
            folder.mkdir(parents=True, exist_ok=True)
        title = " ".join(rng.choice(sentences).split()[: rng.randint(3, 8)]).rstrip(".,;:")
        parts = [f"# {title}", " ".join(rng.sample(sentences, rng.randint(1, 3)))]
        for _ in range(rng.randint(1, 3)):
            head = " ".join(rng.choice(sentences).split()[: rng.randint(2, 5)]).rstrip(".,;:")
            body = " ".join(rng.sample(sentences, rng.randint(2, 6)))
            if rng.random() < 0.2:  # a list now and then
                body += "\n\n" + "\n".join(f"- {s}" for s in rng.sample(sentences, 3))
            parts += [f"## {head}", body]
        text = "\n\n".join(parts) + "\n"
        path = folder / f"note-{i:06d}.md"
        path.write_text(text, encoding="utf-8")
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(text.encode()).digest())
    digest = h.hexdigest()
    done.write_text(digest + "\n")
    return root, digest


def count_files(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


# -- the CLI in a subprocess --------------------------------------------------------------


def _rss_kb(pid: int) -> tuple[int, int, int] | None:
    """``(VmRSS, RssAnon, RssFile)`` in KiB. RssAnon is the process's own memory (heaps);
    RssFile is file pages mapped in, here the lexical index's segments, which the kernel
    can drop at any time and which grow with the index, not with the learn's progress."""
    fields: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                fields[key] = int(line.split()[1])
    except OSError:
        return None
    if len(fields) < 3:
        return None
    return fields["VmRSS"], fields["RssAnon"], fields["RssFile"]


def _documents(db: Path) -> int | None:
    path = db / ".kbdb" / "kb.sqlite"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.1)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbdb.cli", *args]


def run_baseline() -> dict[str, Any]:
    """Peak RSS of ``kbdb stats`` on an empty knowledge base: the floor under a learn."""
    with tempfile.TemporaryDirectory(prefix="bench-learn-") as tmp:
        subprocess.run(cli("init", tmp), check=True, capture_output=True)
        proc = subprocess.Popen(cli("stats", "--db", tmp), stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {"command": "kbdb stats (empty knowledge base)", "peak_rss_mb": usage.ru_maxrss / 1024}


def run_learn(corpus: Path, files: int) -> dict[str, Any]:
    """``kbdb init`` + ``kbdb learn`` of ``corpus``: wall time, RSS samples, counts."""
    with tempfile.TemporaryDirectory(prefix="bench-learn-") as tmp:
        db = Path(tmp) / "kb"
        subprocess.run(cli("init", str(db)), check=True, capture_output=True)
        out_path = Path(tmp) / "stdout.txt"
        # (seconds, RSS KiB, documents, RssAnon KiB, RssFile KiB)
        samples: list[tuple[float, int, int, int, int]] = []
        with out_path.open("wb") as out, open(os.devnull, "wb") as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                cli("learn", "--db", str(db), str(corpus)), stdout=out, stderr=err
            )
            docs = 0
            while True:
                # wait4 with WNOHANG reaps the child with its rusage (poll() would lose it).
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == proc.pid:
                    break
                rss = _rss_kb(proc.pid)
                docs = _documents(db) or docs
                if rss is not None:
                    samples.append((time.perf_counter() - t0, rss[0], docs, rss[1], rss[2]))
                time.sleep(SAMPLE_S)
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
        code = proc.returncode
        summary = out_path.read_text(encoding="utf-8", errors="replace").splitlines()
        if code not in (0, 1):  # 1: some files skipped (reported)
            raise RuntimeError(f"kbdb learn {corpus} exited {code}")
        conn = sqlite3.connect(db / ".kbdb" / "kb.sqlite")
        sections = conn.execute("SELECT COUNT(*) FROM sections WHERE retired_at IS NULL").fetchone()
        documents = conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        conn.close()
    marks: dict[str, float | None] = {}
    anon: dict[str, float | None] = {}
    mapped: dict[str, float | None] = {}
    for pct in RSS_MARKS:
        goal = documents * pct / 100
        hit = next((s for s in samples if s[2] >= goal), samples[-1] if samples else None)
        marks[f"{pct}%"] = None if hit is None else round(hit[1] / 1024, 1)
        anon[f"{pct}%"] = None if hit is None else round(hit[3] / 1024, 1)
        mapped[f"{pct}%"] = None if hit is None else round(hit[4] / 1024, 1)
    return {
        "files": files,
        "documents": documents,
        "sections": sections[0],
        "learn_s": wall,
        "files_per_s": files / wall,
        "sections_per_s": sections[0] / wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mb_at_files": marks,
        "rss_anon_mb_at_files": anon,
        "rss_file_mb_at_files": mapped,
        "rss_samples": [
            (round(t, 2), round(r / 1024, 1), d, round(a / 1024, 1), round(f / 1024, 1))
            for t, r, d, a, f in samples[:: max(1, len(samples) // 40)]
        ],
        "summary": summary[0] if summary else "",
    }


# -- learn_many vs bm25s -----------------------------------------------------------------


def best_of(rounds: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def learn_many_vs_bm25s(rounds: int) -> dict[str, Any]:
    from kbdb import KnowledgeBase
    from kbdb.evaluation.beir import dataset_paths, load_beir
    from kbdb.evaluation.run import learn_corpus
    from peers import Bm25s, NotInstalled

    ds = load_beir(*dataset_paths(SCIFACT))
    sections = 0

    def learn() -> None:
        nonlocal sections
        with tempfile.TemporaryDirectory(prefix="bench-learn-many-") as tmp:
            kb = KnowledgeBase.init(Path(tmp))
            _, sections = learn_corpus(kb, ds.corpus)
            kb.close()

    out: dict[str, Any] = {"documents": len(ds.corpus), "checksums": ds.checksums}
    out["learn_many_s"] = best_of(rounds, learn)
    out["sections"] = sections
    out["learn_many_sections_per_s"] = sections / out["learn_many_s"]
    try:
        b = Bm25s()
        texts = [f"{d.title} {d.text}" for d in ds.corpus]
        out["bm25s_s"] = best_of(rounds, lambda: b.index_tokens(b.tokenize(texts)))
        out["bm25s_docs_per_s"] = len(texts) / out["bm25s_s"]
        out["ratio_vs_bm25s"] = ratio(out["learn_many_sections_per_s"], out["bm25s_docs_per_s"])
    except NotInstalled as e:
        out["bm25s"] = f"not installed ({e})"
    return out


# -- main ---------------------------------------------------------------------------------


def iter_targets(args: argparse.Namespace) -> Iterator[tuple[str, Path, str | None]]:
    for name in args.corpus or DEFAULT_CORPORA:
        yield name, CORPORA / name, None
    if args.files:
        root, digest = synthetic_tree(args.files, args.cache)
        yield f"synthetic {args.files:,} files", root, digest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", help="folder name under shared/corpora")
    ap.add_argument(
        "--files", type=int, default=DEFAULT_FILES, help="synthetic tree size (0: none)"
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of learn_many and bm25s")
    ap.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("KBDB_BENCH_CACHE", tempfile.gettempdir())) / "kbdb-bench",
        help="where the synthetic tree is written once",
    )
    ap.add_argument("--name", default="learn", help="result file name (benches/results/NAME.json)")
    ap.add_argument("--worker-many", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_many:
        print(json.dumps(learn_many_vs_bm25s(args.rounds)))
        return 0

    # In a child too: a parent holding SciFact and bm25s would lend its RSS to every
    # child it forks (ru_maxrss counts the pages a fork shares before exec).
    worker = [sys.executable, __file__, "--worker-many", "--rounds", str(args.rounds)]
    many = json.loads(subprocess.run(worker, check=True, capture_output=True).stdout)
    baseline = run_baseline()
    results: list[dict[str, Any]] = []
    for name, path, digest in iter_targets(args):
        if not path.is_dir():
            results.append({"corpus": name, "status": f"missing: {path}"})
            continue
        r = run_learn(path, count_files(path))
        r.update({"corpus": name, "path": str(path), "checksum": digest or tree_checksum(path)})
        results.append(r)

    print_table(
        "kbdb learn (CLI, fresh knowledge base, one process each)",
        ["corpus", "files", "sections", "seconds", "files/s", "sections/s", "peak RSS MB"]
        + [f"RSS MB at {p}%" for p in RSS_MARKS]
        + ["anon MB at " + "/".join(f"{p}" for p in RSS_MARKS) + "%"],
        [
            [
                r["corpus"],
                r.get("files", r.get("status")),
                r.get("sections"),
                r.get("learn_s"),
                r.get("files_per_s"),
                r.get("sections_per_s"),
                r.get("peak_rss_mb"),
                *[r.get("rss_mb_at_files", {}).get(f"{p}%") for p in RSS_MARKS],
                "/".join(
                    f"{r.get('rss_anon_mb_at_files', {}).get(f'{p}%') or 0:.0f}" for p in RSS_MARKS
                ),
            ]
            for r in results
        ],
    )
    print_table(
        f"SciFact, {many['documents']:,} abstracts (best of {args.rounds})",
        ["system", "seconds", "sections/s", "ratio"],
        [
            ["kbdb learn_many", many["learn_many_s"], many["learn_many_sections_per_s"], None],
            [
                "bm25s tokenize+index",
                many.get("bm25s_s"),
                many.get("bm25s_docs_per_s"),
                many.get("ratio_vs_bm25s"),
            ],
        ],
    )
    print(f"baseline: {baseline['command']}: peak RSS {baseline['peak_rss_mb']:.1f} MB")
    headline = [
        {
            "what": f"kbdb learn {r['corpus']} ({r['files']:,} files, {r['sections']:,} sections)",
            "kbdb": f"{r['files_per_s']:,.0f} files/s, {r['sections_per_s']:,.0f} sections/s",
            "peers": "peak RSS {:.0f} MB; RSS at 10/50/100 % of files {}".format(
                r["peak_rss_mb"],
                "/".join(f"{r['rss_mb_at_files'][f'{p}%']:.0f}" for p in RSS_MARKS),
            ),
        }
        for r in results
        if "files" in r
    ]
    if "ratio_vs_bm25s" in many:
        headline.append(
            {
                "what": "learn_many SciFact sections/s",
                "kbdb": f"{many['learn_many_sections_per_s']:,.0f}",
                "peers": f"bm25s tokenize+index {many['bm25s_docs_per_s']:,.0f}/s "
                f"({many['ratio_vs_bm25s']:.2f}x)",
            }
        )
    write_result(
        args.name,
        {
            "parameters": {
                "files": args.files,
                "per_folder": PER_FOLDER,
                "seed": SEED,
                "rounds": args.rounds,
                "rss_sample_s": SAMPLE_S,
            },
            "checksums": {
                "scifact_corpus": sha256(SCIFACT / "corpus.jsonl"),
                **{r["corpus"]: r["checksum"] for r in results if "checksum" in r},
            },
            "corpora": {r["corpus"]: r for r in results},
            "learn_many_scifact": many,
            "baseline": baseline,
            "headline": headline,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
