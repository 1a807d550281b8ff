"""``.gitignore`` and ``.kbdbignore`` rules for the walker, with git's precedence.

Each folder of the tree may hold either file or both; their patterns apply to that
folder's subtree, matched against paths relative to the folder (``pathspec``'s
gitignore matcher does the pattern syntax). Precedence follows git: a deeper ignore
file overrides a shallower one, and within one folder the last matching pattern wins,
``.kbdbignore`` being read after ``.gitignore`` so it can re-include (``!pattern``)
what git ignores. As in git, a file inside an ignored folder cannot be re-included:
the walker never enters that folder. Ignore files above the learn root are not read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

logger = logging.getLogger("kbdb")

IGNORE_FILES = (".gitignore", ".kbdbignore")
"""Names of ignore files, in the order their patterns are read within one folder."""


@dataclass(frozen=True)
class IgnoreLevel:
    """The ignore patterns of one folder.

    Attributes:
        base: POSIX path of the folder relative to the learn root (``""`` for the root).
        patterns: The compiled patterns, in file order.
    """

    base: str
    patterns: tuple[pathspec.Pattern, ...]


def load_level(folder: Path, base: str, names: Sequence[str]) -> IgnoreLevel | None:
    """Read the ignore files among ``names`` in ``folder``.

    An ignore file that cannot be read is logged and skipped; a pattern that does not
    compile is logged and dropped, keeping the rest of the file.

    Args:
        folder: The folder on disk.
        base: Its POSIX path relative to the learn root.
        names: The entry names in the folder (to avoid a stat per ignore file name).

    Returns:
        The folder's rules, or None when it has no usable ignore patterns.
    """
    lines: list[str] = []
    for name in IGNORE_FILES:
        if name not in names:
            continue
        path = folder / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            logger.warning("cannot read ignore file %s: %s", path, exc.strerror or exc)
            continue
        lines.extend(text.splitlines())
    patterns = _compile(lines, folder)
    return IgnoreLevel(base, patterns) if patterns else None


def _compile(lines: list[str], folder: Path) -> tuple[pathspec.Pattern, ...]:
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        compiled = list(spec.patterns)
    except ValueError:
        compiled = []
        for line in lines:
            try:
                compiled.extend(pathspec.GitIgnoreSpec.from_lines([line]).patterns)
            except ValueError:
                logger.warning("ignoring bad pattern %r in %s", line, folder)
    return tuple(p for p in compiled if p.include is not None)


def is_ignored(levels: Sequence[IgnoreLevel], rel: str, *, is_dir: bool) -> bool:
    """Whether the ignore rules in force exclude a path.

    Args:
        levels: The rules of the path's ancestor folders, shallowest first.
        rel: The path's POSIX path relative to the learn root.
        is_dir: Whether the path is a folder (``dir/`` patterns match only folders).

    Returns:
        True when the deepest ignore file with a matching pattern ignores the path.
    """
    for level in reversed(levels):
        sub = rel[len(level.base) + 1 :] if level.base else rel
        if is_dir:
            sub += "/"
        verdict: bool | None = None
        for pattern in level.patterns:
            if pattern.match_file(sub) is not None:
                verdict = pattern.include
        if verdict is not None:
            return verdict
    return False
