"""``kbdb.config._simple_toml``: the worker.toml reader that spares a cold start tomllib.

Whatever it accepts, it must read exactly as ``tomllib`` does; whatever it does not
accept (valid TOML of another shape, or invalid TOML) it hands to tomllib by returning
None, so that the errors are tomllib's.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest

from kbdb.config import (
    ConfigInvalidError,
    _simple_toml,
    config_keys,
    default_config_text,
    load_config,
    set_value,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def reference(text: str) -> dict[str, Any] | None:
    """tomllib's reading, None when it rejects the text."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def agrees(text: str) -> bool:
    fast = _simple_toml(text)
    return fast is None or (fast == reference(text) and _same_types(fast, reference(text)))


def _same_types(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and all(_same_types(a[k], b[k]) for k in a)
    return type(a) is type(b) and (a == b or (a != a and b != b))


def test_the_files_kbdb_writes_take_the_simple_path(tmp_path: Path) -> None:
    text = default_config_text()
    assert _simple_toml(text) == tomllib.loads(text)
    path = tmp_path / "worker.toml"
    path.write_text(text, encoding="utf-8")
    for key in config_keys():  # every key set (to its default), so every value shape
        if key.kind == "bool":
            value = "true" if key.default else "false"
        else:
            value = "models" if key.kind == "path" else str(key.default)
        set_value(path, key.dotted, value)
        edited = path.read_text(encoding="utf-8")
        assert _simple_toml(edited) is not None, key.dotted
        assert _simple_toml(edited) == tomllib.loads(edited), key.dotted


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n# only a comment\n",
        "[search]\nk1 = 1.5\n",
        "[search]\nk1=1.5   # tuned\n",
        "  [search]  # the section\n\tk1 = 2\n",
        "[learn]\nmax_file_bytes = 1_000_000\n",
        "[search]\nk1 = 1e3\nb_body = 5E-1\nw_code = -0.0\n",
        "[search]\nk1 = +7\nsynonyms = false\n",
        '[embedding]\nmodel = "caf\u00e9 # not a comment"\n',
        '[embedding]\nmodel = "a\tb"\n',
        # valid TOML of other shapes: tomllib reads them
        "[search]\r\nk1 = 1.5\r\n",
        "[embedding]\nmodel = 'literal'\n",
        '[embedding]\nmodel = "esc\\"aped"\n',
        "[search]\nk1 = inf\n",
        "[search]\nk1 = 0x10\n",
        "[ search ]\nk1 = 1\n",
        "search.k1 = 1\n",
        "[search]\nk1 = [1, 2]\n",
        "top = 1\n[search]\n",
        # invalid TOML: tomllib reports it
        "[search]\nk1 = 01\n",
        "[search]\nk1 = 1__0\n",
        "[search]\nk1 = 1.\n",
        "[search]\nk1 = .5\n",
        "[search]\nk1 = 1\nk1 = 2\n",
        "[search]\n[search]\n",
        "[search]\nk1 = 1 2\n",
        '[embedding]\nmodel = "unterminated\n',
        "[search]\nk1 = 1 # bell \x07\n",
        "[search\n",
        "k1 =\n",
    ],
)
def test_agrees_with_tomllib(text: str) -> None:
    assert agrees(text), text
    if reference(text) is None:
        assert _simple_toml(text) is None, text


def test_random_lines_agree_with_tomllib() -> None:
    pieces = [
        "[search]", "[learn]", "[embedding]", "[search.x]", "[]", "k1", "k1 ", " = ", "=",
        "1", "01", "-3", "+0", "1_0", "1__0", "_1", "1.5", "1.", "1e", "2e-3", "1E+2",
        "0.0_1", "true", "false", "True", '"x"', '"a#b"', "'x'", '"\\n"', "#c", " # c",
        "\t", " ", "nan", "x", "-", "[", "]",
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(4000):
        lines = ["".join(rng.choices(pieces, k=rng.randint(0, 4))) for _ in range(3)]
        text = "\n".join(lines)
        assert agrees(text), repr(text)


def test_errors_still_come_from_tomllib(tmp_path: Path) -> None:
    path = tmp_path / "worker.toml"
    path.write_text("[search]\nk1 = 01\n", encoding="utf-8")
    with pytest.raises(ConfigInvalidError, match="invalid TOML"):
        load_config(path)
    path.write_text("[search]\nk1 = 1\nk1 = 2\n", encoding="utf-8")
    with pytest.raises(ConfigInvalidError, match="invalid TOML"):
        load_config(path)
