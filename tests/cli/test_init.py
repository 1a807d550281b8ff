"""kbdb init / kbdb db init (SPEC §1)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb

from kbdb.config import default_config_text


def test_init_creates_the_kbdb_folder(tmp_path: Path, kbdb: Kbdb) -> None:
    res = kbdb("init")
    assert res.code == 0, res.err
    kbdir = tmp_path / ".kbdb"
    assert (kbdir / "kb.sqlite").is_file()
    assert (kbdir / "worker.toml").read_text(encoding="utf-8") == default_config_text()
    assert "indexes/" in (kbdir / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert str(kbdir.resolve()) in res.out
    assert res.err == ""


def test_init_path_and_db_init_alias(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init", "one").code == 0
    assert (tmp_path / "one" / ".kbdb" / "kb.sqlite").is_file()
    assert kbdb("db", "init", "--db", "two").code == 0
    assert (tmp_path / "two" / ".kbdb" / "kb.sqlite").is_file()
    assert kbdb("--db", "three", "init").code == 0
    assert (tmp_path / "three" / ".kbdb" / "kb.sqlite").is_file()


def test_init_is_idempotent_and_keeps_the_config(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    assert kbdb("config", "set", "search.k1", "1.5").code == 0
    again = kbdb("--json", "init")
    assert again.code == 0
    assert again.json() == {"path": str((tmp_path / ".kbdb").resolve()), "created": False}
    assert "k1 = 1.5" in (tmp_path / ".kbdb" / "worker.toml").read_text(encoding="utf-8")


def test_init_json_and_quiet(tmp_path: Path, kbdb: Kbdb) -> None:
    res = kbdb("init", "--json")
    assert res.json() == {"path": str((tmp_path / ".kbdb").resolve()), "created": True}
    quiet = kbdb("init", "x", "--quiet")
    assert (quiet.code, quiet.out) == (0, "")


def test_init_rejects_two_different_folders(kbdb: Kbdb) -> None:
    res = kbdb("--db", "a", "init", "b")
    assert res.code == 2
    assert res.err.startswith("kbdb: give the folder either as PATH or with --db")
