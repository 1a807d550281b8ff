"""Embedding providers (SPEC §6): the protocol, the null, ONNX and HTTP API providers, and
model resolution.

Importing this package is light: each name below is imported from its module on first
use (PEP 562), so ``from kbdb.embedding import make_provider`` loads neither the HTTP
provider's modules nor the download code. ``numpy``, ``onnxruntime``, ``tokenizers``,
``httpx`` and ``platformdirs`` are imported only when a provider first embeds or a model is
resolved.

>>> from kbdb.config import EmbeddingConfig
>>> from kbdb.embedding import make_provider
>>> make_provider(EmbeddingConfig(), kbdir=None)
NullEmbeddingProvider()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbdb.embedding.api import ApiEmbeddingProvider
    from kbdb.embedding.base import EmbeddingProvider, NullEmbeddingProvider, ProgressCallback
    from kbdb.embedding.download import download_model
    from kbdb.embedding.files import KNOWN_MODELS, ModelFiles, ModelSpec, RemoteFile
    from kbdb.embedding.local import OnnxEmbeddingProvider
    from kbdb.embedding.model import default_cache_dir, model_cache_dir, resolve_model
    from kbdb.embedding.provider import make_provider

# public name -> the module that defines it
_WHERE = {
    "KNOWN_MODELS": "files",
    "ApiEmbeddingProvider": "api",
    "EmbeddingProvider": "base",
    "ModelFiles": "files",
    "ModelSpec": "files",
    "NullEmbeddingProvider": "base",
    "OnnxEmbeddingProvider": "local",
    "ProgressCallback": "base",
    "RemoteFile": "files",
    "default_cache_dir": "model",
    "download_model": "download",
    "make_provider": "provider",
    "model_cache_dir": "model",
    "resolve_model": "model",
}

__all__ = [
    "KNOWN_MODELS",
    "ApiEmbeddingProvider",
    "EmbeddingProvider",
    "ModelFiles",
    "ModelSpec",
    "NullEmbeddingProvider",
    "OnnxEmbeddingProvider",
    "ProgressCallback",
    "RemoteFile",
    "default_cache_dir",
    "download_model",
    "make_provider",
    "model_cache_dir",
    "resolve_model",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kbdb.embedding' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kbdb.embedding.{module}"), name)
    globals()[name] = value  # once found, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
