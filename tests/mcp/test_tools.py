"""Every tool (``--tools all``: the 19 of SPEC §10, with links and context) over a real
stdio session: the list, a successful call of each, and errors.

Every successful call is also checked by the SDK client itself against the tool's declared
output schema (``ClientSession.call_tool`` validates ``structuredContent``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from tests.mcp.conftest import ALL_TOOLS, connect

pytestmark = pytest.mark.anyio

# SPEC §10 (with links and context): tool, title, readOnly, destructive, idempotent
# (openWorld is false for all).
TABLE = [
    ("search", "Search Knowledge", True, False, True),
    ("recall", "Recall Sections", True, False, True),
    ("learn", "Learn Content", False, False, False),
    ("revise", "Revise Section", False, True, False),
    ("history", "Section History", True, False, True),
    ("forget", "Forget Sections", False, True, True),
    ("documents", "List Documents", True, False, True),
    ("outline", "Document Outline", True, False, True),
    ("tags", "List Tags", True, False, True),
    ("related", "Related Sections", True, False, True),
    ("links", "Note Links", True, False, True),
    ("context", "Search With Context", True, False, True),
    ("stats", "Knowledge Stats", True, False, True),
    ("check", "Integrity Check", True, False, True),
    ("gc", "Garbage Collect", False, True, False),
    ("rebuild", "Rebuild Indexes", False, False, False),
    ("export", "Export Snapshot", False, False, True),
    ("contradictions", "Find Contradictions", True, False, True),
    ("skill-learn", "Create Skill", False, False, True),
    ("skill-list", "List Skills", True, False, True),
    ("skill-get", "Get Skill", True, False, True),
]


async def test_initialize_and_every_tool(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        assert c.init is not None and c.init.server_info.name == "kbdb"
        assert "short keyword queries" in (c.init.instructions or "")
        caps = c.session.server_capabilities
        assert caps is not None and caps.logging is not None and caps.completions is not None
        tools = {t.name: t for t in (await c.session.list_tools()).tools}
        assert sorted(tools) == sorted(row[0] for row in TABLE)
        for name, title, read_only, destructive, idempotent in TABLE:
            t = tools[name]
            a = t.annotations
            assert a is not None
            # The title once, in the annotations, which clients show before the name.
            assert (t.title, a.title) == (None, title)
            assert a.read_only_hint is read_only, name
            if read_only:
                # The protocol defines these only for tools that write.
                assert (a.destructive_hint, a.idempotent_hint) == (None, None), name
            else:
                assert (a.destructive_hint, a.idempotent_hint) == (destructive, idempotent), name
            assert a.open_world_hint is False
            assert t.input_schema["type"] == "object"
            assert t.input_schema["additionalProperties"] is False
            assert t.output_schema is not None and t.output_schema["type"] == "object"
            assert t.description and len(t.description) > 40
        search = tools["search"].input_schema
        assert search["required"] == ["query"]
        for key in ("mode", "search_mode"):
            assert search["properties"][key]["enum"] == ["lexical", "vector", "hybrid"]
            assert search["properties"][key]["default"] == "lexical"
        assert search["properties"]["limit"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 10,
        }
        assert tools["learn"].input_schema["required"] == ["content"]
        assert tools["learn"].input_schema["properties"]["replace"]["default"] is False
        assert tools["skill-learn"].input_schema["required"] == ["name", "description", "content"]
        # The seed's guidance is in the descriptions.
        s, learn = tools["search"].description or "", tools["learn"].description or ""
        assert "multiple short keyword queries" in s and "recall" in s and "unanswered" in s
        assert "durable facts" in learn and "replace" in learn and "secrets" in learn


async def test_every_tool_succeeds(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        learned = await c.ok(
            "learn",
            {
                "content": "# Deploys\n\nWe deploy on Tuesdays after the freeze.\n",
                "title": "Deploy policy",
                "tags": ["ops"],
                "section_type": "decision",
            },
        )
        assert learned["sections_added"] == 1
        new_kbid = learned["sections"][0]["kbid"]

        found = await c.ok("search", {"query": "connection pool", "limit": 5})
        assert found["retrieval_verdict"] in ("answered", "partial")
        assert found["search_mode"] == "lexical"
        pool = found["items"][0]
        assert pool["heading"] == "Connection pool"
        res = await c.call("search", {"query": "tuesdays deploy", "search_mode": "lexical"})
        assert res.structured_content and res.structured_content["items"][0]["kbid"] == new_kbid
        text = res.content[0].text  # type: ignore[union-attr]
        verdict = res.structured_content["retrieval_verdict"]
        assert verdict != "unanswered" and new_kbid in text and f"verdict: {verdict}" in text

        recalled = await c.ok("recall", {"kbids": [pool["kbid"]]})
        assert "2x cores" in recalled["sections"][0]["content"]
        whole = await c.ok("recall", {"docid": "db-notes"})
        assert [s["heading"] for s in whole["sections"]] == ["Database", "Connection pool"]

        revised = await c.ok("revise", {"kbid": pool["kbid"], "content": "The pool has 20 slots."})
        assert revised["previous"] == pool["kbid"] and revised["kbid"] != pool["kbid"]
        history = await c.ok("history", {"kbid": revised["kbid"]})
        assert [v["kbid"] for v in history["versions"]] == [pool["kbid"], revised["kbid"]]

        forgot = await c.ok("forget", {"kbids": [new_kbid]})
        assert forgot["retired"] == [new_kbid]
        assert (await c.ok("forget", {"kbids": [new_kbid]}))["already_retired"] == [new_kbid]

        docs = await c.ok("documents", {"limit": 10})
        assert {"db-notes", "cache-notes"} <= {d["docid"] for d in docs["items"]}
        outline = await c.ok("outline", {"docid": "db-notes"})
        assert outline["nodes"][0]["heading"] == "Database"
        tags = await c.ok("tags")
        assert {"db", "cache"} <= {t["tag"] for t in tags["tags"]}
        related = await c.ok("related", {"kbid": revised["kbid"], "limit": 5})
        assert related["kbid"] == revised["kbid"]
        links = await c.ok("links", {"docid": "db-notes", "direction": "in"})
        assert (links["direction"], links["items"]) == ("in", [])
        around = await c.ok("context", {"query": "redis sessions", "neighbours": 2})
        assert around["items"][0]["docids"] == ["cache-notes"]

        stats = await c.ok("stats")
        assert stats["documents"] >= 3 and stats["path"] == str(kbdir)
        progress: list[tuple[float, float | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total))

        res = await c.session.call_tool("check", {}, progress_callback=on_progress)
        assert not res.is_error and res.structured_content["ok"] is True  # type: ignore[index]
        assert progress and progress[-1][0] == progress[-1][1]  # ends at done == total
        gc = await c.ok("gc", {"dry_run": True})
        assert gc["dry_run"] is True
        rebuilt = await c.ok("rebuild", {"vectors": False})
        assert rebuilt["sections"] >= 3
        exported = await c.ok("export", {"path": "snapshot"})
        assert Path(exported["path"]).resolve() == (kbdir.parent / "snapshot").resolve()
        assert exported["sections_exported"] >= 3
        assert (kbdir.parent / "snapshot").is_dir()
        contra = await c.ok("contradictions", {"limit": 5})
        assert contra["method"] in ("vector", "lexical")

        skill = {
            "name": "release-checklist",
            "description": "Steps to cut a release",
            "content": "1. Bump the version.\n2. Tag it.\n",
            "tags": ["ops"],
        }
        made = await c.ok("skill-learn", skill)
        assert made["name"] == "release-checklist"
        listed = await c.ok("skill-list")
        assert [s["name"] for s in listed["skills"]] == ["release-checklist"]
        got = await c.ok("skill-get", {"name": "release-checklist"})
        assert "Tag it" in got["content"]


async def test_errors_are_structured(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        # The seed's exact body, for both spellings of the mode.
        for args in ({"query": "x", "mode": "hybrid"}, {"query": "x", "search_mode": "vector"}):
            assert await c.error("search", args) == {
                "error": "Vector search requires a configured embedding provider",
                "code": "EMBEDDING_PROVIDER_NOT_CONFIGURED",
            }
        missing = "0" * 32
        for tool, args in (
            ("recall", {"kbids": [missing]}),
            ("recall", {"docid": "no-such-doc"}),
            ("history", {"kbid": missing}),
            ("revise", {"kbid": missing, "content": "x"}),
            ("related", {"kbid": missing}),
            ("outline", {"docid": "no-such-doc"}),
            ("links", {"docid": "no-such-doc"}),
            ("links", {"kbid": missing, "direction": "in"}),
            ("skill-get", {"name": "no-such-skill"}),
        ):
            assert (await c.error(tool, args))["code"] == "NOT_FOUND", tool
        with pytest.raises(MCPError, match="unknown tool"):
            await c.call("no-such-tool")
        # The server is still serving.
        assert (await c.ok("stats"))["documents"] == 2


async def test_invalid_arguments_name_the_field(kbdir: Path, tmp_path: Path) -> None:
    async with connect(kbdir, tmp_path / "err.log", *ALL_TOOLS) as c:
        for name, *_ in TABLE:
            body = await c.error(name, {"bogus": 1})
            assert body == {"error": "unknown argument 'bogus'", "code": "INVALID_ARGUMENT"}, name
        cases = [
            ("search", {}, "missing required argument 'query'"),
            ("search", {"query": "x", "limit": 0}, "argument 'limit'"),
            ("search", {"query": "x", "limit": "ten"}, "argument 'limit'"),
            ("search", {"query": "x", "mode": "fuzzy"}, "argument 'mode'"),
            ("search", {"query": "x", "tags": "db"}, "argument 'tags'"),
            ("search", {"query": "x", "mode": "lexical", "search_mode": "hybrid"}, "search_mode"),
            ("recall", {}, "'kbids' or 'docid'"),
            ("recall", {"kbids": []}, "argument 'kbids'"),
            ("recall", {"kbids": [3]}, "argument 'kbids[0]'"),
            ("learn", {"title": "x"}, "missing required argument 'content'"),
            ("learn", {"content": "x", "replace": "yes"}, "argument 'replace'"),
            ("revise", {"kbid": "x"}, "missing required argument 'content'"),
            ("forget", {}, "'kbids' or 'docid'"),
            ("documents", {"limit": 1000}, "argument 'limit'"),
            ("related", {"kbid": "x", "limit": 0}, "argument 'limit'"),
            ("links", {"docid": "x", "direction": "up"}, "argument 'direction'"),
            ("links", {}, "name a document or a section"),
            ("context", {"query": "x", "neighbours": 21}, "argument 'neighbours'"),
            ("context", {"query": ""}, "argument 'query'"),
            ("gc", {"older_than_days": -1}, "argument 'older_than_days'"),
            ("contradictions", {"threshold": 2}, "argument 'threshold'"),
            ("export", {"path": ""}, "argument 'path'"),
            ("skill-learn", {"name": "Bad Name", "description": "d", "content": "c"}, "'name'"),
            ("skill-get", {}, "missing required argument 'name'"),
        ]
        for tool, args, fragment in cases:
            body = await c.error(tool, args)
            assert body["code"] == "INVALID_ARGUMENT" and fragment in body["error"], (tool, body)
        # Nothing was changed by the failed calls.
        assert (await c.ok("stats"))["sections"] == 3


async def test_learn_text_counts_notices_and_keeps_every_section(
    kbdir: Path, tmp_path: Path
) -> None:
    content = "Loose text first.\n\n# Empty one\n\n# Body\n\nWords.\n\n# Empty two\n"
    async with connect(kbdir, tmp_path / "err.log") as c:
        res = await c.call("learn", {"content": content, "docid": "notes"})
        assert not res.is_error and isinstance(res.structured_content, dict)
        sections = res.structured_content["sections"]
        assert [s["warnings"] for s in sections] == [
            ["heading_missing"],
            ["empty_content"],
            [],
            ["empty_content"],
        ]
        text = res.content[0].text  # type: ignore[union-attr]
        lines = text.splitlines()
        assert lines[1] == "sections with warning empty_content: 2, warning heading_missing: 1"
        assert all(s["kbid"] in text for s in sections) and len(lines) == 2 + len(sections)
        quiet = await c.call("learn", {"content": "# Plain\n\nNothing to say.\n"})
        assert "sections with" not in quiet.content[0].text  # type: ignore[union-attr]
