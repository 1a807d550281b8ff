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
from kbdb.learn.learner import (
    Learner,
    ParsedFile,
    check_paths,
    is_notable,
    make_report,
    parse_entry,
    parse_file,
)

__all__ = [
    "LearnItem",
    "LearnProgress",
    "Learner",
    "ParsedFile",
    "Pending",
    "ProgressFn",
    "build_document",
    "check_paths",
    "is_notable",
    "make_report",
    "parse_entry",
    "parse_file",
    "slug",
    "utc_now",
]
