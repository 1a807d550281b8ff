"""The ``anchor`` field: a section's anchor text (the labels of the links in other notes that
point at it), from ``section_anchors`` into the lexical index, scored, tunable and
explained; and what an index written before the field does after an upgrade."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import kbdb
from kbdb.config import Config, SearchConfig
from kbdb.errors import IndexFormatError
from kbdb.search.fields import index_fields
from kbdb.store import queries as q

# Test data: a lexical index written by kbdb before the anchor field (README there).
FORMAT_4 = Path(__file__).parent / "data" / "lexical-format-4"

DEPLOY = "How to roll the service out to production, one region at a time."


def _learn(kb: kbdb.KnowledgeBase) -> str:
    """Two notes; the kbid of the one the anchor text will point at."""
    kbid = kb.learn(DEPLOY, title="Deploy guide").sections[0].kbid
    kb.learn("Cats sleep most of the day and hunt at dusk.", title="Cats")
    return kbid


def _set_anchor(kb: kbdb.KnowledgeBase, kbid: str, text: str | None) -> None:
    """What link resolution does when a section's anchor text changes: the row, and a
    change-log ``add`` of the section in the same transaction (None: the row goes)."""
    with kb.context.db.write() as conn:
        if text is None:
            conn.execute("DELETE FROM section_anchors WHERE kbid = ?", (kbid,))
        else:
            conn.execute(
                "INSERT INTO section_anchors(kbid, text) VALUES (?, ?)"
                " ON CONFLICT(kbid) DO UPDATE SET text = excluded.text",
                (kbid, text),
            )
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))


def _found(kb: kbdb.KnowledgeBase, query: str) -> list[str]:
    return [i.kbid for i in kb.search(query).items]


def test_index_fields_returns_the_anchor_text_last() -> None:
    fields = index_fields("Deploy", "Roll it out.", "text/markdown", None, None)
    assert len(fields) == 5 and fields[4] == ""
    with_anchor = index_fields(
        "Deploy", "Roll it out.", "text/markdown", None, None, anchor="release runbook"
    )
    assert with_anchor[:4] == fields[:4] and with_anchor[4] == "release runbook"


def test_a_word_only_in_the_anchor_text_finds_the_section(kb: kbdb.KnowledgeBase) -> None:
    kbid = _learn(kb)
    assert _found(kb, "runbook") == []
    _set_anchor(kb, kbid, "release runbook")
    res = kb.search("runbook", explain=True)
    assert [i.kbid for i in res.items] == [kbid]
    item = res.items[0]
    assert item.matched_fields == ("anchor",)
    assert item.explain is not None
    parts = item.explain["bm25f"]
    assert [(p["term"], p["field"]) for p in parts] == [("runbook", "anchor")]
    assert parts[0]["score"] == pytest.approx(item.score, rel=1e-5)
    # Beside the body: both fields' parts, summing to the score.
    both = kb.search("release production", explain=True).items[0]
    assert both.kbid == kbid
    assert both.explain is not None
    fields = {p["field"] for p in both.explain["bm25f"]}
    assert fields == {"anchor", "body"}
    assert sum(p["score"] for p in both.explain["bm25f"]) == pytest.approx(both.score, rel=1e-4)


def test_anchor_text_weighs_like_the_configured_weight(kb: kbdb.KnowledgeBase) -> None:
    kbid = _learn(kb)
    _set_anchor(kb, kbid, "release runbook")
    path = kb.path
    default_score = kb.search("runbook").items[0].score
    kb.close()
    heavy = kbdb.KnowledgeBase.open(path, config=Config(search=SearchConfig(w_anchor=6.0)))
    try:
        assert heavy.search("runbook").items[0].score > default_score
    finally:
        heavy.close()
    # Weight 0 turns the field off: a section matched only there is no result...
    off = kbdb.KnowledgeBase.open(path, config=Config(search=SearchConfig(w_anchor=0.0)))
    try:
        res = off.search("runbook")
        assert res.items == () and res.total == 0
        assert res.retrieval_verdict == "unanswered"
        # ...while the rest of its text still finds it, scored as without anchor text.
        assert _found(off, "production region") == [kbid]
    finally:
        off.close()


def test_changing_the_anchor_text_reindexes_the_section(kb: kbdb.KnowledgeBase) -> None:
    kbid = _learn(kb)
    _set_anchor(kb, kbid, "release runbook")
    assert _found(kb, "runbook") == [kbid]
    _set_anchor(kb, kbid, "deployment checklist")
    assert _found(kb, "runbook") == []
    assert _found(kb, "checklist") == [kbid]
    _set_anchor(kb, kbid, None)
    assert _found(kb, "checklist") == []
    assert _found(kb, "production") == [kbid]
    assert kb.check().ok


def test_rebuild_keeps_the_anchor_text(kb: kbdb.KnowledgeBase) -> None:
    kbid = _learn(kb)
    _set_anchor(kb, kbid, "release runbook")
    before = kb.search("runbook").items
    kb.rebuild()
    after = kb.search("runbook").items
    assert [i.kbid for i in after] == [kbid]
    assert after[0].score == before[0].score
    with kb.context.db.read() as conn:
        assert q.anchor_texts(conn, [kbid, "0" * 32]) == {kbid: "release runbook"}


def test_anchor_texts_reads_many_kbids_in_chunks(kb: kbdb.KnowledgeBase) -> None:
    with kb.context.db.write() as conn:
        conn.executemany(
            "INSERT INTO section_anchors(kbid, text) VALUES (?, ?)",
            [(f"{i:032x}", f"label {i}") for i in range(0, 3000, 3)],
        )
    kbids = [f"{i:032x}" for i in range(3000)]
    with kb.context.db.read() as conn:
        found = q.anchor_texts(conn, kbids)
        assert q.anchor_texts(conn, []) == {}
    assert len(found) == 1000
    assert found[f"{2997:032x}"] == "label 2997" and f"{1:032x}" not in found


def test_a_database_without_the_anchor_table_indexes_and_gains_it(tmp_path: Path) -> None:
    """A knowledge base that an older kbdb wrote has no ``section_anchors`` until its first
    write here: catching up and rebuilding read it as empty, and that write adds it."""
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    kbid = _learn(kb)
    path = kb.path
    kb.close()
    with sqlite3.connect(path / "kb.sqlite") as conn:
        conn.execute("DROP TABLE section_anchors")
        conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))
    old = kbdb.KnowledgeBase.open(path)
    try:
        assert _found(old, "production") == [kbid]  # caught up without the table
        old.rebuild()
        assert _found(old, "production") == [kbid]
        old.learn("Dogs bark at the mail carrier.", title="Dogs")  # the first write
        _set_anchor(old, kbid, "release runbook")
        assert _found(old, "runbook") == [kbid]
    finally:
        old.close()


def test_an_index_in_the_previous_format_says_rebuild_and_rebuild_fixes_it(
    tmp_path: Path,
) -> None:
    """Segment format 4 (before the anchor field), as the kbdb before it wrote it: searches
    and learns say ``INDEX_CORRUPT`` with the ``kbdb rebuild`` hint, ``check`` names it
    ``index_format_old``, and ``rebuild`` indexes everything, anchor text included."""
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    kbid = kb.learn("Writers serialize on the lock file.", title="Locking").sections[0].kbid
    assert kbid == "c7155fbfd4712208875689e2274316eb"  # the note the old index holds
    path = kb.path
    kb.close()
    index_dir = path / "indexes"
    for old in index_dir.glob("seg-*"):
        old.unlink()
    for f in FORMAT_4.iterdir():
        if f.name != "README.md":
            shutil.copy(f, index_dir / f.name)

    upgraded = kbdb.KnowledgeBase.open(path)
    try:
        with pytest.raises(IndexFormatError) as err:
            upgraded.search("writers")
        assert err.value.code == "INDEX_CORRUPT"
        assert "format version 4" in err.value.message
        assert "kbdb rebuild" in str(err.value)
        report = upgraded.check()
        assert "index_format_old" in [e.code for e in report.errors], report
        _set_anchor(upgraded, kbid, "locking rules")  # kb.sqlite takes it meanwhile
        upgraded.rebuild()
        assert _found(upgraded, '"writers serialize"') == [kbid]
        assert _found(upgraded, "rules") == [kbid]
        assert upgraded.check().ok
    finally:
        upgraded.close()
