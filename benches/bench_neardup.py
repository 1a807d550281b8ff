"""BENCHMARKS.md §5: the time to learn one section, near-duplicate check
included, into knowledge bases of 10k and 100k sections (1M with ``--sizes``).

Each size gets a fresh knowledge base filled with synthetic sections (60–160 words drawn
from a Zipf vocabulary of 30k words, seeded), learned in batches as ``learn_many`` does.
Then ``--rounds`` single sections are learned one ``kb.learn`` call each, half of them
small edits of stored sections (so the near-duplicate check finds and verifies
something), and timed end to end; the check alone (band lookup + exact Jaccard) is timed
again on the same sections. The peer in the same run is the linear alternative: exact
Jaccard of one new section against every stored section's shingles (numpy), measured on
up to 100k sections and scaled linearly beyond that.

    python benches/bench_neardup.py [--sizes 10000,100000[,1000000]] [--rounds 40]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import latency_stats, print_table, single_thread, write_result  # noqa: E402

single_thread()

VOCAB = 30_000
BRUTE_MAX = 100_000


class Corpus:
    """Deterministic synthetic sections."""

    def __init__(self, seed: int) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)
        ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
        p = 1.0 / ranks**1.05
        self.p = p / p.sum()
        self.words = np.array([f"w{i:05d}" for i in range(VOCAB)])

    def text(self) -> str:
        n = int(self.rng.integers(60, 161))
        idx = self.rng.choice(VOCAB, size=n, p=self.p)
        return " ".join(self.words[idx].tolist())


def edit(text: str, rng: random.Random) -> str:
    words = text.split()
    i = rng.randrange(len(words))
    words[i] = "edited"
    return " ".join(words)


def run_size(size: int, rounds: int, seed: int) -> dict[str, Any]:
    import numpy as np

    import kbdb
    from kbdb.knowledge import neardup

    corpus = Corpus(seed)
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="bench-neardup-") as tmp:
        kb = kbdb.KnowledgeBase.init(tmp)
        t0 = time.perf_counter()
        kept: list[str] = []
        done = 0
        while done < size:
            n = min(4096, size - done)
            texts = [corpus.text() for _ in range(n)]
            kept += rng.sample(texts, min(4, n))
            kb.learn_many(
                (kbdb.LearnItem(t, docid=f"d{done + i}") for i, t in enumerate(texts)),
                batch=n,
            )
            done += n
        build_s = time.perf_counter() - t0
        learn_s: list[float] = []
        check_s: list[float] = []
        found = 0
        for r in range(rounds):
            text = edit(rng.choice(kept), rng) if r % 2 == 0 else corpus.text()
            t1 = time.perf_counter()
            rep = kb.learn(text, docid=f"new{r}")
            learn_s.append(time.perf_counter() - t1)
            kbid = rep.sections[0].kbid
            found += bool(rep.sections[0].near_duplicates)
            t2 = time.perf_counter()
            kb._learner().near.find([kbid])  # the check alone: band lookup + verification
            check_s.append(time.perf_counter() - t2)
        stats = kb.stats()
        kb.close()
        # The linear peer: exact Jaccard against every stored section.
        m = min(size, BRUTE_MAX)
        sets = [neardup.shingles(corpus.text()) for _ in range(m)]
        probe = neardup.shingles(corpus.text())
        t3 = time.perf_counter()
        best = 0.0
        for s in sets:
            inter = len(np.intersect1d(probe, s, assume_unique=True))
            best = max(best, inter / (len(probe) + len(s) - inter))
        brute_s = (time.perf_counter() - t3) * size / m
    learn = latency_stats(learn_s)
    check = latency_stats(check_s)
    return {
        "sections": size,
        "build_s": build_s,
        "build_sections_per_s": size / build_s,
        "learn_one_p50_ms": learn["p50_ms"],
        "learn_one_p95_ms": learn["p95_ms"],
        "check_p50_ms": check["p50_ms"],
        "check_p95_ms": check["p95_ms"],
        "brute_force_ms": brute_s * 1000,
        "brute_force_scaled": size > BRUTE_MAX,
        "edited_rounds_found": found,
        "edited_rounds": (rounds + 1) // 2,
        "db_bytes": stats.db_bytes,
        "rounds": rounds,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated section counts")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = []
    for size in sizes:
        print(f"building {size:,} sections …", flush=True)
        results.append(run_size(size, args.rounds, args.seed))
    print_table(
        "learn one section, near-duplicate check included (single thread)",
        [
            "sections",
            "learn p50 ms",
            "learn p95 ms",
            "check p50 ms",
            "check p95 ms",
            "brute-force ms",
            "build sections/s",
        ],
        [
            [
                f"{r['sections']:,}",
                r["learn_one_p50_ms"],
                r["learn_one_p95_ms"],
                r["check_p50_ms"],
                r["check_p95_ms"],
                r["brute_force_ms"],
                r["build_sections_per_s"],
            ]
            for r in results
        ],
    )
    first, last = results[0], results[-1]
    growth = {
        "sections_ratio": last["sections"] / first["sections"],
        "learn_p50_ratio": last["learn_one_p50_ms"] / first["learn_one_p50_ms"],
        "check_p50_ratio": last["check_p50_ms"] / first["check_p50_ms"],
    }
    print(
        f"{growth['sections_ratio']:.0f}x the sections: learn one {growth['learn_p50_ratio']:.2f}x,"
        f" near-duplicate check {growth['check_p50_ratio']:.2f}x"
    )
    write_result(
        "neardup",
        {
            "sizes": results,
            "growth": growth,
            "headline": [
                {
                    "what": f"learn one section into {r['sections']:,} (near-dup check incl.)",
                    "kbdb": f"{r['learn_one_p50_ms']:.1f} ms p50"
                    f" (check {r['check_p50_ms']:.2f} ms)",
                    "peers": f"brute-force Jaccard {r['brute_force_ms']:.0f} ms",
                }
                for r in results
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
