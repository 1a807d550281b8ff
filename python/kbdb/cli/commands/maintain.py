"""``kbdb rebuild``: regenerate the indexes from the database (SPEC §8.3)."""

from __future__ import annotations

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, count_progress, emit_json


@click.command(short_help="Regenerate the indexes from kb.sqlite.")
@click.option("--lexical-only", is_flag=True, help="Rebuild only the lexical index.")
@click.option("--vectors-only", is_flag=True, help="Rebuild only the vector index.")
@click.option(
    "--reembed", is_flag=True, help="Embed every section again instead of using the cache."
)
@global_options
def rebuild(lexical_only: bool, vectors_only: bool, reembed: bool) -> int:
    """Regenerate every index from the database (kb.sqlite, the source of truth).

    Repairs missing or corrupt index files (INDEX_CORRUPT) and clears a stale vector index.
    Sections are re-embedded in batches of 64, reusing cached embeddings of unchanged text
    unless --reembed. The previous indexes keep serving other processes until the new ones
    are published by an atomic rename.
    """
    if lexical_only and vectors_only:
        raise click.UsageError("--lexical-only and --vectors-only exclude each other")
    st = state()
    with st.open() as kb, count_progress(st.interactive, "embedding", "sections") as progress:
        res = kb.rebuild(
            lexical=not vectors_only,
            vectors=not lexical_only,
            reembed=reembed,
            progress=progress,
        )
    if st.json:
        emit_json(res.to_dict())
    elif not st.quiet:
        console().print(
            f"rebuilt: {res.sections} sections indexed, {res.vectors} embedded, "
            f"in {res.elapsed_ms / 1000:.1f} s"
        )
    return 0
