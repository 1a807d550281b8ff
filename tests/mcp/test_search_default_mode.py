"""The `search` tool and ``search.default_mode``, over a real stdio session: the description
and the schema name the mode in force, and a search without a mode gets it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.embedding.conftest import find_test_model
from tests.mcp.conftest import ALL_TOOLS, Conn, connect

from kbdb.config import set_value

pytestmark = pytest.mark.anyio


async def _search_tool(c: Conn) -> tuple[str, dict[str, Any]]:
    tools = {t.name: t for t in (await c.session.list_tools()).tools}
    search = tools["search"]
    return search.description or "", search.input_schema["properties"]


async def test_default_config_describes_lexical(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log") as c:
        description, props = await _search_tool(c)
        assert "Default mode here: lexical (search.default_mode)." in description
        assert props["mode"]["default"] == props["search_mode"]["default"] == "lexical"
        found = await c.ok("search", {"query": "connection pool"})
        assert found["search_mode"] == found["retrieval_method"] == "lexical"


async def test_hybrid_default_with_a_provider(kbdir: Path, tmp_path: Path) -> None:
    config = kbdir / "worker.toml"
    set_value(config, "embedding.provider", "onnx")
    set_value(config, "embedding.model_path", str(find_test_model()))
    set_value(config, "search.default_mode", "hybrid")
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        description, props = await _search_tool(c)
        assert "Default mode here: hybrid (search.default_mode)." in description
        assert "lexical (search.default_mode)" not in description
        assert props["mode"]["default"] == props["search_mode"]["default"] == "hybrid"
        await c.ok("rebuild", {"lexical": False})  # embeds the sections learned before
        found = await c.ok("search", {"query": "connection pool"})
        assert found["search_mode"] == found["retrieval_method"] == "hybrid"
        assert found["items"][0]["heading"] == "Connection pool"
        for key in ("mode", "search_mode"):
            named = await c.ok("search", {"query": "connection pool", key: "lexical"})
            assert named["search_mode"] == named["retrieval_method"] == "lexical"


async def test_hybrid_default_without_a_provider(kbdir: Path, tmp_path: Path) -> None:
    set_value(kbdir / "worker.toml", "search.default_mode", "hybrid")
    async with connect(kbdir, tmp_path / "err.log") as c:
        description, props = await _search_tool(c)
        assert (
            "Default mode here: lexical (search.default_mode is hybrid, but no embedding "
            "provider is configured)." in description
        )
        assert props["mode"]["default"] == "lexical"
        found = await c.ok("search", {"query": "connection pool"})
        assert (found["search_mode"], found["retrieval_method"]) == ("hybrid", "lexical")
        assert found["vector_index_stale"] is False and found["total"] >= 1
        err = await c.error("search", {"query": "connection pool", "mode": "hybrid"})
        assert err["code"] == "EMBEDDING_PROVIDER_NOT_CONFIGURED"


async def test_invalid_config_names_no_mode_and_calls_report_it(
    kbdir: Path, tmp_path: Path
) -> None:
    (kbdir / "worker.toml").write_text('[search]\ndefault_mode = "semantic"\n', encoding="utf-8")
    async with connect(kbdir, tmp_path / "err.log") as c:
        description, _ = await _search_tool(c)
        assert "Default mode here" not in description
        err = await c.error("search", {"query": "connection pool"})
        assert err["code"] == "CONFIG_INVALID" and "search.default_mode" in err["error"]
