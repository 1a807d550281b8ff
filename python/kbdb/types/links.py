"""Results of ``links`` and ``backlinks`` (docs/knowledge.md, Links between notes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record

LinkStatus = Literal["resolved", "ambiguous", "missing_heading", "dangling", "outside"]


@dataclass(frozen=True)
class LinkItem(Record):
    """One link from a section of a document.

    ``target``, ``fragment`` and ``label`` are as written. ``line`` is the line of the
    link in the linking file (None when the file's lines are unknown). ``to_*`` name
    what it resolves to: None for a ``dangling`` or ``outside`` link; ``to_kbid`` is the
    section a heading or block names, else the target's first section."""

    kind: Literal["wikilink", "embed", "markdown", "html"]
    target: str
    fragment: str | None
    label: str | None
    status: LinkStatus
    from_docid: str
    from_kbid: str
    from_heading: str
    line: int | None
    to_docid: str | None
    to_kbid: str | None
    to_heading: str | None


@dataclass(frozen=True)
class LinksResult(Record):
    """``direction``: ``out`` (the links a document makes) or ``in`` (its backlinks)."""

    docid: str | None
    kbid: str | None
    direction: Literal["out", "in"]
    items: tuple[LinkItem, ...]
