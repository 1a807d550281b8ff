"""Links between notes under a running watch (the real watcher, real file-system events,
as in tests/test_watch.py): a renamed, moved or deleted note leaves every link current in
the batch that commits the change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_watch import Running, wait_for

import kbdb


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    k = kbdb.KnowledgeBase.init(tmp_path)
    yield k
    k.close()


VAULT = {
    "Home.md": "# Home\n\n[[Old name]]\n[[New name]]\n[by path](notes/Old%20name.md)\n",
    "notes/Old name.md": "# Old name\n\nTo [[Twin]] and to [the sibling](Sibling.md).\n",
    "notes/Twin.md": "# Twin\n\nThe twin in notes.\n",
    "notes/Sibling.md": "# Sibling\n\nThe sibling in notes.\n",
    "archive/deep/Twin.md": "# Twin\n\nThe twin in the archive.\n",
    "archive/Sibling.md": "# Sibling\n\nThe sibling in the archive.\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in VAULT.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def links(kb: kbdb.KnowledgeBase, docid: str) -> list[tuple[str, str, str | None]] | None:
    """(target, status, target document) of each link of ``docid``; None while it has no
    live section (not learned yet, or forgotten)."""
    if docid not in {d.docid for d in kb.documents(limit=1_000).items}:
        return None
    return [(i.target, i.status, i.to_docid) for i in kb.links(docid).items]


def test_a_renamed_note_leaves_every_link_current(kb: kbdb.KnowledgeBase, vault: Path) -> None:
    w = Running(kb, vault)
    try:
        assert links(kb, "Home.md") == [
            ("Old name", "resolved", "notes/Old name.md"),
            ("New name", "dangling", None),
            ("notes/Old name.md", "resolved", "notes/Old name.md"),
        ]
        assert links(kb, "notes/Old name.md") == [
            ("Twin", "ambiguous", "notes/Twin.md"),
            ("Sibling.md", "resolved", "notes/Sibling.md"),
        ]
        (vault / "notes" / "Old name.md").rename(vault / "archive" / "New name.md")
        wait_for(
            lambda: links(kb, "archive/New name.md") and links(kb, "notes/Old name.md") is None,
            what="the rename",
        )
        # Its own links are resolved from its new folder.
        assert links(kb, "archive/New name.md") == [
            ("Twin", "ambiguous", "notes/Twin.md"),  # no twin beside it: the shorter path
            ("Sibling.md", "resolved", "archive/Sibling.md"),
        ]
        # The backlinks by the old name dangle, the link by the new name resolves.
        assert links(kb, "Home.md") == [
            ("Old name", "dangling", None),
            ("New name", "resolved", "archive/New name.md"),
            ("notes/Old name.md", "dangling", None),
        ]
        assert [i.from_docid for i in kb.backlinks("archive/New name.md").items] == ["Home.md"]
        report = kb.check()
        assert report.ok
        dangling = [(i.docid, i.line) for i in report.warnings if i.code == "link_dangling"]
        assert dangling == [("Home.md", 3), ("Home.md", 5)]

        # Moved next to a twin, the same link now goes there.
        (vault / "archive" / "New name.md").rename(vault / "archive" / "deep" / "New name.md")
        wait_for(
            lambda: (
                links(kb, "archive/deep/New name.md") and links(kb, "archive/New name.md") is None
            ),
            what="the move",
        )
        assert links(kb, "archive/deep/New name.md") == [
            ("Twin", "ambiguous", "archive/deep/Twin.md"),
            ("Sibling.md", "dangling", None),
        ]
        assert w.alive()
    finally:
        w.close()


def test_a_deleted_note_leaves_its_backlinks_dangling(kb: kbdb.KnowledgeBase, vault: Path) -> None:
    w = Running(kb, vault)
    try:
        before = [(i.docid, i.line) for i in kb.check().warnings if i.code == "link_dangling"]
        assert before == [("Home.md", 4)]  # [[New name]]
        (vault / "notes" / "Sibling.md").unlink()
        wait_for(lambda: links(kb, "notes/Sibling.md") is None, what="the deleted note")
        assert links(kb, "notes/Old name.md") == [
            ("Twin", "ambiguous", "notes/Twin.md"),
            ("Sibling.md", "dangling", None),
        ]
        report = kb.check()
        assert report.ok
        found = [(i.docid, i.line, i.detail) for i in report.warnings if i.code == "link_dangling"]
        assert ("notes/Old name.md", 3, "[…](Sibling.md) names no learned note") in found
        assert w.alive()
    finally:
        w.close()


def test_a_renamed_folder_moves_its_notes_and_their_links(
    kb: kbdb.KnowledgeBase, vault: Path
) -> None:
    w = Running(kb, vault)
    try:
        (vault / "notes").rename(vault / "drafts")
        wait_for(lambda: links(kb, "drafts/Old name.md"), what="the moved folder")
        wait_for(lambda: links(kb, "notes/Old name.md") is None, what="the old folder forgotten")
        assert links(kb, "drafts/Old name.md") == [
            ("Twin", "ambiguous", "drafts/Twin.md"),
            ("Sibling.md", "resolved", "drafts/Sibling.md"),
        ]
        # A wikilink by name follows the note; a path to the old folder no longer does.
        assert links(kb, "Home.md") == [
            ("Old name", "resolved", "drafts/Old name.md"),
            ("New name", "dangling", None),
            ("notes/Old name.md", "dangling", None),
        ]
        assert w.alive()
    finally:
        w.close()
