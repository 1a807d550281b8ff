"""``kbdb config show [KEY]`` and ``kbdb config set KEY VALUE`` (SPEC §7).

Both work on ``worker.toml`` directly and do not open the database, so that a broken
configuration can still be shown and repaired.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import emit_json
from kbdb.config import ConfigKey, config_keys, config_to_dict, load_config, set_value
from kbdb.errors import ConfigInvalidError


def _config_path() -> Path:
    from kbdb.context import CONFIG_NAME, resolve

    return resolve(state().db) / CONFIG_NAME


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def _plain(value: Any) -> str:
    """A value for scripts: strings bare, booleans lower-case, unset empty."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _toml(value)


def _key_list() -> str:
    lines = ["Keys (SECTION.KEY: allowed values, default):", ""]
    for k in config_keys():
        default = "unset" if k.default is None else _toml(k.default)
        lines.append(f"  {k.dotted}: {k.allowed}; default {default}")
    return "\b\n" + "\n".join(lines)


def _key(name: str) -> ConfigKey:
    for k in config_keys():
        if k.dotted == name:
            return k
    sections = sorted({k.section for k in config_keys()})
    raise ConfigInvalidError(
        f"unknown key {name!r}", hint=f"keys look like search.k1; sections: {', '.join(sections)}"
    )


@click.group(short_help="Show or set worker.toml values.")
def config() -> None:
    """Show or change the configuration (.kbdb/worker.toml)."""


@config.command("show")
@click.argument("key", required=False)
@global_options
def show(key: str | None) -> int:
    """Print the effective configuration, or one KEY's value (such as search.k1).

    Values that differ from the default are marked with the default.
    """
    st = state()
    path = _config_path()
    data = config_to_dict(load_config(path))
    if key is not None:
        spec = _key(key)
        value = data[spec.section][spec.name]
        if st.json:
            emit_json({"key": key, "value": value})
        else:
            click.echo(_plain(value))
        return 0
    if st.json:
        emit_json(data)
        return 0
    lines = [f"# {path}"]
    for section, values in data.items():
        lines += ["", f"[{section}]"]
        for spec in (k for k in config_keys() if k.section == section):
            value = values[spec.name]
            if value is None:
                lines.append(f"# {spec.name} is not set")
                continue
            note = "" if value == spec.default else f"  # default: {_toml(spec.default)}"
            lines.append(f"{spec.name} = {_toml(value)}{note}")
    click.echo("\n".join(lines))
    return 0


@config.command("set", epilog=_key_list(), context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@global_options
def set_(key: str, value: str) -> int:
    """Set KEY (such as search.k1) to VALUE, keeping the file's comments.

    The whole configuration is validated before anything is written; a bad value leaves
    the file untouched (exit 2). For embedding.model_path, "" unsets it.
    """
    st = state()
    path = _config_path()
    try:
        language: str | None = load_config(path).index.language
    except ConfigInvalidError:  # set can repair a broken file
        language = None
    cfg = set_value(path, key, value)
    spec = _key(key)
    new = config_to_dict(cfg)[spec.section][spec.name]
    if st.json:
        emit_json(config_to_dict(cfg))
    elif not st.quiet:
        click.echo(f"{key} = {_toml(new) if new is not None else '(unset)'}")
    if key == "index.language" and cfg.index.language != language:
        # The index keeps the terms of the old analyzer; the two never mix (docs/languages.md).
        click.echo(
            f"kbdb: run 'kbdb rebuild' to index the knowledge base in {cfg.index.language}"
            " (an index built by another language's analyzer is not searched: INDEX_STALE)",
            err=True,
        )
    return 0
