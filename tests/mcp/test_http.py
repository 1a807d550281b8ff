"""``kbdb mcp --http``: the SDK's Streamable HTTP client against a real server, and the
bearer token that any non-loopback bind requires."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from tests.cli.conftest import cli_env
from tests.mcp.conftest import CORE_TOOLS

pytestmark = pytest.mark.anyio

SERVING = re.compile(r"serving MCP over HTTP at (http://\S+/mcp)")


@contextmanager
def http_server(kbdir: Path, address: str, **env: str) -> Iterator[str]:
    """Run ``kbdb mcp --http ADDRESS`` and yield its URL (read from its start-up log)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir), "--http", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(**env),
        text=True,
    )
    assert proc.stderr is not None
    try:
        url = None
        for line in proc.stderr:
            if m := SERVING.search(line):
                url = m.group(1)
                break
        assert url is not None, proc.wait(timeout=10)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stderr.close()


async def _search(
    url: str,
    headers: dict[str, str] | None = None,
    logs: list[types.LoggingMessageNotificationParams] | None = None,
) -> dict[str, object]:
    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        if logs is not None:
            logs.append(params)

    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, logging_callback=on_log) as s,
    ):
        await s.initialize()
        tools = await s.list_tools()
        assert [t.name for t in tools.tools] == CORE_TOOLS  # the default, over HTTP too
        res = await s.call_tool("search", {"query": "connection pool"})
        assert not res.is_error and isinstance(res.structured_content, dict)
        if logs is not None:  # wait for the start-up check's verdict
            for _ in range(100):
                if any(m.level == "warning" for m in logs):
                    break
                await s.send_ping()
                await anyio.sleep(0.05)
        return res.structured_content


async def test_http_on_loopback_needs_no_token(kbdir: Path) -> None:
    # A tampered section: the start-up warning must reach an HTTP client too.
    with sqlite3.connect(kbdir / "kb.sqlite") as db:
        db.execute("UPDATE sections SET content = 'x' WHERE heading = 'Cache'")
    db.close()
    logs: list[types.LoggingMessageNotificationParams] = []
    with http_server(kbdir, "127.0.0.1:0") as url:
        assert url.startswith("http://127.0.0.1:")
        found = await _search(url, logs=logs)
        assert found["items"] and found["retrieval_verdict"] in ("answered", "partial")
    warnings = [m.data for m in logs if m.level == "warning"]
    assert len(warnings) == 1 and "checksum_mismatch" in str(warnings[0])


async def test_non_loopback_bind_requires_the_token(kbdir: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir), "--http", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "refusing to serve MCP on 0.0.0.0 without a token" in refused.stderr
    assert "KBDB_MCP_TOKEN" in refused.stderr

    with http_server(kbdir, "0.0.0.0:0", KBDB_MCP_TOKEN="s3cret") as url:
        local = url.replace("0.0.0.0", "127.0.0.1")
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream"}
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            r = httpx.post(local, json=init, headers={**accept, **auth}, timeout=30)
            assert r.status_code == 401, auth
            assert r.json()["code"] == "UNAUTHORIZED"
            assert r.headers["www-authenticate"].startswith("Bearer")
        found = await _search(local, {"Authorization": "Bearer s3cret"})
        assert found["total"] == 1


def test_bad_http_address_is_a_usage_error(kbdir: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir), "--http", "localhost:99999"],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "--http wants HOST:PORT" in proc.stderr
