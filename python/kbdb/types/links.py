"""Results of ``links``, ``backlinks`` and ``context`` (docs/knowledge.md, Links between
notes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kbdb.types.base import Record, SearchMode, Verdict

LinkStatus = Literal["resolved", "ambiguous", "missing_heading", "dangling", "outside"]


@dataclass(frozen=True)
class LinkItem(Record):
    """One link from a section of a document.

    ``target``, ``fragment`` and ``label`` are as written. ``line`` is the line of the
    link in the linking file (None when the file's lines are unknown). ``to_*`` name
    what it resolves to: None for a ``dangling`` or ``outside`` link; ``to_kbid`` is the
    section a heading or block names, else the target's first section. ``from_path``:
    the file the linking document was learned from (None for text given in a call)."""

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
    from_path: str | None = None

    def written(self) -> str:
        """The link as written, without its brackets: ``target#fragment|label``."""
        text = self.target + (f"#{self.fragment}" if self.fragment else "")
        return text + (f"|{self.label}" if self.label else "")


@dataclass(frozen=True)
class LinksResult(Record):
    """``direction``: ``out`` (the links a document makes) or ``in`` (its backlinks)."""

    docid: str | None
    kbid: str | None
    direction: Literal["out", "in"]
    items: tuple[LinkItem, ...]


@dataclass(frozen=True)
class Neighbour(Record):
    """A section one link away from a section: ``out``, one its section or document
    links to; ``in``, one that links to it. ``label``: the link's label as written;
    ``snippet``: the start of the neighbour's text, at most 200 characters."""

    docid: str
    kbid: str
    heading: str
    relation: Literal["out", "in"]
    label: str | None
    snippet: str


@dataclass(frozen=True)
class ContextItem(Record):
    """A search hit (as in ``SearchItem``) with its neighbours by link."""

    kbid: str
    heading: str
    docids: tuple[str, ...]
    snippet: str
    score: float
    confidence: float
    neighbours: tuple[Neighbour, ...]


@dataclass(frozen=True)
class ContextResult(Record):
    """A search whose every hit comes with its neighbours by link
    (``KnowledgeBase.search_context``). ``retrieval_method`` and ``retrieval_verdict``
    are the search's (``SearchResult``)."""

    items: tuple[ContextItem, ...]
    retrieval_method: SearchMode
    retrieval_verdict: Verdict
