"""``quantized = true``: the int8 model built from the real fp32 model, cached and checked.

Every test builds into a temporary cache (never the user's). A build takes a few seconds,
so one is shared by the module and the others build only where rebuilding is the point.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider, artifacts, local
from kbdb.embedding import quantize as q

# Measured on the 50 golden sentences (all-MiniLM-L6-v2, onnxruntime 1.32): min 0.970,
# mean 0.992. The bounds leave room for other onnxruntime versions, not for a broken build
# (the default quantize_dynamic settings give min 0.866).
MIN_COSINE = 0.95
MEAN_COSINE = 0.985


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))


def _folder(tmp: Path, model_files: ModelFiles) -> ModelFiles:
    """The real model under a private folder (symlinks), so no shipped int8 file is found."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "model.onnx").symlink_to(model_files.model)
    (tmp / "tokenizer.json").symlink_to(model_files.tokenizer)
    return ModelFiles(tmp / "model.onnx", tmp / "tokenizer.json")


@pytest.fixture(scope="module")
def built(model_files: ModelFiles, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(cache folder, int8 file) built once from the real fp32 model."""
    root = tmp_path_factory.mktemp("int8")
    files = _folder(root / "model", model_files)
    cache = root / "cache"
    return cache, q.int8_model(files, cache_dir=cache)


@pytest.fixture
def sentences(model_dir: Path) -> list[str]:
    golden = np.load(model_dir / "reference_embeddings.npz", allow_pickle=False)
    return [str(s) for s in golden["sentences"]]


def test_build_writes_the_model_and_a_manifest_and_no_temporary_file(
    built: tuple[Path, Path], model_files: ModelFiles
) -> None:
    cache, target = built
    assert target.parent == cache and target.name.startswith("model_int8-")
    manifest = json.loads(artifacts.manifest_path(target).read_text(encoding="utf-8"))
    assert manifest["source_sha256"] == artifacts.file_sha256(model_files.model)
    assert manifest["sha256"] == artifacts.file_sha256(target)
    assert manifest["size"] == target.stat().st_size
    # MatMul weights int8 (42 MB -> 11 MB); the 47 MB word-embedding table stays fp32
    assert target.stat().st_size < model_files.model.stat().st_size * 0.7
    assert not list(cache.glob(".tmp-*"))  # no temporary file left
    assert q.cache_problem(target, manifest["source_sha256"]) is None


def test_int8_vectors_stay_close_to_fp32(
    built: tuple[Path, Path], model_files: ModelFiles, sentences: list[str], tmp_path: Path
) -> None:
    cache, target = built
    files = _folder(tmp_path / "model", model_files)
    int8 = OnnxEmbeddingProvider(files, quantized=True, quantized_dir=cache, threads=1)
    fp32 = OnnxEmbeddingProvider(files, threads=1)
    cos = cosines(int8.embed(sentences), fp32.embed(sentences))
    assert int8.load().model == target  # the cached build, not a new one
    assert cos.min() >= MIN_COSINE and cos.mean() >= MEAN_COSINE, (cos.min(), cos.mean())
    assert cos.min() < 0.9999  # really the int8 model: fp32 would match exactly


def test_a_second_load_reuses_the_cache(built: tuple[Path, Path], model_files: ModelFiles) -> None:
    cache, target = built
    before = (target.stat().st_ino, target.stat().st_mtime_ns, artifacts.file_sha256(target))
    local.clear_session_cache()
    again = q.int8_model(ModelFiles(model_files.model, model_files.tokenizer), cache_dir=cache)
    assert again == target
    assert (
        target.stat().st_ino,
        target.stat().st_mtime_ns,
        artifacts.file_sha256(target),
    ) == before


def test_the_key_is_the_content_of_the_fp32_model(tmp_path: Path, model_files: ModelFiles) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(b"one model")
    b.write_bytes(b"another model")
    da, db = artifacts.source_sha256(a, tmp_path / "c"), artifacts.source_sha256(b, tmp_path / "c")
    assert q.cache_path(da, tmp_path) != q.cache_path(db, tmp_path)
    # A copy (same bytes, other path) maps to the same build.
    copy = tmp_path / "copy.onnx"
    shutil.copyfile(a, copy)
    assert artifacts.source_sha256(copy, tmp_path / "c") == da
    # Rewritten in place with other bytes: the memo is keyed by mtime and size, so it is
    # not trusted; the new digest (a new build) follows.
    a.write_bytes(b"one model, retrained")
    os.utime(a, ns=(1, 1))
    assert artifacts.source_sha256(a, tmp_path / "c") == artifacts.file_sha256(a) != da


def _damage(target: Path, how: str) -> None:
    if how == "truncate":
        with target.open("r+b") as f:
            f.truncate(target.stat().st_size // 2)
    elif how == "flip":  # same size, one byte changed in the middle
        with target.open("r+b") as f:
            f.seek(target.stat().st_size // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
    else:
        artifacts.manifest_path(target).write_text("{not json", encoding="utf-8")


@pytest.mark.parametrize(
    ("how", "problem"), [("truncate", "size"), ("flip", "sha256"), ("manifest", "manifest")]
)
def test_a_damaged_cache_file_is_detected(
    built: tuple[Path, Path], model_files: ModelFiles, tmp_path: Path, how: str, problem: str
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(built[0], cache)
    target = cache / built[1].name
    _damage(target, how)
    assert problem in (q.cache_problem(target, artifacts.file_sha256(model_files.model)) or "")


def test_a_corrupt_cache_file_is_rebuilt(
    built: tuple[Path, Path],
    model_files: ModelFiles,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(built[0], cache)
    target = cache / built[1].name
    good = artifacts.file_sha256(target)
    _damage(target, "flip")
    assert artifacts.file_sha256(target) != good
    with caplog.at_level("WARNING", logger="kbdb"):
        again = q.int8_model(_folder(tmp_path / "model", model_files), cache_dir=cache)
    assert again == target
    assert artifacts.file_sha256(target) == good  # rebuilt (the build is deterministic)
    assert any("sha256 differs" in r.getMessage() for r in caplog.records)


_RACER = textwrap.dedent(
    """
    import logging, sys, time
    from pathlib import Path
    from kbdb.embedding import ModelFiles
    from kbdb.embedding.quantize import int8_model

    built = []
    class Seen(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("building int8 model"):
                built.append(record)
    log = logging.getLogger("kbdb")
    log.setLevel(logging.INFO)
    log.addHandler(Seen())
    folder, cache, start = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    time.sleep(max(0.0, start - time.time()))
    path = int8_model(ModelFiles(folder / "model.onnx", folder / "tokenizer.json"),
                      cache_dir=cache)
    print(path, len(built))
    """
)


def test_two_processes_racing_build_once(model_files: ModelFiles, tmp_path: Path) -> None:
    import time

    folder = _folder(tmp_path / "model", model_files).directory
    cache = tmp_path / "cache"
    start = str(time.time() + 1.5)  # both imported by then, so they really race
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(folder), str(cache), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    paths = {out.split()[0] for out, _ in outs}
    builds = sorted(int(out.split()[1]) for out, _ in outs)
    assert len(paths) == 1 and builds == [0, 1]
    target = Path(paths.pop())
    assert q.cache_problem(target, artifacts.file_sha256(model_files.model)) is None
    assert not list(cache.glob(".tmp-*"))


_NO_ONNX = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    class Hide:  # as if onnx were not installed
        def find_spec(self, name, path=None, target=None):
            if name == "onnx" or name.startswith("onnx."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Hide())

    from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider
    from kbdb.errors import KbdbError
    folder, cache = Path(sys.argv[1]), Path(sys.argv[2])
    files = ModelFiles(folder / "model.onnx", folder / "tokenizer.json")
    try:
        OnnxEmbeddingProvider(files, quantized=True, quantized_dir=cache).embed(["x"])
    except KbdbError as e:
        print(e.code)
        print(e)
        sys.exit(3)
    print("no error")
    """
)


def test_without_onnx_quantized_is_a_clear_error_not_fp32(
    model_files: ModelFiles, tmp_path: Path
) -> None:
    folder = _folder(tmp_path / "model", model_files).directory
    cache = tmp_path / "cache"
    run = subprocess.run(
        [sys.executable, "-c", _NO_ONNX, str(folder), str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 3, (run.stdout, run.stderr)
    code, message = run.stdout.split("\n", 1)
    assert code == "MODEL_NOT_AVAILABLE"
    assert "onnx" in message and "pip install 'kbdb[quantize]'" in message
    assert not list(cache.glob("model_int8*"))  # nothing half-built


def test_a_prebuilt_cache_needs_no_onnx(built: tuple[Path, Path], model_files: ModelFiles) -> None:
    """Only building needs onnx: a machine with the cache (or a shipped file) runs without."""
    cache, target = built
    run = subprocess.run(
        [sys.executable, "-c", _NO_ONNX, str(model_files.directory), str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0 and run.stdout.strip() == "no error", (run.stdout, run.stderr)
