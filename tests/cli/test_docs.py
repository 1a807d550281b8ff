"""docs/cli.md names every command and every option the CLI has."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from kbdb.cli.app import cli

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def walk(command: click.Command, path: str = "kbdb") -> Iterator[tuple[str, click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):  # the top group loads its commands lazily
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{path} {name}"
            yield from walk(sub, f"{path} {name}")


def test_every_command_and_option_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for path, command in walk(cli):
        if path != "kbdb":
            assert f"{path.removeprefix('kbdb ')}" in text, path
        for param in command.params:
            if isinstance(param, click.Option):
                for name in param.opts:
                    assert f"`{name}" in text or f"{name} " in text, (path, name)
