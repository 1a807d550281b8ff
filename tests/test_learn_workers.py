"""A learn reads and splits files in worker processes (``learn.workers``); what it stores
is what a learn in one process stores, in the same order."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

import kbdb
from kbdb.ingest import walk
from kbdb.learn import learner
from kbdb.learn.learner import POOL_MIN_FILES, ParsedFile, _Job, parse_jobs


def make_tree(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / f"part{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:04d}.md").write_text(
            f"# Note {i}\n\nThe value of item {i} is {i * 7}.\n\n## Detail\n\nline {i}\n"
        )
    (root / "bad.md").write_bytes(b"\xff\xfe not utf-8")


def stored(kb: kbdb.KnowledgeBase) -> list[tuple[str, tuple[str, ...]]]:
    docs = kb.documents(limit=1000).items
    return [(d.docid, tuple(s.kbid for s in kb.recall(docid=d.docid).sections)) for d in docs]


@pytest.mark.parametrize("workers", [0, 2])
def test_workers_store_what_one_process_stores(tmp_path: Path, workers: int) -> None:
    tree = tmp_path / "tree"
    make_tree(tree, POOL_MIN_FILES + 40)
    one = kbdb.KnowledgeBase.init(tmp_path / "one")
    (one.path / "worker.toml").write_text("[learn]\nworkers = 1\n")
    one.close()
    many = kbdb.KnowledgeBase.init(tmp_path / "many")
    (many.path / "worker.toml").write_text(f"[learn]\nworkers = {workers}\n")
    many.close()
    with (
        kbdb.KnowledgeBase.open(tmp_path / "one") as a,
        kbdb.KnowledgeBase.open(tmp_path / "many") as b,
    ):
        ra, rb = a.learn_path(tree), b.learn_path(tree)
        assert (ra.sections_added, ra.documents_added) == (rb.sections_added, rb.documents_added)
        assert [(s.code, Path(s.path).name) for s in rb.files_skipped] == [
            ("INVALID_UTF8", "bad.md")
        ]
        assert stored(a) == stored(b)
        assert b.search("value of item 250").items[0].docids == ("part5/note0250.md",)


class _DiesInWorker(_Job):
    """A job that kills the worker process that runs it (and only a worker)."""

    def run(self) -> list[ParsedFile]:
        if multiprocessing.parent_process() is not None:
            os._exit(3)
        return super().run()


def test_a_broken_pool_parses_the_rest_here(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    make_tree(tree, 40)
    jobs = [_DiesInWorker(entry, (), None, False, 1 << 20) for entry in walk(tree)]
    got = list(parse_jobs(iter(jobs), workers=2))
    assert len(got) == len(jobs)
    assert [p.path for p in got] == [str(j.entry.path) for j in jobs]
    assert sum(p.pending is not None for p in got) == 40


def test_a_small_learn_stays_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool was started for a small learn")

    monkeypatch.setattr(learner, "_parse_in_pool", no_pool)
    tree = tmp_path / "tree"
    make_tree(tree, 20)
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    (kb.path / "worker.toml").write_text("[learn]\nworkers = 0\n")
    kb.close()
    with kbdb.KnowledgeBase.open(tmp_path / "kb") as kb:
        assert kb.learn_path(tree).documents_added == 20


def test_the_default_learns_in_process(tmp_path: Path) -> None:
    assert kbdb.KnowledgeBase.init(tmp_path / "kb").config.learn.workers == 1
