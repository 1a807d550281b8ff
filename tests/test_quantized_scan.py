"""``[embedding] quantized_scan = true``: vector search through the int8 copy
``vectors.q8`` returns the exact scan's results on a real-model corpus (tldr pages,
all-MiniLM-L6-v2), side files, tombstones and filters included; the copy is built when
the option is turned on, checked by ``kbdb check``, and repaired by ``kbdb rebuild``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.embedding.conftest import find_test_model

import kbdb
from kbdb._core import VectorIndex
from kbdb.config import set_value
from kbdb.errors import IndexCorruptError

# Beside the checkout, else the workplace copy (as .ci/run finds the model).
TLDR = next(
    (
        p
        for p in (
            Path(__file__).resolve().parents[2] / "shared/corpora/tldr/pages",
            Path("/work/shared/corpora/tldr/pages"),
        )
        if p.is_dir()
    ),
    Path("/work/shared/corpora/tldr/pages"),
)
PAGES = 400
QUERIES = [
    "compress a folder into an archive",
    "show running processes",
    "copy files to a remote server over ssh",
    "list the contents of a directory",
    "search text inside files",
    "change file permissions",
    "download a file from the web",
    "manage docker containers",
    "show disk usage",
    "edit text in the terminal",
    "convert video formats",
    "version control commits and branches",
    "kill a process by name",
    "display network interfaces",
    "schedule a recurring job",
    "install packages with a package manager",
    "monitor system resources",
    "create a symbolic link",
    "decompress a tarball",
    "count lines in a file",
]


def _corpus() -> list[Path]:
    pages = sorted(TLDR.glob("common/*.md")) + sorted(TLDR.glob("linux/*.md"))
    if len(pages) < PAGES:
        pytest.skip("the tldr corpus is not available")
    return pages[:PAGES]


def _open(root: Path, quantized: bool) -> kbdb.KnowledgeBase:
    set_value(root / ".kbdb" / "worker.toml", "embedding.quantized_scan", str(quantized).lower())
    return kbdb.KnowledgeBase.open(root)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A knowledge base of tldr pages embedded once (quantized scan off)."""
    model = find_test_model()
    root = tmp_path_factory.mktemp("q8") / "kb"
    kb = kbdb.KnowledgeBase.init(root)
    cfg = kb.path / "worker.toml"
    set_value(cfg, "embedding.provider", "onnx")
    set_value(cfg, "embedding.model_path", str(model))
    kb.close()
    kb = kbdb.KnowledgeBase.open(root)
    kb.rebuild()  # create the vector index now (learn builds it only for small KBs)
    items = [
        kbdb.LearnItem(
            p.read_text(encoding="utf-8"), docid=f"{p.parent.name}-{p.stem}", tags=(p.parent.name,)
        )
        for p in _corpus()
    ]
    kb.learn_many(items)
    kb.rebuild(lexical=False)
    kb.close()
    return root


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Iterator[Path]:
    dest = tmp_path / "kb"
    shutil.copytree(built, dest)
    yield dest


def _q8(root: Path) -> Path:
    return root / ".kbdb" / "indexes" / "vectors.q8"


def _vector_hits(kb: kbdb.KnowledgeBase, **kw: object) -> list[list[tuple[str, float]]]:
    return [
        [(h.kbid, h.score) for h in kb.search(q, mode="vector", limit=10, **kw).items]  # type: ignore[arg-type]
        for q in QUERIES
    ]


def test_quantized_results_equal_exact_on_a_real_model_corpus(root: Path) -> None:
    kb = _open(root, quantized=False)
    exact = _vector_hits(kb)
    kb.close()
    assert not _q8(root).exists()
    kb = _open(root, quantized=True)
    got = _vector_hits(kb)  # the first search builds vectors.q8 (option turned on)
    index = kb.context.vectors.index()
    assert index is not None and index.quantized_ready and _q8(root).exists()
    assert index.q8_status() == "current"
    assert got == exact
    kb.close()


def test_candidates_recall_on_real_embeddings(root: Path) -> None:
    """Recall@10 of the integer candidates alone (fewer than the default) on real
    vectors, and identical results with the default count."""
    kb = _open(root, quantized=True)
    kb.search("warm up", mode="vector")
    vecs = kb.context.vectors.provider.embed(QUERIES)
    kb.close()
    index = VectorIndex.open(str(root / ".kbdb" / "indexes"), quantized_scan=True)
    assert index.quantized_ready
    hits = total = 0
    for q in vecs:
        q = np.ascontiguousarray(q, dtype=np.float32)
        exact = index.search(q, limit=10, exact=True)
        assert index.search(q, limit=10) == exact
        few = index.search(q, limit=10, candidates=25)
        hits += len(set(few[0]) & set(exact[0]))
        total += len(exact[0])
    assert hits / total >= 0.99, f"recall {hits}/{total} with 25 candidates"


def test_side_files_tombstones_and_filters_behave_the_same(root: Path) -> None:
    kb = _open(root, quantized=True)
    kb.search("warm up", mode="vector")
    extra = sorted(TLDR.glob("osx/*.md"))[:30]
    kb.learn_many(
        kbdb.LearnItem(p.read_text(encoding="utf-8"), docid=f"osx-{p.stem}", tags=("osx",))
        for p in extra
    )
    first = kb.search("list files", mode="vector", limit=20).items
    kb.forget(*[h.kbid for h in first[:5]])
    index = kb.context.vectors.index()
    assert index is not None and index.side_count > 0 and index.quantized_ready
    filters: list[dict[str, object]] = [{}, {"tags": ["osx"]}, {"tags": ["linux"]}]
    got = [_vector_hits(kb, **f) for f in filters]
    kb.close()
    kb = _open(root, quantized=False)
    want = [_vector_hits(kb, **f) for f in filters]
    kb.close()
    assert got == want
    forgotten = {h.kbid for h in first[:5]}
    assert not any(k in forgotten for hits in got for q in hits for k, _ in q)


def test_damaged_q8_is_index_corrupt_and_rebuild_repairs_it(root: Path) -> None:
    kb = _open(root, quantized=True)
    kb.search("warm up", mode="vector")
    assert kb.check().ok
    kb.close()
    data = bytearray(_q8(root).read_bytes())
    data[len(data) // 2] ^= 0x10
    _q8(root).write_bytes(bytes(data))
    kb = _open(root, quantized=True)
    with pytest.raises(IndexCorruptError):
        kb.search("show disk usage", mode="vector")
    report = kb.check()
    assert not report.ok
    assert any(i.code == "checksum_mismatch" and "vectors.q8" in i.detail for i in report.errors)
    kb.rebuild()
    assert kb.check().ok
    assert kb.search("show disk usage", mode="vector").items
    index = kb.context.vectors.index()
    assert index is not None and index.q8_status() == "current"
    kb.close()


def test_check_warns_until_built_and_off_removes_it_at_rebuild(root: Path) -> None:
    kb = _open(root, quantized=True)
    report = kb.check()
    assert report.ok
    assert any("vectors.q8" in w.detail for w in report.warnings)
    kb.rebuild(lexical=False)
    assert _q8(root).exists()
    assert not any("vectors.q8" in w.detail for w in kb.check().warnings)
    kb.close()
    kb = _open(root, quantized=False)
    kb.rebuild(lexical=False)
    assert not _q8(root).exists()
    kb.close()
