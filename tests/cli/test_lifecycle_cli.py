"""``kbdb revise|history|forget|docs|outline|tags|related`` run as the real CLI."""

from __future__ import annotations

import base64
from pathlib import Path

from tests.cli.conftest import Kbdb, write


def _kbids(kbdb: Kbdb, docid: str) -> dict[str, str]:
    res = kbdb("recall", "--docid", docid, "--json")
    assert res.code == 0, res.err
    return {s["heading"]: s["kbid"] for s in res.json()["sections"]}


def test_revise_from_option_and_stdin_then_history(learned: Path, kbdb: Kbdb) -> None:
    pool = _kbids(kbdb, "db.md")["Connection pool"]
    res = kbdb("revise", pool, "--content", "The pool keeps 50 connections.", "--json")
    assert res.code == 0, res.err
    first = res.json()
    assert first["previous"] == pool and first["kbid"] != pool
    res = kbdb("revise", first["kbid"], "--content", "-", "--tags", "db", input="Pool: 80.\n")
    assert res.code == 0, res.err
    assert res.out.startswith(f"revised {first['kbid']} -> ")
    latest = res.out.split("-> ")[1].strip()
    rec = kbdb("recall", latest, "--json").json()["sections"][0]
    assert rec["content"] == "Pool: 80.\n" and rec["tags"] == ["db"]
    assert rec["heading"] == "Connection pool"

    hist = kbdb("history", first["kbid"], "--json")
    assert hist.code == 0
    versions = hist.json()["versions"]
    assert [v["kbid"] for v in versions] == [pool, first["kbid"], latest]
    assert [v["reason"] for v in versions] == ["revised", "revised", None]
    assert set(versions[0]) == {
        "kbid",
        "created_at",
        "retired_at",
        "reason",
        "valid_from",
        "valid_until",
    }
    table = kbdb("history", latest)
    assert table.code == 0 and f"{latest} *" in table.out and "revised" in table.out

    gone = kbdb("search", "50 connections", "--json").json()
    assert first["kbid"] not in [i["kbid"] for i in gone["items"]]


def test_revise_errors(learned: Path, kbdb: Kbdb) -> None:
    pool = _kbids(kbdb, "db.md")["Connection pool"]
    res = kbdb("revise", pool)
    assert res.code == 2 and "--content" in res.err
    res = kbdb("revise", "0" * 32, "--content", "x", "--json")
    assert res.code == 1 and res.json()["code"] == "NOT_FOUND"
    new = kbdb("revise", pool, "--content", "changed", "--json").json()["kbid"]
    res = kbdb("revise", pool, "--content", "again")
    assert res.code == 2 and "retired" in res.err and new in res.err


def test_forget_by_kbid_and_docid(learned: Path, kbdb: Kbdb) -> None:
    auth = _kbids(kbdb, "auth.md")["Authentication"]
    res = kbdb("forget", auth, "--json")
    assert res.code == 0, res.err
    assert res.json() == {"retired": [auth], "already_retired": []}
    again = kbdb("forget", auth)
    assert again.code == 0 and f"already retired: {auth}" in again.out
    assert kbdb("search", "tokens expire", "--json").json()["total"] == 0
    rec = kbdb("recall", auth, "--json").json()["sections"][0]
    assert rec["retired"] is True

    res = kbdb("forget", "--docid", "db.md")
    assert res.code == 0 and res.out.startswith("forgot 2 section(s)")
    docs = kbdb("docs", "--json").json()
    assert docs["total"] == 0 and docs["items"] == []
    assert kbdb("forget").code == 2
    assert kbdb("forget", "--docid", "nope").code == 1


def test_docs_outline_tags(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("docs", "--json")
    assert res.code == 0
    data = res.json()
    assert [d["docid"] for d in data["items"]] == ["auth.md", "db.md"]
    assert data["total"] == 2 and data["has_more"] is False
    db = data["items"][1]
    assert db["sections"] == 2 and db["tags"] == ["backend", "design"]
    assert db["source_path"].endswith("db.md") and db["title"] == "Database"
    page = kbdb("docs", "--limit", "1", "--json").json()
    assert page["has_more"] is True and len(page["items"]) == 1
    table = kbdb("docs")
    assert "auth.md" in table.out and "next page" not in table.out
    assert "next page: --offset 1" in kbdb("docs", "--limit", "1").out
    assert kbdb("docs", "--tags", "missing", "--json").json()["total"] == 0
    assert kbdb("docs", "--limit", "0").code == 2

    out = kbdb("outline", "db.md", "--json").json()
    assert out["title"] == "Database"
    assert [(n["heading"], n["level"]) for n in out["nodes"]] == [("Database", 1)]
    assert [c["heading"] for c in out["nodes"][0]["children"]] == ["Connection pool"]
    tree = kbdb("outline", "db.md")
    assert tree.code == 0 and "Database" in tree.out and "└── Connection pool" in tree.out
    assert kbdb("outline", "missing.md").code == 1

    tags = kbdb("tags", "--json").json()
    assert tags == {"tags": [{"tag": "backend", "count": 3}, {"tag": "design", "count": 3}]}
    assert "backend" in kbdb("tags").out


def test_related(learned: Path, kbdb: Kbdb) -> None:
    write(learned, "more/pooling.md", "# Pooling\n\nA connection pool reuses connections.\n")
    assert kbdb("learn", "more/pooling.md").code == 0
    ids = _kbids(kbdb, "db.md")
    res = kbdb("related", ids["Connection pool"], "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["kbid"] == ids["Connection pool"] and data["method"] == "lexical"
    assert [(i["docids"], i["relation"]) for i in data["items"]] == [(["pooling.md"], "lexical")]
    assert set(data["items"][0]) == {"kbid", "heading", "docids", "relation", "score"}
    table = kbdb("related", ids["Connection pool"], "--limit", "3")
    assert table.code == 0 and "Pooling" in table.out and "neighbours by lexical" in table.out
    assert kbdb("related", ids["Database"]).out.strip() == "Nothing related."
    assert kbdb("related", "0" * 32).code == 1
    assert kbdb("related", ids["Database"], "--limit", "0").code == 2


def test_commands_are_listed_in_help(kbdb: Kbdb) -> None:
    out = kbdb("--help").out
    for name in ("revise", "history", "forget", "docs", "outline", "tags", "related"):
        assert f"\n  {name} " in out, name


def test_learn_image_from_stdin_and_json_errors(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452")
    res = kbdb("learn", "-", "--type", "image/png", "--title", "Rack layout", "--json", input=png)
    assert res.code == 0, res.err
    section = res.json()["sections"][0]
    assert section["indexed_terms_count"] == 0
    hits = kbdb("search", "rack layout", "--json").json()["items"]
    assert [h["kbid"] for h in hits] == [section["kbid"]]
    rec = kbdb("recall", section["kbid"], "--json").json()["sections"][0]
    assert base64.b64decode(rec["content"]) == png
    assert "base64" in kbdb("recall", section["kbid"]).out
    res = kbdb("learn", "-", "--type", "image/png", "--docid", "x", input=png)
    assert res.code == 2 and "needs a title" in res.err
    res = kbdb("learn", "-", "--type", "application/json", "--json", input='{"a": }')
    assert res.code == 2 and res.json()["code"] == "INVALID_ARGUMENT"
    assert "line 1 column 7" in res.json()["error"]
    res = kbdb("learn", "-", "--type", "application/zip", "--json", input="x")
    assert res.code == 2 and res.json()["code"] == "UNSUPPORTED_TYPE"
