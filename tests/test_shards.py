"""Sharded collections (docs/scale.md): ``kbdb shard create`` splits a knowledge base by a
hash of the docid; ``ShardedKnowledgeBase`` ranks the collection exactly as the one
knowledge base did (lexical on SciFact's corpus and test queries; vector and hybrid with
the real model on a part of it); bad shards give errors that name them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.shared_data import DATASETS

import kbdb
from kbdb.config import set_value
from kbdb.errors import InvalidArgumentError, KbNotFoundError
from kbdb.evaluation.beir import dataset_paths, load_beir
from kbdb.evaluation.run import learn_corpus
from kbdb.shard import layout
from kbdb.shard.coordinator import ShardedKnowledgeBase

SCIFACT = DATASETS / "scifact"


def _scifact() -> object:
    return load_beir(*dataset_paths(SCIFACT))


def _docids(kb: kbdb.KnowledgeBase) -> set[str]:
    out: set[str] = set()
    while True:
        page = kb.documents(limit=1000, offset=len(out))
        out |= {d.docid for d in page.items}
        if len(page.items) < 1000:
            return out


def _same(one: kbdb.SearchResult, many: kbdb.SearchResult) -> None:
    assert [i.kbid for i in many.items] == [i.kbid for i in one.items]
    for a, b in zip(one.items, many.items, strict=True):
        assert b.score == pytest.approx(a.score, abs=1e-6)
        assert b.to_dict() == a.to_dict()
    assert (many.total, many.relaxed, many.retrieval_verdict) == (
        one.total,
        one.relaxed,
        one.retrieval_verdict,
    )


@pytest.fixture(scope="module")
def scifact_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """SciFact's corpus in one knowledge base, and split into 4 shards."""
    root = tmp_path_factory.mktemp("scifact")
    ds = _scifact()
    kb = kbdb.KnowledgeBase.init(root / "one")
    learn_corpus(kb, ds.corpus)  # type: ignore[attr-defined]
    kb.close()
    layout.create(root / "one" / ".kbdb", root / "coll", 4)
    yield root / "one", root / "coll"


def test_create_splits_by_docid_and_keeps_every_document(
    scifact_pair: tuple[Path, Path],
) -> None:
    one_path, coll_path = scifact_pair
    lay = layout.load(coll_path)
    assert lay.count == 4
    one = kbdb.KnowledgeBase.open(one_path)
    all_docs = _docids(one)
    seen: set[str] = set()
    for i, d in enumerate(lay.shard_dirs):
        shard = kbdb.KnowledgeBase.open(d)
        docs = _docids(shard)
        shard.close()
        assert docs and all(lay.route(doc) == i for doc in docs)
        assert not docs & seen
        seen |= docs
    assert seen == all_docs
    one.close()
    assert layout.check(lay) == []


def test_lexical_ranking_and_scores_equal_one_knowledge_base(
    scifact_pair: tuple[Path, Path],
) -> None:
    one_path, coll_path = scifact_pair
    queries = [text for _, text in _scifact().queries]  # type: ignore[attr-defined]
    one = kbdb.KnowledgeBase.open(one_path)
    with ShardedKnowledgeBase.open(coll_path) as coll:
        for q in queries:
            _same(one.search(q, mode="lexical"), coll.search(q, mode="lexical"))
        # Pages, explain, filters and a relaxed query take the same paths.
        q = queries[0]
        _same(one.search(q, limit=5, offset=5), coll.search(q, limit=5, offset=5))
        _same(one.search(q, explain=True), coll.search(q, explain=True))
        _same(one.search("zebrafish xyzzy"), coll.search("zebrafish xyzzy"))
        doc = one.search(q).items[0].docids[0]
        _same(one.search(q, docid=doc), coll.search(q, docid=doc))
    one.close()


def test_vector_and_hybrid_equal_one_knowledge_base(tmp_path: Path, model: Path) -> None:
    ds = _scifact()
    corpus = ds.corpus[:150]  # type: ignore[attr-defined]
    kb = kbdb.KnowledgeBase.init(tmp_path / "one")
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(model))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "one")
    learn_corpus(kb, corpus)
    layout.create(kb.path, tmp_path / "coll", 4)
    queries = [text for _, text in ds.queries][:20]  # type: ignore[attr-defined]
    with ShardedKnowledgeBase.open(tmp_path / "coll") as coll:
        for q in queries:
            for mode in ("vector", "hybrid"):
                _same(kb.search(q, mode=mode), coll.search(q, mode=mode))
    kb.close()


def _small_collection(root: Path, shards: int = 3) -> Path:
    kb = kbdb.KnowledgeBase.init(root / "one")
    kb.learn_many(
        kbdb.LearnItem(f"# Note {i}\n\nThe build {i} uses cache layer {i % 7}.", docid=f"n{i}")
        for i in range(60)
    )
    kb.close()
    layout.create(root / "one" / ".kbdb", root / "coll", shards)
    return root / "coll"


def test_writes_go_to_the_owning_shard_and_read_back(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    lay = layout.load(coll_path)
    with ShardedKnowledgeBase.open(coll_path) as coll:
        rep = coll.learn("# Pager\n\nThe pager rotates weekly.", docid="oncall/pager")
        kbid = rep.sections[0].kbid
        hit = coll.search("pager rotates").items[0]
        assert hit.kbid == kbid and hit.docids == ("oncall/pager",)
        assert "The pager rotates" in coll.recall(kbid).sections[0].content
        owner = kbdb.KnowledgeBase.open(lay.shard_dir(lay.route("oncall/pager")))
        assert "oncall/pager" in _docids(owner)
        owner.close()
        assert coll.forget(kbid).retired == (kbid,)
        assert coll.search("pager rotates").total == 0
        # Without a docid, the one learn would derive from the title routes it.
        made = coll.learn_many([kbdb.LearnItem("# Standup\n\nAt ten.", title="Standup")])
        assert coll.recall(made.sections[0].kbid).sections[0].heading == "Standup"
        with pytest.raises(InvalidArgumentError, match="not supported on a sharded"):
            coll.outline("oncall/pager")


def test_check_finds_a_document_in_the_wrong_shard(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    lay = layout.load(coll_path)
    docid = next(f"stray{i}" for i in range(100) if lay.route(f"stray{i}") != 0)
    wrong = kbdb.KnowledgeBase.open(lay.shard_dir(0))
    wrong.learn("# Stray\n\nLearned into the wrong shard.", docid=docid)
    wrong.close()
    problems = layout.check(lay)
    assert [(p.shard, p.code, p.docid) for p in problems] == [(0, "SHARD_MISROUTED", docid)]
    out = subprocess.run(
        [sys.executable, "-m", "kbdb.cli", "--json", "shard", "check", str(coll_path)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert json.loads(out.stdout)["problems"][0]["code"] == "SHARD_MISROUTED"


def test_missing_corrupt_and_mismatched_shards_are_named(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    lay = layout.load(coll_path)
    # Corrupt: an index file of shard 1 overwritten.
    seg = next((lay.shard_dir(1) / ".kbdb" / "indexes").rglob("*.seg"))
    seg.write_bytes(b"\0" * seg.stat().st_size)
    with pytest.raises(kbdb.KbdbError, match="shard 1"), ShardedKnowledgeBase.open(coll_path) as c:
        c.search("build cache")
    # Missing: shard 2's folder gone.
    shutil.rmtree(lay.shard_dir(2))
    with pytest.raises(KbNotFoundError, match="shard 2"):
        ShardedKnowledgeBase.open(coll_path)
    with pytest.raises(KbNotFoundError, match="shards.toml"):
        layout.load(tmp_path)


def test_create_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    with pytest.raises(InvalidArgumentError, match="not an empty folder"):
        layout.create(tmp_path / "one" / ".kbdb", coll_path, 2)
    with pytest.raises(InvalidArgumentError, match="1..1024"):
        layout.create(tmp_path / "one" / ".kbdb", tmp_path / "new", 0)


def test_learn_path_routes_each_file_to_its_shard(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    lay = layout.load(coll_path)
    tree = tmp_path / "tree"
    for i in range(12):
        (tree / f"d{i % 3}").mkdir(parents=True, exist_ok=True)
        (tree / f"d{i % 3}" / f"page{i}.md").write_text(
            f"# Page {i}\n\nRunbook step {i} restarts the ingest worker.\n", encoding="utf-8"
        )
    (tree / "bad.md").write_bytes(b"\xff\xfe not utf-8")
    with ShardedKnowledgeBase.open(coll_path) as coll:
        rep = coll.learn_path(tree)
        assert rep.documents_added == 12
        assert [f.code for f in rep.files_skipped] == ["INVALID_UTF8"]
        # A second learn of the same tree changes nothing.
        assert coll.learn_path(tree).documents_unchanged == 12
        stats = coll.stats()
        assert stats.documents == 60 + 12
        assert len(stats.extra["shards"]) == 3
        docs = coll.documents(limit=1000)
        assert docs.total == 72 and [d.docid for d in docs.items] == sorted(
            d.docid for d in docs.items
        )
        hits = coll.search("runbook restarts ingest worker", limit=20)
        assert hits.total == 12
    assert layout.check(lay) == []


def test_cli_learn_into_a_collection(tmp_path: Path) -> None:
    coll_path = _small_collection(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "warm.md").write_text("# Warmup\n\nThe cache warms at boot.\n", encoding="utf-8")
    run = [sys.executable, "-m", "kbdb.cli", "--json", "learn", str(docs), "--shards"]
    out = subprocess.run([*run, str(coll_path)], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["documents_added"] == 1
    lay = layout.load(coll_path)
    owner = kbdb.KnowledgeBase.open(lay.shard_dir(lay.route("warm.md")))
    assert owner.search("cache warms boot").items[0].docids == ("warm.md",)
    owner.close()


def test_a_shard_with_a_stale_vector_index_makes_the_search_say_so(
    tmp_path: Path, model: Path
) -> None:
    kb = kbdb.KnowledgeBase.init(tmp_path / "one")
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(model))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "one")
    kb.learn_many(
        kbdb.LearnItem(f"# Alarm {i}\n\nAlarm {i} wakes the on-call engineer.", docid=f"a{i}")
        for i in range(30)
    )
    layout.create(kb.path, tmp_path / "coll", 3)
    lay = layout.load(tmp_path / "coll")
    for f in (lay.shard_dir(1) / ".kbdb" / "indexes").glob("vectors*"):
        f.unlink()
    with ShardedKnowledgeBase.open(tmp_path / "coll") as coll:
        res = coll.search("who gets woken up", mode="hybrid")
        # Never a fusion over two shards' vectors presented as the whole: lexical, said so.
        assert res.vector_index_stale is True and res.retrieval_method == "lexical"
        want = kb.search("who gets woken up", mode="lexical")
        assert [i.kbid for i in res.items] == [i.kbid for i in want.items]
    kb.close()
