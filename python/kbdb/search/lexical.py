"""Lexical search end to end: parse, strict-then-relaxed BM25F, sibling boost, paging,
hydration, snippets, confidence (SPEC §4.1, §4.3).

Strict, then relaxed: every required clause must match first. When that finds fewer than
``offset + limit`` hits, the rest are filled from the relaxed (any-clause) ranking, below
every strict hit, and marked ``relaxed``. When strict finds nothing at all, the whole
response is ``relaxed: true``.

Sibling boost: the lexical path ranks ``max(30, 3 * (offset + limit))`` candidates. When
several candidate sections share a document, each gets its score multiplied by
``1 + sibling_boost * min(m - 1, 3) / 3``, where ``m`` is the number of that document's
sections among the candidates. So the boost is at most ``sibling_boost`` (default 0.1,
i.e. +10 %) and never lifts a relaxed hit above a strict one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kbdb import _core
from kbdb.config import SearchConfig
from kbdb.search.codefields import CODE_TYPES
from kbdb.search.confidence import confidence, verdict
from kbdb.search.fields import (
    body_fields,
    definition_names,
    file_stem,
    identifier_key,
    in_test_code,
    names_the_definition,
)
from kbdb.search.query import ParsedQuery, parse_query
from kbdb.search.rounding import round_to
from kbdb.search.snippet import SNIPPET_CHARS
from kbdb.search.synonyms import Synonyms
from kbdb.store import Database, history
from kbdb.store import links as link_store
from kbdb.store import queries as q
from kbdb.store.db import text_bytes
from kbdb.types import SearchItem, SearchResult, SourceRef, build, search_item, source_ref

if TYPE_CHECKING:
    from kbdb.search.when import Timing

# Candidates the lexical path ranks beyond the page, so the sibling boost can look at them.
CANDIDATES = 30
SIBLING_WINDOW = 3
SIBLING_CAP = 3
_FIELDS = (
    (_core.FIELD_HEADING, "heading"),
    (_core.FIELD_BODY, "body"),
    (_core.FIELD_CODE, "code"),
    (_core.FIELD_PATH, "path"),
    (_core.FIELD_ANCHOR, "anchor"),
)


@dataclass(frozen=True)
class Filters:
    tags: tuple[str, ...] | None = None
    docid: str | None = None
    type: str | None = None
    section_type: str | None = None
    since: str | None = None  # the section's live interval began at or after this time
    until: str | None = None  # ... and before this one
    at: str | None = None  # live at this moment (``as_of``) rather than now
    speaker: str | None = None  # conversation turns of this speaker

    @property
    def any(self) -> bool:
        return bool(self.tags) or not (
            self.docid is None
            and self.type is None
            and self.section_type is None
            and self.since is None
            and self.until is None
            and self.speaker is None
        )


NO_FILTERS = Filters()


@dataclass(slots=True)
class Hit:
    """One ranked section before hydration. Fusion fills the vector fields and may set
    ``confidence`` itself; otherwise hydration derives it from the lexical match."""

    kbid: str
    score: float
    matched: bytes  # per clause, the fields it matched in (FIELD_* bits)
    relaxed: bool = False
    explain: list[tuple[int, str, str, float]] | None = None
    boost: float = 1.0
    bound: float = 0.0  # sum of the query's clause bounds: no lexical score reaches it
    lexical_score: float | None = None
    confidence: float | None = None
    extra: dict[str, Any] | None = None
    bodiless: bool = False  # neither body nor code: a heading alone
    in_path: bool = False  # every required clause matched in the path field
    name_factor: float = 1.0  # the query names the hit's page (``_name_boost``)
    heading_factor: float = 1.0  # the query is the hit's heading (``_heading_boost``)
    recency: float = 1.0  # the recency decay (``search.when``), also in ``boost``


class DocLinks(NamedTuple):
    """A section's document links, as search uses them."""

    live: tuple[str, ...]  # the documents it is live in, sorted
    docids: tuple[str, ...]  # what a result shows: ``live``, or for a section live in
    # none (retired), the documents it was part of (as ``store.queries.docids_of``)


Links = dict[str, DocLinks]
"""Per kbid with any document link: its links."""


@dataclass(frozen=True)
class Ranking:
    hits: list[Hit]
    total: int
    relaxed: bool


class Engine(Protocol):
    """What the ranking calls of a lexical index: ``_core.Index``, or the fan-out over a
    collection's shards (``kbdb.shard``)."""

    def search(self, clauses: Any, **kwargs: Any) -> Any: ...

    def search_tiers(self, clauses: Any, *, relaxed_below: int, **kwargs: Any) -> Any: ...


class Source(Protocol):
    """Where a search reads rows, document links and filters: ``read()`` is one
    consistent snapshot, whose connection (or None) the other calls take."""

    def read(self) -> AbstractContextManager[Any]: ...

    def links(self, conn: Any, kbids: Sequence[str]) -> Links: ...

    def rows(self, conn: Any, kbids: Sequence[str]) -> dict[str, Row]: ...

    def allowed(self, conn: Any, filters: Filters) -> list[str] | None: ...

    def starts(self, conn: Any, kbids: Sequence[str], at: str | None) -> dict[str, str]: ...


def _names(source: Source, conn: Any, docids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The titles and aliases of ``docids``, where the source keeps them (one database
    does; a collection's shards answer without them)."""
    names = getattr(source, "names", None)
    return names(conn, docids) if names is not None else {}


class DatabaseSource:
    """A ``Source`` over one knowledge base's database, through its read cache."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.read()

    def links(self, conn: sqlite3.Connection, kbids: Sequence[str]) -> Links:
        return _links(self.db, conn, kbids)

    def names(self, conn: sqlite3.Connection, docids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each document's title and aliases, through the read cache."""
        cache = self.db.cache()
        if cache is None:
            return link_store.names_of(conn, docids)
        table = cache.table("search.names")
        missing = [d for d in docids if d not in table]
        if missing:
            found = link_store.names_of(conn, missing)
            for d in missing:
                got = found.get(d, ())
                cache.put(table, d, got, _LINK_BYTES + sum(len(n) for n in got))
        return {d: table[d] for d in docids if table.get(d)}

    def rows(self, conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, Row]:
        return _hydration_rows(self.db, conn, kbids)

    def allowed(self, conn: sqlite3.Connection, filters: Filters) -> list[str]:
        return q.allowed_kbids(
            conn,
            tags=filters.tags,
            docid=filters.docid,
            type=filters.type,
            section_type=filters.section_type,
            since=filters.since,
            until=filters.until,
            at=filters.at,
            speaker=filters.speaker,
        )

    def starts(
        self, conn: sqlite3.Connection, kbids: Sequence[str], at: str | None
    ) -> dict[str, str]:
        """When each of ``kbids``'s live interval (at ``at``, or now) began."""
        return history.started(conn, kbids, at)


class LexicalSearcher:
    """The lexical path over one index snapshot and one database."""

    def __init__(
        self,
        index: _core.Index | Engine,
        db: Database | Source,
        analyzer: _core.Analyzer,
        synonyms: Synonyms | None,
        cfg: SearchConfig,
    ) -> None:
        self.index = index
        # Where rows, links and filters are read: one database, or (``kbdb.shard``) the
        # shards of a collection. ``db`` is the database when there is one.
        self.source: Source = DatabaseSource(db) if isinstance(db, Database) else db
        self.db: Database | None = db if isinstance(db, Database) else None
        self.analyzer = analyzer
        self.synonyms = synonyms
        self.cfg = cfg
        # Time travel (``as_of``): the moment this searcher's index snapshot shows. Its
        # sections may be retired now; each counts as live in every document it was in.
        self.at: str | None = None
        self.timing: Timing | None = None  # since/until/sort/decay of this search

    def bm25f_params(self) -> dict[str, Any]:
        """``Index.search``'s BM25F keyword arguments, from the ``[search]`` settings."""
        cfg = self.cfg
        return {
            "k1": cfg.k1,
            "b": (cfg.b_heading, cfg.b_body, cfg.b_code, cfg.b_path, cfg.b_anchor),
            "weights": (cfg.w_heading, cfg.w_body, cfg.w_code, cfg.w_path, cfg.w_anchor),
            "common_cutoff": cfg.common_cutoff,
        }

    def parse(self, query: str) -> ParsedQuery:
        return parse_query(query, self.analyzer, self.synonyms, self.cfg.query_tf_k3)

    def allow(self, filters: Filters) -> list[str] | None:
        """Live kbids passing the filters, or None when there are no filters."""
        if not filters.any:
            return None
        with self.source.read() as conn:
            return self.source.allowed(conn, filters)

    def search(
        self,
        query: str,
        *,
        limit: int,
        offset: int,
        filters: Filters,
        content: bool,
        explain: bool,
    ) -> SearchResult:
        parsed = self.parse(query)
        # One read snapshot for filters, sibling boost and hydration.
        with self.source.read():
            allow = self.allow(filters)
            want = max(CANDIDATES, SIBLING_WINDOW * (offset + limit))
            ranking = self.rank(
                parsed, want=want, page_end=offset + limit, allow=allow, explain=explain
            )
            # The confidence weighs a hit against the first of the ranking before any
            # recency decay (it measures the match, not its age).
            best = ranking.hits[0].score if ranking.hits else 0.0
            if self.timing is not None and self.timing.reorders:
                ranking = self.timing.rerank(self, parsed, ranking, offset + limit, allow, explain)
            page = ranking.hits[offset : offset + limit]
            items = self.hydrate(parsed, page, content=content, explain=explain, best=best)
        top = items[0] if items else None
        return build(
            SearchResult,
            items=tuple(items),
            total=ranking.total,
            offset=offset,
            limit=limit,
            has_more=offset + limit < ranking.total,
            relaxed=ranking.relaxed,
            search_mode="lexical",
            retrieval_method="lexical",
            vector_index_stale=False,
            retrieval_verdict=verdict(
                top.confidence if top else None, ranking.relaxed or bool(top and top.relaxed)
            ),
        )

    def rank(
        self,
        parsed: ParsedQuery,
        *,
        want: int,
        page_end: int,
        allow: list[str] | None,
        explain: bool,
    ) -> Ranking:
        """The top ``want`` hits, strict first, then relaxed fill up to ``page_end``."""
        if parsed.empty or (allow is not None and not allow):
            return Ranking([], 0, False)
        params = {"limit": want, "allow": allow, "explain": explain, **self.bm25f_params()}
        required = parsed.required
        loose: _core.Hits | None = None
        if required > 1 or parsed.phrases:
            # The relaxed ranking may be needed: the engine returns it with the strict one
            # when it costs nothing more (one evaluation of small segments) or is needed.
            strict, loose = self.index.search_tiers(
                parsed.clauses, relaxed_below=page_end, phrases=parsed.phrases, **params
            )
        else:
            strict = self.index.search(
                parsed.clauses, phrases=parsed.phrases, require_all=True, **params
            )
        hits, total = _hits(strict, relaxed=False, bound=sum(strict.clause_bounds))
        all_relaxed = False
        if len(hits) < page_end and (required > 1 or parsed.phrases or not hits):
            if loose is None:
                loose = self.index.search(parsed.clauses, require_all=False, **params)
            extra, matches = _hits(
                loose, relaxed=True, bound=sum(loose.clause_bounds), skip={h.kbid for h in hits}
            )
            if not hits and extra:
                all_relaxed = True
            hits.extend(extra)
            total = max(total, matches)
        # The engine lists the rare hits these steps look at: most queries skip them.
        tiers = (strict,) if loose is None else (strict, loose)
        self._heading_boost(hits, parsed, strict.common)
        links: Links = {}
        if any(t.in_path for t in tiers):
            links = self._name_boost(hits, parsed, strict.common)
        self._sibling_boost(hits, links, any(t.bodiless for t in tiers))
        return Ranking(hits, total, all_relaxed)

    def _name_boost(self, hits: list[Hit], parsed: ParsedQuery, common: list[bool]) -> Links:
        """Multiply by ``1 + name_boost`` the hits of a page that the query names: every
        word of one of the page's names (its docid's last path component without the
        extension, split like text; a front-matter alias) is a query word, and
        every query word that strict matching requires is in that name; a word it made
        optional as common ("docker" in the docker reference) need not be. Returns the
        document links it read (or {})."""
        boost = self.cfg.name_boost
        # Only a hit whose path field (which holds its file's name) matched every required
        # word can be on a page the query names: most queries stop here.
        maybe = [h for h in hits if h.in_path]
        if boost <= 0 or not maybe:
            return {}
        clauses = parsed.clauses
        words = {alts[0][0] for alts, required in clauses if required}
        needed = {
            alts[0][0]
            for (alts, required), is_common in zip(clauses, common, strict=False)
            if required and not is_common
        }
        if not needed:
            return {}
        with self.source.read() as conn:
            links = self._links(conn, [h.kbid for h in hits])
            docs = {d for h in maybe if (dl := links.get(h.kbid)) is not None for d in dl.live}
            names = _names(self.source, conn, sorted(docs))
        factor = 1.0 + boost
        named = False
        for h in maybe:
            dl = links.get(h.kbid)
            if dl is None:
                continue
            if any(
                needed <= self._name_terms(d) <= words
                or any(needed <= self._terms(n) <= words for n in names.get(d, ()))
                for d in dl.live
            ):
                h.name_factor = factor
                h.boost *= factor
                h.score *= factor
                named = True
        if named:
            hits.sort(key=lambda h: (h.relaxed, -h.score, h.kbid))
        return links

    def _heading_boost(self, hits: list[Hit], parsed: ParsedQuery, common: list[bool]) -> None:
        """Multiply by ``1 + heading_boost`` the strict hits whose heading the query is:
        every query word that strict matching requires (but those it made optional as
        common) matched in the heading field and is a word of the section's own heading,
        and every word of that heading is a query word. A chapter's title is also in the
        path field of every section below it; this lets the chapter's own section, not a
        short subsection, answer its title."""
        boost = self.cfg.heading_boost
        if boost <= 0 or not hits:
            return
        clauses = parsed.clauses
        needed_at = [
            i
            for i, ((_, required), is_common) in enumerate(zip(clauses, common, strict=False))
            if required and not is_common
        ]
        if not needed_at:
            return
        # The engine's per-clause field masks say where each clause matched: only the rows
        # of hits whose heading field matched every needed clause are read, and most
        # queries (long ones above all) have none. A hit's masks become one integer of 0/1
        # bytes (1: the clause matched in the heading), the clauses that are not needed
        # set to 1: a few C calls a hit, not a Python loop over its clauses.
        n = len(clauses)
        every = int.from_bytes(b"\x01" * n, "little")
        skip = every
        for i in needed_at:
            skip &= ~(1 << (8 * i))
        maybe = [
            h
            for h in hits
            if not h.relaxed
            and int.from_bytes(h.matched.translate(_HEADING_BIT), "little") | skip == every
        ]
        if not maybe:
            return
        words = {alts[0][0] for alts, required in clauses if required}
        needed = {clauses[i][0][0][0] for i in needed_at}
        with self.source.read() as conn:
            rows = self.source.rows(conn, [h.kbid for h in maybe])
        # Code sections get the boost by rank: when the query names a definition as
        # written (case, underscores and separators aside) outside test code, only those
        # do; else those that it names in test code; else those with the query's words in
        # their names (``new_stats`` for ``Stats::new``). Other sections get it as before.
        key = identifier_key(parsed.text)
        named: list[tuple[Hit, int]] = []  # (hit, its rank: 0 best; -1 not code)
        best = _LOOSE
        for h in maybe:
            row = rows.get(h.kbid)
            if row is None:
                continue
            code = row.type in CODE_TYPES
            if code and names_the_definition(row.names, key):
                rank = _NAMED_TEST if row.test_code else _NAMED
            elif any(needed <= self._terms(n) <= words for n in row.names):
                rank = _LOOSE if code else -1
            else:
                continue
            named.append((h, rank))
            if rank >= 0:
                best = min(best, rank)
        factor = 1.0 + boost
        boosted = False
        for h, rank in named:
            if rank > best:
                continue
            h.heading_factor = factor
            h.boost *= factor
            h.score *= factor
            boosted = True
        if boosted:
            hits.sort(key=lambda h: (h.relaxed, -h.score, h.kbid))

    def _links(self, conn: Any, kbids: Sequence[str]) -> Links:
        """The links of ``kbids``; under ``as_of``, a section counts as live in each of its
        documents."""
        links = self.source.links(conn, kbids)
        if self.at is not None:
            links = {k: DocLinks(dl.docids, dl.docids) for k, dl in links.items()}
        return links

    def _name_terms(self, docid: str) -> frozenset[str]:
        """The analyzed words of a document's name (no identifier whole forms)."""
        return self._terms(file_stem(docid))

    def _terms(self, text: str) -> frozenset[str]:
        """The analyzed words of a name or a heading (no identifier whole forms)."""
        key = (self.analyzer.id, text)
        got = _TERMS.get(key)
        if got is None:
            tokens = self.analyzer.query_tokens(text)
            got = frozenset(t for t, _, _, whole in tokens if not whole)
            if len(_TERMS) >= _TERMS_MAX:
                _TERMS.clear()
            _TERMS[key] = got
        return got

    def _sibling_boost(self, hits: list[Hit], links: Links, bodiless: bool) -> Links:
        """Boost hits whose document has other candidates, and drop a bodiless hit (a
        heading alone) when another section of its document is a candidate, which then
        stands for the page; returns the candidates' document links (fetched once, in one
        query)."""
        boost = self.cfg.sibling_boost
        if (boost <= 0 and not bodiless) or len(hits) < 2:
            return links
        if not links:
            with self.source.read() as conn:
                links = self._links(conn, [h.kbid for h in hits])
        docs = [d for dl in links.values() for d in dl.live]
        if len(set(docs)) == len(docs):
            return links  # no document has two candidates: every boost is 1
        # Per document: how many candidates are live in it (a plain dict: Counter.update
        # costs more than the rest of this function).
        per_doc: dict[str, int] = {}
        for d in docs:
            per_doc[d] = per_doc.get(d, 0) + 1
        if bodiless:
            hits[:] = [h for h in hits if not (h.bodiless and _has_sibling(links, per_doc, h))]
        if boost <= 0:
            return links
        for h in hits:
            dl = links.get(h.kbid)
            m = max([per_doc[d] for d in dl.live], default=1) if dl else 1
            factor = 1.0 + boost * min(m - 1, SIBLING_CAP) / SIBLING_CAP
            h.boost *= factor
            h.score *= factor
        # Strict hits stay above relaxed ones; within each tier, by boosted score.
        hits.sort(key=lambda h: (h.relaxed, -h.score, h.kbid))
        return links

    def hydrate(
        self,
        parsed: ParsedQuery,
        page: Sequence[Hit],
        *,
        content: bool,
        explain: bool,
        best: float = 0.0,
    ) -> list[SearchItem]:
        """Full result items for ``page``; sections retired since the index snapshot are
        dropped. A hit without a ``confidence`` of its own gets the lexical one, which
        weighs its score, without the recency decay, against ``best``, the score of the
        ranking's first hit before decay (a hit that reaches it counts as the best)."""
        kbids = [h.kbid for h in page]
        with self.source.read() as conn:
            rows = self.source.rows(conn, kbids)
            links = self._links(conn, kbids)
        clauses = parsed.clauses
        # Coverage counts the required clauses a hit matched; when all are required (no
        # split identifier's whole form), that is every clause it matched.
        required_flags = None if parsed.required == len(clauses) else [req for _, req in clauses]
        required = parsed.required or len(clauses)
        surfaces = parsed.surfaces
        # The hits still shown, each with its row, matched clauses, their fields' mask and
        # the index of its snippet job (None for an image: its snippet is empty). The
        # page's snippets are made in one call.
        shown: list[tuple[Hit, Row, tuple[int, ...], int, int | None]] = []
        jobs: list[tuple[str, str | None, tuple[int, ...]]] = []
        for h in page:
            row = rows.get(h.kbid)
            if row is None or (row.retired_at is not None and self.at is None):
                continue
            matched_clauses, fields = _matched(h.matched)
            job = None
            if not row.type.startswith("image/"):
                # Cut from the indexed body; from the whole content (code included) when no
                # term is in the body. A body that is the content needs no fallback.
                body = row.body
                job = len(jobs)
                jobs.append((body, None if body is row.content else row.content, matched_clauses))
            shown.append((h, row, matched_clauses, fields, job))
        texts = (
            self.analyzer.snippets(
                jobs, [[alt for alt, _ in alts] for alts, _ in clauses], width=SNIPPET_CHARS
            )
            if jobs
            else []
        )
        items: list[SearchItem] = []
        for h, row, matched_clauses, fields, job in shown:
            conf = h.confidence
            if conf is None:
                if required_flags is None:
                    covered = len(matched_clauses)
                else:
                    covered = sum([required_flags[i] for i in matched_clauses])
                relative = h.score / h.recency / best if best > 0 else 1.0
                conf = confidence(
                    h.score / h.boost,
                    h.bound,
                    covered / required if required else 1.0,
                    relative,
                    relative >= 1.0,
                )
            dl = links.get(h.kbid)
            items.append(
                search_item(
                    h.kbid,
                    row.heading,
                    row.level,
                    row.parent,
                    row.type,
                    row.section_type,
                    dl.docids if dl else (),
                    row.tags,
                    "" if job is None else texts[job],
                    tuple([surfaces[i] for i in matched_clauses]),
                    tuple([name for bit, name in _FIELDS if fields & bit]),
                    round_to(h.score, 6),
                    conf,
                    row.created_at,
                    h.relaxed,
                    row.source,
                    row.title,
                    row.content if content else None,
                    _explain(h) if explain else None,
                )
            )
        return items


# The kinds of code section the heading boost tells apart, best first
# (``LexicalSearcher._heading_boost``).
_NAMED, _NAMED_TEST, _LOOSE = 0, 1, 2
# Per analyzer id and text (a page's name, a heading): its analyzed words
# (``LexicalSearcher._terms``; knowledge bases of several languages may be open in one
# process).
_TERMS: dict[tuple[str, str], frozenset[str]] = {}
_TERMS_MAX = 16_384
# A clause's field mask to 1 when it holds the heading bit, else 0 (``bytes.translate``,
# for ``_heading_boost``).
_HEADING_BIT = bytes(1 if m & _core.FIELD_HEADING else 0 for m in range(256))


def _matched(masks: bytes) -> tuple[tuple[int, ...], int]:
    """The clauses that ``masks`` (``Hit.matched``) marks as matched, and the union of
    their field masks."""
    fields = 0
    for m in masks:
        fields |= m
    return tuple([i for i, m in enumerate(masks) if m]), fields


class Row(NamedTuple):
    heading: str
    level: int
    parent: str | None
    content: str
    type: str
    section_type: str
    title: str | None
    created_at: str
    retired_at: str | None
    tags: tuple[str, ...]
    body: str  # what the snippet is cut from (``fields.body_fields``); ``content`` itself
    # when the two are the same
    source: SourceRef  # where the section is in its first document's file
    names: tuple[str, ...]  # what the heading boost compares: the heading; for a code
    # section, the names of its definition (``fields.definition_names``)
    test_code: bool  # a code section in test code (``fields.in_test_code``)


def _hydration_rows(db: Database, conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, Row]:
    """The rows of ``kbids`` that exist, from the read cache or one query per chunk."""
    cache = db.cache()
    if cache is None:
        return _read_rows(conn, kbids)
    table = cache.table("search.rows")
    out: dict[str, Row] = {}
    missing = []
    for k in kbids:
        row = table.get(k)
        if row is None:
            missing.append(k)
        else:
            out[k] = row
    if missing:
        for k, row in _read_rows(conn, missing).items():
            cache.put(table, k, row, _row_bytes(row))
            out[k] = row
    return out


def _read_rows(conn: sqlite3.Connection, kbids: Sequence[str]) -> dict[str, Row]:
    out: dict[str, Row] = {}
    for r in q.hit_rows(conn, kbids):
        tags = tuple(sorted(json.loads(r[10]))) if r[10] != "[]" else ()
        body = body_fields(r[4], r[5], None)[0]
        names = definition_names(r[1], r[5], r[12])
        test_code = r[5] in CODE_TYPES and in_test_code(r[12])
        out[r[0]] = Row(
            r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], tags, body, source_ref(r[11]),
            names, test_code,
        )  # fmt: skip
    return out


_NO_LINKS = DocLinks((), ())
# What one cached link (a docid in two tuples) holds, from above.
_LINK_BYTES = 256
# What a cached row holds besides its content and body (its other columns, the tuple).
_ROW_BYTES = 1024


def _row_bytes(row: Row) -> int:
    size = _ROW_BYTES + text_bytes(row.content) + text_bytes(row.heading)
    size += text_bytes(row.title) + sum(text_bytes(t) for t in row.tags)
    return size + (0 if row.body is row.content else text_bytes(row.body))


def _links(db: Database, conn: sqlite3.Connection, kbids: Sequence[str]) -> Links:
    """The document links of ``kbids``, from the read cache or one query per chunk. A
    kbid without links is left out."""
    cache = db.cache()
    if cache is None:
        return _read_links(conn, kbids)
    table = cache.table("search.links")
    out: Links = {}
    missing = []
    for k in kbids:
        dl = table.get(k)
        if dl is None:
            missing.append(k)
        elif dl.docids:
            out[k] = dl
    if missing:
        found = _read_links(conn, missing)
        for k in missing:
            dl = found.get(k, _NO_LINKS)
            cache.put(table, k, dl, _LINK_BYTES * (1 + len(dl.docids)))
            if dl.docids:
                out[k] = dl
    return out


def _read_links(conn: sqlite3.Connection, kbids: Sequence[str]) -> Links:
    pairs: dict[str, list[tuple[str, bool]]] = {}
    for kbid, docid, live in q.link_rows(conn, kbids):
        got = pairs.get(kbid)
        if got is None:
            pairs[kbid] = got = []
        got.append((docid, live))
    return {kbid: _doc_links(p) for kbid, p in pairs.items()}


def _doc_links(pairs: Sequence[tuple[str, bool]]) -> DocLinks:
    """A section's links from its ``(docid, live)`` pairs, sorted by docid."""
    live = tuple(d for d, is_live in pairs if is_live)
    return DocLinks(live, live or tuple(dict.fromkeys(d for d, _ in pairs)))


def _has_sibling(links: Links, per_doc: dict[str, int], h: Hit) -> bool:
    """Whether another candidate is live in one of ``h``'s documents."""
    dl = links.get(h.kbid)
    return dl is not None and any(per_doc[d] > 1 for d in dl.live)


def _hits(
    h: _core.Hits, *, relaxed: bool, bound: float, skip: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Hit], int]:
    """``h`` as ``Hit``s, but those whose kbid is in ``skip``, and the number of sections
    that match.

    A hit that scores 0 matched only in fields whose weight is 0 (``search.w_anchor = 0``
    turns the anchor field off): it is no result, and it ranks below every other hit, so
    the rest are the top positive scores. When ``h`` ends with one, every match it did not
    return scores 0 too: the sections that match are its hits that score more. Otherwise
    they are ``h.total``, which still counts any section matched in zero-weight fields
    alone."""
    ex = h.explain
    # Positional (a search makes dozens of these): kbid, score, matched, relaxed, explain,
    # boost, bound, lexical_score.
    if ex is None:
        out = [
            Hit(k, s, m, relaxed, None, 1.0, bound, s)
            for k, s, m in zip(h.kbids, h.scores, h.matched, strict=True)
        ]
    else:
        out = [
            Hit(k, s, m, relaxed, e, 1.0, bound, s)
            for k, s, m, e in zip(h.kbids, h.scores, h.matched, ex, strict=True)
        ]
    # Rare flags, given as positions: set on the few hits they concern.
    for i in h.bodiless:
        out[i].bodiless = True
    for i in h.in_path:
        out[i].in_path = True
    total = h.total
    if out and out[-1].score <= 0.0:
        out = [x for x in out if x.score > 0.0]
        total = len(out)
    return ([x for x in out if x.kbid not in skip] if skip else out), total


def _explain(h: Hit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bm25f": [
            {"clause": c, "term": t, "field": f, "score": round(s, 6)}
            for c, t, f, s in (h.explain or [])
        ],
        "sibling_boost": round(h.boost / h.name_factor / h.heading_factor / h.recency, 4),
        "relaxed": h.relaxed,
    }
    if h.name_factor != 1.0:
        out["name_boost"] = round(h.name_factor, 4)
    if h.heading_factor != 1.0:
        out["heading_boost"] = round(h.heading_factor, 4)
    if h.extra:
        out.update(h.extra)
    return out
