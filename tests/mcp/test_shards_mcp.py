"""``kbdb mcp --shards``: a real MCP client over stdio against a server over a sharded
collection: five tools, results equal to the one knowledge base's, writes routed."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from tests.cli.conftest import cli_env
from tests.mcp.conftest import Conn

import kbdb
from kbdb.shard import layout

pytestmark = pytest.mark.anyio


def _collection(root: Path) -> tuple[Path, Path]:
    kb = kbdb.KnowledgeBase.init(root / "one")
    kb.learn_many(
        kbdb.LearnItem(
            f"# Alert {i}\n\nAlert {i} pages the {i % 4} team after {i} minutes.",
            docid=f"alerts/{i}",
        )
        for i in range(40)
    )
    kb.close()
    layout.create(root / "one" / ".kbdb", root / "coll", 3)
    return root / "one", root / "coll"


@asynccontextmanager
async def connect_shards(coll: Path, errlog: Path) -> AsyncIterator[Conn]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdb.cli", "mcp", "--shards", str(coll)],
        env=cli_env(),
        cwd=str(coll.parent),
    )
    with errlog.open("w", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as s,
        ):
            conn = Conn(s)
            conn.init = await s.initialize()
            yield conn


async def test_a_sharded_collection_over_mcp(tmp_path: Path) -> None:
    one_path, coll = _collection(tmp_path)
    one = kbdb.KnowledgeBase.open(one_path)
    async with connect_shards(coll, tmp_path / "err.log") as c:
        tools = {t.name for t in (await c.session.list_tools()).tools}
        assert tools == {"search", "recall", "learn", "forget", "stats"}
        for q in ("pages team minutes", "alert 7", "team 2 after"):
            got = await c.ok("search", {"query": q, "limit": 20})
            want = one.search(q, limit=20).to_dict()
            assert got["items"] == want["items"] and got["total"] == want["total"]
        learned = await c.ok(
            "learn", {"content": "# Rota\n\nThe rota flips on Mondays.", "docid": "ops/rota"}
        )
        kbid = learned["sections"][0]["kbid"]
        hits = (await c.ok("search", {"query": "rota flips mondays"}))["items"]
        assert hits[0]["kbid"] == kbid
        assert (await c.ok("recall", {"kbids": [kbid]}))["sections"][0]["kbid"] == kbid
        stats = await c.ok("stats")
        assert stats["documents"] == 41 and len(stats["extra"]["shards"]) == 3
        assert (await c.ok("forget", {"kbids": [kbid]}))["retired"] == [kbid]
        missing = await c.error("recall", {"kbids": ["0" * 32]})
        assert missing["code"] == "NOT_FOUND"
    one.close()
    lay = layout.load(coll)
    owner = kbdb.KnowledgeBase.open(lay.shard_dir(lay.route("ops/rota")))
    assert owner.recall(kbid).sections[0].retired
    owner.close()
