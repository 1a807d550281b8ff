"""What the document splitters share: limits, ZIP checks, Markdown tables, bounded sections.

The limits bound what one file can cost, whatever it claims: a file is read whole (it is
under ``learn.max_file_bytes``), but what it inflates to is checked before a library
parses it (the ZIP directory of Office and EPUB files here, the PDF streams in
``pdfscan``) and the text taken out is counted as it grows. A file over a limit is
rejected with ``CONTENT_TOO_LARGE``, never learned in part without a word.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Iterable, Sequence

from kbdb.ingest.formats import FormatRejectedError
from kbdb.ingest.section import ParsedDocument, RawSection, build_sections

MAX_SECTION_CHARS = 20_000
"""A section grows to about this many characters; longer text (a chapter with no
headings, a long sheet) is cut into several sections at page, paragraph or row bounds."""

MAX_DOCUMENT_CHARS = 16_000_000
"""Text taken out of one file, in characters (a 5,000-page book holds about 15 million)."""

MAX_ZIP_ENTRIES = 10_000
"""Members of an Office or EPUB file (a document has tens, an illustrated book hundreds)."""

MAX_ZIP_MEMBER_BYTES = 64 * 1024 * 1024
"""Declared uncompressed size of one member (the XML of a 1,000-page document is ~10 MiB)."""

MAX_ZIP_TOTAL_BYTES = 256 * 1024 * 1024
"""Declared uncompressed size of all members together."""

CONTENT_TOO_LARGE = "CONTENT_TOO_LARGE"
NO_TEXT = "NO_TEXT"
"""Skip code: a document with no text to learn (a scanned PDF without a text layer)."""

_EOCD = b"PK\x05\x06"
_CELL_BREAK = re.compile(r"\s*\n\s*")


def too_large(reason: str) -> FormatRejectedError:
    return FormatRejectedError(
        reason,
        skip_code=CONTENT_TOO_LARGE,
        hint="a document this large is refused so that one file cannot exhaust memory",
    )


def open_zip(data: bytes, *, kind: str) -> zipfile.ZipFile:
    """Open an Office or EPUB file after checking its directory: the number of members
    and their declared uncompressed sizes. Python's ``zipfile`` stops a member at its
    declared size (and then fails its CRC check), so a member that lies about its size
    cannot inflate past it either.

    Raises:
        FormatRejectedError: ``CONTENT_TOO_LARGE`` for a ZIP bomb or a huge file.
        zipfile.BadZipFile: not a ZIP file (reported as ``UNREADABLE_DOCUMENT``).
    """
    entries = _declared_entries(data)
    if entries is not None and entries > MAX_ZIP_ENTRIES:
        raise too_large(f"{kind} file has {entries} parts, over {MAX_ZIP_ENTRIES}")
    archive = zipfile.ZipFile(io.BytesIO(data))
    infos = archive.infolist()
    if len(infos) > MAX_ZIP_ENTRIES:
        raise too_large(f"{kind} file has {len(infos)} parts, over {MAX_ZIP_ENTRIES}")
    total = 0
    for info in infos:
        if info.file_size > MAX_ZIP_MEMBER_BYTES:
            raise too_large(
                f"{kind} part {info.filename!r} inflates to {info.file_size} bytes,"
                f" over {MAX_ZIP_MEMBER_BYTES}"
            )
        total += info.file_size
    if total > MAX_ZIP_TOTAL_BYTES:
        raise too_large(f"{kind} file inflates to {total} bytes, over {MAX_ZIP_TOTAL_BYTES}")
    return archive


def _declared_entries(data: bytes) -> int | None:
    """The member count in the end-of-central-directory record, read before ``zipfile``
    builds an object per member; None when there is no record (``zipfile`` then fails).
    A ZIP64 file (count 0xFFFF) counts as too many: no document needs that."""
    at = data.rfind(_EOCD, max(0, len(data) - 22 - 0xFFFF))
    if at < 0 or at + 22 > len(data):
        return None
    (count,) = struct.unpack_from("<H", data, at + 10)
    return int(count) if count != 0xFFFF else MAX_ZIP_ENTRIES + 1


class CharBudget:
    """Counts the characters a splitter takes out of one file against
    ``MAX_DOCUMENT_CHARS``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.used = 0

    def take(self, text: str) -> str:
        self.used += len(text)
        if self.used > MAX_DOCUMENT_CHARS:
            raise too_large(
                f"{self.kind} file holds more than {MAX_DOCUMENT_CHARS} characters of text"
            )
        return text


def cell_text(value: object, *, limit: int = 1_000) -> str:
    """A table cell as one Markdown-safe line: pipes escaped, line breaks as spaces,
    cut to ``limit`` characters."""
    text = "" if value is None else str(value)
    text = _CELL_BREAK.sub(" ", text.strip()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_table(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cell texts (already ``cell_text``-ed) as a Markdown table whose first row
    is the header; short rows are padded. Empty string for no rows."""
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    if width == 0:
        return ""
    lines = [_row(rows[0], width), "| " + " | ".join(["---"] * width) + " |"]
    lines.extend(_row(r, width) for r in rows[1:])
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str], width: int) -> str:
    return "| " + " | ".join(list(cells) + [""] * (width - len(cells))) + " |"


def bounded(
    heading: str, level: int, blocks: Iterable[str], *, page: int | None = None
) -> list[RawSection]:
    """One section of ``blocks`` (paragraphs, tables: each a string) under ``heading``,
    or several when they hold more than ``MAX_SECTION_CHARS``: the later ones repeat
    the heading (``build_sections`` makes their paths unique). A single block longer
    than the limit is cut at line breaks, or at the limit when it has none."""
    out: list[RawSection] = []
    parts: list[str] = []
    size = 0
    for block in blocks:
        for piece in _pieces(block.strip("\n")):
            if parts and size + len(piece) > MAX_SECTION_CHARS:
                out.append(_raw(heading, level, parts, page))
                parts, size = [], 0
            parts.append(piece)
            size += len(piece) + 2
    if parts or heading:
        out.append(_raw(heading, level, parts, page))
    return out


def _pieces(block: str) -> list[str]:
    if len(block) <= MAX_SECTION_CHARS:
        return [block] if block.strip() else []
    pieces: list[str] = []
    current = ""
    for line in block.split("\n"):
        while len(line) > MAX_SECTION_CHARS:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:MAX_SECTION_CHARS])
            line = line[MAX_SECTION_CHARS:]
        if current and len(current) + len(line) + 1 > MAX_SECTION_CHARS:
            pieces.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    if current.strip():
        pieces.append(current)
    return pieces


def _raw(heading: str, level: int, parts: list[str], page: int | None) -> RawSection:
    content = "".join(f"{p}\n\n" for p in parts).rstrip("\n")
    content = f"{content}\n" if content else ""
    return RawSection(heading, level, content, content, "", page=page)


def finish(
    raw: Sequence[RawSection], *, title: str | None, kind: str, title_from_headings: bool = True
) -> ParsedDocument:
    """The document of ``raw`` sections; ``NO_TEXT`` when none holds any text. Without a
    ``title``, the first level-1 heading is the title when ``title_from_headings``.

    Raises:
        FormatRejectedError: ``NO_TEXT``.
    """
    if not any(s.content.strip() or s.heading.strip() for s in raw):
        raise FormatRejectedError(
            f"{kind} file has no text to learn",
            skip_code=NO_TEXT,
            hint="a scanned document needs OCR (a text layer) before it can be learned",
        )
    sections = build_sections(raw)
    if title is None and title_from_headings:
        title = next((s.heading for s in sections if s.level == 1 and s.heading), None)
    return ParsedDocument(title=title, description=None, tags=(), sections=sections, warnings=())
