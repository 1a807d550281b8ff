"""The store: ``kb.sqlite`` as the source of truth, the writer lock and the change log.

This package is the only code that speaks SQL.

The learn transaction (``kbdb.store.documents``) loads on first access: opening a
knowledge base to search needs only the database and the lock.
"""

from typing import TYPE_CHECKING, Any

from kbdb.store.db import DB_NAME, Database, DatabaseError
from kbdb.store.lock import WriteLock

_DOCUMENTS = frozenset(
    {
        "DocumentOutcome",
        "NewDocument",
        "NewSection",
        "ReplaceMode",
        "apply_document",
        "document_checksum",
        "retire",
    }
)

if TYPE_CHECKING:
    from kbdb.store.documents import (
        DocumentOutcome,
        NewDocument,
        NewSection,
        ReplaceMode,
        apply_document,
        document_checksum,
        retire,
    )
else:

    def __getattr__(name: str) -> Any:
        if name in _DOCUMENTS:
            from kbdb.store import documents

            return getattr(documents, name)
        raise AttributeError(f"module 'kbdb.store' has no attribute {name!r}")


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
