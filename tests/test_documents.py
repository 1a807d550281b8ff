"""The documents extra on real files (tests/data/documents, sources in LICENSES.md): what
becomes a section, with what text and page; learning and searching them; the extra
missing."""

from __future__ import annotations

from pathlib import Path

import pytest

import kbdb
from kbdb.ingest import formats
from kbdb.ingest.formats import FORMATS, Format, FormatRejectedError, split_with
from kbdb.ingest.section import ParsedDocument
from kbdb.ingest.walk import Skipped, walk

pytest.importorskip("pypdfium2")
pytest.importorskip("docx")
pytest.importorskip("pptx")
pytest.importorskip("openpyxl")

DATA = Path(__file__).parent / "data" / "documents"
BY_EXT = {ext: f for f in FORMATS for ext in f.extensions}


def split(name: str) -> ParsedDocument:
    path = DATA / name
    return split_with(BY_EXT[path.suffix], path.read_bytes(), name=name)


def headings(doc: ParsedDocument) -> list[tuple[int, str, int | None]]:
    return [(s.level, s.heading, s.page) for s in doc.sections]


def page_lines(name: str) -> list[list[str]]:
    """Each page's non-blank lines as PDFium gives them, the reference for 'no page lost'."""
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(DATA / name)
    try:
        out = []
        for i in range(len(doc)):
            # PDFium marks a word it joined across a line break with U+FFFE
            text = doc[i].get_textpage().get_text_range().replace("\ufffe", "")
            out.append([" ".join(ln.split()) for ln in text.splitlines() if ln.strip()])
        return out
    finally:
        doc.close()


# -- PDF ---------------------------------------------------------------------------------


def test_pdf_outline_makes_a_section_per_entry_on_its_page() -> None:
    doc = split("pdflatex-outline.pdf")
    assert headings(doc) == [
        (0, "", 1),  # the table of contents, before the first entry
        (1, "Foo", 2),
        (1, "Bar", 2),
        (1, "Baz", 2),
        (1, "Foo", 2),
        (1, "Bar", 3),
        (1, "Baz", 3),
        (1, "Foo", 3),
        (1, "Bar", 4),
        (1, "Baz", 4),
    ]
    # repeated headings get unique paths; the heading line leaves the content
    assert doc.sections[4].heading_path == ("Foo (2)",)
    assert doc.sections[0].content.startswith("Contents\n1 Foo 2\n")
    assert doc.sections[1].content.startswith("Hello, here is some text without a meaning.")
    assert all(s.start_line is None and s.end_line is None for s in doc.sections)


def test_pdf_without_outline_or_larger_fonts_is_a_section_per_page() -> None:
    doc = split("vicksburg-ocr.pdf")
    assert headings(doc) == [(1, f"Page {n}", n) for n in range(1, 7)]
    assert doc.sections[3].content.startswith("THE SIEGE OP VICKSBURG. 53\n")
    assert doc.title == "Binder1.pdf"  # the metadata title, not "Page 1"


def test_pdf_headings_from_font_sizes() -> None:
    doc = split("geobase-data-model.pdf")
    found = {s.heading: s.page for s in doc.sections}
    assert found["Copyright Notice"] == 2
    assert found["ABBREVIATIONS"] == 5
    assert found["2 LRS"] == 6
    assert "© Her Majesty the Queen" in doc.sections[2].content


@pytest.mark.parametrize(
    "name", ["pdflatex-outline.pdf", "vicksburg-ocr.pdf", "geobase-data-model.pdf"]
)
def test_pdf_no_page_is_lost(name: str) -> None:
    """Every line of every page is in a section that starts on or before that page (a
    heading line is in the heading instead)."""
    doc = split(name)
    for number, lines in enumerate(page_lines(name), start=1):
        before = [s for s in doc.sections if s.page is not None and s.page <= number]
        text = "\n".join(f"{s.heading}\n{s.content}" for s in before)
        missing = [ln for ln in lines if ln not in text]
        assert not missing, f"page {number} lost {missing[:3]}"


def test_pdf_encrypted_is_refused_with_its_code() -> None:
    with pytest.raises(FormatRejectedError) as info:
        split("encrypted-password.pdf")
    assert info.value.skip_code == "ENCRYPTED_DOCUMENT"


# -- Office ------------------------------------------------------------------------------


def test_docx_splits_at_heading_styles() -> None:
    doc = split("heading-styles.docx")
    assert [(s.level, s.heading) for s in doc.sections] == [
        (1, "Heading1"),
        (2, "Heading2"),
        (3, "Heading3"),
    ]
    assert doc.sections[2].heading_path == ("Heading1", "Heading2", "Heading3")
    assert doc.sections[2].content == "Standard\n"

    cases = split("illustrative-cases.docx")
    assert cases.title == "(V) ILLUSTRATIVE CASES"
    assert "basic personal tax credit" in cases.sections[0].content
    assert all(s.page is None for s in cases.sections)


def test_docx_tables_are_markdown_tables() -> None:
    doc = split("tables.docx")
    content = doc.sections[0].content
    assert "| 1 | 2 | 3 |\n| --- | --- | --- |\n| 4 | 5 | 6 |\n| 7 | 8 | 9 |\n" in content


def test_pptx_a_slide_is_a_section_with_its_notes() -> None:
    doc = split("sample-show.pptx")
    assert headings(doc) == [
        (1, "Title of the first slide", 1),
        (1, "This is the second slide", 2),
    ]
    first = doc.sections[0].content
    assert "Subtitle of the first slide" in first
    assert "Notes:\nI am the notes of the first slide" in first
    assert doc.title == "SlideShow Sample"


def test_pptx_groups_and_tables() -> None:
    doc = split("group-and-table.pptx")
    content = doc.sections[0].content
    assert doc.sections[0].heading == "Slide 1"  # no title placeholder text
    assert "Group test text" in content
    assert "| Col head 1 | Col head 2 |\n| --- | --- |\n| Cell text 1 | Cell text 2 |" in content


def test_xlsx_a_sheet_is_a_markdown_table() -> None:
    doc = split("sample-ss.xlsx")
    assert [s.heading for s in doc.sections] == ["First Sheet", "Sheet Number 2"]
    assert doc.sections[0].content.startswith(
        "| Test spreadsheet |  |\n| --- | --- |\n| 2nd row | 2nd row 2nd column |\n"
    )
    two = split("two-sheets.xlsx")
    assert "| consectetuer | 666 |" in two.sections[0].content


# -- EPUB --------------------------------------------------------------------------------


def test_epub_follows_the_spine() -> None:
    doc = split("lorem.epub")
    assert doc.title == "Lorem Ipsum"
    assert [s.heading_path for s in doc.sections] == [
        ("Lorem Ipsum",),
        ("Lorem Ipsum", "Chapter 1"),
        ("Lorem Ipsum", "Chapter 2"),
    ]
    assert doc.sections[1].content.startswith("Lorem ipsum dolor sit amet")

    spine = split("epub3-spine.epub")
    # front page then chapters 1-3 in spine order; the navigation document is left out
    assert [s.heading for s in spine.sections] == [
        "Front page",
        "Chapter 1",
        "Chapter 2",
        "Chapter 3",
    ]


# -- learning, searching, the CLI, the extra missing -------------------------------------


def test_learned_pdf_text_is_found_on_its_page(kb: kbdb.KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("vicksburg-ocr.pdf", "sample-show.pptx", "lorem.epub"):
        (folder / name).write_bytes((DATA / name).read_bytes())
    report = kb.learn_path(folder)
    assert report.files_skipped == ()
    assert report.documents_added == 3
    # "expedite the glorious victory" is on page 4 of the PDF
    items = kb.search("expedite glorious").items
    assert items and items[0].heading == "Page 4"
    assert items[0].docids == ("vicksburg-ocr.pdf",)
    # the citation names the file and the page; a page has no lines to cite
    assert items[0].source.path == str(folder / "vicksburg-ocr.pdf")
    assert (items[0].source.page, items[0].source.start_line) == (4, None)
    assert items[0].source.cite() == f"{folder / 'vicksburg-ocr.pdf'} p.4"
    assert items[0].type == "text/markdown"
    notes = kb.search("notes of the first slide").items
    assert notes[0].heading == "Title of the first slide"


def test_without_the_extra_a_document_is_unsupported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.pdf").write_bytes((DATA / "crazyones.pdf").read_bytes())
    (tmp_path / "b.docx").write_bytes((DATA / "tables.docx").read_bytes())
    monkeypatch.setattr(formats, "_importable", lambda module: module != "pypdfium2")
    found = {Path(e.path).name: e for e in walk(tmp_path)}
    pdf = found["a.pdf"]
    assert isinstance(pdf, Skipped)
    assert pdf.code == "UNSUPPORTED_TYPE"
    assert "pip install 'kbdb[documents]'" in pdf.reason
    assert not isinstance(found["b.docx"], Skipped)


def test_a_format_requiring_a_missing_module_says_which_extra() -> None:
    fmt = Format(
        name="pdf",
        mime="application/pdf",
        extensions=(".pdf",),
        extra="documents",
        requires=("kbdb_no_such_module",),
        module="kbdb.ingest.documents.pdf",
        binary=True,
    )
    assert not fmt.available()
    assert fmt.missing_reason() == (
        "reading pdf files needs the documents extra: pip install 'kbdb[documents]'"
    )
