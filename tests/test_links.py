"""Links between notes through the public API (``KnowledgeBase.links``, ``.backlinks``,
``.check``): how each form resolves, Obsidian's choice between notes of one name, what
forgetting a note does to its backlinks, export → import, and bad input. Every vault is
written by the test into a temporary folder and learned from the files."""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

import kbdb
from kbdb.ingest.links import MAX_LINKS
from kbdb.maintenance.links import LISTED_PER_CODE
from kbdb.types import LinkItem


def write_vault(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def learned(kb: kbdb.KnowledgeBase, root: Path, files: dict[str, str]) -> kbdb.KnowledgeBase:
    write_vault(root, files)
    report = kb.learn_path(root)
    assert report.ok, report.files_skipped
    return kb


def out(kb: kbdb.KnowledgeBase, docid: str) -> list[LinkItem]:
    return list(kb.links(docid).items)


def warnings(kb: kbdb.KnowledgeBase, code: str) -> list[kbdb.types.CheckIssue]:
    report = kb.check()
    assert report.ok, report.errors
    return [w for w in report.warnings if w.code == code]


GUIDE = """# Guide

Intro to the guide.

## Install kbdb

Run pip install kbdb.

A paragraph with a block id. ^setup-step

## Usage

Call search.
"""

HOME = """# Home

Plain: [[Guide]]
Label: [[Guide|the manual]]
Heading: [[Guide#Usage]]
Block: [[Guide#^setup-step]]
Here: [[#Local part]]
Embed: ![[Guide]]
Markdown: [install](guide/Guide.md#install-kbdb)
Spaces: [spaced](guide/My%20Note.md)

## Local part

Text of home.
"""

PAGE = """<html><head><title>Page</title></head><body>
<h1>Page</h1>
<p>Go <a href="guide/Guide.md#usage">to usage</a> or <a href="Home.md">home</a>.</p>
</body></html>
"""


@pytest.fixture
def vault(kb: kbdb.KnowledgeBase, tmp_path: Path) -> kbdb.KnowledgeBase:
    return learned(
        kb,
        tmp_path / "vault",
        {
            "Home.md": HOME,
            "guide/Guide.md": GUIDE,
            "guide/My Note.md": "# My Note\n\nA note with a space in its name.\n",
            "page.html": PAGE,
        },
    )


def test_every_link_form_resolves(vault: kbdb.KnowledgeBase) -> None:
    got: dict[tuple[str, str, str | None], LinkItem] = {
        (i.kind, i.target, i.fragment): i for i in out(vault, "Home.md")
    }
    want = {
        ("wikilink", "Guide", None): ("guide/Guide.md", "Guide"),
        ("wikilink", "Guide", "Usage"): ("guide/Guide.md", "Usage"),
        ("wikilink", "Guide", "^setup-step"): ("guide/Guide.md", "Install kbdb"),
        ("wikilink", "", "Local part"): ("Home.md", "Local part"),
        ("embed", "Guide", None): ("guide/Guide.md", "Guide"),
        ("markdown", "guide/Guide.md", "install-kbdb"): ("guide/Guide.md", "Install kbdb"),
        ("markdown", "guide/My Note.md", None): ("guide/My Note.md", "My Note"),
    }
    for key, (docid, heading) in want.items():
        item = got[key]
        assert (item.status, item.to_docid, item.to_heading) == ("resolved", docid, heading), key
    labelled = [i for i in out(vault, "Home.md") if i.label == "the manual"]
    assert len(labelled) == 1 and labelled[0].to_docid == "guide/Guide.md"
    assert all(i.status == "resolved" for i in out(vault, "Home.md"))
    # Lines are the linking file's: "Plain: [[Guide]]" is line 3 of Home.md.
    assert got[("wikilink", "Guide", "Usage")].line == 5
    assert got[("wikilink", "", "Local part")].from_heading == "Home"


def test_html_links_resolve(vault: kbdb.KnowledgeBase) -> None:
    items = out(vault, "page.html")
    assert [(i.kind, i.target, i.label, i.status, i.to_docid, i.to_heading) for i in items] == [
        ("html", "guide/Guide.md", "to usage", "resolved", "guide/Guide.md", "Usage"),
        ("html", "Home.md", "home", "resolved", "Home.md", "Home"),
    ]


def test_backlinks_list_the_linking_notes(vault: kbdb.KnowledgeBase) -> None:
    back = vault.backlinks("guide/Guide.md").items
    assert {i.from_docid for i in back} == {"Home.md", "page.html"}
    usage = vault.outline("guide/Guide.md")
    assert usage.nodes  # the guide is there to be linked
    assert vault.check().ok
    assert warnings(vault, "link_dangling") == []


SAME = "# Same\n\nOne of three notes named Same.\n"


@pytest.fixture
def namesakes(kb: kbdb.KnowledgeBase, tmp_path: Path) -> kbdb.KnowledgeBase:
    return learned(
        kb,
        tmp_path / "vault",
        {
            "notes/deep/er/Same.md": SAME + "deepest\n",
            "notes/Same.md": SAME + "shallow\n",
            "notes/a/Same.md": SAME + "in a\n",
            "notes/a/Linker.md": "# Linker\n\nTo [[Same]].\n",
            "Root.md": "# Root\n\nTo [[Same]] as well.\n",
        },
    )


def test_an_ambiguous_name_resolves_as_obsidian_does(namesakes: kbdb.KnowledgeBase) -> None:
    (here,) = out(namesakes, "notes/a/Linker.md")
    assert (here.status, here.to_docid) == ("ambiguous", "notes/a/Same.md")  # same folder
    (root,) = out(namesakes, "Root.md")
    assert (root.status, root.to_docid) == ("ambiguous", "notes/Same.md")  # shortest path


def test_check_reports_ambiguous_links_naming_the_chosen_note(
    namesakes: kbdb.KnowledgeBase,
) -> None:
    found = {w.docid: w for w in warnings(namesakes, "link_ambiguous")}
    assert set(found) == {"notes/a/Linker.md", "Root.md"}
    w = found["Root.md"]
    assert w.line == 3 and w.kbid is not None
    assert "[[Same]] goes to notes/Same.md" in w.detail
    assert "notes/a/Same.md" in w.detail and "notes/deep/er/Same.md" in w.detail


def test_forgetting_a_note_leaves_its_backlinks_dangling(vault: kbdb.KnowledgeBase) -> None:
    assert warnings(vault, "link_dangling") == []
    vault.forget(docid="guide/Guide.md")
    items = out(vault, "Home.md")
    to_guide = [i for i in items if "Guide" in i.target]
    assert to_guide and all(i.status == "dangling" and i.to_docid is None for i in to_guide)
    assert vault.backlinks("Home.md").items  # the others still resolve
    dangling = warnings(vault, "link_dangling")
    assert {w.docid for w in dangling} == {"Home.md", "page.html"}
    assert any(w.detail.startswith("[[Guide#Usage]] names no learned note") for w in dangling)
    assert {w.line for w in dangling if w.docid == "Home.md"} >= {3, 4, 5, 6}


def test_revising_a_section_keeps_its_links(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    """A revised section's links are those of its new content, as if it had been learned."""
    learned(
        kb,
        tmp_path / "v",
        {
            "Home.md": "# Home\n\nTo [[Guide]].\n",
            "Guide.md": "# Guide\n\nThe guide.\n",
            "Other.md": "# Other\n\nAnother note.\n",
        },
    )
    (item,) = out(kb, "Home.md")
    kb.revise(item.from_kbid, "To [[Other]] and [[Guide]] now.")
    assert [(i.target, i.status, i.to_docid) for i in out(kb, "Home.md")] == [
        ("Other", "resolved", "Other.md"),
        ("Guide", "resolved", "Guide.md"),
    ]
    assert [i.from_docid for i in kb.backlinks("Other.md").items] == ["Home.md"]


def test_links_survive_export_then_import(vault: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    vault.export(tmp_path / "snapshot")
    other = kbdb.KnowledgeBase.init(tmp_path / "other")
    try:
        other.import_snapshot(tmp_path / "snapshot")
        for docid in ("Home.md", "page.html", "guide/Guide.md"):
            assert other.links(docid) == vault.links(docid)
            assert other.backlinks(docid) == vault.backlinks(docid)
    finally:
        other.close()


# -- bad input -----------------------------------------------------------------------------


def test_a_link_cycle_resolves_and_is_not_an_error(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    learned(
        kb,
        tmp_path / "v",
        {
            "A.md": "# A\n\nTo [[B]] and to myself [[A]].\n",
            "B.md": "# B\n\nBack to [[A]].\n",
        },
    )
    assert [(i.target, i.status) for i in out(kb, "A.md")] == [
        ("B", "resolved"),
        ("A", "resolved"),
    ]
    assert [i.from_docid for i in kb.backlinks("A.md").items] == ["A.md", "B.md"]
    report = kb.check()
    assert report.ok and report.warnings == ()  # each is linked by the other


def test_a_hundred_thousand_links_keep_the_first_ten_thousand(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    lines = [" ".join(f"[[note {j}]]" for j in range(i, i + 10)) for i in range(0, 100_000, 10)]
    text = "# Many\n\n" + "\n".join(lines) + "\n"
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "many.md").write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        started = time.monotonic()
        kb.learn_path(tmp_path / "v")
        elapsed = time.monotonic() - started
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    items = out(kb, "many.md")
    assert len(items) == MAX_LINKS == 10_000
    assert items[0].target == "note 0" and items[-1].target == "note 9999"
    assert items[-1].line == 3 + 9_999 // 10
    assert all(i.status == "dangling" for i in items)
    assert elapsed < 60
    # The file is 1.3 MB: what the learn holds grows with the links kept, not the
    # links written (each link object is ~0.5 KB with its strings and rows).
    assert peak < 64 * 2**20, peak
    report = kb.check()
    dangling = [w for w in report.warnings if w.code == "link_dangling"]
    assert len(dangling) == LISTED_PER_CODE
    assert [w.detail for w in report.warnings if w.code == "truncated"] == [
        f"{10_000 - LISTED_PER_CODE} more link_dangling issue(s) not listed"
    ]


def _learn_peak(kb: kbdb.KnowledgeBase, folder: Path, text: str) -> int:
    """The peak of Python memory while ``kb`` learns ``folder`` holding one note, ``text``."""
    folder.mkdir()
    (folder / f"{folder.name}.md").write_text(text, encoding="utf-8")
    tracemalloc.start()
    try:
        kb.learn_path(folder)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_links_past_the_limit_take_no_memory(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    """A file's links past ``MAX_LINKS`` are dropped: learning 1 MiB of links costs about
    what learning 1 MiB with ``MAX_LINKS`` links and text does. (A 10 MiB file, the
    largest a learn reads by default, of ``[[a]]`` is 2 million links.)"""
    kb.learn("# Warm\n\n[[x]]\n", docid="warm")  # imports and caches before measuring
    line = "[[a]]" * 20 + "\n"
    size = 2**20
    links_only = "# Links\n\n" + line * (size // len(line))
    kept = line * (MAX_LINKS // 20)
    words = "word " * 20 + "\n"
    mixed = "# Mixed\n\n" + kept + words * ((size - len(kept)) // len(words))
    assert abs(len(links_only) - len(mixed)) < 1_000
    peak_mixed = _learn_peak(kb, tmp_path / "mixed", mixed)
    peak_links = _learn_peak(kb, tmp_path / "links", links_only)
    assert len(out(kb, "links.md")) == MAX_LINKS
    assert peak_links < peak_mixed + 16 * 2**20, (peak_links, peak_mixed)


class _Opens:
    """Paths opened while ``active``, seen through the interpreter's audit hook (an
    ``open`` event for builtins.open, os.open and io.open_code)."""

    def __init__(self) -> None:
        self.active = False
        self.paths: list[str] = []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if self.active and event == "open" and isinstance(args[0], (str, bytes)):
            path = args[0].decode() if isinstance(args[0], bytes) else args[0]
            self.paths.append(path)


_OPENS: _Opens | None = None


@pytest.fixture
def opens() -> Iterator[_Opens]:
    global _OPENS
    if _OPENS is None:  # an audit hook cannot be removed: one for the session
        _OPENS = _Opens()
    _OPENS.paths.clear()
    yield _OPENS
    _OPENS.active = False


def test_a_path_outside_the_tree_is_outside_and_never_read(
    kb: kbdb.KnowledgeBase, tmp_path: Path, opens: _Opens
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nThe vault must not read this.\n", encoding="utf-8")
    notes = write_vault(
        tmp_path / "vault",
        {
            "Escape.md": "# Escape\n\n"
            "[pw](../../etc/passwd)\n"
            "[up](../secret.md)\n"
            "[[../secret]]\n"
            "[abs](/../../etc/passwd)\n"
            "[fine](Inside.md)\n",
            "Inside.md": "# Inside\n\nInside the tree.\n",
        },
    )
    kb.learn("# Warm\n\nLoad what a learn imports before watching opens.\n", docid="warm")
    opens.active = True
    kb.learn_path(notes)
    items = out(kb, "Escape.md")
    opens.active = False
    assert [(i.target, i.status) for i in items] == [
        ("../../etc/passwd", "outside"),
        ("../secret.md", "outside"),
        ("../secret", "outside"),
        ("/../../etc/passwd", "outside"),
        ("Inside.md", "resolved"),
    ]
    assert all(i.to_docid is None for i in items if i.status == "outside")
    read = {str(Path(p).resolve()) for p in opens.paths}
    assert str(secret.resolve()) not in read and "/etc/passwd" not in read
    assert {p for p in read if p.startswith(str(notes))} == {
        str(notes / "Escape.md"),
        str(notes / "Inside.md"),
    }
    assert kb.search("vault must not read").items == ()
    outside = warnings(kb, "link_outside")
    assert [(w.line, w.detail) for w in outside][:2] == [
        (3, "[…](../../etc/passwd) leads outside the learned folders; it is not followed"),
        (4, "[…](../secret.md) leads outside the learned folders; it is not followed"),
    ]
    assert len(outside) == 4


def test_malformed_brackets_are_text(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    learned(
        kb,
        tmp_path / "v",
        {
            "Odd.md": "# Odd\n\n"
            "[[[[\n"
            "[[a unclosed\n"
            "]]]] and ]] and [[\n"
            "[[]] [[|label only]] [[#]]\n"
            "[[[[Nested]]]]\n"
            "[[Split\nacross]]\n" + "[[" * 20_000 + "\n",
            "Nested.md": "# Nested\n\nA target.\n",
        },
    )
    items = out(kb, "Odd.md")
    assert [(i.target, i.status, i.line) for i in items] == [("Nested", "resolved", 7)]
    assert kb.check().ok


def test_aliases_that_are_not_strings(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    learned(
        kb,
        tmp_path / "v",
        {
            "Number.md": "---\naliases: 42\n---\n# Number\n\nA number alias.\n",
            "Mapping.md": "---\naliases:\n  key: value\n---\n# Mapping\n\nA mapping.\n",
            "Nested.md": "---\naliases: [[inner, list]]\n---\n# Nested list\n\nNested.\n",
            "Null.md": "---\naliases: null\n---\n# Null\n\nNothing.\n",
            "Mixed.md": "---\naliases: [7, null, {k: v}, [x], true, 'Good name']\n---\n"
            "# Mixed\n\nMixed aliases.\n",
            "Links.md": "# Links\n\n[[42]] [[Good name]] [[7]] [[value]] [[inner]] [[true]]\n",
        },
    )
    got = {i.target: (i.status, i.to_docid) for i in out(kb, "Links.md")}
    assert got == {
        "42": ("resolved", "Number.md"),
        "Good name": ("resolved", "Mixed.md"),
        "7": ("resolved", "Mixed.md"),
        "value": ("dangling", None),
        "inner": ("dangling", None),
        "true": ("dangling", None),
    }
    assert kb.check().ok
