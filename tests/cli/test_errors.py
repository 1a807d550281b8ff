"""Finding the knowledge base, error format and exit codes (SPEC §1, §11, §14)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb


def test_no_knowledge_base_is_exit_3_with_a_hint(kbdb: Kbdb) -> None:
    res = kbdb("search", "anything")
    assert res.code == 3
    assert res.err.startswith("kbdb: ")
    assert "(run 'kbdb init')" in res.err
    assert "Traceback" not in res.err
    assert len(res.err.strip().splitlines()) == 1
    assert res.out == ""


def test_json_errors_also_print_the_structured_error(kbdb: Kbdb) -> None:
    res = kbdb("--json", "stats")
    assert res.code == 3
    assert res.json()["code"] == "KB_NOT_FOUND"


def test_debug_shows_the_traceback(kbdb: Kbdb) -> None:
    res = kbdb("--debug", "stats")
    assert res.code == 3
    assert "Traceback" in res.err and "KbNotFoundError" in res.err


def test_found_from_a_subfolder_from_kbdb_db_and_from_db(learned: Path, kbdb: Kbdb) -> None:
    sub = learned / "docs"
    assert kbdb("--json", "stats", cwd=sub).code == 0
    elsewhere = learned / "elsewhere"
    elsewhere.mkdir()
    assert kbdb("--json", "stats", cwd=elsewhere).code == 0  # walks up to tmp_path/.kbdb
    outside = learned.parent
    assert kbdb("stats", cwd=outside).code in (0, 3)  # depends on the folders above tmp
    for db in (str(learned), str(learned / ".kbdb")):
        assert kbdb("--db", db, "--json", "stats", cwd=outside).json()["documents"] == 2
        assert kbdb("stats", "--db", db, "--json", cwd=outside).json()["documents"] == 2
    env = {"KBDB_DB": str(learned / ".kbdb")}
    assert kbdb("--json", "stats", cwd=outside, env=env).json()["documents"] == 2


def test_db_pointing_nowhere_is_exit_3(tmp_path: Path, kbdb: Kbdb) -> None:
    res = kbdb("--db", str(tmp_path / "missing"), "stats")
    assert res.code == 3 and res.err.startswith("kbdb: ")


def test_usage_errors_are_exit_2_in_the_kbdb_format(kbdb: Kbdb) -> None:
    for args in (("--bogus",), ("frobnicate",), ("search",), ("search", "x", "--offset", "-1")):
        res = kbdb(*args)
        assert res.code == 2, args
        assert res.err.startswith("kbdb: "), args
        assert "--help')" in res.err, args
        assert "Traceback" not in res.err and "Usage:" not in res.err, args


def test_invalid_config_is_exit_2_naming_file_and_key(learned: Path, kbdb: Kbdb) -> None:
    config = learned / ".kbdb" / "worker.toml"
    config.write_text("[search]\nk1 = -1\n", encoding="utf-8")
    res = kbdb("search", "pool")
    assert res.code == 2
    assert "worker.toml: search.k1 must be a number > 0 (got -1)" in res.err
    assert res.err.startswith("kbdb: ") and "Traceback" not in res.err


def test_version(kbdb: Kbdb) -> None:
    import kbdb as package

    res = kbdb("--version")
    assert res.code == 0
    assert res.out.strip() == f"kbdb {package.__version__}"


def test_no_arguments_prints_the_help(kbdb: Kbdb) -> None:
    res = kbdb()
    assert res.code == 0 and "Commands:" in res.out
