"""``KnowledgeBase``: the one facade that the CLI, the MCP server and the Python API call.

Every public method is here with its signature and docstring, and delegates to a service
of a room (``search``, ``learn``, ``knowledge``, ``maintenance``) that works on the
knowledge base's ``Context``. A search needs only the ``Searcher``; the other services, and
their modules, are made on first use, so a cold ``kbdb search`` never loads them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from kbdb.args import check_tags
from kbdb.config import Config
from kbdb.context import Context, create, resolve
from kbdb.errors import InvalidArgumentError
from kbdb.search.searcher import Searcher
from kbdb.types import SearchResult

if TYPE_CHECKING:
    from datetime import datetime

    from kbdb.knowledge.contradictions import Contradictions
    from kbdb.knowledge.lifecycle import Lifecycle
    from kbdb.knowledge.links import Links
    from kbdb.knowledge.skills import Skills
    from kbdb.learn import Learner, LearnItem, LearnProgress, ProgressFn
    from kbdb.learn.learner import ParsedFile
    from kbdb.maintenance.service import Maintenance
    from kbdb.types import (
        CheckReport,
        ContextResult,
        ContradictionsResult,
        DocumentList,
        ExportReport,
        ForgetResult,
        GcReport,
        HistoryResult,
        ImportReport,
        LearnReport,
        LinksResult,
        Outline,
        RebuildReport,
        RecallResult,
        RelatedResult,
        ReviseResult,
        Skill,
        SkillLearnResult,
        SkillList,
        Stats,
        TagList,
        WatchBatch,
    )
    from kbdb.watch import Watcher

__all__ = ["KnowledgeBase", "LearnItem", "LearnProgress", "resolve"]

_S = TypeVar("_S")


def __getattr__(name: str) -> Any:
    # ``from kbdb.kb import LearnItem`` keeps working without loading the learn machinery
    # at import.
    if name in ("LearnItem", "LearnProgress"):
        from kbdb import learn

        return getattr(learn, name)
    raise AttributeError(f"module 'kbdb.kb' has no attribute {name!r}")


class KnowledgeBase:
    """A knowledge base on disk. Safe to use from several threads and processes."""

    def __init__(self, kbdir: Path, *, config: Config | None = None) -> None:
        self.context = Context(kbdir, config)
        """The open resources (database, lock, indexes, configuration) the services share."""
        self._searcher = Searcher(self.context)
        self._services: dict[str, Any] = {}
        self._services_lock = threading.RLock()  # a service may need another to be made
        self._watchers: list[Watcher] = []  # running, for stats

    @property
    def path(self) -> Path:
        """The ``.kbdb`` folder."""
        return self.context.path

    @property
    def config(self) -> Config:
        return self.context.config

    def _service(self, name: str, make: Callable[[], _S]) -> _S:
        """The service ``name``, made by ``make`` on first use and kept."""
        service = self._services.get(name)
        if service is None:
            with self._services_lock:
                service = self._services.get(name)
                if service is None:
                    service = self._services[name] = make()
        return service

    def _learner(self) -> Learner:
        from kbdb.learn import Learner

        return self._service("learn", lambda: Learner(self.context))

    def _lifecycle(self) -> Lifecycle:
        from kbdb.knowledge.lifecycle import Lifecycle

        return self._service("lifecycle", lambda: Lifecycle(self.context))

    def _skills(self) -> Skills:
        from kbdb.knowledge.skills import Skills

        return self._service("skills", lambda: Skills(self.context, self._learner()))

    def _contradictions(self) -> Contradictions:
        from kbdb.knowledge.contradictions import Contradictions

        return self._service("contradictions", lambda: Contradictions(self.context))

    def _links(self) -> Links:
        from kbdb.knowledge.links import Links

        return self._service("links", lambda: Links(self.context))

    def _maintenance(self) -> Maintenance:
        from kbdb.maintenance.service import Maintenance

        return self._service("maintenance", lambda: Maintenance(self.context))

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    def init(
        cls, path: str | os.PathLike[str] = ".", *, language: str | None = None
    ) -> KnowledgeBase:
        """Create ``PATH/.kbdb`` (or open it when it exists) and return it. ``language``:
        the analyzer's language for a new knowledge base, an English name or ISO 639-1
        code (``"german"``, ``"de"``; docs/languages.md), English when not given."""
        kb = cls(create(path, language))
        kb.context.index.core  # noqa: B018 - creates the empty index now
        return kb

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, config: Config | None = None
    ) -> KnowledgeBase:
        """Open an existing knowledge base (see ``resolve`` for how it is found).
        ``config`` replaces its ``worker.toml`` settings in memory (``kbdb eval --set``)."""
        return cls(resolve(path), config=config)

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- learn -------------------------------------------------------------------------

    def learn_path(
        self,
        *paths: str | os.PathLike[str],
        tags: Sequence[str] = (),
        docid: str | None = None,
        progress: ProgressFn | None = None,
        notable_only: bool = False,
        ray: str | None = None,
    ) -> LearnReport:
        """Learn files and folders (recursively). Bad files are reported and skipped.
        ``notable_only``: ``sections`` holds only the reports with warnings,
        near-duplicates or a failed embedding (the counts cover all), so that learning a
        large tree does not hold one report per section. ``ray``: read, split and embed
        on a Ray cluster and store here, with the same result (``"local"``, ``"auto"``,
        ``"HOST:PORT"`` or ``"ray://HOST:PORT"``; docs/scale.md; needs ``kbdb[ray]``)."""
        if not paths:
            raise InvalidArgumentError("learn_path needs at least one path")
        if ray is not None:
            from kbdb.distributed import learn_paths

            return learn_paths(
                self.context,
                self._learner(),
                [Path(p) for p in paths],
                tags=check_tags(tags),
                docid=docid,
                progress=progress,
                notable_only=notable_only,
                address=ray,
            )
        return self._learner().learn_paths(
            [Path(p) for p in paths],
            tags=check_tags(tags),
            docid=docid,
            progress=progress,
            notable_only=notable_only,
        )

    def learn_parsed(
        self, parsed: Iterable[ParsedFile], *, notable_only: bool = False
    ) -> LearnReport:
        """Store files read and split elsewhere (``kbdb.learn.parse_file``: a sharded
        collection's coordinator walks and parses, the owning shard stores), in learn's
        batches."""
        import time

        return self._learner().store_files(
            parsed,
            total=None,
            progress=None,
            notable_only=notable_only,
            started=time.perf_counter(),
        )

    def learn(
        self,
        content: str,
        *,
        type: str = "text/markdown",
        title: str | None = None,
        description: str | None = None,
        docid: str | None = None,
        tags: Sequence[str] = (),
        replace: bool = False,
        section_type: str | None = None,
    ) -> LearnReport:
        """Learn a block of content. Without ``docid`` the document id is derived from the
        title (or the first words). ``replace`` supersedes sections by source key."""
        from kbdb.learn import LearnItem

        item = LearnItem(
            content,
            type=type,
            title=title,
            description=description,
            docid=docid,
            tags=tags,
            replace=replace,
            section_type=section_type,
        )
        return self._learner().learn(item)

    def learn_many(self, items: Iterable[LearnItem], *, batch: int = 1024) -> LearnReport:
        """Learn many blocks of content: ``batch`` documents per transaction and per index
        commit, which is far faster than one ``learn`` call each. Each item follows the
        rules of ``learn``; a bad item raises before its batch is stored."""
        return self._learner().learn_many(items, batch)

    def watch(
        self,
        *paths: str | os.PathLike[str],
        tags: Sequence[str] = (),
        stop: threading.Event,
        on_batch: Callable[[WatchBatch], None] | None = None,
    ) -> None:
        """Learn folders as ``learn_path`` does, then keep them fresh until ``stop`` is set:
        changed files are learned again, deleted ones forgotten, in batches that each
        commit in one transaction (docs/watch.md). Blocks; ``stop`` is looked at between
        batches only. ``on_batch`` is called after each commit. The folders are checked
        before anything is learned (INVALID_ARGUMENT: missing, not a folder, nested)."""
        from kbdb.watch import Watcher

        watcher = Watcher(self.context, self._learner(), [Path(p) for p in paths], check_tags(tags))
        with self._services_lock:
            self._watchers.append(watcher)
        try:
            watcher.run(stop, on_batch or (lambda _batch: None))
        finally:
            with self._services_lock:
                self._watchers.remove(watcher)

    # -- search and read ---------------------------------------------------------------

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
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        sort: str | None = None,
        as_of: str | datetime | None = None,
        min_confidence: float = 0.0,
        speaker: str | None = None,
    ) -> SearchResult:
        """Ranked search (SPEC §4). ``mode`` is ``lexical``, ``vector`` or ``hybrid``;
        None (the default) takes ``search.default_mode`` from the configuration. When that
        default is ``vector`` or ``hybrid`` and no embedding provider is configured, the
        search runs lexical and says so: ``search_mode`` is the configured mode and
        ``retrieval_method`` is ``lexical``. A mode named here without a provider fails
        with EMBEDDING_PROVIDER_NOT_CONFIGURED.

        Time (docs/search.md, "Time"): ``since`` / ``until`` keep the sections whose live
        version began at or after / before that time: a duration back from now (``"7d"``,
        also ``m``, ``h``, ``w``), a date (``"2026-11-01"``, midnight UTC), an ISO-8601
        timestamp or a ``datetime``. ``sort``: ``"relevance"`` (default) or ``"recent"``
        (newest first, ties by score). ``as_of`` answers from the sections live at that
        moment, with the corpus statistics of that moment. ``search.recency_half_life``
        decays scores with age. A conversation turn's time is when it was said
        (docs/conversations.md).

        ``min_confidence`` (0–1) drops the hits whose ``confidence`` is below it, so that a
        search can honestly return nothing: ``total`` then counts the hits that pass among
        the first ``max(100, offset + limit)`` ranked, and an empty result is
        ``unanswered`` (docs/search.md, "Minimum confidence").

        ``speaker``: only conversation turns of this speaker (ASCII letters compared
        without regard to case)."""
        return self._searcher.search(
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
            as_of=as_of,
            min_confidence=min_confidence,
            speaker=speaker,
        )

    def recall(self, *kbids: str, docid: str | None = None) -> RecallResult:
        """Full sections by kbid, or a document's sections in order. Unknown → NOT_FOUND."""
        return self._lifecycle().recall(kbids, docid)

    def stats(self) -> Stats:
        """Counts, sizes, the analyzer, the provider, and the index generation; with a
        ``watch`` running in this process, the folders it follows (``watching``)."""
        stats = self._maintenance().stats()
        with self._services_lock:
            watchers = list(self._watchers)
        if not watchers:
            return stats
        import dataclasses

        folders = tuple(f for w in watchers for f in w.status())
        return dataclasses.replace(stats, watching=folders)

    def rebuild(
        self,
        *,
        lexical: bool = True,
        vectors: bool = True,
        reembed: bool = False,
        progress: Callable[[int, int], None] | None = None,
        ray: str | None = None,
    ) -> RebuildReport:
        """Regenerate the indexes from the database. Repairs missing or corrupt index
        files; the old index keeps serving readers until the new one is published.
        Embeddings are reused from the cache unless ``reembed``. ``progress(done, total)``
        follows the sections read for the lexical index, then those embedded. ``ray``:
        embed on a Ray cluster first, as :meth:`learn_path` does."""
        return self._maintenance().rebuild(lexical, vectors, reembed, progress, ray)

    # -- correct and navigate: revise, history, forget, documents, outline, tags, related --

    def revise(
        self,
        kbid: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
        section_type: str | None = None,
    ) -> ReviseResult:
        """Correct one live section (SPEC §5): the new version gets a new kbid and the old
        one is retired with ``superseded_by``, leaving search but staying recallable.
        Fields not given keep their values; ``tags`` replaces the section's tags."""
        return self._lifecycle().revise(
            kbid,
            content,
            title=title,
            description=description,
            tags=None if tags is None else check_tags(tags),
            section_type=section_type,
        )

    def history(self, kbid: str) -> HistoryResult:
        """The chain of versions ``kbid`` belongs to, oldest first, walked both ways."""
        return self._lifecycle().history(kbid)

    def forget(self, *kbids: str, docid: str | None = None) -> ForgetResult:
        """Retire sections by kbid, or every section of a document. They leave search and
        stay recallable by kbid; only ``gc`` removes them physically."""
        return self._lifecycle().forget(kbids, docid)

    def documents(
        self, *, tags: Sequence[str] | None = None, limit: int = 50, offset: int = 0
    ) -> DocumentList:
        """Documents with live sections, by docid; ``tags``: the document has all of them."""
        return self._lifecycle().documents(check_tags(tags or ()), limit, offset)

    def outline(self, docid: str) -> Outline:
        """A document's heading tree (live sections)."""
        return self._lifecycle().outline(docid)

    def tags(self) -> TagList:
        """Every tag of a live section, with its count, most used first."""
        return self._lifecycle().tags()

    def links(self, docid: str | None = None, *, kbid: str | None = None) -> LinksResult:
        """The links a document makes (or one section, ``kbid``): wikilinks, embeds and
        relative Markdown and HTML links, each with its line and what it resolves to."""
        return self._links().links(docid, kbid)

    def backlinks(self, docid: str | None = None, *, kbid: str | None = None) -> LinksResult:
        """The links of other sections that resolve to a document (or one section)."""
        return self._links().backlinks(docid, kbid)

    def search_context(
        self,
        query: str,
        *,
        mode: str | None = None,
        limit: int | None = None,
        neighbours: int = 5,
    ) -> ContextResult:
        """A search (as :meth:`search`) whose every hit comes with at most ``neighbours``
        (1–20) sections one link away: where the hit's section links (``out``) and what
        links to it (``in``), then the same for its documents; each with its heading,
        the link's label and the start of its text: the notes around each hit in one call
        (the MCP tool ``context``). ``context`` itself is this object's ``Context``."""
        from kbdb.knowledge.links import check_neighbours

        check_neighbours(neighbours)  # before the search, which it would waste
        found = self.search(query, mode=mode, limit=limit)
        return self._links().context(found, neighbours)

    def related(self, kbid: str, *, limit: int = 10) -> RelatedResult:
        """Sections close to ``kbid``: its siblings first, then the sections one link
        away from it (``link``), then its nearest neighbours by vector when the vector
        index is fresh, else by a lexical search."""
        return self._lifecycle().related(kbid, limit)

    # -- contradictions and skills -------------------------------------------------------

    def contradictions(
        self,
        *,
        threshold: float | None = None,
        limit: int = 20,
        tags: Sequence[str] | None = None,
    ) -> ContradictionsResult:
        """Groups of live sections from different documents that cover the same ground but
        are not near-duplicates (SPEC §8.5): by embedding cosine when the vector index is
        current, else by shingle Jaccard. ``threshold`` is the lowest similarity of a pair
        (default 0.75 cosine, 0.5 Jaccard) and must stay below the near-duplicate one."""
        return self._contradictions().find(threshold, limit, tags)

    def skill_learn(
        self, name: str, description: str, content: str, *, tags: Sequence[str] = ()
    ) -> SkillLearnResult:
        """Create the skill ``name`` (kebab-case), or replace it keeping its history: the
        old version is superseded and stays readable by kbid and in ``history``."""
        return self._skills().learn(name, description, content, check_tags(tags))

    def skill_learn_path(self, path: str | os.PathLike[str]) -> SkillLearnResult:
        """Learn a skill from a folder holding ``SKILL.md``, or from the file itself: its
        YAML front matter gives name (else the folder's name), description and tags."""
        from kbdb.knowledge.skills import read_skill_file

        name, description, content, tags = read_skill_file(Path(path).expanduser())
        return self.skill_learn(name, description, content, tags=tags)

    def skill_list(self) -> SkillList:
        """Every live skill, by name."""
        return self._skills().list()

    def skill_get(self, name: str) -> Skill:
        """The skill ``name`` in full; NOT_FOUND when there is none."""
        return self._skills().get(name)

    # -- maintenance: check, gc, export, import ------------------------------------------

    def check(self, *, progress: Callable[[int, int], None] | None = None) -> CheckReport:
        """Verify the database against its own rules and the index files against their
        checksums (SPEC §8.1). Read-only; streams, calling ``progress(done, total)`` as
        sections are checked. ``ok`` is false when any error is found."""
        return self._maintenance().check(progress)

    def gc(
        self,
        *,
        dry_run: bool = False,
        prune_retired: bool = False,
        older_than_days: float | None = None,
    ) -> GcReport:
        """Remove orphan sections and documents and dead index entries, merge the index
        segments, compact the vector side files and vacuum the database (SPEC §8.2).
        Retired sections stay (they are history) unless ``prune_retired``, which removes
        those retired more than ``older_than_days`` ago (all of them without it).
        ``dry_run`` reports the same plan and changes nothing."""
        return self._maintenance().gc(dry_run, prune_retired, older_than_days)

    def export(
        self,
        path: str | os.PathLike[str] = "kbdb-export",
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExportReport:
        """Write a snapshot folder (SPEC §8.4, format in docs/maintenance.md): one Markdown
        file per section with TOML front matter, one file per document, a catalog, and no
        indexes. Refuses a non-empty folder that is not an earlier export."""
        return self._maintenance().export(path, progress)

    def import_snapshot(
        self, path: str | os.PathLike[str], *, merge: bool | None = None
    ) -> ImportReport:
        """Restore a snapshot written by ``export``. The whole snapshot is validated first
        (a bad one changes nothing). ``merge``: None restores into an empty knowledge base
        and merges into a non-empty one; False refuses a non-empty one; True merges. A
        section whose kbid is already stored is kept as stored; documents gain the
        snapshot's entries and tags. The indexes catch up as after a learn."""
        return self._maintenance().import_snapshot(path, merge)

    # -- embedding ---------------------------------------------------------------------

    def load_embedding_model(
        self, *, progress: Callable[[str, int, int | None], None] | None = None
    ) -> None:
        """Resolve and load the embedding model now rather than at the first embedding:
        with ``provider = "onnx"`` a first use downloads it, calling ``progress`` with
        (file name, bytes so far, total bytes or None). Does nothing for other providers."""
        self.context.vectors.load_model(progress)
