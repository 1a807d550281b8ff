"""``kb.rebuild()`` (SPEC §8.3, §13): it regenerates every index from the database, repairs
every INDEX_CORRUPT case, and a rebuild killed halfway leaves the old indexes serving."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.embedding.conftest import find_test_model

import kbdb
from kbdb.config import set_value
from kbdb.errors import IndexCorruptError

NOTES = {
    "pool": "# Connection pool\n\nThe pool keeps 20 connections open for batch jobs.",
    "auth": "# Authentication\n\nTokens expire after one hour; refresh them early.",
    "cache": "# Cache\n\nRedis holds the session cache with a one hour expiry.",
    "deploy": "# Deploy\n\nDeployments roll out through a blue green switch.",
    "db": "# Database\n\nWe chose Postgres because of JSONB support and the pool.",
}
QUERIES = ("pool", "one hour", "postgres jsonb", "deploy switch", "cache expiry")


def results(kb: kbdb.KnowledgeBase, mode: str = "lexical") -> list[list[tuple[str, float]]]:
    return [
        [(i.kbid, round(i.score, 5)) for i in kb.search(q, mode=mode, limit=10).items]
        for q in QUERIES
    ]


def ranking(kb: kbdb.KnowledgeBase, mode: str = "lexical") -> list[list[str]]:
    """kbids only: BM25 statistics count tombstoned entries until a merge (as Lucene's
    do), so lexical scores before and after a rebuild differ while the order holds."""
    return [[k for k, _ in r] for r in results(kb, mode)]


def fill(kb: kbdb.KnowledgeBase) -> None:
    """One multi-section segment, then a replacement (a tombstone file), then a separate
    learn (a second segment); vectors land in side files."""
    kb.learn_many(kbdb.LearnItem(text, docid=docid) for docid, text in NOTES.items())
    kb.learn(
        "# Cache\n\nRedis holds the session cache; entries expire hourly.",
        docid="cache",
        replace=True,
    )
    kb.learn("# Backups\n\nNightly backups of the pool database go offsite.", docid="backup")


@pytest.fixture
def vkb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    kb = kbdb.KnowledgeBase.init(tmp_path / "vkb")
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(find_test_model()))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "vkb")
    fill(kb)
    yield kb
    kb.close()


def test_rebuild_after_deleting_indexes_gives_identical_results(kb: kbdb.KnowledgeBase) -> None:
    fill(kb)
    order = ranking(kb)
    kb.gc()  # one merged segment: the statistics a rebuild produces
    before = results(kb)
    assert [[k for k, _ in r] for r in before] == order
    kb.close()
    shutil.rmtree(kb.path / "indexes")
    again = kbdb.KnowledgeBase.open(kb.path)
    try:
        report = again.rebuild()
        assert report.sections == len(NOTES) + 1
        assert results(again) == before
        assert again.stats().index_segments == 1
        assert again.check().ok
    finally:
        again.close()


def test_rebuild_after_deleting_indexes_with_vectors(vkb: kbdb.KnowledgeBase) -> None:
    vkb.gc()
    lexical, vector, hybrid = results(vkb), results(vkb, "vector"), results(vkb, "hybrid")
    vkb.close()
    shutil.rmtree(vkb.path / "indexes")
    again = kbdb.KnowledgeBase.open(vkb.path)
    try:
        report = again.rebuild()
        assert report.vectors == len(NOTES) + 1
        assert results(again) == lexical
        assert results(again, "vector") == vector
        assert results(again, "hybrid") == hybrid
        assert again.check().ok and again.check().warnings == ()
    finally:
        again.close()


def test_bit_flip_in_every_index_file_is_repaired(vkb: kbdb.KnowledgeBase) -> None:
    index_dir = vkb.path / "indexes"
    lexical, vector = ranking(vkb), results(vkb, "vector")
    lexical_results = results(vkb, "lexical")
    vkb.close()
    backup = index_dir.parent / "indexes-backup"
    shutil.copytree(index_dir, backup)
    names = sorted(p.name for p in index_dir.iterdir())
    assert "meta.toml" in names and "vectors.idx" in names and "vectors-meta.toml" in names
    assert any(n.startswith("seg-") for n in names)
    assert any(n.endswith(".del") for n in names), names
    assert any(n.startswith("vectors-add.") for n in names)
    for name in names:
        shutil.rmtree(index_dir)
        shutil.copytree(backup, index_dir)
        f = index_dir / name
        data = bytearray(f.read_bytes())
        data[len(data) // 2] ^= 0x04
        f.write_bytes(bytes(data))
        kb = kbdb.KnowledgeBase.open(vkb.path)
        try:
            vector_file = name.startswith("vectors")
            mode = "vector" if vector_file else "lexical"
            # Opening does not read the checksum of a segment or of vectors.idx (only their
            # footer and header; docs/reliability.md): a search that does not decode the
            # damaged bytes gives the undamaged results, one that does says INDEX_CORRUPT.
            unchecked = name.endswith(".seg") or name == "vectors.idx"
            try:
                found = results(kb, mode)
            except IndexCorruptError as e:
                assert e.code == "INDEX_CORRUPT" and "rebuild" in str(e)
            else:
                assert unchecked, f"{name}: damage not detected by the search"
                assert found == (vector if vector_file else lexical_results), name
            assert any(i.code == "checksum_mismatch" for i in kb.check().errors), name
            kb.rebuild()
            assert ranking(kb) == lexical, name
            assert results(kb, "vector") == vector, name
            assert kb.check().ok, name
        finally:
            kb.close()


def test_truncated_segment_is_repaired(kb: kbdb.KnowledgeBase) -> None:
    fill(kb)
    before = ranking(kb)
    kb.close()
    seg = sorted((kb.path / "indexes").glob("seg-*.seg"))[-1]
    seg.write_bytes(seg.read_bytes()[:10])
    again = kbdb.KnowledgeBase.open(kb.path)
    try:
        with pytest.raises(IndexCorruptError):
            results(again)
        again.rebuild(vectors=False)
        assert ranking(again) == before
    finally:
        again.close()


_CHILD = """
import sys, kbdb
kb = kbdb.KnowledgeBase.open(sys.argv[1])
print("start", flush=True)
kb.rebuild()
print("done", flush=True)
"""


def test_a_rebuild_killed_halfway_leaves_the_old_index_serving(tmp_path: Path) -> None:
    """SIGKILL the rebuilding process as soon as it writes its first new index file; the
    previous manifest keeps serving identical results, and the next rebuild completes."""
    rng = random.Random(7)
    vocab = [
        f"{a}{b}"
        for a in ("cell", "gene", "pool", "risk", "dose", "node")
        for b in ("", "s", "ing", "ed", "er", "al", "ic", "ion", "ous", "ly")
    ]
    kb = kbdb.KnowledgeBase.init(tmp_path / "big")
    kb.learn_many(
        kbdb.LearnItem(
            f"# Paper {i}\n\n"
            + " ".join(rng.choice(vocab) + str(rng.randrange(500)) for _ in range(120)),
            docid=f"p{i}",
        )
        for i in range(3000)
    )
    queries = ("cells12", "gene7 dose3", "pooling")
    before = [[i.kbid for i in kb.search(q).items] for q in queries]
    assert all(before), before
    kb.close()
    index_dir = kb.path / "indexes"
    original = set(os.listdir(index_dir))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(kb.path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"start"
    deadline = time.monotonic() + 120
    seen: set[str] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        seen = set(os.listdir(index_dir)) - original
        if seen:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.0005)
    proc.wait()
    proc.stdout.close()
    assert proc.stderr is not None
    proc.stderr.close()
    assert seen and proc.returncode == -signal.SIGKILL, "the rebuild ended before the kill"

    after = kbdb.KnowledgeBase.open(kb.path)
    try:
        assert [[i.kbid for i in after.search(q).items] for q in queries] == before
        assert after.check().ok
        after.rebuild()
        assert [[i.kbid for i in after.search(q).items] for q in queries] == before
    finally:
        after.close()


def test_lexical_rebuild_reports_progress(kb: kbdb.KnowledgeBase) -> None:
    fill(kb)
    seen: list[tuple[int, int]] = []
    kb.rebuild(vectors=False, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(NOTES) + 1, len(NOTES) + 1)
