"""MCP overhead: round-trip latency of the ``search`` tool against ``kb.search`` (issue 6).

SciFact (5,183 sections, its 300 judged queries) is learned into a temporary knowledge base.
Then each query runs, limit 10, lexical:

- ``kb.search`` called directly in this process, and right after it, for the same query,
- the ``search`` tool through the SDK's ``ClientSession`` over ``stdio_client`` against
  ``kbdb mcp`` in a subprocess (the client also validates every result against the tool's
  output schema, as it does for a real agent);
- the same tool over the same pipe with hand-written JSON-RPC lines (no client library),
  which separates the server's cost from the SDK client's.

Direct and MCP calls alternate query by query, so that both see the same machine load (the
machine is shared). The goal is under 5 ms of overhead: MCP p50 minus direct p50; the
median over queries of (MCP - direct) is reported too.

    python benches/bench_mcp.py [--rounds 2]
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

from common import SCIFACT, latency_stats, print_table, sha256, write_result  # noqa: E402

LIMIT = 10


def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def sdk_client(kbdir: Path, queries: list[str], rounds: int) -> tuple[list[float], list[float]]:
    """(direct, MCP) seconds per query, through the SDK's ClientSession."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from kbdb import KnowledgeBase

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kbdb.cli", "mcp", "--db", str(kbdir)]
    )
    direct: list[float] = []
    mcp: list[float] = []

    async def session() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            with KnowledgeBase.open(kbdir) as kb:
                for q in queries[:20]:
                    kb.search(q, limit=LIMIT)
                    await s.call_tool("search", {"query": q, "limit": LIMIT})
                for _ in range(rounds):
                    for q in queries:
                        direct.append(timed(kb.search, q, limit=LIMIT))
                        t0 = time.perf_counter()
                        res = await s.call_tool("search", {"query": q, "limit": LIMIT})
                        mcp.append(time.perf_counter() - t0)
                        assert not res.is_error, res.content

    anyio.run(session)
    return direct, mcp


def raw_pipe(kbdir: Path, queries: list[str], rounds: int) -> tuple[list[float], list[float]]:
    """(direct, MCP) seconds per query, with hand-written JSON-RPC lines over the pipe."""
    from kbdb import KnowledgeBase

    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    ids = iter(range(1, 10**9))

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(ids)
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        stdin.write(line.encode() + b"\n")
        stdin.flush()
        while True:
            frame: dict[str, Any] = json.loads(stdout.readline())
            if frame.get("id") == rid:
                return frame

    def search(q: str) -> None:
        args = {"query": q, "limit": LIMIT}
        frame = request("tools/call", {"name": "search", "arguments": args})
        assert not frame["result"].get("isError"), frame

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    request("initialize", init)
    stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    stdin.flush()
    direct: list[float] = []
    mcp: list[float] = []
    with KnowledgeBase.open(kbdir) as kb:
        for q in queries[:20]:
            kb.search(q, limit=LIMIT)
            search(q)
        for _ in range(rounds):
            for q in queries:
                direct.append(timed(kb.search, q, limit=LIMIT))
                mcp.append(timed(search, q))
    stdin.close()
    proc.wait(timeout=30)
    return direct, mcp


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
        pairs = {
            "SDK ClientSession over stdio": sdk_client(kbdir, queries, args.rounds),
            "raw JSON-RPC over stdio": raw_pipe(kbdir, queries, args.rounds),
        }
    rows = []
    results = []
    for name, (base_s, mcp_s) in pairs.items():
        base, st = latency_stats(base_s), latency_stats(mcp_s)
        paired = sorted(m - d for m, d in zip(mcp_s, base_s, strict=True))
        result = {
            "client": name,
            "queries": len(mcp_s),
            "mcp": st,
            "direct": base,
            "overhead_p50_ms": st["p50_ms"] - base["p50_ms"],
            "overhead_p95_ms": st["p95_ms"] - base["p95_ms"],
            "paired_overhead_median_ms": paired[len(paired) // 2] * 1000,
        }
        results.append(result)
        rows.append(
            [
                name,
                base["p50_ms"],
                st["p50_ms"],
                st["p95_ms"],
                result["overhead_p50_ms"],
                result["paired_overhead_median_ms"],
            ]
        )
    print_table(
        f"search tool round trip vs kb.search on SciFact ({sections} sections, "
        f"{len(queries)} queries x {args.rounds}, limit {LIMIT})",
        ["client", "kb.search p50", "MCP p50", "MCP p95", "overhead p50", "paired median"],
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
            "load_average": list(os.getloadavg()),
            "results": results,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
