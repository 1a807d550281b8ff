"""The one error hierarchy. Every error carries a stable ``code`` (SPEC §14) and a hint.

The CLI renders ``kbdb: <message> (<hint>)`` with an exit code; the MCP server renders
``{"error": message, "code": code}``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class KbdbError(Exception):
    """Base class of every kbdb error. ``code`` is stable and machine-readable."""

    code: ClassVar[str] = "KBDB_ERROR"
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.message, "code": self.code}

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message} ({self.hint})"


class EmbeddingProviderNotConfiguredError(KbdbError):
    code = "EMBEDDING_PROVIDER_NOT_CONFIGURED"
    exit_code = 2


class EmbeddingFailedError(KbdbError):
    code = "EMBEDDING_FAILED"


class ModelNotAvailableError(KbdbError):
    code = "MODEL_NOT_AVAILABLE"
    exit_code = 2


class KbNotFoundError(KbdbError):
    code = "KB_NOT_FOUND"
    exit_code = 3


class KbLockedError(KbdbError):
    code = "KB_LOCKED"
    exit_code = 3


class NotFoundError(KbdbError):
    code = "NOT_FOUND"


class InvalidArgumentError(KbdbError):
    code = "INVALID_ARGUMENT"
    exit_code = 2


class ConfigInvalidError(KbdbError):
    code = "CONFIG_INVALID"
    exit_code = 2


class IndexCorruptError(KbdbError):
    code = "INDEX_CORRUPT"

    def __init__(self, message: str, *, hint: str | None = "run 'kbdb rebuild'") -> None:
        super().__init__(message, hint=hint)


class IndexFormatError(IndexCorruptError):
    """An index file written in another format version, by an older or newer kbdb. Its
    bytes may be intact, but this build cannot read them: ``kbdb rebuild`` regenerates the
    index from ``kb.sqlite`` in the current format."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = "run 'kbdb rebuild' to rebuild the index in this version's format",
    ) -> None:
        super().__init__(message, hint=hint)


class IndexStaleError(KbdbError):
    code = "INDEX_STALE"

    def __init__(self, message: str, *, hint: str | None = "run 'kbdb rebuild'") -> None:
        super().__init__(message, hint=hint)


class ContentTooLargeError(KbdbError):
    code = "CONTENT_TOO_LARGE"


class UnsupportedTypeError(KbdbError):
    code = "UNSUPPORTED_TYPE"
    exit_code = 2


__all__ = [
    "ConfigInvalidError",
    "ContentTooLargeError",
    "EmbeddingFailedError",
    "EmbeddingProviderNotConfiguredError",
    "IndexCorruptError",
    "IndexFormatError",
    "IndexStaleError",
    "InvalidArgumentError",
    "KbLockedError",
    "KbNotFoundError",
    "KbdbError",
    "ModelNotAvailableError",
    "NotFoundError",
    "UnsupportedTypeError",
]
