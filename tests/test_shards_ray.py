"""A sharded collection served by Ray actors, on a real local Ray cluster: the same
results as in process; the actors of 'kbdb shard serve' are found by name; an unreachable
address is an error that names it, within seconds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import kbdb
from kbdb.shard import actors, layout
from kbdb.shard.coordinator import ShardedKnowledgeBase
from kbdb.shard.fanout import ShardUnavailableError


def _collection(root: Path) -> Path:
    kb = kbdb.KnowledgeBase.init(root / "one")
    kb.learn_many(
        kbdb.LearnItem(
            f"# Service {i}\n\nService {i} caches tokens for {i % 5} minutes behind the "
            f"gateway {i % 3}.",
            docid=f"svc/{i}",
        )
        for i in range(80)
    )
    kb.close()
    layout.create(root / "one" / ".kbdb", root / "coll", 3)
    return root / "coll"


def test_ray_actors_answer_as_the_shards_in_process(tmp_path: Path, ray_cluster: object) -> None:
    coll = _collection(tmp_path)
    with (
        ShardedKnowledgeBase.open(coll) as local,
        ShardedKnowledgeBase.open(coll, ray="local") as remote,
    ):
        for q in ("gateway tokens", "service 7 caches", "minutes behind gateway 2"):
            a, b = local.search(q, limit=20), remote.search(q, limit=20)
            assert [i.to_dict() for i in b.items] == [i.to_dict() for i in a.items]
            assert b.total == a.total
        rep = remote.learn("# Queue\n\nThe queue drains nightly.", docid="ops/queue")
        assert remote.search("queue drains").items[0].kbid == rep.sections[0].kbid
        # The write reached the owning shard's files: the in-process view sees it.
        assert local.search("queue drains").items[0].kbid == rep.sections[0].kbid


def test_served_actors_are_found_by_name(tmp_path: Path, ray_cluster: object) -> None:
    coll = _collection(tmp_path)
    lay = layout.load(coll)
    served = actors.start(lay, detached=False)
    try:
        with ShardedKnowledgeBase.open(coll, ray="local") as kb:
            assert kb.search("gateway tokens").total > 0
        # The coordinator did not own them: closing it left them running.
        import ray

        assert ray.get(served[0].describe.remote())["shard"] == 0
    finally:
        import ray

        for a in served:
            ray.kill(a)


def test_an_unreachable_address_is_named_quickly() -> None:
    started = time.perf_counter()
    with pytest.raises(ShardUnavailableError, match="127.0.0.1:9"):
        actors.check_reachable("127.0.0.1:9")
    assert time.perf_counter() - started < 10
    with pytest.raises(kbdb.errors.InvalidArgumentError, match="host:port"):
        actors.check_reachable("nonsense")
