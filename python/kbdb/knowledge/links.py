"""Links between notes as the API shows them: a document's links, its backlinks, and
what ``check`` reports of them (docs/knowledge.md, Links between notes). The links are
resolved as they are learned (``kbdb.store.links``); this module reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.store import lifecycle as sl
from kbdb.store import links as ls
from kbdb.store import queries as q
from kbdb.types import LinkItem, LinksResult

if TYPE_CHECKING:
    from kbdb.context import Context


class Links:
    """``links`` and ``backlinks`` of one knowledge base."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def links(self, docid: str | None, kbid: str | None) -> LinksResult:
        """The links a document makes, or one of its sections (``kbid``; with
        ``docid``, only its links in that document)."""
        return self._list(docid, kbid, "out")

    def backlinks(self, docid: str | None, kbid: str | None) -> LinksResult:
        """The links that resolve to a document, or to one section."""
        return self._list(docid, kbid, "in")

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
                rows = [
                    row
                    for d in q.live_docids_of(conn, [kbid]).get(kbid or "", [])
                    for row in ls.outgoing(conn, d, kbid)
                ]
        return LinksResult(
            docid=docid, kbid=kbid, direction=direction, items=tuple(item(r) for r in rows)
        )


def item(row: tuple[object, ...]) -> LinkItem:
    """A ``LinkItem`` of a row of ``kbdb.store.links.LINK_COLUMNS``."""
    return LinkItem(*row)  # type: ignore[arg-type]
