"""A real MCP client (the SDK's ``ClientSession`` over ``stdio_client``) against ``kbdb mcp``
running in a subprocess, on a knowledge base in a temporary folder."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from tests.cli.conftest import cli_env

import kbdb

DOCS = {
    "db-notes": (
        "# Database\n\nWe chose Postgres because of JSONB.\n\n"
        "## Connection pool\n\nThe connection pool has 10 slots; size it at 2x cores.\n"
    ),
    "cache-notes": "# Cache\n\nRedis caches sessions for 15 minutes.\n",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_kb(root: Path) -> Path:
    """A knowledge base with two small documents (tags db and cache); returns its .kbdb."""
    kb = kbdb.KnowledgeBase.init(root)
    for docid, text in DOCS.items():
        kb.learn(text, docid=docid, title=docid, tags=[docid.split("-")[0]])
    path = kb.path
    kb.close()
    return path


@pytest.fixture
def kbdir(tmp_path: Path) -> Path:
    return make_kb(tmp_path / "project")


@dataclass
class Conn:
    """A connected client, the log notifications it received, and transport problems (any
    stdout line that was not a JSON-RPC frame shows up here)."""

    session: ClientSession
    init: types.InitializeResult | None = None
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    problems: list[Exception] = field(default_factory=list)

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> types.CallToolResult:
        return await self.session.call_tool(tool, args or {})

    async def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must succeed; returns its structured content (which the SDK has
        already validated against the tool's output schema)."""
        res = await self.call(tool, args)
        assert not res.is_error, (tool, res.content)
        assert isinstance(res.structured_content, dict)
        assert res.content and isinstance(res.content[0], types.TextContent)
        return res.structured_content

    async def error(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call a tool that must fail; returns its {error, code} body."""
        res = await self.call(tool, args)
        assert res.is_error, (tool, args, res.content)
        body = res.structured_content
        assert isinstance(body, dict) and set(body) == {"error", "code"}, body
        return body


def server_params(
    kbdir: Path, *extra: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbdb.cli", "mcp", "--db", str(kbdir), *extra],
        env=cli_env(**(env or {})),
        cwd=str(kbdir.parent),
    )


# The tools a server offers by default (docs/mcp.md, "Two tool surfaces"), and the option
# for all of them.
CORE_TOOLS = ["search", "recall", "learn", "revise", "forget"]
ALL_TOOLS = ("--tools", "all")


@asynccontextmanager
async def connect(
    kbdir: Path, errlog: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[Conn]:
    """Start ``kbdb mcp`` on ``kbdir`` with the options ``args`` and initialize a session
    (stderr goes to ``errlog``)."""
    conn: Conn | None = None

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        assert conn is not None
        conn.logs.append(params)

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception) and conn is not None:
            conn.problems.append(message)

    with errlog.open("w", encoding="utf-8") as err:
        async with (
            stdio_client(server_params(kbdir, *args, env=env), errlog=err) as (read, write),
            ClientSession(read, write, logging_callback=on_log, message_handler=on_message) as s,
        ):
            conn = Conn(s)
            conn.init = await s.initialize()
            yield conn
            assert conn.problems == []
