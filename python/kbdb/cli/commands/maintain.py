"""``kbdb rebuild``: regenerate the indexes from the database (SPEC §8.3)."""

from __future__ import annotations

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, emit_json


@click.command(short_help="Regenerate the indexes from kb.sqlite.")
@global_options
def rebuild() -> int:
    """Regenerate every index from the database (kb.sqlite, the source of truth).

    Repairs missing or corrupt index files (INDEX_CORRUPT). The previous index keeps serving
    other processes until the new one is published by an atomic rename.
    """
    st = state()
    with st.open() as kb:
        res = kb.rebuild()
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        console().print(f"rebuilt the index: {res.sections} sections in {res.elapsed_ms:.0f} ms")
    return 0
