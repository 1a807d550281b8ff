"""What every embedding module shares: the ``EmbeddingProvider`` protocol, the null
provider, and the helpers that check and normalize a provider's output.

A provider turns texts into L2-normalized float32 vectors of a fixed length, so that the
vector index can rank by dot product (= cosine). The seed's contract is "a list of float32
vectors, one per text"; here that list is one C-contiguous ``numpy`` array of shape
``[len(texts), dimensions()]``, which crosses into the Rust scan without a copy
(STYLE.md, "plain data crosses in bulk").

This module imports no other module of ``kbdb.embedding``: the concrete providers import
it, and ``provider.make_provider`` imports them, so the import graph of the package has no
cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kbdb.errors import EmbeddingFailedError, EmbeddingProviderNotConfiguredError

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np
    from numpy.typing import NDArray

    Vectors: TypeAlias = NDArray[np.float32]

NOT_CONFIGURED = "Vector search requires a configured embedding provider"  # the seed's words
NOT_CONFIGURED_HINT = 'set [embedding] provider = "onnx" or "api" in worker.toml'
MAX_BATCH = 64  # SPEC §6.1: embedding runs in batches of up to 64

# (file name, bytes received so far, total bytes or None when the server does not say).
ProgressCallback = Callable[[str, int, "int | None"], None]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into fixed-length float32 vectors (the seed's ``EmbeddingProvider``).

    Implementations must be safe to call from several threads and must return vectors in
    the order of the input texts.
    """

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch of texts.

        Args:
            texts: the texts, any number (providers batch internally, at most 64 per call
                to the model or service). An empty sequence gives a ``[0, d]`` array.

        Returns:
            A C-contiguous float32 array of shape ``[len(texts), dimensions()]``; row ``i``
            is the L2-normalized embedding of ``texts[i]``.

        Raises:
            EmbeddingFailedError: the model or service failed, or returned vectors of the
                wrong length. The message names the provider.
            EmbeddingProviderNotConfiguredError: the null provider.
            ModelNotAvailableError: the ONNX model is missing and could not be downloaded.
        """
        ...

    def dimensions(self) -> int:
        """The length of every vector this provider returns."""
        ...

    def model_name(self) -> str:
        """A stable model identifier, stored in ``vectors-meta.toml`` for stale detection."""
        ...


class NullEmbeddingProvider:
    """The default provider (``provider = "none"``): it has no model and embeds nothing.

    Asking it for vectors is the structured error the seed specifies, so that vector and
    hybrid search never silently degrade to empty results.
    """

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Always raises.

        Raises:
            EmbeddingProviderNotConfiguredError: "Vector search requires a configured
                embedding provider" (code ``EMBEDDING_PROVIDER_NOT_CONFIGURED``).
        """
        raise EmbeddingProviderNotConfiguredError(NOT_CONFIGURED, hint=NOT_CONFIGURED_HINT)

    def dimensions(self) -> int:
        """0: the null provider has no vectors."""
        return 0

    def model_name(self) -> str:
        """``"none"``."""
        return "none"

    def __repr__(self) -> str:
        return "NullEmbeddingProvider()"


def batches(count: int, size: int) -> range:
    """Start offsets of the batches of ``size`` (capped at 64) covering ``count`` items."""
    return range(0, count, max(1, min(size, MAX_BATCH)))


def finish_vectors(rows: Vectors, *, provider: str, model: str, dimensions: int) -> Vectors:
    """Check the shape and values of a provider's output and L2-normalize its rows.

    Args:
        rows: ``[n, d]`` vectors straight from the model or service.
        provider: ``"onnx"`` or ``"api"``, named in errors.
        model: the model name, named in errors.
        dimensions: the configured length.

    Returns:
        The rows as a C-contiguous float32 array of unit vectors (a zero row stays zero).

    Raises:
        EmbeddingFailedError: wrong length, or NaN/infinite values.
    """
    import numpy as np

    if rows.ndim != 2 or rows.shape[1] != dimensions:
        got = rows.shape[1] if rows.ndim == 2 else f"shape {tuple(rows.shape)}"
        raise EmbeddingFailedError(
            f"{provider} embedding provider: model {model} returned vectors of length {got}, "
            f"expected {dimensions}",
            hint="set embedding.dimensions to the model's length, then run 'kbdb rebuild'",
        )
    out = np.ascontiguousarray(rows, dtype=np.float32)
    if not np.isfinite(out).all():
        raise EmbeddingFailedError(
            f"{provider} embedding provider: model {model} returned NaN or infinite values"
        )
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.maximum(norms, np.float32(1e-12))  # eps as torch.nn.functional.normalize
    return out


def empty_vectors(dimensions: int) -> Vectors:
    """A ``[0, dimensions]`` float32 array: the answer to embedding no texts."""
    import numpy as np

    return np.zeros((0, dimensions), dtype=np.float32)


def embed_query(provider: EmbeddingProvider, text: str) -> Any:
    """The vector of one query as a float32 buffer for the vector scan: row 0 of
    ``provider.embed([text])``, or what the provider's own ``embed_query`` gives when it
    has one (the daemon client answers with a ``memoryview``, which saves the query's
    process from importing numpy: a third of a cold hybrid search's extra time)."""
    own = getattr(provider, "embed_query", None)
    return own(text) if own is not None else provider.embed([text])[0]
