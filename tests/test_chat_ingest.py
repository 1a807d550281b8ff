"""Conversation transcripts as memory (docs/conversations.md): the accepted shapes, a turn's
speaker and time, time in search, identical turns, malformed records, export and rebuild."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import kbdb
from kbdb.config import set_value
from kbdb.ingest.chat import parse_time, turn_heading

T1 = "2023-05-08T13:56:00Z"
T2 = "2023-06-20T09:00:00Z"


def jsonl(path: Path, records: Sequence[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def turns(kb: kbdb.KnowledgeBase) -> dict[str, tuple[str, str | None]]:
    """kbid -> (speaker, time), read from kb.sqlite itself."""
    with sqlite3.connect(kb.path / "kb.sqlite") as conn:
        rows = conn.execute("SELECT kbid, speaker, spoken_at FROM section_turns").fetchall()
    return {k: (s, t) for k, s, t in rows}


def doc(kb: kbdb.KnowledgeBase, docid: str) -> list[Any]:
    return list(kb.recall(docid=docid).sections)


def hits(kb: kbdb.KnowledgeBase, query: str, **kw: Any) -> list[str]:
    return [h.heading for h in kb.search(query, **kw).items]


def test_speaker_time_text_records_learn_into_turn_sections(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = jsonl(
        tmp_path / "src" / "chat.jsonl",
        [
            {"speaker": "Caroline", "time": T1, "text": "I went to a support group yesterday."},
            {"speaker": "Melanie", "time": "2023-05-08T13:57:30Z", "text": "That's great!"},
        ],
    )
    rep = kb.learn_path(src)
    assert (rep.documents_added, rep.sections_added, rep.files_skipped) == (1, 2, ())
    sections = doc(kb, "chat.jsonl")
    assert [s.heading for s in sections] == [
        "Caroline · 8 May 2023 13:56",
        "Melanie · 8 May 2023 13:57:30",
    ]
    assert [s.content.strip() for s in sections] == [
        "I went to a support group yesterday.",
        "That's great!",
    ]
    assert {s.section_type for s in sections} == {"turn"}
    assert turns(kb) == {
        sections[0].kbid: ("Caroline", T1),
        sections[1].kbid: ("Melanie", "2023-05-08T13:57:30Z"),
    }


def test_openai_messages_object_and_list(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "object.json").write_text(
        json.dumps(
            {
                "title": "pool tuning",
                "messages": [
                    {"role": "system", "content": "You are helpful."},
                    {
                        "role": "user",
                        "name": "dana",
                        "content": "How big should the connection pool be?",
                        "timestamp": 1_700_000_000,
                    },
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Start with twice the cores."},
                            {"type": "image_url", "image_url": {"url": "x"}},
                        ],
                        "created_at": "2023-11-14T22:14:00+00:00",
                    },
                ],
            }
        )
    )
    (src / "list.json").write_text(
        json.dumps([{"role": "user", "content": "postgres vacuum settings", "time": T2}])
    )
    jsonl(src / "lines.jsonl", [{"role": "assistant", "content": "autovacuum is on", "time": T2}])
    rep = kb.learn_path(src)
    assert rep.files_skipped == () and rep.documents_added == 3
    obj = doc(kb, "object.json")
    assert [s.heading for s in obj] == [
        "system",
        "dana · 14 November 2023 22:13:20",
        "assistant · 14 November 2023 22:14",
    ]
    assert obj[2].content.strip() == "Start with twice the cores."
    titles = {d.docid: d.title for d in kb.documents().items}
    assert titles["object.json"] == "pool tuning"
    assert [s.heading for s in doc(kb, "list.json")] == ["user · 20 June 2023 09:00"]
    assert [s.heading for s in doc(kb, "lines.jsonl")] == ["assistant · 20 June 2023 09:00"]
    by_speaker = {s for s, _t in turns(kb).values()}
    assert by_speaker == {"system", "dana", "assistant", "user"}


def test_json_that_is_not_a_transcript_stays_one_json_section(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"maxConnections": 10, "messages": "hi"}))
    (src / "rows.json").write_text(json.dumps([{"id": 1, "text": "no speaker here"}]))
    rep = kb.learn_path(src)
    assert rep.files_skipped == () and rep.sections_added == 2
    assert [s.type for s in doc(kb, "config.json")] == ["application/json"]
    assert [s.type for s in doc(kb, "rows.json")] == ["application/json"]
    assert turns(kb) == {}


def test_session_field_splits_a_file_into_documents(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    src = jsonl(
        tmp_path / "log.jsonl",
        [
            {"session": 1, "speaker": "A", "time": T1, "text": "first session words"},
            {"session": 2, "speaker": "B", "time": T2, "text": "second session words"},
            {"session": 1, "speaker": "B", "time": T1, "text": "first session reply"},
        ],
    )
    rep = kb.learn_path(src)
    assert rep.documents_added == 2
    assert [s.content.strip() for s in doc(kb, "log.jsonl#1")] == [
        "first session words",
        "first session reply",
    ]
    assert [s.heading for s in doc(kb, "log.jsonl#2")] == ["B · 20 June 2023 09:00"]


def test_identical_turns_keep_their_own_speaker_and_time(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    jsonl(
        src / "a.jsonl",
        [
            {"speaker": "Caroline", "time": T1, "text": "ok"},
            {"speaker": "Melanie", "time": T1, "text": "ok"},
            {"speaker": "Caroline", "time": T2, "text": "ok"},
        ],
    )
    jsonl(src / "b.jsonl", [{"speaker": "Caroline", "text": "thanks!"}])
    jsonl(src / "c.jsonl", [{"speaker": "Caroline", "text": "thanks!"}])
    rep = kb.learn_path(src)
    assert rep.sections_added == 4  # three "ok"s, one "thanks!" shared by b and c
    a = doc(kb, "a.jsonl")
    assert sorted(turns(kb)[s.kbid] for s in a) == [
        ("Caroline", T1),
        ("Caroline", T2),
        ("Melanie", T1),
    ]
    (thanks,) = doc(kb, "b.jsonl")
    assert doc(kb, "c.jsonl")[0].kbid == thanks.kbid
    assert turns(kb)[thanks.kbid] == ("Caroline", None)


def test_since_until_sort_and_as_of_use_the_turn_time(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = jsonl(
        tmp_path / "chat.jsonl",
        [
            {"speaker": "A", "time": T1, "text": "the gardening club met"},
            {"speaker": "B", "time": T2, "text": "the gardening club met again"},
        ],
    )
    kb.learn_path(src)  # learned now, years after both turns
    early, late = "A · 8 May 2023 13:56", "B · 20 June 2023 09:00"
    assert [h for h in hits(kb, "gardening june")][:1] == [late]  # the time is in words
    assert hits(kb, "gardening", since="2023-06-01") == [late]
    assert hits(kb, "gardening", until="2023-06-01") == [early]
    assert hits(kb, "gardening", since="2024-01-01") == []
    assert hits(kb, "gardening", sort="recent") == [late, early]
    assert hits(kb, "gardening", as_of="2023-05-01") == []
    assert hits(kb, "gardening", as_of="2023-05-09") == [early]
    assert sorted(hits(kb, "gardening", as_of="2023-07-01")) == [early, late]


def test_recency_half_life_ages_a_turn_from_its_time(tmp_path: Path) -> None:
    base = kbdb.KnowledgeBase.init(tmp_path / "kb")
    src = jsonl(
        tmp_path / "chat.jsonl",
        [
            # The older turn matches better (the query word twice) ...
            {"speaker": "A", "time": "2020-01-01", "text": "budget budget review"},
            {"speaker": "B", "time": T2, "text": "budget review notes"},
        ],
    )
    base.learn_path(src)
    assert hits(base, "budget")[0].startswith("A ·")
    base.close()
    set_value(tmp_path / "kb" / ".kbdb" / "worker.toml", "search.recency_half_life", "30d")
    with kbdb.KnowledgeBase.open(tmp_path / "kb") as aged:
        # ... but it is three years older, so the decay puts the newer one first.
        assert hits(aged, "budget")[0].startswith("B ·")


def test_speaker_is_searchable_and_filterable(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    src = jsonl(
        tmp_path / "chat.jsonl",
        [
            {"speaker": "Caroline", "time": T1, "text": "I painted a sunrise"},
            {"speaker": "Melanie", "time": T1, "text": "I painted a lake"},
        ],
    )
    kb.learn_path(src)
    res = kb.search("caroline painted")
    strict = [h.heading for h in res.items if not h.relaxed]
    # The speaker is in the heading; Melanie's turn has "painted" in its context (the turn
    # before it) but not Caroline's name, which the context leaves out.
    assert strict == ["Caroline · 8 May 2023 13:56"]
    assert hits(kb, "painted", speaker="melanie") == ["Melanie · 8 May 2023 13:56"]
    assert hits(kb, "painted", speaker="Nobody") == []
    kb.learn("# Caroline\n\npainted fences", docid="notes")  # a heading, not a speaker
    assert hits(kb, "painted", speaker="Caroline") == ["Caroline · 8 May 2023 13:56"]
    with pytest.raises(kbdb.KbdbError):
        kb.search("painted", speaker="  ")


def test_malformed_records_are_skipped_with_codes(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    big = 50 * 1024 * 1024
    with (src / "chat.jsonl").open("w", encoding="utf-8") as f:
        f.write(json.dumps({"speaker": "A", "time": T1, "text": "kept before"}) + "\n")
        f.write('{"speaker": "A", "text": \n')  # not JSON
        f.write(json.dumps({"speaker": "A", "time": T1}) + "\n")  # no text
        f.write(json.dumps({"speaker": "A", "time": "the day after", "text": "x"}) + "\n")
        f.write(json.dumps({"text": "who said this"}) + "\n")
        f.write('{"speaker": "A", "text": "' + "y" * big + '"}\n')  # a 50 MB line
        f.write("[1, 2]\n")
        f.write(json.dumps({"speaker": "B", "time": T2, "text": "kept after"}) + "\n")
    (src / "broken.json").write_text('[{"role": "user", "content": "hi"}')
    (src / "notes.md").write_text("# Notes\n\nstill learned\n")
    rep = kb.learn_path(src)
    codes = {Path(s.path).name: s.code for s in rep.files_skipped}
    assert codes == {
        "chat.jsonl:2": "CHAT_INVALID_JSON",
        "chat.jsonl:3": "CHAT_TEXT_MISSING",
        "chat.jsonl:4": "CHAT_TIME_INVALID",
        "chat.jsonl:5": "CHAT_SPEAKER_MISSING",
        "chat.jsonl:6": "CHAT_RECORD_TOO_LARGE",
        "chat.jsonl:7": "CHAT_NOT_A_RECORD",
        "broken.json": "INVALID_ARGUMENT",
    }
    assert [s.content.strip() for s in doc(kb, "chat.jsonl")] == ["kept before", "kept after"]
    assert hits(kb, "still learned") == ["Notes"]


def test_a_transcript_without_turns_is_skipped(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    rep = kb.learn_path(tmp_path / "empty.jsonl")
    assert [s.code for s in rep.files_skipped] == ["CHAT_NO_TURNS"]
    assert rep.documents_added == 0


def test_relearning_a_transcript_supersedes_changed_turns(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    records = [
        {"speaker": "A", "time": T1, "text": "meet on monday"},
        {"speaker": "B", "time": T2, "text": "agreed"},
    ]
    src = jsonl(tmp_path / "chat.jsonl", records)
    kb.learn_path(src)
    again = kb.learn_path(src)
    assert again.documents_unchanged == 1
    records[0]["text"] = "meet on tuesday"
    jsonl(src, records)
    rep = kb.learn_path(src)
    assert (rep.documents_updated, rep.sections_added, rep.sections_retired) == (1, 1, 1)
    # B's turn is kept (its kbid is its own text), and its context, the turn before it,
    # follows the change: "monday" is gone from the index, "tuesday" finds it after A's.
    assert hits(kb, "monday") == []
    assert hits(kb, "tuesday") == ["A · 8 May 2023 13:56", "B · 20 June 2023 09:00"]


def test_turns_survive_export_import_and_rebuild(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    src = jsonl(
        tmp_path / "chat.jsonl",
        [
            {"speaker": "Caroline", "time": T1, "text": "adoption agencies"},
            {"speaker": "Melanie", "time": T2, "text": "adoption is wonderful"},
        ],
    )
    kb.learn_path(src)
    before = turns(kb)
    kb.rebuild()
    assert hits(kb, "adoption", speaker="caroline") == ["Caroline · 8 May 2023 13:56"]
    kb.export(tmp_path / "snap")
    other = kbdb.KnowledgeBase.init(tmp_path / "other")
    try:
        other.import_snapshot(tmp_path / "snap")
        assert turns(other) == before
        assert hits(other, "adoption", speaker="melanie") == ["Melanie · 20 June 2023 09:00"]
        assert hits(other, "adoption", since="2023-06-01") == ["Melanie · 20 June 2023 09:00"]
        assert hits(other, "adoption", as_of="2023-06-01") == ["Caroline · 8 May 2023 13:56"]
        assert other.check().ok
    finally:
        other.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-05-08T13:56:00Z", "2023-05-08T13:56:00Z"),
        ("2023-05-08T15:56:00+02:00", "2023-05-08T13:56:00Z"),
        ("2023-05-08 13:56", "2023-05-08T13:56:00Z"),
        ("2023-05-08", "2023-05-08T00:00:00Z"),
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
        (1_683_554_160, "2023-05-08T13:56:00Z"),
        (1_683_554_160_000, "2023-05-08T13:56:00Z"),
    ],
)
def test_time_forms(value: object, expected: str) -> None:
    assert parse_time(value) == expected


@pytest.mark.parametrize("value", ["yesterday", "", True, None, float("nan"), [2023]])
def test_times_that_do_not_parse(value: object) -> None:
    with pytest.raises(ValueError):
        parse_time(value)


def test_heading_carries_the_time_to_the_minute_or_second() -> None:
    assert turn_heading("Ann", None) == "Ann"
    assert turn_heading("Ann", "2023-05-08T13:56:00Z") == "Ann · 8 May 2023 13:56"
    assert turn_heading("Ann", "2023-05-08T13:56:07Z") == "Ann · 8 May 2023 13:56:07"


def test_a_turn_is_found_by_the_words_of_the_turn_before_it(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    src = jsonl(
        tmp_path / "chat.jsonl",
        [
            {"speaker": "Melanie", "time": T1, "text": "What are you researching these days?"},
            {"speaker": "Caroline", "time": T2, "text": "Adoption agencies, mostly."},
            {"speaker": "Melanie", "time": T2, "text": "That sounds exciting."},
        ],
    )
    kb.learn_path(src)
    res = kb.search("caroline researching")
    top = res.items[0]
    assert top.heading.startswith("Caroline ·") and not top.relaxed
    # The context is indexed, not shown: the content and snippet are the turn's own.
    assert "researching" not in top.snippet
    full = kb.recall(top.kbid).sections[0]
    assert full.content == "Adoption agencies, mostly.\n"
    assert full.description == "What are you researching these days?"
    # The first turn of a session has nothing before it.
    first = kb.search("researching", speaker="Melanie").items[0]
    assert kb.recall(first.kbid).sections[0].description is None
