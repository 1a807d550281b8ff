"""MCP overhead: round-trip latency of the ``search`` tool against ``kb.search`` (issue 6).

SciFact (5,183 sections, its 300 judged queries) is learned into a temporary knowledge base.
Then each query runs, limit 10, lexical:

- ``kb.search`` called directly in this process;
- the ``search`` tool through the SDK's ``ClientSession`` over ``stdio_client`` against
  ``kbdb mcp`` in a subprocess (the client also validates every result against the tool's
  output schema, as it does for a real agent);
- the same tool over the same pipe with hand-written JSON-RPC lines (no client library),
  which separates the server's cost from the SDK client's.

The goal is under 5 ms of overhead (MCP p50 minus direct p50).

    python benches/bench_mcp.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SCIFACT, latency_stats, print_table, sha256, write_result  # noqa: E402

LIMIT = 10


def direct(kbdir: Path, queries: list[str], rounds: int) -> list[float]:
    from kbdb import KnowledgeBase

    with KnowledgeBase.open(kbdir) as kb:
        for q in queries[:20]:
            kb.search(q, limit=LIMIT)
        out: list[float] = []
        for _ in range(rounds):
            for q in queries:
                t0 = time.perf_counter()
                kb.search(q, limit=LIMIT)
                out.append(time.perf_counter() - t0)
    return out


def sdk_client(kbdir: Path, queries: list[str], rounds: int) -> list[float]:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kbdb.cli", "mcp", "--db", str(kbdir)]
    )
    out: list[float] = []

    async def main() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            for q in queries[:20]:
                await s.call_tool("search", {"query": q, "limit": LIMIT})
            for _ in range(rounds):
                for q in queries:
                    t0 = time.perf_counter()
                    res = await s.call_tool("search", {"query": q, "limit": LIMIT})
                    out.append(time.perf_counter() - t0)
                    assert not res.is_error, res.content

    anyio.run(main)
    return out


def raw_pipe(kbdir: Path, queries: list[str], rounds: int) -> list[float]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    ids = iter(range(1, 10**9))

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(ids)
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        proc.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            frame: dict[str, Any] = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if frame.get("id") == rid:
                return frame

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    request("initialize", init)
    proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    proc.stdin.flush()
    call = {"name": "search", "arguments": {}}
    for q in queries[:20]:
        request("tools/call", {**call, "arguments": {"query": q, "limit": LIMIT}})
    out: list[float] = []
    for _ in range(rounds):
        for q in queries:
            t0 = time.perf_counter()
            frame = request("tools/call", {**call, "arguments": {"query": q, "limit": LIMIT}})
            out.append(time.perf_counter() - t0)
            assert not frame["result"].get("isError"), frame
    proc.stdin.close()
    proc.wait(timeout=30)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="passes over the 300 queries")
    args = ap.parse_args()

    from kbdb import KnowledgeBase
    from kbdb.eval import learn_corpus
    from kbdb.evaluation.beir import dataset_paths, load_beir

    paths = dataset_paths(SCIFACT)
    ds = load_beir(*paths)
    queries = [t for _, t in ds.queries]
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        kb = KnowledgeBase.init(tmp)
        _, sections = learn_corpus(kb, ds.corpus)
        kbdir = kb.path
        kb.close()
        runs = {
            "kb.search (direct)": direct(kbdir, queries, args.rounds),
            "MCP search, SDK ClientSession over stdio": sdk_client(kbdir, queries, args.rounds),
            "MCP search, raw JSON-RPC over stdio": raw_pipe(kbdir, queries, args.rounds),
        }
    stats = {name: latency_stats(s) for name, s in runs.items()}
    base = stats["kb.search (direct)"]
    rows = []
    results = []
    for name, st in stats.items():
        overhead = st["p50_ms"] - base["p50_ms"]
        overhead95 = st["p95_ms"] - base["p95_ms"]
        results.append(
            {
                "system": name,
                "queries": len(runs[name]),
                **st,
                "overhead_p50_ms": overhead,
                "overhead_p95_ms": overhead95,
            }
        )
        rows.append([name, st["p50_ms"], st["p95_ms"], overhead, overhead95, st["qps"]])
    print_table(
        f"search round trip on SciFact ({sections} sections, {len(queries)} queries x "
        f"{args.rounds}, limit {LIMIT})",
        ["system", "p50 ms", "p95 ms", "overhead p50 ms", "overhead p95 ms", "q/s"],
        rows,
    )
    path = write_result(
        "mcp_latency",
        {
            "dataset": {
                "name": "scifact",
                "sections": sections,
                "queries": len(queries),
                "checksums": {
                    k: sha256(p) for k, p in zip(("corpus", "queries", "qrels"), paths, strict=True)
                },
            },
            "rounds": args.rounds,
            "limit": LIMIT,
            "goal": "MCP overhead at p50 under 5 ms",
            "results": results,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
