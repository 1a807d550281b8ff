"""The ``kbdb search`` table without rich: the layout rich draws, for a fraction of the start-up.

Importing rich's console and table and drawing one costs more than the search itself on a
cold start (DESIGN.md §5: a lexical ``kbdb search`` must not load rich's heavy parts;
benches/bench_cold_start.py). This module draws the same table as rich's ``Table`` with
``box.SIMPLE_HEAD``, no outer edge, one space of padding, a blank line between rows
and the flexible column taking the remaining width: word wrap as rich does it, wide (CJK)
characters as two cells, and ANSI styles only when colour is on.
``tests/cli/test_table.py`` checks it against rich, character for character.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Sequence
from typing import Literal, TextIO

Span = tuple[str, str]
"""A run of text and its style: space-separated words of ``_SGR`` (``"bold yellow"``)."""

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
_SGR["magenta"] = "35"
_WORD = re.compile(r"\s*\S+\s*")


class Column:
    """``width``: a fixed content width; else the widest content (``flexible`` columns get
    the width that remains). ``fold``: cut words longer than the width across lines (else
    they are cut with an ellipsis); ``no_wrap``: never wrap. A plain class, not a
    dataclass: creating one of those costs more than drawing the table."""

    __slots__ = ("flexible", "fold", "header", "justify", "no_wrap", "style", "width")

    def __init__(
        self,
        header: str,
        *,
        justify: Literal["left", "right"] = "left",
        width: int | None = None,
        flexible: bool = False,
        fold: bool = False,
        no_wrap: bool = False,
        style: str = "",
    ) -> None:
        self.header = header
        self.justify = justify
        self.width = width
        self.flexible = flexible
        self.fold = fold
        self.no_wrap = no_wrap
        self.style = style


def color_enabled(stream: TextIO) -> bool:
    """Colour only on a terminal, as rich decides: NO_COLOR turns it off, FORCE_COLOR on,
    TERM=dumb off."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console_width() -> int:
    """``COLUMNS`` when set, else the size of the first terminal among stdin, stdout and
    stderr (so ``kbdb search x | less`` still fits the screen), else 80: rich's rule."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
        if width > 0:
            return width
    return 80


def char_width(ch: str) -> int:
    if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\ufeff":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


class _Widths(dict[str, int]):
    """``char_width`` of each character met so far: a table of ten rows measures the same
    few hundred characters thousands of times (most of the drawing time of a cold
    ``kbdb search``, whose snippets end in "…")."""

    def __missing__(self, ch: str) -> int:
        width = self[ch] = char_width(ch)
        return width


_WIDTHS = _Widths()


def cell_len(text: str) -> int:
    """Terminal cells ``text`` takes: wide characters count two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(map(_WIDTHS.__getitem__, text))


def _chop(text: str, width: int) -> list[str]:
    """``text`` cut into pieces of at most ``width`` cells."""
    out: list[str] = []
    line, size = "", 0
    for ch in text:
        w = _WIDTHS[ch]
        if size + w > width and line:
            out.append(line)
            line, size = "", 0
        line += ch
        size += w
    if line:
        out.append(line)
    return out


def _breaks(text: str, width: int, fold: bool) -> list[int]:
    """Where rich breaks one line of ``text`` to fit ``width`` (its ``divide_line``)."""
    breaks: list[int] = []
    offset = 0
    for m in _WORD.finditer(text):
        start, word = m.start(), m.group(0)
        length = cell_len(word.rstrip())
        if width - offset >= length:
            offset += cell_len(word)
        elif length > width:
            if fold:
                pieces = _chop(word, width)
                for i, piece in enumerate(pieces):
                    if start:
                        breaks.append(start)
                    if i == len(pieces) - 1:
                        offset = cell_len(piece)
                    else:
                        start += len(piece)
            else:
                if start:
                    breaks.append(start)
                offset = cell_len(word)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(word)
    return breaks


def _slice(spans: Sequence[Span], start: int, end: int) -> list[Span]:
    out: list[Span] = []
    pos = 0
    for text, style in spans:
        a, b = max(start, pos), min(end, pos + len(text))
        if a < b:
            out.append((text[a - pos : b - pos], style))
        pos += len(text)
    return out


def _truncate(spans: list[Span], width: int, ellipsis: bool) -> list[Span]:
    """Cut a line to ``width`` cells (the last one an ellipsis when asked)."""
    if sum(cell_len(t) for t, _ in spans) <= width:
        return spans
    keep = width - 1 if ellipsis else width
    out: list[Span] = []
    used = 0
    for text, style in spans:
        piece = ""
        for ch in text:
            w = _WIDTHS[ch]
            if used + w > keep:
                break
            piece += ch
            used += w
        if piece:
            out.append((piece, style))
        if used >= keep or len(piece) < len(text):
            break
    if used < keep:  # a wide character did not fit: pad its half
        out.append((" " * (keep - used), ""))
    if ellipsis:
        out.append(("…", out[-1][1] if out else ""))
    return out


def wrap(spans: Sequence[Span], width: int, *, fold: bool = True) -> list[list[Span]]:
    """Styled text cut into lines of at most ``width`` cells, at newlines and between
    words, as rich's ``Text.wrap`` does."""
    text = "".join(t for t, _ in spans)
    lines: list[list[Span]] = []
    pos = 0
    for raw in text.split("\n"):
        line = _slice(spans, pos, pos + len(raw))
        cuts = [0, *_breaks(raw, width, fold), len(raw)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            piece = _slice(line, a, b)
            lines.append(_truncate(_rstrip_beyond(piece, width), width, ellipsis=not fold))
        pos += len(raw) + 1
    return lines


def _rstrip_beyond(spans: list[Span], width: int) -> list[Span]:
    """Drop trailing whitespace that runs past ``width`` (rich's ``rstrip_end``, which
    counts characters, not cells: a line with wide characters keeps its space and is then
    cut with an ellipsis, as rich draws it)."""
    text = "".join(t for t, _ in spans)
    if len(text) <= width:
        return spans
    stripped = text.rstrip()
    excess = min(len(text) - len(stripped), len(text) - width)
    return _slice(spans, 0, len(text) - excess) if excess else spans


def _pad(spans: Sequence[Span], width: int, justify: str) -> list[Span]:
    gap = width - sum(cell_len(t) for t, _ in spans)
    if gap <= 0:
        return list(spans)
    return [*spans, (" " * gap, "")] if justify == "left" else [(" " * gap, ""), *spans]


def styled(spans: Sequence[Span], color: bool, base: str = "") -> str:
    """The spans as a string, with ANSI SGR codes when ``color``."""
    if not color:
        return "".join(t for t, _ in spans)
    out = []
    for text, style in spans:
        words = f"{base} {style}".split()
        codes = ";".join(_SGR[w] for w in dict.fromkeys(words) if w in _SGR)
        out.append(f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text)
    return "".join(out)


def _content_width(cells: Sequence[Sequence[Span]]) -> int:
    return max(
        (cell_len(line) for cell in cells for line in "".join(t for t, _ in cell).split("\n")),
        default=0,
    )


def draw(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Sequence[Span]]],
    *,
    width: int,
    color: bool,
    rule: str = "─",
) -> str | None:
    """The table: header, a rule, then the rows with a blank line between them. None when
    ``width`` leaves the flexible column no room (rich then shrinks the other columns;
    the caller draws with rich)."""
    widths = []
    for i, col in enumerate(columns):
        if col.width is not None or col.flexible:  # a flexible one gets what remains below
            widths.append(col.width or 0)
            continue
        cells = [[(col.header, "")], *(row[i] for row in rows)]
        widths.append(_content_width(cells))
    fixed = sum(w + 2 for w, c in zip(widths, columns, strict=True) if not c.flexible)
    remaining = width - (len(columns) - 1) - fixed
    flexible = [i for i, c in enumerate(columns) if c.flexible]
    for i in flexible:
        widths[i] = remaining // len(flexible) - 2
        if widths[i] < 1:
            return None
    total = sum(w + 2 for w in widths) + len(columns) - 1

    def cell_lines(col: Column, w: int, cell: Sequence[Span]) -> list[list[Span]]:
        if col.no_wrap:
            return [_slice(cell, a, b) for a, b in _line_bounds(cell)]
        return wrap(cell, w, fold=col.fold)

    def line(cells: Sequence[Sequence[Span]], base: Sequence[str]) -> str:
        parts = []
        for col, w, cell, extra in zip(columns, widths, cells, base, strict=True):
            body = styled(_pad(cell, w, col.justify), color, extra or col.style)
            parts.append(f" {body} ")
        return " ".join(parts)

    def block(cells: Sequence[Sequence[Span]], style: str) -> list[str]:
        wrapped = [
            cell_lines(c, w, cell) for c, w, cell in zip(columns, widths, cells, strict=True)
        ]
        height = max(len(lines) for lines in wrapped)
        return [
            line([lines[k] if k < len(lines) else [] for lines in wrapped], [style] * len(columns))
            for k in range(height)
        ]

    out = [*block([[(col.header, "")] for col in columns], "bold"), rule * total]
    for n, row in enumerate(rows):
        if n:
            out.append(" " * total)
        out += block(row, "")
    return "\n".join(out) + "\n"


def _line_bounds(spans: Sequence[Span]) -> list[tuple[int, int]]:
    text = "".join(t for t, _ in spans)
    bounds, pos = [], 0
    for raw in text.split("\n"):
        bounds.append((pos, pos + len(raw)))
        pos += len(raw) + 1
    return bounds


_CONTROL = dict.fromkeys([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])


def clean(text: str) -> str:
    """``text`` without control characters (an escape sequence in a learned document must
    not reach the terminal); tabs become spaces to the next multiple of 8."""
    return text.translate(_CONTROL).expandtabs(8)


def write(text: str) -> None:
    """Write to stdout; characters its encoding lacks become ``?``."""
    encoding = sys.stdout.encoding or "utf-8"
    if not encoding.lower().replace("-", "").startswith("utf"):
        text = text.encode(encoding, "replace").decode(encoding)
    sys.stdout.write(text)
    sys.stdout.flush()
