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

    Without ``argv`` this is the ``kbdb`` process itself: after a short read-only command
    (search, recall, stats: ``kbdb.cli.app.QUICK``) it may end the process with the exit
    code instead of returning (``kbdb.cli.app._quick_exit``).
    """
    if argv is None:
        import gc

        # Loading the CLI and the engine creates tens of thousands of objects and no
        # garbage cycles worth a collection; kbdb.cli.app turns collection back on for
        # every command but the short read-only ones (QUICK).
        gc.disable()
    from kbdb.cli.app import run

    return run(argv, console=argv is None)


__all__ = ["main"]
