"""Embedding providers (SPEC §6): the protocol, the null, ONNX and HTTP API providers, and
model resolution.

Importing this package is light: ``numpy``, ``onnxruntime``, ``tokenizers``, ``httpx`` and
``platformdirs`` are imported only when a provider first embeds or a model is resolved.

>>> from kbdb.config import EmbeddingConfig
>>> from kbdb.embedding import make_provider
>>> make_provider(EmbeddingConfig(), kbdir=None)
NullEmbeddingProvider()
"""

from __future__ import annotations

from kbdb.embedding.api import ApiEmbeddingProvider
from kbdb.embedding.download import download_model
from kbdb.embedding.local import OnnxEmbeddingProvider
from kbdb.embedding.model import (
    KNOWN_MODELS,
    ModelFiles,
    ModelSpec,
    RemoteFile,
    default_cache_dir,
    model_cache_dir,
    resolve_model,
)
from kbdb.embedding.provider import (
    EmbeddingProvider,
    NullEmbeddingProvider,
    ProgressCallback,
    make_provider,
)

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
