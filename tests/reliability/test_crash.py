"""The crash harness (SPEC §13): a writer killed at any moment loses nothing that
it acknowledged, and leaves a knowledge base that checks ok and serves searches that agree
with the database.

Each iteration starts ``crash_driver`` on the same knowledge base and stops it one of two
ways: a named fail point (``KBDB_FAILPOINT``: in the Rust file writes, between the
database commit and the index updates, inside rebuild and gc), or SIGKILL after a random
delay. Then, in this process:

1. ``check`` is ok;
2. every marker word of an acknowledged operation is found by search exactly when it
   should be (learned and not since revised away or forgotten), the one in flight either
   way;
3. lexical search agrees with the database: a marker's hits are exactly the live
   sections whose content holds it; with vectors, the vector index holds exactly the live
   sections;
4. the next write succeeds.

``make test`` runs a quick subset; ``make test-slow`` runs 500 iterations.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.reliability.crash_driver import replay

from kbdb import KnowledgeBase
from kbdb.evaluation.run import override_config

REPO = Path(__file__).resolve().parents[2]

RUST_POINTS = ("write.mid", "write.before_rename", "write.after_rename")
PY_POINTS = (
    "learn.after_db_commit",
    "learn.after_lexical",
    "lifecycle.after_db_commit",
    "rebuild.after_lexical",
    "gc.after_db_commit",
)


def run_driver(
    kb: Path,
    journal: Path,
    seed: int,
    ops: int,
    *,
    failpoint: str | None,
    kill_after: float | None,
    model: Path | None,
) -> int:
    env = {k: v for k, v in os.environ.items() if k != "KBDB_FAILPOINT"}
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{REPO / 'python'}"
    if failpoint:
        env["KBDB_FAILPOINT"] = failpoint
    cmd = [sys.executable, "-m", "tests.reliability.crash_driver", str(kb), str(journal)]
    cmd += [str(seed), str(ops)]
    if model is not None:
        cmd += ["--model", str(model)]
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        if kill_after is not None:
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    code = proc.returncode
    # Stopped by the harness (SIGKILL, a fail point's abort) or finished: anything else is
    # a crash of the driver itself, which is a bug.
    assert code in (0, -signal.SIGKILL, -signal.SIGABRT), err.decode(errors="replace")[-3000:]
    return code


def verify(root: Path, journal: Path, *, model: Path | None) -> dict[str, int]:
    words, _ = replay(journal)
    kb = KnowledgeBase.open(root)
    if model is not None:
        settings = {"embedding.provider": "onnx", "embedding.model_path": str(model)}
        kb = KnowledgeBase.open(root, config=override_config(kb.config, settings))
    try:
        report = kb.check()
        assert report.ok, [e.to_dict() for e in report.errors]
        conn = kb.context.db.conn()
        counts = {"live": 0, "gone": 0, "either": 0}
        for word, state in sorted(words.items()):
            counts[state] += 1
            hits = {item.kbid for item in kb.search(word, limit=100).items}
            with kb.context.db.read():
                in_db = {
                    r[0]
                    for r in conn.execute(
                        "SELECT kbid FROM sections WHERE retired_at IS NULL AND content LIKE ?",
                        (f"%{word}%",),
                    )
                }
            assert hits == in_db, (word, state, hits, in_db)
            if state == "live":
                assert hits, f"acknowledged {word} is lost"
            elif state == "gone":
                assert not hits, f"{word} was revised away or forgotten, yet found"
        if model is not None and kb.context.vectors.index() is None:
            # The crash hit the vector index's creation: vector search must say it is stale
            # and answer lexically, until the next write builds the index.
            res = kb.search("probe", mode="vector", limit=1)
            assert res.vector_index_stale and res.retrieval_method == "lexical"
        elif model is not None:
            vectors_match_database(kb)
        # The next write succeeds and is searchable.
        marker = f"aftercrash{time.time_ns()}"
        kb.learn(f"Written after the crash: {marker}.", docid=marker)
        assert kb.search(marker).items
        if model is not None:
            vectors_match_database(kb)
        return counts
    finally:
        kb.close()


def vectors_match_database(kb: KnowledgeBase) -> None:
    """The vector index, caught up by a search, holds exactly the live sections."""
    res = kb.search("probe", mode="vector", limit=1)
    assert not res.vector_index_stale
    index = kb.context.vectors.index()
    assert index is not None
    with kb.context.db.read() as conn:
        live = {r[0] for r in conn.execute("SELECT kbid FROM sections WHERE retired_at IS NULL")}
    assert set(index.kbids()) == live


# Points that the driver's first operation (always a learn) reaches: a quick campaign
# alternates a run that completes with one that crashes at the next of these.
QUICK_POINTS = (
    "learn.after_db_commit",
    "write.mid",
    "learn.after_lexical",
    "write.before_rename",
    "write.after_rename",
)


def campaign(
    tmp_path: Path, iterations: int, seed: int, model: Path | None, *, quick: bool = False
) -> dict[str, int]:
    rng = random.Random(seed)
    root = tmp_path / "kb"
    KnowledgeBase.init(root).close()
    journal = tmp_path / "journal.jsonl"
    totals = {"iterations": 0, "killed": 0, "failpoints": 0, "live": 0, "gone": 0, "either": 0}
    points = RUST_POINTS + PY_POINTS
    for i in range(iterations):
        if quick:  # odd iterations crash at the next quick point, even ones run through
            point = QUICK_POINTS[(i // 2) % len(QUICK_POINTS)]
            failpoint, kill_after = (point if i % 2 else None), 120.0
        elif rng.random() < 0.6:
            point = rng.choice(points)
            failpoint, kill_after = f"{point}:{rng.randint(1, 3)}", 30.0
        else:
            failpoint, kill_after = None, rng.uniform(0.3, 2.5)
        code = run_driver(
            root,
            journal,
            seed * 1000 + i,
            rng.randint(3, 8),
            failpoint=failpoint,
            kill_after=kill_after,
            model=model,
        )
        totals["iterations"] += 1
        totals["killed"] += code != 0
        totals["failpoints"] += code == -signal.SIGABRT
        counts = verify(root, journal, model=model)
        for k, v in counts.items():
            totals[k] = v
    return totals


def test_quick_crash_campaign_loses_nothing(tmp_path: Path) -> None:
    totals = campaign(tmp_path, iterations=10, seed=1, model=None, quick=True)
    assert totals["failpoints"] == 5 and totals["live"] > 0


def test_quick_crash_campaign_with_vectors(tmp_path: Path, test_model: Path) -> None:
    totals = campaign(tmp_path, iterations=6, seed=2, model=test_model, quick=True)
    assert totals["failpoints"] == 3 and totals["live"] > 0


@pytest.mark.slow
def test_crash_campaign_500_iterations(tmp_path: Path) -> None:
    totals = campaign(tmp_path, iterations=450, seed=3, model=None)
    print("crash campaign (lexical):", totals)
    totals = campaign(tmp_path / "v", iterations=50, seed=4, model=_model())
    print("crash campaign (vectors):", totals)


def _model() -> Path:
    from tests.embedding.conftest import find_test_model

    return find_test_model()


@pytest.fixture
def test_model() -> Path:
    return _model()
