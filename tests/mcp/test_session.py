"""Everything around the tools: resources, the prompt, completion, the start-up check,
freshness across processes, and a stdout that carries JSON-RPC frames only."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from tests.cli.conftest import cli_env
from tests.mcp.conftest import ALL_TOOLS, connect, make_kb

import kbdb

pytestmark = pytest.mark.anyio


async def test_resources_list_page_and_read(tmp_path: Path) -> None:
    kbdir = make_kb(tmp_path / "project")
    with kbdb.KnowledgeBase.open(kbdir) as kb:
        kb.learn_many(
            kbdb.LearnItem(f"Note number {i}.", title=f"note {i:02d}", docid=f"notes/{i:02d}")
            for i in range(60)
        )
    async with connect(kbdir, tmp_path / "err.log") as c:
        templates = (await c.session.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {
            "kbdb://section/{kbid}",
            "kbdb://document/{docid}",
        }
        first = await c.session.list_resources()
        assert len(first.resources) == 50 and first.next_cursor
        second = await c.session.list_resources(
            params=types.PaginatedRequestParams(cursor=first.next_cursor)
        )
        assert second.next_cursor is None
        uris = [r.uri for r in first.resources + second.resources]
        assert len(uris) == len(set(uris)) == 62
        assert "kbdb://document/notes%2F07" in uris

        doc = await c.session.read_resource("kbdb://document/db-notes")
        text = doc.contents[0].text  # type: ignore[union-attr]
        assert doc.contents[0].mime_type == "text/markdown"
        assert text.startswith("# Database\n") and "## Connection pool\n" in text
        assert "Note number 7." in (
            (await c.session.read_resource("kbdb://document/notes%2F07")).contents[0].text  # type: ignore[union-attr]
        )
        kbid = (await c.ok("search", {"query": "redis"}))["items"][0]["kbid"]
        section = await c.session.read_resource(f"kbdb://section/{kbid}")
        assert "Redis caches sessions" in section.contents[0].text  # type: ignore[union-attr]
        for bad in ("kbdb://section/" + "0" * 32, "kbdb://document/nope", "kbdb://other/x"):
            with pytest.raises(MCPError) as err:
                await c.session.read_resource(bad)
            assert err.value.code == -32002 and err.value.data["code"] == "NOT_FOUND"


async def test_prompt_and_completion(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        await c.ok(
            "skill-learn",
            {"name": "db-migration", "description": "Migrate safely", "content": "Back up first."},
        )
        prompts = (await c.session.list_prompts()).prompts
        assert [p.name for p in prompts] == ["kbdb-memory"]
        got = await c.session.get_prompt(
            "kbdb-memory", {"topic": "database", "tag": "db", "skill": "db-migration"}
        )
        text = got.messages[0].content.text  # type: ignore[union-attr]
        for phrase in ("short keyword queries", "recall", "unanswered", "Never store secrets"):
            assert phrase in text
        assert 'tags: ["db"]' in text and "Back up first." in text
        with pytest.raises(MCPError):
            await c.session.get_prompt("kbdb-memory", {"skill": "no-such-skill"})

        prompt_ref = types.PromptReference(name="kbdb-memory")
        tags = await c.session.complete(prompt_ref, {"name": "tag", "value": "ca"})
        assert tags.completion.values == ["cache"]
        skills = await c.session.complete(prompt_ref, {"name": "skill", "value": "db"})
        assert skills.completion.values == ["db-migration"]
        docs = await c.session.complete(prompt_ref, {"name": "docid", "value": ""})
        assert set(docs.completion.values) >= {"db-notes", "cache-notes"}
        template = types.ResourceTemplateReference(uri="kbdb://document/{docid}")
        docs = await c.session.complete(template, {"name": "docid", "value": "DB"})
        assert docs.completion.values == ["db-notes"] and docs.completion.has_more is False


async def test_startup_check_warns_on_a_corrupted_kb_and_keeps_serving(
    kbdir: Path, tmp_path: Path
) -> None:
    with kbdb.KnowledgeBase.open(kbdir) as kb:
        kbid = kb.search("redis").items[0].kbid
    with sqlite3.connect(kbdir / "kb.sqlite") as db:
        db.execute("UPDATE sections SET content = 'tampered' WHERE kbid = ?", (kbid,))
    db.close()
    async with connect(kbdir, tmp_path / "err.log") as c:
        deadline = time.monotonic() + 20
        while not any(m.level == "warning" for m in c.logs) and time.monotonic() < deadline:
            await c.session.send_ping()
        warnings = [m for m in c.logs if m.level == "warning"]
        assert len(warnings) == 1, c.logs
        data: Any = warnings[0].data
        assert data["ok"] is False and data["error_count"] == 1
        assert data["errors"][0] == {
            "code": "checksum_mismatch",
            "kbid": kbid,
            "detail": data["errors"][0]["detail"],
        }
        assert "checksum_mismatch x1" in data["message"]
        assert (await c.ok("search", {"query": "postgres"}))["total"] == 1
    assert "integrity check failed" in (tmp_path / "err.log").read_text()


async def test_a_cli_learn_is_visible_to_the_next_search(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log") as c:
        before = await c.ok("search", {"query": "kubernetes"})
        assert before["retrieval_verdict"] == "unanswered"
        proc = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", "--db", str(kbdir), "learn", "-", "--title", "k8s"],
            input=b"# Cluster\n\nThe kubernetes cluster runs in eu-west-1.\n",
            capture_output=True,
            env=cli_env(),
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        after = await c.ok("search", {"query": "kubernetes"})
        assert after["total"] == 1 and after["items"][0]["heading"] == "Cluster"


def _frame(id_: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return (json.dumps(msg) + "\n").encode()


def test_stdout_carries_only_jsonrpc_frames(kbdir: Path, tmp_path: Path) -> None:
    """A raw session, byte for byte: malformed input, bad arguments and a learn that logs
    must all leave stdout holding one valid JSON-RPC message per line."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    lines = [
        _frame(1, "initialize", init),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b"this is not json\n",
        _frame(2, "tools/call", {"name": "search", "arguments": [1, 2]}),
        _frame(3, "tools/call", {"name": "search", "arguments": {"query": 7}}),
        _frame(4, "tools/call", {"name": "learn", "arguments": {"content": "# Fresh\n\nfact"}}),
        _frame(5, "tools/call", {"name": "rebuild", "arguments": {}}),
        _frame(6, "tools/call", {"name": "search", "arguments": {"query": "fresh"}}),
        _frame(7, "ping"),
    ]
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir), *ALL_TOOLS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert proc.stdin is not None and proc.stdout is not None
    frames: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        proc.stdin.write(line)
        proc.stdin.flush()
        wanted = json.loads(line)["id"] if line.startswith(b'{"jsonrpc": "2.0", "id"') else None
        while wanted is not None:  # read up to this request's response (a client's pacing)
            frame = json.loads(proc.stdout.readline())  # every stdout line must be JSON
            frames.append(frame)
            if frame.get("id") == wanted:
                break
        if i == 0:
            init_seconds = time.monotonic() - started
    out, err = proc.communicate(timeout=60)
    frames += [json.loads(line) for line in out.decode().splitlines()]
    assert frames[0]["id"] == 1 and frames[0]["result"]["serverInfo"]["name"] == "kbdb"
    assert all(f["jsonrpc"] == "2.0" for f in frames)
    by_id = {f["id"]: f for f in frames if "id" in f}
    assert "error" in by_id[2]  # arguments that are not an object: a protocol error
    assert by_id[3]["result"]["isError"] is True
    assert by_id[3]["result"]["structuredContent"]["code"] == "INVALID_ARGUMENT"
    assert by_id[4]["result"]["structuredContent"]["sections_added"] == 1
    assert by_id[6]["result"]["structuredContent"]["total"] == 1
    assert by_id[7]["result"] == {}
    assert any(f.get("method") == "notifications/message" for f in frames)
    assert proc.returncode == 0, err.decode()
    assert init_seconds < 20  # answered before (and without waiting for) the KB opening


def test_stdin_and_stdout_that_are_files_use_the_sdk_streams(kbdir: Path, tmp_path: Path) -> None:
    """Pipes get the event-loop transport (every test above); anything else, here regular
    files, falls back to the SDK's threaded streams and still speaks the protocol."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "files", "version": "0"},
    }
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_frame(1, "initialize", init))
    responses = tmp_path / "responses.jsonl"
    with requests.open("rb") as stdin, responses.open("wb") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "kbdb.cli", "mcp", "--db", str(kbdir)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=cli_env(),
            timeout=60,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    frames = [json.loads(line) for line in responses.read_text().splitlines()]
    assert frames[0]["id"] == 1 and frames[0]["result"]["serverInfo"]["name"] == "kbdb"


async def test_a_corrupt_index_is_reported_and_rebuild_repairs_it(
    kbdir: Path, tmp_path: Path
) -> None:
    for f in (kbdir / "indexes").iterdir():
        if f.is_file() and f.stat().st_size > 50:
            with f.open("r+b") as fh:
                fh.seek(20)
                fh.write(b"\xff\xff\xff\xff")
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        assert (await c.error("search", {"query": "postgres"}))["code"] == "INDEX_CORRUPT"

        # The kbdb log line about it reached the client as notifications/message, and so
        # did the start-up check's warning (it runs in the background after the open: wait
        # for it, or it could land after the level is raised below).
        def arrived() -> bool:
            corrupt = any(m.level == "warning" and "corrupt" in str(m.data) for m in c.logs)
            return corrupt and any(m.logger == "kbdb.check" for m in c.logs)

        deadline = time.monotonic() + 60
        while not arrived() and time.monotonic() < deadline:
            await c.session.send_ping()
            await anyio.sleep(0.05)
        assert arrived(), c.logs
        # logging/setLevel error: the rebuild's "corrupt; rebuilding" warning stays on stderr.
        await c.session.send_request(
            types.SetLevelRequest(params=types.SetLevelRequestParams(level="error")),
            types.EmptyResult,
        )
        seen = len(c.logs)
        assert (await c.ok("rebuild", {}))["sections"] == 3
        for _ in range(5):
            await c.session.send_ping()
        assert c.logs[seen:] == []
        assert "rebuilding" in (tmp_path / "err.log").read_text()
        assert (await c.ok("search", {"query": "postgres"}))["total"] == 1
