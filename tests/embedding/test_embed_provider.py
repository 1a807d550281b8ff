"""The provider protocol, the null provider and make_provider."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kbdb.config import EmbeddingConfig
from kbdb.embedding import (
    ApiEmbeddingProvider,
    EmbeddingProvider,
    ModelFiles,
    NullEmbeddingProvider,
    OnnxEmbeddingProvider,
    make_provider,
)
from kbdb.errors import EmbeddingProviderNotConfiguredError

REPO = Path(__file__).resolve().parents[2]


def test_null_provider_is_the_default_and_refuses_with_the_seed_error() -> None:
    provider = make_provider(EmbeddingConfig(), kbdir=None)
    assert isinstance(provider, NullEmbeddingProvider)
    assert provider.model_name() == "none" and provider.dimensions() == 0
    with pytest.raises(EmbeddingProviderNotConfiguredError) as err:
        provider.embed(["anything"])
    assert err.value.to_dict() == {
        "error": "Vector search requires a configured embedding provider",
        "code": "EMBEDDING_PROVIDER_NOT_CONFIGURED",
    }


def test_every_provider_satisfies_the_protocol(tmp_path: Path) -> None:
    files = ModelFiles(tmp_path / "model.onnx", tmp_path / "tokenizer.json")
    api = ApiEmbeddingProvider("http://127.0.0.1:9", model="m", dimensions=3)
    for provider in (NullEmbeddingProvider(), OnnxEmbeddingProvider(files), api):
        assert isinstance(provider, EmbeddingProvider)


def test_make_provider_picks_by_config(tmp_path: Path) -> None:
    onnx = make_provider(EmbeddingConfig(provider="onnx", threads=3), kbdir=tmp_path)
    assert isinstance(onnx, OnnxEmbeddingProvider) and onnx.threads == 3
    api = make_provider(
        EmbeddingConfig(provider="api", api_url="http://127.0.0.1:9/v1", model="x", dimensions=5),
        kbdir=tmp_path,
    )
    assert isinstance(api, ApiEmbeddingProvider)
    assert (api.model_name(), api.dimensions(), api.url) == (
        "x",
        5,
        "http://127.0.0.1:9/v1/embeddings",
    )
    with pytest.raises(ValueError, match="batch_size"):
        OnnxEmbeddingProvider(ModelFiles(tmp_path, tmp_path), batch_size=65)


def test_building_providers_imports_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from kbdb.config import EmbeddingConfig\n"
        "from kbdb.embedding import make_provider\n"
        "make_provider(EmbeddingConfig(provider='onnx'), kbdir=None)\n"
        "make_provider(EmbeddingConfig(provider='api', api_url='http://127.0.0.1:9'), kbdir=None)\n"
        "heavy = ('numpy', 'onnxruntime', 'tokenizers', 'httpx', 'platformdirs')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO / "python"), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_a_missing_test_model_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.embedding.conftest import find_test_model

    monkeypatch.setenv("KBDB_TEST_MODEL_DIR", str(tmp_path / "absent"))
    with pytest.raises(pytest.fail.Exception, match="KBDB_TEST_MODEL_DIR"):
        find_test_model()
