"""The ``links`` and ``context`` tools over a real stdio session, on a vault learned by the
test (tests/links_vault.py): what they return, their text, their errors, and that the
core surface does not offer them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from tests.links_vault import OPERATIONS_LINK_LINE, write_vault
from tests.mcp.conftest import ALL_TOOLS, CORE_TOOLS, connect

import kbdb

pytestmark = pytest.mark.anyio


@pytest.fixture
def vault_kb(tmp_path: Path) -> Path:
    """A knowledge base with the vault learned; returns its .kbdb."""
    root = tmp_path / "project"
    vault = write_vault(root)
    with kbdb.KnowledgeBase.init(root) as kb:
        kb.learn_path(vault)
        return kb.path


def _kbid(kbdir: Path, docid: str, heading: str) -> str:
    with kbdb.KnowledgeBase.open(kbdir) as kb:
        return {s.heading: s.kbid for s in kb.recall(docid=docid).sections}[heading]


async def test_links_out_and_in(vault_kb: Path, tmp_path: Path) -> None:
    async with connect(vault_kb, tmp_path / "err.log", *ALL_TOOLS) as c:
        out = await c.ok("links", {"docid": "Home.md"})
        assert out["direction"] == "out"
        assert [(i["target"], i["fragment"], i["label"], i["line"]) for i in out["items"]] == [
            ("Databases", None, None, 3),
            ("Caching", None, "the cache notes", 3),
            ("Runbook", "Rollback", None, OPERATIONS_LINK_LINE),
        ]
        rollback = _kbid(vault_kb, "Runbook.md", "Rollback")
        assert out["items"][2]["to_kbid"] == rollback
        assert out["items"][2]["to_heading"] == "Rollback"

        back = await c.ok("links", {"docid": "Databases.md", "direction": "in"})
        # Home's [[Databases]], and Caching's [[DB notes]], by the note's alias.
        assert [(i["from_docid"], i["target"]) for i in back["items"]] == [
            ("Caching.md", "DB notes"),
            ("Home.md", "Databases"),
        ]
        one = await c.ok("links", {"kbid": rollback, "direction": "in"})
        assert [i["from_heading"] for i in one["items"]] == ["Operations"]

        # The text names each link's place, what was written and where it goes.
        res = await c.call("links", {"docid": "Home.md"})
        text = res.content[0].text  # type: ignore[union-attr]
        lines = text.splitlines()
        assert lines[0] == "3 links of Home.md"
        assert lines[3].startswith(f"- Home.md:{OPERATIONS_LINK_LINE} (Operations; kbid ")
        assert lines[3].endswith(
            f"wikilink Runbook#Rollback: resolved -> Runbook.md › Rollback [kbid {rollback}]"
        )
        res = await c.call("links", {"docid": "Glossary.md"})
        assert res.content[0].text.endswith("wikilink Missing note: dangling")  # type: ignore[union-attr]


async def test_context_gives_hits_with_their_neighbours(vault_kb: Path, tmp_path: Path) -> None:
    async with connect(vault_kb, tmp_path / "err.log", *ALL_TOOLS) as c:
        got = await c.ok("context", {"query": "roll back previous image", "limit": 2})
        assert got["retrieval_verdict"] != "unanswered"
        hit = got["items"][0]
        assert (hit["docids"], hit["heading"]) == (["Runbook.md"], "Rollback")
        assert [(n["relation"], n["docid"], n["heading"]) for n in hit["neighbours"]] == [
            ("out", "Home.md", "Home"),
            ("in", "Home.md", "Operations"),
        ]
        assert hit["neighbours"][1]["snippet"].startswith("Deploys follow the [[Runbook#Rollback]]")

        res = await c.call("context", {"query": "redis sessions", "limit": 1, "neighbours": 3})
        d = res.structured_content
        assert d is not None and len(d["items"]) == 1
        caching = d["items"][0]
        assert [n["label"] for n in caching["neighbours"]] == [None, None, "the cache notes"]
        assert all(len(n["snippet"]) <= 200 for n in caching["neighbours"])
        text = res.content[0].text  # type: ignore[union-attr]
        lines = text.splitlines()
        assert lines[0].startswith("verdict: ")
        assert lines[1].startswith("1. Caching [kbid ")
        arrows = [line.strip() for line in lines if line.strip().startswith(("->", "<-"))]
        assert arrows[0].startswith("-> Databases.md › Databases [kbid ")
        assert arrows[2].startswith('<- Home.md › Home "the cache notes" [kbid ')

        bounded = await c.ok("context", {"query": "redis sessions", "neighbours": 1})
        assert all(len(i["neighbours"]) <= 1 for i in bounded["items"])


async def test_errors(vault_kb: Path, tmp_path: Path) -> None:
    async with connect(vault_kb, tmp_path / "err.log", *ALL_TOOLS) as c:
        body = await c.error("links", {"docid": "Nope.md"})
        assert body == {"error": "no document 'Nope.md'", "code": "NOT_FOUND"}
        res = await c.call("links", {"docid": "Nope.md"})
        assert res.content[-1].text == "hint: list them with 'kbdb docs'"  # type: ignore[union-attr]
        assert (await c.error("links", {}))["code"] == "INVALID_ARGUMENT"
        for args, field in (
            ({"docid": "Home.md", "direction": "both"}, "direction"),
            ({"query": "x", "neighbours": 0}, "neighbours"),
            ({"query": "x", "neighbours": 21}, "neighbours"),
            ({"query": "x", "mode": "fuzzy"}, "mode"),
        ):
            tool = "links" if "docid" in args else "context"
            body = await c.error(tool, args)
            assert body["code"] == "INVALID_ARGUMENT" and f"argument '{field}'" in body["error"]
        body = await c.error("context", {"query": "x", "mode": "vector"})
        assert body["code"] == "EMBEDDING_PROVIDER_NOT_CONFIGURED"


async def test_core_does_not_offer_them(vault_kb: Path, tmp_path: Path) -> None:
    async with connect(vault_kb, tmp_path / "err.log") as c:
        listed = [t.name for t in (await c.session.list_tools()).tools]
        assert listed == CORE_TOOLS
        for tool in ("links", "context"):
            with pytest.raises(MCPError, match=f"unknown tool '{tool}'"):
                await c.call(tool, {"docid": "Home.md"})
        got = await c.session.get_prompt("kbdb-memory", {})
        assert "`context`" not in got.messages[0].content.text  # type: ignore[union-attr]
    async with connect(vault_kb, tmp_path / "err2.log", "--tools", "core,context") as c:
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert list(tools) == [*CORE_TOOLS, "context"]
        # The default mode is the knowledge base's, as for search.
        assert tools["context"].input_schema["properties"]["mode"]["default"] == "lexical"
        got = await c.session.get_prompt("kbdb-memory", {})
        text = got.messages[0].content.text  # type: ignore[union-attr]
        assert "`context`" in text and "`links`" not in text
        assert (await c.ok("context", {"query": "backups"}))["items"]
