"""The Ray side of a sharded collection: one actor per shard, found by name.

``kbdb shard serve --ray ADDRESS COLLECTION`` starts the shards' actors, detached and
named after the collection's folder, spread over the cluster's nodes, and keeps them until
it is stopped. A coordinator (``ShardedKnowledgeBase.open(path, ray=ADDRESS)``, ``kbdb mcp
--shards``) uses those actors when they run, and otherwise starts its own, which end with
it. Every node an actor may run on must see the collection's folder at the same path (a
shared file system): an actor opens its shard by path.

Ray is an optional dependency (``pip install 'kbdb[ray]'``); only this module and
``kbdb.distributed`` import it.
"""

from __future__ import annotations

import hashlib
import signal
import threading
from collections.abc import Callable
from typing import Any

from kbdb.errors import InvalidArgumentError
from kbdb.shard.fanout import RayFanout, ShardUnavailableError
from kbdb.shard.layout import Layout
from kbdb.shard.server import ShardServer

NAMESPACE = "kbdb"


def init(address: str | None) -> Any:
    """Ray, joined to the cluster at ``address`` (``kbdb.distributed.cluster``: None or
    ``local`` starts or joins one here, ``auto``, ``HOST:PORT``, ``ray://HOST:PORT``) for
    the rest of the process, unless it already is. An address nobody answers at is an error
    that names it, within seconds."""
    from kbdb.distributed.cluster import join

    return join(address, namespace=NAMESPACE)[0]


def actor_name(layout: Layout, shard: int) -> str:
    """A shard actor's name: the collection's folder (hashed) and the shard."""
    digest = hashlib.sha256(str(layout.root).encode("utf-8", "surrogatepass")).hexdigest()
    return f"kbdb-shard-{digest[:16]}-{shard:03d}"


def _actor_class(ray: Any) -> Any:
    # A shard actor needs no reserved core: its work is short calls, and a reservation
    # would keep the cluster's cores from the embedding actors of a learn.
    return ray.remote(num_cpus=0, max_restarts=3, max_task_retries=1)(ShardServer)


def start(layout: Layout, *, detached: bool) -> list[Any]:
    """One actor per shard, spread over the nodes, named (``actor_name``), waiting until
    each has opened its shard."""
    ray = init_needed()
    cls = _actor_class(ray)
    actors = []
    for i, d in enumerate(layout.shard_dirs):
        options: dict[str, Any] = {
            "name": actor_name(layout, i),
            "namespace": NAMESPACE,
            "scheduling_strategy": "SPREAD",
        }
        if detached:
            options["lifetime"] = "detached"
        actors.append(cls.options(**options).remote(str(d), i))
    fanout = RayFanout(actors, [str(d) for d in layout.shard_dirs])
    fanout.all("describe")  # raises, naming the shard, when one cannot open
    return actors


def init_needed() -> Any:
    from kbdb.distributed.cluster import import_ray

    ray = import_ray()
    if not ray.is_initialized():
        raise InvalidArgumentError("not connected to Ray", hint="call actors.init(address)")
    return ray


def connect(layout: Layout, address: str | None) -> RayFanout:
    """The collection's shard actors: those ``kbdb shard serve`` runs, else new ones owned
    by this process."""
    ray = init(address)
    found = []
    for i in range(layout.count):
        try:
            found.append(ray.get_actor(actor_name(layout, i), namespace=NAMESPACE))
        except ValueError:
            break
    if len(found) == layout.count:
        fanout = RayFanout(found, [str(d) for d in layout.shard_dirs])
        fanout.owned = False
        return fanout
    if found:
        raise ShardUnavailableError(
            f"only {len(found)} of {layout.count} shard actors of {layout.root} are running",
            hint="restart 'kbdb shard serve'",
        )
    fanout = RayFanout(start(layout, detached=False), [str(d) for d in layout.shard_dirs])
    return fanout


def serve(
    layout: Layout, address: str | None, ready: Callable[[list[dict[str, Any]]], None]
) -> None:
    """Start the shard actors (detached) and keep them until SIGINT or SIGTERM; then stop
    them. ``ready`` gets each shard's description once all are up."""
    init(address)
    actors = start(layout, detached=True)
    fanout = RayFanout(actors, [str(d) for d in layout.shard_dirs])
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        ready(fanout.all("describe"))
        while not stop.wait(1.0):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        fanout.close()
