"""The Markdown splitter: exact expectations for every rule in SPEC §3, Splitting."""

from __future__ import annotations

import pytest

from kbdb.errors import UnsupportedTypeError
from kbdb.ingest import (
    FRONT_MATTER_INVALID,
    ParsedDocument,
    split_document,
    split_markdown,
    split_text,
)


def shape(doc: ParsedDocument) -> list[tuple[str, int, int | None]]:
    return [(s.heading, s.level, s.parent) for s in doc.sections]


# --- ATX headings ---------------------------------------------------------------------


def test_atx_levels_and_content() -> None:
    doc = split_markdown("# One\nbody one\n## Two\nbody two\n###### Six\nbody six\n")
    assert shape(doc) == [("One", 1, None), ("Two", 2, 0), ("Six", 6, 1)]
    assert [s.content for s in doc.sections] == ["body one\n", "body two\n", "body six\n"]


@pytest.mark.parametrize(
    ("line", "heading", "level"),
    [
        ("# plain", "plain", 1),
        ("   ### three spaces", "three spaces", 3),
        ("## closed ##", "closed", 2),
        ("## closed ###   ", "closed", 2),
        ("# keep#hash", "keep#hash", 1),
        ("# trailing#", "trailing#", 1),
        ("#\ttab", "tab", 1),
        ("#", "", 1),
        ("### ###", "", 3),
        ("#    spaced   out   ", "spaced   out", 1),
        ("# `code` and *em*", "`code` and *em*", 1),
    ],
)
def test_atx_heading_text(line: str, heading: str, level: int) -> None:
    doc = split_markdown(f"{line}\ntext\n")
    assert [(s.heading, s.level) for s in doc.sections] == [(heading, level)]
    assert doc.sections[0].content == "text\n"


@pytest.mark.parametrize(
    "line", ["#foo", "####### seven", "    # four spaces", "\t# tab indent", "\\# escaped"]
)
def test_not_atx_headings(line: str) -> None:
    doc = split_markdown(f"{line}\n")
    assert shape(doc) == [("", 0, None)]
    assert doc.sections[0].content == f"{line}\n"


# --- Setext headings ------------------------------------------------------------------


def test_setext_headings() -> None:
    doc = split_markdown("Title\n=====\nintro\nSub\n---\nsub body\n")
    assert shape(doc) == [("Title", 1, None), ("Sub", 2, 0)]
    assert doc.sections[0].content == "intro\n"
    assert doc.sections[1].content == "sub body\n"
    assert doc.title == "Title"


def test_setext_underline_any_length_and_indent() -> None:
    doc = split_markdown("A\n=\nB\n   ------   \n")
    assert shape(doc) == [("A", 1, None), ("B", 2, 0)]


def test_dashes_after_blank_line_are_a_thematic_break() -> None:
    doc = split_markdown("# H\npara\n\n---\nmore\n")
    assert shape(doc) == [("H", 1, None)]
    assert doc.sections[0].content == "para\n\n---\nmore\n"


@pytest.mark.parametrize(
    "before", ["- item", "* item", "1. item", "> quote", "    code", "# Heading", "***"]
)
def test_dashes_after_non_paragraph_are_not_setext(before: str) -> None:
    doc = split_markdown(f"{before}\n---\n")
    assert all(s.level != 2 for s in doc.sections)


def test_equals_after_blank_line_is_text() -> None:
    doc = split_markdown("# H\n\n===\n")
    assert shape(doc) == [("H", 1, None)]
    assert doc.sections[0].content == "\n===\n"


def test_setext_takes_only_the_last_paragraph_line() -> None:
    doc = split_markdown("first line\nHeading\n---\nbody\n")
    assert shape(doc) == [("", 0, None), ("Heading", 2, None)]
    assert doc.sections[0].content == "first line\n"


# --- Fenced code ----------------------------------------------------------------------


def test_headings_inside_fences_do_not_count() -> None:
    text = "# Real\n```bash\n# comment\n## another\n```\n~~~\n# tilde\n~~~\nafter\n"
    doc = split_markdown(text)
    assert shape(doc) == [("Real", 1, None)]
    section = doc.sections[0]
    assert section.content == text.removeprefix("# Real\n")
    assert section.body == "after\n"
    assert section.code == "# comment\n## another\n# tilde"


def test_longer_fence_needs_longer_close() -> None:
    text = "# A\n`````md\n```\n# inside\n```\n`````\n# B\n"
    doc = split_markdown(text)
    assert shape(doc) == [("A", 1, None), ("B", 1, None)]
    assert doc.sections[0].code == "```\n# inside\n```"


def test_fence_char_must_match() -> None:
    doc = split_markdown("~~~\n```\n# inside\n~~~\n# out\n")
    assert [s.heading for s in doc.sections] == ["", "out"]
    assert doc.sections[0].code == "```\n# inside"


def test_closing_fence_takes_no_info_string() -> None:
    doc = split_markdown("```\n``` still code\n# inside\n```\n# out\n")
    assert [s.heading for s in doc.sections] == ["", "out"]
    assert doc.sections[0].code == "``` still code\n# inside"


def test_unclosed_fence_runs_to_end() -> None:
    doc = split_markdown("# A\n```\n# B\ncode\n")
    assert shape(doc) == [("A", 1, None)]
    assert doc.sections[0].code == "# B\ncode"
    assert doc.sections[0].body == ""


def test_backtick_fence_info_cannot_hold_backticks() -> None:
    doc = split_markdown("```inline``` text\n# Heading\n")
    assert [s.heading for s in doc.sections] == ["", "Heading"]
    assert doc.sections[0].code == ""


def test_indented_fence_in_list_is_code() -> None:
    doc = split_markdown("# A\n1. step\n\n    ```sh\n    make\n    ```\n")
    assert doc.sections[0].code == "    make"
    assert doc.sections[0].body == "1. step\n\n"


def test_code_field_joins_blocks_and_skips_empty_ones() -> None:
    doc = split_markdown("x\n```\none\n```\n```\n```\ny\n~~~py\ntwo\nthree\n~~~\n")
    assert doc.sections[0].code == "one\ntwo\nthree"
    assert doc.sections[0].body == "x\ny\n"


def test_setext_underline_after_fence_is_not_heading() -> None:
    doc = split_markdown("```\ncode\n```\n---\n")
    assert shape(doc) == [("", 0, None)]


# --- Front matter ---------------------------------------------------------------------


def test_front_matter_supplies_metadata_and_is_not_content() -> None:
    text = "---\ntitle: My Doc\ndescription: What it is\ntags: [a, b, a]\n---\n# H\nbody\n"
    doc = split_markdown(text)
    assert (doc.title, doc.description, doc.tags) == ("My Doc", "What it is", ("a", "b"))
    assert shape(doc) == [("H", 1, None)]
    assert "title" not in doc.sections[0].content
    assert doc.warnings == ()


def test_front_matter_comma_tags_and_dot_terminator() -> None:
    doc = split_markdown("---\ntags: 'x, y , ,z'\n...\ntext\n")
    assert doc.tags == ("x", "y", "z")
    assert [s.content for s in doc.sections] == ["text\n"]


def test_front_matter_title_wins_over_h1() -> None:
    assert split_markdown("---\ntitle: FM\n---\n# H1\n").title == "FM"
    assert split_markdown("---\nauthor: me\n---\n# H1\n").title == "H1"


@pytest.mark.parametrize(
    "yaml_text", ["title: [unclosed", "- just\n- a list", "plain scalar", "date: 2024-13-45"]
)
def test_invalid_front_matter_is_skipped_with_warning(yaml_text: str) -> None:
    doc = split_markdown(f"---\n{yaml_text}\n---\n# H\nbody\n")
    assert doc.warnings == (FRONT_MATTER_INVALID,)
    assert shape(doc) == [("H", 1, None)]
    assert doc.title == "H"
    assert doc.tags == ()


def test_tags_mapping_is_invalid() -> None:
    doc = split_markdown("---\ntags: {a: 1}\n---\nx\n")
    assert doc.warnings == (FRONT_MATTER_INVALID,)
    assert doc.tags == ()


def test_unclosed_front_matter_is_plain_text() -> None:
    doc = split_markdown("---\ntitle: x\n")
    assert doc.title is None
    assert doc.warnings == ()
    assert doc.sections[0].content == "---\ntitle: x\n"


def test_empty_front_matter() -> None:
    doc = split_markdown("---\n---\nhello\n")
    assert doc.warnings == ()
    assert [s.content for s in doc.sections] == ["hello\n"]


def test_dashes_not_on_first_line_are_not_front_matter() -> None:
    doc = split_markdown("\n---\ntitle: x\n---\n")
    assert doc.title is None
    # A thematic break, then a setext heading (a paragraph line, then ---).
    assert shape(doc) == [("", 0, None), ("title: x", 2, None)]
    assert doc.sections[0].content == "\n---\n"


# --- Preamble, tree, titles -----------------------------------------------------------


def test_preamble_is_level_zero_and_never_a_parent() -> None:
    doc = split_markdown("intro text\n\n# A\n## B\n")
    assert shape(doc) == [("", 0, None), ("A", 1, None), ("B", 2, 1)]
    assert doc.sections[0].content == "intro text\n\n"
    assert doc.sections[0].heading_path == ()


def test_whitespace_preamble_is_dropped() -> None:
    doc = split_markdown("\n   \n\t\n# A\n")
    assert shape(doc) == [("A", 1, None)]


def test_empty_document_has_no_sections() -> None:
    assert split_markdown("").sections == ()
    assert split_markdown("\n\n").sections == ()


def test_headed_sections_are_kept_when_empty() -> None:
    doc = split_markdown("# A\n# B\n")
    assert [(s.heading, s.content) for s in doc.sections] == [("A", ""), ("B", "")]


def test_tree_with_skipped_levels() -> None:
    doc = split_markdown("# A\n### C\n## B\n#### D\n# E\n## F\n")
    assert shape(doc) == [
        ("A", 1, None),
        ("C", 3, 0),
        ("B", 2, 0),
        ("D", 4, 2),
        ("E", 1, None),
        ("F", 2, 4),
    ]
    assert doc.sections[3].heading_path == ("A", "B", "D")
    assert doc.sections[5].heading_path == ("E", "F")


def test_document_starting_below_level_one() -> None:
    doc = split_markdown("## B\n### C\n## D\n")
    assert shape(doc) == [("B", 2, None), ("C", 3, 0), ("D", 2, None)]
    assert doc.title is None


def test_duplicate_heading_paths_are_made_unique() -> None:
    doc = split_markdown("# A\n## Ex\none\n## Ex\ntwo\n### Sub\n## Ex\n")
    paths = [s.heading_path for s in doc.sections]
    assert paths == [
        ("A",),
        ("A", "Ex"),
        ("A", "Ex (2)"),
        ("A", "Ex (2)", "Sub"),
        ("A", "Ex (3)"),
    ]
    assert [s.heading for s in doc.sections] == ["A", "Ex", "Ex", "Sub", "Ex"]


def test_title_is_first_non_empty_h1() -> None:
    assert split_markdown("## Two\n#\n# First\n# Second\n").title == "First"
    assert split_markdown("text only\n").title is None


# --- Line endings, BOM ----------------------------------------------------------------


def test_crlf_and_bom() -> None:
    doc = split_markdown("\ufeff---\r\ntitle: T\r\n---\r\n# A\r\nx\r\ny\r\n")
    assert doc.title == "T"
    assert shape(doc) == [("A", 1, None)]
    assert doc.sections[0].content == "x\ny\n"


def test_no_trailing_newline() -> None:
    doc = split_markdown("# A\nlast")
    assert doc.sections[0].content == "last"


def test_other_unicode_line_separators_stay_inside_lines() -> None:
    doc = split_markdown("a\u2028# not heading\x0cb\n")
    assert shape(doc) == [("", 0, None)]


# --- split_text ------------------------------------------------------------------------


def test_split_text_is_one_section() -> None:
    doc = split_text("# not a heading\r\n```\nx\n```\n", heading="notes")
    assert len(doc.sections) == 1
    section = doc.sections[0]
    assert (section.heading, section.level, section.parent) == ("notes", 0, None)
    assert section.content == section.body == "# not a heading\n```\nx\n```\n"
    assert section.code == ""
    assert section.heading_path == ()


def test_split_text_blank() -> None:
    assert split_text("  \n").sections == ()
    assert len(split_text("", heading="h").sections) == 1
    assert split_text('{"a": 1}').sections[0].content == '{"a": 1}'


# --- split_document ---------------------------------------------------------------------


def test_split_document_dispatches_on_type() -> None:
    source = "# A\n<h2>B</h2>\n"
    assert [s.heading for s in split_document(source, "text/markdown").sections] == ["A"]
    assert [s.heading for s in split_document(source, "TEXT/HTML; charset=utf-8").sections] == [
        "",
        "B",
    ]
    for mime in ("text/plain", "text/csv", "application/json"):
        assert [s.level for s in split_document(source, mime).sections] == [0]
    with pytest.raises(UnsupportedTypeError):
        split_document("data", "image/png")
