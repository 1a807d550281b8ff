"""What every result class shares: ``Record.to_dict()`` (the JSON shapes of SPEC §3–§5,
which the CLI's ``--json`` and the MCP server print), ``build``, and the literal types."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeVar

SearchMode = Literal["lexical", "vector", "hybrid"]
Verdict = Literal["answered", "partial", "unanswered"]
Field = Literal["heading", "body", "code", "path", "anchor"]

DEFAULT_TYPE = "text/markdown"
DEFAULT_SECTION_TYPE = "section"


_SCALARS = (str, int, float, bool, type(None))
# Field names per class: dataclasses.fields() per call was most of to_dict's cost, and the
# MCP server calls to_dict on every result (benches/bench_mcp.py).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, _SCALARS):  # the common case first
        return value
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict()  # type: ignore[attr-defined]
    return value


class Record:
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


_D = TypeVar("_D", bound=Record)


def build(cls: type[_D], **fields: Any) -> _D:
    """An instance of the frozen dataclass ``cls`` from every one of its fields, without
    the generated ``__init__``.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``:
    2.4 µs for the 18 fields of a ``SearchItem``, against 0.6 µs to fill the instance dict
    at once, and a search builds one per hit. The
    result is the same object: equal, hashable and printed alike. Every field must be
    given; a missing or unknown one raises ``TypeError`` like the constructor would. For
    the result classes here, which have no ``__slots__`` and no ``__post_init__``.
    """
    # The class's own field table (no ClassVar or InitVar in these classes).
    names = cls.__dataclass_fields__  # type: ignore[attr-defined]
    if len(fields) != len(names) or not names.keys() >= fields.keys():
        raise TypeError(f"build needs exactly the fields of {cls.__name__} (got {sorted(fields)})")
    obj: _D = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj
