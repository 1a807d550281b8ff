"""How a sentence-transformers model turns token states into a sentence vector, read from
the files its folder publishes.

A model published for sentence-transformers describes itself in small JSON files:

- ``modules.json``: the pipeline (Transformer, then Pooling, then Normalize when the
  vectors are unit length), and the folder of each module;
- ``<pooling folder>/config.json`` (``1_Pooling/config.json``): which pooling;
- ``sentence_bert_config.json``: ``max_seq_length`` and ``do_lower_case``;
- ``config_sentence_transformers.json``: the ``prompts`` put before queries and
  documents (e5's ``query: `` and ``passage: ``), and ``default_prompt_name``.

:func:`read_settings` turns them into :class:`ModelSettings`; a folder without them (a
bare ``model.onnx`` and ``tokenizer.json``) gets :data:`DEFAULT_SETTINGS`, which is
all-MiniLM-L6-v2's. :func:`pool` applies the pooling to ``last_hidden_state``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb.config import POOLINGS
from kbdb.errors import ModelNotAvailableError

if TYPE_CHECKING:
    from kbdb.config import EmbeddingConfig

# sentence-transformers' Pooling config keys for the modes kbdb runs.
_POOLING_KEYS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_lasttoken": "lasttoken",
}
_POOLING_NAMES = {
    **{m: m for m in POOLINGS},
    **{k.removeprefix("pooling_mode_"): m for k, m in _POOLING_KEYS.items()},
}
# Modes sentence-transformers has and kbdb does not (they need weights or change scale).
_UNSUPPORTED_KEYS = ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens")
# Prompt names sentence-transformers' encode_document tries, in its order.
_DOCUMENT_PROMPTS = ("document", "passage", "corpus")
DEFAULT_MAX_TOKENS = 256


@dataclass(frozen=True)
class ModelSettings:
    """What turns a model's token states into the vectors kbdb stores.

    Attributes:
        pooling: ``mean`` (over the attention mask), ``cls`` (the first token), ``max``
            (per dimension, over the real tokens) or ``lasttoken`` (the last real token).
        normalize: whether the model's own pipeline ends in a Normalize module. kbdb
            ranks by cosine and stores unit vectors either way; the flag is part of the
            model's identity.
        max_tokens: tokens per text, special tokens included; longer texts are truncated.
        lowercase: lower-case texts before tokenizing (``do_lower_case``).
        query_prompt: put before every query.
        document_prompt: put before every section's text.
    """

    pooling: str = "mean"
    normalize: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    lowercase: bool = False
    query_prompt: str = ""
    document_prompt: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_overrides(self, cfg: EmbeddingConfig) -> ModelSettings:
        """These settings with what ``[embedding]`` sets explicitly (``pooling``,
        ``max_tokens``, ``query_prompt``, ``document_prompt``) put over them."""
        changes: dict[str, Any] = {}
        if cfg.pooling != "auto":
            changes["pooling"] = cfg.pooling
        if cfg.max_tokens > 0:
            changes["max_tokens"] = cfg.max_tokens
        if cfg.query_prompt:
            changes["query_prompt"] = cfg.query_prompt
        if cfg.document_prompt:
            changes["document_prompt"] = cfg.document_prompt
        return replace(self, **changes)


DEFAULT_SETTINGS = ModelSettings()


def _read_json(path: Path) -> Any:
    """A JSON file of the model folder; a file that cannot be read is the model's fault."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelNotAvailableError(
            f"model folder {path.parent}: cannot read {path.name}: {exc}",
            hint="restore the file from the model's repository, or remove it",
        ) from None


def _pooling_of(path: Path) -> str:
    """The one pooling mode ``1_Pooling/config.json`` turns on."""
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise ModelNotAvailableError(f"{path}: not a JSON object")
    named = raw.get("pooling_mode")
    if isinstance(named, str):  # the single-string form
        mode = _POOLING_NAMES.get(named.lower(), "")
        if not mode:
            raise ModelNotAvailableError(
                f"{path}: pooling_mode {named!r} is not one kbdb runs ({', '.join(POOLINGS)})",
                hint="set embedding.pooling to one of them if the model allows it",
            )
        return mode
    on = [k for k, v in raw.items() if k.startswith("pooling_mode") and v is True]
    unknown = [k for k in on if k not in _POOLING_KEYS]
    if unknown:
        what = "is not supported" if unknown[0] in _UNSUPPORTED_KEYS else "is an unknown mode"
        raise ModelNotAvailableError(
            f"{path}: {unknown[0]} {what}; kbdb pools by {', '.join(POOLINGS)}",
            hint="set embedding.pooling to one of them if the model allows it",
        )
    if len(on) != 1:
        raise ModelNotAvailableError(
            f"{path}: {len(on)} pooling modes are on ({', '.join(on) or 'none'}); kbdb runs "
            "exactly one",
            hint="set embedding.pooling to the one the model was trained with",
        )
    return _POOLING_KEYS[on[0]]


def read_settings(folder: Path) -> ModelSettings:
    """The settings a sentence-transformers folder declares; :data:`DEFAULT_SETTINGS`
    where it declares nothing.

    Raises:
        ModelNotAvailableError: a settings file is unreadable, or names a pooling that kbdb
            does not run. The message names the file.
    """
    settings = DEFAULT_SETTINGS
    modules_file = folder / "modules.json"
    if modules_file.is_file():
        modules = _read_json(modules_file)
        if not isinstance(modules, list):
            raise ModelNotAvailableError(f"{modules_file}: not a JSON list of modules")
        types = {
            str(m.get("type", "")).rsplit(".", 1)[-1]: m for m in modules if isinstance(m, dict)
        }
        pooling = types.get("Pooling")
        normalize = "Normalize" in types
        mode = settings.pooling
        if pooling is not None:
            pooling_file = folder / str(pooling.get("path") or "1_Pooling") / "config.json"
            if not pooling_file.is_file():
                raise ModelNotAvailableError(
                    f"model folder {folder}: modules.json names a Pooling module, but "
                    f"{pooling_file} is missing",
                    hint="restore the file from the model's repository",
                )
            mode = _pooling_of(pooling_file)
        settings = replace(settings, pooling=mode, normalize=normalize)
    sbert_file = folder / "sentence_bert_config.json"
    if sbert_file.is_file():
        raw = _read_json(sbert_file)
        if isinstance(raw, dict):
            if isinstance(raw.get("max_seq_length"), int) and raw["max_seq_length"] > 0:
                settings = replace(settings, max_tokens=raw["max_seq_length"])
            settings = replace(settings, lowercase=bool(raw.get("do_lower_case", False)))
    prompts_file = folder / "config_sentence_transformers.json"
    if prompts_file.is_file():
        raw = _read_json(prompts_file)
        prompts = raw.get("prompts") if isinstance(raw, dict) else None
        if isinstance(prompts, dict):
            default = raw.get("default_prompt_name")
            fallback = str(prompts.get(default, "")) if isinstance(default, str) else ""
            document = next((str(prompts[n]) for n in _DOCUMENT_PROMPTS if n in prompts), fallback)
            settings = replace(
                settings, query_prompt=str(prompts.get("query", fallback)), document_prompt=document
            )
    return settings


def pool(hidden: Any, mask: Any, mode: str) -> Any:
    """The sentence vectors of ``hidden [b, s, d]`` under ``mask [b, s]`` (1 for real tokens,
    right-padded), by ``mode``, as sentence-transformers' Pooling computes them."""
    import numpy as np

    if mode == "cls":
        return hidden[:, 0, :]
    if mode == "lasttoken":
        last = np.maximum(mask.sum(axis=1) - 1, 0)
        return hidden[np.arange(hidden.shape[0]), last, :]
    weights = mask.astype(np.float32)[:, :, None]
    if mode == "max":
        return np.where(weights > 0, hidden, np.float32(-1e9)).max(axis=1)
    if mode == "mean":
        summed = (hidden * weights).sum(axis=1)
        return summed / np.maximum(weights.sum(axis=1), np.float32(1e-9))
    raise ValueError(f"unknown pooling {mode!r}")
