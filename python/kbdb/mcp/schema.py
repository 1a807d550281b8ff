"""JSON Schemas for the MCP tools: output schemas derived from the result dataclasses, and
validation of tool arguments against the input schemas.

Output schemas are generated from ``kbdb.types`` rather than written by hand, so a tool's
declared ``outputSchema`` can never drift from what ``to_dict()`` returns: the SDK client
validates every ``structuredContent`` against it, and the tests exercise that on every call.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any

from kbdb.errors import InvalidArgumentError

JsonSchema = dict[str, Any]

_SCALARS: dict[Any, JsonSchema] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def output_schema(cls: type) -> JsonSchema:
    """The JSON Schema of ``cls().to_dict()``: every field with its type.

    Every client receives it in ``tools/list``, at every session start, so it says what
    the fields are and holds nothing else: no descriptions (the names and the tool's
    description say what the fields mean) and no ``required`` lists (they repeat every
    name; ``to_dict()`` leaves out only the fields a class lists in ``_optional``). The
    full list costs a third less this way (docs/mcp.md, "Two tool surfaces").

    Clients validate every result against it (the SDK with ``jsonschema``, in pure Python),
    so it is shaped to be cheap to check: nested objects are inline, and only a recursive
    type (an outline node) goes to ``$defs``, because each ``$ref`` is a lookup per item;
    a nullable scalar (or plain object) is a type list, not an ``anyOf``.
    """
    defs: dict[str, JsonSchema] = {}
    root = {"type": "object", **_object(cls, defs, _recursive(cls))}
    if defs:
        root["$defs"] = defs
    return root


def _dataclasses_in(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return [tp]
    return [c for a in typing.get_args(tp) for c in _dataclasses_in(a)]


def _recursive(root: type) -> set[type]:
    """The dataclasses reachable from ``root`` that contain themselves."""
    out: set[type] = set()

    def walk(cls: type, path: tuple[type, ...]) -> None:
        for hint in typing.get_type_hints(cls).values():
            for sub in _dataclasses_in(hint):
                if sub in path or sub is cls:
                    out.add(sub)
                else:
                    walk(sub, (*path, cls))

    walk(root, ())
    return out


def _object(cls: type, defs: dict[str, JsonSchema], recursive: set[type]) -> JsonSchema:
    """``properties`` alone: below the root, which MCP wants typed, ``"type": "object"``
    would only repeat what the properties say, once per nested object of every tool."""
    hints = typing.get_type_hints(cls)
    props = {f.name: _schema(hints[f.name], defs, recursive) for f in dataclasses.fields(cls)}
    return {"properties": props}


def _schema(tp: Any, defs: dict[str, JsonSchema], recursive: set[type]) -> JsonSchema:
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if tp not in recursive:
            return _object(tp, defs, recursive)
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder first: the type refers to itself
            defs[name] = _object(tp, defs, recursive)
        return {"$ref": f"#/$defs/{name}"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        arms = [_schema(a, defs, recursive) for a in args]
        kinds = [arm.get("type") for arm in arms]
        bare = sum(set(arm) == {"type"} for arm in arms)
        distinct = all(isinstance(k, str) for k in kinds) and len(set(kinds)) == len(arms)
        # Arms of distinct types, all but one a bare type: one type list says the same,
        # since the other arm's keywords (items, properties) apply to its type alone.
        if distinct and bare >= len(arms) - 1:
            merged: JsonSchema = {k: v for arm in arms for k, v in arm.items()}
            return {**merged, "type": kinds}
        return {"anyOf": arms}
    if origin in (tuple, list):
        item = args[0] if args else Any
        return {"type": "array", "items": _schema(item, defs, recursive)}
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        inner = _schema(value, defs, recursive)
        return {"type": "object", "additionalProperties": inner} if inner else {"type": "object"}
    raise TypeError(f"no JSON Schema mapping for {tp!r}")


def check_arguments(schema: JsonSchema, arguments: Mapping[str, Any]) -> None:
    """Raise INVALID_ARGUMENT naming the first bad field, or return when ``arguments`` fit
    ``schema`` (a tool's input schema)."""
    errors = sorted(_validator(schema).iter_errors(dict(arguments)), key=_error_rank)
    if not errors:
        return
    err = errors[0]
    props: Mapping[str, Any] = schema.get("properties", {})
    if err.validator == "required" and not err.absolute_path:
        missing = [r for r in schema.get("required", ()) if r not in arguments]
        raise InvalidArgumentError(
            f"missing required argument '{missing[0]}'",
            hint=f"{missing[0]}: {props[missing[0]].get('description', '')}".rstrip(": "),
        )
    if err.validator == "additionalProperties" and not err.absolute_path:
        unknown = sorted(set(arguments) - set(props))
        expected = ", ".join(props) or "no arguments"
        raise InvalidArgumentError(
            f"unknown argument '{unknown[0]}'", hint=f"this tool takes: {expected}"
        )
    field = _field_name(err.absolute_path)
    raise InvalidArgumentError(f"argument '{field}': {err.message}")


_VALIDATORS: dict[int, tuple[JsonSchema, Any]] = {}


def _validator(schema: JsonSchema) -> Any:
    """A compiled validator per schema object (building one costs more than validating)."""
    hit = _VALIDATORS.get(id(schema))
    if hit is None or hit[0] is not schema:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

        hit = (schema, Draft202012Validator(schema))
        _VALIDATORS[id(schema)] = hit
    return hit[1]


def _error_rank(err: Any) -> tuple[int, str]:
    # Missing and unknown arguments first: they explain the other errors.
    first = 0 if err.validator in ("required", "additionalProperties") else 1
    return (first, _field_name(err.absolute_path))


def _field_name(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
