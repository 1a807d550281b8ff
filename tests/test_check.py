"""``kb.check()`` (SPEC §8.1): each error code from exactly its fault, made by tampering with
``kb.sqlite`` or the index files from outside, and the warnings."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kbdb
from kbdb.maintenance import check as check_mod

GUIDE = (
    "# Guide\n\nIntro text.\n\n## Install\n\nRun pip install kbdb.\n\n## Usage\n\nCall search.\n"
)


@pytest.fixture
def base(kb: kbdb.KnowledgeBase) -> kbdb.KnowledgeBase:
    kb.learn(GUIDE, docid="guide", tags=["doc"])
    kb.learn("# Fact\n\nWater boils at 100 C.", docid="facts")
    kb.learn("# Fact\n\nWater boils at 100 C at sea level.", docid="facts", replace=True)
    return kb


def sql(kb: kbdb.KnowledgeBase, stmt: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Tamper from outside, as another program would."""
    con = sqlite3.connect(kb.path / "kb.sqlite")
    try:
        with con:
            return con.execute(stmt, params).fetchall()
    finally:
        con.close()


def kbid_of(kb: kbdb.KnowledgeBase, heading: str, *, live: bool = True) -> str:
    cond = "IS NULL" if live else "IS NOT NULL"
    rows = sql(kb, f"SELECT kbid FROM sections WHERE heading = ? AND retired_at {cond}", (heading,))
    assert len(rows) == 1
    return str(rows[0][0])


def codes(report: kbdb.types.CheckReport) -> set[str]:
    return {i.code for i in report.errors}


def test_a_sound_knowledge_base_is_ok(base: kbdb.KnowledgeBase) -> None:
    res = base.check()
    assert res.ok and res.errors == () and res.warnings == ()
    assert res.checked["sections"] == 5 and res.checked["documents"] == 2
    assert res.checked["index_files"] >= 2
    assert res.to_dict()["ok"] is True


def test_progress_is_reported_up_to_the_total(base: kbdb.KnowledgeBase) -> None:
    seen: list[tuple[int, int]] = []
    base.check(progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (5, 5)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_checksum_mismatch_for_edited_content(base: kbdb.KnowledgeBase) -> None:
    k = kbid_of(base, "Install")
    sql(base, "UPDATE sections SET content = 'Run curl | sh.' WHERE kbid = ?", (k,))
    res = base.check()
    assert not res.ok and codes(res) == {"checksum_mismatch"}
    assert res.errors[0].kbid == k and "hashes to" in res.errors[0].detail


def test_checksum_mismatch_for_a_flipped_segment_byte(base: kbdb.KnowledgeBase) -> None:
    seg = sorted((base.path / "indexes").glob("seg-*.seg"))[0]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0x10
    seg.write_bytes(bytes(data))
    res = base.check()
    assert codes(res) == {"checksum_mismatch"}
    assert "lexical index" in res.errors[0].detail


def test_checksum_mismatch_for_a_damaged_manifest(base: kbdb.KnowledgeBase) -> None:
    meta = base.path / "indexes" / "meta.toml"
    meta.write_text(meta.read_text().replace("watermark = ", "watermark = 1"))
    res = base.check()
    assert codes(res) == {"checksum_mismatch"}


def test_orphan_section(base: kbdb.KnowledgeBase) -> None:
    k = kbid_of(base, "Usage")
    sql(base, "DELETE FROM document_sections WHERE kbid = ?", (k,))
    res = base.check()
    assert codes(res) == {"orphan_section"} and res.errors[0].kbid == k


def test_a_retired_section_in_a_history_chain_is_no_orphan(base: kbdb.KnowledgeBase) -> None:
    old = kbid_of(base, "Fact", live=False)
    sql(base, "DELETE FROM document_sections WHERE kbid = ?", (old,))
    assert base.check().ok  # superseded_by links it to its successor


def test_orphan_document(base: kbdb.KnowledgeBase) -> None:
    sql(
        base,
        "INSERT INTO documents(docid, type, checksum, created_at, updated_at)"
        " VALUES ('empty', 'text/markdown', '', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
    )
    res = base.check()
    assert codes(res) == {"orphan_document"} and res.errors[0].docid == "empty"


@pytest.mark.parametrize("what", ["parent", "superseded_by", "entry", "entry_doc"])
def test_broken_reference(base: kbdb.KnowledgeBase, what: str) -> None:
    missing = "f" * 32
    if what == "parent":
        sql(base, "UPDATE sections SET parent = ? WHERE heading = 'Usage'", (missing,))
    elif what == "superseded_by":
        old = kbid_of(base, "Fact", live=False)
        # keep it in a document so that it is not also an orphan
        sql(base, "UPDATE sections SET superseded_by = ? WHERE kbid = ?", (missing, old))
    elif what == "entry":
        sql(
            base,
            "INSERT INTO document_sections(docid, kbid, ord, live) VALUES ('guide', ?, 9, 1)",
            (missing,),
        )
    else:
        k = kbid_of(base, "Usage")
        sql(
            base,
            "INSERT INTO document_sections(docid, kbid, ord, live) VALUES ('ghost', ?, 0, 1)",
            (k,),
        )
    res = base.check()
    assert codes(res) == {"broken_reference"}, res.errors


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("level", "'deep'"),
        ("level", "9"),
        ("created_at", "'yesterday'"),
        ("section_type", "''"),
        ("content", "CAST(x'ff00' AS TEXT)"),
    ],
)
def test_type_mismatch(base: kbdb.KnowledgeBase, column: str, value: str) -> None:
    k = kbid_of(base, "Install")
    sql(base, f"UPDATE sections SET {column} = {value} WHERE kbid = ?", (k,))
    res = base.check()
    assert codes(res) == {"type_mismatch"}, res.errors
    assert column in res.errors[0].detail


def test_type_mismatch_for_a_live_section_marked_superseded(base: kbdb.KnowledgeBase) -> None:
    live = kbid_of(base, "Install")
    usage = kbid_of(base, "Usage")
    sql(base, "UPDATE sections SET superseded_by = ? WHERE kbid = ?", (usage, live))
    assert codes(base.check()) == {"type_mismatch"}


def test_circular_reference_in_parents(base: kbdb.KnowledgeBase) -> None:
    install, usage = kbid_of(base, "Install"), kbid_of(base, "Usage")
    sql(base, "UPDATE sections SET parent = ? WHERE kbid = ?", (usage, install))
    sql(base, "UPDATE sections SET parent = ? WHERE kbid = ?", (install, usage))
    res = base.check()
    assert codes(res) == {"circular_reference"}
    assert {i.kbid for i in res.errors} == {install, usage}


def test_circular_reference_in_supersession(base: kbdb.KnowledgeBase) -> None:
    old = kbid_of(base, "Fact", live=False)
    new = kbid_of(base, "Fact")
    sql(base, "UPDATE sections SET retired_at = '2026-01-01T00:00:00Z' WHERE kbid = ?", (new,))
    sql(base, "UPDATE sections SET superseded_by = ? WHERE kbid = ?", (old, new))
    res = base.check()
    assert codes(res) == {"circular_reference"}
    assert {i.kbid for i in res.errors} == {old, new}


def test_divergent_content(base: kbdb.KnowledgeBase) -> None:
    # replace=False keeps both versions of the same source key (SPEC §3)
    base.learn("# Fact\n\nWater boils at 90 C on a mountain.", docid="facts")
    res = base.check()
    assert codes(res) == {"divergent_content"}
    assert len(res.errors) == 2 and "facts#Fact" in res.errors[0].detail


def test_index_behind_is_a_warning(base: kbdb.KnowledgeBase) -> None:
    k = kbid_of(base, "Usage")
    sql(base, "INSERT INTO changelog(op, kbid) VALUES ('add', ?)", (k,))
    res = base.check()
    assert res.ok
    assert [w.code for w in res.warnings] == ["index_behind"]


def test_missing_index_is_a_warning(base: kbdb.KnowledgeBase) -> None:
    for f in (base.path / "indexes").iterdir():
        f.unlink()
    res = base.check()
    assert res.ok and [w.code for w in res.warnings] == ["index_missing"]


def test_issues_past_the_cap_are_summarized(
    base: kbdb.KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_mod, "MAX_PER_CODE", 1)
    sql(base, "DELETE FROM document_sections WHERE docid = 'guide'")
    res = base.check()
    orphans = [i for i in res.errors if i.code == "orphan_section"]
    assert len(orphans) == 1
    truncated = [i for i in res.errors if i.code == "truncated"]
    assert truncated and "2 more orphan_section" in truncated[0].detail


@pytest.fixture
def onnx_kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    from tests.embedding.conftest import find_test_model

    from kbdb.config import set_value

    kb = kbdb.KnowledgeBase.init(tmp_path / "vkb")
    set_value(kb.path / "worker.toml", "embedding.provider", "onnx")
    set_value(kb.path / "worker.toml", "embedding.model_path", str(find_test_model()))
    kb.close()
    kb = kbdb.KnowledgeBase.open(tmp_path / "vkb")
    kb.learn(GUIDE, docid="guide")
    yield kb
    kb.close()


def test_vector_file_checksum_and_stale_model(onnx_kb: kbdb.KnowledgeBase) -> None:
    assert onnx_kb.check().ok and onnx_kb.check().warnings == ()
    side = sorted((onnx_kb.path / "indexes").glob("vectors-add.*.idx"))
    assert side, "learn-time vectors go to an append file"
    data = bytearray(side[0].read_bytes())
    data[len(data) // 2] ^= 0x01
    side[0].write_bytes(bytes(data))
    res = onnx_kb.check()
    assert codes(res) == {"checksum_mismatch"} and "vector index" in res.errors[0].detail

    onnx_kb.rebuild()
    assert onnx_kb.check().ok
    from kbdb.config import set_value

    set_value(onnx_kb.path / "worker.toml", "embedding.model", "another-model")
    other = kbdb.KnowledgeBase.open(onnx_kb.path)
    try:
        res = other.check()
    finally:
        other.close()
    assert res.ok and [w.code for w in res.warnings] == ["vector_index_stale"]
