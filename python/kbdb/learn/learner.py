"""The learn pipeline: parse sources into documents, store them, bring the index along
(SPEC §3).

Files are read and split before any transaction, so one bad file is reported and skipped
without touching the others. Documents are stored in batches: each batch is one SQLite
transaction under the writer lock (so every document is all-or-nothing), followed by one
index commit. The lock is released between batches so other writers and index readers
interleave with a long learn.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb import failpoints
from kbdb.args import check_tags
from kbdb.errors import ContentTooLargeError, IndexCorruptError, InvalidArgumentError, KbdbError
from kbdb.ingest import (
    DEFAULT_MAX_FILE_BYTES,
    FileEntry,
    Skipped,
    count_files,
    load,
    read_text,
    walk,
)
from kbdb.ingest.content import is_image, normalize_type, split_content
from kbdb.ingest.formats import format_of
from kbdb.ingest.walk import read_format
from kbdb.knowledge.neardup import NearDuplicateFinder
from kbdb.learn.chat import json_transcript, read_transcript, transcript_pendings
from kbdb.learn.items import (
    LearnItem,
    LearnProgress,
    Pending,
    ProgressFn,
    build_document,
    build_parsed,
    item_docid,
    utc_now,
)
from kbdb.store import DocumentOutcome, apply_document
from kbdb.store import queries as q
from kbdb.store.lifecycle import forget_document
from kbdb.types import LearnReport, NearDuplicate, SectionReport, SkippedFile

if TYPE_CHECKING:
    from concurrent.futures import Future

    from kbdb.context import Context

logger = logging.getLogger("kbdb")

# A learn of a tree stores its files in batches of at most this many files, sections and
# characters of section content: each batch is two fsynced commits (SQLite, then the index),
# so small batches spend their time in fsync (256 files: 30 % of a learn of small notes),
# while the content cap keeps memory flat however large the files are.
BATCH_FILES = 1_024
BATCH_SECTIONS = 8_192
BATCH_CHARS = 32 << 20
# With an embedding provider, a batch's sections are also embedded under the writer lock:
# at most this many, so that another writer never waits near its lock timeout (30 s). The
# fp32 model embeds 10.5 sections/s on one thread at its 256-token limit (SciFact
# abstracts), about 50/s at 40 words: 12 s and 2.5 s for 128.
BATCH_SECTIONS_EMBEDDED = 128


class Learner:
    """Runs learns against one knowledge base: files and folders, content given in memory,
    and the batches both become."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._near_finder: NearDuplicateFinder | None = None
        self._near_lock = threading.Lock()

    @property
    def near(self) -> NearDuplicateFinder:
        """The near-duplicate finder of this knowledge base, made on first use."""
        if self._near_finder is None:
            learn = self._ctx.config.learn
            with self._near_lock:
                if self._near_finder is None:
                    self._near_finder = NearDuplicateFinder(
                        self._ctx.db,
                        self._ctx.vectors,
                        jaccard=learn.near_duplicate_jaccard,
                        cosine=learn.near_duplicate_cosine,
                    )
        return self._near_finder

    def learn(self, item: LearnItem) -> LearnReport:
        """``KnowledgeBase.learn``: one item, one transaction."""
        started = time.perf_counter()
        reports, totals = self.learn_pending([self.pending(item)])
        return make_report(reports, totals, (), started)

    def learn_many(self, items: Iterable[LearnItem], batch: int) -> LearnReport:
        """``KnowledgeBase.learn_many``: ``batch`` documents per transaction and per index
        commit."""
        if batch < 1:
            raise InvalidArgumentError(f"batch must be >= 1 (got {batch})")
        started = time.perf_counter()
        reports: list[SectionReport] = []
        totals: dict[str, int] = {}
        waiting: list[Pending] = []
        for item in items:
            waiting.append(self.pending(item))
            if len(waiting) >= batch:
                _add(self.learn_pending(waiting), reports, totals)
                waiting = []
        if waiting:
            _add(self.learn_pending(waiting), reports, totals)
        return make_report(reports, totals, (), started)

    def pending(self, item: LearnItem) -> Pending:
        """``item`` checked and parsed; the document id is derived from the title (or the
        first words) when it has none."""
        if not isinstance(item.content, str):
            raise InvalidArgumentError("content must be a string")
        limit = self._ctx.config.learn.max_file_bytes
        if len(item.content.encode("utf-8", "surrogatepass")) > limit:
            raise ContentTooLargeError(
                f"content is over learn.max_file_bytes ({limit})",
                hint="split it, or raise learn.max_file_bytes",
            )
        doc = item_docid(item)
        return build_document(
            docid=doc,
            source=doc,
            text=item.content,
            type=item.type,
            title=item.title,
            description=item.description,
            tags=check_tags(item.tags),
            section_type=item.section_type,
            source_path=None,
            mode="source_key" if item.replace else "append",
            links=self._ctx.config.learn.links,
        )

    def learn_pending(
        self,
        pending: Sequence[Pending],
        embeddings: Sequence[tuple[str, bytes]] = (),
        *,
        forget: Sequence[str] = (),
    ) -> tuple[list[SectionReport], dict[str, int]]:
        """Store a batch of documents in one transaction, then commit the index.

        ``embeddings``: ``(text SHA-256, float32 bytes)`` made elsewhere, cached in the
        same transaction for the vector catch-up. ``forget``: docids whose sections leave
        in the same transaction (as ``forget --docid`` does: a section another document
        still holds stays), after the batch is stored, so a file renamed with its content
        keeps its sections. A watcher's batch of changed and deleted files is then one
        all-or-nothing change."""
        reports: list[SectionReport] = []
        totals = {
            "documents_added": 0,
            "documents_updated": 0,
            "documents_unchanged": 0,
            "sections_added": 0,
            "sections_unchanged": 0,
            "sections_retired": 0,
            "documents_forgotten": 0,
        }
        if not pending and not forget:
            return reports, totals
        with self._ctx.lock.hold():
            now = utc_now()
            outcomes = []
            with self._ctx.db.write() as conn:
                # Only a missing vector index needs the count (a full scan: 50 ms at 40k
                # sections, most of a one-section learn; docs/knowledge.md).
                live_before = q.live_count(conn) if self._vector_index_missing() else None
                if embeddings:
                    q.store_embeddings(conn, self._ctx.vectors.model_name, embeddings)
                for p in pending:
                    outcomes.append(apply_document(conn, p.doc, mode=p.mode, now=now))
                for docid in forget:
                    retired, _kept = forget_document(conn, docid, now=now)
                    totals["sections_retired"] += len(retired)
                    totals["documents_forgotten"] += 1
                self.near.catch_up(conn)  # in this transaction: atomic with the learn
            failpoints.hit("learn.after_db_commit")
            terms = self._ctx.index.catch_up()
            failpoints.hit("learn.after_lexical")
            # Embedding follows the lexical commit: a provider failure never loses the
            # learn, the section just stays lexical-only until a rebuild.
            failed = self._ctx.vectors.catch_up(live_before=live_before)
            near = self._find_near(pending, outcomes)
        for p, out in zip(pending, outcomes, strict=True):
            if out.unchanged:
                totals["documents_unchanged"] += 1
            elif out.created:
                totals["documents_added"] += 1
            else:
                totals["documents_updated"] += 1
            totals["sections_retired"] += len(out.retired)
            for s in p.doc.sections:
                status = out.status.get(s.kbid, "unchanged")
                totals["sections_added" if status == "added" else "sections_unchanged"] += 1
                count = terms.get(s.kbid)
                if count is None:
                    count = self._ctx.index.index_terms(
                        s.heading, s.content, s.type, s.title, s.description
                    )
                if is_image(s.type):
                    count = 0  # SPEC §3: an image indexes its title, not its content
                reports.append(
                    SectionReport(
                        kbid=s.kbid,
                        heading=s.heading,
                        indexed_terms_count=count,
                        superseded=out.superseded.get(s.kbid),
                        warnings=p.warnings.get(s.kbid, ()),
                        near_duplicates=near.get(s.kbid, ()),
                        docid=p.doc.docid,
                        status=status,
                        vector_embedding_failed=s.kbid in failed,
                    )
                )
        return reports, totals

    def _vector_index_missing(self) -> bool:
        if not self._ctx.vectors.enabled:
            return False
        try:
            return self._ctx.vectors.index() is None
        except IndexCorruptError:
            return True  # the vector catch-up reports it, after the learn is stored

    def _find_near(
        self, pending: Sequence[Pending], outcomes: Sequence[DocumentOutcome]
    ) -> dict[str, tuple[NearDuplicate, ...]]:
        """Near-duplicates of the sections this learn stored or linked (an unchanged
        section was checked when it was first learned)."""
        kbids = [
            s.kbid
            for p, out in zip(pending, outcomes, strict=True)
            for s in p.doc.sections
            if out.status.get(s.kbid) in ("added", "linked")
        ]
        return self.near.find(list(dict.fromkeys(kbids)))

    def learn_paths(
        self,
        paths: Iterable[Path],
        *,
        tags: Sequence[str],
        docid: str | None,
        progress: ProgressFn | None,
        notable_only: bool = False,
    ) -> LearnReport:
        """``notable_only`` keeps only the section reports with something to say (warnings,
        near-duplicates, a failed embedding); the totals still count every section. The
        CLI's text output prints nothing else, so it asks for this and a learn of a large
        tree runs in flat memory instead of holding one report per section."""
        started = time.perf_counter()
        paths = check_paths(paths)
        total = sum(count_files(p) for p in paths) if progress else None
        max_file_bytes = self._ctx.config.learn.max_file_bytes
        jobs = (
            _Job(
                entry,
                tuple(tags),
                docid,
                root.is_file(),
                max_file_bytes,
                self._ctx.config.learn.links,
            )
            for root in paths
            for entry in walk(root, max_file_bytes=max_file_bytes)
        )
        parsed = parse_jobs(jobs, workers=self._ctx.config.learn.workers)
        return self.store_files(
            parsed, total=total, progress=progress, notable_only=notable_only, started=started
        )

    def store_files(
        self,
        parsed: Iterable[ParsedFile],
        *,
        total: int | None,
        progress: ProgressFn | None,
        notable_only: bool,
        started: float,
        embedded: bool = False,
    ) -> LearnReport:
        """Store parsed files in batches (each one transaction and one index commit), in
        the order given. ``embedded``: the files carry the embeddings of their new texts
        (made elsewhere, e.g. on a Ray cluster), so a batch's catch-up embeds nothing under
        the writer lock and batches may hold as many sections as without a provider."""
        reports: list[SectionReport] = []
        skipped: list[SkippedFile] = []
        totals: dict[str, int] = {}
        done = 0
        batch: list[Pending] = []
        vectors: list[tuple[str, bytes]] = []
        batch_sections = batch_chars = 0
        small = self._ctx.vectors.enabled and not embedded
        max_sections = BATCH_SECTIONS_EMBEDDED if small else BATCH_SECTIONS
        sections_done = 0
        last_path = ""

        def flush() -> None:
            nonlocal batch, vectors, batch_sections, batch_chars, sections_done
            r, t = self.learn_pending(batch, vectors)
            reports.extend(s for s in r if not notable_only or is_notable(s))
            sections_done += len(r)
            for k, v in t.items():
                totals[k] = totals.get(k, 0) + v
            batch, vectors, batch_sections, batch_chars = [], [], 0, 0

        for item in parsed:
            done += item.first_of_file
            last_path = item.path
            if item.skipped is not None:
                skipped.append(item.skipped)
            elif item.pending is not None:
                batch.append(item.pending)
                vectors.extend(item.embeddings)
                batch_sections += len(item.pending.doc.sections)
                batch_chars += sum([len(s.content) for s in item.pending.doc.sections])
            if (
                len(batch) >= BATCH_FILES
                or batch_sections >= max_sections
                or batch_chars >= BATCH_CHARS
            ):
                flush()
            if progress:
                progress(LearnProgress(done, total, sections_done + batch_sections, last_path))
        flush()
        if progress:
            progress(LearnProgress(done, total, sections_done, last_path))
        return make_report(reports, totals, skipped, started)

    def load_file(
        self, entry: FileEntry, tags: Sequence[str], skipped: list[SkippedFile]
    ) -> Pending | None:
        """A walked file of a folder learn, read and split as ``learn_paths`` does (its
        docid is its path relative to the folder); None, with the reason appended to
        ``skipped``, when it cannot be learned."""
        limit = self._ctx.config.learn.max_file_bytes
        parsed = parse_file(entry, tags=tags, docid=None, single_file=False, max_record_bytes=limit)
        if parsed.skipped is not None:
            skipped.append(parsed.skipped)
        return parsed.pending


@dataclass(frozen=True)
class ParsedFile:
    """One walked file, read and split into a pending document, or skipped and why.

    Attributes:
        path: the file on disk, as the progress bar shows it.
        pending: the document to store, or None when the file is skipped.
        skipped: why the file is not learned, or None.
        embeddings: ``(text SHA-256, float32 bytes)`` of section texts embedded elsewhere
            (a Ray actor); they enter the embedding cache in the transaction that stores
            the document, so the index catch-up finds them there.
        first_of_file: False for the second and later items of one file (the sessions
            and skipped records of a transcript): the progress counts files.
    """

    path: str
    pending: Pending | None
    skipped: SkippedFile | None
    embeddings: tuple[tuple[str, bytes], ...] = ()
    first_of_file: bool = True


@dataclass(frozen=True)
class _Job:
    """One walked file to read and split (the arguments of ``parse_entry``)."""

    entry: FileEntry | Skipped
    tags: tuple[str, ...]
    docid: str | None
    single_file: bool
    max_record_bytes: int
    links: bool = True

    def run(self) -> list[ParsedFile]:
        return parse_entry(
            self.entry,
            tags=self.tags,
            docid=self.docid,
            single_file=self.single_file,
            max_record_bytes=self.max_record_bytes,
            links=self.links,
        )


POOL_MIN_FILES = 256
"""``learn.workers = 0`` reads and splits in worker processes from this many files on: a
smaller learn would spend longer starting them (about 0.4 s) than it saves."""
POOL_CHUNK = 16
"""Files a worker reads and splits per task."""
POOL_WINDOW = 8
"""Tasks in flight per worker: the parsed files waiting to be stored stay bounded."""


def parse_jobs(jobs: Iterator[_Job], *, workers: int) -> Iterator[ParsedFile]:
    """The parsed files of ``jobs``, in order. Reading and splitting a file (a PDF, a
    source file through tree-sitter, which holds the interpreter lock) can be most of a
    learn's CPU besides storing: with ``workers`` > 1, worker processes do it while this
    process stores. ``workers = 0`` is one per core, from ``POOL_MIN_FILES`` files on; 1
    (the default) is in this process: Markdown splits faster than workers start, and a
    spawned worker imports the caller's main module, which a script must then guard with
    ``if __name__ == "__main__"``. If the pool cannot start or breaks, the rest is parsed
    here."""
    if workers == 0:
        head = list(itertools.islice(jobs, POOL_MIN_FILES))
        cores = os.cpu_count() or 1
        workers = cores if len(head) == POOL_MIN_FILES and cores > 1 else 1
        jobs = itertools.chain(head, jobs)
    if workers <= 1:
        for job in jobs:
            yield from job.run()
        return
    yield from _parse_in_pool(jobs, workers)


def _parse_in_pool(jobs: Iterator[_Job], workers: int) -> Iterator[ParsedFile]:
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    chunks = iter(lambda: list(itertools.islice(jobs, POOL_CHUNK)), [])
    pending: deque[tuple[list[_Job], Future[list[list[ParsedFile]]]]] = deque()
    # "spawn": a fork would copy this process's SQLite connections and threads.
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        for chunk in chunks:
            pending.append((chunk, pool.submit(_run_chunk, chunk)))
            if len(pending) >= workers * POOL_WINDOW:
                yield from _finished(pending)
        while pending:
            yield from _finished(pending)
    except BrokenProcessPool:
        logger.warning("kbdb: the learn's worker processes stopped; reading the rest here")
        for chunk, _future in pending:
            for job in chunk:
                yield from job.run()
        for chunk in chunks:
            for job in chunk:
                yield from job.run()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _finished(
    pending: deque[tuple[list[_Job], Future[list[list[ParsedFile]]]]],
) -> Iterator[ParsedFile]:
    """The files of the oldest task; it leaves ``pending`` only once its result is in, so
    a broken pool's fallback parses it again."""
    results = pending[0][1].result()
    pending.popleft()
    for parsed in results:
        yield from parsed


def _run_chunk(chunk: list[_Job]) -> list[list[ParsedFile]]:
    """A worker's task: read and split a chunk of files."""
    return [job.run() for job in chunk]


def check_paths(paths: Iterable[Path]) -> list[Path]:
    """``paths`` as a list, after checking that each exists."""
    out = list(paths)
    for p in out:
        if not p.exists():
            raise InvalidArgumentError(f"no such file or folder: {p}", hint="check the path")
    return out


def parse_file(
    entry: FileEntry | Skipped,
    *,
    tags: Sequence[str],
    docid: str | None,
    single_file: bool,
    max_record_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> ParsedFile:
    """Read and split one walked file as a learn does (``single_file``: the learn root is
    this file). A file that cannot be read or parsed becomes a skipped one; a local learn
    and a distributed one both call this, so their documents are the same.

    A conversation transcript is one document only when it holds one session and no bad
    record; one that does not fit one ``ParsedFile`` is skipped here as
    ``UNSUPPORTED_TYPE``: ``parse_entry`` learns it whole."""
    parsed = parse_entry(
        entry, tags=tags, docid=docid, single_file=single_file, max_record_bytes=max_record_bytes
    )
    if len(parsed) == 1:
        return parsed[0]
    path = str(entry.path)
    reason = (
        f"a transcript of {len(parsed)} sessions and bad records is learned by"
        " 'kbdb learn' without --ray or --shards, not here"
    )
    return ParsedFile(path, None, SkippedFile(path, reason, "UNSUPPORTED_TYPE"))


def parse_entry(
    entry: FileEntry | Skipped,
    *,
    tags: Sequence[str],
    docid: str | None,
    single_file: bool,
    max_record_bytes: int = DEFAULT_MAX_FILE_BYTES,
    links: bool = True,
) -> list[ParsedFile]:
    """``parse_file`` for every file, conversation transcripts included: one item per
    session and per skipped record of a transcript (docs/conversations.md), one item for
    any other file. Only the first item of a file has ``first_of_file`` set."""
    path = str(entry.path)
    if isinstance(entry, Skipped):
        return [ParsedFile(path, None, SkippedFile(path, entry.reason, entry.code))]
    title = None
    transcript = None
    fmt = format_of(entry.type)
    document = None
    try:
        if fmt is not None:
            document, text = read_format(fmt, entry)
        elif is_image(entry.type):
            loaded = load(entry)
            if isinstance(loaded, Skipped):
                return [ParsedFile(path, None, SkippedFile(path, loaded.reason, loaded.code))]
            text, title = loaded.content, entry.path.name
        else:
            transcript = read_transcript(entry, max_record_bytes=max_record_bytes)
            text = "" if transcript is not None else read_text(entry)
            if entry.type == "application/json":
                transcript = json_transcript(text)
    except KbdbError as e:
        reason = getattr(e, "reason", None) or e.message
        return [ParsedFile(path, None, SkippedFile(path, reason, _skip_code(e)))]
    except OSError as e:
        reason = f"cannot read: {(e.strerror or str(e)).lower()}"
        return [ParsedFile(path, None, SkippedFile(path, reason, "UNREADABLE"))]
    if docid is None:
        doc = entry.rel
    elif single_file:
        doc = docid
    else:
        doc = f"{docid}/{entry.rel}"
    if transcript is not None:
        try:
            pendings, skips = transcript_pendings(transcript, entry=entry, docid=doc, tags=tags)
        except KbdbError as e:
            return [ParsedFile(path, None, SkippedFile(path, e.message, _skip_code(e)))]
        items = [ParsedFile(path, p, None) for p in pendings]
        items += [ParsedFile(path, None, s) for s in skips]
        return [dataclasses.replace(it, first_of_file=i == 0) for i, it in enumerate(items)]
    try:
        if document is None:
            mime = normalize_type(entry.type)
            document = split_content(text, mime, title=title, description=None, links=links)
        pending = build_parsed(
            document,
            docid=doc,
            source=entry.rel,
            checksum_text=text,
            type=fmt.mime if fmt is not None else mime,
            title=title,
            description=None,
            tags=tags,
            section_type=None,
            source_path=os.path.abspath(path),
            mode="document",
            content_type=fmt.section_type if fmt is not None else None,
        )
    except KbdbError as e:  # e.g. a .json file that does not parse: skip, go on
        return [ParsedFile(path, None, SkippedFile(path, e.message, _skip_code(e)))]
    return [ParsedFile(path, pending, None)]


def is_notable(s: SectionReport) -> bool:
    """A section report with something to say beyond the totals."""
    return bool(s.warnings or s.near_duplicates or s.vector_embedding_failed)


def make_report(
    reports: Sequence[SectionReport],
    totals: dict[str, int],
    skipped: Sequence[SkippedFile],
    started: float,
) -> LearnReport:
    """The ``LearnReport`` of a call that started at ``started`` (``time.perf_counter``)."""
    return LearnReport(
        sections=tuple(reports),
        documents_added=totals.get("documents_added", 0),
        documents_updated=totals.get("documents_updated", 0),
        documents_unchanged=totals.get("documents_unchanged", 0),
        sections_added=totals.get("sections_added", 0),
        sections_unchanged=totals.get("sections_unchanged", 0),
        sections_retired=totals.get("sections_retired", 0),
        files_skipped=tuple(skipped),
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
    )


def _skip_code(e: KbdbError) -> str:
    return getattr(e, "skip_code", None) or e.code


def _add(
    batch: tuple[list[SectionReport], dict[str, int]],
    reports: list[SectionReport],
    totals: dict[str, int],
) -> None:
    r, t = batch
    reports.extend(r)
    for k, v in t.items():
        totals[k] = totals.get(k, 0) + v
