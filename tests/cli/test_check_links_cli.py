"""``kbdb check`` on links between notes through the real CLI, and the ``check`` tool
of a real MCP session: the warning codes, the file and line they point at, the exit code,
and that export → import keeps what check finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.conftest import Kbdb, write
from tests.mcp.conftest import ALL_TOOLS, connect

VAULT = {
    "Home.md": "# Home\n\n[[Guide]] and [[Missing]].\n![[chart.svg]]\n[[Twin]]\n",
    "Guide.md": "# Guide\n\nBack [[Home#Nowhere]] and [up](../../etc/passwd).\n",
    "a/Twin.md": "# Twin\n\nOne.\n",
    "b/c/Twin.md": "# Twin\n\nTwo.\n",
}

EXPECTED = [
    ("link_dangling", "Home.md", 3, "[[Missing]] names no learned note"),
    (
        "link_ambiguous",
        "Home.md",
        5,
        "[[Twin]] goes to a/Twin.md (same folder first, then shortest path);"
        " also so named: b/c/Twin.md",
    ),
    (
        "link_missing_heading",
        "Guide.md",
        3,
        "[[Home#Nowhere]]: Home.md has no heading 'Nowhere'; the link goes to the note",
    ),
    (
        "link_outside",
        "Guide.md",
        3,
        "[…](../../etc/passwd) leads outside the learned folders; it is not followed",
    ),
    (
        "link_attachments",
        "Home.md",
        4,
        "1 link(s) to files that are not notes (images, PDFs, …) lead to nothing learned;"
        ' counted, not listed; the first: embed "chart.svg"',
    ),
    ("note_orphan", "b/c/Twin.md", None, "no other document links to this note"),
]


@pytest.fixture
def vault(tmp_path: Path, kbdb: Kbdb) -> Path:
    assert kbdb("init").code == 0
    for rel, text in VAULT.items():
        write(tmp_path, f"vault/{rel}", text)
    res = kbdb("learn", "vault")
    assert res.code == 0, res.err
    return tmp_path


def found(data: dict[str, object]) -> list[tuple[object, ...]]:
    warnings = data["warnings"]
    assert isinstance(warnings, list)
    return sorted(
        ((w["code"], w.get("docid"), w.get("line"), w["detail"]) for w in warnings),
        key=lambda t: [c for c, *_ in EXPECTED].index(str(t[0])),
    )


def test_check_warns_of_links_and_exits_0(vault: Path, kbdb: Kbdb) -> None:
    res = kbdb("check", "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["ok"] is True and data["errors"] == []
    assert found(data) == EXPECTED
    assert data["checked"]["links"] == 6
    note = next(w for w in data["warnings"] if w["code"] == "note_orphan")
    assert set(note) == {"code", "detail", "docid"}  # no kbid nor line: left out, not null

    human = kbdb("check")
    assert human.code == 0
    lines = human.out.splitlines()
    for code, docid, line, _detail in EXPECTED:
        where = docid if line is None else f"{docid}:{line}"
        assert any(code in ln and where in ln for ln in lines), (code, where, human.out)
    assert "[[Missing]] names no learned note" in human.out
    assert "check: ok, 6 warning(s)" in human.out


def test_export_then_import_keeps_what_check_finds(vault: Path, kbdb: Kbdb) -> None:
    assert kbdb("export", "snap").code == 0
    assert kbdb("init", "other").code == 0
    res = kbdb("import", "snap", "--db", "other", "--json")
    assert res.code == 0, res.err
    there = kbdb("check", "--db", "other", "--json")
    assert there.code == 0 and found(there.json()) == EXPECTED


@pytest.mark.anyio
async def test_the_check_tool_returns_the_link_warnings(vault: Path, tmp_path: Path) -> None:
    async with connect(vault / ".kbdb", tmp_path / "err.log", *ALL_TOOLS) as c:
        report = await c.ok("check")
    assert report["ok"] is True
    assert found(report) == EXPECTED


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
