"""``log``: the ``kbdb`` logger for the modules on the search path, made on first use.

Importing :mod:`logging` (and :mod:`traceback` and :mod:`string` with it) is a few
milliseconds of every cold ``kbdb search``, which logs nothing unless something is wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging


class _LazyLogger:
    """Forwards every attribute to ``logging.getLogger("kbdb")``, importing logging then."""

    def __getattr__(self, name: str) -> Any:
        import logging

        return getattr(logging.getLogger("kbdb"), name)


log: logging.Logger = _LazyLogger()  # type: ignore[assignment]
