"""kbdb: a searchable second brain for AI agents and the people who work with them.

>>> import kbdb
>>> kb = kbdb.KnowledgeBase.init("path")          # doctest: +SKIP
>>> kb.search("database rationale")               # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbdb.errors import (
    ConfigInvalidError,
    ContentTooLargeError,
    EmbeddingFailedError,
    EmbeddingProviderNotConfiguredError,
    IndexCorruptError,
    IndexStaleError,
    InvalidArgumentError,
    KbdbError,
    KbLockedError,
    KbNotFoundError,
    ModelNotAvailableError,
    NotFoundError,
    UnsupportedTypeError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from kbdb.kb import KnowledgeBase, LearnItem


def __getattr__(name: str) -> Any:
    # Lazy, so that ``import kbdb.errors`` (done by the Rust module) stays light.
    if name in ("KnowledgeBase", "LearnItem"):
        from kbdb import kb

        return getattr(kb, name)
    raise AttributeError(f"module 'kbdb' has no attribute {name!r}")


__all__ = [
    "ConfigInvalidError",
    "ContentTooLargeError",
    "EmbeddingFailedError",
    "EmbeddingProviderNotConfiguredError",
    "IndexCorruptError",
    "IndexStaleError",
    "InvalidArgumentError",
    "KbLockedError",
    "KbNotFoundError",
    "KbdbError",
    "KnowledgeBase",
    "LearnItem",
    "ModelNotAvailableError",
    "NotFoundError",
    "UnsupportedTypeError",
    "__version__",
]
