"""Links between notes through export → import, rebuild and gc: the snapshot carries each
section's links and each document's aliases (format version 2), an older snapshot
without them still imports, and gc removes the links of the sections it deletes."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import kbdb
from kbdb.maintenance import snapshot as snap

GOLDEN_V1 = Path(__file__).parent / "data" / "export-v1"
"""Written by the version-1 export (before links were exported) of ``V1_VAULT``."""

V1_VAULT = {
    "Home.md": "---\naliases: [Start page]\n---\n# Home\n\n"
    "See [[Guide#Install]] and [the guide](guide/Guide.md).\n",
    "guide/Guide.md": "---\naliases: [Manual]\n---\n# Guide\n\nIntro to [[Home]].\n\n"
    "## Install\n\nRun pip install kbdb.\n",
}

VAULT = {
    **V1_VAULT,
    "Reader.md": "# Reader\n\n[[Manual|the manual]] and [[Start page]], "
    "![[missing.png]] and [[Nowhere#There]].\n",
    "site/page.html": '<html><body><h1>Page</h1><a href="../Home.md#home">home</a></body></html>',
}


def write_vault(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def sql(kb: kbdb.KnowledgeBase, stmt: str, params: tuple[Any, ...] = ()) -> list[Any]:
    con = sqlite3.connect(kb.path / "kb.sqlite")
    try:
        with con:
            return con.execute(stmt, params).fetchall()
    finally:
        con.close()


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def link_view(kb: kbdb.KnowledgeBase) -> dict[str, Any]:
    """Every document's links and backlinks, and the check's warnings."""
    docs = [d.docid for d in kb.documents(limit=100).items]
    return {
        "links": {d: kb.links(d).to_dict() for d in docs},
        "backlinks": {d: kb.backlinks(d).to_dict() for d in docs},
        "warnings": [w.to_dict() for w in kb.check().warnings],
    }


@pytest.fixture
def linked(kb: kbdb.KnowledgeBase, tmp_path: Path) -> kbdb.KnowledgeBase:
    assert kb.learn_path(write_vault(tmp_path / "vault", VAULT)).ok
    return kb


@pytest.fixture
def other(tmp_path: Path) -> Any:
    base = kbdb.KnowledgeBase.init(tmp_path / "other")
    yield base
    base.close()


def test_the_snapshot_carries_links_and_aliases(linked: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    linked.export(tmp_path / "x")
    catalog = (tmp_path / "x" / "kbdb-export.toml").read_text(encoding="utf-8")
    assert catalog.startswith('format = "kbdb-export"\nversion = 2\n')
    (reader,) = sql(linked, "SELECT kbid FROM sections WHERE heading = 'Reader'")
    k = reader[0]
    text = (tmp_path / "x" / "sections" / k[:2] / f"{k}.md").read_text(encoding="utf-8")
    front = text.split("+++\n")[1]
    assert front.endswith(
        'created_at = "'
        + sql(linked, "SELECT created_at FROM sections WHERE kbid = ?", (k,))[0][0]
        + '"\n'
        '\n[[links]]\nkind = "wikilink"\ntarget = "Manual"\nlabel = "the manual"\nline = 2\n'
        '\n[[links]]\nkind = "wikilink"\ntarget = "Start page"\nline = 2\n'
        '\n[[links]]\nkind = "embed"\ntarget = "missing.png"\nline = 2\n'
        '\n[[links]]\nkind = "wikilink"\ntarget = "Nowhere"\nfragment = "There"\nline = 2\n'
    )
    guide = next((tmp_path / "x" / "documents").glob("guide_Guide_md-*.toml"))
    assert 'tags = []\naliases = ["Manual"]\n\n[[entries]]' in guide.read_text(encoding="utf-8")
    page = next((tmp_path / "x" / "documents").glob("site_page_html-*.toml"))
    assert "aliases" not in page.read_text(encoding="utf-8")  # none: the key is left out
    parsed = snap.parse_section(tmp_path / "x" / "sections" / k[:2] / f"{k}.md")
    assert parsed["links"][0] == {
        "kind": "wikilink",
        "target": "Manual",
        "fragment": None,
        "label": "the manual",
        "line": 2,
    }


def test_links_survive_export_then_import(
    linked: kbdb.KnowledgeBase, other: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    linked.export(tmp_path / "first")
    other.import_snapshot(tmp_path / "first")
    assert link_view(other) == link_view(linked)
    other.export(tmp_path / "second")
    assert tree(tmp_path / "first") == tree(tmp_path / "second")
    back = other.backlinks("guide/Guide.md").items
    assert {(i.from_docid, i.label) for i in back} == {
        ("Home.md", None),
        ("Home.md", "the guide"),
        ("Reader.md", "the manual"),
    }


def test_import_into_a_base_that_was_written_before(
    linked: kbdb.KnowledgeBase, other: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    """The imported documents get their names in the import's transaction, whatever the
    knowledge base did before; links to them from notes learned later resolve."""
    other.learn("# Earlier\n\nA note of this base, to [[Manual]].\n", docid="earlier.md")
    assert other.links("earlier.md").items[0].status == "dangling"
    linked.export(tmp_path / "snap")
    other.import_snapshot(tmp_path / "snap")
    # A link of this base to a note of the snapshot resolves in the import.
    assert other.links("earlier.md").items[0].to_docid == "guide/Guide.md"
    assert link_view(other)["links"]["Reader.md"] == link_view(linked)["links"]["Reader.md"]
    other.learn("# Later\n\nTo [[Manual]] and [[Home]].\n", docid="later.md")
    assert [(i.status, i.to_docid) for i in other.links("later.md").items] == [
        ("resolved", "guide/Guide.md"),
        ("resolved", "Home.md"),
    ]


def test_a_version_1_snapshot_imports_as_before(other: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    """A snapshot without links and aliases imports; its documents get their file names,
    and learning the same files again brings their links back."""
    rep = other.import_snapshot(GOLDEN_V1)
    assert (rep.sections_imported, rep.documents_imported) == (3, 2)
    assert other.links("Home.md").items == ()  # a version-1 snapshot has none to give
    other.learn("# Later\n\nTo [[Guide#Install]].\n", docid="later.md")
    (item,) = other.links("later.md").items
    assert (item.status, item.to_docid, item.to_heading) == (
        "resolved",
        "guide/Guide.md",
        "Install",
    )
    assert other.check().ok
    other.learn_path(write_vault(tmp_path / "vault", V1_VAULT))
    assert [(i.target, i.status) for i in other.links("Home.md").items] == [
        ("Guide", "resolved"),
        ("guide/Guide.md", "resolved"),
    ]
    other.learn("# Alias\n\n[[Manual]]\n", docid="alias.md")  # and the aliases
    assert other.links("alias.md").items[0].to_docid == "guide/Guide.md"


def test_a_merge_keeps_the_stored_names_and_adds_the_links(
    linked: kbdb.KnowledgeBase, other: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    other.learn(
        "---\naliases: [Handbook]\n---\n# Guide\n\nOur own guide.\n", docid="guide/Guide.md"
    )
    linked.export(tmp_path / "snap")
    other.import_snapshot(tmp_path / "snap", merge=True)
    other.learn("# Q\n\n[[Handbook]] [[Manual]]\n", docid="q.md")
    # The stored document kept its metadata and names; the snapshot's alias is not its.
    assert [(i.target, i.status) for i in other.links("q.md").items] == [
        ("Handbook", "resolved"),
        ("Manual", "dangling"),
    ]
    assert [i.to_docid for i in other.links("Reader.md").items][:2] == [None, "Home.md"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('kind = "wikilink"', 'kind = "hyperlink"'), "link kind 'hyperlink' is not one of"),
        (("line = 2", "line = -2"), "link line must be 0 or more"),
        (("line = 2", 'line = "2"'), "line must be an integer"),
        (('target = "Manual"', "target = 5"), "target must be a str"),
        (('target = "Manual"', 'target = "Manual"\nrel = "x"'), "unknown field 'rel'"),
        (('target = "Manual"\n', ""), "missing field 'target'"),
    ],
)
def test_a_tampered_link_is_refused_and_nothing_changes(
    linked: kbdb.KnowledgeBase,
    other: kbdb.KnowledgeBase,
    tmp_path: Path,
    change: tuple[str, str],
    message: str,
) -> None:
    linked.export(tmp_path / "snap")
    (reader,) = sql(linked, "SELECT kbid FROM sections WHERE heading = 'Reader'")
    f = tmp_path / "snap" / "sections" / reader[0][:2] / f"{reader[0]}.md"
    text = f.read_text(encoding="utf-8")
    assert change[0] in text
    f.write_text(text.replace(change[0], change[1], 1), encoding="utf-8")
    with pytest.raises(kbdb.errors.InvalidArgumentError) as e:
        other.import_snapshot(tmp_path / "snap")
    assert str(f) in e.value.message and message in e.value.message
    assert other.stats().sections == 0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('aliases = ["Manual"]', "aliases = [1]", "aliases must be a list of strings"),
        ('aliases = ["Manual"]', 'aliases = "Manual"', "aliases must be a list"),
    ],
)
def test_tampered_aliases_are_refused(
    linked: kbdb.KnowledgeBase,
    other: kbdb.KnowledgeBase,
    tmp_path: Path,
    old: str,
    new: str,
    message: str,
) -> None:
    linked.export(tmp_path / "snap")
    f = next((tmp_path / "snap" / "documents").glob("guide_Guide_md-*.toml"))
    f.write_text(f.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    with pytest.raises(kbdb.errors.InvalidArgumentError) as e:
        other.import_snapshot(tmp_path / "snap")
    assert message in e.value.message
    assert other.stats().documents == 0


def test_links_as_a_plain_key_are_refused(
    linked: kbdb.KnowledgeBase, other: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    linked.export(tmp_path / "snap")
    f = next(
        p
        for p in (tmp_path / "snap" / "sections").rglob("*.md")
        if b"[[links]]" not in p.read_bytes()
    )
    text = f.read_text(encoding="utf-8")
    f.write_text(text.replace("tags = []\n", 'tags = []\nlinks = ["x"]\n', 1), encoding="utf-8")
    with pytest.raises(kbdb.errors.InvalidArgumentError, match="links must be a list of tables"):
        other.import_snapshot(tmp_path / "snap")


def test_rebuild_keeps_the_links(linked: kbdb.KnowledgeBase) -> None:
    before = link_view(linked)
    linked.rebuild()
    assert link_view(linked) == before
    shutil.rmtree(linked.path / "indexes")
    linked.rebuild()
    assert link_view(linked) == before


def test_gc_deletes_the_links_of_the_sections_it_removes(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault", VAULT)
    kb.learn_path(vault)
    (old_reader,) = sql(kb, "SELECT kbid FROM sections WHERE heading = 'Reader'")
    (old_home,) = sql(kb, "SELECT kbid FROM sections WHERE heading = 'Home'")
    assert sql(kb, "SELECT COUNT(*) FROM section_links WHERE kbid = ?", old_reader) == [(4,)]
    assert sql(kb, "SELECT COUNT(*) FROM section_anchors WHERE kbid = ?", old_home) == [(1,)]
    write_vault(vault, {"Reader.md": "# Reader\n\nNow only [[Home]].\n"})
    write_vault(vault, {"Home.md": V1_VAULT["Home.md"].replace("See", "Look at")})
    kb.learn_path(vault)
    # Retired, not removed: history keeps a retired section's links as written.
    assert sql(kb, "SELECT COUNT(*) FROM section_links WHERE kbid = ?", old_reader) == [(4,)]
    # Plant anchor text and a resolved link on the retired sections, as a base written by
    # an older kbdb could hold: gc must not leave them behind either.
    sql(kb, "INSERT OR REPLACE INTO section_anchors(kbid, text) VALUES (?, 'stale')", old_home)
    sql(
        kb,
        "INSERT INTO links(docid, kbid, n, status, target_docid, target_kbid)"
        " VALUES ('Reader.md', ?, 9, 'resolved', 'Home.md', ?)",
        (old_reader[0], old_home[0]),
    )
    before = link_view(kb)
    report = kb.gc(prune_retired=True)
    assert f"section:{old_reader[0]}" in report.removed
    assert f"section:{old_home[0]}" in report.removed
    for table in ("section_links", "section_anchors", "links"):
        assert sql(
            kb, f"SELECT COUNT(*) FROM {table} WHERE kbid IN (?, ?)", (*old_reader, *old_home)
        ) == [(0,)]
        assert sql(
            kb, f"SELECT COUNT(*) FROM {table} WHERE kbid NOT IN (SELECT kbid FROM sections)"
        ) == [(0,)]
    assert sql(
        kb, "SELECT COUNT(*) FROM links WHERE target_kbid NOT IN (SELECT kbid FROM sections)"
    ) == [(0,)]
    assert link_view(kb) == before
    (home,) = sql(kb, "SELECT kbid FROM sections WHERE heading = 'Home' AND retired_at IS NULL")
    assert [i.from_docid for i in kb.backlinks(kbid=home[0]).items] == [
        "Reader.md",
        "guide/Guide.md",
        "site/page.html",
    ]
