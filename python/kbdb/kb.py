"""``KnowledgeBase``: the one facade that the CLI, the MCP server and the Python API call.

A knowledge base is a ``.kbdb/`` folder: ``kb.sqlite`` (the truth), ``worker.toml`` (the
configuration) and ``indexes/`` (derived, rebuildable).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
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
    ContentTooLargeError,
    EmbeddingProviderNotConfiguredError,
    InvalidArgumentError,
    KbdbError,
    KbLockedError,
    KbNotFoundError,
    NotFoundError,
)
from kbdb.search.indexer import LexicalIndex
from kbdb.search.lexical import Filters, LexicalSearcher
from kbdb.search.synonyms import Synonyms, load_groups
from kbdb.search.vectors import VectorStore
from kbdb.store import DB_NAME, Database, WriteLock
from kbdb.store import queries as q
from kbdb.types import SearchMode, SearchResult

if TYPE_CHECKING:
    from kbdb.learn import Learner, LearnItem, LearnProgress, Pending, ProgressFn
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
        SectionReport,
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
        from kbdb.learn import LearnItem, make_report

        started = time.perf_counter()
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
        reports, totals = self._learner.learn_pending([self._pending(item)])
        return make_report(reports, totals, (), started)

    def learn_many(self, items: Iterable[LearnItem], *, batch: int = 1024) -> LearnReport:
        """Learn many blocks of content: ``batch`` documents per transaction and per index
        commit, which is far faster than one ``learn`` call each. Each item follows the
        rules of ``learn``; a bad item raises before its batch is stored."""
        from kbdb.learn import make_report

        if batch < 1:
            raise InvalidArgumentError(f"batch must be >= 1 (got {batch})")
        started = time.perf_counter()
        reports: list[SectionReport] = []
        totals: dict[str, int] = {}
        pending: list[Pending] = []
        for item in items:
            pending.append(self._pending(item))
            if len(pending) >= batch:
                self._learn_batch(pending, reports, totals)
                pending = []
        self._learn_batch(pending, reports, totals)
        return make_report(reports, totals, (), started)

    def _learn_batch(
        self, pending: list[Pending], reports: list[SectionReport], totals: dict[str, int]
    ) -> None:
        if not pending:
            return
        r, t = self._learner.learn_pending(pending)
        reports.extend(r)
        for k, v in t.items():
            totals[k] = totals.get(k, 0) + v

    def _pending(self, item: LearnItem) -> Pending:
        from kbdb.learn import build_document, slug

        if not isinstance(item.content, str):
            raise InvalidArgumentError("content must be a string")
        limit = self.config.learn.max_file_bytes
        if len(item.content.encode("utf-8", "surrogatepass")) > limit:
            raise ContentTooLargeError(
                f"content is over learn.max_file_bytes ({limit})",
                hint="split it, or raise learn.max_file_bytes",
            )
        doc = item.docid or slug(item.title or " ".join(item.content.split()[:8]))
        return build_document(
            docid=doc,
            source=doc,
            text=item.content,
            type=item.type,
            title=item.title,
            description=item.description,
            tags=_tags(item.tags),
            section_type=item.section_type,
            source_path=None,
            mode="source_key" if item.replace else "append",
        )

    # -- search and read ---------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str = "lexical",
        limit: int | None = None,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        docid: str | None = None,
        type: str | None = None,
        section_type: str | None = None,
        content: bool = False,
        explain: bool = False,
    ) -> SearchResult:
        """Ranked search (SPEC §4). ``mode`` is ``lexical`` (default), ``vector`` or
        ``hybrid``."""
        if mode not in get_args(SearchMode):
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
            query.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidArgumentError(
                f"query is not valid Unicode (lone surrogate at character {e.start})",
                hint="send the query as UTF-8 text",
            ) from None
        filters = Filters(tuple(tags) if tags else None, docid, type, section_type)
        if mode != "lexical" and not self._vectors.enabled:
            raise EmbeddingProviderNotConfiguredError(
                "Vector search requires a configured embedding provider",
                hint="set [embedding] provider in worker.toml, e.g. "
                "'kbdb config set embedding.provider onnx'",
            )
        self._index.refresh()
        lexical = self._lexical()
        stale = mode != "lexical" and self._vectors.stale()
        if mode == "lexical" or stale:
            result = lexical.search(
                query,
                limit=limit,
                offset=offset,
                filters=filters,
                content=content,
                explain=explain,
            )
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
        from kbdb.types import RecallResult, Section

        if not kbids and docid is None:
            raise InvalidArgumentError("recall needs kbids or a docid")
        with self._db.read() as conn:
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
        out = []
        for k in wanted:
            r = rows[k]
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
                )
            )
        return RecallResult(sections=tuple(out))

    def stats(self) -> Stats:
        """Counts, sizes, the analyzer, the provider, and the index generation."""
        from kbdb.types import Stats

        index = self._index.core
        index.reload()
        with self._db.read() as conn:
            c = q.counts(conn)
        db_bytes = sum(
            (self.path / n).stat().st_size
            for n in (DB_NAME, DB_NAME + "-wal")
            if (self.path / n).exists()
        )
        return Stats(
            documents=c["documents"],
            sections=c["sections"],
            live_sections=c["live_sections"],
            retired_sections=c["sections"] - c["live_sections"],
            tags=c["tags"],
            db_bytes=db_bytes,
            index_bytes=index.size_bytes(),
            index_segments=index.segment_count,
            index_generation=index.generation,
            index_watermark=index.watermark,
            changelog_seq=c["changelog_seq"],
            analyzer=index.analyzer_id,
            embedding_provider=self.config.embedding.provider,
            embedding_model=(
                self.config.embedding.model if self.config.embedding.provider != "none" else None
            ),
            vector_index_stale=self._vectors.stale(),
            path=str(self.path),
        )

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
        from kbdb import failpoints, neardup
        from kbdb.types import RebuildReport

        started = time.perf_counter()
        sections = embedded = 0
        with self._lock.hold():
            if lexical:
                sections = self._index.rebuild(progress)
                with self._db.write() as conn:
                    neardup.rebuild(conn)
                failpoints.hit("rebuild.after_lexical")
            if vectors and self._vectors.enabled:
                embedded = self._vectors.rebuild(reembed=reembed, progress=progress)
        return RebuildReport(
            sections=sections,
            vectors=embedded,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        )

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
        from kbdb import contradictions as contra

        vector = self._vectors.enabled and not self._vectors.stale()
        method: Literal["vector", "lexical"] = "vector" if vector else "lexical"
        high = (
            self.config.learn.near_duplicate_cosine
            if vector
            else self.config.learn.near_duplicate_jaccard
        )
        low = contra.default_threshold(method) if threshold is None else threshold
        if not isinstance(low, (int, float)) or isinstance(low, bool) or not 0 < low < high:
            raise InvalidArgumentError(
                f"threshold must be a number above 0 and below the near-duplicate threshold"
                f" {high} ({method} similarity; got {threshold!r})",
                hint="near-duplicates are reported by learn; lower the threshold",
            )
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidArgumentError(f"limit must be an integer in 1..1000 (got {limit!r})")
        wanted = _tags(tags) if tags else None
        if vector:
            self._refresh_vectors()
            pairs = contra.vector_pairs(self._db, self._vectors, float(low), high)
        else:
            self._catch_up_signatures()
            with self._db.read() as conn:
                pairs = contra.lexical_pairs(conn, float(low), high)
        with self._db.read() as conn:
            return contra.group(
                conn, pairs, method=method, threshold=float(low), tags=wanted, limit=limit
            )

    def skill_learn(
        self, name: str, description: str, content: str, *, tags: Sequence[str] = ()
    ) -> SkillLearnResult:
        """Create the skill ``name`` (kebab-case), or replace it keeping its history: the
        old version is superseded and stays readable by kbid and in ``history``."""
        from kbdb import skills
        from kbdb.store import skills as skill_store
        from kbdb.types import SkillLearnResult

        item = skills.pending(name, description, content, _tags(tags))
        kbid = item.doc.sections[0].kbid
        with self._lock.hold():
            reports, _ = self._learner.learn_pending([item])
            with self._db.write() as conn:
                changed = skill_store.set_metadata(
                    conn, item.doc.docid, kbid, item.doc.description or "", item.doc.tags
                )
            if changed:
                self._index.catch_up()
                self._vectors.catch_up()
        return SkillLearnResult(name=name, kbid=kbid, previous=reports[0].superseded)

    def skill_learn_path(self, path: str | os.PathLike[str]) -> SkillLearnResult:
        """Learn a skill from a folder holding ``SKILL.md``, or from the file itself: its
        YAML front matter gives name (else the folder's name), description and tags."""
        from kbdb import skills

        name, description, content, tags = skills.read_skill_file(Path(path).expanduser())
        return self.skill_learn(name, description, content, tags=tags)

    def skill_list(self) -> SkillList:
        """Every live skill, by name."""
        from kbdb import skills
        from kbdb.store import skills as skill_store
        from kbdb.types import SkillInfo, SkillList

        with self._db.read() as conn:
            rows = skill_store.live_skills(conn)
            tags = q.tags_of(conn, [r[1] for r in rows])
        return SkillList(
            skills=tuple(
                SkillInfo(
                    name=skills.name_of(doc),
                    description=desc,
                    tags=tuple(tags.get(kbid, ())),
                    kbid=kbid,
                    updated_at=updated,
                )
                for doc, kbid, desc, _, _, updated in rows
            )
        )

    def skill_get(self, name: str) -> Skill:
        """The skill ``name`` in full; NOT_FOUND when there is none."""
        from kbdb import skills
        from kbdb.store import skills as skill_store
        from kbdb.types import Skill

        skills.check_name(name)
        with self._db.read() as conn:
            row = skill_store.skill(conn, skills.docid(name))
            if row is None:
                raise NotFoundError(f"no skill {name!r}", hint="list them with 'kbdb skill list'")
            tags = q.tags_of(conn, [row[1]])
        _, kbid, desc, content, created, _ = row
        return Skill(
            name=name,
            description=desc,
            content=content,
            tags=tuple(tags.get(kbid, ())),
            kbid=kbid,
            created_at=created,
        )

    def _catch_up_signatures(self) -> None:
        """Bring the near-duplicate band table up to the change log (forget, revise and
        import write only the log); readers never wait for it."""
        from kbdb import neardup

        with self._db.read() as conn:
            behind = neardup.is_behind(conn)
        if behind:
            with self._lock.hold(), self._db.write() as conn:
                neardup.catch_up(conn)

    # -- maintenance: check, gc, export, import ------------------------------------------

    def check(self, *, progress: Callable[[int, int], None] | None = None) -> CheckReport:
        """Verify the database against its own rules and the index files against their
        checksums (SPEC §8.1). Read-only; streams, calling ``progress(done, total)`` as
        sections are checked. ``ok`` is false when any error is found."""
        from kbdb.maintenance.check import run_check

        model: str | None = None
        if self._vectors.enabled:
            try:
                model = self._vectors.model_name
            except KbdbError:  # the provider cannot start; its configured model still counts
                model = self.config.embedding.model
        return run_check(
            self._db,
            self.path / INDEX_DIR,
            vector_model=model,
            progress=progress,
            quantized_scan=self.config.embedding.quantized_scan,
        )

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
        from kbdb.maintenance.gc import cutoff, run_gc

        if older_than_days is not None:
            if prune_retired is False:
                raise InvalidArgumentError(
                    "older_than_days applies only with prune_retired",
                    hint="add --prune-retired",
                )
            days = older_than_days
            if isinstance(days, bool) or not isinstance(days, (int, float)) or days < 0:
                raise InvalidArgumentError(
                    f"older_than_days must be a number of days >= 0 (got {older_than_days!r})"
                )
        return run_gc(
            kbdir=self.path,
            db=self._db,
            lexical=self._index,
            vectors=self._vectors,
            dry_run=dry_run,
            prune_before=cutoff(older_than_days) if prune_retired else None,
            lock=self._lock,
        )

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
        from kbdb.maintenance.transfer import import_report, restore, validate

        started = time.perf_counter()
        root = Path(path).expanduser().absolute()
        sec_files, doc_files = validate(root)
        with self._lock.hold():
            with self._db.write() as conn:
                live_before = q.live_count(conn)
                counts = restore(conn, sec_files, doc_files, merge=merge)
            self._index.catch_up()
            self._vectors.catch_up(live_before=live_before)
        return import_report(root, counts, started)

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
