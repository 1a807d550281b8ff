"""The read cache of search hydration (store/db.py ``ReadCache``): repeated searches skip
SQLite, and no commit, from this connection, another one or another process, is ever
hidden by it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest

import kbdb
from kbdb.store import db as store_db

SHARED = "# Okapi\n\nthe okapi lives in the forest"


def _statements(kb: kbdb.KnowledgeBase) -> list[str]:
    seen: list[str] = []
    kb.context.db.conn().set_trace_callback(seen.append)
    return seen


def test_a_repeated_search_reads_no_rows_and_returns_the_same_result(
    kb: kbdb.KnowledgeBase,
) -> None:
    for i in range(12):
        kb.learn(f"# Note {i}\n\nthe okapi note number {i}", docid=f"n{i}", tags=[f"t{i}"])
    first = kb.search("okapi note", limit=5)
    seen = _statements(kb)
    second = kb.search("okapi note", limit=5)
    assert second == first
    assert second.to_dict() == first.to_dict()
    reads = [s for s in seen if "FROM sections" in s or "FROM document_sections" in s]
    assert reads == []
    assert any("data_version" in s for s in seen)  # checked once in the snapshot


def test_a_write_in_this_process_is_seen_by_the_next_search(kb: kbdb.KnowledgeBase) -> None:
    # The same section learned from a second document: only the links and tags change
    # (no index change), and this connection's data_version does not move on its own
    # commit; the process's write count does.
    kb.learn(SHARED, docid="one", tags=["a"])
    item = kb.search("okapi").items[0]
    assert (item.docids, item.tags) == (("one",), ("a",))
    kb.learn(SHARED, docid="two", tags=["b"])
    item = kb.search("okapi").items[0]
    assert (item.docids, item.tags) == (("one", "two"), ("a", "b"))


def test_a_commit_on_another_connection_is_seen_by_the_next_search(
    kb: kbdb.KnowledgeBase,
) -> None:
    kb.learn(SHARED, docid="one", tags=["a"])
    item = kb.search("okapi").items[0]
    assert item.tags == ("a",)
    # A change the index never hears of: only the database knows.
    other = sqlite3.connect(kb.path / "kb.sqlite", isolation_level=None)
    other.execute("INSERT INTO section_tags(kbid, tag) VALUES (?, 'z')", (item.kbid,))
    other.close()
    assert kb.search("okapi").items[0].tags == ("a", "z")


def test_another_thread_and_another_process_are_seen(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(SHARED, docid="one")
    assert kb.search("okapi").items[0].docids == ("one",)
    worker = threading.Thread(target=lambda: kb.learn(SHARED, docid="two"))
    worker.start()
    worker.join()
    assert kb.search("okapi").items[0].docids == ("one", "two")
    script = (
        f"import sys, kbdb; kbdb.KnowledgeBase.open(sys.argv[1]).learn({SHARED!r}, docid='three')"
    )
    subprocess.run([sys.executable, "-c", script, str(kb.path)], check=True)
    assert kb.search("okapi").items[0].docids == ("one", "three", "two")


def test_the_cache_serves_read_snapshots_only(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(SHARED, docid="one")
    db = kb.context.db
    assert db.cache() is None  # autocommit: no snapshot to check against
    with db.write():
        assert db.cache() is None  # uncommitted changes must not be kept
        with db.read():
            assert db.cache() is None
    with db.read():
        cache = db.cache()
        assert cache is not None
        assert db.cache() is cache
    db.close()
    with db.read():
        assert db.cache() is not cache  # a new connection counts its versions afresh


def test_a_read_snapshot_is_entered_once(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(SHARED, docid="one")
    snapshot = kb.context.db.read()
    with snapshot as conn:
        with pytest.raises(RuntimeError, match="entered only once"), snapshot:
            pass
        # The outer snapshot is still open, and closes cleanly.
        assert conn.in_transaction
    assert not conn.in_transaction
    with kb.context.db.read() as again:  # a new one each time
        assert again.in_transaction


def test_the_cache_is_emptied_past_its_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = store_db.ReadCache()
    rows = cache.table("rows")
    links = cache.table("links")
    monkeypatch.setattr(store_db, "CACHE_ENTRIES", 2)
    cache.put(rows, "a", 1, 1)
    cache.put(links, "a", 1, 1)
    cache.put(rows, "b", 2, 1)
    cache.put(rows, "c", 3, 1)  # rows is full: everything goes, then c is kept
    assert (rows, links) == ({"c": 3}, {})
    monkeypatch.setattr(store_db, "CACHE_ENTRIES", 100)
    monkeypatch.setattr(store_db, "CACHE_BYTES", 160)
    cache.clear()
    cache.put(rows, "huge", 0, 11)  # more than a sixteenth of the bound: not kept
    assert (rows, cache.bytes) == ({}, 0)
    for i in range(16):
        cache.put(rows, i, i, 10)
    assert (len(rows), cache.bytes) == (16, 160)
    cache.put(rows, 16, 16, 10)  # 170 bytes: emptied, then this one kept
    assert (rows, cache.bytes) == ({16: 16}, 10)


@pytest.mark.parametrize("text", ["plain ascii " * 50, "café " * 100, "数据库 " * 100, "🎉" * 300])
def test_text_bytes_bounds_what_a_cached_text_holds_after_a_snippet(text: str) -> None:
    # The engine reads a str as UTF-8, which CPython keeps attached to a non-ASCII str for
    # its lifetime: the cache's estimate must cover that copy too.
    estimate = store_db.text_bytes(text)
    kbdb_core_analyzer().snippets([(text, None, [0])], [["x"]], width=50)
    assert sys.getsizeof(text) <= estimate


def kbdb_core_analyzer() -> object:
    from kbdb import _core

    return _core.Analyzer()
