"""What ``kb.check()`` says of the links between notes: one warning per link that is not
plainly resolved, one for the attachments that lead nowhere, orphan notes, the cap on
each code, and none of it when links are not kept. Vaults are written into temporary
folders and learned from the files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import kbdb
from kbdb.context import CONFIG_NAME
from kbdb.maintenance.links import LISTED_PER_CODE, is_attachment
from kbdb.types import CheckIssue, CheckReport


def learn_vault(kb: kbdb.KnowledgeBase, root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    assert kb.learn_path(root).ok


def by_code(report: CheckReport) -> dict[str, list[CheckIssue]]:
    out: dict[str, list[CheckIssue]] = {}
    for w in report.warnings:
        out.setdefault(w.code, []).append(w)
    return out


VAULT = {
    "Home.md": "# Home\n\n"
    "See [[Guide]] and [[Missing note]].\n"  # line 3
    "Heading: [[Guide#No such heading]]\n"  # line 4
    "Block: [[Guide#^noblock]]\n"  # line 5
    "Out: [x](../../etc/passwd)\n"  # line 6
    "Pictures: ![[diagram.png]] ![alt](img/photo.JPG) ![[scan.pdf#page=2]]\n"  # line 7
    "Same: [[Twin]]\n",  # line 8
    "Guide.md": "# Guide\n\nBack [[Home]].\n",
    "a/Twin.md": "# Twin\n\nThe first twin.\n",
    "b/c/Twin.md": "# Twin\n\nThe second twin.\n",
    "Lonely.md": "# Lonely\n\nNothing links here.\n",
}


@pytest.fixture
def report(kb: kbdb.KnowledgeBase, tmp_path: Path) -> CheckReport:
    learn_vault(kb, tmp_path / "vault", VAULT)
    return kb.check()


def test_link_problems_are_warnings_and_the_check_stays_ok(report: CheckReport) -> None:
    assert report.ok and report.errors == ()
    assert set(by_code(report)) == {
        "link_dangling",
        "link_missing_heading",
        "link_outside",
        "link_ambiguous",
        "link_attachments",
        "note_orphan",
    }
    assert report.checked["links"] == 10


def test_each_link_warning_names_the_document_section_line_and_target(
    report: CheckReport, kb: kbdb.KnowledgeBase
) -> None:
    home = kb.outline("Home.md").nodes[0].kbid
    w = by_code(report)
    rows = {
        code: [(i.docid, i.kbid, i.line, i.detail) for i in w[code]]
        for code in ("link_dangling", "link_missing_heading", "link_outside", "link_ambiguous")
    }
    assert rows == {
        "link_dangling": [("Home.md", home, 3, "[[Missing note]] names no learned note")],
        "link_missing_heading": [
            (
                "Home.md",
                home,
                4,
                "[[Guide#No such heading]]: Guide.md has no heading 'No such heading';"
                " the link goes to the note",
            ),
            (
                "Home.md",
                home,
                5,
                "[[Guide#^noblock]]: Guide.md has no block ^noblock; the link goes to the note",
            ),
        ],
        "link_outside": [
            (
                "Home.md",
                home,
                6,
                "[…](../../etc/passwd) leads outside the learned folders; it is not followed",
            )
        ],
        "link_ambiguous": [
            (
                "Home.md",
                home,
                8,
                "[[Twin]] goes to a/Twin.md (same folder first, then shortest path);"
                " also so named: b/c/Twin.md",
            )
        ],
    }
    assert report.to_dict()["warnings"][0]["line"] == 3


def test_attachments_are_counted_in_one_warning(report: CheckReport) -> None:
    (w,) = by_code(report)["link_attachments"]
    assert (w.docid, w.line) == ("Home.md", 7)
    assert w.detail.startswith("3 link(s) to files that are not notes")
    assert w.detail.endswith('the first: embed "diagram.png"')


def test_orphan_notes_are_those_no_other_note_links_to(report: CheckReport) -> None:
    # Guide and Home link each other; Twin is linked (a/Twin.md, the chosen one).
    orphans = [(i.docid, i.kbid, i.line) for i in by_code(report)["note_orphan"]]
    assert orphans == [("Lonely.md", None, None), ("b/c/Twin.md", None, None)]


def test_a_self_link_does_not_save_a_note_from_being_an_orphan(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    learn_vault(
        kb,
        tmp_path / "v",
        {"Self.md": "# Self\n\n[[Self]] [[#Self]]\n", "A.md": "# A\n\n[[B]]\n", "B.md": "# B\n"},
    )
    orphans = [i.docid for i in kb.check().warnings if i.code == "note_orphan"]
    assert orphans == ["A.md", "Self.md"]


def test_no_orphans_without_links(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    learn_vault(kb, tmp_path / "v", {"A.md": "# A\n\nText.\n", "B.md": "# B\n\n[[Nowhere]]\n"})
    report = kb.check()
    # Only a dangling link: nothing resolves, so no note counts as unlinked.
    assert [w.code for w in report.warnings] == ["link_dangling"]


def test_link_warnings_are_capped_with_a_count(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    extra = 50
    n = LISTED_PER_CODE + extra
    files = {f"n{i:03}.md": f"# N{i}\n\n[[gone {i}]] [[hub]]\n" for i in range(n)}
    files["hub.md"] = "# Hub\n\n[[n000]]\n"
    learn_vault(kb, tmp_path / "v", files)
    report = kb.check()
    w = by_code(report)
    assert len(w["link_dangling"]) == LISTED_PER_CODE
    assert [i.docid for i in w["link_dangling"][:2]] == ["n000.md", "n001.md"]
    assert len(w["note_orphan"]) == LISTED_PER_CODE  # all but n000 and hub
    assert {i.detail for i in w["truncated"]} == {
        f"{extra} more link_dangling issue(s) not listed",
        f"{extra - 1} more note_orphan issue(s) not listed",
    }
    assert report.ok


def test_no_link_warnings_when_links_are_not_kept(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    config = kb.path / CONFIG_NAME
    config.write_text(
        config.read_text(encoding="utf-8").replace("# links = true", "links = false"),
        encoding="utf-8",
    )
    off = kbdb.KnowledgeBase.open(kb.path)
    try:
        learn_vault(off, tmp_path / "vault", VAULT)
        report = off.check()
        assert report.ok and report.warnings == () and "links" not in report.checked
    finally:
        off.close()


def test_a_base_without_the_link_tables_checks_and_exports(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    """A knowledge base that no link-keeping kbdb has written to has no link tables:
    check and export read it without them."""
    kb.learn("# Old\n\nWritten before links were kept.\n", docid="old")
    kb.close()
    con = sqlite3.connect(kb.path / "kb.sqlite")
    with con:
        for table in ("links", "section_links", "document_names"):
            con.execute(f"DROP TABLE {table}")
    con.close()
    old = kbdb.KnowledgeBase.open(kb.path)
    try:
        report = old.check()
        assert report.ok and report.warnings == () and report.checked["links"] == 0
        assert old.export(tmp_path / "snap").sections_exported == 1
    finally:
        old.close()


@pytest.mark.parametrize(
    ("target", "attachment"),
    [
        ("diagram.png", True),
        ("img/photo.JPG", True),
        ("scan.pdf", True),
        ("archive.tar.gz", True),
        ("Note", False),
        ("Note.md", False),
        ("page.HTML", False),
        ("notes.markdown", False),
        ("Release 1.2", False),  # a version number, not an extension
        ("Mr. Smith", False),
        (".hidden", False),
        ("folder.d/Note", False),
        ("", False),
    ],
)
def test_what_counts_as_an_attachment(target: str, attachment: bool) -> None:
    assert is_attachment(target) is attachment
