"""``kbdb embed-daemon status|start|stop``: the warm embedding daemons of this user.

Hidden from the command list: ``kbdb search`` starts a daemon by itself when it needs one
and the daemon exits when idle, so nobody has to run these. They are for looking at what
runs, warming the model up ahead of a burst of searches, and stopping every daemon (after
upgrading ONNX Runtime in place, say).
"""

from __future__ import annotations

from typing import Any

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import emit_json


@click.group("embed-daemon", hidden=True, short_help="The warm embedding daemons.")
def embed_daemon() -> None:
    """The per-user embedding daemons that keep the ONNX model loaded for kbdb search.

    Their sockets live in $KBDB_RUNTIME_DIR, else $XDG_RUNTIME_DIR/kbdb, else
    /tmp/kbdb-<uid> (mode 0700). Set embedding.daemon = false, or KBDB_EMBED_DAEMON=0, to
    embed in the kbdb process instead.
    """


def _line(d: dict[str, Any]) -> str:
    if not d.get("running"):
        return f"{d['socket']}  not running ({d.get('error', 'stale')})"
    return (
        f"{d['socket']}  pid {d['pid']}  {d['model_name']} ({d['model']})  "
        f"threads {d['threads']}  requests {d['requests']}  "
        f"idle {d['idle_s']:.0f}/{d['idle_timeout_s']:.0f} s"
    )


@embed_daemon.command("status")
@global_options
def status_() -> int:
    """List this user's embedding daemons."""
    from kbdb.embedding.daemon import status

    found = status()
    if state().json:
        emit_json({"daemons": found})
    elif not found:
        click.echo("no embedding daemon")
    else:
        click.echo("\n".join(_line(d) for d in found))
    return 0


@embed_daemon.command("start")
@global_options
def start() -> int:
    """Start the daemon for the knowledge base's model now (it exits when idle)."""
    from kbdb.embedding.daemon import DaemonEmbeddingProvider, DaemonUnavailable
    from kbdb.errors import EmbeddingFailedError, EmbeddingProviderNotConfiguredError
    from kbdb.kb import KnowledgeBase

    st = state()
    with KnowledgeBase.open(st.db) as kb:
        cfg = kb.config.embedding
        kbdir = kb.path
    if cfg.provider != "onnx":
        raise EmbeddingProviderNotConfiguredError(
            'the embedding daemon serves the "onnx" provider only',
            hint="kbdb config set embedding.provider onnx",
        )
    provider = DaemonEmbeddingProvider.from_config(cfg, kbdir=kbdir)
    try:
        client = provider.client()
        client.start()
        info = client.ping()
    except DaemonUnavailable as e:
        raise EmbeddingFailedError(f"the embedding daemon could not start: {e}") from None
    if st.json:
        emit_json({"socket": str(client.socket), **info})
    elif not st.quiet:
        click.echo(f"embedding daemon pid {info['pid']} on {client.socket}")
    return 0


@embed_daemon.command("stop")
@global_options
def stop() -> int:
    """Stop every embedding daemon of this user."""
    from kbdb.embedding.daemon import stop_all

    pids = stop_all()
    if state().json:
        emit_json({"stopped": pids})
    elif not state().quiet:
        click.echo(f"stopped {len(pids)} embedding daemon(s)")
    return 0
