"""Citations in the CLI: ``path:12-40`` in the search table, ``source`` in ``--json``,
``recall --lines``."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb
from tests.test_citations import NOTE


def test_cli_table_recall_lines_and_json(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pools.md").write_text(NOTE, encoding="utf-8")
    assert kbdb("learn", "notes").code == 0
    table = kbdb("search", "pool slots")
    assert table.code == 0, table.err
    assert "notes/pools.md:11-16" in table.out
    hit = kbdb("--json", "search", "pool slots").json()["items"][0]
    assert hit["source"]["start_line"] == 11 and hit["source"]["end_line"] == 16
    shown = kbdb("recall", "--lines", hit["kbid"])
    assert shown.code == 0, shown.err
    assert "source: notes/pools.md:11-16" in shown.out
    file_lines = NOTE.split("\n")
    for n in (13, 14, 15, 16):
        # the row for line n is "n  <the file's line n>"
        assert f"{n}  {file_lines[n - 1]}" in shown.out, shown.out
    assert "12  " not in shown.out  # the setext underline is heading, not content
    plain = kbdb("recall", hit["kbid"])
    assert "13  The pool" not in plain.out and "The pool has 10 slots." in plain.out


def test_recall_lines_says_when_lines_are_unknown(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    assert kbdb("learn", "-", "--docid", "typed", input="Typed in by hand.\n").code == 0
    kbid = kbdb("--json", "search", "typed hand").json()["items"][0]["kbid"]
    shown = kbdb("recall", "--lines", kbid)
    assert shown.code == 0, shown.err
    assert "source: unknown" in shown.out
    assert "line numbers unknown" in shown.out and "Typed in by hand." in shown.out
