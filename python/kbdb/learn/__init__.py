"""The learn room: files, folders and content in memory become documents and sections in
the database, and the indexes follow (SPEC §3)."""

from kbdb.learn.items import (
    LearnItem,
    LearnProgress,
    Pending,
    ProgressFn,
    build_document,
    slug,
    utc_now,
)
from kbdb.learn.learner import Learner, is_notable, make_report

__all__ = [
    "LearnItem",
    "LearnProgress",
    "Learner",
    "Pending",
    "ProgressFn",
    "build_document",
    "is_notable",
    "make_report",
    "slug",
    "utc_now",
]
