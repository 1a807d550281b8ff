"""``KnowledgeBase.learn`` and ``learn_many``: content given in memory, made into pending
documents and stored in batches (``learn_path`` goes straight to the learner)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kbdb.errors import ContentTooLargeError, InvalidArgumentError
from kbdb.kb import _tags
from kbdb.learn import LearnItem, Pending, build_document, make_report, slug

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase
    from kbdb.types import LearnReport, SectionReport


def learn_one(kb: KnowledgeBase, item: LearnItem) -> LearnReport:
    """``learn``: one item, one transaction."""
    started = time.perf_counter()
    reports, totals = kb._learner.learn_pending([pending(kb, item)])
    return make_report(reports, totals, (), started)


def learn_many(kb: KnowledgeBase, items: Iterable[LearnItem], batch: int) -> LearnReport:
    """``learn_many``: ``batch`` documents per transaction and per index commit."""
    if batch < 1:
        raise InvalidArgumentError(f"batch must be >= 1 (got {batch})")
    started = time.perf_counter()
    reports: list[SectionReport] = []
    totals: dict[str, int] = {}
    waiting: list[Pending] = []
    for item in items:
        waiting.append(pending(kb, item))
        if len(waiting) >= batch:
            _learn_batch(kb, waiting, reports, totals)
            waiting = []
    _learn_batch(kb, waiting, reports, totals)
    return make_report(reports, totals, (), started)


def _learn_batch(
    kb: KnowledgeBase,
    waiting: list[Pending],
    reports: list[SectionReport],
    totals: dict[str, int],
) -> None:
    if not waiting:
        return
    r, t = kb._learner.learn_pending(waiting)
    reports.extend(r)
    for k, v in t.items():
        totals[k] = totals.get(k, 0) + v


def pending(kb: KnowledgeBase, item: LearnItem) -> Pending:
    """``item`` checked and parsed; the document id is derived from the title (or the
    first words) when it has none."""
    if not isinstance(item.content, str):
        raise InvalidArgumentError("content must be a string")
    limit = kb.config.learn.max_file_bytes
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
