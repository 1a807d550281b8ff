"""What one ``kb.search`` is made of: each part of the lexical path timed alone.

Learns SciFact into a temporary knowledge base (as ``bench_lexical_speed.py`` does), then
times, over the 300 judged test queries, every call a lexical ``kb.search`` makes on the
way (the index refresh check, query parsing, the Rust strict and relaxed passes at the
sibling boost's candidate window, the SQLite statements for the candidates' document links
and the page's rows, uncached, and the same through the read cache that a repeated search
uses, the page's snippets in one call), and ``kb.search`` itself. The sum of
the parts, with no Python around them, is a floor for this design of the facade: the
``kb.search`` goal of BENCHMARKS.md §2 cannot be met below it (docs/benchmarks.md §2).

Best of ``--rounds`` passes per part; µs per query. A profile, not a peer benchmark: it
writes no results file.

    python benches/lexical_parts.py [--rounds 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import single_thread  # noqa: E402

single_thread()

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from typing import Any  # noqa: E402

from common import SCIFACT, print_table  # noqa: E402
from kbdb.evaluation.beir import dataset_paths, load_beir  # noqa: E402
from kbdb.search import lexical  # noqa: E402
from kbdb.search.fields import body_fields  # noqa: E402
from kbdb.search.snippet import SNIPPET_CHARS  # noqa: E402
from peers import Kbdb  # noqa: E402

PAGE = 10


def per_query_us(rounds: int, n: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    ds = load_beir(*dataset_paths(SCIFACT))
    queries = [text for _, text in ds.queries]
    kbdb = Kbdb()
    try:
        kbdb.index(ds.corpus)
        kb = kbdb.kb
        kb.search("warm up")
        searcher = kb.context.searcher()
        want = max(lexical.CANDIDATES, lexical.SIBLING_WINDOW * PAGE)
        params = {"limit": want, "allow": None, "explain": False, **searcher.bm25f_params()}
        index = searcher.index
        conn = kb.context.db.conn()
        parsed = [searcher.parse(q) for q in queries]
        candidates: list[list[str]] = []
        for p in parsed:
            strict = index.search(p.clauses, phrases=p.phrases, require_all=True, **params)
            loose = index.search(p.clauses, require_all=False, **params)
            candidates.append(list(dict.fromkeys([*strict.kbids, *loose.kbids])))
        pages = [c[:PAGE] for c in candidates]
        jobs: list[tuple[Sequence[tuple[str, str | None, list[int]]], list[list[str]]]] = []
        for p, page in zip(parsed, pages, strict=True):
            rows = lexical._read_rows(conn, page)
            every = list(range(len(p.clauses)))  # every clause: an upper bound on the terms
            page_jobs = []
            for k in page:
                r = rows[k]
                body = body_fields(r.content, r.type, None)[0]
                page_jobs.append((body, None if body is r.content else r.content, every))
            jobs.append((page_jobs, [[alt for alt, _ in alts] for alts, _ in p.clauses]))
        n = len(queries)
        snippets = searcher.analyzer.snippets
        db = kb.context.db

        def cached(cands: list[str], page: list[str]) -> None:
            # What a repeated search does instead of the two statements above.
            with db.read() as c:
                lexical._links(db, c, cands)
                lexical._hydration_rows(db, c, page)

        for c, page in zip(candidates, pages, strict=True):
            cached(c, page)  # fill the cache
        parts: list[tuple[str, Callable[[], Any]]] = [
            ("index refresh check", lambda: [kb.context.index.refresh() for _ in parsed]),
            ("query parsing", lambda: [searcher.parse(q) for q in queries]),
            (
                f"Rust strict pass, top {want}",
                lambda: [
                    index.search(p.clauses, phrases=p.phrases, require_all=True, **params)
                    for p in parsed
                ],
            ),
            (
                f"Rust relaxed pass, top {want}",
                lambda: [index.search(p.clauses, require_all=False, **params) for p in parsed],
            ),
            (
                "SQLite: document links of the candidates (uncached)",
                lambda: [lexical._read_links(conn, c) for c in candidates],
            ),
            (
                f"SQLite: the page's {PAGE} rows (uncached)",
                lambda: [lexical._read_rows(conn, page) for page in pages],
            ),
            (
                "read snapshot, links and rows from the read cache",
                lambda: [cached(c, page) for c, page in zip(candidates, pages, strict=True)],
            ),
            (
                f"the page's {PAGE} snippets, one call",
                lambda: [snippets(j, a, width=SNIPPET_CHARS) for j, a in jobs],
            ),
        ]
        rows_out: list[list[Any]] = []
        total = 0.0
        for name, fn in parts:
            us = per_query_us(args.rounds, n, fn)
            if "(uncached)" not in name:  # kb.search, repeated, reads the cache instead
                total += us
            rows_out.append([name, us])
        rows_out.append(["sum of the parts but the uncached statements", total])
        whole = per_query_us(args.rounds, n, lambda: [kb.search(q, limit=PAGE) for q in queries])
        rows_out.append(["kb.search", whole])
        print_table(
            f"one lexical kb.search on SciFact, {n} queries (best of {args.rounds})",
            ["part", "µs per query"],
            rows_out,
        )
    finally:
        kbdb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
