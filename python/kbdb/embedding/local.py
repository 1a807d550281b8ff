"""``OnnxEmbeddingProvider``: sentence embeddings with ONNX Runtime, offline.

The pipeline reproduces sentence-transformers' ``all-MiniLM-L6-v2`` exactly (cosine
>= 0.9999 against its golden vectors, tests/embedding):

1. ``tokenizers`` from ``tokenizer.json``, truncated at 256 tokens (``max_seq_length``).
   The shipped file says ``truncation 128`` and ``padding Fixed(128)``; both are
   overridden (../shared/models/all-MiniLM-L6-v2/README.md, "Pitfall").
2. Texts are tokenized once, sorted by token count, and cut into batches of at most
   ``batch_size`` (<= 64) texts and at most ``batch_tokens`` padded tokens (1,024 by
   default: one text of 256 tokens costs as much as four, and a call's activations stay in
   the core's cache, which made 256-token texts ~1.4x faster than batches of 64 did,
   docs/embeddings.md); each batch is padded only to its own longest item, so short
   texts never pay for long ones. Rows are put back in input order at the end.
3. ``last_hidden_state`` is mean-pooled over the attention mask, then L2-normalized.

One ``InferenceSession`` per (model file, tokenizer, threads) per process, shared by every provider
object (loading costs ~0.3 s and ~100 MB); ORT sessions are safe to run from many threads.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbdb._log import log
from kbdb.embedding.base import (
    MAX_BATCH,
    empty_vectors,
    finish_vectors,
)
from kbdb.embedding.model import ModelFiles, resolve_model
from kbdb.embedding.runtime import (
    default_threads,
    encode_batch,
    load_tokenizer,
    new_session,
    pad,
)
from kbdb.embedding.sbert import ModelSettings, pool
from kbdb.errors import EmbeddingFailedError, InvalidArgumentError, ModelNotAvailableError

if TYPE_CHECKING:
    from kbdb.config import EmbeddingConfig
    from kbdb.embedding.base import ProgressCallback, Vectors

SORT_WINDOW = 16 * MAX_BATCH  # texts tokenized and length-sorted together
BATCH_TOKENS = 512  # padded tokens per model call (rows x longest), at least one text


@dataclass(frozen=True)
class _Loaded:
    """A session and its tokenizer, shared process-wide."""

    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]
    width: int = 0  # the length of the model's token states, as the probe saw it


_CACHE: dict[tuple[str, str, int, int, str], _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def _load(files: ModelFiles, threads: int, device: str) -> _Loaded:
    """The shared session for (model, tokenizer, threads, max tokens, device), created on
    first use and checked against its tokenizer (:func:`_probe`)."""
    model, tokenizer = files.model, files.tokenizer
    max_tokens = files.settings.max_tokens
    key = (str(model.resolve()), str(tokenizer.resolve()), threads, max_tokens, device)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            session = new_session(model, threads, device)
            names = frozenset(i.name for i in session.get_inputs())
            hit = _Loaded(session, load_tokenizer(tokenizer, max_tokens), names)
            hit = dataclasses.replace(hit, width=_probe(hit, files))
            _CACHE[key] = hit
            log.debug("onnx session for %s with %d threads on %s", model, threads, device)
        return hit


def _probe(loaded: _Loaded, files: ModelFiles) -> int:
    """Run the tokenizer's highest token id through the model once: a tokenizer made for
    another model (a larger vocabulary) fails here, at load, with the files named, rather
    than on some text in the middle of a learn. Returns the width of the model's output.

    Raises:
        ModelNotAvailableError: the model rejects the tokenizer's ids.
    """
    import numpy as np

    top = loaded.tokenizer.get_vocab_size(with_added_tokens=True) - 1
    ids = np.array([[0, top]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in loaded.input_names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    try:
        hidden = loaded.session.run(None, feeds)[0]
    except Exception as exc:  # onnxruntime's own error types
        raise ModelNotAvailableError(
            f"{files.tokenizer} does not match {files.model}: its token id {top} is outside "
            f"the model's vocabulary ({str(exc).splitlines()[0][:200]})",
            hint="use the tokenizer.json published with the model",
        ) from None
    return int(hidden.shape[-1])


def call_sizes(lengths: Sequence[int], batch_size: int, batch_tokens: int) -> Iterator[int]:
    """Texts per model call for token counts sorted longest first: at most ``batch_size``
    texts and ``batch_tokens`` padded tokens (texts x the first's length), at least one."""
    start = 0
    while start < len(lengths):
        size = max(1, min(batch_size, batch_tokens // max(1, lengths[start])))
        yield min(size, len(lengths) - start)
        start += size


class OnnxEmbeddingProvider:
    """Local embeddings with ONNX Runtime (``provider = "onnx"``).

    The model is resolved (and downloaded on first use) and the session loaded on the
    first :meth:`embed`, not at construction, so opening a knowledge base stays cheap.

    Args:
        files: the model files, or a function that finds them (called once, lazily).
        model_name: the name stored in ``vectors-meta.toml``.
        dimensions: the expected vector length; other lengths are an error.
        threads: intra-op threads; 0 means :func:`default_threads`.
        batch_size: texts per model call, 1 to 64.
        batch_tokens: padded tokens per model call (texts x the longest's tokens); a text
            longer than this still runs, alone.
        quantized: use an int8 model (see :mod:`kbdb.embedding.quantize`).
        quantized_dir: where a locally built int8 model is cached (default: the model's
            user-cache folder, ``<user data dir>/kbdb/models/<model_name>``).
        device: ``cpu``, ``cuda``, ``coreml``, ``directml`` or ``auto``
            (:func:`execution_providers`).
        identity: gives the name stored with the vectors, the model's name and its
            fingerprint (:func:`kbdb.embedding.model.model_identity`); ``model_name``
            when None.
    """

    def __init__(
        self,
        files: ModelFiles | Callable[[], ModelFiles],
        *,
        model_name: str = "all-MiniLM-L6-v2",
        dimensions: int = 384,
        threads: int = 0,
        batch_size: int = MAX_BATCH,
        batch_tokens: int = BATCH_TOKENS,
        quantized: bool = False,
        quantized_dir: Path | None = None,
        device: str = "cpu",
        identity: Callable[[], str] | None = None,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be from 1 to {MAX_BATCH} (got {batch_size})")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be at least 1 (got {batch_tokens})")
        self._files = files
        self._name = model_name
        self._dimensions = dimensions
        self._threads = threads if threads > 0 else default_threads()
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._quantized = quantized
        self._quantized_dir = quantized_dir
        self._device = device
        self._identity: str | Callable[[], str] | None = identity
        self._loaded: _Loaded | None = None
        self._in_use: ModelFiles | None = None  # the model actually loaded (int8 if quantized)
        self._lock = threading.Lock()

    @classmethod
    def from_config(
        cls,
        cfg: EmbeddingConfig,
        *,
        kbdir: Path | None = None,
        cache_dir: Path | None = None,
        progress: ProgressCallback | None = None,
    ) -> OnnxEmbeddingProvider:
        """The provider ``[embedding]`` describes; the model is resolved on first use."""
        return cls(**cls.config_kwargs(cfg, kbdir=kbdir, cache_dir=cache_dir, progress=progress))

    @staticmethod
    def config_kwargs(
        cfg: EmbeddingConfig,
        *,
        kbdir: Path | None,
        cache_dir: Path | None,
        progress: ProgressCallback | None,
    ) -> dict[str, Any]:
        """The constructor's arguments for ``[embedding]`` (shared with the daemon client)."""
        from kbdb.embedding.model import model_cache_dir, model_identity

        return {
            "files": functools.partial(
                resolve_model, cfg, cache_dir=cache_dir, kbdir=kbdir, progress=progress
            ),
            "model_name": cfg.model,
            "dimensions": cfg.dimensions,
            "threads": cfg.threads,
            "batch_size": cfg.batch_size,
            "quantized": cfg.quantized,
            # None: the default user cache, found on first use (platformdirs stays unloaded).
            "quantized_dir": model_cache_dir(cfg.model, cache_dir) if cache_dir else None,
            "device": cfg.device,
            "identity": functools.partial(model_identity, cfg, cache_dir=cache_dir, kbdir=kbdir),
        }

    def dimensions(self) -> int:
        """The configured vector length (384 for all-MiniLM-L6-v2)."""
        return self._dimensions

    def model_name(self) -> str:
        """The name stored with the vectors: the model's identity (its name, and a
        fingerprint when its files or settings are not the catalog's), with ``+int8``
        when quantized (its vectors differ)."""
        if callable(self._identity):
            self._identity = self._identity()  # hashes local files at most once
        name = self._identity if isinstance(self._identity, str) else self._name
        return f"{name}+int8" if self._quantized else name

    @property
    def threads(self) -> int:
        """The intra-op threads the session uses."""
        return self._threads

    @property
    def batch_size(self) -> int:
        """Texts per model call (at most 64)."""
        return self._batch_size

    @property
    def batch_tokens(self) -> int:
        """Padded tokens per model call."""
        return self._batch_tokens

    @property
    def device(self) -> str:
        """The ``embedding.device`` the session asks for."""
        return self._device

    @property
    def quantized(self) -> bool:
        """Whether the provider embeds with an int8 model."""
        return self._quantized

    @property
    def quantized_dir(self) -> Path | None:
        """Where a locally built int8 model is cached (None: the model's user cache)."""
        return self._quantized_dir

    def files(self) -> ModelFiles:
        """The fp32 model files, resolved (and downloaded) on the first call.

        Raises:
            ModelNotAvailableError: the model is missing and could not be downloaded.
        """
        with self._lock:
            return self._resolved()

    def _resolved(self) -> ModelFiles:
        if callable(self._files):
            self._files = self._files()  # resolve (and download) once
        return self._files

    def load(self) -> ModelFiles:
        """Resolve the model and load the session now; return the files in use.

        Raises:
            ModelNotAvailableError: the model is missing and could not be downloaded.
            EmbeddingFailedError: ONNX Runtime could not load the file.
        """
        return self._load_session()

    def _load_session(self) -> ModelFiles:
        # Not ``load``: a subclass may give ``load`` a lighter meaning (the daemon client
        # only resolves the files), while embedding here always needs the session.
        with self._lock:
            if self._loaded is None:
                files = self._resolved()
                model = files.model
                if self._quantized:
                    from kbdb.embedding.model import model_cache_dir
                    from kbdb.embedding.quantize import int8_model

                    cache = self._quantized_dir or model_cache_dir(self._name)
                    model = int8_model(files, cache_dir=cache)
                in_use = ModelFiles(model=model, tokenizer=files.tokenizer, settings=files.settings)
                try:
                    loaded = _load(in_use, self._threads, self._device)
                except ModelNotAvailableError:
                    raise
                except Exception as exc:  # onnxruntime raises its own untyped errors
                    raise EmbeddingFailedError(
                        f"onnx embedding provider: cannot load {model}: {exc}"
                    ) from None
                if loaded.width != self._dimensions:
                    raise InvalidArgumentError(
                        f"{files.model} gives vectors of {loaded.width} dimensions, and "
                        f"embedding.dimensions is {self._dimensions}",
                        hint=f"set embedding.dimensions = {loaded.width}, then run "
                        "'kbdb rebuild --reembed'",
                    )
                self._loaded, self._in_use = loaded, in_use
            assert self._in_use is not None
            return self._in_use

    def settings(self) -> ModelSettings:
        """The model's pooling, length and prompts (resolving the model on first use)."""
        return self.files().settings

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed sections' ``texts``, each after the model's document prompt:
        ``[len(texts), dimensions()]`` float32 unit vectors, in input order.

        Raises:
            ModelNotAvailableError: on first use, the model could not be found or fetched.
            EmbeddingFailedError: inference failed or gave vectors of the wrong length.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        prompt = self.settings().document_prompt if len(texts) else ""
        return self.embed_raw([prompt + t for t in texts] if prompt else texts)

    def embed_query(self, text: str) -> Any:
        """One query's vector, after the model's query prompt."""
        return self.embed_raw([self.settings().query_prompt + text])[0]

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` as they are, with no prompt (what the embedding daemon serves:
        its clients put the prompts on)."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if len(texts) == 0:
            return empty_vectors(self._dimensions)
        files = self._load_session()
        loaded = self._loaded
        assert loaded is not None
        if files.settings.lowercase:
            texts = [t.lower() for t in texts]
        out = np.empty((len(texts), self._dimensions), dtype=np.float32)
        # Tokenize and sort a window at a time, so a million texts never sit in memory as
        # token lists at once; within a window, sorting still removes most padding.
        for base in range(0, len(texts), SORT_WINDOW):
            ids = encode_batch(loaded.tokenizer, texts[base : base + SORT_WINDOW])
            # Longest first: the first batch shows the peak memory at once, and equal lengths
            # sit together so each batch pads little (sentence-transformers sorts likewise).
            order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
            for rows in self._batches(order, ids):
                batch = [ids[i] for i in rows]
                out[[base + i for i in rows]] = self._run(loaded, batch, files.settings.pooling)
        return out

    def _batches(self, order: list[int], ids: list[list[int]]) -> Iterator[list[int]]:
        """``order`` (longest first) cut into model calls (see :func:`call_sizes`)."""
        start = 0
        lengths = [len(ids[i]) for i in order]
        for size in call_sizes(lengths, self._batch_size, self._batch_tokens):
            yield order[start : start + size]
            start += size

    def _run(self, loaded: _Loaded, ids: list[list[int]], pooling: str) -> Vectors:
        """One model call on one padded batch; pooled and normalized vectors."""
        import numpy as np

        input_ids, mask = pad(ids)
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in loaded.input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            hidden = loaded.session.run(None, feeds)[0]
        except Exception as exc:  # onnxruntime.capi.onnxruntime_pybind11_state.* errors
            raise EmbeddingFailedError(
                f"onnx embedding provider: inference failed for model {self._name}: {exc}"
            ) from None
        if hidden.ndim != 3:
            raise EmbeddingFailedError(
                f"onnx embedding provider: model {self._name} output has shape "
                f"{tuple(hidden.shape)}, expected [batch, sequence, {self._dimensions}]"
            )
        return finish_vectors(
            pool(hidden, mask, pooling),
            provider="onnx",
            model=self._name,
            dimensions=self._dimensions,
        )

    def __repr__(self) -> str:
        return (
            f"OnnxEmbeddingProvider(model_name={self.model_name()!r}, "
            f"dimensions={self._dimensions}, threads={self._threads})"
        )


def clear_session_cache(model: Path | None = None) -> None:
    """Forget the shared sessions, or those of ``model`` (tests, benchmarks, and a
    golden check's temporary build; sessions in use stay valid)."""
    with _CACHE_LOCK:
        if model is None:
            _CACHE.clear()
            return
        for key in [k for k in _CACHE if k[0] == str(model.resolve())]:
            del _CACHE[key]
