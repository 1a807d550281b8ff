"""Split a PDF into sections with PDFium (pypdfium2), each with the page it starts on.

Where the sections start, in order of preference:

1. the outline (bookmarks): a section per entry, at its level (up to 6), starting on the
   line its destination points at (the first line at or below the destination's top,
   or the line that holds its title, or the top of its page); the heading line itself
   leaves the content;
2. without an outline, lines in a font clearly larger than the body text (1.2 times the
   most common size), short and holding letters: the largest size is level 1, the next
   level 2, any smaller one level 3;
3. without either, a section per page, headed ``Page N``.

Text before the first heading is a level-0 section. Every page's text lands in some
section, and a section longer than ``MAX_SECTION_CHARS`` continues in another at a page
bound. Pages are read one at a time and closed, and ``pdfscan`` has measured every
stream first (docs/formats.md, Limits).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from kbdb.ingest.documents.common import MAX_SECTION_CHARS, CharBudget, finish
from kbdb.ingest.documents.pdfscan import check_streams
from kbdb.ingest.formats import FormatRejectedError
from kbdb.ingest.section import ParsedDocument, RawSection

HEADING_SIZE_RATIO = 1.2
"""A line is a heading when its font is this much larger than the body text's."""

MAX_HEADING_CHARS = 120

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_JUNK = {"\ufffe", "\uffff", "\x02", "\x00"}
_SPACE = re.compile(r"[ \t]+")
_NUMBERING = re.compile(r"^[\dIVXivx]+(?:\.\d+)*\.?\s+")


@dataclass
class _Line:
    text: str
    index: int  # PDFium character index of its first character on the page


@dataclass(frozen=True)
class _Start:
    page: int  # 0-based
    line: int
    heading: str
    level: int
    skip: int  # lines of the heading to leave out of the content


def split(data: bytes, *, name: str) -> ParsedDocument:
    """Split a PDF's bytes.

    Raises:
        FormatRejectedError: ``ENCRYPTED_DOCUMENT`` (a password is needed),
            ``CONTENT_TOO_LARGE`` (a stream or the text is over a limit) or ``NO_TEXT``.
    """
    check_streams(data)
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise FormatRejectedError(
                "pdf file is encrypted with a password",
                skip_code="ENCRYPTED_DOCUMENT",
                hint="save a copy without the password to learn it",
            ) from None
        raise
    try:
        budget = CharBudget("pdf")
        pages: list[list[_Line]] = []
        sizes: list[list[float]] = []
        outline = _outline(doc)
        for number in range(len(doc)):
            lines, line_sizes = _read_page(doc, number, budget, with_sizes=not outline)
            pages.append(lines)
            sizes.append(line_sizes)
        starts = _outline_starts(doc, outline, pages) if outline else _font_starts(pages, sizes)
        title = _metadata_title(doc)
    finally:
        doc.close()
    # "Page 1" is no title: a PDF without headings has only its metadata's
    return finish(
        _sections(pages, starts), title=title, kind="pdf", title_from_headings=bool(starts)
    )


def _read_page(
    doc: pdfium.PdfDocument, number: int, budget: CharBudget, *, with_sizes: bool
) -> tuple[list[_Line], list[float]]:
    page = doc[number]
    try:
        textpage = page.get_textpage()
        try:
            text = budget.take(textpage.get_text_range())
            lines: list[_Line] = []
            sizes: list[float] = []
            pos = 0
            for m in _LINE_BREAK.finditer(text + "\n"):
                raw = text[pos : m.start()]
                lines.append(_Line(_clean(raw), pos))
                if with_sizes:
                    sizes.append(_font_size(textpage, pos, raw))
                pos = m.end()
            return lines, sizes
        finally:
            textpage.close()
    finally:
        page.close()


def _clean(text: str) -> str:
    text = "".join(c for c in text if c not in _JUNK and unicodedata.category(c) != "Cc")
    return _SPACE.sub(" ", text).strip()


def _font_size(textpage: pdfium.PdfTextPage, start: int, raw: str) -> float:
    """The font size of a line: that of its first non-blank character."""
    offset = len(raw) - len(raw.lstrip())
    if offset >= len(raw):
        return 0.0
    return float(pdfium_c.FPDFText_GetFontSize(textpage, start + offset))


def _outline(doc: pdfium.PdfDocument) -> list[tuple[int, str, int, float | None]]:
    """(level from 1, title, 0-based page, top of the destination or None) of each
    outline entry that points into the document, in document order."""
    entries = []
    for item in doc.get_toc(max_depth=6):
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        title = _clean(item.get_title() or "")
        if index is None or not 0 <= index < len(doc) or not title:
            continue
        top = None
        mode, pos = dest.get_view() if dest is not None else (0, [])
        if mode == pdfium_c.PDFDEST_VIEW_XYZ and len(pos) >= 2 and pos[1]:
            top = float(pos[1])
        entries.append((item.level + 1, title, index, top))
    # an outline out of page order (a chapter list sorted by name) places nothing well
    pages = [e[2] for e in entries]
    return entries if pages == sorted(pages) else sorted(entries, key=lambda e: e[2])


def _outline_starts(
    doc: pdfium.PdfDocument,
    outline: list[tuple[int, str, int, float | None]],
    pages: list[list[_Line]],
) -> list[_Start]:
    starts: list[_Start] = []
    cursor = (0, 0)
    for level, title, page_index, top in outline:
        lines = pages[page_index]
        first = cursor[1] if cursor[0] == page_index else 0
        at = _line_at_title(lines, title, first)
        if at is None and top is not None:
            at = _line_below(doc, page_index, lines, top, first)
        line = first if at is None and cursor[0] == page_index else (at or 0)
        skip = 1 if at is not None and _is_title(lines[at].text, title) else 0
        starts.append(_Start(page_index, line, title, min(level, 6), skip))
        cursor = (page_index, line + skip)
    return starts


def _line_at_title(lines: list[_Line], title: str, first: int) -> int | None:
    for i in range(first, len(lines)):
        if _is_title(lines[i].text, title):
            return i
    return None


def _is_title(line: str, title: str) -> bool:
    norm = _fold(line)
    return (
        bool(norm)
        and norm in {_fold(title), _fold(_NUMBERING.sub("", title))}
        or (_fold(_NUMBERING.sub("", line)) == _fold(title))
    )


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def _line_below(
    doc: pdfium.PdfDocument, page_index: int, lines: list[_Line], top: float, first: int
) -> int | None:
    """The first line from ``first`` whose first character lies at or below ``top``."""
    page = doc[page_index]
    try:
        textpage = page.get_textpage()
        try:
            for i in range(first, len(lines)):
                if not lines[i].text:
                    continue
                _, _, _, char_top = textpage.get_charbox(lines[i].index)
                if char_top <= top + 1:
                    return i
            return None
        finally:
            textpage.close()
    finally:
        page.close()


def _font_starts(pages: list[list[_Line]], sizes: list[list[float]]) -> list[_Start]:
    weights: Counter[float] = Counter()
    for lines, line_sizes in zip(pages, sizes, strict=True):
        for line, size in zip(lines, line_sizes, strict=True):
            if line.text and size > 0:
                weights[round(size * 2) / 2] += len(line.text)
    if not weights:
        return []
    body = weights.most_common(1)[0][0]
    heads: list[tuple[int, int, str, float]] = []
    for p, (lines, line_sizes) in enumerate(zip(pages, sizes, strict=True)):
        for i, (line, size) in enumerate(zip(lines, line_sizes, strict=True)):
            if _is_heading(line.text, size, body):
                heads.append((p, i, line.text, round(size * 2) / 2))
    levels = {
        s: min(rank + 1, 3) for rank, s in enumerate(sorted({h[3] for h in heads}, reverse=True))
    }
    starts: list[_Start] = []
    for p, i, text, size in heads:
        last = starts[-1] if starts else None
        if (
            last is not None
            and last.page == p
            and last.line + last.skip == i
            and (levels[size] == last.level)
        ):
            starts[-1] = _Start(p, last.line, f"{last.heading} {text}", last.level, last.skip + 1)
            continue
        starts.append(_Start(p, i, text, levels[size], 1))
    return starts


def _is_heading(text: str, size: float, body: float) -> bool:
    return (
        size >= body * HEADING_SIZE_RATIO
        and 2 <= len(text) <= MAX_HEADING_CHARS
        and any(c.isalpha() for c in text)
    )


def _sections(pages: list[list[_Line]], starts: list[_Start]) -> list[RawSection]:
    if not starts:
        return [
            s
            for p, lines in enumerate(pages)
            if any(line.text for line in lines)
            for s in _chunks(f"Page {p + 1}", 1, p, [(p, lines)])
        ]
    raw: list[RawSection] = []
    bounds = [(s.page, s.line) for s in starts] + [(len(pages), 0)]
    if bounds[0] != (0, 0):
        raw.extend(_chunks("", 0, 0, _slice(pages, (0, 0), bounds[0])))
    for s, end in zip(starts, bounds[1:], strict=True):
        begin = (s.page, s.line + s.skip)
        raw.extend(_chunks(s.heading, s.level, s.page, _slice(pages, begin, end)))
    return raw


def _slice(
    pages: list[list[_Line]], begin: tuple[int, int], end: tuple[int, int]
) -> list[tuple[int, list[_Line]]]:
    """The lines from ``begin`` up to ``end`` (page, line), page by page."""
    out = []
    for p in range(begin[0], min(end[0], len(pages) - 1) + 1):
        lo = begin[1] if p == begin[0] else 0
        hi = end[1] if p == end[0] else len(pages[p])
        if p < end[0] or hi > lo:
            out.append((p, pages[p][lo:hi]))
    return out


def _chunks(
    heading: str, level: int, first_page: int, parts: list[tuple[int, list[_Line]]]
) -> list[RawSection]:
    """A section of the pages' lines, cut at page bounds past ``MAX_SECTION_CHARS`` (and
    inside a page only when one page alone is longer)."""
    out: list[RawSection] = []
    text: list[str] = []
    page = first_page
    size = 0
    for p, lines in parts:
        for line in (ln.text for ln in lines):
            if size + len(line) > MAX_SECTION_CHARS and text:
                out.append(_raw(heading, level, page, text))
                text, size, page = [], 0, p
            text.append(line)
            size += len(line) + 1
        if text and text[-1]:
            text.append("")  # a blank line between pages
    if text or heading and not out:
        out.append(_raw(heading, level, page, text))
    return out


def _raw(heading: str, level: int, page: int, lines: list[str]) -> RawSection:
    content = re.sub(r"\n{3,}", "\n\n", "\n".join(lines).strip("\n"))
    content = f"{content}\n" if content else ""
    return RawSection(heading, level, content, content, "", page=page + 1)


def _metadata_title(doc: pdfium.PdfDocument) -> str | None:
    title = _clean(doc.get_metadata_value("Title") or "")
    return title or None
