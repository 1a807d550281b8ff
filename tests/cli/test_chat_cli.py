"""``kbdb learn`` of conversation transcripts and ``kbdb search --speaker``, through the
real binary (docs/conversations.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Kbdb


def _transcript(path: Path) -> None:
    records: list[object] = [
        {"speaker": "Caroline", "time": "2023-05-08T13:56:00Z", "text": "the adoption interview"},
        {"speaker": "Melanie", "time": "2023-07-01T10:00:00Z", "text": "adoption paperwork done"},
        {"speaker": "Melanie", "time": "not a time", "text": "adoption again"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_learn_reports_skipped_records_and_search_filters_by_speaker(
    kbdb: Kbdb, tmp_path: Path
) -> None:
    assert kbdb("init").code == 0
    (tmp_path / "chats").mkdir()
    _transcript(tmp_path / "chats" / "day.jsonl")
    run = kbdb("learn", "chats")
    assert run.code == 1, run.err  # a record was skipped: exit 1, as for a skipped file
    assert "CHAT_TIME_INVALID" in run.err and "day.jsonl:3" in run.err
    assert "learned 1 new" in run.out and "2 section(s) added" in run.out

    found = kbdb("search", "adoption", "--speaker", "melanie", "--json").json()
    assert [h["heading"] for h in found["items"]] == ["Melanie · 1 July 2023 10:00"]
    assert [h["section_type"] for h in found["items"]] == ["turn"]

    since = kbdb("search", "adoption", "--since", "2023-06-01", "--json").json()
    assert [h["heading"] for h in since["items"]] == ["Melanie · 1 July 2023 10:00"]
    past = kbdb("search", "adoption", "--as-of", "2023-06-01", "--json").json()
    assert [h["heading"] for h in past["items"]] == ["Caroline · 8 May 2023 13:56"]


def test_search_help_names_the_speaker_filter(kbdb: Kbdb) -> None:
    run = kbdb("search", "--help")
    assert run.code == 0 and "--speaker" in run.out
