"""``kbdb mcp --tools``: the core surface (the default) and all of it, measured as a client
receives them, over a real stdio session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from tests.cli.conftest import cli_env
from tests.mcp.conftest import ALL_TOOLS, CORE_TOOLS, connect
from tests.mcp.test_tools import TABLE

pytestmark = pytest.mark.anyio

CORE_LIMIT = 8_000  # bytes of the tools/list result: "at most 8 KB" in docs/mcp.md
ALL_LIMIT = 20_000
DOCS = Path(__file__).resolve().parents[2] / "docs"


def listed_bytes(result: types.ListToolsResult) -> int:
    """The size of the tools/list result as the server sent it: the SDK client parsed it
    from the frame's JSON, so the fields it set are those on the wire (``exclude_unset``
    leaves out the defaults its model adds), and the server writes compact UTF-8 JSON.
    test_the_size_is_the_bytes_on_the_wire checks this against a raw session."""
    data = result.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())


def kbdb_mcp(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "mcp", *args],
        input=stdin,
        capture_output=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )


async def test_the_default_is_the_core_surface(kbdir: Path, tmp_path: Path) -> None:
    docs = (DOCS / "mcp.md").read_text(encoding="utf-8")
    assert "**The default is `core`**" in docs
    async with connect(kbdir, tmp_path / "err.log") as c:
        listed = await c.session.list_tools()
        assert [t.name for t in listed.tools] == CORE_TOOLS
        assert listed_bytes(listed) <= CORE_LIMIT
        # The rest is one flag away, and the error says what is served.
        with pytest.raises(MCPError, match=r"unknown tool 'stats' \(tools: search, recall, "):
            await c.call("stats")
        # The prompt sends the agent only to tools it can call.
        got = await c.session.get_prompt("kbdb-memory", {"docid": "db-notes"})
        text = got.messages[0].content.text  # type: ignore[union-attr]
        assert "`recall`" in text and "`forget`" in text
        assert "outline" not in text and "skill-" not in text and "contradictions" not in text


async def test_each_core_tool_works(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log") as c:
        learned = await c.ok(
            "learn",
            {
                "content": "# Deploys\n\nWe deploy on Tuesdays.\n",
                "title": "Deploys",
                "tags": ["ops"],
            },
        )
        kbid = learned["sections"][0]["kbid"]
        found = await c.ok("search", {"query": "deploy tuesdays", "tags": ["ops"]})
        assert found["items"][0]["kbid"] == kbid and found["retrieval_verdict"] != "unanswered"
        assert "Tuesdays" in (await c.ok("recall", {"kbids": [kbid]}))["sections"][0]["content"]
        whole = await c.ok("recall", {"docid": "db-notes"})
        assert [s["heading"] for s in whole["sections"]] == ["Database", "Connection pool"]
        revised = await c.ok("revise", {"kbid": kbid, "content": "We deploy on Thursdays."})
        assert revised["previous"] == kbid
        assert (await c.ok("search", {"query": "thursdays"}))["items"][0]["kbid"] == revised["kbid"]
        assert (await c.ok("forget", {"kbids": [revised["kbid"]]}))["retired"] == [revised["kbid"]]
        assert (await c.ok("search", {"query": "thursdays"}))["items"] == []
        # Bad arguments are still named.
        body = await c.error("search", {"query": "x", "limit": 0})
        assert body["code"] == "INVALID_ARGUMENT" and "argument 'limit'" in body["error"]


async def test_all_has_every_tool(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        listed = await c.session.list_tools()
        assert [t.name for t in listed.tools] == [row[0] for row in TABLE]
        assert listed_bytes(listed) <= ALL_LIMIT


async def test_a_list_of_groups_and_names(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", "--tools", " related , core,search") as c:
        listed = await c.session.list_tools()
        assert [t.name for t in listed.tools] == [*CORE_TOOLS, "related"]  # in table order
        kbid = (await c.ok("search", {"query": "redis"}))["items"][0]["kbid"]
        assert (await c.ok("related", {"kbid": kbid}))["kbid"] == kbid


def test_an_unknown_tool_fails_clearly(kbdir: Path) -> None:
    names = ", ".join(row[0] for row in TABLE)
    for value, what in (("core,bogus", "unknown tool 'bogus'"), ("core,", "empty tool name")):
        proc = kbdb_mcp("--db", str(kbdir), "--tools", value)
        assert proc.returncode == 2 and proc.stdout == b""
        assert proc.stderr.decode() == (
            f"kbdb: {what} in --tools (give core, all, or a comma-separated list of: {names})\n"
        )
    # A sharded collection serves five tools; asking for another is refused before it opens.
    proc = kbdb_mcp("--shards", str(kbdir.parent / "no-collection"), "--tools", "core,revise")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode() == (
        "kbdb: tool 'revise' is not served for a sharded collection "
        "(--shards serves search, recall, learn, forget, stats)\n"
    )


async def test_the_size_is_the_bytes_on_the_wire(kbdir: Path, tmp_path: Path) -> None:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    with subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(f) + "\n" for f in frames).encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        while json.loads(line).get("id") != 2:
            line = proc.stdout.readline()
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    raw = line.decode()
    # The result object exactly as written: the frame is {"jsonrpc":..,"id":2,"result":{..}}.
    result = raw[raw.index('"result":') + len('"result":') : raw.rindex("}")]
    assert json.loads(result)["tools"]
    async with connect(kbdir, tmp_path / "err.log") as c:
        assert listed_bytes(await c.session.list_tools()) == len(result.encode())


def test_a_group_means_what_a_sharded_collection_can_serve() -> None:
    from kbdb.mcp.tools import select

    assert select("core", sharded=True) == ("search", "recall", "learn", "forget")
    assert select("all", sharded=True) == ("search", "recall", "learn", "forget", "stats")
    assert select("stats,core") == (*CORE_TOOLS, "stats")  # in table order
