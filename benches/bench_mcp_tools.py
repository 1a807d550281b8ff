"""The size of ``kbdb mcp``'s tool list, as a client receives it, for each ``--tools`` surface.

Every MCP client fetches ``tools/list`` when a session starts, and most put the whole of it
(names, descriptions, input and output schemas) into the model's context on every turn. This
measures that cost: the SDK's ``ClientSession`` over ``stdio_client`` against ``kbdb mcp`` on
a new knowledge base, for ``--tools core`` (the default), ``--tools all`` and any other
values given. The size is the bytes of the ``result`` object of the response as the server
wrote it (compact UTF-8 JSON); tokens are estimated as bytes / 4.

    python benches/bench_mcp_tools.py [--tools core,related ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

import kbdb

BYTES_PER_TOKEN = 4  # a rough rule for JSON and English prose


def listed_bytes(result: types.ListToolsResult) -> int:
    """The result as sent: the client parsed it from the frame, so the fields it set are those
    on the wire (``exclude_unset`` leaves out the defaults its model adds)."""
    data = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


async def measure(kbdir: Path, tools: str) -> tuple[int, int]:
    """(tools offered, bytes of tools/list) for ``kbdb mcp --tools TOOLS``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdb.cli", "mcp", "--db", str(kbdir), "--tools", tools],
        env=dict(os.environ),  # keeps PYTHONPATH, so a source tree measures itself
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
    return len(listed.tools), listed_bytes(listed)


async def main(surfaces: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kb = kbdb.KnowledgeBase.init(Path(tmp))
        kbdir = kb.path
        kb.close()
        print(f"{'--tools':<24} {'tools':>5} {'bytes':>7} {'~tokens':>8}")
        for tools in surfaces:
            count, size = await measure(kbdir, tools)
            print(f"{tools:<24} {count:>5} {size:>7,} {size // BYTES_PER_TOKEN:>8,}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", action="append", default=[], help="another surface")
    args = parser.parse_args()
    anyio.run(main, ["core", "all", *args.tools])
