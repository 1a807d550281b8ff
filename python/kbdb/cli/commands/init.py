"""``kbdb init [PATH]`` and its alias ``kbdb db init --db PATH`` (SPEC §1)."""

from __future__ import annotations

from pathlib import Path

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import emit_json

KBDB_DIR = ".kbdb"


def _root(path: str) -> Path:
    p = Path(path).expanduser().resolve()
    return p.parent if p.name == KBDB_DIR else p


def _init(target: str, language: str | None = None) -> int:
    """Create (or keep) ``target/.kbdb`` and report it."""
    from kbdb.kb import KnowledgeBase

    root = Path(target).expanduser()
    kbdir = root if root.name == KBDB_DIR else root / KBDB_DIR
    created = not (kbdir / "kb.sqlite").exists()
    KnowledgeBase.init(root, language=language).close()
    path = str(kbdir.resolve())
    st = state()
    if st.json:
        emit_json({"path": path, "created": created})
    elif not st.quiet:
        verb = "created" if created else "already exists, left as is:"
        click.echo(f"knowledge base {verb} {path}")
    return 0


_LANGUAGE_HELP = (
    "the language of the text: stemming and stop words (an English name or ISO 639-1 code,"
    " such as german or de; default english)"
)


@click.command(short_help="Create a knowledge base in PATH/.kbdb.")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--language", metavar="L", help=_LANGUAGE_HELP)
@global_options
def init(path: str | None, language: str | None) -> int:
    """Create a knowledge base: PATH/.kbdb (default: the current folder).

    Writes worker.toml with every setting and its default, and a .gitignore that keeps the
    rebuildable indexes/ out of git. Running it again leaves an existing knowledge base as
    it is. --language sets index.language (docs/languages.md lists the languages).
    """
    db = state().db
    if path is not None and db is not None and _root(path) != _root(db):
        raise click.UsageError("give the folder either as PATH or with --db, not both")
    return _init(path or db or ".", language)


@click.group(short_help="Alias: 'db init --db PATH' is 'init PATH'.")
def db() -> None:
    """Knowledge base housekeeping (alias: 'kbdb db init --db PATH' = 'kbdb init PATH')."""


@db.command("init", short_help="Create a knowledge base at --db PATH.")
@click.option("--language", metavar="L", help=_LANGUAGE_HELP)
@global_options
def db_init(language: str | None) -> int:
    """Create a knowledge base at --db PATH (default: the current folder)."""
    return _init(state().db or ".", language)
