"""``search.default_mode``: the mode a search gets when the caller names none (SPEC §4.2),
through the Python API, with the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_hybrid import facts_kb

import kbdb
from kbdb.config import Config, EmbeddingConfig, SearchConfig, load_config, set_value
from kbdb.errors import ConfigInvalidError, EmbeddingProviderNotConfiguredError

# No word of this query is in the stored facts: only the vector path can find "db".
MEANING_ONLY = "database rationale"


@pytest.fixture
def hybrid_default(tmp_path: Path, model: Path) -> Iterator[kbdb.KnowledgeBase]:
    """The facts, with the ONNX model and search.default_mode = "hybrid"."""
    kb = facts_kb(tmp_path / "kb", model)
    set_value(kb.path / "worker.toml", "search.default_mode", "hybrid")
    path = kb.path
    kb.close()
    kb = kbdb.KnowledgeBase.open(path)
    yield kb
    kb.close()


def test_the_default_is_lexical(kb: kbdb.KnowledgeBase) -> None:
    assert kb.config.search.default_mode == "lexical"
    kb.learn("We chose Postgres because of JSONB support.", docid="db")
    res = kb.search("postgres")
    assert res.search_mode == res.retrieval_method == "lexical" and res.total == 1


def test_a_search_without_mode_uses_the_configured_default(
    hybrid_default: kbdb.KnowledgeBase,
) -> None:
    res = hybrid_default.search(MEANING_ONLY)
    assert res.search_mode == res.retrieval_method == "hybrid"
    assert res.vector_index_stale is False
    assert res.items[0].docids == ("db",)
    assert res.to_dict() == hybrid_default.search(MEANING_ONLY, mode="hybrid").to_dict()


def test_an_explicit_mode_overrides_the_default(hybrid_default: kbdb.KnowledgeBase) -> None:
    res = hybrid_default.search(MEANING_ONLY, mode="lexical")
    assert res.search_mode == res.retrieval_method == "lexical" and res.total == 0
    vec = hybrid_default.search(MEANING_ONLY, mode="vector", limit=2)
    assert vec.search_mode == vec.retrieval_method == "vector"


def test_vector_default_without_a_provider_falls_back_to_lexical(tmp_path: Path) -> None:
    kb = kbdb.KnowledgeBase.init(tmp_path)
    kb.learn("We chose Postgres because of JSONB support.", docid="db", tags=["adr"])
    set_value(kb.path / "worker.toml", "search.default_mode", "vector")
    kb.close()
    with kbdb.KnowledgeBase.open(tmp_path) as kb:
        assert kb.config.effective_default_mode == "lexical"
        res = kb.search("postgres jsonb", tags=["adr"], limit=3)
        assert (res.search_mode, res.retrieval_method) == ("vector", "lexical")
        assert res.vector_index_stale is False
        lexical = kb.search("postgres jsonb", mode="lexical", tags=["adr"], limit=3)
        assert res.items == lexical.items and res.total == lexical.total == 1
        # Naming the mode still gets the seed's error: the caller asked for vectors.
        with pytest.raises(EmbeddingProviderNotConfiguredError):
            kb.search("postgres", mode="vector")


def test_effective_default_mode() -> None:
    onnx = EmbeddingConfig(provider="onnx")
    for mode in ("lexical", "vector", "hybrid"):
        search = SearchConfig(default_mode=mode)
        assert Config(embedding=onnx, search=search).effective_default_mode == mode
        assert Config(search=search).effective_default_mode == "lexical"


def test_default_mode_is_validated(tmp_path: Path) -> None:
    path = tmp_path / "worker.toml"
    with pytest.raises(ConfigInvalidError) as bad:
        set_value(path, "search.default_mode", "semantic")
    msg = bad.value.message
    assert "search.default_mode" in msg and '"lexical", "vector", "hybrid"' in msg
    assert 'got "semantic"' in msg
    path.write_text('[search]\ndefault_mode = "HYBRID"\n', encoding="utf-8")
    with pytest.raises(ConfigInvalidError, match="search.default_mode"):
        load_config(path)
    assert set_value(path.with_name("ok.toml"), "search.default_mode", "hybrid").search == (
        SearchConfig(default_mode="hybrid")
    )
