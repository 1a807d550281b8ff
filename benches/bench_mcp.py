"""MCP overhead: round-trip latency of the ``search`` tool against ``kb.search``.

SciFact (5,183 sections, its 300 judged queries) is learned into a temporary knowledge base.
Then each query runs, limit 10, lexical:

- ``kb.search`` called directly in this process;
- the ``search`` tool through the SDK's ``ClientSession`` over ``stdio_client`` against
  ``kbdb mcp`` in a subprocess (the client also validates every result against the tool's
  output schema, as it does for a real agent);
- the same tool over the same pipe with hand-written JSON-RPC lines (no client library),
  which separates the server's cost from the SDK client's.

Direct and MCP calls alternate in blocks of the 300 queries (not query by query: the
engine's worker threads spin briefly after a search, and would steal the server's cores),
round after round, so that both see similar machine load. The goal is under 5 ms of
overhead: MCP p50 minus direct p50. The round trip of a line through a Python echo process,
the floor of two process wake-ups on this machine, is reported too.

Wall times stretch with the machine's load (the load average is recorded). CPU time does
not: the table also gives CPU milliseconds per call spent by a direct ``kb.search``, by the
server per MCP call (read from /proc for the child process) and by the client.

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
# Direct and MCP calls run in alternating blocks, not query by query: the engine's worker
# threads spin for a moment after each search, and on a small machine a direct search
# interleaved with each MCP call steals the cores the server needs (measured: +10 ms).
SETTLE = 0.5  # seconds between blocks


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's child processes (the
    server): unlike wall time, it does not stretch when other programs load the machine."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


class Cpu:
    """CPU seconds spent in direct searches, in the server and in the client, per phase."""

    def __init__(self) -> None:
        self.direct = self.server = self.client = 0.0

    def per_call_ms(self, n: int) -> dict[str, float]:
        return {
            "direct_cpu_ms": self.direct / n * 1000,
            "server_cpu_ms": self.server / n * 1000,
            "client_cpu_ms": self.client / n * 1000,
        }


def timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def sdk_client(
    kbdir: Path, queries: list[str], rounds: int, cpu: Cpu
) -> tuple[list[float], list[float]]:
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
                    c0 = time.process_time()
                    for q in queries:
                        direct.append(timed(kb.search, q, limit=LIMIT))
                    cpu.direct += time.process_time() - c0
                    await anyio.sleep(SETTLE)
                    c0, s0 = time.process_time(), children_cpu()
                    for q in queries:
                        t0 = time.perf_counter()
                        res = await s.call_tool("search", {"query": q, "limit": LIMIT})
                        mcp.append(time.perf_counter() - t0)
                        assert not res.is_error, res.content
                    cpu.client += time.process_time() - c0
                    cpu.server += children_cpu() - s0

    anyio.run(session)
    return direct, mcp


def raw_pipe(
    kbdir: Path, queries: list[str], rounds: int, cpu: Cpu
) -> tuple[list[float], list[float]]:
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
            c0 = time.process_time()
            for q in queries:
                direct.append(timed(kb.search, q, limit=LIMIT))
            cpu.direct += time.process_time() - c0
            time.sleep(SETTLE)
            c0, s0 = time.process_time(), children_cpu()
            for q in queries:
                mcp.append(timed(search, q))
            cpu.client += time.process_time() - c0
            cpu.server += children_cpu() - s0
    stdin.close()
    proc.wait(timeout=30)
    return direct, mcp


ECHO = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"


def pipe_floor(queries: list[str], rounds: int) -> list[float]:
    """Round trips of a line through a Python echo process: the cost of two process wake-ups
    over pipes on this machine, which no server can go below."""
    proc = subprocess.Popen(
        [sys.executable, "-c", ECHO], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None
    out: list[float] = []
    for _ in range(rounds):
        for q in queries:
            line = json.dumps({"jsonrpc": "2.0", "id": 1, "params": {"query": q}}).encode()
            t0 = time.perf_counter()
            stdin.write(line + b"\n")
            stdin.flush()
            stdout.readline()
            out.append(time.perf_counter() - t0)
    stdin.close()
    proc.wait(timeout=30)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="passes over the 300 queries")
    args = ap.parse_args()

    from kbdb import KnowledgeBase
    from kbdb.evaluation.beir import dataset_paths, load_beir
    from kbdb.evaluation.run import learn_corpus

    paths = dataset_paths(SCIFACT)
    ds = load_beir(*paths)
    queries = [t for _, t in ds.queries]
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        kb = KnowledgeBase.init(tmp)
        _, sections = learn_corpus(kb, ds.corpus)
        kbdir = kb.path
        kb.close()
        cpus = {"SDK ClientSession over stdio": Cpu(), "raw JSON-RPC over stdio": Cpu()}
        pairs = {
            "SDK ClientSession over stdio": sdk_client(
                kbdir, queries, args.rounds, cpus["SDK ClientSession over stdio"]
            ),
            "raw JSON-RPC over stdio": raw_pipe(
                kbdir, queries, args.rounds, cpus["raw JSON-RPC over stdio"]
            ),
        }
    floor = latency_stats(pipe_floor(queries, args.rounds))
    rows: list[list[Any]] = []
    results = []
    for name, (base_s, mcp_s) in pairs.items():
        base, st = latency_stats(base_s), latency_stats(mcp_s)
        result = {
            "client": name,
            "queries": len(mcp_s),
            "mcp": st,
            "direct": base,
            "overhead_p50_ms": st["p50_ms"] - base["p50_ms"],
            "overhead_p95_ms": st["p95_ms"] - base["p95_ms"],
            **cpus[name].per_call_ms(len(mcp_s)),
        }
        results.append(result)
        rows.append(
            [
                name,
                base["p50_ms"],
                st["p50_ms"],
                st["p95_ms"],
                result["overhead_p50_ms"],
                result["overhead_p95_ms"],
                result["direct_cpu_ms"],
                result["server_cpu_ms"],
                result["client_cpu_ms"],
            ]
        )
    rows.append(
        ["pipe echo round trip (floor)", None, floor["p50_ms"], floor["p95_ms"], None, None]
    )
    print_table(
        f"search tool round trip vs kb.search on SciFact ({sections} sections, "
        f"{len(queries)} queries x {args.rounds}, limit {LIMIT})",
        [
            "client",
            "kb.search p50",
            "MCP p50",
            "MCP p95",
            "overhead p50",
            "overhead p95",
            "CPU direct",
            "CPU server",
            "CPU client",
        ],
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
            "pipe_echo_floor": floor,
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
