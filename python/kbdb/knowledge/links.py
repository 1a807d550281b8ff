"""Links between notes as the API shows them: a document's links, its backlinks, the
notes one link away from a section (``context``, ``related``), and what ``check``
reports of them (docs/knowledge.md, Links between notes). The links are resolved as they
are learned (``kbdb.store.links``); this module reads them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import islice, zip_longest
from typing import TYPE_CHECKING, Literal

from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.store import lifecycle as sl
from kbdb.store import links as ls
from kbdb.store import queries as q
from kbdb.types import (
    ContextItem,
    ContextResult,
    LinkItem,
    LinksResult,
    Neighbour,
    SearchResult,
    source_ref,
)

if TYPE_CHECKING:
    from kbdb.context import Context

MAX_NEIGHBOURS = 20
SNIPPET_CHARS = 200
"""The start of a neighbour's text that ``context`` gives: enough to tell what it is."""


class Links:
    """``links``, ``backlinks`` and ``context`` of one knowledge base."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def links(self, docid: str | None, kbid: str | None) -> LinksResult:
        """The links a document makes, or one of its sections (``kbid``; with
        ``docid``, only its links in that document)."""
        return self._list(docid, kbid, "out")

    def backlinks(self, docid: str | None, kbid: str | None) -> LinksResult:
        """The links that resolve to a document, or to one section."""
        return self._list(docid, kbid, "in")

    def context(self, found: SearchResult, neighbours: int) -> ContextResult:
        """Each hit of ``found`` with at most ``neighbours`` sections one link away from
        it (``linked``), each with the start of its text."""
        neighbours = check_neighbours(neighbours)
        with self._ctx.db.read() as conn:
            near = {
                hit.kbid: list(
                    islice(
                        linked(conn, hit.kbid, hit.docids or _live_docids(conn, hit.kbid)),
                        neighbours,
                    )
                )
                for hit in found.items
            }
            wanted = list(dict.fromkeys(n.kbid for ns in near.values() for n in ns))
            rows = q.sections(conn, wanted)
        items = tuple(
            ContextItem(
                kbid=hit.kbid,
                heading=hit.heading,
                docids=hit.docids,
                snippet=hit.snippet,
                score=hit.score,
                confidence=hit.confidence,
                neighbours=tuple(
                    replace(n, snippet=start_of(rows[n.kbid]["content"]))
                    for n in near[hit.kbid]
                    if n.kbid in rows
                ),
            )
            for hit in found.items
        )
        return ContextResult(
            items=items,
            retrieval_method=found.retrieval_method,
            retrieval_verdict=found.retrieval_verdict,
        )

    def _list(
        self, docid: str | None, kbid: str | None, direction: Literal["out", "in"]
    ) -> LinksResult:
        if docid is None and kbid is None:
            raise InvalidArgumentError(
                "name a document or a section", hint="give a docid, or kbid=..."
            )
        with self._ctx.db.read() as conn:
            if kbid is not None and not q.sections(conn, [kbid]):
                raise NotFoundError(f"no section {kbid!r}", hint="kbids come from search results")
            if docid is not None and not sl.document_title(conn, docid)[0]:
                raise NotFoundError(f"no document {docid!r}", hint="list them with 'kbdb docs'")
            if direction == "in":
                rows = ls.incoming(conn, docid if kbid is None else None, kbid)
            elif docid is not None:
                rows = ls.outgoing(conn, docid, kbid)
            else:
                assert kbid is not None
                rows = [row for d in _live_docids(conn, kbid) for row in ls.outgoing(conn, d, kbid)]
            items = _with_paths(conn, [item(r) for r in rows])
        return LinksResult(docid=docid, kbid=kbid, direction=direction, items=items)


def item(row: tuple[object, ...]) -> LinkItem:
    """A ``LinkItem`` of a row of ``kbdb.store.links.LINK_COLUMNS``."""
    return LinkItem(*row)  # type: ignore[arg-type]


def _with_paths(conn: sqlite3.Connection, items: list[LinkItem]) -> tuple[LinkItem, ...]:
    """``items`` with the file of each linking document (``from_path``)."""
    paths: dict[str, str | None] = {}
    for it in items:
        if it.from_docid not in paths:
            cell = q.sources_of(conn, [it.from_kbid], it.from_docid).get(it.from_kbid)
            paths[it.from_docid] = source_ref(cell).path
    return tuple(replace(it, from_path=paths[it.from_docid]) for it in items)


def check_neighbours(neighbours: object) -> int:
    """``neighbours`` as a count of neighbours per hit, 1..``MAX_NEIGHBOURS``."""
    if (
        not isinstance(neighbours, int)
        or isinstance(neighbours, bool)
        or not 1 <= neighbours <= MAX_NEIGHBOURS
    ):
        raise InvalidArgumentError(
            f"neighbours must be an integer in 1..{MAX_NEIGHBOURS} (got {neighbours!r})"
        )
    return neighbours


def linked(conn: sqlite3.Connection, kbid: str, docids: Sequence[str]) -> Iterator[Neighbour]:
    """The sections one link away from section ``kbid`` (in its documents ``docids``),
    nearest first and each once, without their snippets:

    1. the sections its own links go to (``out``) and those whose links come to it
       (``in``);
    2. then those of its documents: where their other sections link, and what links to
       them, leaving out a document's links to itself (its outline shows those).

    At each level ``out`` and ``in`` take turns, so that a caller who stops early still
    gets both. Dangling and outside links go nowhere and are skipped. The queries of
    the second level run only if the caller reads that far."""
    seen = {kbid}
    own = frozenset(docids)
    yield from _fresh(
        _turns(
            (item(r) for d in docids for r in ls.outgoing(conn, d, kbid)),
            (item(r) for r in ls.incoming(conn, None, kbid)),
        ),
        seen,
        frozenset(),
    )
    yield from _fresh(
        _turns(
            (item(r) for d in docids for r in ls.outgoing(conn, d)),
            (item(r) for d in docids for r in ls.incoming(conn, d)),
        ),
        seen,
        own,
    )


def _turns(
    out: Iterable[LinkItem], into: Iterable[LinkItem]
) -> Iterator[tuple[Literal["out", "in"], LinkItem]]:
    for a, b in zip_longest(out, into):
        if a is not None:
            yield "out", a
        if b is not None:
            yield "in", b


def _fresh(
    links: Iterable[tuple[Literal["out", "in"], LinkItem]],
    seen: set[str],
    skip_docids: frozenset[str],
) -> Iterator[Neighbour]:
    """The far end of each link, unless seen or in ``skip_docids``."""
    for relation, link in links:
        if relation == "out":
            kbid, docid, heading = link.to_kbid, link.to_docid, link.to_heading
        else:
            kbid, docid, heading = link.from_kbid, link.from_docid, link.from_heading
        if kbid is None or docid is None or kbid in seen or docid in skip_docids:
            continue
        seen.add(kbid)
        yield Neighbour(docid, kbid, heading or "", relation, link.label, "")


def _live_docids(conn: sqlite3.Connection, kbid: str) -> list[str]:
    return q.live_docids_of(conn, [kbid]).get(kbid, [])


def start_of(content: str, width: int = SNIPPET_CHARS) -> str:
    """The start of ``content``: whitespace runs as one space, at most ``width``
    characters, cut at a word boundary with ``…`` when cut."""
    text = " ".join(content.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if text[width - 1] != " ":  # the cut is inside a word: back to its start, if near
        space = cut.rfind(" ")
        if space >= width // 2:
            cut = cut[:space]
    return cut.rstrip() + "…"
