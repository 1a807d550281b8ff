"""Maintenance at scale (SPEC §8): ``check``, ``gc``, ``rebuild``, ``export`` and ``import``
times at 10k and 100k sections, and how they scale.

Sections are built from the SciFact corpus (../shared/datasets/scifact/corpus.jsonl): each
is a heading (a paper title) over three sentences drawn from different abstracts with a
fixed seed, so sections are distinct (no near-duplicate storms) and look like real prose.
They are learned with ``kb.learn_many``, one section per item. Before ``gc``, 1% of the
sections are orphaned (their document entries deleted) and 1% retired by ``replace``
learns, so gc has real work: orphans to delete, tombstones to merge, a database to vacuum.
Every timing is one cold run in this process (lexical only: no embedding provider).

    python benches/bench_maintenance.py [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SCIFACT, peak_rss_mb, print_table, ratio, sha256, write_result  # noqa: E402

SEED = 20260
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def corpus_sentences() -> tuple[list[str], list[str]]:
    titles: list[str] = []
    sentences: list[str] = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            titles.append(doc["title"].strip() or "Untitled")
            sentences += [s for s in SENTENCE.split(doc["text"]) if len(s) > 20]
    return titles, sentences


def items(n: int, titles: list[str], sentences: list[str]) -> list[Any]:
    from kbdb import LearnItem

    rng = random.Random(SEED)
    out = []
    for i in range(n):
        body = " ".join(rng.choice(sentences) for _ in range(3))
        out.append(LearnItem(f"# {rng.choice(titles)} ({i})\n\n{body}\n", docid=f"doc-{i:07d}"))
    return out


def timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def make_garbage(kb: Any, n: int, titles: list[str], sentences: list[str]) -> dict[str, int]:
    """Orphan 1% of the sections (SQL), retire another 1% (replace learns)."""
    from kbdb import LearnItem

    k = max(1, n // 100)
    con = sqlite3.connect(kb.path / "kb.sqlite")
    with con:
        con.execute(
            "DELETE FROM document_sections WHERE docid IN"
            " (SELECT docid FROM documents ORDER BY docid LIMIT ?)",
            (k,),
        )
    con.close()
    rng = random.Random(SEED + 1)
    kb.learn_many(
        (
            LearnItem(
                f"# replaced {i}\n\n{rng.choice(sentences)} {rng.choice(sentences)}\n",
                docid=f"doc-{n - 1 - i:07d}",
                replace=True,
            )
            for i in range(k)
        ),
        batch=2048,
    )
    return {"orphaned": k, "replaced_documents": k}


def run_size(n: int, titles: list[str], sentences: list[str], work: Path) -> dict[str, Any]:
    from kbdb import KnowledgeBase

    root = work / f"kb-{n}"
    kb = KnowledgeBase.init(root)
    learn_s, _ = timed(lambda: kb.learn_many(items(n, titles, sentences), batch=2048))
    stats = kb.stats()
    out: dict[str, Any] = {
        "sections": stats.sections,
        "learn_s": learn_s,
        "db_bytes": stats.db_bytes,
        "index_bytes": stats.index_bytes,
        "index_segments_after_learn": stats.index_segments,
    }
    out["check_s"], res = timed(kb.check)
    out["check_ok"] = res.ok
    out["export_s"], exp = timed(lambda: kb.export(work / f"export-{n}"))
    out["exported_sections"] = exp.sections_exported
    out["reexport_unchanged_s"], _ = timed(lambda: kb.export(work / f"export-{n}"))
    kb2 = KnowledgeBase.init(work / f"import-{n}")
    out["import_s"], imp = timed(lambda: kb2.import_snapshot(work / f"export-{n}"))
    out["imported_sections"] = imp.sections_imported
    kb2.close()
    out["rebuild_s"], rb = timed(lambda: kb.rebuild(vectors=False))
    out["rebuilt_sections"] = rb.sections
    out["garbage"] = make_garbage(kb, n, titles, sentences)
    out["index_segments_before_gc"] = kb.stats().index_segments
    out["gc_dry_run_s"], dry = timed(lambda: kb.gc(dry_run=True))
    out["gc_s"], gc = timed(kb.gc)
    out["gc"] = {k: v for k, v in gc.to_dict().items() if k != "removed"}
    out["gc_matches_dry_run"] = (
        dry.removed == gc.removed and dry.index_entries_removed == gc.index_entries_removed
    )
    out["index_segments_after_gc"] = kb.stats().index_segments
    out["check_after_gc_s"], res = timed(kb.check)
    out["check_after_gc_ok"] = res.ok
    kb.close()
    return out


def headline(results: dict[str, Any], scaling: dict[str, Any]) -> list[dict[str, str]]:
    """The README row: each operation's time at the largest size, and its scaling."""
    big = max(results, key=int)
    r = results[big]
    parts = [
        f"{op} {r[op + '_s']:.1f} s"
        + (f" (x{scaling[op + '_s']['ratio']:.1f})" if op + "_s" in scaling else "")
        for op in ("check", "gc", "rebuild", "export", "import")
    ]
    what = f"maintenance at {int(big):,} sections"
    if scaling:
        what += f" (xN: time ratio for {next(iter(scaling.values()))['size_ratio']:.0f}x sections)"
    return [{"what": what, "kbdb": ", ".join(parts), "peers": "—"}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--keep", help="build under this folder and keep it")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    titles, sentences = corpus_sentences()
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench-maint-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    try:
        for n in sizes:
            print(f"size {n} ...", flush=True)
            results[str(n)] = run_size(n, titles, sentences, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    ops = ("check_s", "gc_s", "gc_dry_run_s", "rebuild_s", "export_s", "import_s")
    scaling: dict[str, Any] = {}
    if len(sizes) >= 2:
        lo, hi = str(sizes[0]), str(sizes[-1])
        factor = sizes[-1] / sizes[0]
        for op in ops:
            r = ratio(results[hi][op], results[lo][op])
            # exponent k of time ∝ n^k: 1.0 is linear
            scaling[op] = {"ratio": r, "size_ratio": factor}
    payload = {
        "dataset": {"scifact_corpus_sha256": sha256(SCIFACT / "corpus.jsonl"), "seed": SEED},
        "sizes": results,
        "scaling": scaling,
        "peak_rss_mb": peak_rss_mb(),
        "headline": headline(results, scaling),
    }
    path = write_result("maintenance", payload)
    rows = []
    for op in ops:
        rows.append(
            [op.removesuffix("_s")]
            + [results[str(n)][op] for n in sizes]
            + ([scaling[op]["ratio"]] if scaling else [])
        )
    headers = ["operation", *(f"{n:,} sections (s)" for n in sizes)]
    if scaling:
        headers.append(f"time ratio ({sizes[-1] // sizes[0]}x sections)")
    print_table("kbdb maintenance", headers, rows)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
