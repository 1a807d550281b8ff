"""Split HTML into sections at ``<h1>``–``<h6>`` on its visible text (SPEC §3).

Built on the standard library's forgiving ``html.parser``. Only visible text is kept:
``script``, ``style``, ``template`` and ``noscript`` are dropped, and ``head`` is dropped
until ``</head>`` or ``<body>``. Whitespace is collapsed and block elements break lines.
``<pre>`` blocks are code: they stay in ``content`` as fenced blocks (so content reads
like Markdown), leave ``body`` and fill ``code``. Inline ``<code>`` stays in the
running text, as inline backticks do in Markdown. The document title is ``<title>``,
else the first non-empty ``<h1>``; ``<meta name="description">`` and
``<meta name="keywords">`` give the description and tags.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from html.parser import HTMLParser

from kbdb.ingest.links import MAX_LINKS, Link, path_link
from kbdb.ingest.section import (
    HTML_INVALID,
    ParsedDocument,
    RawSection,
    build_sections,
    clean_tags,
    document_title,
)

logger = logging.getLogger("kbdb")

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_HIDDEN = frozenset({"script", "style", "template", "noscript"})
_BLOCKS = frozenset(
    {
        *("address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl"),
        *("dt", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main"),
        *("nav", "ol", "p", "section", "summary", "table", "tbody", "td", "th", "thead"),
        *("tr", "ul"),
    }
)
_SPACE = re.compile(r"\s+")


class _Splitter(HTMLParser):
    def __init__(self, *, links: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self._find_links = links
        self.raw: list[RawSection] = []
        self.title: str | None = None
        self.description: str | None = None
        self.keywords: str | None = None
        self._hidden = 0
        self._in_head = False
        self._in_title = False
        self._title: list[str] = []
        self._heading: tuple[int, list[str]] | None = None  # level, text being collected
        self._current: tuple[str, int] = ("", 0)  # heading and level of the open section
        self._parts: list[tuple[bool, str]] = []  # (is code, text) of the open section
        self._pre = 0
        self._pre_text: list[str] = []
        self._start_line: int | None = None  # where the open section starts in the source
        self.last_line = 1  # the last line of the source with visible text
        self._links: list[Link] = []  # the open section's links, ``line`` absolute
        self._anchor: tuple[str, int, list[str]] | None = None  # href, line, text of an <a>
        self._link_count = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag == "head":
            self._in_head = True
        elif tag == "body":
            self._in_head = False
        elif tag == "title":
            self._in_title = True
        elif tag == "meta":
            self._meta(dict(attrs))
        elif tag in _HEADINGS and not self._pre:
            self._end_heading()
            self._finish_section(self.last_line)
            self._heading = (_HEADINGS[tag], [])
            self._start_line = self.getpos()[0]
        elif tag == "pre":
            if not self._pre:
                self._pre_text = []
            self._pre += 1
        elif tag == "a" and not self._hidden and not self._in_head:
            self._end_anchor()
            href = dict(attrs).get("href")
            if href is not None and self._find_links and self._link_count < MAX_LINKS:
                self._anchor = (href, self.getpos()[0], [])
        elif tag in _BLOCKS:
            self._text("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            self._meta(dict(attrs))
        elif tag in _BLOCKS:
            self._text("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "head":
            self._in_head = False
        elif tag == "title":
            self._in_title = False
        elif tag in _HEADINGS:
            self._end_heading()
        elif tag == "pre" and self._pre:
            self._pre -= 1
            if not self._pre:
                self._end_pre()
        elif tag == "a":
            self._end_anchor()
        elif tag in _BLOCKS:
            self._text("\n")

    def _end_anchor(self) -> None:
        if self._anchor is None:
            return
        href, line, text = self._anchor
        self._anchor = None
        link = path_link(href, "".join(text), kind="html", line=line)
        if link is not None:
            self._links.append(link)
            self._link_count += 1

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        if self._in_title:
            self._title.append(data)
        elif self._in_head:
            return
        else:
            if data.strip():
                line = self.getpos()[0]
                if self._start_line is None:
                    lead = data[: len(data) - len(data.lstrip())]
                    self._start_line = line + lead.count("\n")
                self.last_line = line + data.rstrip().count("\n")
            if self._anchor is not None:
                self._anchor[2].append(data)
            if self._pre:
                self._pre_text.append(data)
            else:
                self._text(_SPACE.sub(" ", data))  # source newlines are not line breaks

    def finish(self) -> None:
        if self._pre:
            self._end_pre()
        self._end_anchor()
        self._end_heading()
        self._finish_section(self.last_line)
        title = _SPACE.sub(" ", "".join(self._title)).strip()
        self.title = title or None

    def _meta(self, attrs: dict[str, str | None]) -> None:
        name = (attrs.get("name") or "").lower()
        value = (attrs.get("content") or "").strip()
        if name == "description" and value:
            self.description = value
        elif name == "keywords" and value:
            self.keywords = value

    def _text(self, data: str) -> None:
        if self._heading is not None:
            self._heading[1].append(data)
        else:
            self._parts.append((False, data))

    def _end_pre(self) -> None:
        block = "".join(self._pre_text).strip("\n")
        self._pre_text = []
        if self._heading is not None:
            self._heading[1].append(block)
        else:
            self._parts.append((True, block))

    def _end_heading(self) -> None:
        if self._heading is None:
            return
        level, parts = self._heading
        self._heading = None
        self._current = (_SPACE.sub(" ", "".join(parts)).strip(), level)

    def _finish_section(self, end_line: int) -> None:
        heading, level = self._current
        start_line, self._start_line = self._start_line, None
        parts, self._parts = self._parts, []
        links, self._links = self._links, []
        content: list[str] = []
        body: list[str] = []
        blocks: list[str] = []
        text: list[str] = []
        for is_code, piece in parts:
            if not is_code:
                text.append(piece)
                continue
            content.append(_tidy("".join(text)))
            body.append(content[-1])
            text = []
            fence = "`" * max(3, _longest_backtick_run(piece) + 1)
            content.append(f"{fence}\n{piece}\n{fence}\n")
            if piece.strip():
                blocks.append(piece)
        content.append(_tidy("".join(text)))
        body.append(content[-1])
        if level == 0 and not "".join(content).strip():
            return  # blank preamble
        first = start_line if start_line is not None else end_line
        self.raw.append(
            RawSection(
                heading,
                level,
                "".join(content),
                "".join(body),
                "\n".join(blocks),
                first,
                max(first, end_line),
                links=tuple(replace(k, line=max(0, k.line - first)) for k in links),
            )
        )


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _tidy(text: str) -> str:
    """Collapse whitespace and drop blank lines; every line ends in ``\\n``."""
    lines = (_SPACE.sub(" ", line).strip() for line in text.split("\n"))
    return "".join(f"{line}\n" for line in lines if line)


def split_html(text: str, *, links: bool = True) -> ParsedDocument:
    """Split an HTML document into sections at ``<h1>``–``<h6>``.

    Args:
        text: The HTML source.

    Returns:
        The document. Text before the first heading is a level-0 preamble, dropped when
        blank. ``warnings`` holds ``html_invalid`` if the parser gave up part way.
    """
    parser = _Splitter(links=links)
    warnings: tuple[str, ...] = ()
    try:
        parser.feed(text.removeprefix("\ufeff"))
        parser.close()
    except (AssertionError, ValueError) as exc:  # malformed markup declarations
        logger.debug("html parser stopped early: %s", exc)
        warnings = (HTML_INVALID,)
    parser.finish()
    sections = build_sections(parser.raw)
    tags = clean_tags(parser.keywords) or ()
    return ParsedDocument(
        title=parser.title if parser.title is not None else document_title(sections),
        description=parser.description,
        tags=tags,
        sections=sections,
        warnings=warnings,
    )
