"""Where the ONNX model and its ``tokenizer.json`` come from (SPEC §6.2).

Resolution order, first hit wins:

1. ``embedding.model_path`` in ``worker.toml`` (relative to the ``.kbdb`` folder), or the
   ``KBDB_MODEL_DIR`` environment variable: a folder holding ``model.onnx`` (or
   ``onnx/model.onnx``, the Hugging Face layout) and ``tokenizer.json``. A folder named
   there but lacking a file is an error; it never falls through to a download.
2. The user cache, ``<platformdirs user_data_dir("kbdb")>/models/<model>/``.
3. A download into that cache from the model's public repository, for models with pinned
   SHA-256 sums in :data:`KNOWN_MODELS` (``KBDB_MODEL_URL`` overrides the base URL, e.g. a
   mirror; ``KBDB_OFFLINE=1`` forbids the download). See :mod:`kbdb.embedding.download`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb.embedding.files import (
    ENV_MODEL_DIR,
    ENV_MODEL_URL,
    ENV_OFFLINE,
    KNOWN_MODELS,
    MODEL_FILE,
    MODEL_PATH_HINT,
    TOKENIZER_FILE,
    ModelFiles,
    ModelSpec,
    RemoteFile,
    find_model_files,
)
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


def resolve_model(
    cfg: EmbeddingConfig,
    *,
    cache_dir: Path | None = None,
    kbdir: Path | None = None,
    progress: ProgressCallback | None = None,
) -> ModelFiles:
    """Find the model files for ``cfg.model``, downloading them on first use.

    Args:
        cfg: the ``[embedding]`` section (``model``, ``model_path``).
        cache_dir: the models root of the cache (default :func:`default_cache_dir`).
        kbdir: the ``.kbdb`` folder, base of a relative ``model_path``.
        progress: download progress, ``(file name, bytes so far, total or None)``.

    Returns:
        The model and tokenizer paths.

    Raises:
        ModelNotAvailableError: the configured folder lacks a file, or the model is neither
            cached nor downloadable (unknown model, offline, checksum mismatch, interrupted
            transfer). The message names the files, the cache folder and ``model_path``.
    """
    configured = _configured_folder(cfg, kbdir)
    if configured is not None:
        folder, where = configured
        found = find_model_files(folder)
        if found is None:
            raise ModelNotAvailableError(
                f"model {cfg.model}: {folder} (from {where}) does not hold {MODEL_FILE} and "
                f"{TOKENIZER_FILE}",
                hint=MODEL_PATH_HINT,
            )
        return found

    spec = KNOWN_MODELS.get(cfg.model)
    cached_dir = model_cache_dir(cfg.model, cache_dir)
    cached = find_model_files(cached_dir)
    if cached is not None and _complete(cached, spec):
        return cached

    if spec is None:
        known = ", ".join(sorted(KNOWN_MODELS))
        raise ModelNotAvailableError(
            f"model {cfg.model}: {MODEL_FILE} and {TOKENIZER_FILE} not found in {cached_dir}, "
            f"and only {known} can be downloaded",
            hint=MODEL_PATH_HINT,
        )
    if os.environ.get(ENV_OFFLINE, "") not in ("", "0"):
        raise ModelNotAvailableError(
            f"model {cfg.model}: {MODEL_FILE} and {TOKENIZER_FILE} not found in {cached_dir}, "
            f"and {ENV_OFFLINE} forbids downloading them",
            hint=MODEL_PATH_HINT,
        )
    from kbdb.embedding.download import download_model

    return download_model(
        spec, cached_dir, base_url=os.environ.get(ENV_MODEL_URL) or None, progress=progress
    )
