"""BENCHMARKS.md §3: the vector scan, top 10, against numpy, faiss and usearch; the exact
f32 scan and the quantized one (``vectors.q8``).

Data: synthetic L2-normalized 384-d float32 vectors (seeded standard normal rows,
normalized) at 10k, 100k and 1M, and random unit queries. Every system returns the exact
top 10 by inner product (= cosine here):

- kbdb: ``VectorIndex.search(exact=True)`` over ``vectors.idx`` (mmap, SIMD kernel chosen
  at run time, rayon above 16k vectors), records of 16 + 1536 bytes;
- kbdb_q8: ``VectorIndex.search`` with ``quantized_scan`` on: the int8 copy ``vectors.q8``
  (384 bytes a row) picks ``q8_candidates(10)`` = 100 candidates, rescored exactly from
  ``vectors.idx``; GB/s counts the q8 rows only;
- numpy: ``X @ q`` then ``argpartition`` (BLAS sgemv);
- faiss: ``IndexFlatIP.search(q, 10)``;
- usearch: ``usearch.index.search(X, q, 10, MetricKind.IP, exact=True)``.

The machine's read bandwidth is measured in the same rounds, twice: a numpy u64 sum over
a 1.5 GB array (one thread, or chunks on a pool of threads; numpy releases the GIL), and
``VectorIndex.stream_read``, a plain XOR of every byte of the same mapped ``vectors.idx``
(at 10k and 100k that file sits in the CPU caches, so its speed is reported apart). The
larger DRAM figure is the yardstick for "of bandwidth".

Recall of kbdb_q8 (recall@10 against kbdb's exact scan: same scores bit for bit) is
reported on the Gaussian rows above, where it is easy, and on *real-ish* vectors, the
honest test: the 5,183 SciFact abstracts embedded by all-MiniLM-L6-v2, padded to each size
with samples of a Gaussian fitted to them (their mean and full covariance, then
L2-normalized: the anisotropy of real embeddings), queried by the embeddings of the 300
SciFact test queries (100 at 1M), with a sweep over the candidate count. The embeddings
come from the SciFact knowledge base below (cached as ``scifact-minilm.npz`` beside it).

SciFact hybrid nDCG@10 with and without ``quantized_scan``: ``kbdb.evaluation.run.run_eval`` (what
``kbdb eval`` does) on one persistent knowledge base (``--scifact-kb``, default
``/tmp/kbdb-bench-cache/scifact-minilm``; learning and embedding SciFact takes ~10 min of
CPU the first time), the model from ``--model`` (default the shared MiniLM export).

Each thread setting runs in its own process, with ``OMP/OPENBLAS/MKL/RAYON_NUM_THREADS``
set before numpy or a peer is imported: "1 thread" and "all threads" (every usable core).
Within a process the systems and the two yardsticks are timed in interleaved rounds (one
pass over the queries each) and the fastest round counts: the least disturbed by the
shared machine. Vectors/s
is size / seconds per query; GB/s is the bytes each system reads per query.

    python benches/bench_vector_scan.py [--sizes 10000,100000,1000000] [--rounds 5]
        [--scifact-kb DIR] [--model DIR] [--no-scifact]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from common import NOT_INSTALLED, THREAD_VARS, print_table, ratio, write_result  # noqa: E402

DIMS = 384
TOP_K = 10
SIZES = (10_000, 100_000, 1_000_000)
RECORD_BYTES = 16 + 4 * DIMS  # one vectors.idx record
ROW_BYTES = 4 * DIMS  # one float32 row of a peer's matrix
BANDWIDTH_BYTES = 1_552_000_000  # the size of vectors.idx at 1M: far beyond any cache
GOAL_FRACTION = 0.8
SYSTEMS = ("kbdb", "kbdb_q8", "numpy", "faiss", "usearch")
Q8_ROW_BYTES = 384  # one vectors.q8 row at 384 dims (stride: dims rounded up to 64)
Q8_SPEEDUP_GOAL = 3.0
Q8_RECALL_GOAL = 0.99
NDCG_TOLERANCE = 0.002
CANDIDATE_SWEEP = (10, 20, 50, 100, 200)
REAL_QUERIES_AT_1M = 100
DEFAULT_SCIFACT_KB = Path("/tmp/kbdb-bench-cache/scifact-minilm")
DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "shared" / "models" / "all-MiniLM-L6-v2"


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# --- the worker: one thread setting, in its own process ---------------------------------


def unit_rows(rng: Any, n: int) -> Any:
    import numpy as np

    x = rng.standard_normal((n, DIMS), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


class NumpySum:
    """The independent bandwidth yardstick: a numpy u64 sum over BANDWIDTH_BYTES, on one
    thread or one chunk per task on a pool of ``threads`` (numpy releases the GIL)."""

    def __init__(self, threads: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np

        self.array = np.ones(BANDWIDTH_BYTES // 8, dtype=np.uint64)
        self.chunks = np.array_split(self.array, threads * 4)
        self.pool = ThreadPoolExecutor(threads) if threads > 1 else None

    def __call__(self) -> Any:
        if self.pool is None:
            return self.array.sum()
        return list(self.pool.map(lambda c: c.sum(), self.chunks))


def load_peers(threads: int) -> dict[str, Any]:
    peers: dict[str, Any] = {}
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
        peers["faiss"] = faiss
    except ImportError:
        peers["faiss"] = None
    try:
        import usearch.index

        peers["usearch"] = usearch.index
    except ImportError:
        peers["usearch"] = None
    return peers


def bench_size(
    n: int, threads: int, rounds: int, peers: dict[str, Any], numpy_sum: NumpySum
) -> dict[str, Any]:
    import numpy as np

    from kbdb._core import VectorIndex

    rng = np.random.default_rng(n)
    x = unit_rows(rng, n)
    queries = unit_rows(rng, 10 if n >= 1_000_000 else 30)
    kbids = [f"{(i * 0x9E3779B97F4A7C15) % 2**128:032x}" for i in range(n)]
    out: dict[str, Any] = {
        "size": n,
        "queries": len(queries),
        "dataset": f"numpy default_rng({n}): standard normal rows, L2-normalized",
        "dataset_sha256": hashlib.sha256(x.data).hexdigest(),
        "systems": {},
    }
    with tempfile.TemporaryDirectory(prefix="kbdb-vbench-") as tmp:
        index = VectorIndex.open(tmp, create=True, dimensions=DIMS, model_name="synthetic")
        t0 = time.perf_counter()
        index.write(kbids, x, model_name="synthetic", watermark=1)
        out["kbdb_write_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = VectorIndex.open(tmp)
        out["kbdb_open_s"] = time.perf_counter() - t0
        index.set_quantized_scan(True)
        t0 = time.perf_counter()
        index.ensure_quantized()
        out["kbdb_q8_build_s"] = time.perf_counter() - t0
        out["kbdb_q8_file_bytes"] = (Path(tmp) / "vectors.q8").stat().st_size
        kbdb_threads = 1 if threads == 1 else 0
        position = {k: i for i, k in enumerate(kbids)}

        def kbdb(q: Any) -> Any:
            return index.search(q, limit=TOP_K, threads=kbdb_threads, exact=True)

        def kbdb_q8(q: Any) -> Any:
            return index.search(q, limit=TOP_K, threads=kbdb_threads)

        def numpy_scan(q: Any) -> Any:
            s = x @ q
            top = np.argpartition(-s, TOP_K)[:TOP_K]
            return top[np.argsort(-s[top])]

        per_query: dict[str, Callable[[Any], Any] | None] = {
            "kbdb": kbdb,
            "kbdb_q8": kbdb_q8,
            "numpy": numpy_scan,
            "faiss": None,
            "usearch": None,
        }
        if peers["faiss"] is not None:
            flat = peers["faiss"].IndexFlatIP(DIMS)
            flat.add(x)
            per_query["faiss"] = lambda q: flat.search(q.reshape(1, -1), TOP_K)
        if peers["usearch"] is not None:
            us = peers["usearch"]

            def usearch_scan(q: Any) -> Any:
                return us.search(x, q, TOP_K, us.MetricKind.IP, exact=True, threads=threads)

            per_query["usearch"] = usearch_scan

        # Same answers as numpy (as sets: float summation order may swap near-equal scores).
        hits = sum(
            len({position[k] for k in kbdb(q)[0]} & {int(i) for i in numpy_scan(q)})
            for q in queries
        )
        out["kbdb_recall_vs_numpy"] = hits / (TOP_K * len(queries))
        hits = sum(len(set(kbdb_q8(q)[0]) & set(kbdb(q)[0])) for q in queries)
        out["kbdb_q8_recall_vs_exact_gaussian"] = hits / (TOP_K * len(queries))

        def stream() -> Any:
            return index.stream_read(threads=kbdb_threads)

        # Every system and both yardsticks run once per round, interleaved, so that the
        # machine's load affects them alike; the fastest round of each counts.
        def every_query(fn: Callable[[Any], Any]) -> Callable[[], Any]:
            return lambda: [fn(q) for q in queries]

        timed: dict[str, Callable[[], Any]] = {
            name: every_query(fn) for name, fn in per_query.items() if fn is not None
        }
        timed["stream_read"] = stream
        timed["numpy_sum"] = numpy_sum
        for fn in timed.values():  # warm-up: page in, start BLAS/OpenMP/rayon pools
            fn()
        seconds: dict[str, list[float]] = {name: [] for name in timed}
        for _ in range(rounds):
            for name, fn in timed.items():
                # The yardsticks are cheap: two tries per round, so their best is as
                # well sampled as the systems'.
                for _ in range(2 if name in ("stream_read", "numpy_sum") else 1):
                    t0 = time.perf_counter()
                    fn()
                    seconds[name].append(time.perf_counter() - t0)
        best = {name: min(s) for name, s in seconds.items()}
        out["round_seconds"] = seconds
        out["stream_read_Bps"] = n * RECORD_BYTES / best["stream_read"]
        out["numpy_sum_Bps"] = BANDWIDTH_BYTES / best["numpy_sum"]
        for name in SYSTEMS:
            if per_query[name] is None:
                out["systems"][name] = NOT_INSTALLED
                continue
            per_vector = {"kbdb": RECORD_BYTES, "kbdb_q8": Q8_ROW_BYTES}.get(name, ROW_BYTES)
            per_q = best[name] / len(queries)
            out["systems"][name] = {
                "s_per_query": per_q,
                "vectors_per_s": n / per_q,
                "GBps": n * per_vector / per_q / 1e9,
            }
    return out


def realish_rows(docs: Any, n: int) -> Any:
    """``n`` real-ish unit vectors: the real ``docs`` first, then samples of a Gaussian
    with their mean and covariance, L2-normalized (seeded by ``n``)."""
    import numpy as np

    if n <= len(docs):
        return np.ascontiguousarray(docs[:n], dtype=np.float32)
    rng = np.random.default_rng(n)
    mean = docs.mean(axis=0)
    cov = np.cov(docs, rowvar=False) + 1e-6 * np.eye(DIMS)
    chol = np.linalg.cholesky(cov).astype(np.float32)
    out = np.empty((n, DIMS), dtype=np.float32)
    out[: len(docs)] = docs
    for start in range(len(docs), n, 100_000):
        m = min(100_000, n - start)
        x = mean.astype(np.float32) + rng.standard_normal((m, DIMS), dtype=np.float32) @ chol.T
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[start : start + m] = x
    return out


def realish_recall(n: int, real: Path) -> dict[str, Any]:
    """Recall@10 of the quantized scan against the exact one on real-ish vectors, for the
    default candidate count and a sweep; and how often the whole top 10 (kbids, order and
    scores) is identical to the exact one."""
    import numpy as np

    from kbdb._core import VectorIndex

    data = np.load(real)
    x = realish_rows(data["docs"], n)
    queries = data["queries"][: REAL_QUERIES_AT_1M if n >= 1_000_000 else None]
    kbids = [f"{(i * 0x9E3779B97F4A7C15) % 2**128:032x}" for i in range(n)]
    with tempfile.TemporaryDirectory(prefix="kbdb-vbench-real-") as tmp:
        index = VectorIndex.open(
            tmp, create=True, dimensions=DIMS, model_name="real-ish", quantized_scan=True
        )
        index.write(kbids, x, model_name="real-ish", watermark=1)
        del x
        exact = [index.search(q, limit=TOP_K, exact=True) for q in queries]
        default = index.q8_candidates(TOP_K)
        sweep: dict[str, float] = {}
        identical = 0
        for c in sorted({*CANDIDATE_SWEEP, default}):
            got = [index.search(q, limit=TOP_K, candidates=c) for q in queries]
            hits = sum(len(set(g[0]) & set(e[0])) for g, e in zip(got, exact, strict=True))
            sweep[str(c)] = hits / (TOP_K * len(queries))
            if c == default:
                identical = sum(g == e for g, e in zip(got, exact, strict=True))
    return {
        "size": n,
        "queries": len(queries),
        "dataset": "SciFact abstracts (all-MiniLM-L6-v2) + Gaussian fitted to them",
        "default_candidates": default,
        "recall_at_10": sweep[str(default)],
        "recall_at_10_by_candidates": sweep,
        "identical_top10_share": identical / len(queries),
    }


def worker(threads: int, sizes: list[int], rounds: int, dest: Path, real: Path | None) -> None:
    from kbdb._core import VectorIndex

    peers = load_peers(threads)
    numpy_sum = NumpySum(threads)
    result: dict[str, Any] = {
        "threads": threads,
        "kernel": VectorIndex.kernel(),
        "q8_kernel": VectorIndex.q8_kernel(),
        "env": {v: os.environ.get(v) for v in THREAD_VARS},
        "sizes": [bench_size(n, threads, rounds, peers, numpy_sum) for n in sizes],
    }
    # Recall does not depend on threads (the candidate set is deterministic): once.
    if real is not None and threads == 1:
        result["q8_recall_realish"] = [realish_recall(n, real) for n in sizes]
    dest.write_text(json.dumps(result), encoding="utf-8")


# --- SciFact: the real embeddings and hybrid nDCG@10 with and without q8 ----------------


def scifact_ndcg(kb: Path, model: Path) -> dict[str, Any]:
    """nDCG@10 (hybrid and vector) on SciFact with ``quantized_scan`` off and on, on one
    persistent knowledge base (created, learned and embedded on first use)."""
    from common import SCIFACT
    from kbdb.evaluation.run import run_eval

    kb.parent.mkdir(parents=True, exist_ok=True)
    base = {"embedding.provider": "onnx", "embedding.model_path": str(model)}
    out: dict[str, Any] = {"kb": str(kb), "model": str(model)}
    for mode in ("hybrid", "vector"):
        for q8 in (False, True):
            t0 = time.perf_counter()
            report = run_eval(
                SCIFACT / "corpus.jsonl",
                SCIFACT / "queries.jsonl",
                SCIFACT / "qrels",
                mode=mode,
                db=kb,
                settings={**base, "embedding.quantized_scan": str(q8).lower()},
                split="test",
            )
            key = f"{mode}_{'q8' if q8 else 'f32'}"
            out[key] = {
                "ndcg@10": report.ndcg_at_10,
                "recall@100": report.recall_at_100,
                "queries": report.queries,
                "seconds": time.perf_counter() - t0,
            }
            print(f"SciFact {mode} quantized_scan={q8}: nDCG@10 {report.ndcg_at_10:.6f}")
    out["hybrid_ndcg_delta"] = out["hybrid_q8"]["ndcg@10"] - out["hybrid_f32"]["ndcg@10"]
    out["vector_ndcg_delta"] = out["vector_q8"]["ndcg@10"] - out["vector_f32"]["ndcg@10"]
    out["q8_present"] = (kb / ".kbdb" / "indexes" / "vectors.q8").exists()
    return out


def scifact_vectors(kb: Path, model: Path) -> Path:
    """The SciFact abstracts' vectors (from the knowledge base) and the test queries'
    embeddings, cached as ``scifact-minilm.npz`` beside the knowledge base."""
    import numpy as np

    from common import SCIFACT
    from kbdb._core import VectorIndex
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.provider import make_provider

    dest = kb.parent / "scifact-minilm.npz"
    if dest.exists():
        return dest
    index = VectorIndex.open(str(kb / ".kbdb" / "indexes"))
    raw = index.get(index.kbids())
    docs = np.stack([np.frombuffer(b, dtype=np.float32) for b in raw if b is not None])
    judged = {
        line.split("\t")[0]
        for line in (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    }
    texts = [
        q["text"]
        for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if (q := json.loads(line))["_id"] in judged
    ]
    provider = make_provider(EmbeddingConfig(provider="onnx", model_path=str(model)), kbdir=None)
    queries = np.stack([np.asarray(v, dtype=np.float32) for v in provider.embed(texts)])
    np.savez(dest, docs=docs, queries=queries)
    return dest


# --- the parent: one process per thread setting, then the report ------------------------


def run_setting(threads: int, sizes: list[int], rounds: int, real: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            str(threads),
            "--sizes",
            ",".join(map(str, sizes)),
            "--rounds",
            str(rounds),
            "--dest",
            str(dest),
        ]
        if real is not None:
            cmd += ["--real", str(real)]
        subprocess.run(cmd, env=env, check=True)
        data: dict[str, Any] = json.loads(dest.read_text(encoding="utf-8"))
        return data


def summarize(setting: dict[str, Any]) -> dict[str, Any]:
    """Adds the bandwidth yardstick, our fraction of it, and our ratios to the peers."""
    # DRAM bandwidth: the numpy sum over 1.5 GB, and a streaming read of vectors.idx when
    # it is as large (smaller files stay in cache: their read speed is reported apart).
    dram = max(
        [size["numpy_sum_Bps"] for size in setting["sizes"]]
        + [
            size["stream_read_Bps"]
            for size in setting["sizes"]
            if size["size"] * RECORD_BYTES >= BANDWIDTH_BYTES // 2
        ]
    )
    setting["bandwidth_GBps"] = dram / 1e9
    for size in setting["sizes"]:
        size["bandwidth_GBps"] = dram / 1e9
        ours = size["systems"]["kbdb"]
        size["kbdb_fraction_of_bandwidth"] = ours["GBps"] / size["bandwidth_GBps"]
        size["kbdb_speedup"] = {
            peer: ratio(ours["vectors_per_s"], s["vectors_per_s"]) if isinstance(s, dict) else None
            for peer, s in size["systems"].items()
            if peer not in ("kbdb", "kbdb_q8")
        }
        q8 = size["systems"]["kbdb_q8"]
        size["kbdb_q8_vs_f32"] = ratio(q8["vectors_per_s"], ours["vectors_per_s"])
        size["kbdb_q8_speedup"] = {
            peer: ratio(q8["vectors_per_s"], s["vectors_per_s"]) if isinstance(s, dict) else None
            for peer, s in size["systems"].items()
            if peer not in ("kbdb", "kbdb_q8")
        }
    return setting


def report(settings: list[dict[str, Any]]) -> None:
    for s in settings:
        label = "1 thread" if s["threads"] == 1 else f"all threads ({s['threads']})"
        rows = []
        for size in s["sizes"]:
            for name in SYSTEMS:
                r = size["systems"][name]
                if not isinstance(r, dict):
                    rows.append([f"{size['size']:,}", name, r, None, None, None, None])
                    continue
                fraction = size["kbdb_fraction_of_bandwidth"] if name == "kbdb" else None
                if name == "kbdb":
                    speedup = None
                elif name == "kbdb_q8":
                    speedup = size["kbdb_q8_vs_f32"]  # q8 vs the f32 scan
                else:
                    speedup = size["kbdb_speedup"][name]
                rows.append(
                    [
                        f"{size['size']:,}",
                        name,
                        r["s_per_query"] * 1000,
                        r["vectors_per_s"] / 1e6,
                        r["GBps"],
                        fraction,
                        speedup,
                    ]
                )
            rows.append(
                [
                    f"{size['size']:,}",
                    "stream_read (same file)",
                    None,
                    None,
                    size["stream_read_Bps"] / 1e9,
                    None,
                    None,
                ]
            )
        print_table(
            f"Vector scan, top {TOP_K}, {DIMS}-d f32, {label}, kernel {s['kernel']} "
            f"(read bandwidth {s['bandwidth_GBps']:.1f} GB/s)",
            ["size", "system", "ms/query", "M vectors/s", "GB/s", "of bandwidth", "kbdb ×"],
            rows,
        )
        print("(kbdb × on the kbdb_q8 row: q8 vectors/s over the f32 scan's)")
        for r in s.get("q8_recall_realish", []):
            print(
                f"q8 recall@10 on real-ish vectors at {r['size']:,}: {r['recall_at_10']:.4f} "
                f"({r['default_candidates']} candidates; by candidates "
                f"{r['recall_at_10_by_candidates']}; identical top 10 "
                f"{r['identical_top10_share']:.2%})"
            )


def headline(
    settings: list[dict[str, Any]], scifact: dict[str, Any] | None, recall: float | None
) -> list[dict[str, str]]:
    """README rows: the 1M scans, f32 and q8, per thread setting; the SciFact nDCG."""
    rows = []
    for s in settings:
        size = next((z for z in s["sizes"] if z["size"] == 1_000_000), None)
        if size is None:
            continue
        label = "1 thread" if s["threads"] == 1 else f"{s['threads']} threads"
        sysd = size["systems"]
        peers = ", ".join(
            f"{p} {sysd[p]['vectors_per_s'] / 1e6:.1f}M" if isinstance(sysd[p], dict) else p
            for p in ("faiss", "numpy", "usearch")
        )
        f32 = sysd["kbdb"]["vectors_per_s"] / 1e6
        q8 = sysd["kbdb_q8"]["vectors_per_s"] / 1e6
        rows.append(
            {
                "what": f"vector scan 1M × 384, top 10, {label} (vectors/s)",
                "kbdb": f"f32 exact {f32:.1f}M ({size['kbdb_fraction_of_bandwidth']:.2f} of "
                f"bandwidth); q8 {q8:.1f}M ({size['kbdb_q8_vs_f32']:.1f}× f32"
                + (f", recall@10 {recall:.3f} real-ish" if recall is not None else "")
                + ")",
                "peers": peers,
            }
        )
    if scifact is not None:
        rows.append(
            {
                "what": "SciFact hybrid nDCG@10, quantized_scan off → on",
                "kbdb": f"{scifact['hybrid_f32']['ndcg@10']:.4f} → "
                f"{scifact['hybrid_q8']['ndcg@10']:.4f} (Δ {scifact['hybrid_ndcg_delta']:+.4f})",
                "peers": "goal: Δ within ±0.002",
            }
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dest", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--real", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--scifact-kb", type=Path, default=DEFAULT_SCIFACT_KB)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--no-scifact", action="store_true", help="skip nDCG and real-ish recall")
    ap.add_argument("--no-ndcg", action="store_true", help="skip the SciFact nDCG runs")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.worker is not None:
        worker(args.worker, sizes, args.rounds, args.dest, args.real)
        return 0
    cores = usable_cores()
    scifact: dict[str, Any] | None = None
    real: Path | None = None
    if not args.no_scifact:
        if not args.no_ndcg:
            scifact = scifact_ndcg(args.scifact_kb, args.model)
        real = scifact_vectors(args.scifact_kb, args.model)
    settings = [summarize(run_setting(t, sizes, args.rounds, real)) for t in sorted({1, cores})]
    report(settings)
    at_1m = [
        {
            "threads": s["threads"],
            "fraction_of_bandwidth": size["kbdb_fraction_of_bandwidth"],
            "kbdb_speedup": size["kbdb_speedup"],
        }
        for s in settings
        for size in s["sizes"]
        if size["size"] == 1_000_000
    ]

    def met(g: dict[str, Any]) -> bool:
        fast = all(
            v is None or v >= 1.0 for k, v in g["kbdb_speedup"].items() if k in ("numpy", "faiss")
        )
        return bool(g["fraction_of_bandwidth"] >= GOAL_FRACTION and fast)

    q8_at_1m = {
        str(s["threads"]): size["kbdb_q8_vs_f32"]
        for s in settings
        for size in s["sizes"]
        if size["size"] == 1_000_000
    }
    realish: list[dict[str, Any]] = next(
        (s["q8_recall_realish"] for s in settings if "q8_recall_realish" in s), []
    )
    min_recall = min((r["recall_at_10"] for r in realish), default=None)
    goals: dict[str, Any] = {
        "fraction_of_bandwidth_at_1M": GOAL_FRACTION,
        "no_slower_than": ["numpy", "faiss"],
        "met_by_threads": {str(g["threads"]): met(g) for g in at_1m},
        "q8": {
            "vectors_per_s_vs_f32_at_1M": Q8_SPEEDUP_GOAL,
            "measured_vs_f32_at_1M_by_threads": q8_at_1m,
            "recall_at_10_realish": Q8_RECALL_GOAL,
            "measured_min_recall_at_10_realish": min_recall,
            "hybrid_ndcg_tolerance": NDCG_TOLERANCE,
            "measured_hybrid_ndcg_delta": scifact["hybrid_ndcg_delta"] if scifact else None,
            "met": bool(
                q8_at_1m
                and all(v is not None and v >= Q8_SPEEDUP_GOAL for v in q8_at_1m.values())
                and min_recall is not None
                and min_recall >= Q8_RECALL_GOAL
                and scifact is not None
                and abs(scifact["hybrid_ndcg_delta"]) <= NDCG_TOLERANCE
            ),
        },
    }
    path = write_result(
        "vector_scan",
        {
            "dims": DIMS,
            "top_k": TOP_K,
            "sizes": sizes,
            "rounds": args.rounds,
            "usable_cores": cores,
            "goals": goals,
            "settings": settings,
            "scifact_ndcg": scifact,
            "headline": headline(settings, scifact, min_recall),
        },
    )
    verdict = ", ".join(
        f"{'1 thread' if t == '1' else t + ' threads'}: {'met' if ok else 'NOT met'}"
        for t, ok in goals["met_by_threads"].items()
    )
    print(
        f"\ngoal at 1M (≥ {GOAL_FRACTION} of bandwidth, no slower than numpy and faiss): "
        f"{verdict or 'not measured'}; wrote {path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
