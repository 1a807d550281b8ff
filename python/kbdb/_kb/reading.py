"""``KnowledgeBase.recall`` and ``stats``: full sections and counts, read in one snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbdb.errors import InvalidArgumentError, NotFoundError
from kbdb.store import DB_NAME
from kbdb.store import queries as q
from kbdb.types import RecallResult, Section, Stats

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase


def recall(kb: KnowledgeBase, kbids: tuple[str, ...], docid: str | None) -> RecallResult:
    """The sections ``kbids``, then those of ``docid`` in order; NOT_FOUND names the first
    one missing."""
    if not kbids and docid is None:
        raise InvalidArgumentError("recall needs kbids or a docid")
    with kb._db.read() as conn:
        wanted = list(kbids)
        if docid is not None:
            in_doc = q.document_kbids(conn, docid)
            if in_doc is None:
                raise NotFoundError(f"no document {docid!r}", hint="list them with 'kbdb docs'")
            wanted += in_doc
        rows = q.sections(conn, wanted)
        missing = [k for k in wanted if k not in rows]
        if missing:
            raise NotFoundError(f"no section {missing[0]!r}", hint="kbids come from search results")
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


def stats(kb: KnowledgeBase) -> Stats:
    """The counts of the database, the sizes on disk and the index generation, after
    picking up other processes' index commits."""
    index = kb._index.core
    index.reload()
    with kb._db.read() as conn:
        c = q.counts(conn)
    db_bytes = sum(
        (kb.path / n).stat().st_size for n in (DB_NAME, DB_NAME + "-wal") if (kb.path / n).exists()
    )
    embedding = kb.config.embedding
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
        embedding_provider=embedding.provider,
        embedding_model=embedding.model if embedding.provider != "none" else None,
        vector_index_stale=kb._vectors.stale(),
        path=str(kb.path),
    )
