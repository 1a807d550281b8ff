"""Shared fixtures: a fresh knowledge base in a temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import kbdb


@pytest.fixture(scope="session", autouse=True)
def _embedding_daemons(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A vector or hybrid ``kbdb search`` starts an embedding daemon that outlives it. The
    daemons of this session live in a folder of its own (``KBDB_RUNTIME_DIR``, which the
    CLI subprocesses inherit) and are stopped when it ends, so none is left running."""
    import os

    from kbdb.embedding.daemon import ENV_RUNTIME_DIR, reap

    folder = tmp_path_factory.mktemp("kbdb-run")
    folder.chmod(0o700)
    before = os.environ.get(ENV_RUNTIME_DIR)
    os.environ[ENV_RUNTIME_DIR] = str(folder)
    try:
        yield
    finally:
        reap(folder)
        if before is None:
            os.environ.pop(ENV_RUNTIME_DIR, None)
        else:
            os.environ[ENV_RUNTIME_DIR] = before


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[kbdb.KnowledgeBase]:
    monkeypatch.delenv("KBDB_DB", raising=False)
    base = kbdb.KnowledgeBase.init(tmp_path / "kb")
    yield base
    base.close()


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def record_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of documents of each batch a learn stores from now on (non-empty ones):
    ``Learner.learn_pending`` still runs, wrapped to record its batch."""
    import kbdb.learn

    seen: list[int] = []
    store = kbdb.learn.Learner.learn_pending

    def recording(
        self: kbdb.learn.Learner, pending: list[kbdb.learn.Pending], *args: object
    ) -> object:
        if pending:
            seen.append(len(pending))
        return store(self, pending, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(kbdb.learn.Learner, "learn_pending", recording)
    return seen


@pytest.fixture(scope="module")
def model() -> Path:
    """The all-MiniLM-L6-v2 test model (SPEC §6.2)."""
    from tests.embedding.conftest import find_test_model

    return find_test_model()


@pytest.fixture
def hkb(tmp_path: Path, model: Path) -> Iterator[kbdb.KnowledgeBase]:
    """The facts of ``tests/test_hybrid.py``, learned with the real ONNX model."""
    from tests.test_hybrid import facts_kb

    kb = facts_kb(tmp_path / "kb", model)
    yield kb
    kb.close()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    """One real local Ray cluster for the whole test session (2 CPUs, no dashboard; a
    start costs a few seconds), stopped at its end. Code under test finds it initialized
    and uses it."""
    import logging

    try:
        import ray
    except ImportError:
        pytest.fail(
            "the Ray tests need Ray: pip install -e '.[dev]' (it includes kbdb[ray])",
            pytrace=False,
        )
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    yield ray
    ray.shutdown()
