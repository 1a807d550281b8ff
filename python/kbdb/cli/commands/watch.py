"""``kbdb watch FOLDERS...``: learn folders, then keep them fresh as their files change
(docs/watch.md)."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING

import click

from kbdb.cli.options import global_options, state, tags_option
from kbdb.errors import InvalidArgumentError

if TYPE_CHECKING:
    from kbdb.types import WatchBatch


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set ``stop`` instead of raising, so the watcher ends between
    batches, never inside one."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _check_output_outside(folders: tuple[str, ...]) -> None:
    """Refuse an output redirected into a watched folder (``kbdb watch . > out.txt``):
    each batch's line would change the file, which the next batch learns again, for ever.
    Linux names an open file in /proc; elsewhere this check is skipped."""
    roots = [os.path.realpath(f) for f in folders]
    for fd, stream in ((1, "stdout"), (2, "stderr")):
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        for root, folder in zip(roots, folders, strict=True):
            if target.startswith(root.rstrip(os.sep) + os.sep):
                raise InvalidArgumentError(
                    f"{stream} is {target}, inside the watched folder {folder}: every "
                    "batch would change it and learn it again",
                    hint="redirect the output to a file outside the watched folders",
                )


def batch_line(b: WatchBatch) -> str:
    """``+3 ~1 −2 sections in 12 ms``: added, superseded (a new version of a section) and
    retired sections of one committed batch."""
    return (
        f"+{b.sections_added} ~{b.sections_superseded} \u2212{b.sections_retired} sections"
        f" in {b.elapsed_ms:.0f} ms"
    )


@click.command(short_help="Learn folders, then keep them fresh as files change.")
@click.argument("folders", nargs=-1, required=True, metavar="FOLDERS...")
@tags_option("Tag every learned section (comma-separated, repeatable).")
@global_options
def watch(folders: tuple[str, ...], tags: tuple[str, ...]) -> int:
    """Learn FOLDERS as 'kbdb learn' does, then follow their changes until Ctrl-C.

    A changed or new file is learned again (its earlier version is superseded), a deleted
    one is forgotten; .gitignore and .kbdbignore apply as in learn. Changes are gathered
    into batches, each committed in one transaction, with the writer lock held only
    while it commits. One line per batch: '+3 ~1 −2 sections in 12 ms' (added,
    superseded, retired); with --json, one JSON object per line. Ctrl-C or SIGTERM stops
    between batches.
    """
    st = state()
    stop = threading.Event()
    _check_output_outside(folders)

    def on_batch(b: WatchBatch) -> None:
        if st.json:
            click.echo(json.dumps(b.to_dict(), ensure_ascii=False))
        elif not st.quiet:
            click.echo(batch_line(b))
        for skipped in b.files_skipped:
            click.echo(f"kbdb: skipped {skipped.path}: {skipped.reason} ({skipped.code})", err=True)

    with st.open(model=True) as kb, _stop_on_signals(stop):
        if st.interactive:
            click.echo(f"kbdb: watching {', '.join(folders)} (Ctrl-C stops)", err=True)
        kb.watch(*folders, tags=tags, stop=stop, on_batch=on_batch)
    return 0
