"""``KnowledgeBase``: the one facade that the CLI, the MCP server and the Python API call.

A knowledge base is a ``.kbdb/`` folder: ``kb.sqlite`` (the truth), ``worker.toml`` (the
configuration) and ``indexes/`` (derived, rebuildable).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

# Only what opening a knowledge base and a lexical search need is imported here: a cold
# `kbdb search` pays for every module loaded at import (benches/bench_cold_start.py).
# Learning, near-duplicates, the lifecycle, contradictions, skills, fusion and maintenance
# are imported by the methods that use them.
from kbdb.config import Config, default_config_text, load_config
from kbdb.errors import (
    EmbeddingProviderNotConfiguredError,
    InvalidArgumentError,
    KbLockedError,
    KbNotFoundError,
)
from kbdb.search.indexer import LexicalIndex
from kbdb.search.lexical import NO_FILTERS, Filters, LexicalSearcher
from kbdb.search.synonyms import Synonyms, load_groups
from kbdb.search.vectors import VectorStore
from kbdb.store import DB_NAME, Database, WriteLock
from kbdb.store import queries as q
from kbdb.types import SearchMode, SearchResult

if TYPE_CHECKING:
    from kbdb.learn import Learner, LearnItem, LearnProgress, ProgressFn
    from kbdb.lifecycle import Lifecycle
    from kbdb.neardup import NearDuplicateFinder
    from kbdb.types import (
        CheckReport,
        ContradictionsResult,
        DocumentList,
        ExportReport,
        ForgetResult,
        GcReport,
        HistoryResult,
        ImportReport,
        LearnReport,
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
    )

KBDB_DIR = ".kbdb"
CONFIG_NAME = "worker.toml"
INDEX_DIR = "indexes"
LOCK_NAME = "write.lock"
MAX_LIMIT = 100
_SEARCH_MODES = get_args(SearchMode)

__all__ = ["KnowledgeBase", "LearnItem", "LearnProgress"]


def __getattr__(name: str) -> Any:
    # ``from kbdb.kb import LearnItem`` keeps working without loading the learn machinery
    # at import.
    if name in ("LearnItem", "LearnProgress"):
        from kbdb import learn

        return getattr(learn, name)
    raise AttributeError(f"module 'kbdb.kb' has no attribute {name!r}")


def _lock_timeout() -> float:
    raw = os.environ.get("KBDB_LOCK_TIMEOUT")
    try:
        return float(raw) if raw else 30.0
    except ValueError:
        raise InvalidArgumentError(
            f"KBDB_LOCK_TIMEOUT must be a number of seconds (got {raw!r})"
        ) from None


def resolve(path: str | os.PathLike[str] | None) -> Path:
    """Find the ``.kbdb`` folder: ``path`` (the folder or its parent), else ``KBDB_DB``,
    else the nearest ``.kbdb`` walking up from the current directory."""
    if path is None and os.environ.get("KBDB_DB"):
        path = os.environ["KBDB_DB"]
    if path is not None:
        p = Path(path).expanduser()
        for candidate in (p, p / KBDB_DIR):
            if (candidate / DB_NAME).is_file():
                return candidate.resolve()
        raise KbNotFoundError(f"no knowledge base at {p}", hint="run 'kbdb init'")
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / KBDB_DIR / DB_NAME).is_file():
            return d / KBDB_DIR
    raise KbNotFoundError(
        f"no knowledge base in {here} or any parent folder", hint="run 'kbdb init'"
    )


class KnowledgeBase:
    """A knowledge base on disk. Safe to use from several threads and processes."""

    def __init__(self, kbdir: Path, *, config: Config | None = None) -> None:
        self.path = kbdir
        self.config: Config = config if config is not None else load_config(kbdir / CONFIG_NAME)
        self._db = Database(kbdir / DB_NAME)
        self._lock = WriteLock(kbdir / LOCK_NAME, timeout=_lock_timeout())
        self._index = LexicalIndex(kbdir / INDEX_DIR, self._db, self._lock)
        self._vectors = VectorStore(kbdir / INDEX_DIR, self._db, self.config.embedding, kbdir)
        # Made on first use (``_near``, ``_learner``): a search never needs them.
        self._near_finder: NearDuplicateFinder | None = None
        self._learner_obj: Learner | None = None
        self._lazy_lock = threading.Lock()
        self._synonyms: Synonyms | None = None
        self._synonyms_lock = threading.Lock()

    @property
    def _near(self) -> NearDuplicateFinder:
        if self._near_finder is None:
            from kbdb.neardup import NearDuplicateFinder

            with self._lazy_lock:
                if self._near_finder is None:
                    self._near_finder = NearDuplicateFinder(
                        self._db,
                        self._vectors,
                        jaccard=self.config.learn.near_duplicate_jaccard,
                        cosine=self.config.learn.near_duplicate_cosine,
                    )
        return self._near_finder

    @property
    def _learner(self) -> Learner:
        if self._learner_obj is None:
            from kbdb.learn import Learner

            near = self._near
            with self._lazy_lock:
                if self._learner_obj is None:
                    self._learner_obj = Learner(
                        self._db, self._lock, self._index, self._vectors, near
                    )
        return self._learner_obj

    # -- lifecycle ---------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".") -> KnowledgeBase:
        """Create ``PATH/.kbdb`` (or open it when it exists) and return it."""
        root = Path(path).expanduser()
        kbdir = root if root.name == KBDB_DIR else root / KBDB_DIR
        kbdir.mkdir(parents=True, exist_ok=True)
        config = kbdir / CONFIG_NAME
        if not config.exists():
            config.write_text(default_config_text(), encoding="utf-8")
        gitignore = kbdir / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text(f"{INDEX_DIR}/\n{LOCK_NAME}\n", encoding="utf-8")
        lock = WriteLock(kbdir / LOCK_NAME, timeout=_lock_timeout())
        with lock.hold():
            Database(kbdir / DB_NAME, create=True).close()
        kb = cls(kbdir.resolve())
        kb._index.core  # noqa: B018 - creates the empty index now
        return kb

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, config: Config | None = None
    ) -> KnowledgeBase:
        """Open an existing knowledge base (see ``resolve`` for how it is found).
        ``config`` replaces its ``worker.toml`` settings in memory (``kbdb eval --set``)."""
        return cls(resolve(path), config=config)

    def close(self) -> None:
        self._index.close()
        self._db.close()

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
    ) -> LearnReport:
        """Learn files and folders (recursively). Bad files are reported and skipped.
        ``notable_only``: ``sections`` holds only the reports with warnings,
        near-duplicates or a failed embedding (the counts cover all), so that learning a
        large tree does not hold one report per section."""
        if not paths:
            raise InvalidArgumentError("learn_path needs at least one path")
        return self._learner.learn_paths(
            [Path(p) for p in paths],
            tags=_tags(tags),
            docid=docid,
            max_file_bytes=self.config.learn.max_file_bytes,
            progress=progress,
            notable_only=notable_only,
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
        from kbdb._kb import learning
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
        return learning.learn_one(self, item)

    def learn_many(self, items: Iterable[LearnItem], *, batch: int = 1024) -> LearnReport:
        """Learn many blocks of content: ``batch`` documents per transaction and per index
        commit, which is far faster than one ``learn`` call each. Each item follows the
        rules of ``learn``; a bad item raises before its batch is stored."""
        from kbdb._kb import learning

        return learning.learn_many(self, items, batch)

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
    ) -> SearchResult:
        """Ranked search (SPEC §4). ``mode`` is ``lexical``, ``vector`` or ``hybrid``;
        None (the default) takes ``search.default_mode`` from the configuration. When that
        default is ``vector`` or ``hybrid`` and no embedding provider is configured, the
        search runs lexical and says so: ``search_mode`` is the configured mode and
        ``retrieval_method`` is ``lexical``. A mode named here without a provider fails
        with EMBEDDING_PROVIDER_NOT_CONFIGURED."""
        if mode is None:
            mode = self.config.search.default_mode
            if mode != self.config.effective_default_mode:
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
                )
                return dataclasses.replace(result, search_mode=mode)
        if mode not in _SEARCH_MODES:
            raise InvalidArgumentError(
                f"mode must be one of lexical, vector, hybrid (got {mode!r})"
            )
        limit = self.config.search.default_limit if limit is None else limit
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
        filters = (
            Filters(tuple(tags) if tags else None, docid, type, section_type)
            if tags or docid is not None or type is not None or section_type is not None
            else NO_FILTERS
        )
        if mode != "lexical" and not self._vectors.enabled:
            raise EmbeddingProviderNotConfiguredError(
                "Vector search requires a configured embedding provider",
                hint="set [embedding] provider in worker.toml, e.g. "
                "'kbdb config set embedding.provider onnx'",
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

        if mode == "lexical" and not self._db.conn().in_transaction:
            # One read snapshot for the whole search, when it shows that no other connection
            # has committed since this thread last found the index in step with the
            # database: then neither has moved (``LexicalIndex.current``).
            with self._db.read():
                if self._index.current():
                    return search_lexical(self._lexical())
        # Outside any read snapshot: a catch-up must see the database's current head, not
        # one older than an index another writer has just published.
        self._index.refresh()
        lexical = self._lexical()
        stale = mode != "lexical" and self._vectors.stale()
        if mode == "lexical" or stale:
            result = search_lexical(lexical)
            if not stale:
                return result
            # The seed's fallback: a stale vector index is never used; say so.
            return dataclasses.replace(
                result, search_mode=cast(SearchMode, mode), vector_index_stale=True
            )
        from kbdb.search.hybrid import search_fused

        self._refresh_vectors()
        s = self.config.search
        return search_fused(
            lexical,
            self._vectors,
            query,
            mode=cast(Literal["vector", "hybrid"], mode),
            limit=limit,
            offset=offset,
            filters=filters,
            content=content,
            explain=explain,
            rrf_k=self.config.embedding.rrf_k,
            fusion=s.fusion,
            linear_weight=s.linear_weight,
        )

    def recall(self, *kbids: str, docid: str | None = None) -> RecallResult:
        """Full sections by kbid, or a document's sections in order. Unknown → NOT_FOUND."""
        from kbdb._kb import reading

        return reading.recall(self, kbids, docid)

    def stats(self) -> Stats:
        """Counts, sizes, the analyzer, the provider, and the index generation."""
        from kbdb._kb import reading

        return reading.stats(self)

    def rebuild(
        self,
        *,
        lexical: bool = True,
        vectors: bool = True,
        reembed: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> RebuildReport:
        """Regenerate the indexes from the database. Repairs missing or corrupt index
        files; the old index keeps serving readers until the new one is published.
        Embeddings are reused from the cache unless ``reembed``. ``progress(done, total)``
        follows the sections read for the lexical index, then those embedded."""
        from kbdb._kb import maintenance

        return maintenance.rebuild(self, lexical, vectors, reembed, progress)

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
            tags=None if tags is None else _tags(tags),
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
        return self._lifecycle().documents(_tags(tags or ()), limit, offset)

    def outline(self, docid: str) -> Outline:
        """A document's heading tree (live sections)."""
        return self._lifecycle().outline(docid)

    def tags(self) -> TagList:
        """Every tag of a live section, with its count, most used first."""
        return self._lifecycle().tags()

    def related(self, kbid: str, *, limit: int = 10) -> RelatedResult:
        """Sections close to ``kbid``: its siblings first, then its nearest neighbours by
        vector when the vector index is fresh, else by a lexical search."""
        return self._lifecycle().related(kbid, limit)

    def _lifecycle(self) -> Lifecycle:
        from kbdb.lifecycle import Lifecycle

        return Lifecycle(
            self._db,
            self._lock,
            self._index,
            self._vectors,
            self._lexical,
            self._refresh_vectors,
            self.config.learn.max_file_bytes,
        )

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
        from kbdb._kb import knowledge

        return knowledge.contradictions(self, threshold, limit, tags)

    def skill_learn(
        self, name: str, description: str, content: str, *, tags: Sequence[str] = ()
    ) -> SkillLearnResult:
        """Create the skill ``name`` (kebab-case), or replace it keeping its history: the
        old version is superseded and stays readable by kbid and in ``history``."""
        from kbdb._kb import knowledge

        return knowledge.skill_learn(self, name, description, content, _tags(tags))

    def skill_learn_path(self, path: str | os.PathLike[str]) -> SkillLearnResult:
        """Learn a skill from a folder holding ``SKILL.md``, or from the file itself: its
        YAML front matter gives name (else the folder's name), description and tags."""
        from kbdb import skills

        name, description, content, tags = skills.read_skill_file(Path(path).expanduser())
        return self.skill_learn(name, description, content, tags=tags)

    def skill_list(self) -> SkillList:
        """Every live skill, by name."""
        from kbdb._kb import knowledge

        return knowledge.skill_list(self)

    def skill_get(self, name: str) -> Skill:
        """The skill ``name`` in full; NOT_FOUND when there is none."""
        from kbdb._kb import knowledge

        return knowledge.skill_get(self, name)

    # -- maintenance: check, gc, export, import ------------------------------------------

    def check(self, *, progress: Callable[[int, int], None] | None = None) -> CheckReport:
        """Verify the database against its own rules and the index files against their
        checksums (SPEC §8.1). Read-only; streams, calling ``progress(done, total)`` as
        sections are checked. ``ok`` is false when any error is found."""
        from kbdb._kb import maintenance

        return maintenance.check(self, progress)

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
        from kbdb._kb import maintenance

        return maintenance.gc(self, dry_run, prune_retired, older_than_days)

    def export(
        self,
        path: str | os.PathLike[str] = "kbdb-export",
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExportReport:
        """Write a snapshot folder (SPEC §8.4, format in docs/maintenance.md): one Markdown
        file per section with TOML front matter, one file per document, a catalog, and no
        indexes. Refuses a non-empty folder that is not an earlier export."""
        from kbdb.maintenance.transfer import export

        return export(self._db, path, progress=progress)

    def import_snapshot(
        self, path: str | os.PathLike[str], *, merge: bool | None = None
    ) -> ImportReport:
        """Restore a snapshot written by ``export``. The whole snapshot is validated first
        (a bad one changes nothing). ``merge``: None restores into an empty knowledge base
        and merges into a non-empty one; False refuses a non-empty one; True merges. A
        section whose kbid is already stored is kept as stored; documents gain the
        snapshot's entries and tags. The indexes catch up as after a learn."""
        from kbdb._kb import maintenance

        return maintenance.import_snapshot(self, path, merge)

    # -- internals -----------------------------------------------------------------------

    def load_embedding_model(
        self, *, progress: Callable[[str, int, int | None], None] | None = None
    ) -> None:
        """Resolve and load the embedding model now rather than at the first embedding:
        with ``provider = "onnx"`` a first use downloads it, calling ``progress`` with
        (file name, bytes so far, total bytes or None). Does nothing for other providers."""
        self._vectors.load_model(progress)

    def _refresh_vectors(self) -> None:
        """Catch the vector index up when another process's learn left it behind (the
        writer lock is free), as the lexical index does."""
        index = self._vectors.index()
        if index is None:
            return
        with self._db.read() as conn:
            head = q.max_seq(conn)
        if index.watermark >= head and not self._vectors.quantized_pending():
            return
        try:
            with self._lock.hold(timeout=0):
                self._vectors.catch_up()
        except KbLockedError:
            pass

    def _lexical(self) -> LexicalSearcher:
        return LexicalSearcher(
            self._index.core,
            self._db,
            self._index.analyzer,
            self._get_synonyms(),
            self.config.search,
        )

    def _get_synonyms(self) -> Synonyms | None:
        if not self.config.search.synonyms:
            return None
        if self._synonyms is None:
            with self._synonyms_lock:
                if self._synonyms is None:
                    self._synonyms = Synonyms(load_groups(self.path), self._index.analyzer.terms)
        return self._synonyms


def _tags(tags: Sequence[str]) -> tuple[str, ...]:
    if isinstance(tags, str):
        raise InvalidArgumentError("tags must be a list of strings, not one string")
    out = []
    for t in tags:
        if not isinstance(t, str) or not t.strip():
            raise InvalidArgumentError(f"tags must be non-empty strings (got {t!r})")
        out.append(t.strip())
    return tuple(dict.fromkeys(out))
