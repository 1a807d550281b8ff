"""The search tool's ``min_confidence`` over a real stdio session: its schema, a search it
empties, its bounds, and 0 changing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.mcp.conftest import connect

pytestmark = pytest.mark.anyio


async def test_min_confidence_can_empty_a_search(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log") as c:
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        prop = tools["search"].input_schema["properties"]["min_confidence"]
        assert (prop["type"], prop["minimum"], prop["maximum"], prop["default"]) == (
            "number",
            0,
            1,
            0,
        )
        plain = await c.ok("search", {"query": "connection pool"})
        assert plain["items"] and plain["total"] >= 1
        assert await c.ok("search", {"query": "connection pool", "min_confidence": 0}) == plain
        top = plain["items"][0]["confidence"]
        kept = await c.ok("search", {"query": "connection pool", "min_confidence": top})
        assert kept["items"][0]["kbid"] == plain["items"][0]["kbid"]
        assert all(i["confidence"] >= top for i in kept["items"])
        assert kept["total"] == len(kept["items"])
        empty = await c.ok("search", {"query": "connection pool", "min_confidence": 1})
        assert empty["items"] == [] and empty["total"] == 0 and empty["has_more"] is False
        assert empty["retrieval_verdict"] == "unanswered"
        for bad in (1.5, -0.1, "high"):
            body = await c.error("search", {"query": "x", "min_confidence": bad})
            assert body["code"] == "INVALID_ARGUMENT"
            assert "argument 'min_confidence'" in body["error"], body
