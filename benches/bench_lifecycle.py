"""Latency of the lifecycle and navigation operations (SPEC §5) on the real corpora.

A fresh knowledge base learns ../shared/corpora/tldr and rust-book (lexical only), then
each operation runs on a seeded sample of sections or documents, timed one call each:
``outline``, ``related`` (lexical neighbours), ``documents`` pages, ``tags``, ``revise``,
``history`` (of the revised chains) and ``forget`` (of the revised sections).

    python benches/bench_lifecycle.py [--samples 100]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import CORPORA, latency_stats, print_table, single_thread, write_result  # noqa: E402

single_thread()


def timed(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[float]:
    out = []
    for item in items:
        started = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=100)
    args = ap.parse_args()

    import kbdb

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        kb = kbdb.KnowledgeBase.init(Path(tmp) / "kb")
        started = time.perf_counter()
        rep = kb.learn_path(CORPORA / "tldr", CORPORA / "rust-book", tags=["corpus"])
        learn_s = time.perf_counter() - started
        stats = kb.stats()
        docs = [d.docid for d in kb.documents(limit=1000).items]
        offset = 1000
        while True:
            page = kb.documents(limit=1000, offset=offset)
            docs += [d.docid for d in page.items]
            if not page.has_more:
                break
            offset += 1000
        n = args.samples
        sample_docs = rng.sample(docs, n)
        kbids = [rng.choice(kb.recall(docid=d).sections).kbid for d in sample_docs]
        revised: list[str] = []

        def revise(k: str) -> None:
            revised.append(kb.revise(k, f"Revised text for the benchmark, {k}.").kbid)

        ops: dict[str, list[float]] = {
            "outline": timed(kb.outline, sample_docs),
            "related": timed(lambda k: kb.related(k), kbids),
            "documents (page of 50)": timed(
                lambda o: kb.documents(offset=o), [rng.randrange(len(docs)) for _ in range(n)]
            ),
            "tags": timed(lambda _: kb.tags(), range(n)),
            "revise": timed(revise, kbids),
            "history": timed(kb.history, kbids),
            "forget": timed(lambda k: kb.forget(k), revised),
        }
        kb.close()
    rows = []
    results = {}
    for name, secs in ops.items():
        s = latency_stats(secs)
        results[name] = s
        rows.append([name, n, s["p50_ms"], s["p95_ms"]])
    print(
        f"learned {rep.sections_added} sections of {len(docs)} documents in {learn_s:.1f} s "
        f"({stats.live_sections} live)"
    )
    print_table("lifecycle operations", ["operation", "calls", "p50 ms", "p95 ms"], rows)
    write_result(
        "lifecycle",
        {
            "corpora": ["tldr", "rust-book"],
            "sections": stats.live_sections,
            "documents": len(docs),
            "samples": n,
            "operations": results,
        },
    )


if __name__ == "__main__":
    main()
