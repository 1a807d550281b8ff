"""``kbdb recall`` and ``kbdb stats``: reading sections and counts (SPEC §5)."""

from __future__ import annotations

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import emit_json, render_recall, render_stats


@click.command(short_help="Full sections by kbid or --docid.")
@click.argument("kbids", nargs=-1, metavar="KBID...")
@click.option("--docid", metavar="ID", help="All sections of this document, in order.")
@click.option(
    "--lines",
    is_flag=True,
    help="Number each line of content with its line in the source file.",
)
@global_options
def recall(kbids: tuple[str, ...], docid: str | None, lines: bool) -> int:
    """Print full sections by kbid, or a whole document with --docid.

    Each section says where it is in its file (path:start-end); --lines numbers its lines
    as the file does. Retired sections are still readable by kbid and say when and by
    what they were superseded. An unknown kbid or docid is an error (exit 1).
    """
    if not kbids and docid is None:
        raise click.UsageError("give one or more KBIDs, or --docid ID")
    st = state()
    with st.open() as kb:
        res = kb.recall(*kbids, docid=docid)
    if st.json:
        emit_json(res.to_dict())
    else:
        render_recall(res, lines=lines)
    return 0


@click.command(short_help="Counts, sizes and index state.")
@global_options
def stats() -> int:
    """Counts, sizes on disk, the analyzer, the embedding provider and the index state."""
    st = state()
    with st.open() as kb:
        res = kb.stats()
    if st.json:
        emit_json(res.to_dict())
    else:
        render_stats(res)
    return 0
