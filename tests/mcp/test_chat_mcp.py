"""The search tool's ``speaker`` argument over a real stdio session, on a learned chat log
(docs/conversations.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.mcp.conftest import connect

import kbdb

pytestmark = pytest.mark.anyio


async def test_search_speaker_keeps_one_speakers_turns(kbdir: Path, tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    records = [
        {"speaker": "Caroline", "time": "2023-05-08T13:56:00Z", "text": "pottery class today"},
        {"speaker": "Melanie", "time": "2023-05-09T10:00:00Z", "text": "pottery is calming"},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with kbdb.KnowledgeBase.open(kbdir.parent) as kb:
        kb.learn_path(log)
    async with connect(kbdir, tmp_path / "err.log") as c:
        both = await c.ok("search", {"query": "pottery"})
        assert len(both["items"]) == 2
        one = await c.ok("search", {"query": "pottery", "speaker": "MELANIE"})
        assert [h["heading"] for h in one["items"]] == ["Melanie · 9 May 2023 10:00"]
        said = await c.ok("search", {"query": "pottery", "until": "2023-05-09"})
        assert [h["heading"] for h in said["items"]] == ["Caroline · 8 May 2023 13:56"]
