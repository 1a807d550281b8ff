"""``kb.export()`` and ``kb.import_snapshot()`` (SPEC §8.4): a byte-identical round trip,
path safety whatever the data holds, and a bad snapshot that changes nothing."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from tests.test_check import GUIDE, sql

import kbdb
from kbdb.errors import InvalidArgumentError
from kbdb.maintenance import snapshot as snap

UNICODE = '# Café ☕\n\nNaïve résumé — 東京 +++ "quotes" and \\backslash\\ \x7f del\n'
TRICKY = '+++\nkbid = "fake"\n+++\n\nA body that looks like front matter.\n\n```\n+++\n```\n'


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def dump(kb: kbdb.KnowledgeBase) -> list[str]:
    con = sqlite3.connect(kb.path / "kb.sqlite")
    try:
        return list(con.iterdump())
    finally:
        con.close()


@pytest.fixture
def rich_kb(kb: kbdb.KnowledgeBase) -> kbdb.KnowledgeBase:
    kb.learn(GUIDE, docid="guide", tags=["doc", "setup"], title="The guide")
    kb.learn(UNICODE, docid="unicode/ünï", description="all sorts of characters")
    kb.learn(TRICKY, docid="tricky", section_type="note")
    kb.learn("Line one\r\nline two   \r\n", docid="crlf", type="text/plain")
    kb.learn('{"a": 1, "b": [true, null]}', docid="data.json", type="application/json")
    kb.learn("# Fact\n\nWater boils at 100 C.", docid="facts", tags=["science"])
    kb.learn("# Fact\n\nWater boils at 100 C at sea level.", docid="facts", replace=True)
    kb.learn("# Shared\n\nIn two documents.", docid="one")
    kb.learn("# Shared\n\nIn two documents.", docid="two", tags=["t2"])
    return kb


def test_export_import_export_is_byte_identical(
    rich_kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    first = tmp_path / "first"
    rep = rich_kb.export(first)
    assert rep.sections_exported == rich_kb.stats().sections
    assert rep.documents_exported == rich_kb.stats().documents
    assert rep.path == str(first)
    assert not (first / "indexes").exists()

    other = kbdb.KnowledgeBase.init(tmp_path / "restored")
    try:
        imp = other.import_snapshot(first)
        assert imp.sections_imported == rep.sections_exported and imp.sections_skipped == 0
        assert imp.documents_imported == rep.documents_exported
        second = tmp_path / "second"
        other.export(second)
        assert tree(first) == tree(second)
        # the restored base reads and searches the same
        kbids = [p.stem for p in first.glob("sections/*/*.md")]
        assert other.recall(*kbids).to_dict() == rich_kb.recall(*kbids).to_dict()
        for q in ("water boils", "café", "front matter", "guide install"):
            assert [i.kbid for i in other.search(q).items] == [
                i.kbid for i in rich_kb.search(q).items
            ]
        assert other.check().ok
    finally:
        other.close()


def test_section_file_format(rich_kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    rich_kb.export(tmp_path / "x")
    k, content = sql(rich_kb, "SELECT kbid, content FROM sections WHERE section_type = 'note'")[0]
    text = (tmp_path / "x" / "sections" / k[:2] / f"{k}.md").read_text(encoding="utf-8")
    assert text.startswith(f'+++\nkbid = "{k}"\nheading = ""\nlevel = 0\n')
    assert 'section_type = "note"\ntags = []\ndocids = ["tricky"]\n' in text
    assert 'kbid = "fake"' in content
    assert text.endswith("+++\n" + content)  # the content verbatim, as stored
    assert snap.parse_section(tmp_path / "x" / "sections" / k[:2] / f"{k}.md")["kbid"] == k
    catalog = (tmp_path / "x" / "kbdb-export.toml").read_text(encoding="utf-8")
    assert catalog.startswith('format = "kbdb-export"\nversion = 2\n')


def test_reexport_updates_in_place_and_only_what_changed(
    rich_kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    out = tmp_path / "x"
    rich_kb.export(out)
    (out / ".git").mkdir()
    (out / "README.md").write_text("mine")
    guide = next(iter(out.glob("documents/guide-*.toml")))
    os.utime(guide, (1, 1))
    rich_kb.learn("# Extra\n\nnew section", docid="extra")
    sql(rich_kb, "DELETE FROM document_sections WHERE docid = 'crlf'")
    sql(rich_kb, "DELETE FROM documents WHERE docid = 'crlf'")
    rich_kb.gc()
    rich_kb.export(out)
    assert guide.stat().st_mtime == 1  # unchanged bytes are not rewritten
    assert (out / "README.md").read_text() == "mine" and (out / ".git").is_dir()
    assert not list(out.glob("documents/crlf-*.toml"))
    fresh = tmp_path / "fresh"
    rich_kb.export(fresh)
    mine = {k: v for k, v in tree(out).items() if k != "README.md"}
    assert mine == tree(fresh)


def test_refuses_a_non_empty_folder_that_is_no_export(
    rich_kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    target = tmp_path / "photos"
    target.mkdir()
    (target / "cat.jpg").write_bytes(b"meow")
    with pytest.raises(InvalidArgumentError) as err:
        rich_kb.export(target)
    assert err.value.hint and "empty" in err.value.hint
    assert tree(target) == {"cat.jpg": b"meow"}
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError):
        rich_kb.export(tmp_path / "file")


HOSTILE = [
    "../../escape",
    "/etc/passwd",
    "..",
    ".",
    "a\x00b",
    "x" * 5000,
    "C:\\Windows\\system32",
    "con",
    "-rf",
    "~/home",
]


def test_hostile_docids_and_titles_stay_inside(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    for i, docid in enumerate(HOSTILE):
        kb.learn(f"# Note {i}\n\nbody {i}", docid=f"d{i}", title=f"../../../t{i}/\x00" + "y" * 300)
        # stored exactly as given, whatever learn would make of such an id
        sql(kb, "UPDATE documents SET docid = ? WHERE docid = ?", (docid, f"d{i}"))
        sql(kb, "UPDATE document_sections SET docid = ? WHERE docid = ?", (docid, f"d{i}"))
    assert kb.check().ok
    outside_before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "out" / "x"
    rep = kb.export(out)
    assert rep.documents_exported == len(HOSTILE)
    new = {p for p in tmp_path.rglob("*")} - outside_before
    assert new and all(p == out.parent or out in (p, *p.parents) for p in new)
    names = [p.name for p in (out / "documents").iterdir()]
    assert all(snap.DOC_FILE_RE.fullmatch(n) for n in names) and len(set(names)) == len(HOSTILE)
    assert all(len(n) <= 100 for n in names)
    other = kbdb.KnowledgeBase.init(tmp_path / "again")
    try:
        other.import_snapshot(out)
        got = [r[0] for r in sql(other, "SELECT docid FROM documents ORDER BY docid")]
        assert got == sorted(HOSTILE)
        other.export(tmp_path / "out2")
        assert tree(out) == tree(tmp_path / "out2")
    finally:
        other.close()


def test_hostile_kbid_is_refused_before_anything_is_written(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    kb.learn("# A\n\nbody", docid="a")
    for bad in ("../../../../tmp/pwn", "/abs/path", "AB" * 16, "a\x00" * 16):
        sql(kb, "UPDATE sections SET kbid = ?", (bad,))
        with pytest.raises(InvalidArgumentError) as err:
            kb.export(tmp_path / "x")
        assert "kbid" in err.value.message
        assert not (tmp_path / "x").exists()
    assert not Path("/tmp/pwn.md").exists()


def test_symlinks_in_an_earlier_export_are_not_followed(
    rich_kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    out = tmp_path / "x"
    rich_kb.export(out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    import shutil

    shutil.rmtree(out / "documents")
    (out / "documents").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(InvalidArgumentError):
        rich_kb.export(out)
    assert list(elsewhere.iterdir()) == []
    # a file replaced by a link to a file outside: the link is replaced, the target kept
    (out / "documents").unlink()
    rich_kb.export(out)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    f = sorted(out.glob("sections/*/*.md"))[0]
    f.unlink()
    f.symlink_to(victim)
    rich_kb.export(out)
    assert victim.read_text() == "keep me" and not f.is_symlink()


# -- import -----------------------------------------------------------------------------------


@pytest.fixture
def exported(rich_kb: kbdb.KnowledgeBase, tmp_path: Path) -> Path:
    out = tmp_path / "snap"
    rich_kb.export(out)
    return out


def _edit_content(root: Path) -> None:
    f = sorted(root.glob("sections/*/*.md"))[0]
    f.write_bytes(f.read_bytes() + b" edited")


def _unknown_field(root: Path) -> None:
    f = sorted(root.glob("sections/*/*.md"))[0]
    f.write_bytes(f.read_bytes().replace(b"+++\n", b"+++\nextra = 1\n", 1))


def _bad_toml(root: Path) -> None:
    f = sorted(root.glob("documents/*.toml"))[0]
    f.write_bytes(f.read_bytes() + b"\n[[[broken")


def _missing_section(root: Path) -> None:
    sorted(root.glob("sections/*/*.md"))[0].unlink()


def _extra_file(root: Path) -> None:
    (root / "sections" / "00").mkdir(exist_ok=True)
    (root / "sections" / "00" / "notes.txt").write_text("hi")


def _renamed(root: Path) -> None:
    f = sorted(root.glob("sections/*/*.md"))[0]
    f.rename(f.with_name("0" * 32 + ".md"))


def _catalog_version(root: Path) -> None:
    c = root / "kbdb-export.toml"
    c.write_text(c.read_text().replace("version = 2", "version = 99"))


def _no_catalog(root: Path) -> None:
    (root / "kbdb-export.toml").unlink()


def _dangling_parent(root: Path) -> None:
    f = next(p for p in sorted(root.glob("sections/*/*.md")) if b"\nparent = " in p.read_bytes())
    data = f.read_bytes()
    start = data.index(b"\nparent = ") + len(b'\nparent = "')
    f.write_bytes(data[:start] + b"f" * 32 + data[start + 32 :])


def _bad_level(root: Path) -> None:
    f = sorted(root.glob("sections/*/*.md"))[0]
    data = f.read_bytes()
    i = data.index(b"level = ")
    f.write_bytes(data[:i] + b'level = "one"' + data[data.index(b"\n", i) :])


def _symlinked(root: Path) -> None:
    f = sorted(root.glob("sections/*/*.md"))[0]
    target = root.parent / "real.md"
    target.write_bytes(f.read_bytes())
    f.unlink()
    f.symlink_to(target)


def _not_utf8(root: Path) -> None:
    f = sorted(root.glob("documents/*.toml"))[0]
    f.write_bytes(f.read_bytes() + b"\xff\xfe")


BAD = [
    _edit_content,
    _unknown_field,
    _bad_toml,
    _missing_section,
    _extra_file,
    _renamed,
    _catalog_version,
    _no_catalog,
    _dangling_parent,
    _bad_level,
    _symlinked,
    _not_utf8,
]


@pytest.mark.parametrize("damage", BAD, ids=[f.__name__.strip("_") for f in BAD])
def test_a_bad_snapshot_is_rejected_and_changes_nothing(
    exported: Path, tmp_path: Path, damage: object
) -> None:
    damage(exported)  # type: ignore[operator]
    target = kbdb.KnowledgeBase.init(tmp_path / "target")
    try:
        target.learn("# Mine\n\nalready here", docid="mine")
        before = dump(target)
        index_before = sorted(p.name for p in (target.path / "indexes").iterdir())
        with pytest.raises(InvalidArgumentError) as err:
            target.import_snapshot(exported)
        assert err.value.code == "INVALID_ARGUMENT" and err.value.hint
        assert dump(target) == before
        assert sorted(p.name for p in (target.path / "indexes").iterdir()) == index_before
    finally:
        target.close()


def test_merge_keeps_stored_sections_and_links_documents(exported: Path, tmp_path: Path) -> None:
    target = kbdb.KnowledgeBase.init(tmp_path / "target")
    try:
        target.learn("# Mine\n\nalready here", docid="mine")
        target.learn("# Shared\n\nIn two documents.", docid="three")
        with pytest.raises(InvalidArgumentError):
            target.import_snapshot(exported, merge=False)
        rep = target.import_snapshot(exported)
        assert rep.sections_skipped == 1  # 'Shared' was stored already
        shared = target.search("two documents").items[0]
        assert set(shared.docids) == {"one", "two", "three"}
        assert target.search("already here").total == 1
        assert target.check().ok
        again = target.import_snapshot(exported, merge=True)
        assert again.sections_imported == 0 and again.documents_imported == 0
        assert target.check().ok
    finally:
        target.close()


def test_merge_never_brings_back_a_section_retired_here(tmp_path: Path) -> None:
    # Both bases learned the same note; this one revised it since. The snapshot's live
    # link to the old version must not make the document list both versions again.
    here = kbdb.KnowledgeBase.init(tmp_path / "here")
    there = kbdb.KnowledgeBase.init(tmp_path / "there")
    try:
        for kb in (here, there):
            kb.learn("# A\n\nzebra original\n", docid="d1")
        old = here.search("zebra").items[0].kbid
        new = here.revise(old, "zebra edited here\n").kbid
        there.export(tmp_path / "snap")
        here.import_snapshot(tmp_path / "snap", merge=True)
        assert [s.kbid for s in here.recall(docid="d1").sections] == [new]
        assert [d.sections for d in here.documents().items] == [1]
        assert [i.kbid for i in here.search("zebra").items] == [new]
        assert here.recall(old).sections[0].retired
        assert here.check().ok
    finally:
        here.close()
        there.close()
