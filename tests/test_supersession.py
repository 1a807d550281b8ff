"""Re-learning, duplicates and supersession (SPEC §3), and index catch-up (DESIGN §3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import write

import kbdb

V1 = (
    "# Guide\n\n## Install\n\nRun pip install kbdb.\n\n"
    "## Usage\n\nCall kbdb search.\n\n## Old\n\nGone soon.\n"
)
V2 = "# Guide\n\n## Install\n\nRun pipx install kbdb.\n\n## Usage\n\nCall kbdb search.\n"


def test_relearn_file_supersedes_changed_and_retires_vanished(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    f = write(tmp_path / "src", "guide.md", V1)
    first = kb.learn_path(f)
    by_heading = {s.heading: s.kbid for s in first.sections}
    again = kb.learn_path(f)
    assert again.documents_unchanged == 1 and again.sections_added == 0

    f.write_text(V2)
    second = kb.learn_path(f)
    assert second.documents_updated == 1
    new_install = next(s for s in second.sections if s.heading == "Install")
    assert new_install.superseded == by_heading["Install"]
    assert second.sections_retired == 2  # Install (superseded) and Old (vanished)
    usage = next(s for s in second.sections if s.heading == "Usage")
    assert usage.kbid == by_heading["Usage"] and usage.status == "unchanged"

    old = kb.recall(by_heading["Install"]).sections[0]
    assert old.retired and old.superseded_by == new_install.kbid
    assert old.docids == ("guide.md",)
    vanished = kb.recall(by_heading["Old"]).sections[0]
    assert vanished.retired and vanished.superseded_by is None

    assert kb.search("pip").items == () or all(
        i.kbid != by_heading["Install"] for i in kb.search("pip").items
    )
    assert kb.search("pipx").items[0].kbid == new_install.kbid
    assert kb.search("gone soon").total == 0
    assert [s.heading for s in kb.recall(docid="guide.md").sections] == [
        "Guide",
        "Install",
        "Usage",
    ]


def test_same_content_new_docid_links_not_duplicates(kb: kbdb.KnowledgeBase) -> None:
    a = kb.learn("# Fact\n\nWater boils at 100 C.", docid="a", tags=["t1"])
    b = kb.learn("# Fact\n\nWater boils at 100 C.", docid="b", tags=["t2"])
    assert a.sections[0].kbid == b.sections[0].kbid
    assert b.sections_added == 0 and b.sections[0].status == "linked"
    assert kb.stats().sections == 1
    sec = kb.recall(a.sections[0].kbid).sections[0]
    assert set(sec.docids) == {"a", "b"} and set(sec.tags) == {"t1", "t2"}
    res = kb.search("water boils")
    assert res.total == 1


def test_shared_section_survives_when_one_document_drops_it(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    shared = "## Shared\n\nCommon paragraph about llamas.\n"
    f1 = write(tmp_path / "d", "one.md", "# One\n\n" + shared)
    write(tmp_path / "d", "two.md", "# Two\n\n" + shared)
    kb.learn_path(tmp_path / "d")
    f1.write_text("# One\n\nNothing shared any more.\n")
    kb.learn_path(f1)
    res = kb.search("llamas")
    assert res.total == 1 and res.items[0].docids == ("two.md",)


def test_replace_by_source_key(kb: kbdb.KnowledgeBase) -> None:
    r1 = kb.learn("We use MySQL.", title="DB choice", tags=["adr"])
    keep = kb.learn("We use MySQL.", title="DB choice")  # replace=False: same content, kept
    assert keep.sections[0].kbid == r1.sections[0].kbid
    r2 = kb.learn("We use Postgres for JSONB.", title="DB choice", replace=True)
    assert r2.sections[0].superseded == r1.sections[0].kbid
    assert kb.recall(r1.sections[0].kbid).sections[0].superseded_by == r2.sections[0].kbid
    assert kb.search("mysql").total == 0
    assert kb.search("postgres").total == 1
    r3 = kb.learn("We also use Redis.", title="DB choice")  # append without replace
    assert r3.sections[0].superseded is None
    assert kb.search("postgres").total == 1 and kb.search("redis").total == 1


def test_relearn_of_retired_content_revives_it(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    f = write(tmp_path, "x.md", "# X\n\nalpha content\n")
    kb.learn_path(f)
    f.write_text("# X\n\nbeta content\n")
    kb.learn_path(f)
    assert kb.search("alpha").total == 0
    f.write_text("# X\n\nalpha content\n")
    kb.learn_path(f)
    assert kb.search("alpha").total == 1
    assert kb.search("beta").total == 0


def test_bad_files_are_skipped_and_the_rest_goes_on(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    write(d, "good.md", "# Good\n\nfine text\n")
    (d / "bad.md").write_bytes(b"# Bad\n\n\xff\xfe invalid utf8\n")
    (d / "huge.md").write_text("x" * (kb.config.learn.max_file_bytes + 1))
    report = kb.learn_path(d)
    assert report.documents_added == 1
    skipped = {Path(s.path).name: s for s in report.files_skipped}
    assert set(skipped) == {"bad.md", "huge.md"}
    assert skipped["huge.md"].code == "CONTENT_TOO_LARGE"
    assert "bad.md" in skipped["bad.md"].reason or "utf" in skipped["bad.md"].reason.lower()
    assert kb.search("fine").total == 1


def test_index_catches_up_after_crash_between_commit_and_index(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    kb.learn("# Before\n\nfirst fact", docid="one")
    kb.close()
    # Simulate a writer killed after its database commit but before the index update:
    # the section and its change-log row exist, the index has not seen them.
    conn = sqlite3.connect(kb.path / "kb.sqlite")
    conn.execute(
        "INSERT INTO sections(kbid, heading, level, parent, content, type, section_type,"
        " created_at) VALUES ('ab' || lower(hex(randomblob(15))), 'After', 1, NULL,"
        " 'second fact about zebras', 'text/markdown', 'section', '2026-01-01T00:00:00Z')"
    )
    kbid = conn.execute("SELECT kbid FROM sections WHERE heading = 'After'").fetchone()[0]
    conn.execute(
        "INSERT INTO documents VALUES ('two', NULL, NULL, NULL, 'text/markdown', 'c',"
        " '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
    )
    conn.execute("INSERT INTO document_sections(docid, kbid, ord) VALUES ('two', ?, 0)", (kbid,))
    conn.execute("INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (kbid,))
    conn.commit()
    conn.close()
    reopened = kbdb.KnowledgeBase.open(kb.path)
    res = reopened.search("zebras")
    assert [i.kbid for i in res.items] == [kbid]
    assert reopened.stats().index_watermark == reopened.stats().changelog_seq
    reopened.close()


def test_deleted_index_folder_is_rebuilt_with_same_results(kb: kbdb.KnowledgeBase) -> None:
    import shutil

    for i in range(30):
        kb.learn(f"# Doc {i}\n\nrebuild topic number {i} " + "filler " * (i % 7), docid=f"d{i}")
    before = kb.search("rebuild topic", limit=20).to_dict()
    kb.close()
    shutil.rmtree(kb.path / "indexes")
    reopened = kbdb.KnowledgeBase.open(kb.path)
    after = reopened.search("rebuild topic", limit=20).to_dict()
    assert [i["kbid"] for i in after["items"]] == [i["kbid"] for i in before["items"]]
    assert [round(i["score"], 4) for i in after["items"]] == [
        round(i["score"], 4) for i in before["items"]
    ]
    reopened.close()


def test_corrupt_segment_gives_index_corrupt_and_rebuild_repairs(kb: kbdb.KnowledgeBase) -> None:
    from kbdb.errors import IndexCorruptError

    kb.learn("# Fact\n\nthe quick brown fox", docid="fox")
    kb.close()
    segments = sorted((kb.path / "indexes").glob("*.seg"))
    assert segments
    data = bytearray(segments[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    segments[0].write_bytes(bytes(data))
    broken = kbdb.KnowledgeBase.open(kb.path)
    try:
        broken.search("fox")
        raise AssertionError("a flipped byte must not go unnoticed")
    except IndexCorruptError as e:
        assert e.code == "INDEX_CORRUPT" and "rebuild" in str(e)
    broken.close()
    fixed = kbdb.KnowledgeBase.open(kb.path)
    assert fixed.rebuild().sections == 1
    assert fixed.search("fox").total == 1
    fixed.close()
