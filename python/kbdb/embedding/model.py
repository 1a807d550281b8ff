"""Where the ONNX model and its ``tokenizer.json`` come from (SPEC §6.2).

Resolution order, first hit wins:

1. ``embedding.model_path`` in ``worker.toml`` (relative to the ``.kbdb`` folder), or the
   ``KBDB_MODEL_DIR`` environment variable: a folder holding ``tokenizer.json`` and
   ``model.onnx`` (or ``onnx/model.onnx``, the Hugging Face layout) or
   ``model.safetensors`` with its ``config.json``, and optionally the sentence-transformers
   settings files (:mod:`~kbdb.embedding.sbert`). A folder named there but lacking a file
   is an error; it never falls through to a download.
2. The user cache, ``<platformdirs user_data_dir("kbdb")>/models/<model>/``.
3. A download into that cache from the model's public repository, for models with pinned
   SHA-256 sums in :data:`KNOWN_MODELS` (``KBDB_MODEL_URL`` overrides the base URL, e.g. a
   mirror; ``KBDB_OFFLINE=1`` forbids the download). See :mod:`kbdb.embedding.download`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb.embedding.artifacts import source_sha256
from kbdb.embedding.files import (
    CONFIG_FILE,
    DEFAULT_MODEL,
    ENV_MODEL_DIR,
    ENV_MODEL_URL,
    ENV_OFFLINE,
    KNOWN_MODELS,
    MODEL_FILE,
    MODEL_PATH_HINT,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    ModelFiles,
    ModelSpec,
    RemoteFile,
    find_model_files,
)
from kbdb.embedding.sbert import ModelSettings, read_settings
from kbdb.errors import ModelNotAvailableError

if TYPE_CHECKING:
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.base import ProgressCallback

# The file names and data types are defined in kbdb.embedding.files and named here too, as
# they always were.
__all__ = [
    "ENV_MODEL_DIR",
    "ENV_MODEL_URL",
    "ENV_OFFLINE",
    "KNOWN_MODELS",
    "MODEL_FILE",
    "MODEL_PATH_HINT",
    "TOKENIZER_FILE",
    "ModelFiles",
    "ModelSpec",
    "RemoteFile",
    "default_cache_dir",
    "find_model_files",
    "model_cache_dir",
    "resolve_model",
]


def default_cache_dir() -> Path:
    """The models root of the user cache: ``<user_data_dir("kbdb")>/models``."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("kbdb", appauthor=False)) / "models"


def model_cache_dir(model: str, cache_dir: Path | None = None) -> Path:
    """The cache folder of one model: ``<cache_dir>/<model>`` (``/`` in names becomes ``--``)."""
    root = cache_dir if cache_dir is not None else default_cache_dir()
    return root / model.replace("/", "--")


def _configured_folder(cfg: EmbeddingConfig, kbdir: Path | None) -> tuple[Path, str] | None:
    """The folder named by ``model_path`` or ``KBDB_MODEL_DIR``, with where it was named."""
    if cfg.model_path:
        path = Path(cfg.model_path).expanduser()
        if not path.is_absolute() and kbdir is not None:
            path = kbdir / path
        return path, "embedding.model_path"
    env = os.environ.get(ENV_MODEL_DIR)
    if env:
        return Path(env).expanduser(), ENV_MODEL_DIR
    return None


def _complete(files: ModelFiles, spec: ModelSpec | None) -> bool:
    """Whether cached files have their pinned sizes (a cheap guard against a file that was
    truncated after it landed; the full SHA-256 check happened when it did)."""
    if spec is None:
        return True
    sizes = {f.name: f.size for f in spec.files}
    for path in (files.model, files.tokenizer):
        want = sizes.get(path.name)
        if want is not None and path.stat().st_size != want:
            return False
    return True


def _missing(folder: Path) -> str:
    """What a model folder lacks, for the error that names it."""
    if not folder.is_dir():
        return "does not exist"
    if not (folder / TOKENIZER_FILE).is_file():
        return f"has no {TOKENIZER_FILE}"
    if (folder / WEIGHTS_FILE).is_file():
        return f"has {WEIGHTS_FILE} but no {CONFIG_FILE}"
    return f"has neither {MODEL_FILE} nor {WEIGHTS_FILE}"


def _golden_check(
    spec: ModelSpec, tokenizer: Path, settings: ModelSettings
) -> Callable[[Path], None]:
    """A check that a graph built from ``spec``'s weights reproduces its golden vectors."""

    def check(model: Path) -> None:
        from kbdb.embedding.golden import check_golden

        assert spec.golden is not None
        check_golden(ModelFiles(model, tokenizer, settings), spec.golden)

    return check


def _ready(
    found: ModelFiles, settings: ModelSettings, cache: Path, spec: ModelSpec | None
) -> ModelFiles:
    """``found`` with its settings, and with an ONNX graph: a ``model.safetensors`` is
    built into ``cache`` on first use (checked against golden vectors when the catalog has
    them for these weights)."""
    model = found.model
    if model.name == WEIGHTS_FILE:
        from kbdb.embedding.bert_onnx import built_model

        verify = None
        if (
            spec is not None
            and spec.golden
            and source_sha256(found.model, cache) in spec.known_sums()
        ):
            verify = _golden_check(spec, found.tokenizer, spec.settings)
        model = built_model(model.parent, cache_dir=cache, verify=verify)
    return ModelFiles(model=model, tokenizer=found.tokenizer, settings=settings)


def resolve_model(
    cfg: EmbeddingConfig,
    *,
    cache_dir: Path | None = None,
    kbdir: Path | None = None,
    progress: ProgressCallback | None = None,
) -> ModelFiles:
    """Find the model files for ``cfg.model``, downloading them on first use.

    A folder with ``model.safetensors`` and ``config.json`` instead of ``model.onnx``
    gets its ONNX graph built into the model's cache folder (:mod:`~kbdb.embedding.bert_onnx`).

    Args:
        cfg: the ``[embedding]`` section (``model``, ``model_path``, the settings keys).
        cache_dir: the models root of the cache (default :func:`default_cache_dir`).
        kbdir: the ``.kbdb`` folder, base of a relative ``model_path``.
        progress: download progress, ``(file name, bytes so far, total or None)``.

    Returns:
        The ONNX model, the tokenizer, and the settings (the folder's sentence-transformers
        files or the catalog's, under what ``[embedding]`` sets).

    Raises:
        ModelNotAvailableError: the configured folder lacks a file or has an unreadable
            one, or the model is neither cached nor downloadable (unknown model, offline,
            checksum mismatch, interrupted transfer). The message names the file.
    """
    spec = KNOWN_MODELS.get(cfg.model)
    cached_dir = model_cache_dir(cfg.model, cache_dir)
    configured = _configured_folder(cfg, kbdir)
    if configured is not None:
        folder, where = configured
        found = find_model_files(folder)
        if found is None:
            raise ModelNotAvailableError(
                f"model {cfg.model}: {folder} (from {where}) {_missing(folder)}",
                hint=MODEL_PATH_HINT,
            )
        return _ready(found, read_settings(folder).with_overrides(cfg), cached_dir, spec)

    cached = find_model_files(cached_dir)
    if cached is None or not _complete(cached, spec):
        cached = _download(cfg, spec, cached_dir, progress)
    base = spec.settings if spec is not None else read_settings(cached_dir)
    return _ready(cached, base.with_overrides(cfg), cached_dir, spec)


def _download(
    cfg: EmbeddingConfig,
    spec: ModelSpec | None,
    cached_dir: Path,
    progress: ProgressCallback | None,
) -> ModelFiles:
    """Download a catalog model into its cache folder (the errors say why it cannot be)."""
    if spec is None:
        known = ", ".join(sorted(KNOWN_MODELS))
        raise ModelNotAvailableError(
            f"model {cfg.model}: no model in {cached_dir}, and only the catalog's models "
            f"({known}) can be downloaded (kbdb models lists them)",
            hint=MODEL_PATH_HINT,
        )
    if os.environ.get(ENV_OFFLINE, "") not in ("", "0"):
        raise ModelNotAvailableError(
            f"model {cfg.model}: no model in {cached_dir}, and {ENV_OFFLINE} forbids "
            "downloading it",
            hint=MODEL_PATH_HINT,
        )
    from kbdb.embedding.download import download_model

    return download_model(
        spec, cached_dir, base_url=os.environ.get(ENV_MODEL_URL) or None, progress=progress
    )


def model_identity(
    cfg: EmbeddingConfig, *, cache_dir: Path | None = None, kbdir: Path | None = None
) -> str:
    """The name stored with the vectors: ``cfg.model`` for a catalog model with its own
    files and settings, else ``<model>#<fingerprint>``, where the fingerprint hashes the
    weights', tokenizer's and settings' identity. Vectors under another identity are stale.

    Downloads nothing: a catalog model's download delivers exactly its pinned bytes, so
    its identity is known before it lands. A folder that cannot be read yet gives the plain
    name; the error comes when the model loads."""
    spec = KNOWN_MODELS.get(cfg.model)
    cache = model_cache_dir(cfg.model, cache_dir)
    configured = _configured_folder(cfg, kbdir)
    try:
        if configured is not None:
            found = find_model_files(configured[0])
            settings = read_settings(configured[0]).with_overrides(cfg) if found else None
        elif spec is not None:
            found, settings = None, spec.settings.with_overrides(cfg)
        else:
            found = find_model_files(cache)
            settings = read_settings(cache).with_overrides(cfg) if found else None
        if settings is None:
            return cfg.model
        if found is None:  # a catalog model, from the cache or its download
            assert spec is not None
            if settings == spec.settings:
                return cfg.model
            return f"{cfg.model}#{_fingerprint({'model': spec.name, **settings.as_dict()})}"
        weights = source_sha256(found.model, cache)
        if spec is not None and weights in spec.known_sums() and settings == spec.settings:
            return cfg.model
        parts = {
            "weights": weights,
            "tokenizer": source_sha256(found.tokenizer, cache),
            **settings.as_dict(),
        }
        return f"{cfg.model}#{_fingerprint(parts)}"
    except (ModelNotAvailableError, OSError):
        return cfg.model


def _fingerprint(parts: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


def catalog(
    cfg: EmbeddingConfig | None = None,
    *,
    cache_dir: Path | None = None,
    kbdir: Path | None = None,
) -> list[dict[str, object]]:
    """The catalog's models, each with where it comes from, how it pools and prompts, and
    whether it is on disk; the model ``cfg`` configures is marked, and listed too when it
    is a folder of the user's own. Reads nothing but folder listings and small files."""
    rows: list[dict[str, object]] = []
    configured = _configured_folder(cfg, kbdir) if cfg is not None else None
    for spec in KNOWN_MODELS.values():
        folder = model_cache_dir(spec.name, cache_dir)
        rows.append(
            {
                "name": spec.name,
                "default": spec.name == DEFAULT_MODEL,
                "configured": cfg is not None and cfg.model == spec.name and configured is None,
                "dimensions": spec.dimensions,
                "languages": spec.languages,
                "pooling": spec.settings.pooling,
                "max_tokens": spec.settings.max_tokens,
                "query_prompt": spec.settings.query_prompt,
                "document_prompt": spec.settings.document_prompt,
                "source": f"{spec.repository}@{spec.revision}",
                "pins_checked": spec.verified,
                "on_disk": str(folder) if find_model_files(folder) is not None else None,
            }
        )
    if cfg is not None and configured is not None:
        folder, where = configured
        found = find_model_files(folder)
        try:
            settings = read_settings(folder).with_overrides(cfg) if found else None
        except ModelNotAvailableError:
            settings = None
        rows.append(
            {
                "name": cfg.model,
                "default": False,
                "configured": True,
                "dimensions": cfg.dimensions,
                "languages": "",
                "pooling": settings.pooling if settings else None,
                "max_tokens": settings.max_tokens if settings else None,
                "query_prompt": settings.query_prompt if settings else None,
                "document_prompt": settings.document_prompt if settings else None,
                "source": f"{folder} (from {where})",
                "pins_checked": False,
                "on_disk": str(folder) if found is not None else None,
            }
        )
    return rows
