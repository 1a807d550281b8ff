"""Property tests for the splitters, and a run over the real corpora.

The central property: a Markdown document is exactly its front matter, then its
sections' heading lines and contents in order (only a blank preamble may be dropped).
``covers`` checks that independently of the splitter's internals.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.shared_data import CORPORA

from kbdb.ingest import ParsedDocument, split_html, split_markdown

_UNDERLINE = re.compile(r" {0,3}(=+|-+)[ \t]*")
_ATX_LINE = re.compile(r" {0,3}#{1,6}(?:[ \t].*)?")


def _lines(text: str) -> list[str]:
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _line_count(content: str) -> int:
    return content.count("\n") + (1 if content and not content.endswith("\n") else 0)


def covers(text: str, doc: ParsedDocument) -> None:
    """Assert that front matter + heading lines + contents rebuild ``text`` exactly."""
    lines = _lines(text)
    p = 0
    if lines and lines[0].rstrip() == "---":
        closing = [i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")]
        if closing:
            p = closing[0] + 1
    for index, section in enumerate(doc.sections):
        if section.level == 0:
            assert index == 0, "only a preamble is level 0 in Markdown"
        else:
            if index == 0:
                while p < len(lines) and not lines[p].strip():
                    p += 1  # a blank preamble was dropped
            line = lines[p].rstrip("\n")
            if _ATX_LINE.fullmatch(line):
                assert section.heading in line
                p += 1
            else:
                assert line.strip() == section.heading
                assert _UNDERLINE.fullmatch(lines[p + 1].rstrip("\n"))
                p += 2
        n = _line_count(section.content)
        assert "".join(lines[p : p + n]) == section.content
        p += n
    if not doc.sections:
        assert all(not line.strip() for line in lines[p:])
    else:
        assert p == len(lines)


def check_tree(doc: ParsedDocument) -> None:
    """Levels, parents and paths are consistent."""
    paths = set()
    for index, section in enumerate(doc.sections):
        assert 0 <= section.level <= 6
        if section.parent is not None:
            parent = doc.sections[section.parent]
            assert section.parent < index
            assert 1 <= parent.level < section.level
            assert section.heading_path[:-1] == parent.heading_path
        if section.level == 0:
            assert section.parent is None and section.heading_path == ()
        else:
            assert section.heading_path[-1].startswith(section.heading)
            assert section.heading_path not in paths
            paths.add(section.heading_path)
        body_lines = set(section.content.splitlines())
        assert set(section.body.splitlines()) <= body_lines


MD_LINES = st.sampled_from(
    [
        "", " ", "# A", "## B", "### C", "###### F", "####### G", "#x", "   # D", "    # E",
        "# ", "#", "## closed ##", "```", "```rust", "````", "~~~", "~~~ py", "``` a`b",
        "---", "===", "-", "- item", "1. one", "> q", "text", "more text", "    code",
        "***", "---\ttrailing", "  ```  ", "\t# tab",
    ]
)  # fmt: skip
MD_TEXT = st.lists(st.one_of(MD_LINES, st.text(max_size=12)), max_size=40).flatmap(
    lambda lines: st.sampled_from(["\n", "\r\n", "\r"]).map(lambda nl: nl.join(lines))
)
FRONT = st.builds(
    lambda yaml_lines, rest, end: "---\n" + "\n".join(yaml_lines) + f"\n{end}\n" + rest,
    st.lists(
        st.one_of(
            st.sampled_from(["title: T", "tags: [a, b]", "tags: a,b", "x: [", ": :", "- l"]),
            st.text(max_size=10),
        ),
        max_size=5,
    ),
    MD_TEXT,
    st.sampled_from(["---", "..."]),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(), MD_TEXT, FRONT))
def test_markdown_splitter_properties(text: str) -> None:
    doc = split_markdown(text)
    covers(text, doc)
    check_tree(doc)
    assert set(doc.warnings) <= {"front_matter_invalid"}


@given(st.text())
def test_markdown_front_matter_never_raises(inner: str) -> None:
    doc = split_markdown(f"---\n{inner}\n---\nbody\n")
    assert doc.sections[-1].content.endswith("body\n")


HTML_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            ["<h1>", "</h1>", "<h2>T</h2>", "<h3>", "<p>", "</p>", "<pre>", "</pre>",
             "<script>", "</script>", "<head>", "<body>", "<title>x", "</title>", "<![if",
             "<!--", "-->", "<meta name=keywords content='a,b'>", "text", "&amp;", "<"]
        ),
        st.text(max_size=8),
    ),
    max_size=30,
).map("".join)  # fmt: skip


@settings(max_examples=300)
@given(st.one_of(st.text(), HTML_TEXT))
def test_html_splitter_never_raises(text: str) -> None:
    doc = split_html(text)
    check_tree(doc)
    for section in doc.sections:
        assert "<script" not in section.body or "<script" in text


def _corpus_files(folder: Path, every: int = 1) -> list[Path]:
    if not folder.is_dir():
        pytest.skip(f"corpus {folder} is not present")
    return sorted(folder.rglob("*.md"))[::every]


def test_rust_book_corpus() -> None:
    files = _corpus_files(CORPORA / "rust-book" / "src")
    assert len(files) > 50
    with_code = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        doc = split_markdown(text)
        covers(text, doc)
        check_tree(doc)
        assert doc.warnings == ()
        for section in doc.sections:
            assert section.level == 0 or section.heading, path
            assert not any(line.startswith("```") for line in section.body.splitlines()), path
        with_code += any(s.code for s in doc.sections)
        if re.search(r"^## ", text, re.MULTILINE):
            assert any(s.level == 2 for s in doc.sections), path
    assert with_code > len(files) // 2


def test_rust_book_known_file() -> None:
    path = CORPORA / "rust-book" / "src" / "ch03-02-data-types.md"
    if not path.is_file():
        pytest.skip("rust-book corpus is not present")
    doc = split_markdown(path.read_text(encoding="utf-8"))
    assert doc.sections[0].heading_path == ("Data Types",)
    by_heading = {s.heading: s for s in doc.sections}
    tuple_type = by_heading["The Tuple Type"]
    assert tuple_type.level == 4
    assert tuple_type.heading_path == ("Data Types", "Compound Types", "The Tuple Type")
    include = "{{#rustdoc_include ../listings/ch03-common-programming-concepts/no-listing-10"
    assert tuple_type.code.startswith(include)
    assert "rustdoc_include" not in tuple_type.body
    assert "A _tuple_ is a general way" in tuple_type.body


def test_tldr_corpus_sample() -> None:
    files = _corpus_files(CORPORA / "tldr", every=20)
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8")
        doc = split_markdown(text)
        covers(text, doc)
        check_tree(doc)
        first = text.splitlines()[0]
        assert first.startswith("# "), path
        assert doc.sections[0].heading == first[2:].strip()
        assert doc.title == doc.sections[0].heading
        assert doc.sections[0].body.strip(), path
