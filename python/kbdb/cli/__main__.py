"""``python -m kbdb.cli``: the same as the ``kbdb`` command."""

from kbdb.cli import main

if __name__ == "__main__":  # not in a learn's worker processes (spawned)
    raise SystemExit(main())
