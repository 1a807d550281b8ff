"""``kbdb check|gc|rebuild|export|import`` through the real CLI (SPEC §8, §11)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.cli.conftest import Kbdb


def tamper(root: Path, stmt: str) -> None:
    con = sqlite3.connect(root / ".kbdb" / "kb.sqlite")
    with con:
        con.execute(stmt)
    con.close()


def test_check_ok_then_errors_exit_1(learned: Path, kbdb: Kbdb) -> None:
    ok = kbdb("check", "--json")
    assert ok.code == 0, ok.err
    data = ok.json()
    assert data["ok"] is True and data["errors"] == [] and data["warnings"] == []
    assert set(data) == {"ok", "errors", "warnings", "checked"}
    human = kbdb("check")
    assert human.code == 0 and "check: ok" in human.out

    tamper(learned, "UPDATE sections SET content = 'changed' WHERE heading = 'Connection pool'")
    bad = kbdb("check", "--json")
    assert bad.code == 1
    errors = bad.json()["errors"]
    assert [e["code"] for e in errors] == ["checksum_mismatch"] and len(errors[0]["kbid"]) == 32
    human = kbdb("check")
    assert human.code == 1 and "checksum_mismatch" in human.out and "1 error" in human.out


def test_gc_dry_run_then_real(learned: Path, kbdb: Kbdb) -> None:
    tamper(
        learned,
        "DELETE FROM document_sections WHERE kbid ="
        " (SELECT kbid FROM sections WHERE heading = 'Authentication')",
    )
    assert kbdb("check").code == 1
    dry = kbdb("gc", "--dry-run", "--json")
    assert dry.code == 0, dry.err
    d = dry.json()
    assert d["dry_run"] is True and d["sections_removed"] == 1 and d["documents_removed"] == 1
    human = kbdb("gc", "--dry-run")
    assert "would remove section:" in human.out and "document:auth.md" in human.out
    real = kbdb("gc", "--json").json()
    assert real["removed"] == d["removed"] and real["dry_run"] is False
    assert kbdb("check").code == 0
    assert kbdb("gc").code == 0


def test_gc_option_errors(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("gc", "--older-than", "3")
    assert res.code == 2 and "--prune-retired" in res.err
    res = kbdb("gc", "--prune-retired", "--older-than", "-1")
    assert res.code == 2
    assert kbdb("gc", "--prune-retired", "--older-than", "0.5", "--dry-run").code == 0


def test_rebuild_flags(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("rebuild", "--lexical-only", "--vectors-only")
    assert res.code == 2
    res = kbdb("rebuild", "--lexical-only", "--json")
    assert res.code == 0 and res.json()["sections"] == 3 and res.json()["vectors"] == 0
    assert kbdb("search", "pool").code == 0


def test_export_import_round_trip(learned: Path, kbdb: Kbdb, tmp_path: Path) -> None:
    res = kbdb("export", "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["path"] == str(tmp_path / "kbdb-export")
    assert data["sections_exported"] == 3 and data["documents_exported"] == 2
    assert "exported 3 section(s)" in kbdb("export").out  # again into the earlier export

    assert kbdb("init", "other").code == 0
    imp = kbdb("import", str(tmp_path / "kbdb-export"), "--db", "other", "--json")
    assert imp.code == 0, imp.err
    assert imp.json()["sections_imported"] == 3 and imp.json()["sections_skipped"] == 0
    assert kbdb("export", "again", "--db", "other").code == 0
    first = sorted(
        p.relative_to(tmp_path / "kbdb-export") for p in (tmp_path / "kbdb-export").rglob("*")
    )
    second = sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*"))
    assert first == second
    for rel in first:
        a, b = tmp_path / "kbdb-export" / rel, tmp_path / "again" / rel
        assert a.is_dir() or a.read_bytes() == b.read_bytes()
    hits = kbdb("search", "pool", "--db", "other", "--json").json()
    assert hits["total"] >= 1

    refused = kbdb("import", str(tmp_path / "kbdb-export"), "--db", "other", "--no-merge")
    assert refused.code == 2 and "merge" in refused.err


def test_export_refuses_a_foreign_folder(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("export", "docs", "--json")  # docs/ holds the learned Markdown
    assert res.code == 2
    assert res.json()["code"] == "INVALID_ARGUMENT" and "not an earlier kbdb export" in res.err


def test_import_of_a_bad_snapshot(learned: Path, kbdb: Kbdb, tmp_path: Path) -> None:
    assert kbdb("export", "snap").code == 0
    f = sorted((tmp_path / "snap" / "sections").rglob("*.md"))[0]
    f.write_bytes(f.read_bytes() + b"!")
    res = kbdb("import", "snap", "--json")
    assert res.code == 2 and res.json()["code"] == "INVALID_ARGUMENT"
    assert "hashes to" in res.err


def test_help_lists_the_commands_in_order(kbdb: Kbdb) -> None:
    out = kbdb("--help").out
    order = [out.index(f"  {c} ") for c in ("stats", "check", "gc", "rebuild", "export", "import")]
    assert order == sorted(order)
