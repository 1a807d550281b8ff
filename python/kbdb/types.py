"""Result objects: frozen dataclasses whose ``to_dict()`` gives the JSON shapes of SPEC §3–§5.

The CLI's ``--json`` and the MCP server print exactly these dictionaries.

Only the search results are defined here. The others live in ``kbdb/_types/`` (read,
learn, lifecycle, knowledge, maintenance) and load on first access, through this module
(``from kbdb.types import LearnReport`` works as before): creating a frozen dataclass
costs about half a millisecond (``exec`` of its generated methods), and a cold
``kbdb search`` needs only a handful of the 34 (docs/benchmarks.md, cold start).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

SearchMode = Literal["lexical", "vector", "hybrid"]
Verdict = Literal["answered", "partial", "unanswered"]
Field = Literal["heading", "body", "code", "path"]

DEFAULT_TYPE = "text/markdown"
DEFAULT_SECTION_TYPE = "section"


_SCALARS = (str, int, float, bool, type(None))
# Field names per class: dataclasses.fields() per call was most of to_dict's cost, and the
# MCP server calls to_dict on every result (benches/bench_mcp.py).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, _SCALARS):  # the common case first
        return value
    if isinstance(value, _Dict):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict()  # type: ignore[attr-defined]
    return value


class _Dict:
    """``to_dict()`` for frozen dataclasses; fields listed in ``_optional`` are left out when
    they are None."""

    _optional: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]
            _FIELD_NAMES[type(self)] = names
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if value is None and name in self._optional:
                continue
            out[name] = _plain(value)
        return out


@dataclass(frozen=True)
class SearchItem(_Dict):
    """One ranked section of a search (SPEC §4.3). (A docstring also spares the import
    the dataclass's own, made from ``inspect.signature``: a cold search starts faster.)"""

    kbid: str
    heading: str
    level: int
    parent: str | None
    type: str
    section_type: str
    docids: tuple[str, ...]
    tags: tuple[str, ...]
    snippet: str
    matched_terms: tuple[str, ...]
    matched_fields: tuple[str, ...]
    score: float
    confidence: float
    created_at: str
    relaxed: bool = False
    title: str | None = None
    content: str | None = None
    explain: dict[str, Any] | None = None

    _optional = frozenset({"title", "content", "explain"})


_D = TypeVar("_D", bound=_Dict)
_ALL_FIELDS: dict[type, frozenset[str]] = {}


def build(cls: type[_D], **fields: Any) -> _D:
    """An instance of the frozen dataclass ``cls`` from every one of its fields, without
    the generated ``__init__``.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``:
    2.4 µs for the 18 fields of a ``SearchItem``, against 0.6 µs to fill the instance dict
    at once, and a search builds one per hit (docs/benchmarks.md §2, "Session 8"). The
    result is the same object: equal, hashable and printed alike. Every field must be
    given; a missing or unknown one raises ``TypeError`` like the constructor would. For
    the result classes here, which have no ``__slots__`` and no ``__post_init__``.
    """
    names = _ALL_FIELDS.get(cls)
    if names is None:
        names = _ALL_FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    if len(fields) != len(names) or not names.issuperset(fields):
        raise TypeError(f"build needs exactly the fields of {cls.__name__} (got {sorted(fields)})")
    obj: _D = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def search_item(
    kbid: str,
    heading: str,
    level: int,
    parent: str | None,
    type: str,
    section_type: str,
    docids: tuple[str, ...],
    tags: tuple[str, ...],
    snippet: str,
    matched_terms: tuple[str, ...],
    matched_fields: tuple[str, ...],
    score: float,
    confidence: float,
    created_at: str,
    relaxed: bool,
    title: str | None,
    content: str | None,
    explain: dict[str, Any] | None,
) -> SearchItem:
    """A ``SearchItem`` from every one of its fields, in order: the object ``build`` makes,
    without a keyword dict to collect and check (0.65 µs against 1.6; a search makes one
    per hit). ``tests/test_kb.py`` holds the parameters to the dataclass's fields."""
    obj = object.__new__(SearchItem)
    object.__setattr__(
        obj,
        "__dict__",
        {
            "kbid": kbid,
            "heading": heading,
            "level": level,
            "parent": parent,
            "type": type,
            "section_type": section_type,
            "docids": docids,
            "tags": tags,
            "snippet": snippet,
            "matched_terms": matched_terms,
            "matched_fields": matched_fields,
            "score": score,
            "confidence": confidence,
            "created_at": created_at,
            "relaxed": relaxed,
            "title": title,
            "content": content,
            "explain": explain,
        },
    )
    return obj


@dataclass(frozen=True)
class SearchResult(_Dict):
    """``PagedSearchResult`` (SPEC §4.3)."""

    items: tuple[SearchItem, ...]
    total: int
    offset: int
    limit: int
    has_more: bool
    relaxed: bool
    search_mode: SearchMode
    retrieval_method: SearchMode
    vector_index_stale: bool
    retrieval_verdict: Verdict


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
}
"""Each lazily loaded name and its module in ``kbdb._types``."""

if TYPE_CHECKING:
    # The names of _LAZY, for the type checker; each module exports only its classes.
    from kbdb._types.knowledge import *  # noqa: F403
    from kbdb._types.learn import *  # noqa: F403
    from kbdb._types.lifecycle import *  # noqa: F403
    from kbdb._types.maintenance import *  # noqa: F403
    from kbdb._types.read import *  # noqa: F403
else:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'kbdb.types' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"kbdb._types.{module}"), name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


__all__ = [
    "DEFAULT_SECTION_TYPE",
    "DEFAULT_TYPE",
    "Field",
    "SearchItem",
    "SearchMode",
    "SearchResult",
    "Verdict",
    *_LAZY,
]
