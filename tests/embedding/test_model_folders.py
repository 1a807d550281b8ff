"""Sentence-transformers model folders: the graph built from safetensors, every pooling
mode and prompt against a NumPy forward pass on the real all-MiniLM-L6-v2 weights, the
model's identity, and the errors a broken folder gives."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.embedding.numpy_bert import forward, pooled

import kbdb
from kbdb.config import EmbeddingConfig
from kbdb.embedding import OnnxEmbeddingProvider
from kbdb.embedding.bert_onnx import load_weights
from kbdb.embedding.model import model_identity, resolve_model
from kbdb.embedding.runtime import execution_providers, load_tokenizer, pad
from kbdb.embedding.sbert import ModelSettings, read_settings
from kbdb.errors import InvalidArgumentError, ModelNotAvailableError

TEXTS = [
    "A cat sits on the mat.",
    "Where is the nearest train station?",
    "x",
    "The borrow checker rejects two mutable references to the same value at once, so data "
    "races are caught when the program is compiled rather than when it runs in production.",
]
POOLING_KEYS = {
    "mean": "pooling_mode_mean_tokens",
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}


@pytest.fixture(scope="module")
def weights(upstream: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    config = json.loads((upstream / "config.json").read_text(encoding="utf-8"))
    return load_weights(upstream / "model.safetensors"), config


def copy_folder(upstream: Path, dest: Path) -> Path:
    """A copy of the upstream folder that a test may edit (the weights are linked)."""
    shutil.copytree(upstream, dest, ignore=shutil.ignore_patterns("model.safetensors"))
    (dest / "model.safetensors").symlink_to(upstream / "model.safetensors")
    return dest


def set_pooling(folder: Path, **flags: bool) -> None:
    path = folder / "1_Pooling" / "config.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw.update({k: False for k in raw if k.startswith("pooling_mode")})
    raw.update(flags)
    path.write_text(json.dumps(raw), encoding="utf-8")


def set_prompts(folder: Path, prompts: dict[str, str], default: str | None = None) -> None:
    path = folder / "config_sentence_transformers.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw.update({"prompts": prompts, "default_prompt_name": default})
    path.write_text(json.dumps(raw), encoding="utf-8")


def provider_for(folder: Path, cache: Path, **cfg: Any) -> OnnxEmbeddingProvider:
    config = EmbeddingConfig(provider="onnx", model_path=str(folder), **cfg)
    return OnnxEmbeddingProvider.from_config(config, cache_dir=cache)


def reference(
    weights: tuple[dict[str, Any], dict[str, Any]], tokenizer: Path, texts: list[str], mode: str
) -> np.ndarray:
    tok = load_tokenizer(tokenizer, 256)
    ids, mask = pad([e.ids for e in tok.encode_batch(texts)])
    return pooled(forward(*weights, ids, mask), mask, mode)


def test_the_built_graph_computes_the_numpy_forward_pass(
    weights: tuple[dict[str, Any], dict[str, Any]], upstream: Path, tmp_path: Path
) -> None:
    import onnxruntime as ort

    files = resolve_model(
        EmbeddingConfig(provider="onnx", model_path=str(upstream)), cache_dir=tmp_path
    )
    assert files.model.parent.parent == tmp_path and files.model.suffix == ".onnx"
    tok = load_tokenizer(files.tokenizer, 256)
    ids, mask = pad([e.ids for e in tok.encode_batch(TEXTS)])
    session = ort.InferenceSession(str(files.model), providers=["CPUExecutionProvider"])
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    got = session.run(None, feeds)[0]
    want = forward(*weights, ids, mask)
    real = mask.astype(bool)  # padded positions are never pooled
    assert got.shape == want.shape
    assert float(np.abs(got[real] - want[real]).max()) <= 1e-4


def test_the_upstream_folder_reproduces_sentence_transformers(
    upstream: Path, model_dir: Path, tmp_path: Path
) -> None:
    provider = provider_for(upstream, tmp_path)
    assert provider.settings() == ModelSettings(pooling="mean", normalize=True, max_tokens=256)
    golden = np.load(model_dir / "reference_embeddings.npz")
    vectors = provider.embed(list(golden["sentences"]))
    assert float((vectors * golden["embeddings"]).sum(axis=1).min()) >= 0.9999


@pytest.mark.parametrize("mode", ["mean", "cls", "max", "lasttoken"])
def test_each_pooling_mode_equals_the_reference(
    mode: str, weights: tuple[dict[str, Any], dict[str, Any]], upstream: Path, tmp_path: Path
) -> None:
    folder = copy_folder(upstream, tmp_path / "model")
    set_pooling(folder, **{POOLING_KEYS[mode]: True})
    provider = provider_for(folder, tmp_path / "cache")
    assert provider.settings().pooling == mode
    got = provider.embed(TEXTS)
    want = reference(weights, folder / "tokenizer.json", TEXTS, mode)
    assert float(np.abs(got - want).max()) <= 1e-5


def test_prompts_go_before_queries_and_documents(
    weights: tuple[dict[str, Any], dict[str, Any]], upstream: Path, tmp_path: Path
) -> None:
    folder = copy_folder(upstream, tmp_path / "model")
    set_prompts(folder, {"query": "query: ", "passage": "passage: "})
    provider = provider_for(folder, tmp_path / "cache")
    settings = provider.settings()
    assert (settings.query_prompt, settings.document_prompt) == ("query: ", "passage: ")
    tokenizer = folder / "tokenizer.json"
    documents = reference(weights, tokenizer, [f"passage: {t}" for t in TEXTS], "mean")
    queries = reference(weights, tokenizer, [f"query: {t}" for t in TEXTS], "mean")
    assert float(np.abs(provider.embed(TEXTS) - documents).max()) <= 1e-5
    got = np.stack([np.asarray(provider.embed_query(t)) for t in TEXTS])
    assert float(np.abs(got - queries).max()) <= 1e-5
    # worker.toml's prompts win over the folder's
    mine = provider_for(folder, tmp_path / "cache", query_prompt="search: ")
    want = reference(weights, tokenizer, ["search: " + TEXTS[0]], "mean")[0]
    assert float(np.abs(np.asarray(mine.embed_query(TEXTS[0])) - want).max()) <= 1e-5


def test_settings_files_are_read_as_sentence_transformers_reads_them(
    upstream: Path, tmp_path: Path
) -> None:
    assert read_settings(tmp_path) == ModelSettings()  # a bare folder: MiniLM's defaults
    folder = copy_folder(upstream, tmp_path / "model")
    set_prompts(folder, {"query": "q: ", "document": "d: ", "passage": "p: "})
    assert (read_settings(folder).query_prompt, read_settings(folder).document_prompt) == (
        "q: ",
        "d: ",
    )
    set_prompts(folder, {"classify": "c: "}, default="classify")
    assert (read_settings(folder).query_prompt, read_settings(folder).document_prompt) == (
        "c: ",
        "c: ",
    )
    (folder / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 128, "do_lower_case": true}', encoding="utf-8"
    )
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    (folder / "modules.json").write_text(json.dumps(modules[:2]), encoding="utf-8")
    settings = read_settings(folder)
    assert (settings.max_tokens, settings.lowercase, settings.normalize) == (128, True, False)
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode": "cls"}', encoding="utf-8")
    assert read_settings(folder).pooling == "cls"


def test_lowercasing_and_the_token_limit_apply(upstream: Path, tmp_path: Path) -> None:
    folder = copy_folder(upstream, tmp_path / "model")
    plain = provider_for(folder, tmp_path / "cache")
    (folder / "sentence_bert_config.json").write_text(
        '{"max_seq_length": 8, "do_lower_case": true}', encoding="utf-8"
    )
    short = provider_for(folder, tmp_path / "cache")
    long_text = "one two three four five six seven eight nine ten eleven twelve"
    truncated = plain.embed(["one two three four five six"])  # 6 words + 2 special tokens
    assert float(np.abs(short.embed([long_text.upper()]) - truncated).max()) <= 1e-5


def test_identity_names_the_catalog_model_or_fingerprints_what_differs(
    upstream: Path, model_dir: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"

    def identity(folder: Path, **cfg: Any) -> str:
        config = EmbeddingConfig(provider="onnx", model_path=str(folder), **cfg)
        return model_identity(config, cache_dir=cache)

    # The upstream weights and the shared ONNX export are both all-MiniLM-L6-v2.
    assert identity(upstream) == "all-MiniLM-L6-v2" == identity(model_dir)
    assert identity(upstream, pooling="mean") == "all-MiniLM-L6-v2"
    cls = identity(upstream, pooling="cls")
    prompted = identity(upstream, query_prompt="query: ")
    assert len({cls, prompted, "all-MiniLM-L6-v2"}) == 3
    assert cls.startswith("all-MiniLM-L6-v2#") and identity(upstream, pooling="cls") == cls
    # The catalog model without a folder: known from its pins and settings alone.
    assert model_identity(EmbeddingConfig(provider="onnx"), cache_dir=cache) == "all-MiniLM-L6-v2"
    assert model_identity(
        EmbeddingConfig(provider="onnx", max_tokens=128), cache_dir=cache
    ).startswith("all-MiniLM-L6-v2#")


def test_changing_the_pooling_makes_vectors_stale_until_a_reembed(
    upstream: Path, tmp_path: Path
) -> None:
    from kbdb.evaluation.run import override_config as override

    root = tmp_path / "kb"
    kbdb.KnowledgeBase.init(root).close()
    settings = {"embedding.provider": "onnx", "embedding.model_path": str(upstream)}
    kb = kbdb.KnowledgeBase.open(
        root, config=override(kbdb.KnowledgeBase.open(root).config, settings)
    )
    kb.learn("Trains leave from platform nine every hour.", title="trains")
    assert not kb.stats().vector_index_stale
    kb.close()
    changed = override(
        kbdb.KnowledgeBase.open(root).config, {**settings, "embedding.pooling": "cls"}
    )
    kb = kbdb.KnowledgeBase.open(root, config=changed)
    assert kb.stats().vector_index_stale
    assert kb.search("railway departures", mode="vector").vector_index_stale
    kb.rebuild(reembed=True)
    assert not kb.stats().vector_index_stale
    hit = kb.search("railway departures", mode="vector")
    assert not hit.vector_index_stale and len(hit.items) == 1
    kb.close()


# -- a broken folder -------------------------------------------------------------------------


def expect_model_error(folder: Path, cache: Path, names: str, **cfg: Any) -> None:
    with pytest.raises(ModelNotAvailableError) as err:
        provider_for(folder, cache, **cfg).embed(["text"])
    assert names in str(err.value)


def test_missing_and_unreadable_files_are_named(upstream: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = copy_folder(upstream, tmp_path / "model")
    (folder / "tokenizer.json").unlink()
    expect_model_error(folder, cache, "has no tokenizer.json")
    folder = copy_folder(upstream, tmp_path / "no-config")
    (folder / "config.json").unlink()
    expect_model_error(folder, cache, "has model.safetensors but no config.json")
    folder = copy_folder(upstream, tmp_path / "no-weights")
    (folder / "model.safetensors").unlink()
    expect_model_error(folder, cache, "has neither model.onnx nor model.safetensors")
    folder = copy_folder(upstream, tmp_path / "garbage")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{not json")
    expect_model_error(folder, cache, "cannot read model.safetensors")
    folder = copy_folder(upstream, tmp_path / "gpt")
    (folder / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    expect_model_error(folder, cache, "config.json says model_type 'gpt2'")
    folder = copy_folder(upstream, tmp_path / "bad-modules")
    (folder / "modules.json").write_text("[{", encoding="utf-8")
    expect_model_error(folder, cache, "cannot read modules.json")
    folder = copy_folder(upstream, tmp_path / "no-pooling")
    shutil.rmtree(folder / "1_Pooling")
    expect_model_error(folder, cache, "1_Pooling/config.json is missing")
    assert list(cache.rglob(".tmp-*")) == []


def test_a_pooling_config_kbdb_cannot_run_is_refused(upstream: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for name, flags, words in (
        ("unknown", {"pooling_mode_attention": True}, "pooling_mode_attention is an unknown mode"),
        ("sqrt", {"pooling_mode_mean_sqrt_len_tokens": True}, "is not supported"),
        ("two", {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True}, "2 pooling"),
        ("none", {}, "0 pooling modes are on"),
    ):
        folder = copy_folder(upstream, tmp_path / name)
        set_pooling(folder, **flags)
        expect_model_error(folder, cache, words)
        # naming a mode in worker.toml does not make an unreadable folder readable, but a
        # folder's pooling is what the model was trained with: kbdb never guesses it
    folder = copy_folder(upstream, tmp_path / "string")
    (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode": "weird"}', encoding="utf-8")
    expect_model_error(folder, cache, "pooling_mode 'weird' is not one kbdb runs")


def test_a_tokenizer_for_another_model_fails_at_load(upstream: Path, tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = copy_folder(upstream, tmp_path / "model")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.add_tokens([f"newword{i}" for i in range(50)])  # ids past the model's 30,522 rows
    tok.save(str(folder / "tokenizer.json"))
    expect_model_error(folder, tmp_path / "cache", "does not match")


def test_a_dimension_that_differs_from_the_config_writes_no_vectors(
    upstream: Path, tmp_path: Path
) -> None:
    from kbdb.evaluation.run import override_config as override

    with pytest.raises(InvalidArgumentError, match="gives vectors of 384 dimensions") as err:
        provider_for(upstream, tmp_path / "cache", dimensions=768).embed(["text"])
    assert "model" in str(err.value) and "embedding.dimensions = 384" in (err.value.hint or "")
    root = tmp_path / "kb"
    kbdb.KnowledgeBase.init(root).close()
    settings = {
        "embedding.provider": "onnx",
        "embedding.model_path": str(upstream),
        "embedding.dimensions": 768,
    }
    kb = kbdb.KnowledgeBase.open(
        root, config=override(kbdb.KnowledgeBase.open(root).config, settings)
    )
    with pytest.raises(InvalidArgumentError):
        kb.load_embedding_model()
    kb.close()
    assert not (root / ".kbdb" / "indexes" / "vectors.idx").exists()


def test_a_device_this_runtime_lacks_falls_back_to_the_cpu_with_a_notice(
    upstream: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert execution_providers("cpu", ["CPUExecutionProvider"]) == (["CPUExecutionProvider"], None)
    assert execution_providers("cuda", ["CUDAExecutionProvider", "CPUExecutionProvider"]) == (
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        None,
    )
    assert execution_providers("auto", ["CPUExecutionProvider"]) == (["CPUExecutionProvider"], None)
    providers, notice = execution_providers("directml", ["CPUExecutionProvider"])
    assert providers == ["CPUExecutionProvider"] and "DmlExecutionProvider" in (notice or "")
    # The real runtime here has no CUDA: the session runs on the CPU, after a warning.
    with caplog.at_level(logging.WARNING, logger="kbdb"):
        vectors = provider_for(upstream, tmp_path / "cache", device="cuda").embed(TEXTS[:1])
    assert vectors.shape == (1, 384)
    assert any("embedding.device = cuda" in r.getMessage() for r in caplog.records)
