"""``kb.gc()`` (SPEC §8.2): what goes, what stays, and a dry run that matches the real run."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.test_check import GUIDE, kbid_of, sql

import kbdb
from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.index.vectors import embedding_text, text_sha


def dump(kb: kbdb.KnowledgeBase) -> list[str]:
    con = sqlite3.connect(kb.path / "kb.sqlite")
    try:
        return list(con.iterdump())
    finally:
        con.close()


def comparable(res: kbdb.types.GcReport) -> dict[str, Any]:
    d = res.to_dict()
    for k in ("dry_run", "bytes_freed", "elapsed_ms"):
        d.pop(k)
    return d


@pytest.fixture
def messy(kb: kbdb.KnowledgeBase) -> kbdb.KnowledgeBase:
    """Orphans, an orphan document, dead links, retired history, several segments."""
    kb.learn(GUIDE, docid="guide", tags=["doc"])
    kb.learn("# Fact\n\nWater boils at 100 C.", docid="facts")
    kb.learn("# Fact\n\nWater boils at 100 C at sea level.", docid="facts", replace=True)
    kb.learn("# Lonely\n\nNobody links to me.", docid="lonely")
    kb.learn("# Gone\n\nThe document row goes away.", docid="gone")
    sql(kb, "DELETE FROM document_sections WHERE docid = 'lonely'")
    sql(kb, "DELETE FROM documents WHERE docid = 'gone'")  # its entries now dangle
    sql(
        kb,
        "INSERT INTO documents(docid, type, checksum, created_at, updated_at)"
        " VALUES ('empty', 'text/markdown', '', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
    )
    return kb


def test_dry_run_lists_what_the_real_run_removes_and_changes_nothing(
    messy: kbdb.KnowledgeBase,
) -> None:
    lonely, gone = kbid_of(messy, "Lonely"), kbid_of(messy, "Gone")
    before = dump(messy)
    dry = messy.gc(dry_run=True)
    assert dump(messy) == before
    # 'Lonely' is in no document; 'Gone' only in a document that no longer exists (its
    # entry dangles); document 'lonely' lost its only section and 'empty' never had one.
    assert dry.dry_run
    assert dry.removed == (
        *sorted([f"section:{lonely}", f"section:{gone}"]),
        "document:empty",
        "document:lonely",
    )
    assert dry.sections_removed == 2 and dry.documents_removed == 2
    assert dry.links_removed == 1

    real = messy.gc()
    assert not real.dry_run
    assert comparable(real) == comparable(dry)
    assert real.index_entries_removed >= 2  # the two sections' index entries
    for k in (lonely, gone):
        with pytest.raises(NotFoundError):
            messy.recall(k)
    assert messy.search("nobody links").total == 0
    assert messy.stats().index_segments == 1
    assert messy.check().ok
    again = messy.gc(dry_run=True)
    assert again.removed == () and again.links_removed == 0


def test_history_stays_unless_pruned(messy: kbdb.KnowledgeBase) -> None:
    old = kbid_of(messy, "Fact", live=False)
    messy.gc()
    assert messy.recall(old).sections[0].retired  # still readable history

    dry = messy.gc(dry_run=True, prune_retired=True)
    assert dry.removed == (f"section:{old}",)
    real = messy.gc(prune_retired=True)
    assert comparable(real) == comparable(dry)
    with pytest.raises(NotFoundError):
        messy.recall(old)
    assert messy.check().ok


def test_older_than_keeps_recent_retirements(messy: kbdb.KnowledgeBase) -> None:
    old = kbid_of(messy, "Fact", live=False)
    assert messy.gc(dry_run=True, prune_retired=True, older_than_days=30).removed[:1] != (
        f"section:{old}",
    )
    sql(messy, "UPDATE sections SET retired_at = '2020-01-01T00:00:00Z' WHERE kbid = ?", (old,))
    assert (
        f"section:{old}" in messy.gc(dry_run=True, prune_retired=True, older_than_days=30).removed
    )


def test_pruning_keeps_a_retired_parent_of_a_kept_section(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(GUIDE, docid="guide")
    guide = kbid_of(kb, "Guide")
    install = kbid_of(kb, "Install")
    sql(kb, "UPDATE sections SET retired_at = '2020-01-01T00:00:00Z' WHERE kbid = ?", (guide,))
    sql(kb, "UPDATE document_sections SET live = 0 WHERE kbid = ?", (guide,))
    res = kb.gc(prune_retired=True)
    assert res.removed == ()
    assert kb.recall(install).sections[0].parent == guide
    assert kb.check().ok


def test_pruning_a_predecessor_unlinks_its_successor_chain(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# Fact\n\nv1", docid="f")
    kb.learn("# Fact\n\nv2", docid="f", replace=True)
    kb.learn("# Fact\n\nv3", docid="f", replace=True)
    v1 = sql(kb, "SELECT kbid FROM sections WHERE content LIKE '%v1'")[0][0]
    v2 = sql(kb, "SELECT kbid FROM sections WHERE content LIKE '%v2'")[0][0]
    sql(kb, "UPDATE sections SET retired_at = '2020-01-01T00:00:00Z' WHERE kbid = ?", (v2,))
    res = kb.gc(prune_retired=True, older_than_days=365)
    assert res.removed == (f"section:{v2}",)
    assert kb.recall(v1).sections[0].superseded_by is None
    assert kb.check().ok


def test_unused_embedding_cache_rows_go(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# Keep\n\nThis section's cached vector stays.", docid="k")
    row = sql(kb, "SELECT heading, content, type, title, description FROM sections")[0]
    kept = text_sha(embedding_text(*row) or "")
    sql(kb, "INSERT INTO embeddings VALUES (?, 'm', x'00000000')", (kept,))
    sql(kb, "INSERT INTO embeddings VALUES ('deadbeef', 'm', x'00000000')")
    dry = kb.gc(dry_run=True)
    assert dry.cache_entries_removed == 1
    assert kb.gc().cache_entries_removed == 1
    assert sql(kb, "SELECT text_sha FROM embeddings") == [(kept,)]


def test_near_duplicate_signatures_of_removed_sections_go(kb: kbdb.KnowledgeBase) -> None:
    kb.learn("# Lonely\n\nA section that will lose its only document link.", docid="l")
    k = kbid_of(kb, "Lonely")
    has_table = sql(kb, "SELECT 1 FROM sqlite_master WHERE name = 'neardup_sections'")
    if not has_table:
        pytest.fail("learn no longer writes near-duplicate signatures; update this test")
    assert sql(kb, "SELECT COUNT(*) FROM neardup_sections WHERE kbid = ?", (k,)) == [(1,)]
    sql(kb, "DELETE FROM document_sections WHERE kbid = ?", (k,))
    kb.gc()
    assert sql(kb, "SELECT COUNT(*) FROM neardup_sections WHERE kbid = ?", (k,)) == [(0,)]


def test_gc_merges_segments_and_frees_space(kb: kbdb.KnowledgeBase) -> None:
    for i in range(6):
        kb.learn(f"# Note {i}\n\nsome words about topic {i} " + "filler " * 200, docid=f"n{i}")
    for i in range(3):
        kb.learn(f"# Note {i}\n\nreplaced {i}", docid=f"n{i}", replace=True)
    before = [i.kbid for i in kb.search("topic", limit=20).items]
    res = kb.gc(prune_retired=True)
    assert res.sections_removed == 3 and res.bytes_freed > 0
    assert kb.stats().index_segments == 1
    assert [i.kbid for i in kb.search("topic", limit=20).items] == before
    assert kb.check().ok


def test_older_than_needs_prune_retired(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(InvalidArgumentError):
        kb.gc(older_than_days=3)
    with pytest.raises(InvalidArgumentError):
        kb.gc(prune_retired=True, older_than_days=-1)


def test_gc_drops_vectors_of_removed_sections(tmp_path: Path) -> None:
    from tests.embedding.conftest import find_test_model

    from kbdb.config import set_value

    kb = kbdb.KnowledgeBase.init(tmp_path / "vkb")
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(find_test_model()))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "vkb")
    try:
        kb.learn(GUIDE, docid="guide")
        kb.learn("# Lonely\n\nNobody links to me.", docid="lonely")
        lonely = kbid_of(kb, "Lonely")
        sql(kb, "DELETE FROM document_sections WHERE kbid = ?", (lonely,))
        dry = kb.gc(dry_run=True)
        real = kb.gc()
        assert comparable(real) == comparable(dry)
        vindex = kb.context.vectors.index()
        assert vindex is not None and lonely not in vindex.kbids()
        assert vindex.side_count == 0 and vindex.count == 3
        assert kb.search("nobody links", mode="vector").items[0].kbid != lonely
        assert kb.check().ok and kb.check().warnings == ()
    finally:
        kb.close()
