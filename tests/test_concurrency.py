"""Several processes on one knowledge base (SPEC §13, DESIGN §4)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kbdb
from kbdb.errors import KbLockedError

WRITER = textwrap.dedent(
    """
    import sys, kbdb
    kb = kbdb.KnowledgeBase.open(sys.argv[1])
    name = sys.argv[2]
    for i in range(int(sys.argv[3])):
        kb.learn(f"# {name} note {i}\\n\\nprocess {name} wrote fact number {i} about ferrets",
                 docid=f"{name}-{i}", tags=[name])
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KBDB_DB", None)
    return env


def test_two_processes_learning_at_once_lose_nothing(kb: kbdb.KnowledgeBase) -> None:
    n = 40
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(kb.path), name, str(n)], env=_env())
        for name in ("alpha", "beta")
    ]
    # A reader searches while they write: it must never fail.
    seen = 0
    while any(p.poll() is None for p in procs):
        seen = max(seen, kb.search("ferrets", limit=100).total)
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    res = kb.search("ferrets", limit=100)
    assert res.total == 2 * n
    assert kb.search("ferrets", tags=["alpha"], limit=100).total == n
    assert kb.search("ferrets", tags=["beta"], limit=100).total == n
    s = kb.stats()
    assert s.documents == 2 * n and s.index_watermark == s.changelog_seq


def test_writer_waits_then_fails_with_kb_locked(
    kb: kbdb.KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
            import fcntl, sys, time
            fd = open(sys.argv[1], "a")
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("held", flush=True)
            time.sleep(30)
            """
            ),
            str(kb.path / "write.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("KBDB_LOCK_TIMEOUT", "0.3")
        other = kbdb.KnowledgeBase.open(kb.path)
        with pytest.raises(KbLockedError) as e:
            other.learn("# Blocked\n\nthis waits", docid="blocked")
        assert e.value.code == "KB_LOCKED"
        # Readers take no lock.
        assert other.search("anything").total == 0
        other.close()
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    kb.learn("# Free\n\nnow it works", docid="free")
    assert kb.search("works").total == 1


def test_reader_in_other_process_sees_new_learns_without_reopen(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    kb.search("anything")  # open the index in this process first
    script = (
        "import sys, kbdb; "
        "kbdb.KnowledgeBase.open(sys.argv[1]).learn('# Late\\n\\nokapi', docid='late')"
    )
    subprocess.run([sys.executable, "-c", script, str(kb.path)], check=True, env=_env())
    assert kb.search("okapi").total == 1


def test_reader_survives_another_process_shrinking_the_database(
    kb: kbdb.KnowledgeBase,
) -> None:
    # Reads go through a memory map of kb.sqlite (store/db.py MMAP_BYTES). Another
    # process's gc vacuums and truncates the file under that map: this process must go on
    # reading the smaller file, never touch the pages cut off (SIGBUS), and see its rows.
    items = [
        kbdb.LearnItem(
            f"# Bulk {i}\n\n" + f"filler text number {i} about walruses " * 40, docid=f"bulk-{i}"
        )
        for i in range(400)
    ]
    kb.learn_many(items)
    kb.learn("# Keeper\n\nthe okapi stays", docid="keeper")
    conn = kb.context.db.conn()
    options = {r[0] for r in conn.execute("PRAGMA compile_options")}
    if "MAX_MMAP_SIZE=0" in options:
        pytest.skip("this SQLite is built without memory-mapped I/O")
    assert conn.execute("PRAGMA mmap_size").fetchone()[0] > 0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rows now live in the mapped file
    assert kb.search("walruses", limit=5).total == 400
    db_file = kb.path / "kb.sqlite"
    size_before = db_file.stat().st_size
    script = textwrap.dedent(
        """
        import sys, kbdb
        kb = kbdb.KnowledgeBase.open(sys.argv[1])
        for i in range(400):
            kb.forget(docid=f"bulk-{i}")
        kb.gc(prune_retired=True)
        """
    )
    subprocess.run([sys.executable, "-c", script, str(kb.path)], check=True, env=_env())
    assert db_file.stat().st_size < size_before / 2
    assert kb.search("walruses").total == 0
    res = kb.search("okapi")
    assert [it.docids for it in res.items] == [("keeper",)]
    assert kb.recall(res.items[0].kbid)
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_index_refresh_refuses_to_run_inside_a_read_snapshot(kb: kbdb.KnowledgeBase) -> None:
    # Inside a snapshot the database head can be older than an index another writer has
    # published since; a catch-up would then rebuild the index back to that head. Searches
    # refresh before they open their snapshot.
    kb.learn("# One\n\nthe okapi", docid="one")
    with kb.context.db.read():
        kb.context.db.conn().execute("SELECT 1 FROM sections").fetchall()
        with pytest.raises(RuntimeError, match="inside a database transaction"):
            kb.context.index.refresh()
    assert kb.search("okapi").total == 1


def test_a_search_skips_the_refresh_only_while_nothing_has_committed(
    kb: kbdb.KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lexical search runs in one snapshot without re-reading the head or the manifest
    # while the database is at the version where this thread last found the index in step
    # with it; a commit by another connection (process or thread), a write of its own or a
    # new connection sends it through the refresh again, and it sees the change.
    from kbdb.index.lexical import LexicalIndex

    refreshes = []
    original = LexicalIndex.refresh
    monkeypatch.setattr(
        LexicalIndex, "refresh", lambda self: (refreshes.append(1), original(self))[1]
    )
    kb.learn("# One\n\nthe okapi", docid="one")
    kb.search("okapi")
    refreshes.clear()
    for _ in range(3):
        assert kb.search("okapi").total == 1
    assert refreshes == []

    script = (
        "import sys, kbdb; "
        "kbdb.KnowledgeBase.open(sys.argv[1]).learn('# Two\\n\\nanother okapi', docid='two')"
    )
    subprocess.run([sys.executable, "-c", script, str(kb.path)], check=True, env=_env())
    assert kb.search("okapi").total == 2
    assert len(refreshes) == 1
    assert kb.search("okapi").total == 2
    assert len(refreshes) == 1

    import threading

    thread = threading.Thread(target=lambda: kb.learn("# Three\n\na third okapi", docid="three"))
    thread.start()
    thread.join()
    assert kb.search("okapi").total == 3
    assert len(refreshes) == 2

    kb.learn("# Four\n\na fourth okapi", docid="four")  # this connection writes
    assert kb.search("okapi").total == 4
    assert len(refreshes) == 3

    kb.context.db.close()  # a new connection agrees afresh
    assert kb.search("okapi").total == 4
    assert len(refreshes) == 4
    assert kb.search("okapi").total == 4
    assert len(refreshes) == 4


def test_an_index_published_without_a_commit_is_picked_up(
    kb: kbdb.KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A lexical rebuild in another process (the repair of a damaged index) publishes a new
    # manifest without committing to the database: the manifest's stat shows it, and the
    # next search refreshes and loads it.
    from kbdb.index.lexical import LexicalIndex

    kb.learn("# One\n\nthe okapi", docid="one")
    assert kb.search("okapi").total == 1
    generation = kb.context.index.core.generation
    refreshes = []
    original = LexicalIndex.refresh
    monkeypatch.setattr(
        LexicalIndex, "refresh", lambda self: (refreshes.append(1), original(self))[1]
    )
    assert kb.search("okapi").total == 1
    assert refreshes == []
    script = textwrap.dedent(
        """
        import sys, kbdb
        kb = kbdb.KnowledgeBase.open(sys.argv[1])
        with kb.context.lock.hold():
            kb.context.index.rebuild()
        """
    )
    subprocess.run([sys.executable, "-c", script, str(kb.path)], check=True, env=_env())
    assert kb.search("okapi").total == 1
    assert refreshes == [1]
    assert kb.context.index.core.generation > generation
