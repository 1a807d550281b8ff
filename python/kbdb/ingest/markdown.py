"""Split Markdown (and plain text) into sections at headings (SPEC §3, Splitting).

One pass over the lines, a small state machine, no Markdown library. The rules:

- ATX headings: ``#``..``######`` after at most 3 spaces, then a space, a tab or the end
  of the line (``#foo`` is text). An optional closing run of ``#`` after a space is
  dropped. A bare ``#`` is a heading with empty text.
- Setext headings: a line of ``=`` (level 1) or ``-`` (level 2), at most 3 spaces
  indented, directly under a paragraph line. Only that one line becomes the heading
  (CommonMark would take the whole paragraph). A ``---`` after a blank line, a list
  item, a quote or a heading is a thematic break and stays text.
- Fenced code: ```` ``` ```` or ``~~~`` (3 or more, info string allowed) opens a fence;
  a line of the same character, at least as long, closes it; an unclosed fence runs to
  the end of the document. Headings inside fences do not count. Unlike CommonMark, a
  fence may be indented by any amount, so fences nested in list items are code too.
  Indented (4-space) code blocks stay in ``body``.
- Front matter: a first line ``---`` and a closing ``---`` or ``...`` line. It supplies
  title, description and tags and belongs to no section. If the YAML does not parse or
  is not a mapping, the block is still skipped and the warning ``front_matter_invalid``
  is added. Without a closing line the first ``---`` is ordinary text.
- Text before the first heading is a level-0 preamble with heading ``""``; a
  whitespace-only preamble is dropped. Headed sections are kept even when empty.

Line endings are normalized to ``\\n`` and a leading BOM is dropped; otherwise section
content is the input verbatim, so heading lines plus contents rebuild the input.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from kbdb.errors import UnsupportedTypeError
from kbdb.ingest.htmlsplit import split_html
from kbdb.ingest.links import (
    MAX_LINKS,
    Link,
    find_links,
    find_tags,
    reference_definitions,
)
from kbdb.ingest.section import (
    FRONT_MATTER_INVALID,
    ParsedDocument,
    ParsedSection,
    RawSection,
    build_sections,
    clean_tags,
    document_title,
)

logger = logging.getLogger("kbdb")

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?\Z")
_ATX_CLOSING = re.compile(r"(?:\A|[ \t]+)#+\Z")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)\Z")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-+*]|\d{1,9}[.)])(?:[ \t]|\Z)")
_QUOTE = re.compile(r" {0,3}>")
_THEMATIC = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*\Z")
_FRONT_MATTER_END = ("---", "...")
MAX_ALIAS_CHARS = 200
MAX_ALIASES = 100
"""Aliases kept per document, the first in its front matter."""


@dataclass(frozen=True)
class _Heading:
    start: int  # index of the first heading line
    content_start: int  # index of the first content line
    level: int
    text: str


@dataclass
class _Fence:
    char: str
    length: int


def split_markdown(text: str, *, links: bool = True) -> ParsedDocument:
    """Split a Markdown document into sections at its headings.

    See the module docstring for the exact rules.

    Args:
        text: The Markdown source.
        links: Find the sections' links (``kbdb.ingest.links``); False leaves them empty.

    Returns:
        The document: title, description and tags from front matter (the title falls
        back to the first level-1 heading), sections in order, and warnings.
    """
    lines = _lines(text)
    warnings: list[str] = []
    meta: dict[str, object] = {}
    start = 0
    end = _front_matter_end(lines)
    if end is not None:
        start = end + 1
        parsed = _parse_front_matter("".join(lines[1:end]))
        if parsed is None:
            warnings.append(FRONT_MATTER_INVALID)
        else:
            meta = parsed

    headings = _find_headings(lines, start)
    raw: list[RawSection] = []
    first = headings[0].start if headings else len(lines)
    preamble = lines[start:first]
    inline_tags: list[str] = []
    budget = [MAX_LINKS if links else 0]  # links the document may still keep
    has_refs = links and "]:" in text
    refs = reference_definitions(_outside_fences(lines, start)) if has_refs else {}
    if any(line.strip() for line in preamble):
        span = _span(lines, start, first)
        # Offsets count from the section's first line, its first non-blank one.
        raw.append(
            _raw_section(
                "", 0, preamble, span, start + 1 - span[0], inline_tags, budget=budget, refs=refs
            )
        )
    for i, heading in enumerate(headings):
        stop = headings[i + 1].start if i + 1 < len(headings) else len(lines)
        raw.append(
            _raw_section(
                heading.text,
                heading.level,
                lines[heading.content_start : stop],
                _span(lines, heading.start, stop, headed=True),
                heading.content_start - heading.start,
                inline_tags,
                budget=budget,
                refs=refs,
            )
        )
    sections = build_sections(raw)

    title = _meta_str(meta.get("title"))
    tags = clean_tags(meta.get("tags"))
    if tags is None:
        warnings.append(FRONT_MATTER_INVALID)
        tags = ()
    aliases = _aliases(meta)
    return ParsedDocument(
        title=title if title is not None else document_title(sections),
        description=_meta_str(meta.get("description")),
        tags=tuple(dict.fromkeys((*tags, *inline_tags))),
        sections=sections,
        warnings=tuple(dict.fromkeys(warnings)),
        aliases=aliases,
    )


def split_text(text: str, *, heading: str = "") -> ParsedDocument:
    """Wrap plain text (any ``text/*`` but Markdown and HTML, or JSON) as one section.

    Args:
        text: The content. Line endings are normalized and a leading BOM dropped.
        heading: Optional heading for the section; the section stays level 0.

    Returns:
        A document with one level-0 section whose ``body`` is the whole text and whose
        ``code`` is empty; no sections when both the text and the heading are blank.
    """
    lines = _lines(text)
    content = "".join(lines)
    heading = heading.strip()
    if not heading and not content.strip():
        return ParsedDocument(None, None, (), (), ())
    first, last = _span(lines, 0, len(lines)) if content.strip() else (None, None)
    section = ParsedSection(
        heading=heading,
        level=0,
        parent=None,
        content=content,
        body=content,
        code="",
        heading_path=(),
        start_line=first,
        end_line=last,
    )
    return ParsedDocument(None, None, (), (section,), ())


def split_document(text: str, type: str, *, links: bool = True) -> ParsedDocument:
    """Split content with the splitter its MIME type calls for (SPEC §3).

    Args:
        text: The decoded content.
        type: ``text/markdown``, ``text/html``, another ``text/*`` or
            ``application/json`` (parameters such as ``; charset=utf-8`` are ignored).

    Returns:
        The split document.

    Raises:
        UnsupportedTypeError: For ``image/*`` (an image is one section the caller builds
            from its base64 data) and any other type.
    """
    mime = type.split(";", 1)[0].strip().lower()
    if mime == "text/markdown":
        return split_markdown(text, links=links)
    if mime == "text/html":
        return split_html(text, links=links)
    if mime.startswith("text/") or mime == "application/json":
        return split_text(text)
    raise UnsupportedTypeError(
        f"cannot split content of type {type}",
        hint="use text/markdown, text/html, another text/* type or application/json",
    )


def _lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (the last may lack one), endings normalized."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Not str.splitlines: it also breaks at \v, \f, \x1c, U+2028…, Markdown does not.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _front_matter_end(lines: list[str]) -> int | None:
    """Index of the closing front-matter line, or None when there is no front matter."""
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FRONT_MATTER_END:
            return i
    return None


def _parse_front_matter(source: str) -> dict[str, object] | None:
    """The front matter as a mapping ({} when empty), or None when it is invalid."""
    import yaml  # lazy: ~30 ms of import, needed only for front matter

    try:
        data = yaml.safe_load(source)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        # PyYAML raises ValueError for impossible dates such as 2024-13-45.
        logger.debug("front matter does not parse: %s", exc)
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        return None
    return {str(key): value for key, value in data.items()}


def _meta_str(value: object) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def _find_headings(lines: list[str], start: int) -> list[_Heading]:
    headings: list[_Heading] = []
    fence: _Fence | None = None
    paragraph = False  # the previous line is paragraph text that may become a heading
    for i in range(start, len(lines)):
        line = lines[i].rstrip("\n")
        if fence is not None:
            if _closes(line, fence):
                fence = None
            continue
        opened = _opens(line)
        if opened is not None:
            fence = opened
            paragraph = False
            continue
        atx = _ATX.match(line)
        if atx is not None:
            headings.append(_Heading(i, i + 1, len(atx.group(1)), _atx_text(atx.group(2))))
            paragraph = False
            continue
        setext = _SETEXT.match(line)
        if setext is not None and paragraph:
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append(_Heading(i - 1, i + 1, level, lines[i - 1].strip()))
            paragraph = False
            continue
        paragraph = _is_paragraph(line)
    return headings


def _atx_text(rest: str | None) -> str:
    if rest is None:
        return ""
    return _ATX_CLOSING.sub("", rest.strip(" \t")).strip()


def _opens(line: str) -> _Fence | None:
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    marker, info = match.group(1), match.group(2)
    if marker[0] == "`" and "`" in info:
        return None  # ```foo``` is inline code, not a fence
    return _Fence(marker[0], len(marker))


def _closes(line: str, fence: _Fence) -> bool:
    stripped = line.strip(" \t")
    return len(stripped) >= fence.length and stripped == fence.char * len(stripped)


def _is_paragraph(line: str) -> bool:
    """Whether a line is paragraph text, the only thing a setext underline can follow."""
    if not line.strip():
        return False
    if len(line) - len(line.lstrip(" ")) >= 4 or line.startswith("\t"):
        return False
    return not (_LIST_ITEM.match(line) or _QUOTE.match(line) or _THEMATIC.match(line))


def _span(lines: list[str], start: int, stop: int, *, headed: bool = False) -> tuple[int, int]:
    """The 1-based first and last line of ``lines[start:stop]`` as a citation shows it:
    blank lines at the ends left out (a headed section starts at its heading line)."""
    first = start
    if not headed:
        while first < stop - 1 and not lines[first].strip():
            first += 1
    last = stop - 1
    while last > first and not lines[last].strip():
        last -= 1
    return first + 1, last + 1


def _raw_section(
    heading: str,
    level: int,
    lines: list[str],
    span: tuple[int, int] | None = None,
    first: int = 0,
    tags: list[str] | None = None,
    *,
    budget: list[int] | None = None,
    refs: dict[str, str] | None = None,
) -> RawSection:
    """A section of ``lines`` (without the heading's own lines). ``first``: the offset of
    ``lines[0]`` from the section's first line, for its links; the inline tags of its
    text are appended to ``tags``. ``budget``: how many links the document may still
    keep (lowered by this section's; None: ``MAX_LINKS``)."""
    body: list[str] = []
    body_at: list[int] = []  # each body line's index in ``lines``
    blocks: list[str] = []
    fence: _Fence | None = None
    block: list[str] = []
    for at, raw_line in enumerate(lines):
        line = raw_line.rstrip("\n")
        if fence is not None:
            if _closes(line, fence):
                fence = None
                blocks.append("".join(block).removesuffix("\n"))
            else:
                block.append(raw_line)
            continue
        opened = _opens(line)
        if opened is not None:
            fence = opened
            block = []
        else:
            body.append(raw_line)
            body_at.append(at)
    if fence is not None:
        blocks.append("".join(block).removesuffix("\n"))
    code = "\n".join(b for b in blocks if b.strip())
    start, last = span if span is not None else (None, None)
    found: tuple[Link, ...] = ()
    left = budget[0] if budget is not None else MAX_LINKS
    if left > 0 and any("[" in line or (refs and "]" in line) for line in body):
        found = tuple(find_links(body, first, left, refs, rows=body_at))
        if budget is not None:
            budget[0] -= len(found)
    if tags is not None:
        tags.extend(t for t in find_tags(body) if t not in tags)
    return RawSection(heading, level, "".join(lines), "".join(body), code, start, last, links=found)


def content_links(content: str, *, headed: bool) -> tuple[Link, ...]:
    """The links of a section's Markdown content (without its heading line), their lines
    counted from the section's first line (``headed``: its heading line)."""
    lines = _lines(content)
    refs = reference_definitions(_outside_fences(lines, 0))
    return _raw_section("", 0, lines, None, 1 if headed else 0, refs=refs).links


def _outside_fences(lines: list[str], start: int) -> list[str]:
    """``lines[start:]`` without fenced code blocks."""
    out: list[str] = []
    fence: _Fence | None = None
    for raw in lines[start:]:
        line = raw.rstrip("\n")
        if fence is not None:
            if _closes(line, fence):
                fence = None
        elif (opened := _opens(line)) is not None:
            fence = opened
        else:
            out.append(line)
    return out


def _aliases(meta: dict[str, object]) -> tuple[str, ...]:
    """Front matter ``aliases`` (or ``alias``): a list or one string; values that are
    not text (a mapping, a list inside the list) are ignored, numbers and dates read as
    written. At most ``MAX_ALIASES`` of at most ``MAX_ALIAS_CHARS`` characters each."""
    value = meta.get("aliases", meta.get("alias"))
    if value is None or isinstance(value, dict):
        return ()
    items = value if isinstance(value, list) else [value]
    out: dict[str, None] = {}
    for item in items:
        if item is None or isinstance(item, (dict, list, bool)):
            continue
        text = str(item).strip()
        if text and len(text) <= MAX_ALIAS_CHARS:
            out.setdefault(text, None)
            if len(out) == MAX_ALIASES:
                break
    return tuple(out)


__all__ = [
    "ParsedDocument",
    "ParsedSection",
    "split_document",
    "split_html",
    "split_markdown",
    "split_text",
]
