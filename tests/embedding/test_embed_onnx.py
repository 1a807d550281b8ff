"""OnnxEmbeddingProvider against the real all-MiniLM-L6-v2 model and its golden vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbdb.config import EmbeddingConfig
from kbdb.embedding import ModelFiles, OnnxEmbeddingProvider, local, make_provider
from kbdb.embedding.runtime import load_tokenizer
from kbdb.errors import EmbeddingFailedError, InvalidArgumentError, ModelNotAvailableError


@pytest.fixture(scope="module")
def provider(model_files: ModelFiles) -> OnnxEmbeddingProvider:
    return OnnxEmbeddingProvider(model_files)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.asarray((a * b).sum(axis=1))


def test_every_golden_sentence_matches_sentence_transformers(
    provider: OnnxEmbeddingProvider, model_dir: Path, golden_min: float
) -> None:
    golden = np.load(model_dir / "reference_embeddings.npz", allow_pickle=False)
    sentences = [str(s) for s in golden["sentences"]]
    assert len(sentences) == 50
    got = provider.embed(sentences)
    assert got.dtype == np.float32 and got.shape == (50, 384) and got.flags["C_CONTIGUOUS"]
    cos = cosines(got, golden["embeddings"])
    worst = int(cos.argmin())
    assert cos.min() >= golden_min, (worst, sentences[worst][:80], float(cos[worst]))
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_golden_sentences_one_at_a_time_match_too(
    provider: OnnxEmbeddingProvider, model_dir: Path, golden_min: float
) -> None:
    golden = np.load(model_dir / "reference_embeddings.npz", allow_pickle=False)
    for sentence, want in list(zip(golden["sentences"], golden["embeddings"], strict=True))[::7]:
        got = provider.embed([str(sentence)])
        assert cosines(got, want[None, :])[0] >= golden_min


def test_batch_order_is_preserved_with_mixed_lengths(
    model_files: ModelFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_batches = OnnxEmbeddingProvider(model_files, batch_size=8)
    texts = []
    for i in range(29):  # lengths from 1 word to ~300 tokens, interleaved, all distinct
        words = (i * 37) % 290 + 1
        texts.append(f"item {i}: " + " ".join(f"w{(i * 13 + j) % 97}" for j in range(words)))
    together = small_batches.embed(texts)
    alone = np.vstack([small_batches.embed([t]) for t in texts])
    assert cosines(together, alone).min() >= 0.9999
    monkeypatch.setattr(local, "SORT_WINDOW", 10)  # several tokenize-and-sort windows
    windowed = OnnxEmbeddingProvider(model_files, batch_size=4).embed(texts)
    assert cosines(windowed, alone).min() >= 0.9999
    # The rows really are different texts, so a permutation could not pass the check above.
    sims = together @ together.T
    assert (sims - np.eye(len(texts)) * 2).max() < 0.9999


def test_model_calls_hold_at_most_batch_tokens_padded_tokens(
    model_files: ModelFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each model call pads at most ``batch_tokens`` tokens (rows x longest) and at most
    ``batch_size`` rows; a text longer than the budget runs alone; the vectors are the same
    as one text per call."""
    texts = [
        " ".join(f"w{(i * 7 + j) % 89}" for j in range(n))
        for i, n in enumerate(
            [300, 5, 120, 40, 40, 250, 3, 64, 64, 64, 64, 200, 1, 90, 2, 2, 2, 2, 2, 2]
        )
    ]
    calls: list[tuple[int, int]] = []
    run = OnnxEmbeddingProvider._run

    def spy(
        self: OnnxEmbeddingProvider, loaded: object, ids: list[list[int]], pooling: str
    ) -> np.ndarray:
        calls.append((len(ids), max(len(row) for row in ids)))
        return run(self, loaded, ids, pooling)  # type: ignore[arg-type]

    monkeypatch.setattr(OnnxEmbeddingProvider, "_run", spy)
    budgeted = OnnxEmbeddingProvider(model_files, batch_size=5, batch_tokens=300).embed(texts)
    assert sum(rows for rows, _ in calls) == len(texts)
    assert all(rows <= 5 for rows, _ in calls)
    assert all(rows * longest <= 300 or rows == 1 for rows, longest in calls), calls
    assert (1, 256) in calls  # the 300-word text, cut at 256 tokens, over budget: alone
    assert any(rows == 5 for rows, _ in calls)  # short texts still share calls
    calls.clear()
    alone = OnnxEmbeddingProvider(model_files, batch_tokens=1).embed(texts)
    assert all(rows == 1 for rows, _ in calls) and len(calls) == len(texts)
    assert cosines(budgeted, alone).min() >= 0.9999
    with pytest.raises(ValueError, match="batch_tokens"):
        OnnxEmbeddingProvider(model_files, batch_tokens=0)


def test_texts_are_truncated_at_256_tokens(
    provider: OnnxEmbeddingProvider, model_files: ModelFiles
) -> None:
    tok = load_tokenizer(model_files.tokenizer, max_tokens=10_000)
    vocab = ["cat", "dog", "house", "river", "mountain", "green", "blue", "music"]
    vocab += ["paper", "window", "garden", "train"]
    for word in vocab:  # each word is one token, so word counts are token counts
        assert len(tok.encode(word, add_special_tokens=False).ids) == 1, word
    words = [vocab[(i * 7 + i // 5) % len(vocab)] for i in range(600)]
    long_text = " ".join(words)
    assert len(tok.encode(long_text).ids) == 602  # [CLS] 600 words [SEP]
    first_254 = " ".join(words[:254])  # [CLS] + 254 + [SEP] = 256 tokens
    first_126 = " ".join(words[:126])  # what a 128-token truncation would keep
    got = provider.embed([long_text, first_254, first_126, " ".join(words[:300])])
    assert cosines(got[:1], got[1:2])[0] >= 0.9999
    assert cosines(got[3:4], got[1:2])[0] >= 0.9999
    assert cosines(got[:1], got[2:3])[0] < 0.9999  # not the tokenizer.json's 128


def test_empty_input_and_empty_text(provider: OnnxEmbeddingProvider) -> None:
    none = provider.embed([])
    assert none.shape == (0, 384) and none.dtype == np.float32
    one = provider.embed([""])
    assert one.shape == (1, 384) and np.isfinite(one).all()
    with pytest.raises(TypeError):
        provider.embed("a string is not a list of texts")


def test_one_session_per_process_and_threads(model_files: ModelFiles) -> None:
    a = OnnxEmbeddingProvider(model_files, threads=1)
    b = OnnxEmbeddingProvider(model_files, threads=1)
    a.embed(["x"])
    b.embed(["y"])
    assert a._loaded is not None and a._loaded is b._loaded
    assert a.threads == 1
    assert OnnxEmbeddingProvider(model_files).threads >= 1


def test_wrong_dimensions_name_the_model_file_before_embedding(model_files: ModelFiles) -> None:
    wrong = OnnxEmbeddingProvider(model_files, dimensions=768)
    with pytest.raises(InvalidArgumentError) as err:
        wrong.embed(["hello"])
    assert err.value.code == "INVALID_ARGUMENT"
    assert str(model_files.model) in err.value.message
    assert "384 dimensions, and embedding.dimensions is 768" in err.value.message


def test_a_broken_model_file_is_an_embedding_error(model_files: ModelFiles, tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not an onnx file")
    provider = OnnxEmbeddingProvider(ModelFiles(bad, model_files.tokenizer))
    with pytest.raises(EmbeddingFailedError, match="onnx embedding provider: cannot load"):
        provider.embed(["x"])


def test_make_provider_uses_model_path_relative_to_kbdir(
    model_dir: Path, tmp_path: Path, model_files: ModelFiles
) -> None:
    kbdir = tmp_path / "kb" / ".kbdb"
    (kbdir / "models").mkdir(parents=True)
    (kbdir / "models" / "model.onnx").symlink_to(model_files.model)
    (kbdir / "models" / "tokenizer.json").symlink_to(model_files.tokenizer)
    cfg = EmbeddingConfig(provider="onnx", model_path="models", threads=1)
    provider = make_provider(cfg, kbdir=kbdir)
    assert isinstance(provider, OnnxEmbeddingProvider)
    assert provider.model_name() == "all-MiniLM-L6-v2" and provider.dimensions() == 384
    assert provider.embed(["hello world"]).shape == (1, 384)
    assert provider.load().model == kbdir / "models" / "model.onnx"


def test_a_missing_model_fails_on_first_use_not_at_construction(tmp_path: Path) -> None:
    cfg = EmbeddingConfig(provider="onnx", model_path=str(tmp_path / "nowhere"))
    provider = make_provider(cfg, kbdir=None)  # cheap, no I/O
    with pytest.raises(ModelNotAvailableError) as err:
        provider.embed(["x"])
    assert "nowhere" in err.value.message and "model_path" in str(err.value)


def _folder_with(tmp_path: Path, model_files: ModelFiles, *extra: str) -> ModelFiles:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(model_files.model)
    (folder / "tokenizer.json").symlink_to(model_files.tokenizer)
    for name in extra:
        (folder / name).symlink_to(model_files.model)
    return ModelFiles(folder / "model.onnx", folder / "tokenizer.json")


def test_quantized_uses_a_shipped_int8_file(model_files: ModelFiles, tmp_path: Path) -> None:
    files = _folder_with(tmp_path, model_files, "model_quantized.onnx")
    provider = OnnxEmbeddingProvider(files, quantized=True, quantized_dir=tmp_path / "cache")
    assert provider.embed(["x"]).shape == (1, 384)
    assert provider.load().model == files.directory / "model_quantized.onnx"
    assert provider.model_name() == "all-MiniLM-L6-v2+int8"  # its vectors differ: stale
