"""Calling every shard: in this process, or on Ray actors.

``Fanout.all(method, *args)`` calls ``method`` on every shard and returns the answers in
shard order; ``Fanout.some({shard: args})`` calls it on some. In process, the calls run
one after another (a shard's search is a fraction of a millisecond; threads would add
more than they save on the GIL-bound Python part). On Ray, each call is a remote method
call on the shard's actor, all in flight at once, and a failed or dead actor raises an
error that names the shard, never a partial answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbdb.errors import KbdbError
from kbdb.shard.server import ShardServer


class ShardUnavailableError(KbdbError):
    code = "SHARD_UNAVAILABLE"


class Fanout:
    """The shards of a collection, called in this process."""

    def __init__(self, servers: Sequence[ShardServer]) -> None:
        self._servers = list(servers)

    @property
    def count(self) -> int:
        return len(self._servers)

    def all(self, method: str, *args: Any) -> list[Any]:
        return [self._call(i, method, args) for i in range(len(self._servers))]

    def some(self, method: str, calls: Mapping[int, Sequence[Any]]) -> dict[int, Any]:
        return {i: self._call(i, method, args) for i, args in calls.items()}

    def _call(self, i: int, method: str, args: Sequence[Any]) -> Any:
        server = self._servers[i]
        try:
            return getattr(server, method)(*args)
        except KbdbError as e:
            raise type(e)(f"shard {i} ({server.path}): {e.message}", hint=e.hint) from e

    def close(self) -> None:
        for s in self._servers:
            s.close()


class RayFanout(Fanout):
    """The shards as Ray actors (``kbdb.distributed`` starts them)."""

    def __init__(self, actors: Sequence[Any], paths: Sequence[str]) -> None:
        super().__init__([])
        self._actors = list(actors)
        self._paths = list(paths)
        # Whether closing stops the actors: not those 'kbdb shard serve' keeps.
        self.owned = True

    @property
    def count(self) -> int:
        return len(self._actors)

    def _get(self, refs: Mapping[int, Any]) -> dict[int, Any]:
        import ray

        out: dict[int, Any] = {}
        for i, ref in refs.items():
            try:
                out[i] = ray.get(ref)
            except ray.exceptions.RayActorError as e:
                raise ShardUnavailableError(
                    f"shard {i} ({self._paths[i]}) is unavailable: its actor died ({e})",
                    hint="restart 'kbdb shard serve'; no partial results are returned",
                ) from None
            except ray.exceptions.RayTaskError as e:
                cause = e.cause if isinstance(getattr(e, "cause", None), Exception) else None
                if isinstance(cause, KbdbError):
                    raise type(cause)(
                        f"shard {i} ({self._paths[i]}): {cause.message}", hint=cause.hint
                    ) from None
                raise ShardUnavailableError(
                    f"shard {i} ({self._paths[i]}) failed: {e}",
                    hint="see the shard's log; no partial results are returned",
                ) from None
        return out

    def all(self, method: str, *args: Any) -> list[Any]:
        refs = {i: getattr(a, method).remote(*args) for i, a in enumerate(self._actors)}
        got = self._get(refs)
        return [got[i] for i in range(len(self._actors))]

    def some(self, method: str, calls: Mapping[int, Sequence[Any]]) -> dict[int, Any]:
        refs = {i: getattr(self._actors[i], method).remote(*args) for i, args in calls.items()}
        return self._get(refs)

    def close(self) -> None:
        if not self.owned:
            return
        import ray

        for a in self._actors:
            ray.kill(a)
