"""Short and full help; --mode only in the short help once a provider is configured.

"Short help" (docs/cli.md) is what ``kbdb``, ``kbdb -h``/``--help`` and ``kbdb search -h``
print; ``kbdb search --help`` is the full help and always lists ``--mode``.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb

SHORT = (("--help",), ("-h",), ("search", "-h"))


def test_mode_is_left_out_of_the_short_help_without_a_provider(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    for args in SHORT:
        res = kbdb(*args)
        assert res.code == 0, args
        assert "--mode" not in res.out and "--algo" not in res.out, args
        assert "search" in res.out
    assert "--limit" in kbdb("search", "-h").out


def test_full_help_always_shows_mode(tmp_path: Path, kbdb: Kbdb) -> None:
    for cwd in (tmp_path, None):  # with and without a knowledge base in reach
        res = kbdb("search", "--help", cwd=cwd)
        assert res.code == 0
        assert "--mode" in res.out and "--algo" in res.out and "hybrid" in res.out
        if cwd is tmp_path:
            assert kbdb("init").code == 0


def test_mode_appears_in_the_short_help_with_a_provider(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    assert kbdb("config", "set", "embedding.provider", "onnx").code == 0
    for args in SHORT:
        assert "--mode" in kbdb(*args).out, args
    outside = tmp_path / "sub"
    outside.mkdir()
    assert "--mode" in kbdb("search", "-h", cwd=outside).out  # found walking up
    assert "--mode" in kbdb("--db", str(tmp_path), "search", "-h", cwd=tmp_path.parent).out


def test_help_works_with_a_broken_config(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    (tmp_path / ".kbdb" / "worker.toml").write_text("[search\n", encoding="utf-8")
    for args in SHORT:
        res = kbdb(*args)
        assert res.code == 0 and "--mode" not in res.out, args


def test_every_command_has_help(kbdb: Kbdb) -> None:
    for command in ("init", "learn", "search", "recall", "stats", "config", "db"):
        res = kbdb(command, "--help")
        assert res.code == 0 and "Usage: kbdb " in res.out, command
    assert "search.k1" in kbdb("config", "set", "--help").out
