"""``learn --ray`` and ``rebuild --ray`` on a real local Ray cluster with the real ONNX
model: the result equals a local learn's, texts already embedded are not sent again, a
dying actor is restarted, and a missing Ray or an address nobody answers at is an error
that says what to do."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.cli.conftest import cli_env
from tests.distributed.conftest import onnx_kb

import kbdb
from kbdb import _core
from kbdb.distributed import RunStats, learn_paths, pipeline
from kbdb.embedding.local import OnnxEmbeddingProvider
from kbdb.ingest import count_files

# Lines of an export that say when, not what.
_WHEN = re.compile(
    r"^(created_at|updated_at|retired_at|exported_at|valid_from|valid_until) = .*$", re.M
)


def exported(kb: kbdb.KnowledgeBase, into: Path) -> dict[str, str]:
    """The export of ``kb`` as {relative path: text}, without its timestamps."""
    kb.export(into)
    return {
        str(p.relative_to(into)): _WHEN.sub("", p.read_text(encoding="utf-8"))
        for p in sorted(into.rglob("*"))
        if p.is_file()
    }


def vectors(kb: kbdb.KnowledgeBase) -> tuple[list[str], Any]:
    index = _core.VectorIndex.open(str(kb.path / "indexes"))
    kbids = sorted(index.kbids())
    rows = [np.frombuffer(raw, dtype=np.float32) for raw in index.get(kbids)]
    return kbids, np.stack(rows)


def assert_same_base(a: kbdb.KnowledgeBase, b: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    ea, eb = exported(a, tmp_path / "a"), exported(b, tmp_path / "b")
    assert sorted(ea) == sorted(eb)
    assert ea == eb
    ka, va = vectors(a)
    kb_, vb = vectors(b)
    assert ka == kb_ and len(ka) == a.stats().live_sections
    assert float(np.abs(va - vb).max()) <= 1e-6


def learn_on_ray(kb: kbdb.KnowledgeBase, tree: Path, stats: RunStats) -> kbdb.LearnReport:
    return learn_paths(
        kb.context,
        kb._learner(),  # noqa: SLF001  (the facade's learner, as learn_path(ray=...) uses)
        [tree],
        tags=(),
        docid=None,
        progress=None,
        notable_only=False,
        address="local",
        stats=stats,
    )


def no_local_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process unable to embed: only the Ray actors (other processes) can."""

    def refuse(self: OnnxEmbeddingProvider, texts: Any) -> Any:
        raise AssertionError(f"the driver embedded {len(texts)} texts")

    monkeypatch.setattr(OnnxEmbeddingProvider, "embed", refuse)


def test_a_ray_learn_equals_a_local_learn(
    ray_cluster: Any,
    tree: Path,
    local_kb: kbdb.KnowledgeBase,
    session_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = onnx_kb(tmp_path / "ray", session_model)
    no_local_embedding(monkeypatch)
    seen: list[int] = []
    report = kb.learn_path(tree, ray="local", progress=lambda p: seen.append(p.files_done))
    local = local_kb.learn_path(tree)  # a second local learn: every file unchanged
    assert report.sections_added == local.sections_unchanged > 30
    assert [s.kbid for s in report.sections] == [s.kbid for s in local.sections]
    assert (
        [(f.path, f.code) for f in report.files_skipped]
        == [(f.path, f.code) for f in local.files_skipped]
        == [(str(tree / "latin1.md"), "INVALID_UTF8")]
    )
    assert seen[-1] == count_files(tree)  # drafts/ is ignored, as in a local learn
    assert_same_base(local_kb, kb, tmp_path / "exports")
    kb.close()


def test_a_rerun_sends_ray_only_what_is_missing(
    ray_cluster: Any,
    tree: Path,
    local_kb: kbdb.KnowledgeBase,
    session_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run stopped half way left its committed files; the next run embeds the rest only
    (the embedding cache is consulted before anything is sent), and a third sends none."""
    kb = onnx_kb(tmp_path / "ray", session_model)
    no_local_embedding(monkeypatch)
    first, second, third = RunStats(), RunStats(), RunStats()
    learn_on_ray(kb, tree / "book", first)  # the part a stopped run had stored
    assert first.texts > 6
    report = learn_on_ray(kb, tree, second)
    everything = kb.stats().live_sections
    # book/ keeps its kbids but its documents get new ids (the root moved): same texts
    assert second.texts == everything - first.texts
    assert report.files_skipped and report.sections_added == everything - first.texts
    again = learn_on_ray(kb, tree, third)
    assert third.texts == 0 and again.sections_added == 0
    assert again.documents_unchanged == report.documents_added + report.documents_updated
    kb.close()


def test_rebuild_reembed_on_ray_gives_the_same_vectors(
    ray_cluster: Any,
    tree: Path,
    local_kb: kbdb.KnowledgeBase,
    session_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = onnx_kb(tmp_path / "ray", session_model)
    kb.learn_path(tree)  # locally: the cache then holds every text
    no_local_embedding(monkeypatch)
    stats = RunStats()
    embedded = pipeline.embed_sections(
        kb.context, reembed=True, address="local", progress=None, stats=stats
    )
    assert embedded == stats.texts == kb.stats().live_sections  # all, though cached
    assert pipeline.embed_sections(kb.context, reembed=False, address="local", progress=None) == 0
    report = kb.rebuild(reembed=True, ray="local")
    assert report.vectors == kb.stats().live_sections
    assert_same_base(local_kb, kb, tmp_path / "exports")
    kb.close()


def test_a_dying_embedding_actor_is_restarted_and_nothing_is_lost(
    ray_cluster: Any,
    tree: Path,
    local_kb: kbdb.KnowledgeBase,
    session_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each embedding actor process aborts (as kill -9 would stop it) on its third
    block; Ray starts it again and runs the lost blocks on it."""
    monkeypatch.setenv("KBDB_FAILPOINT", "distributed.embed:3")
    monkeypatch.setattr(pipeline, "FILES_PER_BLOCK", 4)  # 8 blocks: 2 deaths
    logs = Path(ray_cluster._private.worker.global_worker.node.get_logs_dir_path())
    before = aborts(logs)
    kb = onnx_kb(tmp_path / "ray", session_model)
    no_local_embedding(monkeypatch)
    kb.learn_path(tree, ray="local")
    assert aborts(logs) > before
    assert_same_base(local_kb, kb, tmp_path / "exports")
    kb.close()


def aborts(logs: Path) -> int:
    """How many worker processes stopped at the fail point (their stderr logs say so)."""
    return sum(
        p.read_text(errors="replace").count("fail point distributed.embed reached")
        for p in logs.glob("worker-*.err")
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_cli(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kbdb ARGS`` in a fresh process (``code``: a prelude run first)."""
    prelude = code or ""
    program = f"import sys\n{prelude}\nfrom kbdb.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=120,
        check=False,
    )


def test_an_address_nobody_answers_at_fails_fast_and_names_it(
    tree: Path, session_model: Path, tmp_path: Path
) -> None:
    onnx_kb(tmp_path / "kb", session_model).close()
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    proc = run_cli("--db", str(tmp_path / "kb"), "learn", str(tree), "--ray", address)
    assert time.monotonic() - started < 30
    assert proc.returncode == 2, proc.stderr
    assert f"kbdb: no Ray cluster answers at {address} (connection refused)" in proc.stderr
    assert "ray start --head" in proc.stderr
    assert kbdb.KnowledgeBase.open(tmp_path / "kb").stats().documents == 0


def test_without_ray_installed_the_error_names_the_extra(tree: Path, tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path / "kb").close()
    hide = "sys.modules['ray'] = None  # as if Ray were not installed"
    proc = run_cli("--db", str(tmp_path / "kb"), "learn", str(tree), "--ray", code=hide)
    assert proc.returncode == 2, proc.stderr
    assert "kbdb: --ray needs Ray with Ray Data, which is not installed" in proc.stderr
    assert "pip install 'kbdb[ray]'" in proc.stderr
    rebuild = run_cli("--db", str(tmp_path / "kb"), "rebuild", "--ray", code=hide)
    assert rebuild.returncode == 0  # no embedding provider: nothing for Ray to do


def test_learn_and_rebuild_without_ray_do_not_import_it(tree: Path, tmp_path: Path) -> None:
    kbdb.KnowledgeBase.init(tmp_path / "kb").close()
    probe = "import atexit\natexit.register(lambda: print('ray' in sys.modules))"
    for args in (("learn", str(tree)), ("rebuild",), ("learn", "--help")):
        proc = run_cli("--db", str(tmp_path / "kb"), *args, code=probe)
        assert proc.stdout.strip().splitlines()[-1] == "False", (args, proc.stdout)


def test_the_cli_learns_on_a_cluster_named_by_its_address(
    ray_cluster: Any, tree: Path, local_kb: kbdb.KnowledgeBase, session_model: Path, tmp_path: Path
) -> None:
    """``--ray HOST:PORT`` from another process joins the session's cluster."""
    kb = onnx_kb(tmp_path / "kb", session_model)
    kb.close()
    address = ray_cluster.get_runtime_context().gcs_address
    proc = run_cli("--db", str(tmp_path / "kb"), "--json", "learn", str(tree), "--ray", address)
    assert proc.returncode == 1, proc.stderr  # 1: a file was skipped, as locally
    assert '"sections_added"' in proc.stdout
    with kbdb.KnowledgeBase.open(tmp_path / "kb") as kb:
        assert_same_base(local_kb, kb, tmp_path / "exports")
