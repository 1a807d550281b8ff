"""Named fail points for the crash harness (``tests/reliability/test_crash.py``).

``KBDB_FAILPOINT=<name>[:<n>]`` aborts the process at the ``n``-th time (default 1) it
reaches the point ``name``, as ``kill -9`` would stop it there: no ``finally`` blocks, no
flushing. The Rust core reads the same variable for its own points (``write.mid``,
``write.before_rename``, ``write.after_rename``); the Python points are:

- ``learn.after_db_commit``: the learn's transaction is committed, no index has it yet;
- ``learn.after_lexical``: the lexical index has it, the vector index not yet;
- ``lifecycle.after_db_commit``: a revise or forget is committed, the indexes lag;
- ``rebuild.after_lexical``: a rebuild published the lexical index, not the vectors;
- ``gc.after_db_commit``: gc deleted rows, the indexes are not compacted yet.

Unset (always, outside tests), a point costs one global lookup.
"""

from __future__ import annotations

import os
import sys

_spec = os.environ.get("KBDB_FAILPOINT", "")
_name, _, _count = _spec.partition(":")
_remaining = int(_count) if _count.isdigit() else 1


def hit(name: str) -> None:
    """Abort here if ``name`` is the armed point and its count has run out."""
    global _remaining
    if not _name or name != _name:
        return
    _remaining -= 1
    if _remaining == 0:
        sys.stderr.write(f"kbdb: fail point {name} reached: aborting\n")
        sys.stderr.flush()
        os.abort()
