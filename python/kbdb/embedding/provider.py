"""``make_provider``, the one place a provider is chosen, and the names embedding callers
use (the protocol and helpers themselves live in :mod:`kbdb.embedding.base`).

Building a provider does no I/O and imports nothing heavy: the ONNX model is resolved
(and downloaded on first use) and ``httpx`` is imported only when ``embed`` first runs.
The concrete providers are imported inside :func:`make_provider`, so that a caller that
never builds one never loads them; they import :mod:`kbdb.embedding.base`, never this
module, so the package's import graph has no cycle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb.embedding.base import (
    MAX_BATCH,
    NOT_CONFIGURED,
    NOT_CONFIGURED_HINT,
    EmbeddingProvider,
    NullEmbeddingProvider,
    ProgressCallback,
    batches,
    empty_vectors,
    finish_vectors,
)

if TYPE_CHECKING:
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.base import Vectors as Vectors

__all__ = [
    "MAX_BATCH",
    "NOT_CONFIGURED",
    "NOT_CONFIGURED_HINT",
    "EmbeddingProvider",
    "NullEmbeddingProvider",
    "ProgressCallback",
    "batches",
    "empty_vectors",
    "finish_vectors",
    "make_provider",
    "prefer_daemon",
]

_prefer_daemon = False


@contextlib.contextmanager
def prefer_daemon() -> Iterator[None]:
    """While this context lasts, :func:`make_provider` gives an ONNX configuration with
    ``daemon = true`` a provider that embeds small calls through the per-user embedding
    daemon (:mod:`kbdb.embedding.daemon`), unless ``KBDB_EMBED_DAEMON`` is ``0``.

    The ``kbdb`` command opens it around a search, a short-lived process that would
    otherwise load the model for one query. The Python API and the MCP server never do:
    they live long enough to keep their own session. A provider built inside keeps using
    the daemon after the context ends."""
    global _prefer_daemon
    before = _prefer_daemon
    _prefer_daemon = True
    try:
        yield
    finally:
        _prefer_daemon = before


def make_provider(
    cfg: EmbeddingConfig,
    *,
    kbdir: Path | None,
    cache_dir: Path | None = None,
    progress: ProgressCallback | None = None,
) -> EmbeddingProvider:
    """Build the provider ``[embedding]`` asks for. Cheap: no I/O, no heavy imports.

    Args:
        cfg: the validated ``[embedding]`` section.
        kbdir: the knowledge base's ``.kbdb`` folder; a relative ``model_path`` is taken
            relative to it (relative to the current folder when None).
        cache_dir: the model cache root (default ``<user data dir>/kbdb/models``).
        progress: called while the ONNX model downloads on first use; the CLI draws a bar.

    Returns:
        ``NullEmbeddingProvider`` for ``"none"``, ``OnnxEmbeddingProvider`` for ``"onnx"``
        (its subclass ``DaemonEmbeddingProvider`` after :func:`prefer_daemon`),
        ``ApiEmbeddingProvider`` for ``"api"``.
    """
    if cfg.provider == "onnx" and _prefer_daemon and cfg.daemon:
        from kbdb.embedding.daemon import DaemonEmbeddingProvider, env_allows_daemon

        if env_allows_daemon():
            return DaemonEmbeddingProvider.from_config(
                cfg, kbdir=kbdir, cache_dir=cache_dir, progress=progress
            )
    if cfg.provider == "onnx":
        from kbdb.embedding.local import OnnxEmbeddingProvider

        return OnnxEmbeddingProvider.from_config(
            cfg, kbdir=kbdir, cache_dir=cache_dir, progress=progress
        )
    if cfg.provider == "api":
        from kbdb.embedding.api import ApiEmbeddingProvider

        return ApiEmbeddingProvider.from_config(cfg)
    return NullEmbeddingProvider()
