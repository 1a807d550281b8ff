"""Links, aliases and inline tags as the splitters find them (kbdb.ingest.links)."""

from __future__ import annotations

import time

from kbdb.ingest import split_html, split_markdown
from kbdb.ingest.links import MAX_LINKS, Link, find_links, find_tags
from kbdb.store.links import note_key, slug


def _links(text: str) -> list[tuple[str, str, str | None, str | None]]:
    return [(k.kind, k.target, k.fragment, k.label) for k in find_links(text.splitlines(), 0)]


def test_every_wikilink_form() -> None:
    assert _links(
        "[[Note]] [[Note|shown]] [[Folder/Note#Heading]] [[Note#^b1|block]] [[#Local]]"
        " ![[pic.png|100]]"
    ) == [
        ("wikilink", "Note", None, None),
        ("wikilink", "Note", None, "shown"),
        ("wikilink", "Folder/Note", "Heading", None),
        ("wikilink", "Note", "^b1", "block"),
        ("wikilink", "", "Local", None),
        ("embed", "pic.png", None, "100"),
    ]


def test_a_table_pipe_separates_the_label() -> None:
    assert _links("| [[Note\\|label]] | x |") == [("wikilink", "Note", None, "label")]


def test_markdown_links_that_are_paths() -> None:
    got = _links(
        "[Install](../setup/install.md#get-kbdb) [web](https://x.org/a.md) [mail](mailto:a@b)"
        ' [here](#top) [spaced](<my notes/a b.md> "t") ![alt](img/a%20b.png) [x]()'
    )
    assert got == [
        ("markdown", "../setup/install.md", "get-kbdb", "Install"),
        ("markdown", "", "top", "here"),
        ("markdown", "my notes/a b.md", None, "spaced"),
        ("embed", "img/a b.png", None, "alt"),
    ]


def test_nothing_in_code_is_a_link_or_a_tag() -> None:
    doc = split_markdown(
        "# T\n\nsee `[[Not]]` and [[Yes]] #tag1 `#nottag`\n\n```\n[[Fenced]] #fenced\n```\n"
    )
    (section,) = doc.sections
    assert [k.target for k in section.links] == ["Yes"]
    assert doc.tags == ("tag1",)


def test_link_lines_count_from_the_section_start() -> None:
    text = (
        "---\naliases: [A]\n---\n\nintro [[One]]\n\n# Head\n\ntext\n[[Two]]\n\n"
        "Setext\n------\n[[Three]]\n"
    )
    doc = split_markdown(text)
    lines = text.splitlines()
    for s in doc.sections:
        for k in s.links:
            assert s.start_line is not None
            assert f"[[{k.target}]]" in lines[s.start_line - 1 + k.line]


def test_aliases_and_tags_from_front_matter_and_text() -> None:
    doc = split_markdown(
        "---\naliases:\n  - Doggo\n  - 7\n  - {a: b}\n  - [x]\n  -\ntags: [t]\n---\n"
        "hi #inline #123 #a/b x#no\n"
    )
    assert doc.aliases == ("Doggo", "7")
    assert doc.tags == ("t", "inline", "a/b")
    assert split_markdown("---\naliases: One name\n---\nx\n").aliases == ("One name",)
    assert split_markdown("---\naliases: {a: 1}\n---\nx\n").aliases == ()


def test_malformed_brackets_are_text() -> None:
    assert _links("[[[[ ]]]] [[a [[b]] ]] [[unclosed\n[[ ]] [[|x]] ]]]] [[") == [
        ("wikilink", "b", None, None)
    ]


def test_many_links_are_capped_and_linear() -> None:
    text = "# T\n" + "[[n]] " * 100_000 + "\n"
    started = time.perf_counter()
    doc = split_markdown(text)
    assert time.perf_counter() - started < 30  # a guard against quadratic time, not a benchmark
    assert sum(len(s.links) for s in doc.sections) == MAX_LINKS
    line = "`" + "a`" * 50_000 + "[" * 50_000 + "#" + "1" * 50_000
    assert find_links([line], 0) == []
    assert find_tags([line]) == []


def test_html_anchors() -> None:
    doc = split_html(
        '<p>Intro <a href="b.html#sec">the B page</a> <a href="https://x">web</a></p>\n'
        "<h2>Two</h2>\n<p>\n<a href='../c.htm'>C</a></p>"
    )
    assert [(s.heading, s.links) for s in doc.sections] == [
        ("", (Link("html", "b.html", "sec", "the B page", 0),)),
        ("Two", (Link("html", "../c.htm", None, "C", 2),)),
    ]
    assert split_html('<a href="x.html">X</a>', links=False).sections[0].links == ()


def test_keys_and_slugs() -> None:
    assert note_key("Folder/My Note.md") == "my note"
    assert note_key("page.HTML") == "page"
    assert note_key("Document.pdf") == "document.pdf"
    assert slug("Link to a Heading!") == "link-to-a-heading"


def test_reference_links_and_their_definitions() -> None:
    doc = split_markdown(
        "# A\n\nSee [the guide][g] and [Setup] and [spread\nover lines][g], [^1] [nope].\n\n"
        "# B\n\n[g]: guide.md#intro\n[setup]: <setup notes.md>\n[^1]: [x](y.md)\n"
        "[ref]: #tags-are-not-here\n"
    )
    links = [(k.target, k.fragment, k.label, k.line) for s in doc.sections for k in s.links]
    assert links == [
        ("guide.md", "intro", "the guide", 2),
        ("setup notes.md", None, "Setup", 2),
        ("guide.md", "intro", None, 3),
        ("y.md", None, "x", 4),  # a footnote's text may link
    ]
    assert doc.tags == ()
