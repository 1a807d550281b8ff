"""The int8 model behind ``quantized = true``, built locally from the fp32 model and cached.

Lookup order:

1. A quantized file shipped next to the model: ``model_quantized.onnx``, ``model_int8.onnx``
   or ``model_qint8.onnx`` (also under ``onnx/``), as Hugging Face repositories name them.
2. A file built earlier by this module in the model's user-cache folder, if it is intact.
3. Otherwise it is built with ``onnxruntime.quantization.quantize_dynamic`` (int8 weights
   per output channel, MatMul only, dynamic activations) and cached there, never beside a
   ``model_path`` that may be read-only. Building needs the ``onnx`` package
   (``pip install 'kbdb[quantize]'``); without it ``quantized = true`` is an error, never a
   silent fp32 fallback, because the vectors would not be what the config says.

The cache is keyed by *content*: ``model_int8-<key>.onnx`` where ``<key>`` hashes the fp32
file's sha256 and :data:`RECIPE`, so a replaced model (or a changed recipe) gets a new
file, while a copied or touched one reuses the old. Hashing 90 MB costs ~60 ms, so the
source digest is remembered per (path, size, mtime) in a small ``.src-*.sha256`` file.
Beside each build a ``.json`` manifest records the int8 file's sha256 and size; every load
checks them (~35 ms for 59 MB), so a truncated or damaged file is rebuilt, never loaded.
Builds write a temporary file, then rename it atomically, under an ``flock`` on
``.model_int8.lock``: two processes starting at once build it once; the second waits and
reuses the result.

Why per-channel MatMul only: on the 50 golden sentences (tests/embedding) the default
settings gave cosine min 0.866 / mean 0.950 against the fp32 reference, per-channel
MatMul-only 0.970 / 0.992, at the same speed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbdb.embedding import artifacts
from kbdb.embedding.files import MODEL_PATH_HINT, ModelFiles
from kbdb.errors import ModelNotAvailableError

log = logging.getLogger("kbdb")

SHIPPED_NAMES = ("model_quantized.onnx", "model_int8.onnx", "model_qint8.onnx")
RECIPE = "quantize_dynamic:QInt8:per_channel:MatMul:v1"
INSTALL_HINT = (
    "pip install 'kbdb[quantize]' (the onnx package), or set [embedding] quantized = false, "
    "or put model_quantized.onnx next to model.onnx"
)
_BUILD_LOCK = threading.Lock()  # threads of one process; the flock covers processes
_TMP_PREFIX = ".tmp-model_int8."  # never matches the lock file


def shipped_int8(files: ModelFiles) -> Path | None:
    """A quantized model distributed next to ``files.model``, if there is one."""
    for folder in dict.fromkeys((files.model.parent, files.directory, files.directory / "onnx")):
        for name in SHIPPED_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


def cache_path(source_digest: str, cache_dir: Path) -> Path:
    """Where the int8 build of the fp32 file with ``source_digest`` is cached."""
    key = hashlib.sha256(f"{source_digest}:{RECIPE}".encode()).hexdigest()[:16]
    return cache_dir / f"model_int8-{key}.onnx"


def cache_problem(target: Path, source_digest: str) -> str | None:
    """Why the cached ``target`` cannot be used (``None``: it is intact and current)."""
    return artifacts.cache_problem(target, {"source_sha256": source_digest, "recipe": RECIPE})


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """onnxruntime.quantization calls ``logging.warning`` on the root logger, which would
    install a stderr handler (``basicConfig``) and print; swallow its records meanwhile."""
    root = logging.getLogger()
    sink = logging.NullHandler()
    drop = logging.Filter("kbdb")  # passes only kbdb records
    root.addHandler(sink)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        root.removeHandler(sink)


def _quantizer() -> Any:
    """``quantize_dynamic`` and ``QuantType``, or the error naming the extra to install."""
    try:
        from onnxruntime.quantization import (  # type: ignore[import-untyped, unused-ignore]
            QuantType,
            quantize_dynamic,
        )
    except ImportError as exc:  # onnxruntime.quantization imports the onnx package
        raise ModelNotAvailableError(
            f"quantized = true: building the int8 model needs the onnx package ({exc})",
            hint=INSTALL_HINT,
        ) from None
    return quantize_dynamic, QuantType


def int8_model(files: ModelFiles, *, cache_dir: Path) -> Path:
    """The int8 model for ``files``, building and caching it on first use.

    Args:
        files: the fp32 model and its tokenizer.
        cache_dir: the folder for a built int8 file: the model's user-cache folder, never
            a configured ``model_path`` (it may be read-only).

    Returns:
        The path of an int8 ONNX model with the same inputs and output.

    Raises:
        ModelNotAvailableError: no shipped or cached file, and it cannot be built (``onnx``
            missing, folder not writable).
    """
    shipped = shipped_int8(files)
    if shipped is not None:
        return shipped
    with _BUILD_LOCK:
        digest = artifacts.source_sha256(files.model, cache_dir)
        target = cache_path(digest, cache_dir)
        if cache_problem(target, digest) is None:
            return target
        quantize_dynamic, quant_type = _quantizer()  # before any file is written
        with contextlib.ExitStack() as stack:
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                stack.enter_context(artifacts.process_lock(cache_dir, ".model_int8.lock"))
                problem = cache_problem(target, digest)  # another process may have built it
                if problem is None:
                    return target
                if problem != "missing":
                    log.warning("int8 model %s is unusable (%s); rebuilding", target, problem)
                _build(files.model, target, digest, quantize_dynamic, quant_type)
            except OSError as exc:
                raise ModelNotAvailableError(
                    f"quantized model for {files.model}: cannot build it in {cache_dir} "
                    f"({exc.strerror or exc})",
                    hint=MODEL_PATH_HINT,
                ) from None
        return target


def _build(model: Path, target: Path, digest: str, quantize_dynamic: Any, quant_type: Any) -> None:
    """Quantize ``model`` into ``target`` and its manifest; the caller holds the locks."""
    folder = target.parent
    artifacts.remove_stale(folder, f"{_TMP_PREFIX}*.onnx")
    fd, tmp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".onnx", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        log.info("building int8 model %s from %s", target, model)
        with _quiet_root_logger():
            quantize_dynamic(
                model,
                tmp,
                weight_type=quant_type.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
            )
        fields = {"recipe": RECIPE, "source": str(model), "source_sha256": digest}
        artifacts.land(tmp, target, fields)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
