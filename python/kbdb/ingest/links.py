"""Links and inline tags in a section's text, found while it is split (docs/knowledge.md,
Links).

Four forms are links:

- ``[[Target]]``, ``[[Target|label]]``, ``[[Target#Heading]]``, ``[[Target#^block]]``
  and ``[[#Heading]]`` (the same note): Obsidian, Logseq and Foam wikilinks;
- ``![[Target]]``: an embed, the same forms with a ``!``;
- ``[label](path.md#anchor)`` and ``![alt](path)``: Markdown links whose destination is a
  path, not a URL (``https:``, ``mailto:``…) nor empty;
- ``<a href="path">label</a>`` in HTML (``kbdb.ingest.htmlsplit``).

Nothing inside fenced code or an inline code span is a link or a tag. A ``\\|`` (the pipe
of a wikilink inside a table) separates a label like ``|``. A run of ``[[`` that is never
closed on its line is text. Each form is matched by one regular expression without nested
quantifiers over the same characters, so a line of any length costs linear time.

A tag is ``#`` after a space or the start of a line, then letters, digits, ``_``, ``-``
and ``/``, with at least one character that is not a digit (``#1`` is not a tag), as
Obsidian reads them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

LinkKind = Literal["wikilink", "embed", "markdown", "html"]

MAX_LINKS = 10_000
"""Links kept per document: a file of 100,000 links keeps its first 10,000."""

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]*)\]\]")
# A Markdown link: the label may hold one level of brackets (``[a [b] c](x)``); the
# destination is ``<…>`` or has no spaces, with one level of balanced parentheses; an
# optional title follows.
_MDLINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*"
    r"(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
# A reference definition, ``[label]: destination``, and a use of one: ``[text][label]``,
# ``[label][]`` or ``[label]`` (not followed by ``(``, ``:`` or ``[``); a label's end on a
# line after its start, ``…text][label]``. ``[^note]:`` defines a footnote, not a link.
_REF_DEF = re.compile(r" {0,3}\[(?!\^)([^\[\]\n]+)\]:[ \t]*(<[^<>\n]*>|\S+)")
_REF_USE = re.compile(r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\](?:\[([^\[\]\n]*)\])?(?![(:\[])")
_REF_TAIL = re.compile(r"[^\[\]\n]*\]\[([^\[\]\n]+)\]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_TICKS = re.compile(r"`+")
_TAG = re.compile(r"(?:(?<=\s)|^)#([\w/\-]+)")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Link:
    """One link as written.

    Attributes:
        kind: ``wikilink``, ``embed``, ``markdown`` or ``html``.
        target: The destination without its fragment: a note name or a path as written
            (a Markdown or HTML path URL-decoded). ``""`` for a link into the same note.
        fragment: After ``#``: a heading (``Heading``, or ``H1#H2`` for nested ones), a
            block (``^id``) or an anchor (``install-kbdb``); None when there is none.
        label: The text the reader sees when the writer gave one (``[[T|label]]``,
            ``[label](t.md)``, an ``<a>``'s text, an image's alt); None otherwise.
        line: Lines after the section's first line (0: on its first line): where the
            link is, wherever the section is in a file.
    """

    kind: LinkKind
    target: str
    fragment: str | None
    label: str | None
    line: int


def reference_definitions(lines: list[str]) -> dict[str, str]:
    """The reference definitions (``[label]: destination``) of Markdown lines outside
    code, by label (case and spacing folded); the first of a label wins."""
    refs: dict[str, str] = {}
    for line in lines:
        if "]:" in line:
            m = _REF_DEF.match(line)
            if m is not None:
                refs.setdefault(_ref_key(m.group(1)), m.group(2).strip("<>"))
    return refs


def find_links(
    lines: list[str],
    first: int,
    limit: int = MAX_LINKS,
    refs: dict[str, str] | None = None,
    *,
    rows: Sequence[int] | None = None,
) -> list[Link]:
    """The first ``limit`` links of Markdown lines outside code, ``first`` being the
    offset of ``lines[0]`` from the section's first line (``rows``: of each line, when
    they are not consecutive). ``lines`` hold no fenced code; ``refs``: the document's
    reference definitions, for reference links. The search stops at the limit, so links
    past it cost no memory."""
    out: list[Link] = []
    for n, raw in enumerate(lines):
        i = rows[n] if rows is not None else n
        if len(out) >= limit:
            return out[:limit]
        if "[" not in raw and not (refs and "]" in raw):
            continue
        if _REF_DEF.match(raw):
            continue  # a definition is where a reference link goes, not a link
        line = _without_code_spans(raw)
        if refs:
            for ref in _reference_links(line, refs, first + i):
                out.append(ref)
                if len(out) >= limit:
                    return out
        for m in _WIKILINK.finditer(line):
            link = _wikilink(m.group(2), embed=bool(m.group(1)), line=first + i)
            if link is not None:
                out.append(link)
                if len(out) >= limit:
                    return out
        if "](" in line:
            for m in _MDLINK.finditer(_WIKILINK.sub(_blank, line)):
                link = path_link(
                    m.group(3).strip("<>"),
                    m.group(2),
                    kind="embed" if m.group(1) else "markdown",
                    line=first + i,
                )
                if link is not None:
                    out.append(link)
                    if len(out) >= limit:
                        return out
    return out[:limit]


def find_tags(lines: list[str]) -> list[str]:
    """The inline ``#tags`` of Markdown lines outside code and reference definitions, in
    order, each once."""
    tags: dict[str, None] = {}
    for raw in lines:
        if "#" not in raw or _REF_DEF.match(raw):
            continue
        for m in _TAG.finditer(_without_code_spans(raw)):
            tag = m.group(1).strip("/")
            if tag and not all(c.isdigit() for c in tag):
                tags.setdefault(tag, None)
    return list(tags)


def path_link(dest: str, label: str | None, *, kind: LinkKind, line: int) -> Link | None:
    """A Markdown or HTML link to ``dest``, or None when it is not a path: a URL
    (``scheme:``), a protocol-relative ``//host``, or empty."""
    dest = dest.strip()
    if not dest or _SCHEME.match(dest) or dest.startswith("//"):
        return None
    path, _, fragment = dest.partition("#")
    path = path.partition("?")[0]
    try:
        path = unquote(path, errors="strict")
        fragment = unquote(fragment, errors="strict")
    except UnicodeDecodeError:
        return None
    text = _SPACE.sub(" ", label).strip() if label is not None else ""
    return Link(kind, path, fragment or None, text or None, line)


def _reference_links(line: str, refs: dict[str, str], at: int) -> list[Link]:
    """The reference links of one line (inline links and wikilinks blanked first)."""
    out: list[Link] = []
    text = _MDLINK.sub(_blank, _WIKILINK.sub(_blank, line))
    tail = _REF_TAIL.match(text)
    if tail is not None and "[" not in text[: tail.end() - len(tail.group(1)) - 3]:
        dest = refs.get(_ref_key(tail.group(1)))
        if dest is not None:
            link = path_link(dest, None, kind="markdown", line=at)
            if link is not None:
                out.append(link)
        text = " " * tail.end() + text[tail.end() :]
    for m in _REF_USE.finditer(text):
        label, ref = m.group(1), m.group(2)
        dest = refs.get(_ref_key(ref if ref else label))
        if dest is None:
            continue
        link = path_link(dest, label, kind="markdown", line=at)
        if link is not None:
            out.append(link)
    return out


def _ref_key(label: str) -> str:
    return " ".join(label.split()).casefold()


def _wikilink(inner: str, *, embed: bool, line: int) -> Link | None:
    inner = inner.replace("\\|", "|")
    target, bar, label = inner.partition("|")
    target, hash_, fragment = target.partition("#")
    target = target.strip()
    fragment = fragment.strip()
    if not target and not fragment:
        return None  # ``[[]]`` or ``[[|x]]``
    text = _SPACE.sub(" ", label).strip() if bar else ""
    return Link(
        "embed" if embed else "wikilink",
        target,
        fragment if hash_ and fragment else None,
        text or None,
        line,
    )


def _without_code_spans(line: str) -> str:
    """``line`` with its code spans blanked: a run of backticks opens a span that the
    next run of the same length closes (CommonMark), found in one pass over the runs."""
    if "`" not in line:
        return line
    spans: list[tuple[int, int]] = []
    open_at: dict[int, int] = {}  # run length -> start of the unclosed run
    for m in _TICKS.finditer(line):
        n = len(m.group(0))
        start = open_at.get(n)
        if start is None:
            open_at[n] = m.start()
            continue
        spans.append((start, m.end()))
        # Runs opened inside the span are its text, not openers.
        open_at = {k: v for k, v in open_at.items() if v < start}
    if not spans:
        return line
    parts: list[str] = []
    at = 0
    for start, end in spans:
        parts.append(line[at:start])
        parts.append(" " * (end - start))
        at = end
    parts.append(line[at:])
    return "".join(parts)


def _blank(m: re.Match[str]) -> str:
    return " " * len(m.group(0))
