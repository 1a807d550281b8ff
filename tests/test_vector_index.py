"""Smoke tests of ``kbdb._core.VectorIndex`` from Python: numpy in and out, the error
classes, GIL-free concurrent searches. The engine's semantics are tested in Rust
(``rust/tests/vector_*.rs``); this checks the boundary."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from kbdb._core import VectorIndex
from kbdb.errors import IndexCorruptError, InvalidArgumentError

DIMS = 16


def kbid(i: int) -> str:
    return f"{i * 2654435761 % 2**128:032x}"


def unit(rng: np.random.Generator, n: int, dims: int = DIMS) -> np.ndarray:
    x = rng.standard_normal((n, dims)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def brute(x: np.ndarray, ids: list[str], q: np.ndarray, k: int) -> list[str]:
    scores = x @ q
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
    return [ids[i] for i in order[:k]]


@pytest.fixture
def index(tmp_path: Path) -> VectorIndex:
    return VectorIndex.open(str(tmp_path), create=True, dimensions=DIMS, model_name="m")


def test_write_search_get_round_trip(index: VectorIndex, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = unit(rng, 500)
    ids = [kbid(i) for i in range(500)]
    index.write(ids, x, model_name="all-MiniLM-L6-v2", watermark=7)
    assert (index.count, index.dimensions, index.watermark) == (500, DIMS, 7)
    assert index.model_name == "all-MiniLM-L6-v2"
    assert index.last_built.endswith("Z")
    q = x[42]
    hits, scores = index.search(q, limit=5)
    assert hits == brute(x, ids, q, 5)
    assert hits[0] == ids[42] and abs(scores[0] - 1.0) < 1e-5
    assert np.allclose(scores, np.sort(x @ q)[::-1][:5], atol=1e-5)
    # bytes, memoryview and 1-row 2-D arrays are all accepted.
    assert index.search(q.tobytes(), limit=5)[0] == hits
    assert index.search(memoryview(q), limit=5)[0] == hits
    assert index.search(q.reshape(1, -1), limit=5)[0] == hits
    got = index.get([ids[3], "f" * 32])
    assert got[1] is None
    assert got[0] is not None and np.array_equal(np.frombuffer(got[0], np.float32), x[3])
    assert index.kbids() == sorted(ids)
    assert index.verify() == []
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["vectors-meta.toml", "vectors.idx"]


def test_learn_time_changes_and_allow(index: VectorIndex) -> None:
    rng = np.random.default_rng(2)
    x = unit(rng, 100)
    ids = [kbid(i) for i in range(100)]
    index.write(ids, x.tobytes(), model_name="m", watermark=1)
    new = unit(rng, 3)
    index.append([ids[0], kbid(1000), kbid(1001)], new, watermark=2)
    index.delete([ids[5], kbid(1001)], watermark=3)
    # +2 new, ids[0] replaced, -ids[5], -kbid(1001)
    assert index.count == 100
    assert index.side_count > 0
    live = np.vstack([new[0], x[1:5], x[6:], new[1]])
    live_ids = [ids[0], *ids[1:5], *ids[6:], kbid(1000)]
    q = unit(rng, 1)[0]
    before = index.search(q, limit=20)
    assert before[0] == brute(live, live_ids, q, 20)
    allow = live_ids[::4] + [ids[5]]  # a deleted kbid is never returned
    filtered = index.search(q, limit=10, allow=allow)[0]
    assert filtered == brute(live[::4], live_ids[::4], q, 10)
    assert index.compact(force=True)
    assert index.side_count == 0
    assert index.search(q, limit=20) == before
    assert index.search(q, limit=20, threads=1) == before


def test_search_many_equals_one_search_per_query(index: VectorIndex) -> None:
    rng = np.random.default_rng(5)
    x = unit(rng, 300)
    x[7] = x[3]  # a tie: equal scores, broken by kbid
    ids = [kbid(i) for i in range(300)]
    index.write(ids, x, model_name="m", watermark=1)
    index.append([ids[0], kbid(1000)], unit(rng, 2), watermark=2)
    index.delete([ids[5]], watermark=3)
    qs = np.vstack([unit(rng, 3), x[3], np.zeros(DIMS, np.float32)])
    for kwargs in ({}, {"limit": 0}, {"limit": 25, "threads": 1}, {"allow": ids[::3]}):
        want = [index.search(q, **kwargs) for q in qs]
        assert index.search_many(qs, **kwargs) == want
        assert index.search_many(qs.tobytes(), **kwargs) == want
    assert index.search_many(b"") == []
    with pytest.raises(InvalidArgumentError):
        index.search_many(np.zeros(DIMS + 1, np.float32))
    with pytest.raises(InvalidArgumentError):
        index.search_many(np.full((2, DIMS), np.inf, np.float32))


def test_errors(index: VectorIndex, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        VectorIndex.open(str(tmp_path / "missing"))
    with pytest.raises(InvalidArgumentError):
        VectorIndex.open(str(tmp_path / "new"), create=True, model_name="m")
    with pytest.raises(InvalidArgumentError):
        index.search(np.zeros(DIMS - 1, np.float32))
    with pytest.raises(InvalidArgumentError):
        index.search(np.zeros(DIMS, np.float64))
    with pytest.raises(InvalidArgumentError):
        index.search(np.zeros(DIMS, np.float32), limit=-1)
    with pytest.raises(InvalidArgumentError):
        index.append(["not-a-kbid"], np.zeros(DIMS, np.float32), watermark=1)
    with pytest.raises(InvalidArgumentError):
        index.append([kbid(1)], np.full(DIMS, np.nan, np.float32), watermark=1)
    with pytest.raises(TypeError):
        index.search([0.0] * DIMS)  # type: ignore[arg-type]
    (tmp_path / "vectors.idx").write_bytes(b"KBVX\x01garbage")
    with pytest.raises(IndexCorruptError) as err:
        VectorIndex.open(str(tmp_path))
    assert err.value.code == "INDEX_CORRUPT"
    assert index.verify() != []
    repaired = VectorIndex.open(str(tmp_path), reset=True, dimensions=8, model_name="m2")
    assert (repaired.count, repaired.dimensions, repaired.model_name) == (0, 8, "m2")


def test_reload_sees_another_writer(index: VectorIndex, tmp_path: Path) -> None:
    reader = VectorIndex.open(str(tmp_path))
    assert not reader.reload()
    index.append([kbid(1)], unit(np.random.default_rng(3), 1), watermark=5)
    assert reader.count == 0
    assert reader.reload()
    assert (reader.count, reader.watermark) == (1, 5)


def test_concurrent_searches_release_the_gil(index: VectorIndex) -> None:
    rng = np.random.default_rng(4)
    x = unit(rng, 20_000)
    ids = [kbid(i) for i in range(20_000)]
    index.write(ids, x, model_name="m", watermark=1)
    queries = unit(rng, 8)
    want = [index.search(q, limit=10)[0] for q in queries]
    got: list[list[str]] = [[] for _ in queries]

    def run(i: int) -> None:
        got[i] = index.search(queries[i], limit=10)[0]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(queries))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_forced_scalar_kernel_ranks_alike(index: VectorIndex, tmp_path: Path) -> None:
    """KBDB_VECTOR_KERNEL=scalar (read once per process) gives the same ranking."""
    rng = np.random.default_rng(5)
    x = unit(rng, 300)
    ids = [kbid(i) for i in range(300)]
    index.write(ids, x, model_name="m", watermark=1)
    q = unit(rng, 1)[0]
    script = (
        "import sys, numpy as np\n"
        "from kbdb._core import VectorIndex\n"
        "vi = VectorIndex.open(sys.argv[1])\n"
        "q = np.frombuffer(bytes.fromhex(sys.argv[2]), np.float32)\n"
        "print(VectorIndex.kernel(), *vi.search(q, limit=10)[0])\n"
    )
    env = {**os.environ, "KBDB_VECTOR_KERNEL": "scalar"}
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), q.tobytes().hex()],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert out[0] == "scalar"
    assert out[1:] == index.search(q, limit=10)[0]
