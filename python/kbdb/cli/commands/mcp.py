"""``kbdb mcp``: serve the knowledge base to agents over MCP (SPEC §10).

The MCP SDK is imported inside the command, so that no other command pays for it at start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kbdb.cli.options import global_options, state, version


@click.command(short_help="Serve the knowledge base to agents over MCP (stdio or HTTP).")
@click.option(
    "--http",
    "address",
    metavar="HOST:PORT",
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio. HOST defaults to "
    "127.0.0.1; any other address needs a token in $KBDB_MCP_TOKEN, which clients send as "
    "'Authorization: Bearer <token>'.",
)
@click.option(
    "--watch",
    "watch",
    multiple=True,
    metavar="FOLDER",
    help="Keep FOLDER fresh while serving, as 'kbdb watch FOLDER' does (repeatable). "
    "The stats tool (--tools core,stats or all) reports what is watched and when it last "
    "synced.",
)
@click.option(
    "--tools",
    "tools",
    metavar="LIST",
    help="The tools to offer: core (search, recall, learn, revise, forget; the default), "
    "all (every tool), or a comma-separated list of those and tool names, e.g. "
    "core,related. With --shards the default is all that a collection serves.",
)
@click.option(
    "--shards",
    "collection",
    type=click.Path(path_type=Path),
    metavar="COLLECTION",
    help="Serve a sharded collection ('kbdb shard create') instead of --db: search, "
    "recall, learn, forget and stats over every shard, ranked as one knowledge base.",
)
@click.option(
    "--ray",
    "ray",
    metavar="ADDRESS",
    help="With --shards: the shards are Ray actors on this cluster ('local', 'auto', "
    "HOST:PORT); those 'kbdb shard serve' runs, or new ones.",
)
@global_options
def mcp(
    address: str | None,
    watch: tuple[str, ...],
    tools: str | None,
    collection: Path | None,
    ray: str | None,
) -> int:
    """Serve MCP: the core tools (search, recall, learn, revise, forget) or all 21 with
    '--tools all', resources and a memory prompt.

    Over stdio (the default) an MCP client such as Claude Desktop or Claude Code starts
    'kbdb mcp --db PATH' itself; stdout then carries protocol frames only and logs go to
    stderr. See docs/mcp.md for client configuration.
    """
    from kbdb.context import resolve
    from kbdb.mcp.tools import DEFAULT_SHARDED_TOOLS, DEFAULT_TOOLS, select

    st = state()
    if ray is not None and collection is None:
        raise click.UsageError("--ray applies only with --shards")
    if collection is not None and watch:
        raise click.UsageError("--watch does not apply to a sharded collection")
    shards = collection is not None
    default = DEFAULT_SHARDED_TOOLS if shards else DEFAULT_TOOLS
    names = select(default if tools is None else tools, sharded=shards)  # exit 2 when bad
    if collection is not None:
        from kbdb.shard.layout import load

        path = load(collection).root  # a missing or broken collection fails now
    else:
        path = resolve(st.db)  # a missing knowledge base fails now (exit 3), not at first call
    folders: tuple[Path, ...] = ()
    if watch:
        from kbdb.watch import check_folders

        folders = tuple(check_folders(watch))  # a bad folder fails now too (exit 2)
    options: dict[str, Any] = {
        "version": version(),
        "debug": st.debug,
        "watch": folders,
        "shards": shards,
        "ray": ray,
        "tools": names,
    }
    if address is not None:
        from kbdb.mcp.http import serve_http

        serve_http(path, address, **options)
    else:
        from kbdb.mcp.server import serve_stdio

        serve_stdio(path, **options)
    return 0
