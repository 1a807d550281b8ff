"""``kbdb shard``: split a knowledge base into a sharded collection, check one, and serve
one on Ray (docs/scale.md)."""

from __future__ import annotations

from pathlib import Path

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, count_progress, emit_json


@click.group(short_help="Sharded collections: create, check, serve.")
def shard() -> None:
    """A sharded collection is several ordinary knowledge bases searched as one, with the
    collection's statistics, so it ranks exactly as one knowledge base would."""


@shard.command(short_help="Split a knowledge base into N shards.")
@click.option("--shards", "count", type=int, required=True, help="The number of shards (1..1024).")
@click.argument("target", type=click.Path(path_type=Path))
@global_options
def create(count: int, target: Path) -> int:
    """Split the knowledge base that --db (or the current folder) names into COUNT shards
    in the new folder TARGET, routing each document by a hash of its docid. The source is
    only read; each shard's indexes are rebuilt from its share of the database."""
    from kbdb.context import resolve
    from kbdb.shard import layout

    st = state()
    source = resolve(st.db)
    with count_progress(st.interactive, "sharding", "shards") as progress:
        rep = layout.create(source, target, count, progress)
    if st.json:
        emit_json({"shards": rep.shards, "documents": rep.documents, "sections": rep.sections})
    elif not st.quiet:
        out = console()
        for i, (d, s) in enumerate(zip(rep.documents, rep.sections, strict=True)):
            out.print(f"shard {i}: {d} document(s), {s} section(s)", markup=False)
        out.print(f"created {rep.shards} shard(s) in {target}", markup=False)
    return 0


@shard.command(short_help="Check every shard and the routing.")
@click.argument("collection", type=click.Path(path_type=Path))
@global_options
def check(collection: Path) -> int:
    """Run 'kbdb check' on every shard of COLLECTION and find documents that sit in a shard
    their docid does not route to (SHARD_MISROUTED). Exits 1 when anything is wrong."""
    from kbdb.shard import layout

    st = state()
    lay = layout.load(collection)
    with count_progress(st.interactive, "checking", "shards") as progress:
        problems = layout.check(lay, progress)
    if st.json:
        emit_json(
            {
                "shards": lay.count,
                "ok": not problems,
                "problems": [p.__dict__ for p in problems],
            }
        )
    elif not st.quiet:
        out = console()
        for p in problems:
            where = " ".join(x for x in (p.kbid, p.docid) if x)
            out.print(f"shard {p.shard}: {p.code} {where}: {p.detail}", markup=False)
        verdict = "ok" if not problems else f"{len(problems)} problem(s)"
        out.print(f"shard check: {verdict} over {lay.count} shard(s)", markup=False)
        if any(p.code == "SHARD_MISROUTED" for p in problems):
            out.print(
                "a misrouted document: forget it in that shard "
                "('kbdb --db SHARD forget --docid DOCID'), then learn it through the collection",
                style="dim",
            )
    return 0 if not problems else 1


@shard.command(short_help="Serve a collection's shards as Ray actors.")
@click.argument("collection", type=click.Path(path_type=Path))
@click.option(
    "--ray",
    "address",
    default="auto",
    show_default=True,
    metavar="ADDRESS",
    help="The Ray cluster: 'auto' (the one 'ray start' runs here), HOST:PORT of its head, "
    "or 'local' (start one in this process).",
)
@global_options
def serve(collection: Path, address: str) -> int:
    """Start one Ray actor per shard of COLLECTION, spread over the cluster's nodes, and
    keep them until Ctrl-C or SIGTERM. Coordinators (ShardedKnowledgeBase.open(path,
    ray=ADDRESS), 'kbdb mcp --shards') find them by name. Every node must see COLLECTION
    at the same path."""
    from kbdb.shard import actors, layout

    st = state()
    lay = layout.load(collection)

    def ready(described: list[dict[str, object]]) -> None:
        if st.json:
            emit_json(
                {"shards": [{k: d[k] for k in ("shard", "path", "sections")} for d in described]}
            )
        elif not st.quiet:
            out = console()
            for d in described:
                out.print(
                    f"shard {d['shard']}: {d['sections']} section(s) at {d['path']}", markup=False
                )
            out.print(f"serving {lay.count} shard(s); Ctrl-C stops", markup=False)

    actors.serve(lay, address, ready)
    return 0
