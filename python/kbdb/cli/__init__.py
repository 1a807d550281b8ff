"""The ``kbdb`` command line (SPEC §11).

``main()`` is the console entry point. The CLI only parses arguments, calls
:class:`kbdb.kb.KnowledgeBase` and renders the results; everything heavy (the engine,
``rich``) is imported inside the command that needs it, so that ``import kbdb.cli`` and a
lexical ``kbdb search`` stay fast.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kbdb`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Exit codes: 0 success, 1 completed with problems, 2 usage or configuration error,
    3 knowledge base not found or locked.

    Without ``argv`` this is the ``kbdb`` process itself, and after a read-only command
    (search, recall, stats) it may end the process with the exit code instead of returning
    (see ``kbdb.cli.app._quick_exit``).
    """
    from kbdb.cli.app import run

    return run(argv, console=argv is None)


__all__ = ["main"]
