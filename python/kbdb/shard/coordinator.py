"""``ShardedKnowledgeBase``: a sharded collection searched and written as one knowledge base.

The coordinator runs in the process that opens the collection (the Python API, the CLI, the
MCP server). The shards run in that process too, or on Ray actors (``ray=ADDRESS``): the
ones ``kbdb shard serve`` keeps alive when it runs, otherwise actors of this process's own.

A search has the signature of ``KnowledgeBase.search`` and ranks as one knowledge base
holding every shard's sections would (``merge``): the same kbids in the same order, the
same scores. Writes go to the shard that owns the document, under that shard's writer lock.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from kbdb import _core
from kbdb.errors import InvalidArgumentError, KbdbError, NotFoundError
from kbdb.search.lexical import LexicalSearcher
from kbdb.search.searcher import check_request, run
from kbdb.search.synonyms import Synonyms
from kbdb.shard import layout
from kbdb.shard.fanout import Fanout, RayFanout, ShardUnavailableError
from kbdb.shard.merge import Owners, ShardedEngine, ShardedSource, ShardedVectors
from kbdb.shard.server import ShardServer
from kbdb.types import SearchMode, SearchResult

if TYPE_CHECKING:
    from kbdb.config import Config
    from kbdb.learn import LearnItem, ProgressFn
    from kbdb.types import DocumentList, ForgetResult, LearnReport, RecallResult, Stats


FILES_PER_CALL = 256
"""Files a sharded ``learn_path`` hands a shard per call (one or more learn batches)."""


class ShardedKnowledgeBase:
    """A sharded collection (``kbdb shard create``), searched as one knowledge base."""

    def __init__(self, lay: layout.Layout, fanout: Fanout) -> None:
        self.layout = lay
        self._fanout = fanout
        described = fanout.all("describe")
        first = described[0]
        for d in described[1:]:
            for key in ("analyzer", "search", "embedding"):
                if d[key] != first[key]:
                    fanout.close()
                    raise InvalidArgumentError(
                        f"shard {d['shard']} ({d['path']}) differs from shard 0 in its "
                        f"{key} settings; every shard of a collection must search alike",
                        hint="copy shard 0's worker.toml to every shard, then "
                        "'kbdb --db SHARD rebuild'",
                    )
        self._config: Config = first["config"]
        self._vectors_enabled = first["embedding"] is not None
        self._analyzer = _core.Analyzer(self._config.index.language)
        if self._analyzer.id != first["analyzer"]:
            fanout.close()
            raise InvalidArgumentError(
                f"the shards were indexed by analyzer {first['analyzer']}, this kbdb has "
                f"{self._analyzer.id}",
                hint="rebuild every shard with this kbdb ('kbdb --db SHARD rebuild')",
            )
        groups = first["synonyms"]
        self._synonyms = Synonyms(groups, self._analyzer.terms) if groups is not None else None

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, ray: str | bool | None = None
    ) -> ShardedKnowledgeBase:
        """Open the collection at ``path``. ``ray``: None or False, the shards in this
        process; True or ``"auto"`` or an address, the shards on that Ray cluster."""
        lay = layout.load(path)
        if ray is None or ray is False:
            servers: list[ShardServer] = []
            try:
                for i, d in enumerate(lay.shard_dirs):
                    try:
                        servers.append(ShardServer(d, i))
                    except KbdbError as e:
                        raise type(e)(f"shard {i} ({d}): {e.message}", hint=e.hint) from e
            except Exception:
                for s in servers:
                    s.close()
                raise
            return cls(lay, Fanout(servers))
        from kbdb.shard.actors import connect

        return cls(lay, connect(lay, None if ray is True else str(ray)))

    @property
    def config(self) -> Config:
        return self._config

    @property
    def shards(self) -> int:
        return self.layout.count

    def close(self) -> None:
        self._fanout.close()

    def __enter__(self) -> ShardedKnowledgeBase:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- search ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        docid: str | None = None,
        type: str | None = None,
        section_type: str | None = None,
        content: bool = False,
        explain: bool = False,
        since: object = None,
        until: object = None,
        sort: str | None = None,
        as_of: object = None,
        min_confidence: float = 0.0,
        speaker: str | None = None,
    ) -> SearchResult:
        """``KnowledgeBase.search`` over the whole collection, ranked exactly as one
        knowledge base of every shard's sections. ``as_of`` is not supported here."""
        if as_of is not None:
            raise InvalidArgumentError(
                "as_of is not supported on a sharded collection",
                hint="search one shard with 'kbdb --db SHARD search --as-of', or the "
                "unsharded knowledge base",
            )
        req = check_request(
            self._config,
            self._vectors_enabled,
            query,
            mode=mode,
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
            min_confidence=min_confidence,
            speaker=speaker,
        )
        owners = Owners()
        lexical = LexicalSearcher(
            ShardedEngine(self._fanout, owners, prefetch=isinstance(self._fanout, RayFanout)),
            ShardedSource(self._fanout, owners),
            self._analyzer,
            self._synonyms,
            self._config.search,
        )
        vectors = ShardedVectors(self._fanout, owners) if req.mode != "lexical" else None
        stale = vectors is not None and vectors.stale()
        result = run(lexical, vectors, stale, self._config, req)
        if req.reported_mode is not None:
            return dataclasses.replace(result, search_mode=cast(SearchMode, req.reported_mode))
        return result

    # -- write -------------------------------------------------------------------------

    def learn(self, content: str, *, docid: str | None = None, **kwargs: Any) -> LearnReport:
        """``KnowledgeBase.learn`` into the shard that owns the document's docid."""
        from kbdb.learn import LearnItem

        return self.learn_many([LearnItem(content, docid=docid, **kwargs)])

    def learn_many(self, items: Iterable[LearnItem]) -> LearnReport:
        """Each item into the shard its docid routes to (an item without one is stored
        under the docid ``KnowledgeBase.learn`` would give it); one report for all."""
        from kbdb.learn.items import item_docid

        per: dict[int, list[LearnItem]] = {}
        for item in items:
            per.setdefault(self.layout.route(item_docid(item)), []).append(item)
        got = self._fanout.some("learn_many", {i: (batch,) for i, batch in per.items()})
        return merge_learn_reports([got[i] for i in sorted(got)])

    def learn_path(
        self,
        *paths: str | os.PathLike[str],
        tags: Sequence[str] = (),
        docid: str | None = None,
        notable_only: bool = False,
        progress: ProgressFn | None = None,
    ) -> LearnReport:
        """``KnowledgeBase.learn_path`` over the collection: the files are walked, read and
        split here (the same walker, ignore rules and parser), and each document is stored
        by the shard its docid routes to, ``FILES_PER_CALL`` files a call."""
        import time

        from kbdb.args import check_tags
        from kbdb.ingest import count_files, walk
        from kbdb.learn import LearnProgress
        from kbdb.learn.learner import check_paths, parse_entry
        from kbdb.types import SkippedFile

        started = time.perf_counter()
        tags = check_tags(tags)
        roots = check_paths(Path(p) for p in paths)
        total = sum(count_files(p) for p in roots) if progress else None
        max_bytes = self._config.learn.max_file_bytes
        buffers: dict[int, list[Any]] = {}
        reports: list[LearnReport] = []
        skipped: list[SkippedFile] = []
        done = sections = 0

        def flush(shards: Iterable[int]) -> None:
            calls = {i: (buffers.pop(i), notable_only) for i in list(shards) if buffers.get(i)}
            if calls:
                got = self._fanout.some("store_files", calls)
                reports.extend(got[i] for i in sorted(got))

        for root in roots:
            single = root.is_file()
            for entry in walk(root, max_file_bytes=max_bytes):
                for parsed in parse_entry(
                    entry,
                    tags=tags,
                    docid=docid,
                    single_file=single,
                    max_record_bytes=max_bytes,
                ):
                    done += parsed.first_of_file
                    if parsed.pending is None:
                        if parsed.skipped is not None:
                            skipped.append(parsed.skipped)
                        continue
                    shard = self.layout.route(parsed.pending.doc.docid)
                    buffers.setdefault(shard, []).append(parsed)
                    sections += len(parsed.pending.doc.sections)
                    if len(buffers[shard]) >= FILES_PER_CALL:
                        flush([shard])
                    if progress is not None:
                        progress(LearnProgress(done, total, sections, parsed.path))
        flush(list(buffers))
        merged = merge_learn_reports(reports)
        return dataclasses.replace(
            merged,
            files_skipped=(*merged.files_skipped, *skipped),
            elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    def forget(self, *kbids: str, docid: str | None = None) -> ForgetResult:
        """Retire sections by kbid (in whichever shards hold them) or a whole document (in
        its shard)."""
        from kbdb.types import ForgetResult

        if docid is not None:
            i = self.layout.route(docid)
            return cast("ForgetResult", self._fanout.some("forget", {i: ((), docid)})[i])
        if not kbids:
            raise InvalidArgumentError("forget needs kbids or a docid")
        got = [r for r in self._fanout.all("forget_held", list(kbids)) if r is not None]
        found = {k for r in got for k in (*r.retired, *r.already_retired)}
        missing = [k for k in kbids if k not in found]
        if missing:
            raise NotFoundError(f"no section {missing[0]} in any shard")
        retired = {k for r in got for k in r.retired}
        return ForgetResult(
            retired=tuple(k for k in kbids if k in retired),
            already_retired=tuple(k for k in kbids if k not in retired),
        )

    def recall(self, *kbids: str, docid: str | None = None) -> RecallResult:
        """Full sections by kbid (from the shards that hold them) or a document's."""
        from kbdb.types import RecallResult

        if docid is not None:
            i = self.layout.route(docid)
            return cast("RecallResult", self._fanout.some("recall", {i: ((), docid)})[i])
        if not kbids:
            raise InvalidArgumentError("recall needs kbids or a docid")
        found: dict[str, Any] = {}
        for sections in self._fanout.all("recall_held", list(kbids)):
            for sec in sections:
                found.setdefault(sec.kbid, sec)
        missing = [k for k in kbids if k not in found]
        if missing:
            raise NotFoundError(f"no section {missing[0]} in any shard")
        return RecallResult(sections=tuple(found[k] for k in dict.fromkeys(kbids)))

    def documents(
        self, *, tags: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> DocumentList:
        """``KnowledgeBase.documents`` over every shard, by docid."""
        from kbdb.types import DocumentList

        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise InvalidArgumentError(f"offset must be an integer >= 0 (got {offset!r})")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidArgumentError(f"limit must be an integer in 1..1000 (got {limit!r})")
        # Each shard's first offset + limit, merged: a page of the whole is among them.
        items: list[Any] = []
        total = 0
        for page in self._fanout.all("documents", tags, offset + limit):
            items.extend(page.items)
            total += page.total
        items.sort(key=lambda d: d.docid)
        return DocumentList(
            items=tuple(items[offset : offset + limit]),
            total=total,
            offset=offset,
            limit=limit,
            has_more=offset + limit < total,
        )

    def stats(self) -> Stats:
        """The shards' counts and sizes summed; ``extra["shards"]`` holds each shard's."""
        parts: list[Stats] = self._fanout.all("stats")
        first = parts[0]
        summed = {
            f: sum(getattr(p, f) for p in parts)
            for f in (
                "documents",
                "sections",
                "live_sections",
                "retired_sections",
                "tags",
                "db_bytes",
                "index_bytes",
                "index_segments",
            )
        }
        return dataclasses.replace(
            first,
            **summed,
            index_generation=0,
            index_watermark=0,
            changelog_seq=0,
            vector_index_stale=any(p.vector_index_stale for p in parts),
            path=str(self.layout.root),
            extra={"shards": [p.to_dict() for p in parts]},
        )

    def __getattr__(self, name: str) -> Any:
        # What one knowledge base can do and a collection cannot (yet): a clear error
        # rather than an AttributeError deep in a caller (the MCP server, a script).
        from kbdb.kb import KnowledgeBase

        if not name.startswith("_") and callable(getattr(KnowledgeBase, name, None)):
            raise InvalidArgumentError(
                f"{name} is not supported on a sharded collection",
                hint="open the shard that holds the document with KnowledgeBase.open("
                "'COLLECTION/shard-NNN'); a collection supports search, learn, learn_path, "
                "learn_many, recall, forget, documents and stats",
            )
        raise AttributeError(name)

    def shard_sizes(self) -> list[int]:
        """Live sections per shard."""
        return [d["sections"] for d in self._fanout.all("describe")]


def merge_learn_reports(reports: Sequence[LearnReport]) -> LearnReport:
    """One report of the shards' reports of one learn (they ran side by side)."""
    from kbdb.types import LearnReport

    return LearnReport(
        sections=tuple(s for r in reports for s in r.sections),
        documents_added=sum(r.documents_added for r in reports),
        documents_updated=sum(r.documents_updated for r in reports),
        documents_unchanged=sum(r.documents_unchanged for r in reports),
        sections_added=sum(r.sections_added for r in reports),
        sections_unchanged=sum(r.sections_unchanged for r in reports),
        sections_retired=sum(r.sections_retired for r in reports),
        files_skipped=tuple(f for r in reports for f in r.files_skipped),
        elapsed_ms=max((r.elapsed_ms for r in reports), default=0.0),
    )


def is_collection(path: str | os.PathLike[str]) -> bool:
    return layout.is_collection(Path(path))


__all__ = ["ShardUnavailableError", "ShardedKnowledgeBase", "is_collection"]
