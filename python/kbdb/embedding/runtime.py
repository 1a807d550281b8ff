"""ONNX Runtime sessions, tokenizers and padded batches: the primitives under the
embedding providers and the golden check. Imports nothing of ``kbdb.embedding`` but the
settings' defaults, so every module above can use it without a cycle."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbdb._log import log
from kbdb.embedding.sbert import DEFAULT_MAX_TOKENS

MAX_TOKENS = DEFAULT_MAX_TOKENS  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
DEFAULT_MAX_THREADS = 8  # beyond this a 6-layer MiniLM gains little per extra core
# embedding.device: the ONNX Runtime execution provider each one asks for.
DEVICE_PROVIDERS = {
    "cuda": "CUDAExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "directml": "DmlExecutionProvider",
}
CPU_PROVIDER = "CPUExecutionProvider"


def default_threads() -> int:
    """Inference threads when ``threads = 0``: the usable cores, at most 8."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, DEFAULT_MAX_THREADS))


def load_tokenizer(path: Path, max_tokens: int = MAX_TOKENS) -> Any:
    """``tokenizer.json`` with truncation at ``max_tokens`` and no padding (we pad per batch)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(max_length=max_tokens)
    tok.no_padding()
    return tok


def execution_providers(device: str, available: Sequence[str]) -> tuple[list[str], str | None]:
    """The providers a session on ``device`` asks ONNX Runtime for, best first, and a
    notice when the runtime here lacks the device (then the CPU alone)."""
    if device == "cpu":
        return [CPU_PROVIDER], None
    wanted = list(DEVICE_PROVIDERS.values()) if device == "auto" else [DEVICE_PROVIDERS[device]]
    usable = [p for p in wanted if p in available]
    if usable:
        return [usable[0], CPU_PROVIDER], None
    if device == "auto":
        return [CPU_PROVIDER], None  # auto promises the best there is, and the CPU is it
    notice = (
        f"embedding.device = {device}: this ONNX Runtime has no {wanted[0]} (it has "
        f"{', '.join(available)}); embedding on the CPU. Install the runtime build for the "
        f"device (e.g. onnxruntime-gpu for cuda), or set embedding.device = cpu"
    )
    return [CPU_PROVIDER], notice


def new_session(model: Path, threads: int, device: str = "cpu") -> Any:
    """A fresh ``InferenceSession`` with ``threads`` intra-op threads, silent on stderr, on
    ``device`` when this runtime has it (else on the CPU, after a warning)."""
    import onnxruntime as ort  # type: ignore[import-untyped, unused-ignore]

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3  # errors only: nothing prints (STYLE.md)
    providers, notice = execution_providers(device, ort.get_available_providers())
    if notice is not None:
        log.warning("%s", notice)
    return ort.InferenceSession(str(model), opts, providers=providers)


def encode_batch(tok: Any, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text (truncated, unpadded), tokenized in parallel by Rust."""
    return [e.ids for e in tok.encode_batch(list(texts), add_special_tokens=True)]


def pad(ids: Sequence[Sequence[int]]) -> tuple[Any, Any]:
    """``input_ids`` and ``attention_mask`` int64 ``[b, longest]``, right-padded with 0."""
    import numpy as np

    longest = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), longest), dtype=np.int64)
    mask = np.zeros((len(ids), longest), dtype=np.int64)
    for r, row in enumerate(ids):
        input_ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return input_ids, mask
