"""Correcting and navigating knowledge (SPEC §5): revise, history, forget, documents,
outline, tags and related (siblings, then links, then neighbours by vector or words).

Writes take the writer lock, change the database through ``kbdb.store.lifecycle`` (which
retires with ``superseded_by`` and writes change-log rows like a learn does), then catch
both indexes up, so search never sees a half-applied correction. The decisions the SPEC
leaves open are in docs/lifecycle.md.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kbdb import failpoints
from kbdb.errors import ContentTooLargeError, InvalidArgumentError, NotFoundError
from kbdb.index.vectors import embedding_text, text_sha
from kbdb.ingest import compute_kbid
from kbdb.ingest.content import check_json, decode_image, is_image
from kbdb.ingest.links import Link
from kbdb.ingest.markdown import content_links
from kbdb.knowledge import links
from kbdb.learn.items import utc_now
from kbdb.search.lexical import Filters
from kbdb.store import NewSection, history
from kbdb.store import lifecycle as sl
from kbdb.store import queries as q
from kbdb.types import (
    DocumentInfo,
    DocumentList,
    ForgetResult,
    HistoryEntry,
    HistoryResult,
    Outline,
    OutlineNode,
    RecallResult,
    RelatedItem,
    RelatedResult,
    ReviseResult,
    Section,
    TagCount,
    TagList,
    source_ref,
)

if TYPE_CHECKING:
    from kbdb.context import Context

MAX_DOCUMENTS_PAGE = 1000
MAX_RELATED = 100
SALIENT_TERMS = 12
"""Words of a section that make up the query of a lexical ``related``."""

_WORD = re.compile(r"[^\W_]{3,}")
_STOPWORD_TEXT = (
    "the and for are but not you all any can had her was one our out has have with this"
    " that from they will would there their what about which when your into than then"
    " them these those been were also its such only other some more most very just over"
    " after before where while should could each must may use used using how why who does"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _links_of(content: str, type_: str, heading: str) -> tuple[Link, ...]:
    """The links of a revised section's content: Markdown's (an HTML section's content is
    its text, whose links were read from the page)."""
    if type_ != "text/markdown":
        return ()
    return content_links(content, headed=bool(heading))


def _check_kbid(kbid: object) -> str:
    if not isinstance(kbid, str) or not kbid.strip():
        raise InvalidArgumentError(f"kbid must be a non-empty string (got {kbid!r})")
    return kbid.strip()


def _check_page(limit: object, offset: object, most: int) -> tuple[int, int]:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= most:
        raise InvalidArgumentError(f"limit must be an integer in 1..{most} (got {limit!r})")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidArgumentError(f"offset must be an integer >= 0 (got {offset!r})")
    return limit, offset


def _latest_interval(
    spans: list[tuple[str, str | None]] | None,
) -> tuple[str | None, str | None]:
    """A version's latest live interval, or (None, None) when it has none (gc'd)."""
    return spans[-1] if spans else (None, None)


@dataclass
class _Node:
    kbid: str
    heading: str
    level: int
    children: list[_Node] = field(default_factory=list)

    def freeze(self) -> OutlineNode:
        return OutlineNode(
            self.kbid, self.heading, self.level, tuple(c.freeze() for c in self.children)
        )


def heading_tree(rows: Sequence[tuple[str, str, int]]) -> list[_Node]:
    """The heading tree of a document's live sections in order. A section's parent is the
    nearest earlier section of a smaller, non-zero level (as the splitter does); level-0
    sections (preambles, single-section content) sit at the top and enclose nothing."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for kbid, heading, level in rows:
        node = _Node(kbid, heading, level)
        if level == 0:
            roots.append(node)
            continue
        while stack and stack[-1].level >= level:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def salient_query(heading: str, text: str) -> str:
    """The heading's words, then the section's most frequent longer words: a query that
    finds sections about the same thing without quoting or operators."""
    words = [w.lower() for w in _WORD.findall(heading)]
    counts = Counter(w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOPWORDS)
    ranked = sorted(counts, key=lambda w: (-counts[w], -len(w), w))
    terms = list(dict.fromkeys([*words, *ranked]))[: SALIENT_TERMS + len(words)]
    return " ".join(terms)


class Lifecycle:
    """The operations of SPEC §5 over one knowledge base's store and indexes."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    # -- read ------------------------------------------------------------------------------

    def recall(self, kbids: Sequence[str], docid: str | None) -> RecallResult:
        """The sections ``kbids``, then those of ``docid`` in order; NOT_FOUND names the
        first one missing."""
        if not kbids and docid is None:
            raise InvalidArgumentError("recall needs kbids or a docid")
        with self._ctx.db.read() as conn:
            wanted = list(kbids)
            if docid is not None:
                in_doc = q.document_kbids(conn, docid)
                if in_doc is None:
                    raise NotFoundError(f"no document {docid!r}", hint="list them with 'kbdb docs'")
                wanted += in_doc
            rows = q.sections(conn, wanted)
            missing = [k for k in wanted if k not in rows]
            if missing:
                raise NotFoundError(
                    f"no section {missing[0]!r}", hint="kbids come from search results"
                )
            docids = q.docids_of(conn, wanted)
            tags = q.tags_of(conn, wanted)
            spans = history.intervals(conn, wanted)
            sources = q.sources_of(conn, wanted, docid)
        out = []
        for k in wanted:
            r = rows[k]
            start, end = _latest_interval(spans.get(k))
            out.append(
                Section(
                    kbid=k,
                    heading=r["heading"],
                    level=r["level"],
                    parent=r["parent"],
                    content=r["content"],
                    type=r["type"],
                    section_type=r["section_type"],
                    title=r["title"],
                    description=r["description"],
                    tags=tuple(tags.get(k, ())),
                    docids=tuple(docids.get(k, ())),
                    source_key=r["source_key"],
                    created_at=r["created_at"],
                    retired_at=r["retired_at"],
                    superseded_by=r["superseded_by"],
                    retired=r["retired_at"] is not None,
                    valid_from=start,
                    valid_until=end,
                    source=source_ref(sources.get(k)),
                )
            )
        return RecallResult(sections=tuple(out))

    # -- correct ---------------------------------------------------------------------------

    def revise(
        self,
        kbid: str,
        content: str,
        *,
        title: str | None,
        description: str | None,
        tags: tuple[str, ...] | None,
        section_type: str | None,
    ) -> ReviseResult:
        kbid = _check_kbid(kbid)
        if not isinstance(content, str):
            raise InvalidArgumentError("content must be a string")
        if not content.strip():
            raise InvalidArgumentError(
                "content is empty", hint="to remove a section use 'kbdb forget KBID'"
            )
        if len(content.encode("utf-8", "surrogatepass")) > self._ctx.config.learn.max_file_bytes:
            raise ContentTooLargeError(
                f"content is over learn.max_file_bytes ({self._ctx.config.learn.max_file_bytes})",
                hint="split it, or raise learn.max_file_bytes",
            )
        for name, value in (("title", title), ("description", description)):
            if value is not None and not isinstance(value, str):
                raise InvalidArgumentError(f"{name} must be a string")
        if section_type is not None and (
            not isinstance(section_type, str) or not section_type.strip()
        ):
            raise InvalidArgumentError("section_type must be a non-empty string")
        content = content.replace("\r\n", "\n").replace("\r", "\n")
        with self._ctx.lock.hold():
            with self._ctx.db.write() as conn:
                rows = q.sections(conn, [kbid])
                if kbid not in rows:
                    raise NotFoundError(
                        f"no section {kbid!r}", hint="kbids come from search results"
                    )
                r = rows[kbid]
                if r["retired_at"] is not None:
                    latest = self._latest(conn, kbid)
                    raise InvalidArgumentError(
                        f"section {kbid} is retired and cannot be revised",
                        hint=f"revise its live version {latest}"
                        if latest
                        else "learn the content again instead",
                    )
                type_ = r["type"]
                new_title = r["title"] if title is None else (title.strip() or None)
                new_desc = r["description"] if description is None else (description or None)
                heading = r["heading"]
                if is_image(type_):
                    if not new_title:
                        raise InvalidArgumentError(f"an {type_} section needs a title")
                    decode_image(content, type_)
                    heading = new_title  # an image is headed by its title (SPEC §3)
                elif type_ == "application/json":
                    check_json(content)
                new_tags = tuple(q.tags_of(conn, [kbid]).get(kbid, ())) if tags is None else tags
                stype = section_type.strip() if section_type else r["section_type"]
                new_kbid = compute_kbid(type_, heading, content)
                now = utc_now()
                if new_kbid == kbid:
                    sl.update_metadata(
                        conn,
                        kbid,
                        title=new_title,
                        description=new_desc,
                        section_type=stype,
                        tags=new_tags,
                    )
                else:
                    new = NewSection(
                        kbid=new_kbid,
                        heading=heading,
                        level=r["level"],
                        parent=r["parent"],
                        content=content,
                        type=type_,
                        section_type=stype,
                        title=new_title,
                        description=new_desc,
                        source_key=r["source_key"],
                        tags=new_tags,
                        links=_links_of(content, type_, heading),
                    )
                    sl.replace_section(conn, kbid, new, now=now, reason="revised")
            self._catch_up()
        return ReviseResult(kbid=new_kbid, previous=kbid)

    def forget(self, kbids: Sequence[str], docid: str | None) -> ForgetResult:
        wanted = list(dict.fromkeys(_check_kbid(k) for k in kbids))
        if not wanted and docid is None:
            raise InvalidArgumentError("forget needs kbids or a docid")
        with self._ctx.lock.hold():
            with self._ctx.db.write() as conn:
                rows = q.sections(conn, wanted)
                missing = [k for k in wanted if k not in rows]
                if missing:
                    raise NotFoundError(
                        f"no section {missing[0]!r}", hint="kbids come from search results"
                    )
                if docid is not None and q.document_kbids(conn, docid) is None:
                    raise NotFoundError(f"no document {docid!r}", hint="list them with 'kbdb docs'")
                already = [k for k in wanted if rows[k]["retired_at"] is not None]
                now = utc_now()
                live = [k for k in wanted if rows[k]["retired_at"] is None]
                sl.forget_sections(conn, live, now=now)
                retired = list(live)
                if docid is not None:
                    from_doc, _kept = sl.forget_document(conn, docid, now=now)
                    retired += [k for k in from_doc if k not in retired]
            self._catch_up()
        return ForgetResult(retired=tuple(retired), already_retired=tuple(already))

    def history(self, kbid: str) -> HistoryResult:
        kbid = _check_kbid(kbid)
        with self._ctx.db.read() as conn:
            start = sl.chain_row(conn, kbid)
            if start is None:
                raise NotFoundError(f"no section {kbid!r}", hint="kbids come from search results")
            seen = {kbid}
            older: list[sl.ChainRow] = []
            cur = start
            while True:
                preds = [
                    p for p in sl.predecessors(conn, cur.kbid, cur.source_key) if p not in seen
                ]
                if not preds:
                    break
                row = sl.chain_row(conn, preds[0])
                if row is None:  # pragma: no cover - the row was just found
                    break
                seen.add(row.kbid)
                older.append(row)
                cur = row
            newer: list[sl.ChainRow] = []
            cur = start
            while cur.superseded_by is not None and cur.superseded_by not in seen:
                row = sl.chain_row(conn, cur.superseded_by)
                if row is None:  # removed by gc
                    break
                seen.add(row.kbid)
                newer.append(row)
                cur = row
            chain = [*reversed(older), start, *newer]
            spans = history.intervals(conn, [r.kbid for r in chain])
        versions = []
        for r in chain:
            begin, end = _latest_interval(spans.get(r.kbid))
            versions.append(HistoryEntry(r.kbid, r.created_at, r.retired_at, r.reason, begin, end))
        return HistoryResult(kbid=kbid, versions=tuple(versions))

    # -- navigate --------------------------------------------------------------------------

    def documents(self, tags: tuple[str, ...], limit: int, offset: int) -> DocumentList:
        limit, offset = _check_page(limit, offset, MAX_DOCUMENTS_PAGE)
        with self._ctx.db.read() as conn:
            rows, total = sl.list_documents(conn, tags=tags, limit=limit, offset=offset)
            doc_tags = sl.document_tags(conn, [r[0] for r in rows])
        items = tuple(
            DocumentInfo(
                docid=r[0],
                title=r[1],
                description=r[2],
                tags=tuple(doc_tags.get(r[0], ())),
                source_path=r[3],
                type=r[4],
                sections=int(r[7]),
                created_at=r[5],
                updated_at=r[6],
            )
            for r in rows
        )
        return DocumentList(
            items=items,
            total=total,
            offset=offset,
            limit=limit,
            has_more=offset + len(items) < total,
        )

    def outline(self, docid: str) -> Outline:
        if not isinstance(docid, str) or not docid:
            raise InvalidArgumentError("docid must be a non-empty string")
        with self._ctx.db.read() as conn:
            exists, title = sl.document_title(conn, docid)
            if not exists:
                raise NotFoundError(f"no document {docid!r}", hint="list them with 'kbdb docs'")
            rows = sl.document_headings(conn, docid)
        return Outline(docid, title, tuple(n.freeze() for n in heading_tree(rows)))

    def tags(self) -> TagList:
        with self._ctx.db.read() as conn:
            counts = sl.tag_counts(conn)
        return TagList(tuple(TagCount(t, n) for t, n in counts))

    def related(self, kbid: str, limit: int) -> RelatedResult:
        kbid = _check_kbid(kbid)
        limit, _ = _check_page(limit, 0, MAX_RELATED)
        with self._ctx.db.read() as conn:
            rows = q.sections(conn, [kbid])
            if kbid not in rows:
                raise NotFoundError(f"no section {kbid!r}", hint="kbids come from search results")
            r = rows[kbid]
            docids = q.live_docids_of(conn, [kbid]).get(kbid, [])
            siblings: list[str] = []
            for docid in docids:
                siblings += [
                    k
                    for k in _siblings(sl.document_headings(conn, docid), kbid)
                    if k not in siblings
                ]
            siblings = siblings[:limit]
            linked: list[str] = []
            if len(siblings) < limit:
                for n in links.linked(conn, kbid, docids):
                    if n.kbid not in siblings:
                        linked.append(n.kbid)
                        if len(siblings) + len(linked) == limit:
                            break
            near = [*siblings, *linked]
            near_rows = q.sections(conn, near)
            near_docs = q.live_docids_of(conn, near)
        items = [
            RelatedItem(
                k,
                near_rows[k]["heading"],
                tuple(near_docs.get(k, ())),
                "sibling" if n < len(siblings) else "link",
                None,
            )
            for n, k in enumerate(near)
        ]
        exclude = {kbid, *near}
        want = limit - len(items)
        text = embedding_text(r["heading"], r["content"], r["type"], r["title"], r["description"])
        neighbours = self._vector_neighbours(text, want, exclude) if text is not None else None
        method: str = "vector"
        if neighbours is None:
            method = "lexical"
            if is_image(r["type"]):
                query = salient_query(r["title"] or r["heading"], r["description"] or "")
            else:
                query = salient_query(
                    " ".join(p for p in (r["title"], r["heading"]) if p),
                    f"{r['description'] or ''}\n{r['content']}",
                )
            neighbours = self._lexical_neighbours(query, want, exclude)
        if neighbours:
            with self._ctx.db.read() as conn:
                ids = [k for k, _ in neighbours]
                nrows = q.sections(conn, ids)
                ndocs = q.live_docids_of(conn, ids)
            items += [
                RelatedItem(
                    k,
                    nrows[k]["heading"],
                    tuple(ndocs.get(k, ())),
                    "vector" if method == "vector" else "lexical",
                    round(score, 6),
                )
                for k, score in neighbours
                if k in nrows
            ]
        return RelatedResult(
            kbid=kbid, method="vector" if method == "vector" else "lexical", items=tuple(items)
        )

    # -- internals -------------------------------------------------------------------------

    def _catch_up(self) -> None:
        """Bring both indexes to the change log (caller holds the writer lock). A failed
        embedding leaves the section lexical-only until a rebuild, as in a learn."""
        failpoints.hit("lifecycle.after_db_commit")
        self._ctx.index.catch_up()
        self._ctx.vectors.catch_up()

    def _latest(self, conn: sqlite3.Connection, kbid: str) -> str | None:
        """The live end of ``kbid``'s supersession chain, if any."""
        seen = {kbid}
        cur = sl.chain_row(conn, kbid)
        while cur is not None and cur.superseded_by and cur.superseded_by not in seen:
            seen.add(cur.superseded_by)
            cur = sl.chain_row(conn, cur.superseded_by)
        return cur.kbid if cur is not None and cur.retired_at is None else None

    def _vector_neighbours(
        self, text: str, want: int, exclude: set[str]
    ) -> list[tuple[str, float]] | None:
        """Nearest sections by cosine, or None when vectors cannot answer (no provider, a
        stale or missing index)."""
        if not self._ctx.vectors.enabled:
            return None
        self._ctx.refresh_vectors()
        if self._ctx.vectors.stale():
            return None
        index = self._ctx.vectors.index()
        if index is None:
            return None
        if want <= 0:
            return []
        import numpy as np

        model = self._ctx.vectors.model_name
        sha = text_sha(text)
        with self._ctx.db.read() as conn:
            cached = q.cached_embeddings(conn, model, [sha])
        if sha in cached:
            vec = np.frombuffer(cached[sha], dtype=np.float32)
        else:
            vec = np.asarray(self._ctx.vectors.provider.embed([text])[0], dtype=np.float32)
        kbids, scores = index.search(vec, limit=min(want + len(exclude), index.count or 1))
        out = [(k, float(s)) for k, s in zip(kbids, scores, strict=True) if k not in exclude]
        return out[:want]

    def _lexical_neighbours(
        self, query: str, want: int, exclude: set[str]
    ) -> list[tuple[str, float]]:
        if want <= 0 or not query.strip():
            return []
        self._ctx.index.refresh()
        # Neighbours by content: the path field (the headings above a section) would make
        # a section's own sub-sections its closest neighbours; structure has its own
        # relation (siblings).
        searcher = self._ctx.searcher()
        searcher.cfg = replace(searcher.cfg, w_path=0.0)
        res = searcher.search(
            query,
            limit=min(MAX_RELATED, want + len(exclude)),
            offset=0,
            filters=Filters(),
            content=False,
            explain=False,
        )
        return [(i.kbid, i.score) for i in res.items if i.kbid not in exclude and i.score > 0][
            :want
        ]


def _siblings(rows: Sequence[tuple[str, str, int]], kbid: str) -> list[str]:
    """Sections under the same parent as ``kbid`` in one document, in document order."""

    def walk(nodes: list[_Node]) -> list[str] | None:
        if any(n.kbid == kbid for n in nodes):
            return [n.kbid for n in nodes if n.kbid != kbid]
        for n in nodes:
            found = walk(n.children)
            if found is not None:
                return found
        return None

    return walk(heading_tree(rows)) or []
