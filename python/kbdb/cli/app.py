"""The ``kbdb`` group, its global options, and the one place errors become exit codes.

Errors print to stderr as ``kbdb: <message> (<hint>)``; a traceback only with ``--debug``.
Under ``--json`` the error is also printed to stdout as ``{"error", "code"}``, the shape the
MCP server uses. Exit codes: 0 success, 1 completed with problems (or an unexpected
failure), 2 usage or configuration error, 3 knowledge base not found or locked.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from kbdb.cli.options import State, global_options, provider_configured, version
from kbdb.cli.render import print_error
from kbdb.errors import KbdbError

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_NOT_FOUND = 0, 1, 2, 3
EXIT_INTERRUPTED = 130

QUICK = frozenset({"search", "recall", "stats"})
"""Short read-only commands. Run as the ``kbdb`` process, they run without the cyclic
garbage collector (it collected nothing of note, for a tenth of a cold search's start-up
spent in collections) and end without the interpreter's teardown (``_quick_exit``)."""


# Every command, in help order: name -> (module in kbdb.cli.commands, attribute, short help).
# A command's module is imported only when that command runs or shows its own help, so a
# cold `kbdb search` loads one command module, not eleven (and none of their imports);
# `kbdb --help` prints the short help from here. tests/cli/test_help.py checks that this
# table matches the commands themselves.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("init", "init", "Create a knowledge base in PATH/.kbdb."),
    "learn": ("learn", "learn", "Learn files, folders or stdin (-)."),
    "watch": ("watch", "watch", "Learn folders, then keep them fresh as files change."),
    "search": ("search", "search", "Ranked search."),
    "recall": ("read", "recall", "Full sections by kbid or --docid."),
    # lifecycle: revise, history, forget, docs, outline, tags, related
    "revise": ("lifecycle", "revise", "Correct a section: a new version replaces it."),
    "history": ("lifecycle", "history", "The versions of a section, oldest first."),
    "forget": ("lifecycle", "forget", "Retire sections by kbid or --docid."),
    "docs": ("lifecycle", "docs", "List documents."),
    "outline": ("lifecycle", "outline", "A document's heading tree."),
    "tags": ("lifecycle", "tags", "Every tag, with its count."),
    "related": ("lifecycle", "related", "Sections close to a section."),
    "links": ("links", "links", "The links a document makes."),
    "backlinks": ("links", "backlinks", "The notes that link to a document."),
    "stats": ("read", "stats", "Counts, sizes and index state."),
    # maintenance: check, gc (rebuild follows), then export, import
    "check": ("maintain", "check", "Verify the database and the index files."),
    "gc": ("maintain", "gc", "Remove orphans and dead entries; compact and vacuum."),
    "rebuild": ("maintain", "rebuild", "Regenerate the indexes from kb.sqlite."),
    "export": ("maintain", "export", "Write a Markdown snapshot folder (no indexes)."),
    "import": ("maintain", "import_", "Restore or merge a snapshot written by export."),
    # contradictions and skill
    "contradictions": (
        "knowledge",
        "contradictions",
        "Sections of different documents that cover the same ground.",
    ),
    "skill": ("knowledge", "skill", "Named, reusable procedures: learn, list, get."),
    "config": ("config", "config", "Show or set worker.toml values."),
    "models": ("models", "models", "The embedding models kbdb knows, and which are on disk."),
    "mcp": ("mcp", "mcp", "Serve the knowledge base to agents over MCP (stdio or HTTP)."),
    "shard": ("shard", "shard", "Sharded collections: create, check, serve."),
    "eval": ("eval", "eval_", "Measure search quality on a BEIR dataset."),
    "db": ("init", "db", "Alias: 'db init --db PATH' is 'init PATH'."),
}
# Hidden commands (not listed in the help): name -> (module in kbdb.cli, attribute).
HIDDEN: dict[str, tuple[str, str]] = {
    "embed-daemon": ("embed_daemon", "embed_daemon"),
}


class KbdbGroup(click.Group):
    """Loads each command from ``COMMANDS`` on first use, lists them in that order, and ends
    the help with a short synopsis of the everyday commands (``--mode`` only when an
    embedding provider is configured)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute, _ = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"kbdb.cli.commands.{module}"), attribute)
            self.add_command(command, cmd_name)
        elif cmd_name not in self.commands and cmd_name in HIDDEN:
            module, attribute = HIDDEN[cmd_name]
            self.add_command(getattr(importlib.import_module(f"kbdb.cli.{module}"), attribute))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # From the table, so that `kbdb --help` imports no command module.
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        rows += [
            (name, cmd.get_short_help_str())
            for name, cmd in self.commands.items()
            if name not in COMMANDS and not cmd.hidden
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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
    st = ctx.ensure_object(State)
    st.quick_exit = ctx.invoked_subcommand in QUICK
    if st.console and not st.quick_exit:
        gc.enable()  # paused by kbdb.cli.main while loading; any other command needs it
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _usage_message(exc: click.UsageError) -> str:
    text = exc.format_message().strip()
    text = text[:1].lower() + text[1:]
    text = text.removesuffix(".")
    where = exc.ctx.command_path if exc.ctx is not None else "kbdb"
    return f"{text} (try '{where} --help')"


def _error_dict(message: str, code: str) -> dict[str, str]:
    return {"error": message, "code": code}


def run(argv: Sequence[str] | None = None, *, console: bool = False) -> int:
    """Run the CLI and return the exit code. Every exception stops here.

    ``console``: this is the process's own ``kbdb`` command (not a call from Python), so
    after a command of ``QUICK`` the process may end here."""
    args = list(sys.argv[1:] if argv is None else argv)
    st = State(console=console)
    code = _invoke(args, st)
    if console and st.quick_exit:
        _quick_exit(code)
    return code


def _quick_exit(code: int) -> None:
    """End the process now, without the interpreter's teardown of every module (about a
    tenth of a cold ``kbdb search``: benches/bench_cold_start.py), when that teardown has
    nothing left to do: no ``atexit`` callbacks (logging, coverage, ``weakref.finalize``),
    no other thread and no thread-exit hooks, and stdout and stderr flushed. Otherwise, or
    when a flush fails, return and let the normal exit do its work and report as before."""
    import atexit

    if atexit._ncallbacks():
        return
    threading = sys.modules.get("threading")
    if threading is not None and (
        threading.active_count() > 1 or getattr(threading, "_threading_atexits", None)
    ):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed before we started
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _invoke(args: list[str], st: State) -> int:
    try:
        rv: Any = cli.main(args, prog_name="kbdb", obj=st, standalone_mode=False)
    except KbdbError as exc:
        if st.debug:
            import traceback

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
            import traceback

            traceback.print_exc()
        detail = str(exc)
        if isinstance(exc, OSError) and exc.strerror:
            detail = exc.strerror + (f": {exc.filename}" if exc.filename else "")
        message = f"{type(exc).__name__}: {detail}"
        hint = "" if st.debug else " (run with --debug for the traceback)"
        print_error(message + hint, _error_dict(message, "INTERNAL_ERROR") if st.json else None)
        return EXIT_PROBLEMS
    return rv if isinstance(rv, int) else EXIT_OK
