"""Split a PowerPoint (.pptx) presentation into a section per slide with python-pptx.

A slide's heading is its title placeholder's text (``Slide N`` when it has none); its
content is the text of its other shapes in their order on the slide (groups opened,
tables as Markdown tables), then its speaker notes under ``Notes:``. ``page`` is the
slide's number. Slides with no text at all are left out.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import pptx
from pptx.shapes.base import BaseShape
from pptx.shapes.group import GroupShape
from pptx.slide import Slide

from kbdb.ingest.documents.common import (
    CharBudget,
    bounded,
    cell_text,
    finish,
    markdown_table,
    open_zip,
)
from kbdb.ingest.section import ParsedDocument, RawSection

_MAX_GROUP_DEPTH = 20


def split(data: bytes, *, name: str) -> ParsedDocument:
    """Split a .pptx file's bytes.

    Raises:
        FormatRejectedError: ``CONTENT_TOO_LARGE`` or ``NO_TEXT``.
    """
    open_zip(data, kind="pptx").close()
    presentation = pptx.Presentation(io.BytesIO(data))
    budget = CharBudget("pptx")
    raw: list[RawSection] = []
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join((title_shape.text_frame.text if title_shape is not None else "").split())
        blocks = [budget.take(b) for b in _slide_blocks(slide, title_shape)]
        if not title and not blocks:
            continue
        raw.extend(bounded(title or f"Slide {number}", 1, blocks, page=number))
    core_title = (presentation.core_properties.title or "").strip() or None
    return finish(raw, title=core_title, kind="pptx", title_from_headings=False)


def _slide_blocks(slide: Slide, title_shape: BaseShape | None) -> Iterator[str]:
    title_id = title_shape.shape_id if title_shape is not None else None
    shape: Any  # a graphic frame or an autoshape; python-pptx types them apart
    for shape in _shapes(slide.shapes, 0):
        if shape.shape_id == title_id:
            continue
        if getattr(shape, "has_table", False):
            rows = [[cell_text(c.text) for c in row.cells] for row in shape.table.rows]
            table = markdown_table([r for r in rows if any(r)])
            if table:
                yield table
        elif getattr(shape, "has_text_frame", False):
            text = shape.text_frame.text.replace("\x0b", "\n").strip()
            if text:
                yield text
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        notes = frame.text.replace("\x0b", "\n").strip() if frame is not None else ""
        if notes:
            yield f"Notes:\n{notes}"


def _shapes(shapes: Iterable[BaseShape], depth: int) -> Iterator[BaseShape]:
    for shape in shapes:
        if isinstance(shape, GroupShape):
            if depth < _MAX_GROUP_DEPTH:
                yield from _shapes(shape.shapes, depth + 1)
        else:
            yield shape
