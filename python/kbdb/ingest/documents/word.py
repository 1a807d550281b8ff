"""Split a Word (.docx) document at its headings with python-docx.

A paragraph is a heading of level N when its style, or a style it is based on, is
``Heading N`` (by name or style id) or carries outline level N-1, which is how Word
marks headings in every language; ``Title`` is level 1. Paragraphs and tables between
headings are the section's content, in document order: tables become Markdown tables,
list paragraphs ``- `` items. Headers, footers, footnotes and comments are left out.
The document title is the core property ``title``, else the first level-1 heading.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import docx
from docx.styles.style import BaseStyle
from docx.table import Table
from docx.text.paragraph import Paragraph

from kbdb.ingest.documents.common import (
    CharBudget,
    bounded,
    cell_text,
    finish,
    markdown_table,
    open_zip,
)
from kbdb.ingest.section import ParsedDocument, RawSection

_HEADING = re.compile(r"^heading ?([1-6])$", re.I)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def split(data: bytes, *, name: str) -> ParsedDocument:
    """Split a .docx file's bytes.

    Raises:
        FormatRejectedError: ``CONTENT_TOO_LARGE`` or ``NO_TEXT``; a file python-docx
            cannot open is reported as ``UNREADABLE_DOCUMENT`` by the caller.
    """
    open_zip(data, kind="docx").close()
    document = docx.Document(io.BytesIO(data))
    budget = CharBudget("docx")
    raw: list[RawSection] = []
    heading, level = "", 0
    blocks: list[str] = []
    for item in _blocks(document):
        if isinstance(item, tuple):
            raw.extend(bounded(heading, level, blocks))
            heading, level = item
            blocks = []
        else:
            blocks.append(budget.take(item))
    raw.extend(bounded(heading, level, blocks))
    raw = [s for s in raw if s.level or s.content.strip()]
    title = (document.core_properties.title or "").strip() or None
    return finish(raw, title=title, kind="docx")


def _blocks(document: docx.document.Document) -> Iterator[str | tuple[str, int]]:
    """The body in order: a (heading, level) pair for a heading, else a text block."""
    for element in document.element.body.iterchildren():
        if element.tag == f"{_W}tbl":
            table = _table(Table(element, document))
            if table:
                yield table
        elif element.tag == f"{_W}p":
            paragraph = Paragraph(element, document)
            text = paragraph.text.strip()
            level = _heading_level(paragraph, element)
            if level and text:
                yield (" ".join(text.split()), level)
            elif text:
                yield f"- {text}" if _is_list(paragraph, element) else text


def _heading_level(paragraph: Paragraph, element: Any) -> int:
    outline = element.find(f"{_W}pPr/{_W}outlineLvl")
    if outline is not None:
        return _outline_level(outline.get(f"{_W}val"))
    style: BaseStyle | None = paragraph.style
    for _ in range(10):  # a style's base chain; Word keeps it short
        if style is None:
            return 0
        for label in (style.name or "", style.style_id or ""):
            if label.lower() == "title":
                return 1
            m = _HEADING.match(label)
            if m:
                return int(m.group(1))
        found = style.element.find(f"{_W}pPr/{_W}outlineLvl")
        if found is not None:
            return _outline_level(found.get(f"{_W}val"))
        style = getattr(style, "base_style", None)  # a paragraph style has one
    return 0


def _outline_level(value: str | None) -> int:
    """Word's outline level 0-8 as a heading level; 9 is body text."""
    try:
        n = int(value or "9")
    except ValueError:
        return 0
    return min(n + 1, 6) if 0 <= n < 9 else 0


def _is_list(paragraph: Paragraph, element: Any) -> bool:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    return name.lower().startswith("list") or element.find(f"{_W}pPr/{_W}numPr") is not None


def _table(table: Table) -> str:
    rows = [[cell_text(cell.text) for cell in row.cells] for row in table.rows]
    rows = [r for r in rows if any(r)]
    return markdown_table(rows)
