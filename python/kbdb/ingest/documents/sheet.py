"""Split an Excel (.xlsx) workbook into a section per sheet with openpyxl.

A sheet is a Markdown table headed by the sheet's name: its first non-empty row is the
table's header, empty rows are dropped and trailing empty columns trimmed. Cells show
their values (a formula shows the value Excel saved with it). A sheet that does not fit
one section (``MAX_SECTION_CHARS``) continues in sections headed ``Sheet (rows a–b)``,
each repeating the header row. The workbook is streamed (openpyxl read-only mode) and
bounded: at most ``MAX_ROWS`` rows and ``MAX_COLUMNS`` columns of a sheet are read, cells
are cut to 1,000 characters, and a sheet that was cut says so in its last section.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import openpyxl

from kbdb.ingest.documents.common import (
    MAX_SECTION_CHARS,
    CharBudget,
    cell_text,
    finish,
    markdown_table,
    open_zip,
)
from kbdb.ingest.section import ParsedDocument, RawSection

MAX_ROWS = 10_000
"""Rows read from one sheet; the rest are counted and named as left out."""

MAX_COLUMNS = 100
"""Columns read from one sheet."""


def split(data: bytes, *, name: str) -> ParsedDocument:
    """Split a .xlsx file's bytes.

    Raises:
        FormatRejectedError: ``CONTENT_TOO_LARGE`` or ``NO_TEXT``.
    """
    open_zip(data, kind="xlsx").close()
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    budget = CharBudget("xlsx")
    raw: list[RawSection] = []
    try:
        for sheet in workbook.worksheets:
            raw.extend(_sheet_sections(sheet.title, sheet.iter_rows(values_only=True), budget))
        title = (workbook.properties.title or "").strip() or None
    finally:
        workbook.close()
    return finish(raw, title=title, kind="xlsx", title_from_headings=False)


def _sheet_sections(
    title: str, rows: Iterator[tuple[object, ...]], budget: CharBudget
) -> list[RawSection]:
    kept: list[list[str]] = []
    numbers: list[int] = []  # the sheet row number of each kept row
    seen = cut = 0
    wide = False
    for row in rows:
        seen += 1
        if seen > MAX_ROWS:
            cut += 1
            continue
        wide = wide or len(row) > MAX_COLUMNS
        cells = [cell_text(v) for v in row[:MAX_COLUMNS]]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            budget.take("".join(cells))
            kept.append(cells)
            numbers.append(seen)
    if not kept:
        return []
    note = []
    if cut:
        note.append(f"{cut} rows after row {MAX_ROWS} are not learned.")
    if wide:
        note.append(f"Columns after column {MAX_COLUMNS} are not learned.")
    header, body = kept[0], kept[1:]
    out: list[RawSection] = []
    start = 0
    while True:
        chunk: list[list[str]] = []
        size = 0
        end = start
        while end < len(body) and (not chunk or size < MAX_SECTION_CHARS):
            chunk.append(body[end])
            size += sum(len(c) + 3 for c in body[end])
            end += 1
        # body row i is kept row i + 1
        span = f"rows {numbers[start + 1]}–{numbers[end]}" if start else ""
        heading = f"{title} ({span})" if span else title
        content = markdown_table([header, *chunk])
        if end >= len(body) and note:
            content += "\n" + " ".join(note) + "\n"
        out.append(RawSection(heading, 1, content, content, ""))
        start = end
        if start >= len(body):
            return out
