"""A BERT encoder's forward pass in NumPy (float64), written from the architecture, not
from kbdb's graph builder: the reference the built ONNX graph and every pooling mode are
checked against.

    x = LN(E_word[ids] + E_pos[0..s) + E_type[types])
    per layer: x = LN(x + Attn(x) W_o + b_o); x = LN(x + gelu(x W_i + b_i) W_out + b_out)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

erf = np.vectorize(math.erf, otypes=[np.float64])


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _linear(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def forward(
    weights: dict[str, Any], config: dict[str, Any], ids: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """``last_hidden_state`` [b, s, hidden] for right-padded ``ids`` and ``mask`` [b, s]."""
    w = {k.removeprefix("bert."): np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    hidden = config["hidden_size"]
    d = hidden // heads
    b, s = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(s)][None]
        + w["embeddings.token_type_embeddings.weight"][np.zeros_like(ids)]
    )
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    blocked = np.where(mask[:, None, None, :] > 0, 0.0, -np.inf)
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)

        q = split(_linear(x, w, f"{p}.attention.self.query"))
        k = split(_linear(x, w, f"{p}.attention.self.key"))
        v = split(_linear(x, w, f"{p}.attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + blocked
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        attended = _linear(context, w, f"{p}.attention.output.dense")
        x = _layer_norm(
            x + attended,
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            eps,
        )
        up = _linear(x, w, f"{p}.intermediate.dense")
        gelu = 0.5 * up * (1.0 + erf(up / math.sqrt(2.0)))
        down = _linear(gelu, w, f"{p}.output.dense")
        x = _layer_norm(
            x + down, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps
        )
    return x


def pooled(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Unit sentence vectors, pooled as sentence-transformers' Pooling module does."""
    lengths = mask.sum(axis=1)
    rows = []
    for r in range(hidden.shape[0]):
        real = hidden[r, : lengths[r]]
        rows.append(
            {
                "mean": real.mean(axis=0),
                "cls": real[0],
                "max": real.max(axis=0),
                "lasttoken": real[-1],
            }[mode]
        )
    out = np.stack(rows)
    return out / np.linalg.norm(out, axis=1, keepdims=True)
