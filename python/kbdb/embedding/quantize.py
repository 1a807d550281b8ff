"""The int8 model behind ``quantized = true`` (kept small on purpose: issue 7 evaluates it).

Lookup order:

1. A quantized file shipped next to the model: ``model_quantized.onnx``, ``model_int8.onnx``
   or ``model_qint8.onnx`` (also under ``onnx/``), as Hugging Face repositories name them.
2. A file built earlier by this module in the user cache.
3. Otherwise it is built once with ``onnxruntime.quantization.quantize_dynamic`` (int8
   weights per output channel, MatMul only, dynamic activations) and cached as
   ``model_int8-<key>.onnx`` in the model's user-cache folder, never beside a
   ``model_path`` that may be read-only. ``<key>`` comes from the source file's path, size
   and mtime, so a replaced model gets a new int8 file. The build needs the ``onnx``
   package (``pip install onnx``) and writes through a temporary file and an atomic rename.

Why per-channel MatMul only: on the 50 golden sentences (tests/embedding) the default
settings gave cosine min 0.866 / mean 0.950 against the fp32 reference, per-channel
MatMul-only 0.970 / 0.992, at the same speed (2.4x fp32 on 40-word texts, one run, 2 cores).
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

from kbdb.embedding.model import MODEL_PATH_HINT, ModelFiles
from kbdb.errors import ModelNotAvailableError

log = logging.getLogger("kbdb")

SHIPPED_NAMES = ("model_quantized.onnx", "model_int8.onnx", "model_qint8.onnx")
_BUILD_LOCK = threading.Lock()


def shipped_int8(files: ModelFiles) -> Path | None:
    """A quantized model distributed next to ``files.model``, if there is one."""
    for folder in dict.fromkeys((files.model.parent, files.directory, files.directory / "onnx")):
        for name in SHIPPED_NAMES:
            if (folder / name).is_file():
                return folder / name
    return None


def _cache_name(model: Path) -> str:
    st = model.stat()
    key = hashlib.sha256(f"{model.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    return f"model_int8-{key[:12]}.onnx"


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


def int8_model(files: ModelFiles, *, cache_dir: Path) -> Path:
    """The int8 model for ``files``, building and caching it on first use.

    Args:
        files: the fp32 model and its tokenizer.
        cache_dir: the folder for a built int8 file: the model's user-cache folder, never
            a configured ``model_path`` (it may be read-only).

    Returns:
        The path of an int8 ONNX model with the same inputs and output.

    Raises:
        ModelNotAvailableError: no shipped file, and it cannot be built (``onnx`` missing,
            folder not writable).
    """
    shipped = shipped_int8(files)
    if shipped is not None:
        return shipped
    folder = cache_dir
    target = folder / _cache_name(files.model)
    with _BUILD_LOCK:
        if target.is_file():
            return target
        try:
            from onnxruntime.quantization import (  # type: ignore[import-untyped, unused-ignore]
                QuantType,
                quantize_dynamic,
            )
        except ImportError as exc:  # onnxruntime.quantization needs the onnx package
            raise ModelNotAvailableError(
                f"quantized model for {files.model}: cannot build it ({exc})",
                hint="pip install onnx, or put model_quantized.onnx next to model.onnx",
            ) from None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(prefix=".model_int8.", suffix=".onnx", dir=folder)
            os.close(fd)
        except OSError as exc:
            raise ModelNotAvailableError(
                f"quantized model for {files.model}: cannot write in {folder} "
                f"({exc.strerror or exc})",
                hint=MODEL_PATH_HINT,
            ) from None
        tmp = Path(tmp_name)
        try:
            log.info("building int8 model %s from %s", target, files.model)
            with _quiet_root_logger():
                quantize_dynamic(
                    files.model,
                    tmp,
                    weight_type=QuantType.QInt8,
                    per_channel=True,
                    op_types_to_quantize=["MatMul"],
                )
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return target
