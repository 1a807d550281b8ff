"""``kbdb mcp --watch``: a real MCP client over stdio against a server that keeps a folder
fresh in the background, with real file-system events."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, stdio_client
from tests.cli.conftest import cli_env
from tests.mcp.conftest import ALL_TOOLS, Conn, make_kb, server_params

pytestmark = pytest.mark.anyio

BATCH_LOG = re.compile(r"^watch \S+: \+(\d+) ~(\d+) -(\d+) sections")


@asynccontextmanager
async def connect_watching(kbdir: Path, errlog: Path, *folders: Path) -> AsyncIterator[Conn]:
    args = [*ALL_TOOLS, *(a for f in folders for a in ("--watch", str(f)))]  # stats is in all
    conn: Conn | None = None

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        assert conn is not None
        conn.logs.append(params)

    with errlog.open("w", encoding="utf-8") as err:
        async with (
            stdio_client(server_params(kbdir, *args), errlog=err) as (read, write),
            ClientSession(read, write, logging_callback=on_log) as s,
        ):
            conn = Conn(s)
            conn.init = await s.initialize()
            yield conn


async def poll(c: Conn, check: Any, timeout: float = 20.0) -> dict[str, Any]:
    """Call ``stats`` until ``check(stats)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        stats = await c.ok("stats")
        if check(stats):
            return stats
        assert time.monotonic() < deadline, stats
        await anyio.sleep(0.05)


async def docids_of(c: Conn, query: str) -> set[str]:
    items = (await c.ok("search", {"query": query}))["items"]
    return {d for item in items for d in item["docids"]}


async def test_the_server_keeps_a_folder_fresh(tmp_path: Path) -> None:
    kbdir = make_kb(tmp_path / "project")
    notes = tmp_path / "project" / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nThe capybara swims.\n")
    async with connect_watching(kbdir, tmp_path / "err.log", notes) as c:
        stats = await poll(c, lambda s: s.get("watching") and s["watching"][0]["last_synced_at"])
        folder = stats["watching"][0]
        assert folder["path"] == str(notes) and folder["present"] is True
        assert folder["documents"] == 1
        assert await docids_of(c, "capybara") == {"a.md"}

        (notes / "b.md").write_text("# B\n\nThe tapir wades.\n")
        deadline = time.monotonic() + 20
        while await docids_of(c, "tapir") != {"b.md"}:
            assert time.monotonic() < deadline
            await anyio.sleep(0.05)
        (notes / "a.md").unlink()
        await poll(c, lambda s: s["watching"][0]["documents"] == 1 and s["live_sections"] == 4)
        assert await docids_of(c, "capybara") == set()
        # the tools still write while the watcher runs (the lock is held per batch only)
        await c.ok("learn", {"content": "The dugong grazes.", "docid": "dugong"})
        assert await docids_of(c, "dugong") == {"dugong"}


async def test_a_tool_call_never_sees_half_a_batch(tmp_path: Path) -> None:
    kbdir = make_kb(tmp_path / "project")
    notes = tmp_path / "project" / "notes"
    notes.mkdir()
    async with connect_watching(kbdir, tmp_path / "err.log", notes) as c:
        base = (await poll(c, lambda s: s.get("watching")))["live_sections"]
        writer = subprocess.Popen(  # the files come from another process, as an editor's
            [
                sys.executable,
                "-c",
                "import sys, pathlib, time\n"
                "root = pathlib.Path(sys.argv[1])\n"
                "for i in range(400):\n"
                "    text = f'# N{i}\\n\\nOne {i}.\\n\\n## Two\\n\\nTwo {i}.\\n'\n"
                "    (root / f'n{i}.md').write_text(text)\n"
                "    if i % 50 == 49:\n"
                "        time.sleep(0.2)  # a pause longer than the step: several batches\n",
                str(notes),
            ],
            env=cli_env(),
        )
        seen: set[int] = set()
        while writer.poll() is None or (await c.ok("stats"))["live_sections"] < base + 800:
            seen.add((await c.ok("stats"))["live_sections"])
            await anyio.sleep(0.01)
        seen.add((await poll(c, lambda s: s["live_sections"] == base + 800))["live_sections"])
        await anyio.sleep(0.5)  # the last batch's log notification
        # Every count a call saw is the count after some whole batch.
        whole = {base}
        total = base
        for m in c.logs:
            match = BATCH_LOG.match(str(m.data))
            if match:
                total += int(match[1]) - int(match[3])
                whole.add(total)
        assert total == base + 800, [str(m.data) for m in c.logs]
        assert seen <= whole, (sorted(seen), sorted(whole))
        assert len(whole) >= 4 and len(seen) >= 3  # batches were seen in between
