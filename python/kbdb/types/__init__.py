"""Result objects: frozen dataclasses whose ``to_dict()`` gives the JSON shapes of SPEC §3–§5.

The CLI's ``--json`` and the MCP server print exactly these dictionaries. The search
results (``kbdb.types.search``) load with this package; the others (read, learn,
lifecycle, knowledge, maintenance) load on first access through it, so that a cold
``kbdb search`` does not create the classes it never uses (each frozen dataclass costs
about half a millisecond to create).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbdb.types.base import (
    DEFAULT_SECTION_TYPE,
    DEFAULT_TYPE,
    Field,
    Record,
    SearchMode,
    Verdict,
    build,
)
from kbdb.types.search import (
    UNKNOWN_SOURCE,
    SearchItem,
    SearchResult,
    SourceRef,
    search_item,
    source_ref,
)

# -- loaded on first access: read, learn, lifecycle, knowledge, maintenance ---------------

_LAZY: dict[str, str] = {
    "RecallResult": "read",
    "Section": "read",
    "Stats": "read",
    "ContradictionGroup": "knowledge",
    "ContradictionMember": "knowledge",
    "ContradictionsResult": "knowledge",
    "Skill": "knowledge",
    "SkillInfo": "knowledge",
    "SkillLearnResult": "knowledge",
    "SkillList": "knowledge",
    "LearnReport": "learn",
    "NearDuplicate": "learn",
    "RebuildReport": "learn",
    "SectionReport": "learn",
    "SkippedFile": "learn",
    "ContextItem": "links",
    "ContextResult": "links",
    "LinkItem": "links",
    "LinksResult": "links",
    "Neighbour": "links",
    "DocumentInfo": "lifecycle",
    "DocumentList": "lifecycle",
    "ForgetResult": "lifecycle",
    "HistoryEntry": "lifecycle",
    "HistoryResult": "lifecycle",
    "Outline": "lifecycle",
    "OutlineNode": "lifecycle",
    "RelatedItem": "lifecycle",
    "RelatedResult": "lifecycle",
    "ReviseResult": "lifecycle",
    "TagCount": "lifecycle",
    "TagList": "lifecycle",
    "CheckCode": "maintenance",
    "CheckIssue": "maintenance",
    "CheckReport": "maintenance",
    "ExportReport": "maintenance",
    "GcReport": "maintenance",
    "ImportReport": "maintenance",
    "WatchBatch": "watch",
    "WatchedFolder": "watch",
}
"""Each lazily loaded name and its module in ``kbdb.types``."""

if TYPE_CHECKING:
    # The names of _LAZY, for the type checker; each module exports only its classes.
    from kbdb.types.knowledge import *  # noqa: F403
    from kbdb.types.learn import *  # noqa: F403
    from kbdb.types.lifecycle import *  # noqa: F403
    from kbdb.types.links import *  # noqa: F403
    from kbdb.types.maintenance import *  # noqa: F403
    from kbdb.types.read import *  # noqa: F403
    from kbdb.types.watch import *  # noqa: F403
else:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'kbdb.types' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"kbdb.types.{module}"), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_SECTION_TYPE",
    "Record",
    "build",
    "search_item",
    "source_ref",
    "UNKNOWN_SOURCE",
    "SourceRef",
    "DEFAULT_TYPE",
    "Field",
    "SearchItem",
    "SearchMode",
    "SearchResult",
    "Verdict",
    *_LAZY,
]
