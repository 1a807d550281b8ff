"""``Searcher``: ``KnowledgeBase.search`` (SPEC §4): the argument checks, the default
mode, and the choice between the lexical path and fusion with the vector index."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast, get_args

from kbdb.errors import EmbeddingProviderNotConfiguredError, InvalidArgumentError
from kbdb.search.lexical import NO_FILTERS, Filters, LexicalSearcher
from kbdb.types import SearchMode, SearchResult

if TYPE_CHECKING:
    from kbdb.context import Context
    from kbdb.index.vectors import VectorStore
    from kbdb.search.when import Timing

MAX_LIMIT = 100
_SEARCH_MODES = get_args(SearchMode)


class Searcher:
    """Ranked search over one knowledge base."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def search(
        self,
        query: str,
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
    ) -> SearchResult:
        """See ``KnowledgeBase.search``."""
        ctx = self._ctx
        if mode is None:
            mode = ctx.config.search.default_mode
            if mode != ctx.config.effective_default_mode:
                result = self.search(
                    query,
                    mode="lexical",
                    limit=limit,
                    offset=offset,
                    tags=tags,
                    docid=docid,
                    type=type,
                    section_type=section_type,
                    content=content,
                    explain=explain,
                    since=since,
                    until=until,
                    sort=sort,
                    as_of=as_of,
                )
                return dataclasses.replace(result, search_mode=mode)
        if mode not in _SEARCH_MODES:
            raise InvalidArgumentError(
                f"mode must be one of lexical, vector, hybrid (got {mode!r})"
            )
        limit = ctx.config.search.default_limit if limit is None else limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(
                f"limit must be an integer in 1..{MAX_LIMIT} (got {limit!r})"
            )
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidArgumentError(f"offset must be an integer >= 0 (got {offset!r})")
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
        half_life = ctx.config.search.recency_half_life
        if not (since is None and until is None and as_of is None and sort is None) or half_life:
            from kbdb.search.when import timing as check_timing  # only when asked for

            timing = check_timing(since, until, as_of, sort, half_life)
        filters = (
            Filters(tuple(tags) if tags else None, docid, type, section_type)
            if tags or docid is not None or type is not None or section_type is not None
            else NO_FILTERS
        )
        if timing is not None:
            filters = dataclasses.replace(
                filters, since=timing.since, until=timing.until, at=timing.as_of
            )
        if mode != "lexical" and not ctx.vectors.enabled:
            raise EmbeddingProviderNotConfiguredError(
                "Vector search requires a configured embedding provider",
                hint="set [embedding] provider in worker.toml, e.g. "
                "'kbdb config set embedding.provider onnx'",
            )

        def timed(lexical: LexicalSearcher) -> LexicalSearcher:
            lexical.timing = timing
            return lexical

        if timing is not None and timing.as_of is not None:
            return self._as_of(
                query,
                mode=mode,
                timing=timing,
                limit=limit,
                offset=offset,
                filters=filters,
                content=content,
                explain=explain,
            )

        def search_lexical(lexical: LexicalSearcher) -> SearchResult:
            return lexical.search(
                query,
                limit=limit,
                offset=offset,
                filters=filters,
                content=content,
                explain=explain,
            )

        if mode == "lexical" and not ctx.db.conn().in_transaction:
            # One read snapshot for the whole search, when it shows that no other connection
            # has committed since this thread last found the index in step with the
            # database: then neither has moved (``LexicalIndex.current``).
            with ctx.db.read():
                if ctx.index.current():
                    return search_lexical(timed(ctx.searcher()))
        # Outside any read snapshot: a catch-up must see the database's current head, not
        # one older than an index another writer has just published.
        ctx.index.refresh()
        lexical = timed(ctx.searcher())
        stale = mode != "lexical" and ctx.vectors.stale()
        if mode == "lexical" or stale:
            result = search_lexical(lexical)
            if not stale:
                return result
            # The seed's fallback: a stale vector index is never used; say so.
            return dataclasses.replace(
                result, search_mode=cast(SearchMode, mode), vector_index_stale=True
            )
        ctx.refresh_vectors()
        return self._fused(
            lexical, ctx.vectors, query, mode, limit, offset, filters, content, explain
        )

    def _fused(
        self,
        lexical: LexicalSearcher,
        vectors: VectorStore,
        query: str,
        mode: str,
        limit: int,
        offset: int,
        filters: Filters,
        content: bool,
        explain: bool,
    ) -> SearchResult:
        from kbdb.search.hybrid import search_fused

        ctx = self._ctx
        s = ctx.config.search
        return search_fused(
            lexical,
            vectors,
            query,
            mode=cast(Literal["vector", "hybrid"], mode),
            limit=limit,
            offset=offset,
            filters=filters,
            content=content,
            explain=explain,
            rrf_k=ctx.config.embedding.rrf_k,
            fusion=s.fusion,
            linear_weight=s.linear_weight,
        )

    def _as_of(
        self,
        query: str,
        *,
        mode: str,
        timing: Timing,
        limit: int,
        offset: int,
        filters: Filters,
        content: bool,
        explain: bool,
    ) -> SearchResult:
        """A search over the sections live at ``timing.as_of``, in indexes built for that
        moment (``index/snapshot.py``)."""
        ctx = self._ctx
        at = timing.as_of
        assert at is not None
        snap = ctx.snapshot(at)
        lexical = LexicalSearcher(
            snap.index, ctx.db, ctx.index.analyzer, ctx.synonyms(), ctx.config.search
        )
        lexical.at = at
        lexical.timing = timing
        stale = mode != "lexical" and ctx.vectors.stale()
        if mode == "lexical" or stale:
            result = lexical.search(
                query, limit=limit, offset=offset, filters=filters, content=content, explain=explain
            )
            if not stale:
                return result
            return dataclasses.replace(
                result, search_mode=cast(SearchMode, mode), vector_index_stale=True
            )
        vectors = snap.vectors(ctx.vectors)
        return self._fused(lexical, vectors, query, mode, limit, offset, filters, content, explain)
