"""The golden check: a graph kbdb built must reproduce sentence-transformers' vectors
for the sentences in ``kbdb/embedding/golden/<model>.json`` before it is used."""

from __future__ import annotations

import json
from pathlib import Path

from kbdb.embedding.files import ModelFiles
from kbdb.embedding.runtime import encode_batch, load_tokenizer, new_session, pad
from kbdb.embedding.sbert import pool
from kbdb.errors import ModelNotAvailableError

GOLDEN_COSINE = 0.9999  # a built graph must reproduce the reference vectors this closely


def check_golden(files: ModelFiles, golden: str) -> None:
    """Embed the sentences of ``kbdb/embedding/golden/<golden>`` with ``files`` and compare
    them with their sentence-transformers vectors: every cosine must be at least
    :data:`GOLDEN_COSINE`.

    Raises:
        ModelNotAvailableError: a vector is further off, or the model cannot run.
    """
    import numpy as np

    data = json.loads((Path(__file__).with_name("golden") / golden).read_text(encoding="utf-8"))
    tokenizer = load_tokenizer(files.tokenizer, files.settings.max_tokens)
    ids, mask = pad(encode_batch(tokenizer, data["sentences"]))
    try:
        session = new_session(files.model, 1)
        hidden = session.run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
    except Exception as exc:  # onnxruntime's own error types
        raise ModelNotAvailableError(
            f"{files.model}: cannot embed its golden sentences: {exc}"
        ) from None
    got = pool(hidden, mask, files.settings.pooling)
    got /= np.maximum(np.linalg.norm(got, axis=1, keepdims=True), np.float32(1e-12))
    want = np.asarray(data["vectors"], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    worst = float((got * want).sum(axis=1).min())
    if worst < GOLDEN_COSINE:
        raise ModelNotAvailableError(
            f"{files.model}: its vectors differ from the model's golden vectors (cosine "
            f"{worst:.6f} < {GOLDEN_COSINE}); the build is not used",
            hint="report this with your onnx and onnxruntime versions; meanwhile set "
            "embedding.model_path to a folder with model.onnx",
        )
