"""The ``kbdb`` group, its global options, and the one place errors become exit codes.

Errors print to stderr as ``kbdb: <message> (<hint>)``; a traceback only with ``--debug``.
Under ``--json`` the error is also printed to stdout as ``{"error", "code"}``, the shape the
MCP server uses. Exit codes: 0 success, 1 completed with problems (or an unexpected
failure), 2 usage or configuration error, 3 knowledge base not found or locked.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import click

from kbdb.cli.commands import config as config_cmd
from kbdb.cli.commands import eval as eval_cmd
from kbdb.cli.commands import init as init_cmd
from kbdb.cli.commands import knowledge as knowledge_cmd
from kbdb.cli.commands import learn as learn_cmd
from kbdb.cli.commands import lifecycle as lifecycle_cmd
from kbdb.cli.commands import maintain as maintain_cmd
from kbdb.cli.commands import mcp as mcp_cmd
from kbdb.cli.commands import read as read_cmd
from kbdb.cli.commands import search as search_cmd
from kbdb.cli.options import State, global_options, provider_configured, version
from kbdb.cli.render import print_error
from kbdb.errors import KbdbError

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_NOT_FOUND = 0, 1, 2, 3
EXIT_INTERRUPTED = 130


class KbdbGroup(click.Group):
    """Lists commands in the order they were added, and ends the help with a short synopsis
    of the everyday commands (``--mode`` only when an embedding provider is configured)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        mode = " [--mode lexical|vector|hybrid]" if provider_configured(ctx) else ""
        lines = [
            "kbdb init [PATH]",
            "kbdb learn PATH... | -  [--tags a,b]",
            f"kbdb search QUERY [--limit N] [--tags a,b]{mode}",
            "kbdb recall KBID... | --docid ID",
        ]
        with formatter.section("Everyday use"):
            for line in lines:
                formatter.write_text(line)
        formatter.write_paragraph()
        formatter.write_text(
            "Exit codes: 0 ok, 1 completed with problems, 2 usage or configuration error, "
            "3 knowledge base not found or locked. 'kbdb COMMAND --help' shows every option."
        )


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"kbdb {version()}")
        ctx.exit()


@click.group(
    cls=KbdbGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@global_options
@click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """kbdb: a local knowledge base for AI agents and their people.

    Learn Markdown, text, HTML and JSON into a .kbdb folder, then recall the relevant
    sections by ranked search.
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


cli.add_command(init_cmd.init)
cli.add_command(learn_cmd.learn)
cli.add_command(search_cmd.search)
cli.add_command(read_cmd.recall)
# lifecycle: revise, history, forget, docs, outline, tags, related
cli.add_command(lifecycle_cmd.revise)
cli.add_command(lifecycle_cmd.history)
cli.add_command(lifecycle_cmd.forget)
cli.add_command(lifecycle_cmd.docs)
cli.add_command(lifecycle_cmd.outline)
cli.add_command(lifecycle_cmd.tags)
cli.add_command(lifecycle_cmd.related)
cli.add_command(read_cmd.stats)
# maintenance: check, gc (rebuild follows), then export, import
cli.add_command(maintain_cmd.check)
cli.add_command(maintain_cmd.gc)
cli.add_command(maintain_cmd.rebuild)
cli.add_command(maintain_cmd.export)
cli.add_command(maintain_cmd.import_)
# contradictions and skill
cli.add_command(knowledge_cmd.contradictions)
cli.add_command(knowledge_cmd.skill)
cli.add_command(config_cmd.config)
# mcp
cli.add_command(mcp_cmd.mcp)
cli.add_command(eval_cmd.eval_, name="eval")
cli.add_command(init_cmd.db)


def _usage_message(exc: click.UsageError) -> str:
    text = exc.format_message().strip()
    text = text[:1].lower() + text[1:]
    text = text.removesuffix(".")
    where = exc.ctx.command_path if exc.ctx is not None else "kbdb"
    return f"{text} (try '{where} --help')"


def _error_dict(message: str, code: str) -> dict[str, str]:
    return {"error": message, "code": code}


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return the exit code. Every exception stops here."""
    args = list(sys.argv[1:] if argv is None else argv)
    st = State()
    try:
        rv: Any = cli.main(args, prog_name="kbdb", obj=st, standalone_mode=False)
    except KbdbError as exc:
        if st.debug:
            traceback.print_exc()
        print_error(str(exc), exc.to_dict() if st.json else None)
        return exc.exit_code
    except click.UsageError as exc:
        message = _usage_message(exc)
        print_error(message, _error_dict(message, "INVALID_ARGUMENT") if st.json else None)
        return EXIT_USAGE
    except click.ClickException as exc:
        message = exc.format_message()
        print_error(message, _error_dict(message, "INVALID_ARGUMENT") if st.json else None)
        return exc.exit_code
    except (KeyboardInterrupt, click.Abort):
        print_error("interrupted", None)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`kbdb search x | head`): stop quietly, as ripgrep does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # the one broad catch (STYLE.md: only at the top)
        if st.debug:
            traceback.print_exc()
        detail = str(exc)
        if isinstance(exc, OSError) and exc.strerror:
            detail = exc.strerror + (f": {exc.filename}" if exc.filename else "")
        message = f"{type(exc).__name__}: {detail}"
        hint = "" if st.debug else " (run with --debug for the traceback)"
        print_error(message + hint, _error_dict(message, "INTERNAL_ERROR") if st.json else None)
        return EXIT_PROBLEMS
    return rv if isinstance(rv, int) else EXIT_OK
