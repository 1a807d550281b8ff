"""kbdb learn - (stdin), kbdb recall and kbdb stats."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb

SECTION_KEYS = {
    "kbid",
    "heading",
    "level",
    "parent",
    "content",
    "type",
    "section_type",
    "title",
    "description",
    "tags",
    "docids",
    "source_key",
    "created_at",
    "retired_at",
    "superseded_by",
}


def test_recall_by_kbid(learned: Path, kbdb: Kbdb) -> None:
    kbid = kbdb("--json", "search", "pool").json()["items"][0]["kbid"]
    res = kbdb("--json", "recall", kbid)
    assert res.code == 0, res.err
    (section,) = res.json()["sections"]
    assert set(section) >= SECTION_KEYS
    assert section["kbid"] == kbid
    assert "create_pool(size=20)" in section["content"]
    human = kbdb("recall", kbid)
    assert human.code == 0 and "create_pool(size=20)" in human.out and kbid in human.out


def test_recall_by_docid_in_order(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("--json", "recall", "--docid", "db.md")
    assert res.code == 0, res.err
    headings = [s["heading"] for s in res.json()["sections"]]
    assert headings == ["Database", "Connection pool"]


def test_recall_unknown_and_missing_arguments(learned: Path, kbdb: Kbdb) -> None:
    unknown = kbdb("recall", "0" * 32)
    assert unknown.code == 1
    assert unknown.err.startswith("kbdb: ") and "Traceback" not in unknown.err
    as_json = kbdb("--json", "recall", "0" * 32)
    assert as_json.json()["code"] == "NOT_FOUND"
    assert kbdb("recall", "--docid", "nope.md").code == 1
    assert kbdb("recall").code == 2


def test_learn_stdin(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    text = "# Decision\n\nWe chose SQLite for the catalog because it is embedded.\n"
    res = kbdb("--json", "learn", "-", "--tags", "adr", input=text)
    assert res.code == 0, res.err
    assert res.json()["sections"][0]["heading"] == "Decision"
    (section,) = kbdb("--json", "recall", "--docid", "stdin").json()["sections"]
    assert "SQLite for the catalog" in section["content"]
    assert section["tags"] == ["adr"]
    hit = kbdb("--json", "search", "catalog", "embedded").json()["items"][0]
    assert hit["docids"] == ["stdin"]


def test_learn_stdin_with_metadata(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    res = kbdb(
        "learn",
        "-",
        "--docid",
        "facts",
        "--title",
        "Ports",
        "--type",
        "text/plain",
        "--section-type",
        "fact",
        "--description",
        "network ports",
        input="The admin console listens on port 8443.",
    )
    assert res.code == 0, res.err
    (section,) = kbdb("--json", "recall", "--docid", "facts").json()["sections"]
    assert (section["title"], section["type"], section["section_type"]) == (
        "Ports",
        "text/plain",
        "fact",
    )
    assert section["description"] == "network ports"


def test_learn_stdin_rejects_invalid_utf8(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    res = kbdb("learn", "-", input=b"\xff\xfe\x00")
    assert res.code == 2 and "stdin is not valid UTF-8" in res.err


def test_stats(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("--json", "stats")
    assert res.code == 0, res.err
    data = res.json()
    assert data["documents"] == 2 and data["live_sections"] >= 3
    assert data["embedding_provider"] == "none"
    human = kbdb("stats")
    assert human.code == 0 and "documents" in human.out and "analyzer" in human.out
