"""The files of an ONNX model: their names, the pinned downloadable models, and finding
them in a folder.

Plain data only, importing no other module of ``kbdb.embedding``: :mod:`~kbdb.embedding.model`
(which resolves a model) and :mod:`~kbdb.embedding.download` (which fetches one) both build
on it, so neither needs the other at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
ENV_MODEL_DIR = "KBDB_MODEL_DIR"
ENV_MODEL_URL = "KBDB_MODEL_URL"
ENV_OFFLINE = "KBDB_OFFLINE"
MODEL_PATH_HINT = (
    "set embedding.model_path in worker.toml (or KBDB_MODEL_DIR) to a folder with "
    "model.onnx and tokenizer.json"
)


@dataclass(frozen=True)
class ModelFiles:
    """The two files an ONNX provider loads."""

    model: Path
    tokenizer: Path

    @property
    def directory(self) -> Path:
        """The folder of the tokenizer, where a quantized sibling of the model may live."""
        return self.tokenizer.parent


@dataclass(frozen=True)
class RemoteFile:
    """One file of a downloadable model, pinned by its SHA-256."""

    name: str  # file name in the cache folder
    url_path: str  # path relative to the model's base URL
    sha256: str
    size: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model that can be downloaded on first use: where from, and the exact bytes."""

    name: str
    base_url: str
    files: tuple[RemoteFile, ...]
    dimensions: int

    def url(self, f: RemoteFile, base_url: str | None = None) -> str:
        """The URL of ``f`` under ``base_url`` (default: this spec's)."""
        return (base_url or self.base_url).rstrip("/") + "/" + f.url_path.lstrip("/")


# The sums are those of ../shared/models/all-MiniLM-L6-v2/SHA256SUMS: tokenizer.json is
# byte-identical to upstream; model.onnx is the fp32 export documented in that folder's
# README. A download must deliver exactly these bytes or it is rejected.
KNOWN_MODELS: dict[str, ModelSpec] = {
    "all-MiniLM-L6-v2": ModelSpec(
        name="all-MiniLM-L6-v2",
        base_url="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main",
        files=(
            RemoteFile(
                MODEL_FILE,
                "onnx/model.onnx",
                "6960c6b2980e83a814c09638b4c12e5ac1e8b0f9340729784ea2ccdd0e999c45",
                90_359_559,
            ),
            RemoteFile(
                TOKENIZER_FILE,
                "tokenizer.json",
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                466_247,
            ),
        ),
        dimensions=384,
    ),
}


def find_model_files(folder: Path) -> ModelFiles | None:
    """The model files in ``folder`` (flat, or Hugging Face's ``onnx/`` layout), if both exist."""
    tokenizer = folder / TOKENIZER_FILE
    for model in (folder / MODEL_FILE, folder / "onnx" / MODEL_FILE):
        if model.is_file() and tokenizer.is_file():
            return ModelFiles(model=model, tokenizer=tokenizer)
    return None
