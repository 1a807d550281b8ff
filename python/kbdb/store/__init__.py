"""The store: ``kb.sqlite`` as the source of truth, the writer lock and the change log.

This package is the only code that speaks SQL.
"""

from kbdb.store.db import DB_NAME, Database, DatabaseError
from kbdb.store.documents import (
    DocumentOutcome,
    NewDocument,
    NewSection,
    ReplaceMode,
    apply_document,
    document_checksum,
    retire,
)
from kbdb.store.lock import WriteLock

__all__ = [
    "DB_NAME",
    "Database",
    "DatabaseError",
    "DocumentOutcome",
    "NewDocument",
    "NewSection",
    "ReplaceMode",
    "WriteLock",
    "apply_document",
    "document_checksum",
    "retire",
]
