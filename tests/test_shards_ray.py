"""A sharded collection served by Ray actors, on a real local Ray cluster: the same
results as in process; the actors of 'kbdb shard serve' are found by name; an unreachable
address is an error that names it, within seconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import kbdb
from kbdb.shard import actors, layout
from kbdb.shard.coordinator import ShardedKnowledgeBase


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


def test_an_unreachable_address_is_named_quickly(tmp_path: Path) -> None:
    coll = _collection(tmp_path)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "shard", "serve", str(coll), "--ray", "127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "127.0.0.1:9" in out.stderr and "ray start --head" in out.stderr
    assert time.perf_counter() - started < 30
