"""Options shared by every command, the run state they fill, and the short help.

Global options (``--db``, ``--json``, ``--quiet``, ``--debug``) are accepted both before the
command (``kbdb --json search x``) and after it (``kbdb search x --json``); either spelling
fills the one :class:`State`.

*Short help* is what ``kbdb``, ``kbdb -h``/``--help`` and ``kbdb search -h`` print. It leaves
out options marked *advanced* (``--mode``/``--algo``) unless an embedding provider is
configured. ``kbdb search --help`` is the full help and always shows them (SPEC §11).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase

F = TypeVar("F", bound=Callable[..., Any])


class State:
    """What the global options asked for; ``ctx.obj`` of every command. A plain class:
    creating a dataclass costs a cold ``kbdb search`` more than parsing its arguments.

    ``console``: this is the ``kbdb`` process itself, not a call from Python.
    ``quick_exit``: the command is a short read-only one (``cli.app.QUICK``), so the
    process may end without the interpreter's teardown (``cli.app.run``)."""

    __slots__ = ("console", "db", "debug", "json", "quick_exit", "quiet")

    def __init__(self, *, console: bool = False) -> None:
        self.db: str | None = None
        self.json = False
        self.quiet = False
        self.debug = False
        self.console = console
        self.quick_exit = False

    @property
    def interactive(self) -> bool:
        """Progress bars and other live output: only on a terminal, never for --json/--quiet."""
        return not (self.json or self.quiet) and sys.stderr.isatty()

    @contextmanager
    def open(self, *, model: bool | None = False, daemon: bool = False) -> Iterator[KnowledgeBase]:
        """Open the knowledge base that ``--db``, ``KBDB_DB`` or the current folder names.

        ``model``: the command will embed, so on a terminal the ONNX model is resolved now,
        under its own download bar, rather than in the middle of another progress bar. A
        failure here is left for the embedding itself to report (a learn stays lexical).
        None: the command searches in the configured default mode, which may embed.
        ``daemon``: the command embeds only a query or two, so an ONNX model is asked of
        the warm embedding daemon rather than loaded here (``embedding.daemon``)."""
        from kbdb.errors import KbdbError
        from kbdb.kb import KnowledgeBase

        kb = KnowledgeBase.open(self.db)
        try:
            if model is None:
                model = kb.config.effective_default_mode != "lexical"
            with ExitStack() as scope:
                if model and daemon:
                    from kbdb.embedding.provider import prefer_daemon

                    scope.enter_context(prefer_daemon())
                if model and self.interactive and kb.config.embedding.provider == "onnx":
                    from kbdb.cli.render import download_progress

                    with download_progress(True) as progress, suppress(KbdbError):
                        kb.load_embedding_model(progress=progress)
                yield kb
        finally:
            kb.close()


def state(ctx: click.Context | None = None) -> State:
    """The run's :class:`State` (created on first use)."""
    return (ctx or click.get_current_context()).ensure_object(State)


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is None or value is False or param.name is None:
        return value
    setattr(state(ctx), param.name, value)
    if param.name == "debug":
        import logging

        logging.basicConfig(stream=sys.stderr, format="kbdb: %(levelname)s %(name)s: %(message)s")
        logging.getLogger("kbdb").setLevel(logging.DEBUG)
    return value


_GLOBAL_OPTIONS = (
    click.option(
        "--db",
        metavar="PATH",
        is_eager=True,  # before -h, so that the help can read this KB's configuration
        expose_value=False,
        callback=_store,
        help="Knowledge base: the .kbdb folder or the folder holding it "
        "(default: $KBDB_DB, else the nearest .kbdb above the current folder).",
    ),
    click.option(
        "--json",
        is_flag=True,
        expose_value=False,
        callback=_store,
        help="Print the result as JSON (the API's result object).",
    ),
    click.option(
        "--quiet",
        "-q",
        is_flag=True,
        expose_value=False,
        callback=_store,
        help="No progress bars or summaries; results and errors only.",
    ),
    click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        callback=_store,
        help="Log to stderr and show tracebacks on errors.",
    ),
)


def global_options(f: F) -> F:
    """Add ``--db``, ``--json``, ``--quiet`` and ``--debug`` to a command."""
    for option in reversed(_GLOBAL_OPTIONS):
        f = option(f)
    return f


def split_list(_ctx: click.Context, _param: click.Parameter, value: Any) -> tuple[str, ...]:
    """``--tags a,b --tags c`` → ``("a", "b", "c")``; empty items are dropped."""
    items: list[str] = []
    for chunk in value or ():
        items += [t.strip() for t in chunk.split(",") if t.strip()]
    return tuple(dict.fromkeys(items))


def provider_configured(ctx: click.Context | None = None) -> bool:
    """True when the knowledge base in reach has an embedding provider. Never raises: help
    output must work anywhere, with or without a knowledge base."""
    try:
        from kbdb.config import load_config
        from kbdb.context import CONFIG_NAME, resolve

        db = state(ctx).db if ctx is not None else None
        path = resolve(db) / CONFIG_NAME
        return load_config(path).embedding.provider != "none"
    except Exception:
        return False


class ShortHelpCommand(click.Command):
    """A command whose ``-h`` is the short help and ``--help`` the full help.

    Options whose ``name`` is in ``advanced`` appear in the short help only when an
    embedding provider is configured.
    """

    def __init__(self, *args: Any, advanced: tuple[str, ...] = (), **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {})["help_option_names"] = ["--help"]
        super().__init__(*args, **kwargs)
        self.advanced = advanced
        self.params.append(
            click.Option(
                ["-h"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=self._short_help,
                help="Show the short help and exit (--help shows every option).",
            )
        )

    def _short_help(self, ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        hide = not provider_configured(ctx)
        options = [
            p for p in self.params if isinstance(p, click.Option) and p.name in self.advanced
        ]
        saved = [o.hidden for o in options]
        try:
            for o in options:
                o.hidden = o.hidden or hide
            click.echo(ctx.get_help(), color=ctx.color)
        finally:
            for o, was in zip(options, saved, strict=True):
                o.hidden = was
        ctx.exit()


def version() -> str:
    """The installed package version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _version

    try:
        return _version("kbdb")
    except PackageNotFoundError:  # running from a source tree without installing
        from kbdb import __version__

        return __version__


def tags_option(help: str, *, metavar: str = "A,B") -> Callable[[F], F]:
    """``--tags A,B``: comma-separated and repeatable, as one tuple of tags."""
    return click.option("--tags", multiple=True, callback=split_list, metavar=metavar, help=help)


def ray_option(what: str) -> Callable[[F], F]:
    """``--ray [ADDRESS]``: run ``what`` on a Ray cluster. Alone it means ``local`` (start
    one here, or join the one ``ray start`` left running); ``auto``, ``HOST:PORT`` or
    ``ray://HOST:PORT`` name a cluster. Ray is imported only when the command runs."""
    return click.option(
        "--ray",
        "ray",
        is_flag=False,
        flag_value="local",
        default=None,
        metavar="[ADDRESS]",
        help=f"{what} on a Ray cluster (needs kbdb[ray]). ADDRESS: auto, HOST:PORT or "
        "ray://HOST:PORT; alone, a local Ray. Give it after the paths or as --ray=ADDRESS.",
    )
