"""The ONNX graph of a BERT encoder, built from its ``model.safetensors`` and
``config.json`` with the ``onnx`` package: no torch, no export step.

Model repositories publish their weights as safetensors, the one format whose bytes are
pinned everywhere; an ONNX export is a second artifact that each publisher makes
differently. kbdb therefore downloads the published weights, verifies their SHA-256, and
writes the graph itself. The graph computes what Hugging Face's ``BertModel`` computes in
eval mode with eager attention:

    x = LayerNorm(word[input_ids] + position[0..s) + token_type[token_type_ids])
    per layer:
        a = softmax(Q·Kᵀ / √d_head + mask) · V          (per head; mask −∞ on padding)
        x = LayerNorm(x + a·W_o + b_o)
        x = LayerNorm(x + gelu(x·W_i + b_i)·W_out + b_out)   (gelu by erf)

Inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64 ``[batch,
sequence]``), output ``last_hidden_state`` (float32 ``[batch, sequence, hidden]``): the
interface of the exported model, so everything downstream is the same. ONNX Runtime fuses
the LayerNorm, GELU and attention patterns when it loads the file.

Built graphs are cached by content under the model's cache folder as
``model-<key>.onnx``, where the key hashes the weights' and config's SHA-256 and
:data:`RECIPE`; a manifest beside each records its own SHA-256 (see
:mod:`~kbdb.embedding.artifacts`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbdb.embedding import artifacts
from kbdb.errors import ModelNotAvailableError

log = logging.getLogger("kbdb")

RECIPE = "bert-onnx:opset17:v2"
OPSET = 17  # LayerNormalization is a standard op from 17 on
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
SUPPORTED_TYPES = ("bert",)
INSTALL_HINT = "pip install onnx safetensors (both are dependencies of kbdb; reinstall it)"
_BUILD_LOCK = threading.Lock()
_TMP_PREFIX = ".tmp-model-build."


def _fail(folder: Path, what: str, hint: str | None = None) -> ModelNotAvailableError:
    return ModelNotAvailableError(
        f"model folder {folder}: {what}",
        hint=hint or "point embedding.model_path at a BERT-family model, or at a model.onnx",
    )


def read_config(path: Path) -> dict[str, Any]:
    """``config.json``, checked to describe an encoder this module can build."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _fail(path.parent, f"cannot read {path.name}: {exc}") from None
    if not isinstance(raw, dict):
        raise _fail(path.parent, f"{path.name} is not a JSON object")
    kind = raw.get("model_type")
    if kind not in SUPPORTED_TYPES:
        raise _fail(
            path.parent,
            f"{path.name} says model_type {kind!r}; kbdb builds the graph of "
            f"{', '.join(SUPPORTED_TYPES)} models from safetensors",
            hint="use the model's model.onnx instead (export it, or take the repository's "
            "onnx/model.onnx)",
        )
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise _fail(path.parent, f"{path.name}: only absolute position embeddings are supported")
    if raw.get("hidden_act", "gelu") != "gelu":
        raise _fail(path.parent, f"{path.name}: hidden_act {raw.get('hidden_act')!r} is not gelu")
    for key in ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size"):
        if not isinstance(raw.get(key), int) or raw[key] <= 0:
            raise _fail(path.parent, f"{path.name}: {key} is missing or not a positive integer")
    if raw["hidden_size"] % raw["num_attention_heads"]:
        raise _fail(path.parent, f"{path.name}: hidden_size is not a multiple of the heads")
    return raw


def load_weights(path: Path) -> dict[str, Any]:
    """The float32 tensors of ``model.safetensors``, names without a ``bert.`` prefix."""
    import numpy as np

    try:
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise ModelNotAvailableError(f"{exc}", hint=INSTALL_HINT) from None
    try:
        raw = load_file(str(path))
    except Exception as exc:  # safetensors raises its own SafetensorError, or OSError
        raise _fail(path.parent, f"cannot read {path.name}: {exc}") from None
    out = {}
    for name, tensor in raw.items():
        key = name.removeprefix("bert.")
        out[key] = tensor.astype(np.float32) if tensor.dtype.kind == "f" else tensor
    return out


class _Graph:
    """Nodes and initializers of the graph under construction, with fresh names."""

    def __init__(self, weights: dict[str, Any], folder: Path) -> None:
        import onnx

        self.onnx = onnx
        self.weights = weights
        self.folder = folder
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def weight(self, name: str, shape: tuple[int, ...], transpose: bool = False) -> str:
        """Add the checkpoint tensor ``name`` as an initializer (its transpose for a
        ``Linear`` weight, so that ``x·W`` is a plain MatMul)."""
        import numpy as np

        tensor = self.weights.get(name)
        if tensor is None:
            raise _fail(self.folder, f"{WEIGHTS_FILE} has no tensor {name}")
        if transpose:
            tensor = np.ascontiguousarray(tensor.T)
        if tuple(tensor.shape) != shape:
            raise _fail(
                self.folder,
                f"{WEIGHTS_FILE}: {name} has shape {tuple(tensor.shape)}, config.json implies "
                f"{shape}",
                hint="the weights and config.json come from different models",
            )
        self.inits.append(self.onnx.numpy_helper.from_array(tensor, name))
        return name

    def const(self, value: Any, dtype: Any = None) -> str:
        import numpy as np

        self._n += 1
        name = f"const_{self._n}"
        self.inits.append(self.onnx.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._n += 1
        out = f"{kind.lower()}_{self._n}"
        self.nodes.append(self.onnx.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, prefix: str, n_in: int, n_out: int) -> str:
        w = self.weight(f"{prefix}.weight", (n_in, n_out), transpose=True)
        b = self.weight(f"{prefix}.bias", (n_out,))
        return self.op("Add", self.op("MatMul", x, w), b)

    def layer_norm(self, x: str, prefix: str, hidden: int, eps: float) -> str:
        scale = self.weight(f"{prefix}.weight", (hidden,))
        bias = self.weight(f"{prefix}.bias", (hidden,))
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def build_graph(weights: dict[str, Any], config: dict[str, Any], folder: Path) -> Any:
    """The ``onnx.ModelProto`` of the encoder ``config`` describes, with ``weights``."""
    import numpy as np
    import onnx

    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    inner = config["intermediate_size"]
    eps = float(config.get("layer_norm_eps", 1e-12))
    vocab = config.get("vocab_size") or weights["embeddings.word_embeddings.weight"].shape[0]
    positions = config.get("max_position_embeddings", 512)
    types = config.get("type_vocab_size", 2)
    g = _Graph(weights, folder)

    # Embeddings.
    word = g.op(
        "Gather", g.weight("embeddings.word_embeddings.weight", (vocab, hidden)), "input_ids"
    )
    length = g.op("Gather", g.op("Shape", "input_ids"), g.const(1, np.int64), axis=0)
    position_ids = g.op("Range", g.const(0, np.int64), length, g.const(1, np.int64))
    position = g.op(
        "Gather",
        g.weight("embeddings.position_embeddings.weight", (positions, hidden)),
        position_ids,
    )
    token_type = g.op(
        "Gather",
        g.weight("embeddings.token_type_embeddings.weight", (types, hidden)),
        "token_type_ids",
    )
    x = g.op("Add", g.op("Add", word, position), token_type)
    x = g.layer_norm(x, "embeddings.LayerNorm", hidden, eps)

    # The additive mask [b, 1, 1, s]: 0 on tokens, the float32 minimum on padding.
    keep = g.op("Cast", "attention_mask", to=onnx.TensorProto.FLOAT)
    drop = g.op("Sub", g.const(1.0, np.float32), keep)
    bias = g.op("Mul", drop, g.const(np.finfo(np.float32).min, np.float32))
    bias = g.op("Unsqueeze", bias, g.const([1, 2], np.int64))

    split_heads = g.const([0, 0, heads, head_dim], np.int64)
    merge_heads = g.const([0, 0, hidden], np.int64)
    scale = g.const(1.0 / math.sqrt(head_dim), np.float32)
    root_two = g.const(math.sqrt(2.0), np.float32)
    one = g.const(1.0, np.float32)
    half = g.const(0.5, np.float32)
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def heads_of(name: str, perm: list[int], x: str = x, p: str = p) -> str:
            proj = g.linear(x, f"{p}.attention.self.{name}", hidden, hidden)
            return g.op("Transpose", g.op("Reshape", proj, split_heads), perm=perm)

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        attended = g.linear(context, f"{p}.attention.output.dense", hidden, hidden)
        x = g.layer_norm(g.op("Add", attended, x), f"{p}.attention.output.LayerNorm", hidden, eps)
        up = g.linear(x, f"{p}.intermediate.dense", hidden, inner)
        gelu = g.op(
            "Mul", g.op("Mul", up, g.op("Add", g.op("Erf", g.op("Div", up, root_two)), one)), half
        )
        down = g.linear(gelu, f"{p}.output.dense", inner, hidden)
        x = g.layer_norm(g.op("Add", down, x), f"{p}.output.LayerNorm", hidden, eps)
    g.nodes.append(onnx.helper.make_node("Identity", [x], ["last_hidden_state"]))

    ids = [
        onnx.helper.make_tensor_value_info(n, onnx.TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    out = onnx.helper.make_tensor_value_info(
        "last_hidden_state", onnx.TensorProto.FLOAT, ["batch", "sequence", hidden]
    )
    graph = onnx.helper.make_graph(g.nodes, "bert", ids, [out], initializer=g.inits)
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="kbdb"
    )
    model.ir_version = 8  # what ONNX Runtime 1.17, the oldest kbdb supports, reads
    return model


def build_file(folder: Path, target: Path) -> None:
    """Write the graph of the model in ``folder`` (``model.safetensors`` and
    ``config.json``) to ``target``."""
    import onnx

    config = read_config(folder / CONFIG_FILE)
    model = build_graph(load_weights(folder / WEIGHTS_FILE), config, folder)
    onnx.checker.check_model(model)
    onnx.save_model(model, str(target))


def _sources(folder: Path, cache_dir: Path) -> dict[str, Any]:
    return {
        "recipe": RECIPE,
        "weights_sha256": artifacts.source_sha256(folder / WEIGHTS_FILE, cache_dir),
        "config_sha256": artifacts.source_sha256(folder / CONFIG_FILE, cache_dir),
    }


def built_model(
    folder: Path, *, cache_dir: Path, verify: Callable[[Path], None] | None = None
) -> Path:
    """The ONNX graph of the safetensors model in ``folder``, built on first use.

    Args:
        folder: holds ``model.safetensors`` and ``config.json``.
        cache_dir: where the built file is kept (the model's user-cache folder, never the
            model folder, which may be read-only).
        verify: called with a new build before it lands; it raises to reject the build,
            which is then deleted (the default model checks its golden vectors here).

    Returns:
        The path of ``model-<key>.onnx`` in ``cache_dir``.

    Raises:
        ModelNotAvailableError: the weights or config cannot be read or do not describe a
            BERT encoder, ``onnx`` is missing, or ``cache_dir`` is not writable.
    """
    with _BUILD_LOCK:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            sources = _sources(folder, cache_dir)
        except OSError as exc:
            raise _fail(folder, f"cannot hash its weights into {cache_dir} ({exc})") from None
        key = hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()[:16]
        target = cache_dir / f"model-{key}.onnx"
        if artifacts.cache_problem(target, sources) is None:
            return target
        try:
            import onnx  # noqa: F401  (before any file is written)
        except ImportError as exc:
            raise ModelNotAvailableError(f"{exc}", hint=INSTALL_HINT) from None
        try:
            with artifacts.process_lock(cache_dir, ".model-build.lock"):
                problem = artifacts.cache_problem(target, sources)  # another process built it
                if problem is None:
                    return target
                if problem != "missing":
                    log.warning("built model %s is unusable (%s); rebuilding", target, problem)
                artifacts.remove_stale(cache_dir, f"{_TMP_PREFIX}*")
                fd, tmp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".onnx", dir=cache_dir)
                os.close(fd)
                tmp = Path(tmp_name)
                try:
                    log.info("building %s from %s", target, folder / WEIGHTS_FILE)
                    build_file(folder, tmp)
                    if verify is not None:
                        verify(tmp)
                    artifacts.land(tmp, target, {**sources, "source": str(folder)})
                finally:
                    with contextlib.suppress(OSError):
                        tmp.unlink()
        except OSError as exc:
            raise _fail(folder, f"cannot build its ONNX graph in {cache_dir} ({exc})") from None
        return target
