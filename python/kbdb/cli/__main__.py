"""``python -m kbdb.cli``: the same as the ``kbdb`` command."""

from kbdb.cli import main

raise SystemExit(main())
