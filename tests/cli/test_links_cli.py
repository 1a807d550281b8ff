"""``kbdb links`` and ``kbdb backlinks`` run as the real CLI, on a vault learned with
``kbdb learn`` (tests/links_vault.py); and ``kbdb related`` listing linked sections."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.conftest import Kbdb
from tests.links_vault import OPERATIONS_LINK_LINE, write_vault

import kbdb as kbdb_api


@pytest.fixture
def vault(tmp_path: Path, kbdb: Kbdb) -> Path:
    """The vault learned into a knowledge base in tmp_path (the working folder)."""
    assert kbdb("init").code == 0
    folder = write_vault(tmp_path)
    res = kbdb("learn", "vault")
    assert res.code == 0, res.err
    return folder


def _rows(out: str) -> list[list[str]]:
    """The table's rows below its rule, split on runs of spaces."""
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if set(line.strip()) == {"─"})
    return [line.split("   ") for line in lines[start + 1 :] if line.strip()]


def _cells(row: list[str]) -> list[str]:
    return [c.strip() for c in row if c.strip()]


def test_links_table(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("links", "Home.md")
    assert res.code == 0, res.err
    rows = [_cells(r) for r in _rows(res.out)]
    assert rows[:3] == [
        ["3", "wikilink", "Databases", "resolved", "Databases.md › Databases"],
        ["3", "wikilink", "Caching|the cache notes", "resolved", "Caching.md › Caching"],
        [
            str(OPERATIONS_LINK_LINE),
            "wikilink",
            "Runbook#Rollback",
            "resolved",
            "Runbook.md › Rollback",
        ],
    ]
    assert rows[3] == ["3 link(s): 3 resolved"]
    header = res.out.splitlines()[0].split()
    assert header == ["line", "kind", "link", "status", "goes", "to"]


def test_links_shows_what_goes_nowhere(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("links", "Glossary.md")
    assert res.code == 0, res.err
    rows = [_cells(r) for r in _rows(res.out)]
    assert rows == [["3", "wikilink", "Missing note", "dangling", "—"], ["1 link(s): 1 dangling"]]
    none = kbdb("links", "Runbook.md", "--kbid", _kbid(vault, "Runbook.md", "Deploy"))
    assert none.code == 0 and none.out.startswith("No links in Runbook.md.")


def test_backlinks_table_names_the_linking_file_and_line(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("backlinks", "Runbook.md")
    assert res.code == 0, res.err
    assert res.out.splitlines()[0].split() == ["from", "heading", "label", "to"]
    rows = [_cells(r) for r in _rows(res.out)]
    # The path as search shows paths: relative to the working folder, where the vault is.
    # Runbook's Checklist links to its own [[#Deploy]]: a link within the note counts.
    assert rows == [
        [f"vault/Home.md:{OPERATIONS_LINK_LINE}", "Operations", "—", "Rollback"],
        ["vault/Runbook.md:15", "Checklist", "—", "Deploy"],
        ["2 backlink(s)"],
    ]
    res = kbdb("backlinks", "Caching.md")
    rows = [_cells(r) for r in _rows(res.out)]
    assert rows[:2] == [
        ["vault/Databases.md:10", "Connection pool", "—", "(note)"],
        ["vault/Home.md:3", "Home", "the cache notes", "(note)"],
    ]
    # From elsewhere, the path is absolute.
    away = vault.parent / "elsewhere"
    away.mkdir()
    res = kbdb("--db", str(vault.parent), "backlinks", "Runbook.md", cwd=away)
    lines = res.out.splitlines()
    width = lines[0].index("heading")  # the first column, folded over lines
    first = "".join(line[:width].strip() for line in lines[2:])
    assert first.startswith(f"{vault / 'Home.md'}:{OPERATIONS_LINK_LINE}")


def test_backlinks_of_one_section(vault: Path, kbdb: Kbdb) -> None:
    rollback = _kbid(vault, "Runbook.md", "Rollback")
    res = kbdb("backlinks", "--kbid", rollback)
    assert res.code == 0, res.err
    assert res.out.splitlines()[0].split() == ["from", "heading", "label"]  # no "to": one
    assert _cells(_rows(res.out)[0])[:2] == [f"vault/Home.md:{OPERATIONS_LINK_LINE}", "Operations"]
    deploy = _kbid(vault, "Runbook.md", "Deploy")
    res = kbdb("backlinks", "--kbid", deploy)
    assert _cells(_rows(res.out)[0])[:2] == ["vault/Runbook.md:15", "Checklist"]
    none = kbdb("backlinks", "Glossary.md")
    assert none.code == 0 and none.out == "Nothing links to Glossary.md.\n"


def test_json_is_the_api_result(vault: Path, kbdb: Kbdb, tmp_path: Path) -> None:
    out = kbdb("links", "Home.md", "--json")
    back = kbdb("--json", "backlinks", "--kbid", _kbid(vault, "Runbook.md", "Rollback"))
    assert out.code == back.code == 0
    with kbdb_api.KnowledgeBase.open(tmp_path) as kb:
        assert out.json() == kb.links("Home.md").to_dict()
        rollback = _kbid(vault, "Runbook.md", "Rollback")
        assert back.json() == kb.backlinks(kbid=rollback).to_dict()
    item = out.json()["items"][2]
    assert item["target"] == "Runbook" and item["fragment"] == "Rollback"
    assert item["line"] == OPERATIONS_LINK_LINE
    assert item["from_path"] == str(vault / "Home.md")


def test_errors(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("links", "Nope.md")
    assert res.code == 1 and res.out == ""
    assert res.err == "kbdb: no document 'Nope.md' (list them with 'kbdb docs')\n"
    res = kbdb("backlinks", "--kbid", "0" * 32, "--json")
    assert res.code == 1 and res.json()["code"] == "NOT_FOUND"
    assert "kbids come from search results" in res.err
    for command in ("links", "backlinks"):
        res = kbdb(command)
        assert res.code == 2
        assert res.err == f"kbdb: give a DOCID, or --kbid KBID (try 'kbdb {command} --help')\n"


def test_related_lists_links(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("related", _kbid(vault, "Runbook.md", "Rollback"))
    assert res.code == 0, res.err
    rows = [_cells(r) for r in _rows(res.out)]
    relations = [r[-1] if r[-1] in ("sibling", "link") else r[-2] for r in rows[:4]]
    assert relations == ["sibling", "sibling", "link", "link"]
    assert [r[1] for r in rows[2:4]] == ["Home", "Operations"]


def _kbid(vault: Path, docid: str, heading: str) -> str:
    with kbdb_api.KnowledgeBase.open(vault.parent) as kb:
        return {s.heading: s.kbid for s in kb.recall(docid=docid).sections}[heading]
