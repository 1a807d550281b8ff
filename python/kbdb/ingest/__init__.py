"""Ingest: find files, split documents into sections, and name sections (SPEC §2–§3).

This room knows nothing of storage or search. ``walk`` streams the files of a learn,
``load`` reads one, a splitter turns its text into ``ParsedSection``s, and ``compute_kbid``
and ``source_key`` give each section its content address and its logical identity.
"""

from kbdb.ingest.kbid import canonical_content, compute_kbid, kbid_hash, source_key
from kbdb.ingest.markdown import split_document, split_html, split_markdown, split_text
from kbdb.ingest.section import (
    FRONT_MATTER_INVALID,
    HTML_INVALID,
    ParsedDocument,
    ParsedSection,
)
from kbdb.ingest.walk import (
    DEFAULT_MAX_FILE_BYTES,
    SUPPORTED_EXTENSIONS,
    BinaryFileError,
    FileEntry,
    FileRejectedError,
    InvalidUtf8Error,
    LoadedFile,
    Skipped,
    TreeRules,
    UnreadableFileError,
    count_files,
    load,
    read_text,
    walk,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "FRONT_MATTER_INVALID",
    "HTML_INVALID",
    "SUPPORTED_EXTENSIONS",
    "BinaryFileError",
    "FileEntry",
    "FileRejectedError",
    "InvalidUtf8Error",
    "LoadedFile",
    "ParsedDocument",
    "ParsedSection",
    "Skipped",
    "TreeRules",
    "UnreadableFileError",
    "canonical_content",
    "compute_kbid",
    "count_files",
    "kbid_hash",
    "load",
    "read_text",
    "source_key",
    "split_document",
    "split_html",
    "split_markdown",
    "split_text",
    "walk",
]
