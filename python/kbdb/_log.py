"""``log``: the ``kbdb`` logger for the modules on the search path, made on first use.

Importing :mod:`logging` (and :mod:`traceback` and :mod:`string` with it) is a few
milliseconds of every cold ``kbdb search``, which logs nothing unless something is wrong.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging


def _dropped(*_args: Any, **_kwargs: Any) -> None:
    return None


class _LazyLogger:
    """Forwards every attribute to ``logging.getLogger("kbdb")``, importing logging then.

    ``debug`` and ``info`` before anything imported :mod:`logging` are dropped without
    importing it: nobody can have configured a handler or a level yet, so logging would
    drop them too (the default level is WARNING). ``--debug`` configures logging first."""

    def __getattr__(self, name: str) -> Any:
        if name in ("debug", "info") and "logging" not in sys.modules:
            return _dropped
        import logging

        return getattr(logging.getLogger("kbdb"), name)


log: logging.Logger = _LazyLogger()  # type: ignore[assignment]
