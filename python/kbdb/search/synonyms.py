"""Query-time synonyms (SPEC §4.1): a built-in table of common technical equivalences, plus
an optional ``.kbdb/synonyms.toml``.

A hit on a synonym counts ``SYNONYM_WEIGHT`` of a hit on the query term itself. Synonyms
are expanded at query time only, so editing the table never needs a rebuild.

``synonyms.toml`` holds groups of words that mean the same thing::

    groups = [["pg", "postgres", "postgresql"], ["llm", "language-model"]]

Only single-word entries take part; a multi-word entry is ignored with a log message.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kbdb._log import log
from kbdb.errors import ConfigInvalidError

SYNONYM_WEIGHT = 0.6

AnalyzeFn = Callable[[str], list[str]]
FILE_NAME = "synonyms.toml"

BUILTIN_GROUPS: tuple[tuple[str, ...], ...] = (
    ("db", "database", "databases"),
    ("auth", "authentication", "authn"),
    ("authz", "authorization"),
    ("config", "configuration", "cfg", "conf"),
    ("k8s", "kubernetes"),
    ("repo", "repository"),
    ("env", "environment"),
    ("dir", "directory", "folder"),
    ("doc", "docs", "documentation"),
    ("js", "javascript"),
    ("ts", "typescript"),
    ("py", "python"),
    ("pg", "postgres", "postgresql"),
    ("msg", "message"),
    ("err", "error"),
    ("fn", "func", "function"),
    ("arg", "argument"),
    ("param", "parameter"),
    ("impl", "implementation"),
    ("async", "asynchronous"),
    ("perf", "performance"),
    ("deps", "dependencies", "dependency"),
    ("pkg", "package"),
    ("lib", "library"),
    ("admin", "administrator"),
    ("app", "application"),
    ("dev", "development"),
    ("prod", "production"),
    ("infra", "infrastructure"),
    ("os", "operating-system"),
    ("ui", "interface"),
    ("api", "endpoint"),
    ("cli", "command-line"),
    ("ci", "continuous-integration"),
    ("mem", "memory"),
    ("tmp", "temp", "temporary"),
    ("info", "information"),
    ("spec", "specification"),
    ("req", "request"),
    ("resp", "response"),
    ("str", "string"),
    ("int", "integer"),
    ("bool", "boolean"),
    ("num", "number"),
    ("max", "maximum"),
    ("min", "minimum"),
    ("delete", "remove"),
    ("bug", "defect"),
    ("ml", "machine-learning"),
    ("llm", "language-model"),
)


class Synonyms:
    """Maps an analyzed query term to the analyzed terms of its synonyms."""

    def __init__(self, groups: Iterable[Sequence[str]], analyze: AnalyzeFn) -> None:
        synonyms: dict[str, set[str]] = {}
        for group in groups:
            terms: list[str] = []
            for word in group:
                analyzed = analyze(word)
                if len(analyzed) == 1:
                    terms.append(analyzed[0])
                else:
                    log.debug("synonym %r is not one term; ignored", word)
            for t in terms:
                synonyms.setdefault(t, set()).update(x for x in terms if x != t)
        # What a query clause of each term adds: its synonyms at SYNONYM_WEIGHT, sorted.
        self._alternatives = {
            t: tuple((s, SYNONYM_WEIGHT) for s in sorted(syns)) for t, syns in synonyms.items()
        }

    def alternatives(self, term: str) -> tuple[tuple[str, float], ...]:
        """``(synonym, SYNONYM_WEIGHT)`` for each synonym of ``term``, sorted."""
        return self._alternatives.get(term, ())


def load_groups(kbdir: Path) -> list[list[str]]:
    """The built-in groups plus the user's ``synonyms.toml`` (strictly validated)."""
    groups: list[list[str]] = [list(g) for g in BUILTIN_GROUPS]
    path = kbdir / FILE_NAME
    if not path.exists():
        return groups
    # Here, not at import: most knowledge bases have no synonyms.toml, and loading tomllib
    # is a few per cent of a cold `kbdb search`.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigInvalidError(f"{path}: {e}", hint="fix the TOML syntax") from e
    unknown = set(data) - {"groups"}
    if unknown:
        raise ConfigInvalidError(
            f"{path}: unknown key {sorted(unknown)[0]!r}; allowed: groups",
            hint='write groups = [["db", "database"], ...]',
        )
    user = data.get("groups", [])
    if not isinstance(user, list) or not all(
        isinstance(g, list) and all(isinstance(w, str) for w in g) for g in user
    ):
        raise ConfigInvalidError(
            f"{path}: groups must be a list of lists of strings",
            hint='write groups = [["db", "database"], ...]',
        )
    groups.extend(user)
    return groups
