"""``kbdb search QUERY``: ranked search (SPEC §4).

Cold start matters here: a lexical search imports the facade (and through it the Rust
engine) and nothing else heavy. ``rich`` is loaded only to draw the table, never for
``--json``. A vector or hybrid search embeds its query in the embedding daemon
(:mod:`kbdb.embedding.daemon`), which keeps the ONNX model loaded between commands.
"""

from __future__ import annotations

import click

from kbdb.cli.options import ShortHelpCommand, global_options, state, tags_option
from kbdb.cli.render import emit_json, render_search

MODES = ("lexical", "vector", "hybrid")
MAX_LIMIT = 100


@click.command(cls=ShortHelpCommand, advanced=("mode",), short_help="Ranked search.")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--mode",
    "--algo",
    "mode",
    type=click.Choice(MODES),
    help="lexical (BM25F), vector (cosine) or hybrid (RRF of both). vector and hybrid "
    "need an embedding provider ([embedding] in worker.toml). Default: search.default_mode "
    "(lexical unless configured).",
)
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(1, MAX_LIMIT),
    metavar="N",
    help="Results per page, 1-100 (default: search.default_limit, 10).",
)
@click.option(
    "--offset",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Skip the first N results (paging).",
)
@tags_option("Only sections that have all these tags.")
@click.option("--docid", metavar="ID", help="Only sections of this document.")
@click.option("--type", "mime", metavar="MIME", help="Only sections of this MIME type.")
@click.option(
    "--section-type",
    metavar="KIND",
    help="Only sections of this kind (fact, decision, note, skill, turn, ...).",
)
@click.option(
    "--speaker",
    metavar="NAME",
    help="Only conversation turns of this speaker (docs/conversations.md).",
)
@click.option(
    "--content", "with_content", is_flag=True, help="Include each section's full content."
)
@click.option("--explain", is_flag=True, help="Include each result's score breakdown.")
@click.option(
    "--since",
    metavar="WHEN",
    help="Only sections learned or changed at or after WHEN (a conversation turn: said "
    "at or after WHEN): 7d (also m, h, w: back from now), 2026-11-01 (midnight UTC) or an "
    "ISO-8601 timestamp.",
)
@click.option(
    "--until", metavar="WHEN", help="Only sections learned or changed before WHEN (as --since)."
)
@click.option(
    "--sort",
    type=click.Choice(("relevance", "recent")),
    default=None,
    help="relevance (default) or recent: newest first, ties by relevance.",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="WHEN",
    help="Answer from what was live at WHEN (as --since): time travel.",
)
@click.option(
    "--min-confidence",
    "min_confidence",
    type=float,
    default=0.0,
    metavar="X",
    help="Drop results whose confidence is below X (0-1); the search may then find "
    "nothing (verdict unanswered).",
)
@global_options
def search(
    query: tuple[str, ...],
    mode: str | None,
    limit: int | None,
    offset: int,
    tags: tuple[str, ...],
    docid: str | None,
    mime: str | None,
    section_type: str | None,
    speaker: str | None,
    with_content: bool,
    explain: bool,
    since: str | None,
    until: str | None,
    sort: str | None,
    as_of: str | None,
    min_confidence: float,
) -> int:
    """Search the knowledge base; the words of QUERY are joined with spaces.

    Every word must match (or one of its synonyms); when nothing does, the search relaxes
    to any word and says so. Quote phrases for adjacency: 'kbdb search "connection pool"'
    matches the two words side by side. No hits is not an error (exit 0).
    """
    text = " ".join(query)
    st = state()
    # A vector or hybrid search embeds one query: the warm daemon does it in milliseconds,
    # where loading the model here would cost most of a second (docs/embeddings.md).
    with st.open(model=None if mode is None else mode != "lexical", daemon=True) as kb:
        # search.default_mode asks for vectors that this knowledge base does not have.
        configured = kb.config.search.default_mode
        no_vectors = mode is None and configured != kb.config.effective_default_mode
        res = kb.search(
            text,
            mode=mode,
            limit=limit,
            offset=offset,
            tags=tags or None,
            docid=docid,
            type=mime,
            section_type=section_type,
            content=with_content,
            explain=explain,
            since=since,
            until=until,
            sort=sort,
            as_of=as_of,
            min_confidence=min_confidence,
            speaker=speaker,
        )
    if st.json:
        emit_json(res.to_dict())
    else:
        if no_vectors:
            click.echo(
                f"kbdb: search.default_mode is {configured} but no embedding provider is "
                "configured, lexical results only (set embedding.provider, or "
                "'kbdb config set search.default_mode lexical')",
                err=True,
            )
        render_search(res, text, show_content=with_content)
    return 0
