"""``Searcher``: ``KnowledgeBase.search`` (SPEC §4): the argument checks, the default
mode, the choice between the lexical path and fusion with the vector index, and the
``min_confidence`` cut over the ranked hits."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from kbdb.errors import EmbeddingProviderNotConfiguredError, InvalidArgumentError
from kbdb.search.confidence import verdict
from kbdb.search.lexical import NO_FILTERS, Filters, LexicalSearcher
from kbdb.types import SearchItem, SearchMode, SearchResult, Verdict

if TYPE_CHECKING:
    from kbdb.config import Config
    from kbdb.context import Context
    from kbdb.search.when import Timing

MAX_LIMIT = 100
# With ``min_confidence``: the ranked hits whose confidence is looked at, at least (the
# number of candidates each path of a hybrid search ranks). Hits below them are dropped.
CONFIDENCE_WINDOW = 100
_SEARCH_MODES = get_args(SearchMode)


@dataclasses.dataclass(frozen=True)
class Request:
    """A search's checked arguments. ``reported_mode``: the mode the result names when the
    configured default mode cannot run here and the search runs lexical instead."""

    query: str
    mode: str
    limit: int
    offset: int
    filters: Filters
    content: bool
    explain: bool
    timing: Timing | None
    reported_mode: str | None = None
    min_confidence: float = 0.0


def check_request(
    config: Config,
    vectors_enabled: bool,
    query: object,
    *,
    mode: str | None,
    limit: int | None,
    offset: int,
    tags: Sequence[str] | None,
    docid: str | None,
    type: str | None,
    section_type: str | None,
    content: bool,
    explain: bool,
    since: object = None,
    until: object = None,
    sort: str | None = None,
    as_of: object = None,
    min_confidence: object = 0.0,
    speaker: str | None = None,
) -> Request:
    """``KnowledgeBase.search``'s arguments checked, with the default mode and limit."""
    reported: str | None = None
    if mode is None:
        mode = config.search.default_mode
        if mode != config.effective_default_mode:
            reported, mode = mode, "lexical"
    if mode not in _SEARCH_MODES:
        raise InvalidArgumentError(f"mode must be one of lexical, vector, hybrid (got {mode!r})")
    limit = config.search.default_limit if limit is None else limit
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgumentError(f"limit must be an integer in 1..{MAX_LIMIT} (got {limit!r})")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidArgumentError(f"offset must be an integer >= 0 (got {offset!r})")
    if (
        isinstance(min_confidence, bool)
        or not isinstance(min_confidence, int | float)
        or not (math.isfinite(min_confidence) and 0.0 <= min_confidence <= 1.0)
    ):
        raise InvalidArgumentError(
            f"min_confidence must be a number in [0, 1] (got {min_confidence!r})",
            hint="e.g. 0.5; 0 keeps every hit",
        )
    if not isinstance(query, str):
        raise InvalidArgumentError("query must be a string")
    try:
        if not query.isascii():
            query.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"query is not valid Unicode (lone surrogate at character {e.start})",
            hint="send the query as UTF-8 text",
        ) from None
    timing: Timing | None = None
    half_life = config.search.recency_half_life
    if not (since is None and until is None and as_of is None and sort is None) or half_life:
        from kbdb.search.when import timing as check_timing  # only when asked for

        timing = check_timing(since, until, as_of, sort, half_life)
    if speaker is not None and (not isinstance(speaker, str) or not speaker.strip()):
        raise InvalidArgumentError(f"speaker must be a non-empty string (got {speaker!r})")
    speaker = None if speaker is None else " ".join(speaker.split())
    filters = (
        Filters(tuple(tags) if tags else None, docid, type, section_type, speaker=speaker)
        if tags
        or docid is not None
        or type is not None
        or section_type is not None
        or speaker is not None
        else NO_FILTERS
    )
    if timing is not None:
        filters = dataclasses.replace(
            filters, since=timing.since, until=timing.until, at=timing.as_of
        )
    if mode != "lexical" and not vectors_enabled:
        raise EmbeddingProviderNotConfiguredError(
            "Vector search requires a configured embedding provider",
            hint="set [embedding] provider in worker.toml, e.g. "
            "'kbdb config set embedding.provider onnx'",
        )
    return Request(
        query,
        mode,
        limit,
        offset,
        filters,
        content,
        explain,
        timing,
        reported,
        float(min_confidence),
    )


def fuse(
    config: Config,
    lexical: LexicalSearcher,
    vectors: Any,
    req: Request,
) -> SearchResult:
    """The vector or hybrid search of ``req`` over ``vectors`` (a ``VectorStore``, or a
    collection's shards)."""
    from kbdb.search.hybrid import search_fused

    s = config.search
    return search_fused(
        lexical,
        vectors,
        req.query,
        mode=cast(Literal["vector", "hybrid"], req.mode),
        limit=req.limit,
        offset=req.offset,
        filters=req.filters,
        content=req.content,
        explain=req.explain,
        rrf_k=config.embedding.rrf_k,
        fusion=s.fusion,
        linear_weight=s.linear_weight,
    )


def run(
    lexical: LexicalSearcher, vectors: Any, stale: bool, config: Config, req: Request
) -> SearchResult:
    """``req`` on the lexical path, or fused; a stale vector index is never used (the seed's
    fallback), and the result says so. With ``min_confidence``, only the hits that reach
    it (:func:`confident`)."""
    if req.min_confidence > 0:
        return confident(lexical, vectors, stale, config, req)
    return ranked(lexical, vectors, stale, config, req)


def confident(
    lexical: LexicalSearcher, vectors: Any, stale: bool, config: Config, req: Request
) -> SearchResult:
    """The search of ``req`` without the hits whose confidence is below
    ``req.min_confidence``, paged after the cut.

    The first ``max(CONFIDENCE_WINDOW, offset + limit)`` hits are ranked and hydrated as a
    search for that many would rank them; the ones that pass are paged with ``offset`` and
    ``limit``. ``total`` counts the hits of that window that pass, so ``has_more`` says
    whether a next page holds one; hits ranked below the window are never returned. The
    verdict is that of the first hit shown, by the search's own rule; ``unanswered`` when
    none is shown (docs/search.md, "Minimum confidence").
    """
    window = max(CONFIDENCE_WINDOW, req.offset + req.limit)
    wide = ranked(lexical, vectors, stale, config, dataclasses.replace(req, offset=0, limit=window))
    kept = [item for item in wide.items if item.confidence >= req.min_confidence]
    page = tuple(kept[req.offset : req.offset + req.limit])
    return dataclasses.replace(
        wide,
        items=page,
        total=len(kept),
        offset=req.offset,
        limit=req.limit,
        has_more=req.offset + req.limit < len(kept),
        retrieval_verdict=_page_verdict(wide, page),
    )


def _page_verdict(wide: SearchResult, page: Sequence[SearchItem]) -> Verdict:
    """The verdict of ``page``'s first hit: the search's own when it is the top of the
    ranking, else by the rule its path applies (a lexical search counts a relaxed match as
    partial; a fused one judges the confidence alone)."""
    if not page:
        return "unanswered"
    top = page[0]
    if wide.items and top is wide.items[0]:
        return wide.retrieval_verdict
    method = wide.retrieval_method
    relaxed = method == "lexical" and (wide.relaxed or top.relaxed)
    return verdict(top.confidence, relaxed, method)


def ranked(
    lexical: LexicalSearcher, vectors: Any, stale: bool, config: Config, req: Request
) -> SearchResult:
    """``req`` on the lexical path, or fused, every ranked hit kept."""
    lexical.timing = req.timing
    if req.mode == "lexical" or stale:
        result = lexical.search(
            req.query,
            limit=req.limit,
            offset=req.offset,
            filters=req.filters,
            content=req.content,
            explain=req.explain,
        )
        if not stale:
            return result
        return dataclasses.replace(
            result, search_mode=cast(SearchMode, req.mode), vector_index_stale=True
        )
    return fuse(config, lexical, vectors, req)


class Searcher:
    """Ranked search over one knowledge base."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """See ``KnowledgeBase.search``."""
        ctx = self._ctx
        req = check_request(ctx.config, ctx.vectors.enabled, query, **kwargs)
        result = self._run(req)
        if req.reported_mode is not None:
            return dataclasses.replace(result, search_mode=cast(SearchMode, req.reported_mode))
        return result

    def _run(self, req: Request) -> SearchResult:
        ctx = self._ctx
        if req.timing is not None and req.timing.as_of is not None:
            return self._as_of(req, req.timing.as_of)
        if req.mode == "lexical" and not ctx.db.conn().in_transaction:
            # One read snapshot for the whole search, when it shows that no other connection
            # has committed since this thread last found the index in step with the
            # database: then neither has moved (``LexicalIndex.current``).
            with ctx.db.read():
                if ctx.index.current():
                    return run(ctx.searcher(), None, False, ctx.config, req)
        # Outside any read snapshot: a catch-up must see the database's current head, not
        # one older than an index another writer has just published.
        ctx.index.refresh()
        stale = req.mode != "lexical" and ctx.vectors.stale()
        if req.mode != "lexical" and not stale:
            ctx.refresh_vectors()
        return run(ctx.searcher(), ctx.vectors, stale, ctx.config, req)

    def _as_of(self, req: Request, at: str) -> SearchResult:
        """A search over the sections live at ``at``, in indexes built for that moment
        (``index/snapshot.py``)."""
        ctx = self._ctx
        snap = ctx.snapshot(at)
        lexical = LexicalSearcher(
            snap.index, ctx.db, ctx.index.analyzer, ctx.synonyms(), ctx.config.search
        )
        lexical.at = at
        stale = req.mode != "lexical" and ctx.vectors.stale()
        vectors = None if req.mode == "lexical" or stale else snap.vectors(ctx.vectors)
        return run(lexical, vectors, stale, ctx.config, req)
