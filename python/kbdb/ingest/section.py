"""The splitter's output types and the heading-tree logic every splitter shares.

A splitter (Markdown, HTML, plain text) turns one document into ``ParsedSection``s. It
knows nothing of kbids, stores or files: the facade hashes and stores what comes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbdb.ingest.links import Link

FRONT_MATTER_INVALID = "front_matter_invalid"
"""Warning: the YAML front matter could not be read; the block was skipped."""

HTML_INVALID = "html_invalid"
"""Warning: the HTML parser gave up part way; the text parsed so far was kept."""


@dataclass(frozen=True)
class ParsedSection:
    """One section of a split document.

    Attributes:
        heading: Heading text, stripped, inline markup kept as written. ``""`` for a
            preamble or a headless section.
        level: Heading depth 1–6; 0 for a preamble or a headless section.
        parent: Index in ``ParsedDocument.sections`` of the enclosing section, or None.
            Level-0 sections never enclose anything.
        content: Raw section text without its heading line(s), fences kept, lines ending
            in ``\\n`` (line endings are normalized).
        body: ``content`` with fenced code blocks (fence lines included) removed; the
            text indexed as the ``body`` field.
        code: The inner text of the fenced code blocks, joined by ``\\n``; indexed as the
            ``code`` field.
        heading_path: Headings from the top of the tree down to this section, for
            ``source_key``. Empty for level 0. Unique within a document: a repeated path
            gets `` (2)``, `` (3)``… appended to its last element.
        speaker: Who said it, for a conversation turn (``kbdb.ingest.chat``); else None.
        time: When it was said (the store's UTC form), for a turn with a time; else None.
        context: Text indexed with the section but not part of its content (stored as
            its description): for a conversation turn, the turn before it.
        start_line: The first line of the section (its heading line, if any) in the
            source text, counting from 1; None where lines mean nothing (a PDF page).
        end_line: The last line of the section in the source text, inclusive.
        page: The page a section of a paged format (PDF) starts on, from 1; else None.
        links: The links in its text (``kbdb.ingest.links``), each with its line as an
            offset from ``start_line``.
    """

    heading: str
    level: int
    parent: int | None
    content: str
    body: str
    code: str
    heading_path: tuple[str, ...]
    speaker: str | None = None
    time: str | None = None
    context: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    links: tuple[Link, ...] = ()


@dataclass(frozen=True)
class ParsedDocument:
    """A split document.

    Attributes:
        title: Front-matter title, else the first non-empty level-1 heading, else None.
        description: Front-matter description, or None.
        tags: Front-matter tags, then inline ``#tags``, in order, without duplicates.
        sections: The sections in document order.
        warnings: Warning codes such as ``front_matter_invalid``.
        aliases: Other names of the document (front matter ``aliases``).
    """

    title: str | None
    description: str | None
    tags: tuple[str, ...]
    sections: tuple[ParsedSection, ...]
    warnings: tuple[str, ...]
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class RawSection:
    """A section before the heading tree is resolved (internal to the splitters)."""

    heading: str
    level: int
    content: str
    body: str
    code: str
    start_line: int | None = None
    end_line: int | None = None
    page: int | None = None
    links: tuple[Link, ...] = ()


def build_sections(raw: Sequence[RawSection]) -> tuple[ParsedSection, ...]:
    """Resolve parents and heading paths for sections in document order.

    The parent of a section is the nearest previous section of a smaller, non-zero
    level, so ``#`` followed by ``###`` still parents correctly. Level-0 sections have
    no parent and are nobody's parent.

    Args:
        raw: Sections in document order.

    Returns:
        The finished sections.
    """
    out: list[ParsedSection] = []
    stack: list[int] = []  # indices of the open headings, levels strictly increasing
    seen_paths: dict[tuple[str, ...], int] = {}
    for index, section in enumerate(raw):
        if section.level == 0:
            parent: int | None = None
            path: tuple[str, ...] = ()
        else:
            while stack and out[stack[-1]].level >= section.level:
                stack.pop()
            parent = stack[-1] if stack else None
            base = out[parent].heading_path if parent is not None else ()
            path = unique_path(base + (section.heading,), seen_paths)
            stack.append(index)
        out.append(
            ParsedSection(
                heading=section.heading,
                level=section.level,
                parent=parent,
                content=section.content,
                body=section.body,
                code=section.code,
                heading_path=path,
                start_line=section.start_line,
                end_line=section.end_line,
                page=section.page,
                links=section.links,
            )
        )
    return tuple(out)


def unique_path(path: tuple[str, ...], seen: dict[tuple[str, ...], int]) -> tuple[str, ...]:
    """Make ``path`` unique among the paths already handed out (``seen``, updated),
    suffixing the leaf with `` (2)``, `` (3)``…"""
    count = seen.get(path, 0) + 1
    seen[path] = count
    if count == 1:
        return path
    while True:
        candidate = path[:-1] + (f"{path[-1]} ({count})",)
        if candidate not in seen:
            seen[candidate] = 1
            return candidate
        count += 1


def document_title(sections: Sequence[ParsedSection]) -> str | None:
    """The first non-empty level-1 heading, or None."""
    for section in sections:
        if section.level == 1 and section.heading:
            return section.heading
    return None


def clean_tags(value: object) -> tuple[str, ...] | None:
    """Tags from a front-matter or meta value: a list, or a comma-separated string.

    Args:
        value: The raw value.

    Returns:
        Stripped, non-empty, de-duplicated tags in order; None when the value has a
        shape tags cannot take (a mapping).
    """
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[object] = list(value.split(","))
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
    elif isinstance(value, dict):
        return None
    else:
        items = [value]
    tags: list[str] = []
    for item in items:
        if item is None or isinstance(item, (dict, list)):
            continue
        tag = str(item).strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags)
