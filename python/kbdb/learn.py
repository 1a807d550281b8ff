"""The learn pipeline: parse sources into documents, store them, bring the index along
(SPEC §3).

Files are read and split before any transaction, so one bad file is reported and skipped
without touching the others. Documents are stored in batches: each batch is one SQLite
transaction under the writer lock (so every document is all-or-nothing), followed by one
index commit. The lock is released between batches so other writers and index readers
interleave with a long learn.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from kbdb import failpoints
from kbdb.errors import IndexCorruptError, InvalidArgumentError, KbdbError
from kbdb.ingest import (
    FileEntry,
    Skipped,
    compute_kbid,
    count_files,
    load,
    read_text,
    source_key,
    walk,
)
from kbdb.ingest.content import is_image, normalize_type, split_content
from kbdb.neardup import NearDuplicateFinder
from kbdb.search.indexer import LexicalIndex
from kbdb.search.vectors import VectorStore
from kbdb.secrets import POSSIBLE_SECRET, find_secrets
from kbdb.store import (
    Database,
    DocumentOutcome,
    NewDocument,
    NewSection,
    ReplaceMode,
    WriteLock,
    apply_document,
)
from kbdb.store import queries as q
from kbdb.types import (
    DEFAULT_SECTION_TYPE,
    LearnReport,
    NearDuplicate,
    SectionReport,
    SkippedFile,
)

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
# abstracts), 51/s at 40 words (docs/benchmarks.md §4): 12 s and 2.5 s for 128.
BATCH_SECTIONS_EMBEDDED = 128


@dataclass(frozen=True)
class LearnProgress:
    """Progress of a ``learn_path``: files done so far and the total when known."""

    files_done: int
    files_total: int | None
    sections: int
    path: str


ProgressFn = Callable[[LearnProgress], None]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def slug(text: str) -> str:
    s = re.sub(r"[^\w]+", "-", text.strip().lower()).strip("-")
    return s[:80] or "note"


@dataclass(frozen=True)
class LearnItem:
    """One block of content for ``KnowledgeBase.learn_many`` (the parameters of ``learn``)."""

    content: str
    type: str = "text/markdown"
    title: str | None = None
    description: str | None = None
    docid: str | None = None
    tags: Sequence[str] = ()
    replace: bool = False
    section_type: str | None = None


@dataclass(frozen=True)
class Pending:
    """A parsed document, ready to be stored."""

    doc: NewDocument
    mode: ReplaceMode
    warnings: dict[str, tuple[str, ...]]


def build_document(
    *,
    docid: str,
    source: str,
    text: str,
    type: str,
    title: str | None,
    description: str | None,
    tags: Sequence[str],
    section_type: str | None,
    source_path: str | None,
    mode: ReplaceMode,
) -> Pending:
    """Check and split ``text`` and compute kbids, source keys, parents and warnings."""
    type = normalize_type(type)
    parsed = split_content(text, type, title=title, description=description)
    doc_tags = tuple(dict.fromkeys([*tags, *parsed.tags]))
    doc_title = title or parsed.title
    stype = section_type or DEFAULT_SECTION_TYPE
    sections: list[NewSection] = []
    warnings: dict[str, tuple[str, ...]] = {}
    kbids: list[str] = []
    seen_keys: dict[str, int] = {}
    single = len(parsed.sections) == 1
    for ps in parsed.sections:
        kbid = compute_kbid(type, ps.heading, ps.content)
        key = source_key(source, ps.heading_path)
        n = seen_keys.get(key, 0) + 1
        seen_keys[key] = n
        if n > 1:
            key = f"{key}[{n}]"
        parent = kbids[ps.parent] if ps.parent is not None else None
        kbids.append(kbid)
        # A single-section learn carries the caller's title and description itself.
        sec_title = title if (single and title) else None
        sec_desc = description if (single and description) else None
        w: list[str] = list(parsed.warnings) if not sections else []
        if not ps.heading.strip() and not sec_title:
            w.append("heading_missing")
        if not ps.content.strip():
            w.append("empty_content")
        if not is_image(type) and find_secrets(ps.heading + "\n" + ps.content):
            w.append(POSSIBLE_SECRET)
        warnings[kbid] = tuple(dict.fromkeys(warnings.get(kbid, ()) + tuple(w)))
        sections.append(
            NewSection(
                kbid=kbid,
                heading=ps.heading,
                level=ps.level,
                parent=parent,
                content=ps.content,
                type=type,
                section_type=stype,
                title=sec_title,
                description=sec_desc,
                source_key=key,
                tags=doc_tags,
            )
        )
    checksum = hashlib.sha256(
        f"{type}\x00{title or ''}\x00{description or ''}\x00{text}".encode()
    ).hexdigest()
    doc = NewDocument(
        docid=docid,
        title=doc_title,
        description=description or parsed.description,
        source_path=source_path,
        type=type,
        checksum=checksum,
        tags=doc_tags,
        sections=tuple(sections),
    )
    return Pending(doc, mode, warnings)


class Learner:
    """Runs learns against one knowledge base."""

    def __init__(
        self,
        db: Database,
        lock: WriteLock,
        index: LexicalIndex,
        vectors: VectorStore,
        near: NearDuplicateFinder | None = None,
    ) -> None:
        self._db = db
        self._lock = lock
        self._index = index
        self._vectors = vectors
        self._near = near

    def learn_pending(
        self, pending: Sequence[Pending]
    ) -> tuple[list[SectionReport], dict[str, int]]:
        """Store a batch of documents in one transaction, then commit the index."""
        reports: list[SectionReport] = []
        totals = {
            "documents_added": 0,
            "documents_updated": 0,
            "documents_unchanged": 0,
            "sections_added": 0,
            "sections_unchanged": 0,
            "sections_retired": 0,
        }
        if not pending:
            return reports, totals
        with self._lock.hold():
            now = utc_now()
            outcomes = []
            with self._db.write() as conn:
                # Only a missing vector index needs the count (a full scan: 50 ms at 40k
                # sections, most of a one-section learn; docs/knowledge.md).
                live_before = q.live_count(conn) if self._vector_index_missing() else None
                for p in pending:
                    outcomes.append(apply_document(conn, p.doc, mode=p.mode, now=now))
                if self._near is not None:
                    self._near.catch_up(conn)  # in this transaction: atomic with the learn
            failpoints.hit("learn.after_db_commit")
            terms = self._index.catch_up()
            failpoints.hit("learn.after_lexical")
            # Embedding follows the lexical commit: a provider failure never loses the
            # learn, the section just stays lexical-only until a rebuild.
            failed = self._vectors.catch_up(live_before=live_before)
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
                    count = self._index.index_terms(
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
        if not self._vectors.enabled:
            return False
        try:
            return self._vectors.index() is None
        except IndexCorruptError:
            return True  # the vector catch-up reports it, after the learn is stored

    def _find_near(
        self, pending: Sequence[Pending], outcomes: Sequence[DocumentOutcome]
    ) -> dict[str, tuple[NearDuplicate, ...]]:
        """Near-duplicates of the sections this learn stored or linked (an unchanged
        section was checked when it was first learned)."""
        if self._near is None:
            return {}
        kbids = [
            s.kbid
            for p, out in zip(pending, outcomes, strict=True)
            for s in p.doc.sections
            if out.status.get(s.kbid) in ("added", "linked")
        ]
        return self._near.find(list(dict.fromkeys(kbids)))

    def learn_paths(
        self,
        paths: Iterable[Path],
        *,
        tags: Sequence[str],
        docid: str | None,
        max_file_bytes: int,
        progress: ProgressFn | None,
        notable_only: bool = False,
    ) -> LearnReport:
        """``notable_only`` keeps only the section reports with something to say (warnings,
        near-duplicates, a failed embedding); the totals still count every section. The
        CLI's text output prints nothing else, so it asks for this and a learn of a large
        tree runs in flat memory instead of holding one report per section."""
        started = time.perf_counter()
        paths = list(paths)
        for p in paths:
            if not p.exists():
                raise InvalidArgumentError(f"no such file or folder: {p}", hint="check the path")
        total = sum(count_files(p) for p in paths) if progress else None
        reports: list[SectionReport] = []
        skipped: list[SkippedFile] = []
        totals: dict[str, int] = {}
        done = 0
        batch: list[Pending] = []
        batch_sections = batch_chars = 0
        max_sections = BATCH_SECTIONS_EMBEDDED if self._vectors.enabled else BATCH_SECTIONS
        sections_done = 0
        last_path = ""

        def flush() -> None:
            nonlocal batch, batch_sections, batch_chars, sections_done
            r, t = self.learn_pending(batch)
            reports.extend(s for s in r if not notable_only or is_notable(s))
            sections_done += len(r)
            for k, v in t.items():
                totals[k] = totals.get(k, 0) + v
            batch, batch_sections, batch_chars = [], 0, 0

        for root in paths:
            single_file = root.is_file()
            for entry in walk(root, max_file_bytes=max_file_bytes):
                done += 1
                last_path = str(entry.path)
                if isinstance(entry, Skipped):
                    skipped.append(SkippedFile(str(entry.path), entry.reason, entry.code))
                else:
                    pending = self._load(entry, tags, docid, single_file, skipped)
                    if pending is not None:
                        batch.append(pending)
                        batch_sections += len(pending.doc.sections)
                        batch_chars += sum([len(s.content) for s in pending.doc.sections])
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

    def _load(
        self,
        entry: FileEntry,
        tags: Sequence[str],
        docid: str | None,
        single_file: bool,
        skipped: list[SkippedFile],
    ) -> Pending | None:
        title = None
        try:
            if is_image(entry.type):
                loaded = load(entry)
                if isinstance(loaded, Skipped):
                    skipped.append(SkippedFile(str(entry.path), loaded.reason, loaded.code))
                    return None
                text, title = loaded.content, entry.path.name
            else:
                text = read_text(entry)
        except KbdbError as e:
            reason = getattr(e, "reason", None) or e.message
            skipped.append(SkippedFile(str(entry.path), reason, _skip_code(e)))
            return None
        except OSError as e:
            skipped.append(SkippedFile(str(entry.path), f"cannot read: {e.strerror}", "UNREADABLE"))
            return None
        if docid is None:
            doc = entry.rel
        elif single_file:
            doc = docid
        else:
            doc = f"{docid}/{entry.rel}"
        try:
            return build_document(
                docid=doc,
                source=entry.rel,
                text=text,
                type=entry.type,
                title=title,
                description=None,
                tags=tags,
                section_type=None,
                source_path=str(entry.path),
                mode="document",
            )
        except KbdbError as e:  # e.g. a .json file that does not parse: skip, go on
            skipped.append(SkippedFile(str(entry.path), e.message, _skip_code(e)))
            return None


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
