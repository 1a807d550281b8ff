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


def test_the_lazy_command_table_matches_the_commands() -> None:
    """``kbdb --help`` prints the short help from ``COMMANDS`` without importing the command
    modules: each entry must name a real command with exactly that short help, the listing
    must equal click's own from the loaded commands, and every top-level command defined
    in ``kbdb/cli/commands`` must have an entry."""
    import importlib
    import inspect
    import pkgutil

    import click

    import kbdb.cli.commands as package
    from kbdb.cli.app import COMMANDS, cli

    ctx = click.Context(cli, info_name="kbdb")
    lazy = ctx.make_formatter()
    cli.format_commands(ctx, lazy)
    for name, (module, attribute, short) in COMMANDS.items():
        command = getattr(importlib.import_module(f"kbdb.cli.commands.{module}"), attribute)
        assert isinstance(command, click.Command) and not command.hidden, name
        # a set short_help is printed as is, whatever the terminal width
        assert command.short_help and inspect.cleandoc(command.short_help) == short, name
        assert cli.get_command(ctx, name) is command, name
    eager = ctx.make_formatter()
    click.Group.format_commands(cli, ctx, eager)  # click's listing, from the loaded commands
    assert lazy.getvalue() == eager.getvalue()

    listed = {(module, attribute) for module, attribute, _ in COMMANDS.values()}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"kbdb.cli.commands.{info.name}")
        defined = {
            attr: value
            for attr, value in vars(module).items()
            if isinstance(value, click.Command)
            and getattr(value.callback, "__module__", None) == module.__name__
        }
        nested = {
            id(sub)
            for value in defined.values()
            if isinstance(value, click.Group)
            for sub in value.commands.values()
        }
        for attr, value in defined.items():
            if id(value) not in nested:
                assert (info.name, attr) in listed, f"kbdb.cli.commands.{info.name}.{attr}"
