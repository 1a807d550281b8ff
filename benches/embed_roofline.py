"""What bounds fp32 embedding speed: the model's arithmetic against this CPU's matrix speed.

Counts the floating-point operations of all-MiniLM-L6-v2 on SciFact abstracts (every
``MatMul``/``Gemm`` of the ONNX graph with a weight initializer: 2·K·N per token; the two
attention products: 2·L·d per token per layer), as kbdb runs them (length-sorted model
calls of at most 64 texts and 512 padded tokens, each padded to its longest text, cut at
256 tokens), and compares the rate kbdb's fp32 provider reaches, and sentence-transformers'
(at its best batch size) where it is installed, with the single-thread rate of the bare
matrix products on the model's own layer shapes (512 rows) in each library's BLAS:
ONNX Runtime's MLAS (what kbdb runs on), torch's (what sentence-transformers runs on) and
numpy's. A provider at a large fraction of its BLAS's rate cannot be made much faster
without doing less arithmetic (shorter inputs, fewer layers) or cheaper arithmetic (int8:
``quantized = true``).

    python benches/embed_roofline.py [--n 300]

Writes ``benches/results/embed_roofline.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import single_thread  # noqa: E402

single_thread()

import argparse  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench_embed import BATCH, load_texts, model_dir, sentence_transformers  # noqa: E402
from common import print_table, write_result  # noqa: E402
from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider  # noqa: E402
from kbdb.embedding.local import BATCH_TOKENS, call_sizes  # noqa: E402
from kbdb.embedding.runtime import MAX_TOKENS  # noqa: E402

ST_BATCHES = (8, 16, 32, 64)


def weight_matmuls(model: Path) -> tuple[list[tuple[int, int]], int, int]:
    """(K, N) of every MatMul/Gemm whose second input is a weight; hidden size; layers."""
    import onnx

    graph = onnx.load(str(model)).graph
    shapes = {t.name: tuple(t.dims) for t in graph.initializer}
    kn = []
    for node in graph.node:
        if node.op_type in ("MatMul", "Gemm") and len(node.input) > 1:
            dims = shapes.get(node.input[1])
            if dims is not None and len(dims) == 2:
                kn.append((int(dims[0]), int(dims[1])))
    hidden = max(k for k, n in kn if k == n)  # the square projections (Q, K, V, output)
    layers = sum(1 for k, n in kn if k == hidden and n > hidden)  # one FFN-in per layer
    return kn, hidden, layers


def flops_per_batch(lengths: list[int], kn: list[tuple[int, int]], hidden: int, layers: int):
    """(executed, useful) FLOPs of one padded batch: executed counts the padding."""
    per_token = sum(2 * k * n for k, n in kn)
    pad = max(lengths)

    def seq(n_tokens: int, attend: int) -> int:
        # QK^T and softmax·V: 2 products of L×d by d×L (L×L by L×d) per layer.
        return n_tokens * (per_token + layers * 2 * 2 * attend * hidden)

    executed = len(lengths) * seq(pad, pad)
    useful = sum(seq(n, n) for n in lengths)
    return executed, useful


def blas_rates(shapes: list[tuple[int, int]], rows: int, rounds: int = 5) -> dict[str, float]:
    """Single-thread GFLOP/s of (rows × K) @ (K × N) over the model's weight shapes (each
    shape weighted by its share of the work), per library: numpy, torch, ONNX Runtime."""
    rng = np.random.default_rng(0)
    mats = {
        (k, n): (
            rng.standard_normal((rows, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32),
        )
        for k, n in sorted(set(shapes))
    }
    libs = {"numpy": lambda a, w: lambda: a @ w}
    try:
        import torch

        torch.set_num_threads(1)

        def torch_matmul(a: np.ndarray, w: np.ndarray):
            ta, tw = torch.from_numpy(a), torch.from_numpy(w)
            return lambda: torch.matmul(ta, tw)

        libs["torch"] = torch_matmul
    except ImportError:
        pass
    libs["onnxruntime"] = _ort_matmul
    out = {}
    for lib, make in libs.items():
        seconds = {}
        for kn, (a, w) in mats.items():
            fn = make(a, w)
            fn()  # warm-up (and ONNX Runtime's weight packing)
            seconds[kn] = min(_timed(fn) for _ in range(rounds))
        total = sum(2 * rows * k * n for k, n in shapes)
        out[lib] = total / sum(seconds[kn] for kn in shapes) / 1e9
    return out


def _ort_matmul(a: np.ndarray, w: np.ndarray):
    """A one-node ONNX graph ``x @ W`` with ``W`` a constant, as the model's MatMuls are."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [a.shape[0], w.shape[1]])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(),
        opts,
        providers=["CPUExecutionProvider"],
    )
    return lambda: session.run(None, {"x": a})


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="abstracts to embed")
    ap.add_argument("--rounds", type=int, default=2, help="passes per system; best counts")
    args = ap.parse_args()

    folder = model_dir()
    files = ModelFiles(folder / "model.onnx", folder / "tokenizer.json")
    abstracts, _ = load_texts(args.n)
    kn, hidden, layers = weight_matmuls(files.model)

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(files.tokenizer))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    lengths = sorted((len(e.ids) for e in tok.encode_batch(abstracts)), reverse=True)
    executed = useful = start = 0
    for size in call_sizes(lengths, BATCH, BATCH_TOKENS):  # the cuts kbdb's provider makes
        e, u = flops_per_batch(lengths[start : start + size], kn, hidden, layers)
        executed += e
        useful += u
        start += size

    kbdb = OnnxEmbeddingProvider(files, threads=1, batch_size=BATCH)
    kbdb.embed(abstracts[:BATCH])
    systems = {"kbdb fp32": kbdb.embed}
    st, st_status = sentence_transformers(1)
    if st is not None:
        st(BATCH)(abstracts[:BATCH])
        for batch in ST_BATCHES:
            systems[f"sentence-transformers, batch {batch}"] = st(batch)
    seconds = {
        name: min(_timed(lambda f=f: f(abstracts)) for _ in range(args.rounds))
        for name, f in systems.items()
    }
    st_times = {name: t for name, t in seconds.items() if name.startswith("sentence")}
    if st_times:
        best = min(st_times, key=lambda name: st_times[name])
        seconds = {"kbdb fp32": seconds["kbdb fp32"], "sentence-transformers": st_times[best]}
        st_status = f"{st_status}, best batch {best.rsplit(' ', 1)[1]}"
    blas = blas_rates(kn, rows=BATCH_TOKENS)
    fastest = max(blas, key=lambda lib: blas[lib])
    peak = blas[fastest]
    own = {"kbdb fp32": blas["onnxruntime"], "sentence-transformers": blas.get("torch", peak)}

    rows = []
    out: dict[str, Any] = {}
    for name, s in seconds.items():
        rate = executed / s / 1e9
        out[name] = {
            "seconds": s,
            "sentences_per_s": len(abstracts) / s,
            "executed_gflops": rate,
            "useful_gflops": useful / s / 1e9,
            "fraction_of_sgemm": rate / peak,
            "fraction_of_own_blas": rate / own[name],
        }
        rows.append(
            [
                name,
                len(abstracts) / s,
                rate,
                useful / s / 1e9,
                f"{rate / peak:.2f}",
                f"{rate / own[name]:.2f}",
            ]
        )
    if st is None:
        rows.append(["sentence-transformers", st_status, None, None, None, None])
    print_table(
        f"all-MiniLM-L6-v2 fp32 on {len(abstracts)} SciFact abstracts, 1 thread "
        "(bare matrix products on the layer shapes, 512 rows: "
        + ", ".join(f"{lib} {rate:.1f}" for lib, rate in blas.items())
        + " GFLOP/s)",
        [
            "system",
            "sentences/s",
            "GFLOP/s executed",
            "GFLOP/s useful",
            "× fastest BLAS",
            "× own BLAS",
        ],
        rows,
    )
    write_result(
        "embed_roofline",
        {
            "texts": len(abstracts),
            "batch": BATCH,
            "batch_tokens": BATCH_TOKENS,
            "max_tokens": MAX_TOKENS,
            "model": {"hidden": hidden, "layers": layers, "weight_matmuls": len(kn)},
            "tokens": {"useful": sum(lengths), "median": int(np.median(lengths))},
            "gflop": {"executed": executed / 1e9, "useful": useful / 1e9},
            "sgemm_gflops_1_thread": peak,
            "blas_gflops_1_thread": blas,
            "systems": out,
            "sentence_transformers": st_status,
            "headline": [
                {
                    "what": "fp32 embedding against the fastest single-thread sgemm here",
                    "kbdb": f"{out['kbdb fp32']['executed_gflops']:.0f} GFLOP/s, "
                    f"{out['kbdb fp32']['fraction_of_sgemm']:.2f} of sgemm "
                    f"({peak:.0f} GFLOP/s, {fastest}), "
                    f"{out['kbdb fp32']['executed_gflops'] / blas['onnxruntime']:.2f} of "
                    "its own (ONNX Runtime's)",
                    "peers": (
                        f"sentence-transformers "
                        f"{out['sentence-transformers']['executed_gflops']:.0f} GFLOP/s, "
                        f"{out['sentence-transformers']['fraction_of_sgemm']:.2f} of sgemm; "
                        f"torch's sgemm {blas.get('torch', float('nan')):.0f} GFLOP/s"
                        if "sentence-transformers" in out
                        else f"sentence-transformers {st_status}"
                    ),
                }
            ],
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
